"""The images of the ViT experiment: CIFAR-10 or Fashion-MNIST through torchvision, or scikit-learn's digits.

Paper: Section 4, "we train ... utilizing the CIFAR10 dataset [24]". The config names the data set and the
stand-ins allowed when it cannot be had (``vit.data.fallback``; by default Fashion-MNIST, :mod:`.fashion`, then the
digits); :func:`resolve_data` picks one and writes the data manifest (:mod:`.sources`) that every job reading images
follows. A missing or damaged archive is told apart (which file, which md5) and, at the paper scale, never replaced.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from maxmargin.experiments.vit.fashion import arrange_fashion_mnist, load_fashion_mnist
from maxmargin.experiments.vit.images import DataUnavailableError, ImageData
from maxmargin.experiments.vit.settings import DataSettings
from maxmargin.experiments.vit.sources import (
    CIFAR10,
    CIFAR10_BATCHES,
    CIFAR10_FOLDER,
    DATASETS,
    DIGITS,
    DISPLAY_NAMES,
    FASHION_IDX,
    FASHION_MNIST,
    data_plan,
    file_md5,
    local_files,
    manifest_digest,
)
from maxmargin.provenance import run_command
from maxmargin.registry.reads import SOURCE_KEYS

log = logging.getLogger("maxmargin")

CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_NAME = CIFAR10
DIGITS_NAME = DIGITS
DIGITS_TEST_FRACTION = 0.2  # share of the 1797 digits held out as the test set (stratified)


def load_cifar10(root: str | os.PathLike[str], download: bool) -> ImageData:
    """CIFAR-10 through ``torchvision.datasets.CIFAR10`` (the ``cifar-10-batches-py`` folder under ``root``).

    Paper: Section 4, "we train ... utilizing the CIFAR10 dataset [24]".
    """
    from torchvision.datasets import CIFAR10

    train = CIFAR10(str(root), train=True, download=download)
    test = CIFAR10(str(root), train=False, download=download)

    def to_tensor(ds: Any) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.from_numpy(np.ascontiguousarray(ds.data.transpose(0, 3, 1, 2)))
        return x, torch.as_tensor(ds.targets, dtype=torch.int64)

    x_tr, y_tr = to_tensor(train)
    x_te, y_te = to_tensor(test)
    return ImageData(x_tr, y_tr, x_te, y_te, CIFAR10_NAME, list(train.classes))


def load_digits32(seed: int) -> ImageData:
    """scikit-learn's 8x8 digits as 32x32x3 uint8 images (each pixel repeated 4x4, grey in all channels).

    The quick-scale stand-in for CIFAR-10 when it cannot be had (it ships inside scikit-learn): 10 classes,
    1797 images, split into train/test with a stratified split seeded by ``seed``.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    img = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)  # (N, 8, 8), values 0..16 -> 0..255
    img = np.kron(img, np.ones((1, 4, 4), dtype=np.uint8))  # (N, 32, 32)
    img = np.repeat(img[:, None], 3, axis=1)  # (N, 3, 32, 32)
    idx_tr, idx_te = train_test_split(
        np.arange(len(img)), test_size=DIGITS_TEST_FRACTION, random_state=seed, stratify=digits.target
    )
    x, y = torch.from_numpy(img), torch.as_tensor(digits.target, dtype=torch.int64)
    return ImageData(x[idx_tr], y[idx_tr], x[idx_te], y[idx_te], DIGITS_NAME, [str(d) for d in range(10)])


def missing_cifar10_message(root: str | os.PathLike[str], download_error: BaseException | None = None) -> str:
    """Where to put CIFAR-10, and why the download did not fetch it (off, or failed with ``download_error``)."""
    root = Path(root)
    message = (
        f"CIFAR-10 is not available in {root.resolve()}. Put the archive cifar-10-python.tar.gz "
        f"(from {CIFAR10_URL}) into that directory, or extract it there so that "
        f"{root / 'cifar-10-batches-py'}/data_batch_1 exists"
    )
    if download_error is None:
        return message + ", or allow vit.data.download on a machine with network access."
    return message + f"; vit.data.download is on, but the download failed ({type(download_error).__name__})."


@dataclass(frozen=True)
class CorruptFile:
    """A CIFAR-10 file that is there but fails torchvision's md5: a truncated download, a damaged copy."""

    path: Path
    expected_md5: str
    found_md5: str


def _cifar10_checksums(root: Path) -> list[tuple[Path, str]]:
    """Each file torchvision checks under ``root`` with its md5, read from ``CIFAR10`` at call time (tests patch it)."""
    from torchvision.datasets import CIFAR10

    folder = root / CIFAR10.base_folder
    files = [(root / CIFAR10.filename, CIFAR10.tgz_md5), (folder / CIFAR10.meta["filename"], CIFAR10.meta["md5"])]
    return files + [(folder / name, md5) for name, md5 in CIFAR10.train_list + CIFAR10.test_list]


