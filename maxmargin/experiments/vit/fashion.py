"""Fashion-MNIST as a full-size stand-in for CIFAR-10: torchvision's ``FashionMNIST`` on local raw files.

Paper: Section 4 trains on CIFAR-10 (50,000 + 10,000 colour 32x32 images), which cannot be downloaded on machines
without network. Fashion-MNIST (60,000 + 10,000 grey 28x28 images, 10 classes) ships as four gzipped idx files,
e.g. in Debian's package ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``), or torchvision downloads
them where ``vit.data.download`` allows and the network does. The files are decompressed into torchvision's layout
(``<root>/FashionMNIST/raw/``) and checked by md5, then each image is zero-padded to 32x32 and repeated over 3
channels, so that the paper's model runs unchanged.
"""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import zlib
from pathlib import Path

import torch
from torch.nn import functional

from maxmargin.experiments.vit.images import DataUnavailableError, ImageData
from maxmargin.experiments.vit.sources import FASHION_MNIST
from maxmargin.files import atomic_path

log = logging.getLogger("maxmargin")

FASHION_MNIST_NAME = FASHION_MNIST
IMAGE_SIZE = 32  # CIFAR-10's side, the model's vit.model.img_size at both scales
SOURCE_SIZE = 28  # Fashion-MNIST's side


# md5 of each decompressed idx file. torchvision's md5s are of the upstream .gz files; Debian's .gz hold the same
# deflate streams under another gzip header (the file name dropped, the time stamp set to the packaging date), so
# they fail those md5s while their content is intact. These are measured from Debian's files (docs/vit.md).
IDX_MD5 = {
    "train-images-idx3-ubyte": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
    "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
    "t10k-images-idx3-ubyte": "8181f5470baa50b63fa0f6fddb340f0a",
    "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965",
}


def _raw_folder(root: Path) -> Path:
    from torchvision.datasets import FashionMNIST

    return root / FashionMNIST.__name__ / "raw"


def missing_fashion_mnist_message(files: Path, missing: list[str]) -> str:
    return (
        f"Fashion-MNIST is not available: {', '.join(missing)} not in {files.resolve()}. Install Debian's package "
        "dataset-fashion-mnist (apt-get install dataset-fashion-mnist puts the four files in "
        "/usr/share/datasets/fashion-mnist), or copy the four .gz files into a folder and set "
        "vit.data.fashion_mnist_files to it (or allow vit.data.download on a machine with network access)."
    )


def _decompress(source: Path, target: Path) -> None:
    """gunzip ``source`` to ``target`` through :func:`maxmargin.files.atomic_path` (gzip checks its CRC).

    A truncated or damaged ``.gz`` leaves no partial file behind and is named in a :class:`DataUnavailableError`
    (so that a stand-in is taken where one is allowed, as for a corrupt CIFAR-10).
    """
    try:
        with atomic_path(target) as tmp, gzip.open(source, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, length=1 << 22)
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:  # cut short, not gzip, or a failed CRC
        raise DataUnavailableError(
            f"Fashion-MNIST is present but corrupt: {source.resolve()} is truncated or damaged ({type(err).__name__}: "
            f"{err}). Replace it with a good copy (Debian: apt-get install --reinstall dataset-fashion-mnist).",
            "Fashion-MNIST corrupt (truncated or damaged .gz)",
        ) from err


def _download(root: Path, files: Path, missing: list[str]) -> None:
    """torchvision's download of the upstream files into ``<root>/FashionMNIST/raw/`` (a network error, or an
    offline machine, becomes :class:`DataUnavailableError` naming the local files that were missing)."""
    from torchvision.datasets import FashionMNIST

    try:
        FashionMNIST(str(root), train=True, download=True)
    except (RuntimeError, OSError) as err:  # URLError is an OSError
        raise DataUnavailableError(
            f"{missing_fashion_mnist_message(files, missing)} The download failed too ({type(err).__name__}: {err}).",
            "Fashion-MNIST unavailable",
        ) from err


