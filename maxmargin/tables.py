"""Every table's contract, built from its one declaration in the registry, and the only way tables are written and
read: :func:`write_csv` checks a frame against its contract before it replaces the file, :func:`read_table` checks
the file's bytes against its sidecar, that it belongs to this run's config, and its contract again.

A contract (pandera) is a table's columns in order with their types, ranges and NaN rules, its row count where the
config fixes it, and the columns that restate a setting (the ``d`` of ``runs/census/d10.csv`` must be 10). The
declarations live in the registry (:mod:`maxmargin.registry`, ``Table``), under the table's one name.
"""

from __future__ import annotations

import contextvars
import io
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera import Check

from maxmargin import registry
from maxmargin.files import atomic_path
from maxmargin.provenance import (
    TableIntegrityError,
    bytes_record,
    check_binding,
    current_config,
    note_reads,
    read_record,
    rebuild_command,
    verify_table,
    write_provenance,
)
from maxmargin.registry import derived
from maxmargin.registry.types import Column, Table

Config = Mapping[str, Any]
WHOLE = Check(lambda s: (s.dropna() % 1 == 0).all(), error="whole numbers")
_KINDS = {"int": int, "float": float, "str": str, "bool": bool, "any": None}


class TableContractError(ValueError):
    """A table breaks its contract: wrong columns, types, values or row count."""


def _checks(column: Column) -> list[Check]:
    checks = []
    if column.ge is not None and column.le is not None:
        checks.append(Check.in_range(column.ge, column.le))
    elif column.ge is not None:
        checks.append(Check.ge(column.ge))
    elif column.le is not None:
        checks.append(Check.le(column.le))
    if column.gt is not None:
        checks.append(Check.gt(column.gt))
    if column.isin:
        checks.append(Check.isin(list(column.isin)))
    return checks


def pandera_column(column: Column) -> pa.Column:
    """The pandera column of a registry column (a nullable integer column reads back as floats: whole numbers)."""
    if column.kind == "int" and column.nullable:
        return pa.Column(float, [WHOLE, *_checks(column)], nullable=True, required=column.required, coerce=True)
    coerce = column.kind == "float"  # a column of whole numbers reads back from CSV as int64
    kind = _KINDS[column.kind]
    return pa.Column(kind, _checks(column), nullable=column.nullable, required=column.required, coerce=coerce)


def _regex(table: Table) -> re.Pattern[str]:
    body = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(table.pattern))
    return re.compile(rf"(?:^|/){body}$")


_PATTERNS = [(table, _regex(table)) for table in registry.TABLES]


def find_contract(path: str | os.PathLike[str]) -> tuple[Table, dict[str, str]] | None:
    """The registered table at ``path`` and the wildcards its path fills in (None: no declared table). Where two
    patterns match, the one with more literal text wins (``{i}_compare.csv`` over ``{i}.csv``)."""
    text = str(path).replace("\\", "/")
    found = [(table, m.groupdict()) for table, regex in _PATTERNS if (m := regex.search(text)) is not None]
    if not found:
        return None
    return max(found, key=lambda hit: len(re.sub(r"\{\w+\}", "", hit[0].pattern)))


def schema(table: Table, n_rows: int | None, empty: bool) -> pa.DataFrameSchema:
    """The pandera schema of a table (an empty table, read back as untyped columns, is coerced)."""
    checks = []
    if n_rows is not None:
        checks.append(Check(lambda frame: len(frame) == n_rows, error=f"row count {n_rows} (from the config)"))
    columns = {c.name: pandera_column(c) for c in table.columns}
    return pa.DataFrameSchema(columns, checks=checks, strict=True, coerce=empty, name=table.name)


def _failure(row: Any, n_rows: int) -> str:
    """One line of a contract failure: the column and check, or the table-wide check (row count, columns)."""
    if row.schema_context == "Column":
        return f"  column {row.column}: {row.check} fails ({row.failure_case!r})"
    if str(row.check).startswith("row count"):
        return f"  {row.check} fails (the table has {n_rows} rows)"
    return f"  {row.check}: {row.failure_case!r}"


def _restated(table: Table, frame: pd.DataFrame, wildcards: Mapping[str, str], config: Config) -> list[str]:
    """The columns that restate a setting but disagree with it (``Table.restates``)."""
    wrong = []
    for column, source in table.restates.items():
        if column not in frame or frame.empty:
            continue
        found = sorted({str(v) for v in frame[column].dropna()}, key=lambda v: (len(v), v))
        if source.startswith("{"):
            expected = [str(wildcards[source.strip("{}")])]
        elif source.startswith("0.."):
            expected = [str(k) for k in derived.every(config, source[3:])]
        else:
            value = derived.lookup(config, source)
            expected = [str(v) for v in value] if isinstance(value, list) else [str(value)]
        expected = sorted(set(expected), key=lambda v: (len(v), v))
        if found != expected:
            shown = source if source.startswith("{") else f"config {source}"
            wrong.append(f"  column {column} holds {found}, but {shown} says {expected}")
    return wrong