def corrupt_cifar10_files(root: str | os.PathLike[str]) -> list[CorruptFile]:
    """The CIFAR-10 files under ``root`` that exist but fail their md5; missing ones are not listed.

    torchvision says "not found or corrupted" for both; telling them apart keeps a damaged archive from being
    reported as missing (which sends one looking at the network instead of at the file).
    """
    from torchvision.datasets.utils import calculate_md5

    found = []
    for path, md5 in _cifar10_checksums(Path(root)):
        if path.is_file() and (actual := calculate_md5(path)) != md5:
            found.append(CorruptFile(path, md5, actual))
    return found


def corrupt_cifar10_message(root: str | os.PathLike[str], files: list[CorruptFile]) -> str:
    named = "; ".join(f"{f.path.resolve()} has md5 {f.found_md5}, expected {f.expected_md5}" for f in files)
    return (
        f"CIFAR-10 is present in {Path(root).resolve()} but corrupt (truncated or damaged, the md5 checksum "
        f"does not match): {named}. Delete the damaged file, then put a good copy of cifar-10-python.tar.gz "
        f"(from {CIFAR10_URL}) there, or allow vit.data.download on a machine with network access."
    )


def _archive_intact(root: Path) -> bool:
    """Whether ``cifar-10-python.tar.gz`` is in ``root`` with torchvision's md5 (so extracting it needs no network)."""
    from torchvision.datasets import CIFAR10
    from torchvision.datasets.utils import check_integrity

    return check_integrity(root / CIFAR10.filename, CIFAR10.tgz_md5)


def _warn_terminal(message: str) -> None:
    """Log a warning and print it to stderr as well.

    In a Snakemake job the ``maxmargin`` logger writes only to the rule's log file; a run that quietly trains on a
    stand-in dataset must be seen on the terminal. With no handler at all, logging already prints it to stderr.
    """
    log.warning(message)
    if log.hasHandlers():
        print(f"WARNING: {message}", file=sys.stderr, flush=True)


def _load_cifar10_checked(settings: DataSettings) -> ImageData:
    """CIFAR-10 from ``settings.root``; :class:`DataUnavailableError` says where to put it, or which file is corrupt."""
    root = Path(settings.root)
    # An intact archive placed by hand is extracted by torchvision's own download(), which then skips the network.
    # A damaged one is not handed over: torchvision would try to download a replacement, though download is off.
    download = settings.download or _archive_intact(root)
    try:
        return load_cifar10(root, download=download)
    except (RuntimeError, OSError) as err:  # torchvision: RuntimeError "not found or corrupted"; URLError is OSError
        corrupt = corrupt_cifar10_files(root)
        tried = err if settings.download and not _archive_intact(root) else None
        message = corrupt_cifar10_message(root, corrupt) if corrupt else missing_cifar10_message(root, tried)
        problem = "corrupt (md5 checksum mismatch)" if corrupt else "unavailable"
        raise DataUnavailableError(message, f"CIFAR-10 {problem}") from err


def _cifar10_md5s(root: Path) -> dict[str, str]:
    """The md5 of every extracted CIFAR-10 batch file under ``root`` (the manifest's record of them)."""
    folder = root / CIFAR10_FOLDER
    return {str(folder / name): file_md5(folder / name) for name in CIFAR10_BATCHES}


def _make_available(name: str, settings: DataSettings) -> tuple[dict[str, str], bool]:
    """Make data set ``name`` readable (extract, decompress, download where allowed) and check it: its files'
    md5s and whether this call downloaded it. :class:`DataUnavailableError` says what is missing or corrupt."""
    if name == CIFAR10_NAME:
        downloading = local_files(CIFAR10_NAME, dataclasses.asdict(settings)) is None
        _load_cifar10_checked(settings)
        return _cifar10_md5s(Path(settings.root)), downloading
    if name == FASHION_MNIST:
        raw, downloaded = arrange_fashion_mnist(
            settings.fashion_mnist_root, settings.fashion_mnist_files, settings.download
        )
        return {str(raw / n): file_md5(raw / n) for n in FASHION_IDX}, downloaded
    if name == DIGITS_NAME:
        return {}, False
    raise ValueError(f"unknown vit.data.dataset {name!r}; known: {', '.join(DATASETS)}")