def arrange_fashion_mnist(
    root: str | os.PathLike[str], files: str | os.PathLike[str], download: bool = False
) -> tuple[Path, bool]:
    """Make ``<root>/FashionMNIST/raw/`` hold the four decompressed idx files, where torchvision reads them: from the
    gzipped files of ``files``, else (``download``) by torchvision's download. The raw folder, and whether this
    call downloaded.

    A file already there is kept. Every decompressed file must have its md5 (:data:`IDX_MD5`); a damaged one is
    decompressed again from its ``.gz`` where that is there, else (or when the copy is damaged too) named with its
    md5, removed, and the error says where it came from.
    """
    from torchvision.datasets.utils import calculate_md5

    files, root = Path(files), Path(root)
    raw = _raw_folder(root)
    todo = [name for name in IDX_MD5 if not (raw / name).is_file()]
    missing = [f"{name}.gz" for name in todo if not (files / f"{name}.gz").is_file()]
    downloaded = bool(missing) and download
    if downloaded:
        _download(root, files, missing)
    elif missing:
        raise DataUnavailableError(missing_fashion_mnist_message(files, missing), "Fashion-MNIST unavailable")
    else:
        raw.mkdir(parents=True, exist_ok=True)
        for name in todo:
            _decompress(files / f"{name}.gz", raw / name)
    corrupt = [(name, md5, found) for name, md5 in IDX_MD5.items() if (found := calculate_md5(raw / name)) != md5]
    redone = [name for name, _, _ in corrupt if (files / f"{name}.gz").is_file()]
    for name in redone:  # a damaged decompressed copy of an intact source: decompressed again, in this run
        log.warning(
            "Fashion-MNIST file %s is damaged; decompressing it again from %s", raw / name, files / f"{name}.gz"
        )
        (raw / name).unlink()
        _decompress(files / f"{name}.gz", raw / name)
    if redone:
        corrupt = [(n, md5, found) for n, md5 in IDX_MD5.items() if (found := calculate_md5(raw / n)) != md5]
    if corrupt:
        for name, _, _ in corrupt:
            (raw / name).unlink()
        named = "; ".join(
            f"{(raw / n).resolve()} (from {files.resolve()}) had md5 {f}, expected {m}" for n, m, f in corrupt
        )
        raise DataUnavailableError(
            f"Fashion-MNIST is present but corrupt (md5 checksum mismatch, the file was removed): {named}.",
            "Fashion-MNIST corrupt (md5 checksum mismatch)",
        )
    return raw, downloaded


def to_rgb32(images: torch.Tensor) -> torch.Tensor:
    """uint8 (N, 28, 28) grey images -> uint8 (N, 3, 32, 32): zero-padded by 2 pixels on each side, grey repeated in
    all 3 channels.

    Padding, not resizing: every pixel stays as it was (no interpolation), the padded border is the images' own
    black background, and the 28x28 content fills the centre 14x14 patches of the paper's 16x16 grid (patch 2).
    """
    pad = (IMAGE_SIZE - images.shape[-1]) // 2
    padded = functional.pad(images, (pad, pad, pad, pad))
    return padded[:, None].expand(-1, 3, -1, -1).contiguous()


def load_fashion_mnist(root: str | os.PathLike[str], files: str | os.PathLike[str]) -> ImageData:
    """Fashion-MNIST through ``torchvision.datasets.FashionMNIST`` (never downloading), as 32x32x3 uint8 images.

    ``files`` holds the four gzipped idx files (e.g. Debian's ``/usr/share/datasets/fashion-mnist``); ``root`` is
    where torchvision's ``FashionMNIST/raw/`` layout is made (:func:`arrange_fashion_mnist`).
    """
    from torchvision.datasets import FashionMNIST

    arrange_fashion_mnist(root, files)  # no download here: rule vit_data's manifest made the files available
    train = FashionMNIST(str(root), train=True, download=False)
    test = FashionMNIST(str(root), train=False, download=False)
    return ImageData(
        to_rgb32(train.data),
        train.targets.to(torch.int64),
        to_rgb32(test.data),
        test.targets.to(torch.int64),
        FASHION_MNIST_NAME,
        list(train.classes),
    )
