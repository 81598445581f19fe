"""What every ViT figure says besides its axes: the settings line, the red line of a stand-in data set, the learning
verdict on top and the footer lines, drawn from the files of a run (its sidecar, metrics and baseline tables)."""

from __future__ import annotations

import textwrap
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from maxmargin.core.vit_learning import Learned, learned
from maxmargin.registry.vit import DATASET_NAMES, PAPER_DATASET

WARNING_COLOR = "#c00000"


def source_note(sidecar: dict[str, Any]) -> str:
    """The settings line: model, optimiser and data (a plot option: the captions carry them anyway)."""
    m, t = sidecar["settings"]["model"], sidecar["settings"]["train"]
    grid = "x".join(str(g) for g in sidecar["grid"])
    return (
        f"ViT {m['embed_dim']}-d, depth {m['depth']}, {m['num_heads']} heads, patch {m['patch_size']} "
        f"({grid} tokens); {t['optimizer']} lr {t['lr']:g}, batch {t['batch_size']}; "
        f"data: {sidecar['dataset']} ({sidecar['n_train']} train / {sidecar['n_test']} test images)"
    )


def stand_in_warning(dataset: str, note: str = "") -> str:
    """The red line of a figure not made from the paper's CIFAR-10 (empty for CIFAR-10), keyed to the data set the
    run recorded (its metrics table and data manifest), whether the config asked for it or a fallback took it;
    ``note`` says why a fallback was taken."""
    if dataset == PAPER_DATASET:
        return ""
    name, paper = DATASET_NAMES.get(dataset, dataset), DATASET_NAMES[PAPER_DATASET]
    return f"WARNING: made from {name}, a stand-in for the paper's {paper}" + (f" ({note})" if note else "")


def learned_verdict(metrics: pd.DataFrame, baseline: pd.DataFrame, sidecar: dict[str, Any], fraction: float) -> Learned:
    """The run's final test accuracy against the linear baseline's (the claim ``vit_learns``)."""
    acc = float(metrics.sort_values("epoch")["test_acc"].iloc[-1])
    classes = int(sidecar["settings"]["model"]["num_classes"])
    return learned(acc, classes, float(baseline["test_acc"].iloc[0]), fraction)


def title(fig: Figure, verdict: Learned, sidecar: dict[str, Any], settings_footer: bool) -> None:
    """On top: the final test accuracy, or a red warning when the model did not learn. Below the axes, in red, the
    stand-in warning when the data set is not CIFAR-10; under it, optionally, the settings line."""
    width = int(fig.get_figwidth() * 14)  # ~14 bold characters an inch
    if verdict.learned:
        fig.suptitle(textwrap.fill(verdict.describe(), width=width), fontsize=8)
    else:
        fig.suptitle(textwrap.fill(verdict.warning(), width=width), fontsize=8, color=WARNING_COLOR, fontweight="bold")
    warning = stand_in_warning(sidecar["dataset"], sidecar.get("dataset_note", ""))
    lines = [(warning, WARNING_COLOR)] if warning else []
    lines += [(source_note(sidecar), "0.4")] if settings_footer else []
    footer(fig, lines)


def footer(fig: Figure, lines: list[tuple[str, str]]) -> None:
    """Lines of text (and colours) under the axes, each wrapped to the figure's width (at 7 pt, ~16 bold or ~19
    regular characters an inch), the constrained layout kept clear of them."""
    per_inch = {WARNING_COLOR: 16}
    lines = [
        (part, colour)
        for text, colour in lines
        for part in textwrap.wrap(text, width=int(fig.get_figwidth() * per_inch.get(colour, 19)))
    ]
    if not lines:
        return
    line_height = 9.5 / (fig.get_figheight() * 72.0)
    fig.get_layout_engine().set(rect=(0.0, len(lines) * line_height + 0.01, 1.0, 1.0 - len(lines) * line_height - 0.01))
    for k, (text, colour) in enumerate(reversed(lines)):
        weight = "bold" if colour == WARNING_COLOR else "normal"
        fig.text(0.01, 0.005 + k * line_height, text, fontsize=7, color=colour, fontweight=weight, va="bottom")