def resolve_data(source: Mapping[str, Any], plan: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The data manifest: the first data set of ``source`` (the data keys of the config that say where images come
    from: ``dataset``, ``fallback``, ``root``, ``fashion_mnist_files``, ``fashion_mnist_root``, ``download``) that is
    there (or can be downloaded) and intact, its files with their md5s and sizes, the candidates tried before it and
    why they failed, and the plan (:func:`~maxmargin.experiments.vit.sources.data_plan`) this was decided from:
    ``plan``, rule ``vit_data``'s param, as Snakemake recorded it (else the local files' now).

    Without an allowed stand-in, the first failure stops: :class:`DataUnavailableError` says where to put the files.
    """
    settings = DataSettings(**{key: source[key] for key in SOURCE_KEYS}, n_train=0, n_test=0, augment=False)
    plan = dict(data_plan(source) if plan is None else plan)
    tried: list[dict[str, str]] = []
    for name in settings.candidates:
        try:
            md5s, downloaded = _make_available(name, settings)
        except DataUnavailableError as err:
            if not tried and len(settings.candidates) == 1:
                raise
            tried.append({"dataset": name, "problem": err.problem, "message": str(err)})
            continue
        note = f"{tried[0]['problem']}: stand-in {DISPLAY_NAMES[name]} used instead" if tried else ""
        return {
            "dataset": name,
            "md5": md5s,
            "sizes": local_files(name, source),
            "digest": manifest_digest(name, md5s),
            "downloaded": downloaded,
            "tried": tried,
            "note": note,
            "plan": plan,
        }
    raise DataUnavailableError(
        "no data set of vit.data.dataset and vit.data.fallback is available: " + " ".join(t["message"] for t in tried),
        "no data set available",
    )


def _read(name: str, settings: DataSettings, seed: int) -> ImageData:
    """Read data set ``name``, made available by :func:`resolve_data`, in full."""
    if name == CIFAR10_NAME:
        return load_cifar10(settings.root, download=False)
    if name == FASHION_MNIST:
        return load_fashion_mnist(settings.fashion_mnist_root, settings.fashion_mnist_files)
    return load_digits32(seed)


def _check_files(manifest: Mapping[str, Any]) -> None:
    """Stop when a file named in the manifest changed since (its md5 differs): the manifest must be rebuilt."""
    for path, md5 in manifest["md5"].items():
        if not Path(path).is_file() or (found := file_md5(path)) != md5:
            now = f"md5 {found}" if Path(path).is_file() else "missing"
            raise DataUnavailableError(
                f"{path} changed since the data manifest was written (recorded md5 {md5}, now {now}); rebuild "
                f"the manifest and what was trained on it: {run_command('fig6 fig7', options='--forcerun vit_data')}",
                f"{manifest['dataset']} changed",
            )


def load_image_data(settings: DataSettings, seed: int, manifest: Mapping[str, Any] | None = None) -> ImageData:
    """The data set a manifest names (:func:`resolve_data` when none is given), its files checked, subsetted.

    A stand-in is announced on the terminal and in the log, and carried in ``note`` (the figures print it). The
    subsets are the first ``n_train`` / ``n_test`` images (0 keeps all).
    """
    manifest = resolve_data(dataclasses.asdict(settings)) if manifest is None else manifest
    _check_files(manifest)
    if manifest["note"]:
        reasons = " ".join(t["message"] for t in manifest["tried"])
        _warn_terminal(f"{manifest['note']}. {reasons}")
    data = dataclasses.replace(
        _read(manifest["dataset"], settings, seed), note=manifest["note"], digest=manifest["digest"]
    )

    def head(x: torch.Tensor, y: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (x, y) if n <= 0 else (x[:n], y[:n])

    x_tr, y_tr = head(data.x_train, data.y_train, settings.n_train)
    x_te, y_te = head(data.x_test, data.y_test, settings.n_test)
    return dataclasses.replace(data, x_train=x_tr, y_train=y_tr, x_test=x_te, y_test=y_te)


def normalize(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """uint8 images -> float, per-channel standardised."""
    return (x.float() / 255.0 - mean[:, None, None]) / std[:, None, None]


def augment(x: torch.Tensor, generator: torch.Generator, pad: int = 4) -> torch.Tensor:
    """Random crop (zero padding ``pad``) and horizontal flip of a normalised batch, drawn from ``generator``."""
    b, _, h, w = x.shape
    off = torch.randint(0, 2 * pad + 1, (2, b), generator=generator).to(x.device)
    flip = (torch.rand(b, generator=generator) < 0.5).to(x.device)
    xp = functional.pad(x, (pad, pad, pad, pad))
    rows = off[0][:, None] + torch.arange(h, device=x.device)
    cols = off[1][:, None] + torch.arange(w, device=x.device)
    cols = torch.where(flip[:, None], cols.flip(-1), cols)
    out = xp[torch.arange(b, device=x.device)[:, None, None], :, rows[:, :, None], cols[:, None, :]]
    return out.permute(0, 3, 1, 2).contiguous()
