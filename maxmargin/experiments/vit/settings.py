"""Every setting of one ViT run: the config's ``vit.model``, ``vit.data``, ``vit.train``, ``vit.probe``, ``vit.guard``.

The config is the one source of values (workflow/config/default.yaml): the dataclasses here have no defaults, and
:meth:`VitSettings.from_config` needs every key. Torch-free: the rule files read it while building the DAG.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maxmargin.files import source_fingerprint


@dataclass(frozen=True)
class ModelSettings:
    """timm VisionTransformer hyper-parameters (paper: ViT-base, 768-d, depth 12, 12 heads, patch 2 on 32x32)."""

    patch_size: int
    embed_dim: int
    depth: int
    num_heads: int
    mlp_ratio: float
    img_size: int
    num_classes: int


@dataclass(frozen=True)
class DataSettings:
    """Which data set, where it lives, whether to download CIFAR-10, the stand-ins allowed, subset sizes.

    ``dataset`` is tried first (``cifar10``, ``fashion_mnist`` or ``digits``), then each of ``fallback`` in order
    when it is missing (the paper config allows none). ``root`` is CIFAR-10's folder; ``fashion_mnist_files`` holds
    Fashion-MNIST's four gzipped idx files and ``fashion_mnist_root`` is where torchvision's layout of them is made.
    ``n_train`` / ``n_test`` of 0 keep the whole training / test set.
    """

    dataset: str
    root: str
    fashion_mnist_root: str
    fashion_mnist_files: str
    download: bool
    fallback: tuple[str, ...]
    n_train: int
    n_test: int
    augment: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "fallback", tuple(self.fallback))  # a YAML list

    @property
    def candidates(self) -> tuple[str, ...]:
        """The data sets in the order they are tried: ``dataset``, then the fallbacks (no repeats)."""
        return tuple(dict.fromkeys((self.dataset, *self.fallback)))


@dataclass(frozen=True)
class TrainSettings:
    """Optimiser, learning-rate schedule and loop settings (the config's ``vit.train``).

    The paper states a fixed learning rate of 3e-3 and nothing else; warm-up, cosine decay, gradient clipping and
    the width-scaled rate (``lr_base_width``: hidden matrices at ``lr * lr_base_width / embed_dim``, as muP
    prescribes for Adam; 0 = off) are the recipe study's levers (``vit_recipes``). ``threads`` fixes torch's CPU
    threads, so that the numbers do not depend on Snakemake's ``--cores``. Cadences in epochs, each also at epoch 0
    and the last: ``checkpoint_every`` (checkpoints), ``eval_every`` (the measurements of a metrics row: test
    accuracy, the probe, W) and ``snapshot_every`` (the model's weights that the analyses after the run read,
    :mod:`.snapshots`). ``full_pass`` says which rows also carry the full training pass (the loss at the row's
    weights and its gradient on W, :meth:`~.probes.Evaluator.train_pass`): ``every`` row, or the ``window`` of the
    regime claims and epoch 0 (:func:`full_pass_epochs`).
    """

    optimizer: str
    lr: float
    momentum: float
    weight_decay: float
    warmup_epochs: float
    schedule: str
    grad_clip: float
    lr_base_width: int
    epochs: int
    batch_size: int
    seed: int
    device: str
    bf16: bool
    compile: bool
    threads: int
    checkpoint_every: int
    eval_every: int
    full_pass: str
    snapshot_every: int


@dataclass(frozen=True)
class ProbeSettings:
    """The probe set (the first ``n_images`` test images) and the test image whose maps Figure 6 draws."""

    n_images: int
    image_index: int


@dataclass(frozen=True)
class GuardSettings:
    """When to warn that the ViT is not learning: test accuracy within ``margin`` of chance after ``after_epochs``;
    and where the claims' window starts (``direction_from`` of the epochs), which ``vit.train.full_pass: window``
    follows."""

    after_epochs: int
    margin: float
    direction_from: float


GUARD_KEYS = ("after_epochs", "margin", "direction_from")  # the rest of vit.guard is read by the claims and figures
FULL_PASS = ("every", "window")  # vit.train.full_pass


def row_epochs(epochs: int, every: int) -> list[int]:
    """The epochs with a metrics row: 0, every ``every`` epochs and the last."""
    return sorted({*range(0, epochs + 1, every), epochs})


def full_pass_epochs(epochs: int, every: int, full_pass: str, window_from: float) -> list[int]:
    """The rows that carry the full training pass: every row, or (``window``) epoch 0 and the rows of the regime
    claims' window, from the last row at or before ``window_from`` of the epochs on (as
    :func:`~maxmargin.core.vit_learning.w_direction` starts it), the rows those claims read.

    >>> full_pass_epochs(60, 1, "window", 0.8)[:3], full_pass_epochs(10, 3, "window", 0.8)
    ([0, 48, 49], [0, 6, 9, 10])
    """
    rows = row_epochs(epochs, every)
    if full_pass not in FULL_PASS:
        raise ValueError(f"vit.train.full_pass is {full_pass!r}: one of {', '.join(FULL_PASS)}")
    if full_pass == "every":
        return rows
    start = max(e for e in rows if e <= window_from * epochs)
    return [e for e in rows if e == 0 or e >= start]


# Left out of a run's fingerprint: they do not change its numbers (where the files are, whether to download them,
# which device, whether compiled, how often to checkpoint), or are warnings only (guard).
_NOT_IN_FINGERPRINT = {
    "data": ("root", "download", "fashion_mnist_root", "fashion_mnist_files", "fallback", "dataset"),
    "train": ("device", "compile", "checkpoint_every"),
}
# The modules whose code makes a run's numbers (data, model, probe, optimiser, loop and its random states, the
# snapshots, these settings). Left out: checkpoint.py (where a checkpoint is kept, not what it holds: the loop writes
# its content, and its format is checked on load) and results.py (how the numbers are written: a change there
# rewrites the outputs from a finished checkpoint instead of training again).
TRAINING_MODULES = (
    "data.py",
    "fashion.py",
    "images.py",
    "model.py",
    "optim.py",
    "probes.py",
    "settings.py",
    "snapshots.py",
    "sources.py",
    "training.py",
)
# The analyses of a finished run's snapshots (rule vit_probe): outside the training's code, so that a change to an
# analysis reruns the analysis only.
ANALYSIS_MODULES = ("w_svm_probe.py",)


@dataclass(frozen=True)
class VitSettings:
    """Every setting of one ViT run (the config's ``vit.model``, ``vit.data``, ``vit.train``, ``vit.probe``)."""

    model: ModelSettings
    data: DataSettings
    train: TrainSettings
    probe: ProbeSettings
    guard: GuardSettings

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> VitSettings:
        """Build from the config's ``vit`` section; other sections (plots, resources, pilot) are ignored."""
        return cls(
            model=ModelSettings(**cfg["model"]),
            data=DataSettings(**cfg["data"]),
            train=TrainSettings(**cfg["train"]),
            probe=ProbeSettings(**cfg["probe"]),
            guard=GuardSettings(**{key: cfg["guard"][key] for key in GUARD_KEYS}),
        )

    def full_pass_epochs(self) -> list[int]:
        """The rows of this run that carry the full training pass (:func:`full_pass_epochs`)."""
        t = self.train
        return full_pass_epochs(t.epochs, t.eval_every, t.full_pass, self.guard.direction_from)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["data"]["fallback"] = list(d["data"]["fallback"])
        return d

    def fingerprint(self, data_id: str) -> str:
        """Hash of every setting that changes the trajectory of a run, of ``data_id`` (which data it got) and of
        the training code (:func:`training_code_fingerprint`): a checkpoint resumes only a run of all three."""
        d = self.to_dict()
        d["data_id"] = data_id
        d["code"] = training_code_fingerprint()
        guard = d.pop("guard")
        if self.train.full_pass == "window":  # which rows carry the full pass: part of the run's numbers
            d["train"]["full_pass_from"] = guard["direction_from"]
        for section, keys in _NOT_IN_FINGERPRINT.items():
            for key in keys:
                d[section].pop(key)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def training_code_fingerprint() -> str:
    """Hash of the modules whose code makes a run's numbers (:data:`TRAINING_MODULES`)."""
    return source_fingerprint([Path(__file__).parent / name for name in TRAINING_MODULES])


def code_fingerprint() -> str:
    """Hash of the package's source but its analyses (:data:`ANALYSIS_MODULES`): rule vit_train's rerun trigger
    (the outputs follow any change to how they are made or written)."""
    return source_fingerprint([p for p in sorted(Path(__file__).parent.glob("*.py")) if p.name not in ANALYSIS_MODULES])


def recipe_config(vit: Mapping[str, Any], study: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The ``vit`` config of recipe ``name``: the proxy's model/data/probe (when ``study.proxy``) and train
    settings merged over ``vit``'s, then the recipe's own keys (its ``model`` block over the model, the rest over
    the train settings)."""
    recipes = {r["name"]: r for r in study["recipes"]}
    if name not in recipes:
        raise ValueError(f"unknown vit_recipes recipe {name!r}; the config has {', '.join(recipes)}")
    sections = ("model", "data", "probe") if study["proxy"] else ()
    cfg = {key: {**vit[key], **(study.get(key, {}) if key in sections else {})} for key in ("model", "data", "probe")}
    recipe = {k: v for k, v in recipes[name].items() if k not in ("name", "model")}
    cfg["model"] = {**cfg["model"], **recipes[name].get("model", {})}
    cfg["train"] = {**vit["train"], **study.get("train", {}), **recipe}
    cfg["guard"] = dict(vit.get("guard", {}))
    return cfg
