"""The columns of every table the pipeline writes (types, allowed ranges, NaN rules) and the row counts that follow
from the config; :mod:`maxmargin.tables` binds them to the tables' paths and checks them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pandera import Check, Column

Config = Mapping[str, Any]


# --- column kinds -------------------------------------------------------------------------------------------------


WHOLE = Check(lambda s: (s.dropna() % 1 == 0).all(), error="whole numbers")


def _int(*checks: Check, nullable: bool = False, required: bool = True) -> Column:
    """Integers; with NaN allowed, a column that CSV reads back as float holding whole numbers."""
    if nullable:
        return Column(float, [WHOLE, *checks], nullable=True, required=required, coerce=True)
    return Column(int, list(checks), required=required)


def _float(*checks: Check, nullable: bool = False, required: bool = True) -> Column:
    """Real numbers (a column of whole numbers reads back from CSV as int64: coerced)."""
    return Column(float, list(checks), nullable=nullable, required=required, coerce=True)


def _str(*checks: Check, nullable: bool = False, required: bool = True) -> Column:
    return Column(str, list(checks), nullable=nullable, required=required)


def _bool(required: bool = True) -> Column:
    return Column(bool, required=required)


ANY = Column(None)  # a label whose values may read back as numbers or strings: no NaN, any type


UNIT = Check.in_range(0.0, 1.0)
PERCENT = Check.in_range(0.0, 100.0)
NONNEG = Check.ge(0)
POSITIVE = Check.gt(0)
CLASSES = Check.isin(["not_saturated", "lmm", "gmm", "neither"])
# ViT tables: helper branch vitdata adds a `dataset` column to every one of them; optional here.
DATASET = _str(required=False)

CENSUS_TRIAL = {
    "d": _int(POSITIVE),
    "trial": _int(NONNEG),
    "seed": _int(),
    "n": _int(POSITIVE),
    "T": _int(POSITIVE),
    "n_iter": _int(POSITIVE),
    "saturated": _bool(),
    "class": _str(CLASSES),
    "corr": _float(Check.in_range(-1.0 - 1e-9, 1.0 + 1e-9), nullable=True),
    "gap": _float(nullable=True),
    "p_norm": _float(NONNEG),
    "log10_unsaturation": _float(),
    "alpha": ANY,  # the selected token per input, "i,j,..." (one input: a number)
    "optimal_alpha": _bool(),
    "svm_norm": _float(NONNEG, nullable=True),
    "n_neighbors": _int(NONNEG),
    "skipped_steps": _int(NONNEG),
    "solver": _str(nullable=True),
}


def _summary(*keys: str) -> dict[str, Column]:
    """A census summary per ``keys`` (census_tables.SUMMARY_COLUMNS): proportions with Wilson intervals."""
    columns = {key: _int(POSITIVE) for key in keys} | {"n_trials": _int(NONNEG)}
    for name in ("pct_not_saturated", "pct_lmm", "pct_gmm", "pct_neither"):
        columns |= {f"{name}{s}": _float(PERCENT, nullable=True) for s in ("", "_ci_low", "_ci_high")}
    columns["mean_corr"] = _float(Check.in_range(-1.0 - 1e-9, 1.0 + 1e-9), nullable=True)
    columns |= {f"p_gap_negative{s}": _float(UNIT, nullable=True) for s in ("", "_ci_low", "_ci_high")}
    if "n_iter" in keys:  # the budget study counts the labels that move with the budget
        columns["n_labels_moved"] = _int(NONNEG)
    return columns


TRAJECTORY = {
    "figure": _str(),
    "run": ANY,
    "label": ANY,
    "iteration": _int(NONNEG),
    **{p: _float(required=p != "p3") for p in ("p1", "p2", "p3")},
    "p_norm": _float(NONNEG),
    "max_softmax": _float(UNIT),
    "one_minus_softmax": _float(UNIT),
    **{c: _float(required=False) for c in ("v1", "v2", "logistic_prob", "C", "cone_half_angle_deg")},
    "loss": _str(required=False),
}
TOKENS = {
    "figure": _str(),
    "input": _int(NONNEG),
    "token": _int(NONNEG),
    "k1": _float(),
    "k2": _float(),
    "score": _float(),
    "label": Column(None, nullable=True),
    "optimal": _bool(),
    "C": _float(required=False),
}
DIRECTIONS = {
    "figure": _str(),
    "record": _str(Check.isin(["direction", "gd_run"])),
    "kind": _str(),
    "tokens": _str(),
    "direction": _str(),
    "norm": _float(NONNEG, nullable=True),
    "run": Column(None, nullable=True),
    "start": _str(nullable=True),
    "final_cosine": _float(Check.in_range(-1.0 - 1e-9, 1.0 + 1e-9), nullable=True),
    "p_norm": _float(NONNEG, nullable=True),
    "kkt_residual": _float(NONNEG, nullable=True),
}
REGPATH = {
    "instance": _str(),
    "method": _str(Check.isin(["path", "gd", "local"])),
    "run": ANY,
    "R": _float(POSITIVE),
    "kind": _str(),
    "cosine": _float(Check.in_range(-1.0 - 1e-9, 1.0 + 1e-9)),
    "kkt_residual": _float(NONNEG, nullable=True),
    "loss": _float(NONNEG, nullable=True),
    "log_excess_loss": _float(nullable=True),
    "active": Column(None, nullable=True),  # bool on the path, empty for GD runs
    "selected": _str(),
    "n_starts": _int(NONNEG, nullable=True),  # empty for GD runs
    "n_at_best": _int(NONNEG, nullable=True),
}
VIT_METRICS = {
    "epoch": _int(NONNEG),
    "train_loss": _float(NONNEG),
    "train_acc": _float(UNIT),
    "test_acc": _float(UNIT),
    "soft_sparsity": _float(UNIT),
    "soft_sparsity_image": _float(UNIT),
    "w_frobenius": _float(NONNEG),
    "w_cosine_previous": _float(Check.in_range(-1.0 - 1e-9, 1.0 + 1e-9), nullable=True),  # empty at epoch 0
    "w_cosine_final": _float(Check.in_range(-1.0 - 1e-9, 1.0 + 1e-9)),
    "cls_self_attention": _float(UNIT),
    "lr": _float(NONNEG),
    "dataset": DATASET,
}


VIT_BASELINE = {
    "dataset": _str(),
    "n_train": _int(POSITIVE),
    "n_test": _int(POSITIVE),
    "n_features": _int(POSITIVE),
    "chance": _float(UNIT),
    "train_acc": _float(UNIT),
    "test_acc": _float(UNIT),
    "n_iter": _int(NONNEG),
    "converged": _bool(),
}


def _census_rows(cfg: Config, block: str = "census") -> int:
    return int(cfg["census"]["n_trials"]) if block == "census" else int(cfg["census"]["grid"]["n_trials"])


def _budget_cells(cfg: Config) -> int:
    return len(cfg["census"]["budget"]["dims"]) * len(cfg["census"]["budget"]["n_iter"])


def _grid_cells(cfg: Config) -> int:
    grid = cfg["census"]["grid"]
    return len(grid["n"]) * len(grid["T"]) * len(grid["dims"])


def _vit_epochs(cfg: Config) -> int:
    return int(cfg["vit"]["train"]["epochs"]) + 1  # epoch 0 is the initialisation


BASIN_VARIANTS = Check.isin(["normalized", "constant"])  # experiments.basin.gd_variants: the two GD codes
BASIN = {
    "variant": _str(BASIN_VARIANTS),
    "start": _int(NONNEG),
    "p1": _float(),
    "p2": _float(),
    "class": _str(CLASSES),
    "heading": _str(CLASSES),
    "alpha": _int(NONNEG),
    "final_p1": _float(),
    "final_p2": _float(),
    "log10_unsaturation": _float(),
}
BASIN_CONE = {
    "variant": _str(Check.isin(["normalized", "constant", "no_stationary_point"])),
    "R": _float(POSITIVE),
    "mu_max": _float(Check.in_range(0.0, 1.0)),
    "half_angle_deg": _float(Check.in_range(0.0, 180.0)),
    "n_starts": _int(NONNEG),
    "all_lmm": _bool(),
    "mu_cone": _float(Check.in_range(0.0, 1.0)),
    "min_final_corr": _float(Check.in_range(-1.0 - 1e-9, 1.0 + 1e-9), nullable=True),  # empty: no start inside
    "eta": _float(POSITIVE, nullable=True),  # empty on the no_stationary_point rows (no GD)
    "n_iter": _int(POSITIVE, nullable=True),
    "normalized": Column(None, nullable=True),
    "L_p_bound": _float(POSITIVE),
}
BASIN_PATHS = {
    "variant": _str(BASIN_VARIANTS),
    "run": _int(NONNEG),
    "iteration": _int(NONNEG),
    "p1": _float(),
    "p2": _float(),
    "class": _str(CLASSES),
}


def _basin_starts(cfg: Config) -> int:
    grid = cfg["basin"]["grid"]
    return 2 * int(grid["p1"]["num"]) * int(grid["p2"]["num"])  # one row per start and GD variant
