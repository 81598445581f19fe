"""Every setting of one ViT run: the config's ``vit.model``, ``vit.data``, ``vit.train``, ``vit.probe``, ``vit.guard``.

The config is the one source of values (workflow/config/default.yaml): the dataclasses here have no defaults, and
:meth:`VitSettings.from_config` needs every key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
    """Which data set (``cifar10`` or ``fashion_mnist``), where it lives, whether to download CIFAR-10, whether the
    quick-scale fallback is allowed, subset sizes.

    ``root`` is CIFAR-10's folder; ``fashion_mnist_files`` holds Fashion-MNIST's four gzipped idx files and
    ``fashion_mnist_root`` is where torchvision's layout of them is made. ``n_train`` / ``n_test`` of 0 keep the
    whole training / test set.
    """

    dataset: str
    root: str
    fashion_mnist_root: str
    fashion_mnist_files: str
    download: bool
    fallback: bool
    n_train: int
    n_test: int
    augment: bool


@dataclass(frozen=True)
class TrainSettings:
    """Optimiser, learning-rate schedule and loop settings (the config's ``vit.train``).

    The paper states a fixed learning rate of 3e-3 and nothing else; warm-up, cosine decay and gradient clipping
    are the recipe study's levers (``vit_recipes``), off when 0 / "constant".
    """

    optimizer: str
    lr: float
    momentum: float
    weight_decay: float
    warmup_epochs: float
    schedule: str
    grad_clip: float
    epochs: int
    batch_size: int
    seed: int
    device: str
    bf16: bool
    compile: bool


@dataclass(frozen=True)
class ProbeSettings:
    """The probe set (the first ``n_images`` test images) and the test image whose maps Figure 6 draws."""

    n_images: int
    image_index: int


@dataclass(frozen=True)
class GuardSettings:
    """When to warn that the ViT is not learning: test accuracy within ``margin`` of chance after ``after_epochs``."""

    after_epochs: int
    margin: float


GUARD_KEYS = ("after_epochs", "margin")  # the rest of vit.guard is read by the claims


@dataclass(frozen=True)
class VitSettings:
    """Every setting of one ViT run (the config's ``vit.model``, ``vit.data``, ``vit.train``, ``vit.probe``)."""

    model: ModelSettings
    data: DataSettings
    train: TrainSettings
    probe: ProbeSettings
    guard: GuardSettings

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> VitSettings:
        """Build from the config's ``vit`` section; other sections (plots, resources, pilot) are ignored."""
        return cls(
            model=ModelSettings(**cfg["model"]),
            data=DataSettings(**cfg["data"]),
            train=TrainSettings(**cfg["train"]),
            probe=ProbeSettings(**cfg["probe"]),
            guard=GuardSettings(**{key: cfg["guard"][key] for key in GUARD_KEYS}),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self, data_id: str) -> str:
        """Hash of every setting that changes the trajectory of a run, and of ``data_id`` (which data it got).

        Left out: the device, ``compile`` and the data locations/download switch. The training and probe code is in
        (:func:`code_fingerprint`): a checkpoint resumes only a run of these settings, data and code.
        """
        d = self.to_dict()
        d["data_id"] = data_id
        d["code"] = code_fingerprint()
        d.pop("guard")  # warnings only: they do not change the trajectory
        for key in ("device", "compile"):
            d["train"].pop(key)
        for key in ("root", "download", "fashion_mnist_root", "fashion_mnist_files"):
            d["data"].pop(key)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def code_fingerprint() -> str:
    """Hash of this package's source: the data, model, probe and training loop that a checkpoint's numbers come from."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def recipe_config(vit: Mapping[str, Any], study: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The ``vit`` config of recipe ``name``: the proxy's model/data/probe (when ``study.proxy``) and train
    settings merged over ``vit``'s, then the recipe's own optimiser keys."""
    recipes = {r["name"]: r for r in study["recipes"]}
    if name not in recipes:
        raise ValueError(f"unknown vit_recipes recipe {name!r}; the config has {', '.join(recipes)}")
    sections = ("model", "data", "probe") if study["proxy"] else ()
    cfg = {key: {**vit[key], **(study.get(key, {}) if key in sections else {})} for key in ("model", "data", "probe")}
    recipe = {k: v for k, v in recipes[name].items() if k != "name"}
    cfg["train"] = {**vit["train"], **study.get("train", {}), **recipe}
    cfg["guard"] = dict(vit.get("guard", {}))
    return cfg
