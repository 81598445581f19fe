"""The contract of every table the pipeline writes: columns, types, allowed ranges, NaN rules and row counts.

One place declares each table (issue 19). :func:`check_table` validates a frame with pandera when a rule writes it
(``maxmargin.io.write_csv``) and again whenever a rule reads it (``maxmargin.io.read_table``); the row count, where
it follows from the config (``census.n_trials``, ``census.dims``, ``vit.train.epochs`` ...), is checked too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera import Check, Column

Config = Mapping[str, Any]
RowCount = Callable[[Config, Mapping[str, str]], int]


class TableContractError(ValueError):
    """A table breaks its contract: wrong columns, types, values or row count."""


@dataclass(frozen=True)
class TableContract:
    """One table: where it lives (under the results root, ``{wildcards}`` allowed), the rule writing it, its
    columns, and its row count as a function of the config and the path's wildcards (None: not fixed)."""

    name: str
    pattern: str
    rule: str
    columns: dict[str, Column]
    rows: RowCount | None = None

    def regex(self) -> re.Pattern[str]:
        body = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.pattern))
        return re.compile(rf"(?:^|/){body}$")


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
    "cls_self_attention": _float(UNIT),
    "lr": _float(NONNEG),
    "dataset": DATASET,
    "train_seconds": _float(NONNEG),
    "epoch_seconds": _float(NONNEG),
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


CONTRACTS = [
    TableContract("census_run", "runs/census/d{d}.csv", "census_trials", CENSUS_TRIAL, lambda c, w: _census_rows(c)),
    TableContract(
        "census_budget_run",
        "runs/census_budget/d{d}_iter{n_iter}.csv",
        "census_budget_trials",
        CENSUS_TRIAL,
        lambda c, w: _census_rows(c),
    ),
    TableContract(
        "census_grid_run",
        "runs/census_grid/n{n}_T{T}_d{d}.csv",
        "census_grid_cell",
        CENSUS_TRIAL,
        lambda c, w: _census_rows(c, "grid"),
    ),
    TableContract(
        "census_trials",
        "tables/census_trials.csv",
        "census_gather",
        CENSUS_TRIAL,
        lambda c, w: _census_rows(c) * len(c["census"]["dims"]),
    ),
    TableContract(
        "census_summary",
        "tables/census_summary.csv",
        "census_gather",
        _summary("d"),
        lambda c, w: len(c["census"]["dims"]),
    ),
    TableContract(
        "census_budget_trials",
        "runs/census_budget/trials.csv",
        "census_budget_gather",
        CENSUS_TRIAL,
        lambda c, w: _census_rows(c) * _budget_cells(c),
    ),
    TableContract(
        "census_budget",
        "tables/census_budget.csv",
        "census_budget_gather",
        _summary("d", "n_iter"),
        lambda c, w: _budget_cells(c),
    ),
    TableContract(
        "census_grid_trials",
        "runs/census_grid/trials.csv",
        "census_grid_gather",
        CENSUS_TRIAL,
        lambda c, w: _census_rows(c, "grid") * _grid_cells(c),
    ),
    TableContract(
        "census_grid",
        "tables/census_grid.csv",
        "census_grid_gather",
        _summary("n", "T", "d"),
        lambda c, w: _grid_cells(c),
    ),
    TableContract(
        "census_histogram",
        "tables/fig9b.csv",
        "census_histogram",
        {
            "d": _int(POSITIVE),
            "bin_left": _float(),
            "bin_right": _float(),
            "count": _int(NONNEG),
            "n_saturated": _int(NONNEG),
            "probability": _float(UNIT, nullable=True),
            "cumulative": _float(UNIT, nullable=True),
        },
    ),
    TableContract("directions", "tables/directions.csv", "directions_table", DIRECTIONS),
    TableContract("experiment_directions", "runs/{experiment}/directions.csv", "synthetic_experiment", DIRECTIONS),
    TableContract("tokens", "tables/{experiment}_tokens.csv", "synthetic_experiment", TOKENS),
    TableContract("regpath_run", "runs/regpath/{instance}.csv", "regpath_instance", REGPATH),
    TableContract("regpath", "tables/regpath.csv", "regpath_table", REGPATH),
    TableContract("regpath_compare", "tables/regpath_compare.csv", "regpath_table", REGPATH),
    TableContract(
        "lemma1",
        "tables/lemma1.csv",
        "lemma1_table",
        {
            "instance": _str(),
            **{k: _int(POSITIVE) for k in ("n", "T", "d", "n_iter")},
            "u": _str(),
            "p0": _str(),
            "eta": _float(POSITIVE),
            "loss": _str(),
            **{k: _float(NONNEG) for k in ("max_deviation", "relative_max_deviation", "max_grad_deviation")},
            "final_p_norm": _float(NONNEG),
            "final_risk_p": _float(),
            "final_risk_W": _float(),
        },
        lambda c, w: len(c["lemma1"]["instances"]),
    ),
    TableContract(
        "claims",
        "tables/claims.csv",
        "claims_table",
        {
            "claim_id": _str(),
            "claim": _str(),
            "source": _str(),
            "paper_value": _str(nullable=True),
            "measured": _str(nullable=True),
            "verdict": _str(Check.isin(["holds", "differs", "inconclusive", "not run"])),
            "note": _str(nullable=True),
        },
    ),
    TableContract("basin", "tables/basin.csv", "basin_tables", BASIN, lambda c, w: _basin_starts(c)),
    TableContract(
        "basin_cone",
        "tables/basin_cone.csv",
        "basin_tables",
        BASIN_CONE,
        lambda c, w: 3 * int(c["basin"]["cone"]["radii"]["num"]),
    ),
    TableContract("basin_paths", "tables/basin_paths.csv", "basin_tables", BASIN_PATHS),
    TableContract("vit_run_metrics", "runs/vit/vit_metrics.csv", "vit_train", VIT_METRICS, lambda c, w: _vit_epochs(c)),
    TableContract(
        "vit_metrics", "tables/vit_metrics.csv", "vit_metrics_table", VIT_METRICS, lambda c, w: _vit_epochs(c)
    ),
    TableContract("vit_pilot", "tables/vit_pilot.csv", "vit_pilot", {"dataset": DATASET}, lambda c, w: 1),
    TableContract("vit_recipe", "runs/vit_recipes/{recipe}.csv", "vit_recipe_train", {"dataset": DATASET}),
    TableContract("vit_recipes", "tables/vit_recipes.csv", "vit_recipes_table", {"dataset": DATASET}),
    # Last: the synthetic trajectories' pattern matches any table name (of a registry experiment only: _known).
    TableContract("trajectories", "tables/{experiment}.csv", "synthetic_experiment", TRAJECTORY),
]
# Tables whose columns are declared only in part (the rest follow the library's column lists).
OPEN_TABLES = {"vit_pilot", "vit_recipe", "vit_recipes"}


