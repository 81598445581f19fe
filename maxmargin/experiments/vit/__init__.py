"""A ViT trained from scratch on CIFAR-10: the [CLS] attention probe, soft-sparsity and ||W||_F through training.

Paper: Section 4 ("Real experiments"), Figures 6 and 7. One module per job: :mod:`.settings` (the config's
``vit`` section as dataclasses), :mod:`.data` (CIFAR-10 or the digits stand-in), :mod:`.fashion` (Fashion-MNIST,
a full-size stand-in), :mod:`.model` (the ViT and the probe: [CLS] attention, soft-sparsity, ||W||_F),
:mod:`.optim` (device, optimiser, schedule), :mod:`.checkpoint`, :mod:`.training` (the loop, logging every epoch)
and :mod:`.results` (the metrics table, sidecar and maps).
"""

from maxmargin.experiments.vit.checkpoint import CHECKPOINT_FORMAT, load_checkpoint, save_checkpoint
from maxmargin.experiments.vit.data import (
    CIFAR10_NAME,
    DIGITS_NAME,
    DataUnavailableError,
    ImageData,
    load_cifar10,
    load_digits32,
    load_image_data,
)
from maxmargin.experiments.vit.fashion import FASHION_MNIST_NAME, arrange_fashion_mnist, load_fashion_mnist, to_rgb32
from maxmargin.experiments.vit.model import (
    build_vit,
    cls_attention,
    key_query_frobenius,
    key_query_matrix,
    patch_attention,
    patch_grid,
    soft_sparsity,
    unfused_copy,
)
from maxmargin.experiments.vit.optim import DeviceUnavailableError, lr_factor, make_optimizer, resolve_device
from maxmargin.experiments.vit.results import METRIC_COLUMNS, TrainResult, save_result
from maxmargin.experiments.vit.settings import (
    DataSettings,
    GuardSettings,
    ModelSettings,
    ProbeSettings,
    TrainSettings,
    VitSettings,
    code_fingerprint,
)
from maxmargin.experiments.vit.training import LearningStalledWarning, check_learning, peak_memory_mb, train_vit

__all__ = [
    "CHECKPOINT_FORMAT",
    "CIFAR10_NAME",
    "DIGITS_NAME",
    "DataSettings",
    "FASHION_MNIST_NAME",
    "DataUnavailableError",
    "DeviceUnavailableError",
    "GuardSettings",
    "ImageData",
    "LearningStalledWarning",
    "METRIC_COLUMNS",
    "ModelSettings",
    "ProbeSettings",
    "TrainResult",
    "TrainSettings",
    "VitSettings",
    "build_vit",
    "check_learning",
    "cls_attention",
    "code_fingerprint",
    "key_query_frobenius",
    "key_query_matrix",
    "load_checkpoint",
    "load_cifar10",
    "load_digits32",
    "load_fashion_mnist",
    "arrange_fashion_mnist",
    "to_rgb32",
    "load_image_data",
    "lr_factor",
    "make_optimizer",
    "patch_attention",
    "patch_grid",
    "peak_memory_mb",
    "resolve_device",
    "save_checkpoint",
    "save_result",
    "soft_sparsity",
    "train_vit",
    "unfused_copy",
]
