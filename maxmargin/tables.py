"""The contract of every table the pipeline writes: columns, types, allowed ranges, NaN rules and row counts.

One place declares each table (issue 19; its columns: :mod:`maxmargin.table_columns`). :func:`check_table`
validates a frame with pandera when a rule writes it (``maxmargin.io.write_csv``) and again whenever a rule reads it
(``maxmargin.io.read_table``); the row count, where it follows from the config (``census.n_trials``,
``census.dims``, ``vit.train.epochs`` ...), is checked too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera import Check, Column

from maxmargin.table_columns import (
    BASIN,
    BASIN_CONE,
    BASIN_PATHS,
    CENSUS_TRIAL,
    DATASET,
    DIRECTIONS,
    NONNEG,
    POSITIVE,
    REGPATH,
    TOKENS,
    TRAJECTORY,
    UNIT,
    VIT_BASELINE,
    VIT_METRICS,
    _basin_starts,
    _budget_cells,
    _census_rows,
    _float,
    _grid_cells,
    _int,
    _str,
    _summary,
    _vit_epochs,
)

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
    TableContract("vit_baseline", "tables/vit_baseline.csv", "vit_baseline", VIT_BASELINE, lambda c, w: 1),
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
