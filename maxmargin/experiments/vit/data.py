"""The images of the ViT experiment: CIFAR-10 or Fashion-MNIST through torchvision, or the quick-scale digits stand-in.

Paper: Section 4, "we train ... utilizing the CIFAR10 dataset [24]". Fashion-MNIST (``vit.data.dataset``) is a
full-size stand-in where CIFAR-10 cannot be had (:mod:`.fashion`). A missing or damaged archive is told apart
(which file, which md5) and, at the paper scale, never replaced by the digits.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from maxmargin.experiments.vit.settings import DataSettings

log = logging.getLogger("maxmargin")

CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_NAME = "cifar10"
DIGITS_NAME = "digits-fallback"
DIGITS_TEST_FRACTION = 0.2  # share of the 1797 digits held out as the test set (stratified)


class DataUnavailableError(RuntimeError):
    """The configured data set could not be loaded; ``problem`` says it in a few words (e.g. "CIFAR-10 unavailable").

    Without a fallback (the paper-scale config) it stops the run; the message says where to put the files.
    """

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


@dataclass(frozen=True)
class ImageData:
    """Train and test images as uint8 (N, 3, 32, 32) tensors with int64 labels; normalisation from the train set."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    name: str
    classes: list[str]
    note: str = ""  # e.g. the fallback warning, written on the figures

    @property
    def identity(self) -> str:
        """Dataset name and sizes: a checkpoint of a digits-fallback run never resumes on CIFAR-10."""
        return f"{self.name}:{len(self.x_train)}:{len(self.x_test)}"

    @property
    def mean(self) -> torch.Tensor:
        return self.x_train.float().mean(dim=(0, 2, 3)) / 255.0

    @property
    def std(self) -> torch.Tensor:
        return self.x_train.float().std(dim=(0, 2, 3)) / 255.0


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


def missing_cifar10_message(root: str | os.PathLike[str]) -> str:
    root = Path(root)
    return (
        f"CIFAR-10 is not available in {root.resolve()}. Put the archive cifar-10-python.tar.gz "
        f"(from {CIFAR10_URL}) into that directory, or extract it there so that "
        f"{root / 'cifar-10-batches-py'}/data_batch_1 exists, or allow vit.data.download on a machine "
        "with network access."
    )


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
        message = corrupt_cifar10_message(root, corrupt) if corrupt else missing_cifar10_message(root)
        problem = "corrupt (md5 checksum mismatch)" if corrupt else "unavailable"
        raise DataUnavailableError(message, f"CIFAR-10 {problem}") from err


def _load_configured(settings: DataSettings) -> ImageData:
    """The data set ``settings.dataset`` names, in full."""
    from maxmargin.experiments.vit.fashion import FASHION_MNIST_NAME, load_fashion_mnist

    if settings.dataset == FASHION_MNIST_NAME:
        return load_fashion_mnist(settings.fashion_mnist_root, settings.fashion_mnist_files)
    if settings.dataset == CIFAR10_NAME:
        return _load_cifar10_checked(settings)
    raise ValueError(f"unknown vit.data.dataset {settings.dataset!r}: {CIFAR10_NAME} or {FASHION_MNIST_NAME}")


def load_image_data(settings: DataSettings, seed: int) -> ImageData:
    """The configured data set (``vit.data.dataset``), else the digits fallback if allowed, subsetted.

    Paper scale never falls back: :class:`DataUnavailableError` says where to put the files, or which file is
    corrupt. The subsets are the first ``n_train`` / ``n_test`` images (0 keeps all).
    """
    try:
        data = _load_configured(settings)
    except DataUnavailableError as err:
        if not settings.fallback:
            raise
        note = f"{err.problem}: quick-scale fallback to scikit-learn digits upsampled to 32x32x3"
        cause = f" ({type(err.__cause__).__name__}: {err.__cause__})" if err.__cause__ else ""
        _warn_terminal(f"{note}{cause}. {err}")
        data = dataclasses.replace(load_digits32(seed), note=note)

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
