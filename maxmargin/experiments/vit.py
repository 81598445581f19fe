"""A ViT trained from scratch on CIFAR-10: the [CLS] attention probe, soft-sparsity and ||W||_F through training.

Paper: Section 4 ("Real experiments"), Figures 6 and 7. timm provides the VisionTransformer and torchvision the
CIFAR-10 loader; this module adds what the paper measures:

* :func:`cls_attention`: the last layer's softmax attention of the [CLS] query, recomputed by a forward hook
  from the block's own qkv projection while the model itself keeps timm's fused attention (SDPA);
* :func:`patch_attention` and :func:`soft_sparsity`: d_nnz(s) / T with d_nnz(s) = ||s||_1^2 / ||s||_2^2, over the
  T patch tokens ([CLS]'s self-entry dropped and the rest renormalised to sum to 1);
* :func:`key_query_matrix` and :func:`key_query_frobenius`: W = sum_h W_Q,h^T W_K,h of the last block;
* :func:`train_vit`: the training loop (fixed learning rate, SGD with momentum / Adam / AdamW), logging the
  metrics of every epoch from epoch 0 (the initialisation), checkpointing every epoch and resuming on rerun.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import logging
import math
import os
import pickle
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from maxmargin.io import atomic_path, write_csv

log = logging.getLogger("maxmargin")

CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_NAME = "cifar10"
DIGITS_NAME = "digits-fallback"
CHECKPOINT_FORMAT = 2  # 2: schedule state, settings and the "finished" flag


# --------------------------------------------------------------------------------------------------------------------
# Settings (the `vit:` section of the config, minus plots and resources)
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSettings:
    """timm VisionTransformer hyper-parameters (paper: ViT-base, 768-d, depth 12, 12 heads, patch 2 on 32x32)."""

    patch_size: int = 4
    embed_dim: int = 64
    depth: int = 4
    num_heads: int = 4
    mlp_ratio: float = 4.0
    img_size: int = 32
    num_classes: int = 10


@dataclass(frozen=True)
class DataSettings:
    """Where CIFAR-10 lives, whether to download it, whether the quick-scale fallback is allowed, subset sizes."""

    root: str = "data/cifar10"
    download: bool = True
    fallback: bool = True
    n_train: int = 0  # 0: the whole training set
    n_test: int = 0  # 0: the whole test set
    augment: bool = False


@dataclass(frozen=True)
class TrainSettings:
    """Optimiser, learning-rate schedule and loop settings (the config's ``vit.train``).

    The paper states a fixed learning rate of 3e-3 and nothing else; warm-up, cosine decay and gradient clipping
    are the recipe study's levers (``vit_recipes``), off when 0 / "constant".
    """

    optimizer: str = "sgd"
    lr: float = 3e-3
    momentum: float = 0.9
    weight_decay: float = 0.0
    warmup_epochs: float = 0.0
    schedule: str = "constant"
    grad_clip: float = 0.0
    epochs: int = 10
    batch_size: int = 128
    seed: int = 0
    device: str = "auto"
    bf16: bool = False
    compile: bool = False


@dataclass(frozen=True)
class ProbeSettings:
    """The probe set (the first ``n_images`` test images) and the test image whose maps Figure 6 draws."""

    n_images: int = 256
    image_index: int = 0


@dataclass(frozen=True)
class GuardSettings:
    """When to warn that the ViT is not learning: test accuracy within ``margin`` of chance after ``after_epochs``."""

    after_epochs: int = 10
    margin: float = 0.05


@dataclass(frozen=True)
class VitSettings:
    """Every setting of one ViT run (the config's ``vit.model``, ``vit.data``, ``vit.train``, ``vit.probe``)."""

    model: ModelSettings = field(default_factory=ModelSettings)
    data: DataSettings = field(default_factory=DataSettings)
    train: TrainSettings = field(default_factory=TrainSettings)
    probe: ProbeSettings = field(default_factory=ProbeSettings)
    guard: GuardSettings = field(default_factory=GuardSettings)

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> VitSettings:
        """Build from the config's ``vit`` section; unknown sections (plots, resources) are ignored."""
        return cls(
            model=ModelSettings(**cfg.get("model", {})),
            data=DataSettings(**cfg.get("data", {})),
            train=TrainSettings(**cfg.get("train", {})),
            probe=ProbeSettings(**cfg.get("probe", {})),
            guard=GuardSettings(**{k: v for k, v in cfg.get("guard", {}).items() if k in ("after_epochs", "margin")}),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self, data_id: str = "") -> str:
        """Hash of every setting that changes the trajectory of a run, and of ``data_id`` (which data it got).

        Left out: the device, ``compile`` and the data location/download switch. The training and probe code is in
        (:func:`code_fingerprint`): a checkpoint resumes only a run of these settings, data and code.
        """
        d = self.to_dict()
        d["data_id"] = data_id
        d["code"] = code_fingerprint()
        d.pop("guard")  # warnings only: they do not change the trajectory
        for key in ("device", "compile"):
            d["train"].pop(key)
        for key in ("root", "download"):
            d["data"].pop(key)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def code_fingerprint() -> str:
    """Hash of this module's source: the model, training loop and probe that a checkpoint's numbers come from."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------------------------------


class DataUnavailableError(RuntimeError):
    """CIFAR-10 could not be loaded and no fallback is allowed (the paper-scale config)."""


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


def load_digits32(seed: int = 0, test_fraction: float = 0.2) -> ImageData:
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
        np.arange(len(img)), test_size=test_fraction, random_state=seed, stratify=digits.target
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


def load_image_data(settings: DataSettings, seed: int = 0) -> ImageData:
    """CIFAR-10 (downloaded into ``settings.root`` when allowed), else the digits fallback if allowed, subsetted.

    Paper scale never falls back: :class:`DataUnavailableError` says where to put the archive, or which file is
    corrupt. The subsets are the first ``n_train`` / ``n_test`` images (0 keeps all).
    """
    root = Path(settings.root)
    # An intact archive placed by hand is extracted by torchvision's own download(), which then skips the network.
    # A damaged one is not handed over: torchvision would try to download a replacement, though download is off.
    download = settings.download or _archive_intact(root)
    try:
        data = load_cifar10(root, download=download)
    except (RuntimeError, OSError) as err:  # torchvision: RuntimeError "not found or corrupted"; URLError is OSError
        corrupt = corrupt_cifar10_files(root)
        message = corrupt_cifar10_message(root, corrupt) if corrupt else missing_cifar10_message(root)
        if not settings.fallback:
            raise DataUnavailableError(message) from err
        problem = "corrupt (md5 checksum mismatch)" if corrupt else "unavailable"
        note = f"CIFAR-10 {problem}: quick-scale fallback to scikit-learn digits upsampled to 32x32x3"
        _warn_terminal(f"{note} ({type(err).__name__}: {err}). {message}")
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
    xp = F.pad(x, (pad, pad, pad, pad))
    rows = off[0][:, None] + torch.arange(h, device=x.device)
    cols = off[1][:, None] + torch.arange(w, device=x.device)
    cols = torch.where(flip[:, None], cols.flip(-1), cols)
    out = xp[torch.arange(b, device=x.device)[:, None, None], :, rows[:, :, None], cols[:, None, :]]
    return out.permute(0, 3, 1, 2).contiguous()


# --------------------------------------------------------------------------------------------------------------------
# Model, probe and metrics
# --------------------------------------------------------------------------------------------------------------------


def build_vit(settings: ModelSettings) -> nn.Module:
    """timm's VisionTransformer for 32x32 images with a [CLS] token that the head reads (global_pool="token").

    Paper: Section 4, ViT-base [23] trained from scratch; patch 2 gives the 16x16 maps of Figure 6.
    """
    from timm.models.vision_transformer import VisionTransformer

    return VisionTransformer(
        img_size=settings.img_size,
        patch_size=settings.patch_size,
        in_chans=3,
        num_classes=settings.num_classes,
        embed_dim=settings.embed_dim,
        depth=settings.depth,
        num_heads=settings.num_heads,
        mlp_ratio=settings.mlp_ratio,
        qkv_bias=True,
        class_token=True,
        global_pool="token",
    )


def last_attention(model: nn.Module) -> nn.Module:
    """The attention module of the last transformer block (the layer of Figures 6 and 7)."""
    return model.blocks[-1].attn


def attention_weights(attn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T * scale) of a timm Attention module on its input ``x`` (B, N, C): (B, heads, N, N).

    Recomputed from the module's own qkv projection and q_norm/k_norm, as timm's unfused path does.
    """
    b, n, _ = x.shape
    qkv = attn.qkv(x).reshape(b, n, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    q, k = attn.q_norm(qkv[0]), attn.k_norm(qkv[1])
    return ((q * attn.scale) @ k.transpose(-2, -1)).softmax(dim=-1)


@contextlib.contextmanager
def cls_attention_hook(model: nn.Module) -> Iterator[list[torch.Tensor]]:
    """Record the [CLS] row of the last layer's attention, (B, heads, N), for every forward pass in the block.

    A forward hook on the last block's attention module recomputes the weights from its input; the forward pass
    itself still runs timm's fused attention.
    """
    captured: list[torch.Tensor] = []

    def hook(module: nn.Module, args: tuple, kwargs: dict, output: torch.Tensor) -> None:
        if kwargs.get("attn_mask") is not None or kwargs.get("is_causal"):
            raise NotImplementedError("the [CLS] probe assumes unmasked attention")
        x = args[0] if args else kwargs["x"]
        with torch.autocast(device_type=x.device.type, enabled=False):
            captured.append(attention_weights(module, x.float())[:, :, 0, :].detach())

    handle = last_attention(model).register_forward_hook(hook, with_kwargs=True)
    try:
        yield captured
    finally:
        handle.remove()


@torch.no_grad()
def cls_attention(model: nn.Module, images: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Last-layer attention of the [CLS] query on normalised ``images``: (B, heads, 1 + T), float32, in eval mode.

    Paper: Figure 6 ("attention weights of the [CLS] token").
    """
    was_training = model.training
    model.eval()
    try:
        with cls_attention_hook(model) as captured:
            for i in range(0, len(images), batch_size):
                model(images[i : i + batch_size])
    finally:
        model.train(was_training)
    return torch.cat(captured)


def patch_attention(cls_row: torch.Tensor, num_prefix_tokens: int = 1) -> torch.Tensor:
    """Head-averaged [CLS] attention over the T patch tokens, renormalised to sum to 1: (B, T).

    Paper: Figure 6 ("the average attention map ... computed from all 12 attention heads", drawn over the 16x16
    patch grid). [CLS]'s attention to itself (the first ``num_prefix_tokens`` entries) is dropped.
    """
    s = cls_row.mean(dim=-2)[..., num_prefix_tokens:]
    return s / s.sum(dim=-1, keepdim=True)


def soft_sparsity(s: torch.Tensor) -> torch.Tensor:
    """d_nnz(s) / T = (||s||_1^2 / ||s||_2^2) / T over the last axis: 1 for uniform s, 1/T for one-hot s.

    Paper: Section 4 and Figure 7 (red curve); smaller is sparser.
    """
    s = s.double()
    return s.abs().sum(dim=-1) ** 2 / (s**2).sum(dim=-1) / s.shape[-1]


def key_query_matrix(attn: nn.Module) -> torch.Tensor:
    """The combined key-query matrix W = sum_h W_Q,h^T W_K,h (C x C) of a timm Attention module, in float64.

    Paper: Figure 7 (blue curve, "the combined key-query matrix W of the last attention layer"). Head h's logit
    of query token x and key token x' is x^T (W_Q,h^T W_K,h) x' * scale (plus bias terms); W sums these
    bilinear forms over heads (equal to W_Q^T W_K of the stacked projections) and leaves out the constant
    scale 1/sqrt(d_head) and the qkv biases.
    """
    w = attn.qkv.weight.detach().double()
    d = attn.num_heads * attn.head_dim
    wq, wk = w[:d], w[d : 2 * d]
    heads = [wq[h * attn.head_dim : (h + 1) * attn.head_dim] for h in range(attn.num_heads)]
    keys = [wk[h * attn.head_dim : (h + 1) * attn.head_dim] for h in range(attn.num_heads)]
    return sum(q.T @ k for q, k in zip(heads, keys, strict=True))


def key_query_frobenius(model: nn.Module) -> float:
    """||W||_F of the last layer's combined key-query matrix (:func:`key_query_matrix`)."""
    return float(torch.linalg.matrix_norm(key_query_matrix(last_attention(model))))


def patch_grid(model: nn.Module) -> tuple[int, int]:
    """The patch grid (rows, cols) of the model: (16, 16) for patch 2 on 32x32 images."""
    return tuple(model.patch_embed.grid_size)


# --------------------------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------------------------


class DeviceUnavailableError(RuntimeError):
    """The config asks for CUDA and none is usable: a paper-scale run must never fall back to the CPU silently."""


def resolve_device(name: str) -> torch.device:
    """ "auto" picks CUDA when available, else the CPU; "cuda" insists on a usable GPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError(
            "vit.train.device is 'cuda' but CUDA is not usable here (torch.cuda.is_available() is False: "
            f"torch {torch.__version__}, CUDA build {torch.version.cuda}). Run on a GPU node, or set "
            "vit.train.device: auto (the quick scale) to train on the CPU."
        )
    return torch.device(name)


def lr_factor(step: int, total_steps: int, warmup_steps: int, schedule: str) -> float:
    """The learning rate's multiplier at ``step``: linear warm-up over ``warmup_steps``, then constant or cosine.

    Cosine decays from 1 to 0 over the steps after the warm-up (Loshchilov and Hutter's SGDR without restarts).
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    if schedule == "cosine":
        progress = (step - warmup_steps) / max(total_steps - warmup_steps, 1)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
    raise ValueError(f"unknown vit.train.schedule {schedule!r} (constant, cosine)")


def make_scheduler(
    optimizer: torch.optim.Optimizer, settings: TrainSettings, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """A per-step scheduler for :func:`lr_factor` (its state goes into the checkpoint)."""
    total = settings.epochs * steps_per_epoch
    warmup = round(settings.warmup_epochs * steps_per_epoch)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, total, warmup, settings.schedule))


def make_optimizer(params: Any, settings: TrainSettings) -> torch.optim.Optimizer:
    """SGD with momentum, Adam or AdamW at the fixed learning rate ``settings.lr``."""
    if settings.optimizer == "sgd":
        return torch.optim.SGD(params, lr=settings.lr, momentum=settings.momentum, weight_decay=settings.weight_decay)
    if settings.optimizer == "adam":
        return torch.optim.Adam(params, lr=settings.lr, weight_decay=settings.weight_decay)
    if settings.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay)
    raise ValueError(f"unknown optimizer {settings.optimizer!r} (sgd, adam, adamw)")


METRIC_COLUMNS = [
    "epoch",
    "train_loss",
    "train_acc",
    "test_acc",
    "soft_sparsity",
    "soft_sparsity_image",
    "w_frobenius",
    "cls_self_attention",
    "lr",
    "dataset",
    "train_seconds",
    "epoch_seconds",
]


@dataclass
class TrainResult:
    """What a run produces: one metrics row per epoch (0 = initialisation) and the Figure 6 maps."""

    metrics: list[dict[str, Any]]
    maps: np.ndarray  # (epochs + 1, T): head-averaged [CLS] patch attention of the fixed image
    cls_self: np.ndarray  # (epochs + 1,): its [CLS] self-attention (dropped from ``maps``)
    image: np.ndarray  # (32, 32, 3) uint8: the fixed image
    label: int
    grid: tuple[int, int]
    info: dict[str, Any]  # device, dataset, parameter count, resumed epoch, conventions


class _Evaluator:
    """Loss/accuracy passes and the probe, batched, under the configured autocast."""

    def __init__(
        self, model: nn.Module, forward: Callable, data: ImageData, settings: VitSettings, device: torch.device
    ) -> None:
        self.model, self.forward, self.device, self.settings = model, forward, device, settings
        self.mean, self.std = data.mean.to(device), data.std.to(device)
        self.batch = 2 * settings.train.batch_size
        n_probe = min(settings.probe.n_images, len(data.x_test))
        idx = settings.probe.image_index
        if not 0 <= idx < len(data.x_test):
            raise ValueError(f"probe.image_index {idx} outside the {len(data.x_test)} test images")
        # The fixed Figure 6 image first, then the probe set.
        self.probe_x = normalize(
            torch.cat([data.x_test[idx : idx + 1], data.x_test[:n_probe]]).to(device), self.mean, self.std
        )

    def autocast(self) -> contextlib.AbstractContextManager:
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.settings.train.bf16)

    @torch.no_grad()
    def loss_acc(self, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
        self.model.eval()
        loss, correct = 0.0, 0
        for i in range(0, len(x), self.batch):
            xb = normalize(x[i : i + self.batch].to(self.device), self.mean, self.std)
            yb = y[i : i + self.batch].to(self.device)
            with self.autocast():
                logits = self.forward(xb).float()
            loss += float(F.cross_entropy(logits, yb, reduction="sum"))
            correct += int((logits.argmax(-1) == yb).sum())
        self.model.train()
        return loss / len(x), correct / len(x)

    def probe(self) -> tuple[float, float, np.ndarray, float]:
        """Mean soft-sparsity and [CLS] self-entry over the probe set; the fixed image's map and self-entry."""
        rows = cls_attention(self.model, self.probe_x, self.batch)  # (1 + n, H, 1 + T)
        s = patch_attention(rows)
        self_entry = rows.mean(dim=1)[:, 0]
        sparsity = soft_sparsity(s[1:])
        return (float(sparsity.mean()), float(self_entry[1:].mean()), s[0].double().cpu().numpy(), float(self_entry[0]))


def _rng_state(generator: torch.Generator) -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "generator": generator.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any], generator: torch.Generator) -> None:
    torch.set_rng_state(state["torch"])
    generator.set_state(state["generator"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | os.PathLike[str], state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (a kill during the write leaves the previous one intact)."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_checkpoint(path: str | os.PathLike[str], fingerprint: str) -> dict[str, Any] | None:
    """The checkpoint at ``path`` if it belongs to a run with this fingerprint, else None (with a warning)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as err:
        log.warning("ignoring unreadable checkpoint %s (%s); starting afresh", path, err)
        return None
    if state.get("format") != CHECKPOINT_FORMAT or state.get("fingerprint") != fingerprint:
        log.warning("checkpoint %s belongs to other settings, data or code; starting afresh", path)
        return None
    if state.get("finished"):
        log.info("checkpoint %s is of a finished run; training again from epoch 0", path)
        return None
    return state


def _progress(total: int, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False, disable=not sys.stderr.isatty(), file=sys.stderr)


@dataclass
class _History:
    """The per-epoch record of a run: metrics rows, the Figure 6 maps and [CLS] self-entries of the fixed image."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    maps: list[np.ndarray] = field(default_factory=list)
    selfs: list[float] = field(default_factory=list)

    def append(self, measured: tuple[dict[str, Any], np.ndarray, float]) -> None:
        row, fixed_map, fixed_self = measured
        self.rows.append(row)
        self.maps.append(fixed_map)
        self.selfs.append(fixed_self)


class _Trainer:
    """One ViT run: model, optimiser, schedule and evaluator on one device; epochs, measurements, checkpoints."""

    def __init__(self, settings: VitSettings, data: ImageData, checkpoint: str | os.PathLike[str]) -> None:
        ts = self.ts = settings.train
        self.settings, self.data, self.checkpoint = settings, data, checkpoint
        self.device = resolve_device(ts.device)
        torch.manual_seed(ts.seed)
        self.model = build_vit(settings.model).to(self.device)
        self.optimizer = make_optimizer(self.model.parameters(), ts)
        self.n_batches = math.ceil(len(data.x_train) / ts.batch_size)
        self.scheduler = make_scheduler(self.optimizer, ts, self.n_batches)
        self.forward: Callable = torch.compile(self.model) if ts.compile else self.model
        self.generator = torch.Generator().manual_seed(ts.seed + 1)  # shuffling and augmentation
        self.ev = _Evaluator(self.model, self.forward, data, settings, self.device)
        self.x_train, self.y_train = data.x_train.to(self.device), data.y_train.to(self.device)
        self.fingerprint = settings.fingerprint(data.identity)
        self.history = _History()

    def measure(
        self, epoch: int, train_loss: float, train_acc: float, t0: float, train_seconds: float
    ) -> tuple[dict[str, Any], np.ndarray, float]:
        """Test accuracy, probe and ||W||_F after ``epoch``; ``t0`` is when the epoch started."""
        _, test_acc = self.ev.loss_acc(self.data.x_test, self.data.y_test)
        sparsity, self_mean, fixed_map, fixed_self = self.ev.probe()
        row = {
            "epoch": epoch,
            "train_loss": train_loss,
            "train_acc": train_acc,
            "test_acc": test_acc,
            "soft_sparsity": sparsity,
            "soft_sparsity_image": float(soft_sparsity(torch.from_numpy(fixed_map))),
            "w_frobenius": key_query_frobenius(self.model),
            "cls_self_attention": self_mean,
            "lr": self.optimizer.param_groups[0]["lr"],
            "dataset": self.data.name,
            "train_seconds": train_seconds,
            "epoch_seconds": time.perf_counter() - t0,
        }
        log.info(
            "epoch %d: train loss %.4f acc %.3f, test acc %.3f, soft-sparsity %.4f, ||W||_F %.3f (%.1fs)",
            epoch,
            train_loss,
            train_acc,
            test_acc,
            sparsity,
            row["w_frobenius"],
            row["epoch_seconds"],
        )
        return row, fixed_map, fixed_self

    def save(self, epoch: int) -> None:
        """Checkpoint after ``epoch`` (one file, replaced atomically); the last row's time then includes the write."""
        t0 = time.perf_counter()
        h = self.history
        save_checkpoint(
            self.checkpoint,
            {
                "format": CHECKPOINT_FORMAT,
                "fingerprint": self.fingerprint,
                "settings": self.settings.to_dict(),
                "epoch": epoch,
                "finished": epoch >= self.ts.epochs,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "rng": _rng_state(self.generator),
                "metrics": h.rows,
                "maps": torch.from_numpy(np.stack(h.maps)),
                "cls_self": torch.tensor(h.selfs),
            },
        )
        h.rows[-1]["epoch_seconds"] += time.perf_counter() - t0

    def resume(self) -> int | None:
        """Load an unfinished checkpoint of this run; the epoch it resumes from, or None for a fresh start."""
        state = load_checkpoint(self.checkpoint, self.fingerprint)
        if state is None:
            return None
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"], self.generator)
        self.history = _History(list(state["metrics"]), list(state["maps"].numpy()), list(state["cls_self"].tolist()))
        log.info("resuming from %s at epoch %d", self.checkpoint, int(state["epoch"]))
        return int(state["epoch"])

    def train_epoch(self, epoch: int) -> tuple[float, float]:
        """One pass over the shuffled training set; the mean loss and accuracy of its mini-batches.

        Loss and accuracy accumulate on the device and are read back once per epoch: no host sync per step.
        """
        ts, device = self.ts, self.device
        order = torch.randperm(len(self.x_train), generator=self.generator).to(device)
        loss_sum, correct = torch.zeros((), device=device), torch.zeros((), device=device, dtype=torch.int64)
        self.model.train()
        with _progress(self.n_batches, f"epoch {epoch}/{ts.epochs}") as bar:
            for i in range(self.n_batches):
                idx = order[i * ts.batch_size : (i + 1) * ts.batch_size]
                xb = normalize(self.x_train[idx], self.ev.mean, self.ev.std)
                if self.settings.data.augment:
                    xb = augment(xb, self.generator)
                yb = self.y_train[idx]
                with self.ev.autocast():
                    logits = self.forward(xb)
                    loss = F.cross_entropy(logits.float(), yb)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if ts.grad_clip > 0:
                    nn.utils.clip_grad_norm_(self.model.parameters(), ts.grad_clip)
                self.optimizer.step()
                self.scheduler.step()
                loss_sum += loss.detach() * len(idx)
                correct += (logits.detach().argmax(-1) == yb).sum()
                bar.update()
        n = len(self.x_train)
        return float(loss_sum) / n, int(correct) / n


def check_learning(rows: list[dict[str, Any]], guard: GuardSettings, num_classes: int) -> str | None:
    """A warning when test accuracy is still within ``guard.margin`` of chance after ``guard.after_epochs`` epochs.

    A ViT that learned nothing can still concentrate its attention and grow ||W||_F (issue: Adam at 3e-3 at width
    768), so Figure 7 alone does not show that the model learned.
    """
    chance = 1.0 / num_classes
    due = [r for r in rows if r["epoch"] == guard.after_epochs]
    if not due or due[0]["test_acc"] >= chance + guard.margin:
        return None
    return (
        f"after {guard.after_epochs} epochs the ViT's test accuracy is {due[0]['test_acc']:.3f}, within "
        f"{guard.margin:g} of chance ({chance:.3f}): it is not learning, and its Figure 7 would not mean "
        "anything; see docs/vit.md for recipes that learn"
    )


def train_vit(settings: VitSettings, data: ImageData, checkpoint: str | os.PathLike[str]) -> TrainResult:
    """Train the ViT, measuring the [CLS] attention after every epoch (paper: Section 4, Figures 6-7).

    Epoch 0 is the initialisation (its train loss/accuracy is a full pass over the training set; later epochs
    report the running mean over the epoch's mini-batches). A checkpoint (model, optimiser, schedule, RNG states,
    metrics so far, settings) is written atomically after every epoch; a rerun of an unfinished run with the same
    settings, data and code resumes from it and gives the same metrics on the CPU. A finished run's checkpoint is
    never resumed: a rerun trains again from epoch 0.
    """
    t_start = time.perf_counter()
    run = _Trainer(settings, data, checkpoint)
    resumed = run.resume()
    if resumed is None:
        t0 = time.perf_counter()
        train_loss, train_acc = run.ev.loss_acc(data.x_train, data.y_train)
        run.history.append(run.measure(0, train_loss, train_acc, t0, 0.0))
        run.save(0)
    for epoch in range(len(run.history.rows), settings.train.epochs + 1):
        t0 = time.perf_counter()
        train_loss, train_acc = run.train_epoch(epoch)
        run.history.append(run.measure(epoch, train_loss, train_acc, t0, time.perf_counter() - t0))
        if not math.isfinite(train_loss):
            raise FloatingPointError(f"training diverged at epoch {epoch} (loss {train_loss})")
        run.save(epoch)
        if (message := check_learning(run.history.rows[-1:], settings.guard, settings.model.num_classes)) is not None:
            log.warning(message)
            warnings.warn(message, LearningStalledWarning, stacklevel=2)
    return _result(run, resumed, time.perf_counter() - t_start)


class LearningStalledWarning(UserWarning):
    """The ViT's test accuracy stays at chance (see :func:`check_learning`)."""


def _result(run: _Trainer, resumed: int | None, seconds: float) -> TrainResult:
    """The :class:`TrainResult` of a finished run, with the sidecar's description of what was measured."""
    data, h, idx = run.data, run.history, run.settings.probe.image_index
    info = {
        "dataset": data.name,
        "dataset_note": data.note,
        "classes": data.classes,
        "n_train": len(data.x_train),
        "n_test": len(data.x_test),
        "n_probe": len(run.ev.probe_x) - 1,
        "device": str(run.device),
        "device_name": torch.cuda.get_device_name(run.device) if run.device.type == "cuda" else "cpu",
        "torch_threads": torch.get_num_threads(),
        "optimizer": run.ts.optimizer,
        "n_parameters": sum(p.numel() for p in run.model.parameters()),
        "patch_tokens": int(h.maps[0].shape[0]),
        "resumed_from_epoch": resumed,
        "seconds_this_call": seconds,
        "fingerprint": run.fingerprint,
        "peak_memory_mb": peak_memory_mb(run.device),
        "soft_sparsity": "mean over the probe images of (||s||_1^2/||s||_2^2)/T, s = last-layer [CLS] attention "
        "averaged over heads, [CLS] self-entry dropped and renormalised over the T patch tokens",
        "soft_sparsity_image": "the same for the single Figure 6 test image",
        "w_frobenius": "||sum_h W_Q,h^T W_K,h||_F of the last block's qkv weight (= ||W_Q^T W_K||_F), "
        "without the 1/sqrt(d_head) scale and the biases",
    }
    return TrainResult(
        metrics=h.rows,
        maps=np.stack(h.maps),
        cls_self=np.asarray(h.selfs),
        image=data.x_test[idx].permute(1, 2, 0).numpy().copy(),
        label=int(data.y_test[idx]),
        grid=patch_grid(run.model),
        info=info,
    )


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory of this process: the GPU's allocator peak on CUDA, else the resident set's high-water mark."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def unfused_copy(model: nn.Module) -> nn.Module:
    """A deep copy of ``model`` whose attention runs timm's explicit (non-SDPA) path; for checking the probe."""
    twin = copy.deepcopy(model)
    for block in twin.blocks:
        block.attn.fused_attn = False
    return twin


def save_result(
    result: TrainResult,
    settings: VitSettings,
    metrics_path: str | os.PathLike[str],
    sidecar_path: str | os.PathLike[str],
    maps_path: str | os.PathLike[str],
) -> pd.DataFrame:
    """Write the metrics table, its JSON sidecar (settings, optimizer, dataset, device) and the maps, atomically.

    The maps file holds ``epochs``, ``maps`` (epochs + 1, T), ``cls_self``, ``image``, ``label`` and ``grid``.
    """
    table = pd.DataFrame(result.metrics, columns=METRIC_COLUMNS)
    write_csv(table, metrics_path)
    sidecar = {"settings": settings.to_dict(), **result.info, "grid": list(result.grid), "label": result.label}
    with atomic_path(sidecar_path) as tmp:
        tmp.write_text(json.dumps(sidecar, indent=2) + "\n")
    with atomic_path(maps_path) as tmp, open(tmp, "wb") as fh:
        np.savez(
            fh,
            epochs=np.arange(len(result.maps)),
            maps=result.maps,
            cls_self=result.cls_self,
            image=result.image,
            label=np.int64(result.label),
            grid=np.asarray(result.grid),
        )
    return table