def _known(wildcards: Mapping[str, str]) -> bool:
    """An ``{experiment}`` wildcard names a synthetic experiment of the registry (other tables are not its)."""
    from maxmargin import registry

    return "experiment" not in wildcards or wildcards["experiment"] in {e.name for e in registry.EXPERIMENTS}


def find_contract(path: str) -> tuple[TableContract, dict[str, str]] | None:
    """The contract of the table at ``path`` and the wildcards its path fills in (None: no declared table)."""
    text = str(path).replace("\\", "/")
    for contract in CONTRACTS:
        if (match := contract.regex().search(text)) is not None and _known(match.groupdict()):
            return contract, match.groupdict()
    return None


def expected_rows(contract: TableContract, wildcards: Mapping[str, str], config: Config | None) -> int | None:
    """The row count that follows from ``config`` (None where the config does not fix it or is not known)."""
    if contract.rows is None or not config:
        return None
    return contract.rows(config, wildcards)


def schema(contract: TableContract, n_rows: int | None, empty: bool) -> pa.DataFrameSchema:
    """The pandera schema of a table (an empty table, read back as untyped columns, is coerced)."""
    checks = []
    if n_rows is not None:
        checks.append(Check(lambda frame: len(frame) == n_rows, error=f"row count {n_rows} (from the config)"))
    return pa.DataFrameSchema(
        contract.columns, checks=checks, strict=contract.name not in OPEN_TABLES, coerce=empty, name=contract.name
    )


def _failure(row: Any, n_rows: int) -> str:
    """One line of a contract failure: the column and check, or the table-wide check (row count, columns)."""
    if row.schema_context == "Column":
        return f"  column {row.column}: {row.check} fails ({row.failure_case!r})"
    if str(row.check).startswith("row count"):
        return f"  {row.check} fails (the table has {n_rows} rows)"
    return f"  {row.check}: {row.failure_case!r}"


def check_table(frame: pd.DataFrame, path: str, config: Config | None) -> None:
    """Validate ``frame``, the table at ``path``, against its contract; TableContractError says what breaks it."""
    found = find_contract(path)
    if found is None:
        return
    contract, wildcards = found
    n_rows = expected_rows(contract, wildcards, config)
    try:
        schema(contract, n_rows, frame.empty).validate(frame, lazy=True)
    except pa.errors.SchemaErrors as err:
        cases = err.failure_cases
        lines = [_failure(row, len(frame)) for row in cases.head(8).itertuples()]
        more = f"\n  ... and {len(cases) - 8} more" if len(cases) > 8 else ""
        raise TableContractError(
            f"{path} breaks the contract of table '{contract.name}' (maxmargin/tables.py):\n" + "\n".join(lines) + more
        ) from None
