"""Before the long ViT run: the recipe study (which optimiser makes the ViT learn) and the pilot (time, memory).

Paper: Section 4 trains ViT-base "with a fixed learning rate of 3e-3" and names no optimiser. At width 768 that
phrase admits recipes that never leave chance accuracy while ||W||_F grows and the attention concentrates, the
very picture of Figure 7 for the wrong reason. :func:`recipe_settings` builds each recipe of the config's
``vit_recipes`` block, :func:`recipe_table` puts one run into the study's table, and :func:`pilot_row` measures
a few epochs of whatever scale the config says, projected to the full run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from maxmargin import registry
from maxmargin.experiments.vit import TrainResult, VitSettings
from maxmargin.experiments.vit.settings import recipe_config

if TYPE_CHECKING:
    import torch

RECIPE_COLUMNS = registry.columns("vit_recipes")
PILOT_COLUMNS = registry.columns("vit_pilot")


def recipe_settings(vit: Mapping[str, Any], study: Mapping[str, Any], name: str) -> VitSettings:
    """:func:`recipe_config` as :class:`VitSettings` (unknown keys in the proxy blocks fail here, by name)."""
    return VitSettings.from_config(recipe_config(vit, study, name))


def recipe_table(name: str, settings: VitSettings, result: TrainResult) -> pd.DataFrame:
    """One run of the study: a row per epoch with its recipe's settings and the optimiser steps taken so far
    (``results/tables/vit_recipes.csv``)."""
    t, m = settings.train, settings.model
    frame = pd.DataFrame(result.metrics)
    steps_per_epoch = result.info["steps"] // t.epochs
    frame = frame.assign(
        recipe=name,
        optimizer=t.optimizer,
        lr=t.lr,
        warmup_epochs=t.warmup_epochs,
        schedule=t.schedule,
        weight_decay=t.weight_decay,
        grad_clip=t.grad_clip,
        lr_base_width=t.lr_base_width,
        embed_dim=m.embed_dim,
        depth=m.depth,
        patch_size=m.patch_size,
        batch_size=t.batch_size,
        n_train=result.info["n_train"],
        step=frame["epoch"] * steps_per_epoch,
    )
    return frame[RECIPE_COLUMNS]


def _recipe_line(recipe: str, runs: pd.DataFrame) -> str:
    runs = runs.sort_values("epoch")
    first, last = runs.iloc[0], runs.iloc[-1]
    growth = last.w_frobenius / first.w_frobenius
    rate = f"{last.lr:g}" + (f" x {last.lr_base_width:g}/{last.embed_dim:g}" if last.lr_base_width > 0 else "")
    return (
        f"| `{recipe}` | {last.embed_dim:g}-d, depth {last.depth:g}, patch {last.patch_size:g} | {last.optimizer} | "
        f"{rate} | {last.warmup_epochs:g} | {last.schedule} | {last.weight_decay:g} | {last.grad_clip:g} | "
        f"{int(last.step)} | {last.test_acc:.3f} | {first.soft_sparsity:.2f} -> {last.soft_sparsity:.2f} | "
        f"{first.w_frobenius:.2f} -> {last.w_frobenius:.2f} ({growth:.2f}x) | {last.w_cosine_previous:.3f} | "
        f"{last.dataset} |"
    )


def recipes_markdown(table: pd.DataFrame) -> str:
    """The recipe study's summary as a Markdown table (docs/results/): per recipe its model and settings, the
    optimiser steps, the final test accuracy, soft-sparsity and ||W||_F from the first to the last epoch and the
    cosine of W's last epoch with the one before, all read from ``table``."""
    lines = [
        "| recipe | model | optimizer | lr | warm-up (epochs) | schedule | weight decay | clip | steps "
        "| final test acc | soft-sparsity | `\\|\\|W\\|\\|_F` | last cos(W, previous W) | dataset |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [_recipe_line(recipe, runs) for recipe, runs in table.groupby("recipe", sort=False)]
    return "\n".join(lines) + "\n"


def pilot_row(settings: VitSettings, pilot: TrainResult, full_epochs: int) -> pd.DataFrame:
    """What a pilot of a few epochs says about the full run of ``full_epochs`` epochs.

    ``epoch_seconds`` is the mean over the trained epochs of everything an epoch does (training, test pass, probe,
    checkpoint write); the projection adds the initial measurement (epoch 0) once. ``images_per_s`` counts the
    training step alone. The first trained epoch carries compilation when ``compile`` is on, so with two or more
    epochs the mean leaves it out.
    """
    m = pd.DataFrame(pilot.metrics).merge(pd.DataFrame(pilot.times), on="epoch")
    trained = m[m["epoch"] >= 1]
    steady = trained.iloc[1:] if len(trained) > 1 else trained
    epoch_seconds = float(steady["epoch_seconds"].mean())
    images_per_s = pilot.info["n_train"] / float(steady["train_seconds"].mean())
    total = float(m.loc[m["epoch"] == 0, "epoch_seconds"].iloc[0]) + epoch_seconds * full_epochs
    row = {
        "dataset": pilot.info["dataset"],
        "device": pilot.info["device_name"],
        "dtype": "bfloat16" if settings.train.bf16 else "float32",
        "compiled": settings.train.compile,
        "epochs": int(trained["epoch"].max()),
        "images_per_s": images_per_s,
        "epoch_seconds": epoch_seconds,
        "projected_total_hours": total / 3600,
        "peak_memory_mb": pilot.info["peak_memory_mb"],
        "first_train_loss": float(trained["train_loss"].iloc[0]),
        "last_train_loss": float(trained["train_loss"].iloc[-1]),
        "test_acc": float(trained["test_acc"].iloc[-1]),
    }
    return pd.DataFrame([row], columns=PILOT_COLUMNS)


def reset_peak_memory(device: torch.device) -> None:
    """Start the pilot's memory count afresh on a GPU (the CPU's high-water mark cannot be reset)."""
    if device.type == "cuda":
        import torch  # here: the study's tables and settings need no torch

        torch.cuda.reset_peak_memory_stats(device)


def pick_pilot_recipe(table: pd.DataFrame, recipes: list[Mapping[str, Any]], fall: float = 0.1) -> tuple[str, str]:
    """The SGD arm's recipe, read from its pilot (workflow/config/cpu_paper_epochs_sgd_pilot.yaml): among the recipes
    whose training loss never rose above its epoch-0 value, plain SGD (momentum 0) with the lowest last training
    loss where one ends below ``fall`` x its epoch-0 loss; else the lowest last training loss of them all, momentum
    included. The recipe's name and the reason, in words."""
    momentum = {r["name"]: float(r.get("momentum", 0.0)) for r in recipes}
    runs = {name: g.sort_values("epoch") for name, g in table.groupby("recipe")}
    stable = {name: g for name, g in runs.items() if (g["train_loss"] <= g["train_loss"].iloc[0]).all()}
    if not stable:
        raise ValueError("every recipe of the pilot diverged (its training loss rose above its epoch-0 value)")
    last = {name: float(g["train_loss"].iloc[-1]) for name, g in stable.items()}
    start = {name: float(g["train_loss"].iloc[0]) for name, g in stable.items()}
    plain = [n for n in last if momentum[n] == 0.0 and last[n] < fall * start[n]]
    name = min(plain or last, key=last.get)
    epochs = int(stable[name]["epoch"].iloc[-1])
    losses = ", ".join(f"{n} {v:.3f}" for n, v in sorted(last.items(), key=lambda kv: kv[1]))
    why = (
        f"plain SGD reaching below {fall:g} x its epoch-0 loss in {epochs} epochs"
        if plain
        else f"no plain rate reached below {fall:g} x its epoch-0 loss in {epochs} epochs, so the lowest of all"
    )
    return name, f"{name}: {why} (training loss at epoch {epochs}: {losses})"
