"""Where the ViT's images come from: the local files of each candidate data set (torch-free) and the data manifest.

Paper: Section 4 trains on CIFAR-10. The config names a data set and the stand-ins allowed when it is missing
(``vit.data.dataset``, ``vit.data.fallback``). Which one a run gets is written down once, by rule ``vit_data``,
in a manifest (the data set, every file with its size and md5, why a stand-in was taken) that the training,
the linear baseline and the pilot read as a declared input. :func:`data_plan` is the manifest rule's parameter:
what the local files say, read from file sizes alone (cheap enough for every DAG build), so that a data set
that appears (CIFAR-10 dropped in later), vanishes or changes reruns the manifest and everything trained on it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maxmargin.registry.vit import DATASET_NAMES

CIFAR10, FASHION_MNIST, DIGITS = DATASETS = tuple(DATASET_NAMES)
DISPLAY_NAMES = DATASET_NAMES

CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_ARCHIVE = "cifar-10-python.tar.gz"
CIFAR10_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch", "batches.meta")
FASHION_IDX = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
FASHION_RAW = Path("FashionMNIST") / "raw"  # torchvision's layout under vit.data.fashion_mnist_root


def _sizes(paths: list[Path]) -> dict[str, int] | None:
    """path -> size in bytes when every path is a file, else None."""
    if not all(p.is_file() for p in paths):
        return None
    return {str(p): p.stat().st_size for p in paths}


def local_files(name: str, data: Mapping[str, Any]) -> dict[str, int] | None:
    """The files of data set ``name`` on this machine, path -> size (None: not all there). The digits ship inside
    scikit-learn: its version stands for the files."""
    if name == CIFAR10:
        root = Path(data["root"])
        return _sizes([root / CIFAR10_FOLDER / b for b in CIFAR10_BATCHES]) or _sizes([root / CIFAR10_ARCHIVE])
    if name == FASHION_MNIST:
        raw = Path(data["fashion_mnist_root"]) / FASHION_RAW
        files = Path(data["fashion_mnist_files"])
        return _sizes([raw / n for n in FASHION_IDX]) or _sizes([files / f"{n}.gz" for n in FASHION_IDX])
    if name == DIGITS:
        return {f"scikit-learn {importlib.metadata.version('scikit-learn')}": 0}
    raise ValueError(f"unknown vit.data.dataset {name!r}; known: {', '.join(DATASETS)}")


def candidates(data: Mapping[str, Any]) -> list[str]:
    """``vit.data.dataset``, then ``vit.data.fallback`` in order, each once."""
    return list(dict.fromkeys([data["dataset"], *data["fallback"]]))


def data_plan(data: Mapping[str, Any], manifest: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What the local files say about each candidate data set (sizes only), and whether a download may be tried.

    ``manifest``: the manifest this plan would rebuild. Its job may have changed the form of the data set it chose
    (extracted the CIFAR-10 archive, decompressed the Fashion-MNIST ``.gz`` files, downloaded them): while that data
    set's files are still the ones the job left (the manifest's ``sizes``), it stands as the job's plan described
    it. The plan so describes a data set, not the form it is stored in: a second run does not rebuild the manifest,
    nor retrain on it; a data set that appears, vanishes or changes still does.
    """
    recorded = _recorded(manifest)
    chosen = recorded.get("dataset")
    kept = {c["name"]: c for c in recorded.get("plan", {}).get("candidates", [])}
    plan_candidates = []
    for name in candidates(data):
        files = local_files(name, data)
        stands = name == chosen and name in kept and files is not None and files == recorded.get("sizes")
        plan_candidates.append(kept[name] if stands else {"name": name, "files": files})
    # keys sorted as the manifest stores them: Snakemake compares the param's repr, order included
    return json.loads(json.dumps({"candidates": plan_candidates, "download": bool(data["download"])}, sort_keys=True))


def _recorded(manifest: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The manifest's contents ({} when there is none or it cannot be read: the plan is then the files')."""
    if manifest is None or not Path(manifest).is_file():
        return {}
    try:
        recorded = json.loads(Path(manifest).read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def file_md5(path: str | os.PathLike[str]) -> str:
    """The md5 of a file, read in blocks (torchvision's checksums are md5s)."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_digest(dataset: str, md5s: Mapping[str, str]) -> str:
    """A short hash of a data set's name and its files' md5s: the data part of a run's fingerprint."""
    text = json.dumps({"dataset": dataset, "md5": dict(sorted(md5s.items()))}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
