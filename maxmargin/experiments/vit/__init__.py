"""A ViT trained from scratch on CIFAR-10: the [CLS] attention probe, soft-sparsity and ||W||_F through training.

Paper: Section 4 ("Real experiments"), Figures 6 and 7. One module per job: :mod:`.settings` (the config's
``vit`` section as dataclasses), :mod:`.sources` (which data set, from which files: the data manifest),
:mod:`.images` (the images a run gets, the error of a data set it cannot), :mod:`.data` (CIFAR-10 or the digits
stand-in), :mod:`.fashion` (Fashion-MNIST, a full-size stand-in),
:mod:`.model` (the ViT and the probe: [CLS] attention, soft-sparsity, ||W||_F),
:mod:`.optim` (device, optimiser, schedule), :mod:`.checkpoint`, :mod:`.probes` (accuracy passes, the [CLS]
attention of the probe images, W per evaluated epoch), :mod:`.snapshots` (the model at the epochs the analyses read),
:mod:`.training` (the loop, logging every epoch), :mod:`.baseline` (the linear baseline), :mod:`.results` (the
metrics table, sidecar, maps and the docs page) and :mod:`.w_svm_probe` (beyond the paper: each last-layer head
against its max-margin solution, from the snapshots).

The names below are imported on first use, so that importing a torch-free submodule (:mod:`.settings`, which the
rule files read while building the DAG) does not import torch.
"""

from __future__ import annotations

from maxmargin.lazy import lazy_exports

# Submodule -> the names it exports here.
_HOMES: dict[str, tuple[str, ...]] = {
    "checkpoint": (
        "CHECKPOINT_FORMAT",
        "load_checkpoint",
        "save_checkpoint",
    ),
    "data": (
        "CIFAR10_NAME",
        "DIGITS_NAME",
        "load_cifar10",
        "load_digits32",
        "load_image_data",
        "resolve_data",
    ),
    "fashion": (
        "FASHION_MNIST_NAME",
        "arrange_fashion_mnist",
        "load_fashion_mnist",
        "to_rgb32",
    ),
    "images": (
        "DataUnavailableError",
        "ImageData",
    ),
    "model": (
        "build_vit",
        "cls_attention",
        "key_query_frobenius",
        "key_query_matrix",
        "patch_attention",
        "patch_grid",
        "soft_sparsity",
        "unfused_copy",
    ),
    "optim": (
        "DeviceUnavailableError",
        "lr_factor",
        "make_optimizer",
        "param_groups",
        "resolve_device",
    ),
    "results": (
        "METRIC_COLUMNS",
        "TrainResult",
        "result_tables",
    ),
    "settings": (
        "DataSettings",
        "GuardSettings",
        "ModelSettings",
        "ProbeSettings",
        "TrainSettings",
        "VitSettings",
        "code_fingerprint",
        "training_code_fingerprint",
    ),
    "sources": (
        "DATASETS",
        "DISPLAY_NAMES",
        "data_plan",
    ),
    "probes": (
        "Evaluator",
        "WHistory",
    ),
    "snapshots": (
        "Snapshots",
        "load_snapshots",
        "snapshot_epochs",
    ),
    "w_svm_probe": (
        "WSvmSettings",
        "attention_inputs",
        "head_key_query",
        "probe_snapshots",
    ),
    "machine": (
        "cpu_name",
        "peak_memory_mb",
    ),
    "training": (
        "LearningStalledWarning",
        "check_learning",
        "train_vit",
    ),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES)