def _empty_columns_as_objects(table: Table, frame: pd.DataFrame) -> pd.DataFrame:
    """A nullable text or label column empty in every row reads back as floats: legitimately empty, not wrong."""
    empty = [c.name for c in table.columns if c.nullable and c.kind in ("str", "any") and c.name in frame]
    empty = [name for name in empty if len(frame) and frame[name].isna().all()]
    return frame.astype({name: object for name in empty}) if empty else frame


def check_table(frame: pd.DataFrame, path: str | os.PathLike[str], config: Config | None) -> None:
    """Validate ``frame``, the table at ``path``, against its contract; TableContractError says what breaks it."""
    found = find_contract(path)
    if found is not None:
        _check_contract(frame, path, *found, config)


def _check_contract(
    frame: pd.DataFrame, path: str | os.PathLike[str], table: Table, wildcards: Mapping[str, str], config: Config | None
) -> None:
    n_rows = derived.row_count(table, config) if config else None
    frame = _empty_columns_as_objects(table, frame)
    lines = []
    try:
        schema(table, n_rows, frame.empty).validate(frame, lazy=True)
    except pa.errors.SchemaErrors as err:
        cases = err.failure_cases
        lines = [_failure(row, len(frame)) for row in cases.head(8).itertuples()]
        lines += [f"  ... and {len(cases) - 8} more"] if len(cases) > 8 else []
    if config:
        lines += _restated(table, frame, wildcards, config)
    if lines:
        raise TableContractError(
            f"{path} breaks the contract of table '{table.name}' ({registry.declared_in(table)}):\n" + "\n".join(lines)
        )


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a table, the one way: in its declared column order, with full float precision; its bytes checked
    against its contract as every reader will read them, then written atomically (nothing is written when the check
    fails); inside a rule, its provenance sidecar beside it, with the bytes' sha256 and row count.

    A straight trip down the layers: the contract from the registry's declaration, this run's config from the job's
    provenance, the write by :mod:`maxmargin.files`, the sidecar by :mod:`maxmargin.provenance`; nothing calls back.
    """
    found = find_contract(path)
    if found is not None:
        declared = [name for name in found[0].column_names if name in frame]
        frame = frame[declared + [c for c in frame.columns if c not in declared]]
    data = frame.to_csv(index=False, float_format="%.17g").encode()
    if found is not None:
        _check_contract(pd.read_csv(io.BytesIO(data)), path, *found, current_config())
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    write_provenance(path, bytes_record(data))


# The tables this job has read (and checked), by path: a job verifies all its inputs before it writes anything
# (maxmargin.logs.rule_logging), and its script then reads them from here.
_READ: contextvars.ContextVar[dict[str, pd.DataFrame] | None] = contextvars.ContextVar("read", default=None)


@contextmanager
def reading_session() -> Iterator[None]:
    """Keep the tables read within the block, so that a job reads and checks each input once."""
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def read_table(path: str | os.PathLike[str], record: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Read a table a rule depends on, checked: its bytes against its provenance record (``record``, else its
    sidecar), its config against this run's (the keys its producing rule reads, the wildcards of its path), then
    its contract. A failure names the table and the command that rebuilds it."""
    cache = _READ.get()
    if cache is not None and str(path) in cache:
        return cache[str(path)].copy()
    found = find_contract(path)
    rebuild = rebuild_command(path, found[0].rule if found else None)
    record = read_record(path, rebuild) if record is None else record
    data = Path(path).read_bytes()  # read once: the bytes checked are the bytes parsed
    verify_table(path, record, rebuild, data)
    config = current_config()
    if config is not None and found is not None:  # a record that does not say what made it fails (check_binding)
        check_binding(path, record, found[1], config, rebuild)
    note_reads(record)
    frame = pd.read_csv(io.BytesIO(data))
    try:
        if found is not None:
            _check_contract(frame, path, *found, config)
    except TableContractError as err:
        raise TableContractError(f"{err}\nrebuild it: {rebuild}") from None
    if cache is not None:
        cache[str(path)] = frame
    return frame.copy()


def verify_inputs(paths: list[str]) -> None:
    """Read and check every declared table among a job's inputs, before the job writes anything (a table whose
    record is kept in its run's JSON is read by its script, with that record)."""
    for path in paths:
        found = find_contract(path) if str(path).endswith(".csv") else None
        if found is not None and found[0].sidecar:
            read_table(path)


__all__ = [
    "TableContractError",
    "TableIntegrityError",
    "check_table",
    "find_contract",
    "read_table",
    "verify_inputs",
    "write_csv",
]


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """``frame`` as a Markdown table (docs pages, the claims table): floats as ``floatfmt``, NaN empty, pipes
    escaped."""

    def cell(x: Any) -> str:
        if isinstance(x, float):
            return "" if x != x else format(x, floatfmt)
        return str(x).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"
