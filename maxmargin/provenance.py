"""Provenance: what produced a table or figure (rule, config, seeds, versions, commit), its sidecar beside it, and the
checks every read makes against that record.

A table's sidecar ``<table>.provenance.json`` (a declared output of its rule) holds the job's provenance and the
table's sha256 and row count. A read verifies the bytes (:func:`verify_table`) and that the table belongs to this
run (:func:`check_binding`): the config keys its producing rule reads (:mod:`maxmargin.registry.reads`) must have
the values the current config gives them, and the wildcards of its path must be those it was written for. A
sidecar is a record, not a signature: a table edited together with its sidecar's hash passes these checks (its
contract, :mod:`maxmargin.tables`, still applies).
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maxmargin.files import file_sha256, write_json

PACKAGES = (
    "maxmargin",
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "scikit-learn",
    "cvxopt",
    "torch",
    "torchvision",
    "timm",
    "snakemake",
)
# The Snakemake arguments that select this run's config (--configfile ..., --config ...), set by the Snakefile:
# a rebuild command printed by a job must name them, or run as printed it would build another config's tables.
RUN_ARGS_ENV = "MAXMARGIN_SNAKEMAKE_ARGS"

# The provenance of the job in progress, set by maxmargin.logs.rule_logging: every table written inside the block
# gets a sidecar and every figure the same record in its metadata.
_PROVENANCE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("provenance", default=None)


class TableIntegrityError(RuntimeError):
    """A table differs from its provenance record, has none, or belongs to another configuration."""


def current_provenance() -> dict[str, Any] | None:
    return _PROVENANCE.get()


def set_provenance(record: dict[str, Any] | None) -> contextvars.Token:
    return _PROVENANCE.set(record)


def reset_provenance(token: contextvars.Token) -> None:
    _PROVENANCE.reset(token)


def current_config() -> Mapping[str, Any] | None:
    """The config of the job in progress (None outside a rule)."""
    record = current_provenance()
    return None if record is None else record.get("config")


def _plain(value: Any) -> Any:
    """Snakemake's Namedlist / Params / config objects as plain JSON-able values."""
    if isinstance(value, Mapping) or (hasattr(value, "items") and callable(value.items)):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


@functools.cache
def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@functools.cache
def git_commit(path: str = ".") -> dict[str, Any]:
    """The commit of the checkout that ran the job, and whether it had uncommitted changes."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        status = ["git", "status", "--porcelain", "--untracked-files=no"]
        dirty = subprocess.run(status, cwd=path, capture_output=True, text=True, timeout=10).stdout.strip() != ""
        return {"git_commit": commit, "git_dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": "unknown (not a git checkout)", "git_dirty": None}


def snakemake_provenance(smk: Any) -> dict[str, Any]:
    """The provenance of the job a Snakemake ``script:`` runs in: rule, wildcards, params, the config and the part
    of it the job reads (``reads``: its own keys; its inputs' are added as it reads them), versions, commit."""
    repo = str(Path(__file__).resolve().parents[1])
    rule, wildcards, config = getattr(smk, "rule", None), _plain(dict(smk.wildcards.items())), _plain(smk.config)
    return {
        "rule": rule,
        "wildcards": wildcards,
        "params": _plain(dict(smk.params.items())),
        "config": config,
        "reads": job_reads(rule, wildcards, config) if rule else {},
        "python": platform.python_version(),
        "packages": package_versions(),
        **git_commit(repo),
    }


def provenance_path(path: str | os.PathLike[str]) -> Path:
    """Where the sidecar of an output lives: ``tables/x.csv`` -> ``tables/x.csv.provenance.json``."""
    return Path(f"{path}.provenance.json")


def bytes_record(data: bytes) -> dict[str, Any]:
    """What a provenance record holds of a table's bytes: their sha256 and the table's number of rows."""
    import io

    import pandas as pd

    try:
        rows: int | str = len(pd.read_csv(io.BytesIO(data)))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        rows = f"unreadable ({type(err).__name__})"
    return {"sha256": hashlib.sha256(data).hexdigest(), "rows": rows}


def table_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`bytes_record` of the table at ``path``."""
    return bytes_record(Path(path).read_bytes())


def write_provenance(path: str | os.PathLike[str], table: Mapping[str, Any] | None = None) -> None:
    """Inside a rule, write the sidecar of the table at ``path``: the job's provenance and ``table``, the record of
    the bytes written (:func:`bytes_record`; read from the file when not given). Outside a rule, nothing."""
    record = current_provenance()
    if record is not None:
        write_json({**record, **(table or table_record(path))}, provenance_path(path))


def run_command(targets: str, cores: str = "all", options: str = "") -> str:
    """``snakemake --cores CORES [this run's --configfile/--config] [OPTIONS] -- TARGETS``: a command that selects
    the config of the run in progress (the workflow puts its arguments in the environment, :data:`RUN_ARGS_ENV`)."""
    args = os.environ.get(RUN_ARGS_ENV, "").strip()
    return " ".join(part for part in (f"snakemake --cores {cores}", args, options, f"-- {targets}") if part)


def rebuild_command(path: str | os.PathLike[str], rule: str | None = None) -> str:
    """The command that rebuilds the file at ``path``, with this run's config arguments, naming its rule.

    ``--force`` reruns that one job (a finished ViT run is then restored from its checkpoint, not retrained).
    """
    return run_command(str(path), options="--force") + (f" (rule {rule})" if rule else "")


def read_record(path: str | os.PathLike[str], rebuild: str) -> dict[str, Any]:
    """The sidecar of the table at ``path``; a missing or unreadable one stops, naming the command that rebuilds."""
    sidecar = provenance_path(path)
    if not sidecar.exists():
        raise TableIntegrityError(
            f"{path}: its provenance record {sidecar} is missing, so nothing says the table is complete, unedited "
            f"and of this config; rebuild it: {rebuild}"
        )
    try:
        record = json.loads(sidecar.read_text())
    except (ValueError, OSError) as err:
        raise TableIntegrityError(
            f"{path}: its provenance record {sidecar} is unreadable ({type(err).__name__}: {err}); "
            f"rebuild it: {rebuild}"
        ) from None
    if not isinstance(record, dict):
        raise TableIntegrityError(f"{path}: its provenance record {sidecar} is not a record; rebuild it: {rebuild}")
    return record


def verify_file(path: str | os.PathLike[str], sha256: str | None, rebuild: str) -> None:
    """Stop unless the file at ``path`` (an array, not a table) has the recorded sha256."""
    if (actual := file_sha256(path)) != sha256:
        raise TableIntegrityError(
            f"{path} differs from its record (sha256 {actual}, recorded {sha256}): it was cut, edited or left by "
            f"another run; rebuild it: {rebuild}"
        )


def verify_table(
    path: str | os.PathLike[str], record: Mapping[str, Any], rebuild: str, data: bytes | None = None
) -> None:
    """Stop unless the table at ``path`` (its bytes ``data``, read once by the caller, or else from the file) has the
    sha256 and row count of its provenance record."""
    actual = bytes_record(Path(path).read_bytes() if data is None else data)
    differs = [
        f"{key} {actual[key]} (recorded {record.get(key)})"
        for key in ("rows", "sha256")
        if actual[key] != record.get(key)
    ]
    if differs:
        raise TableIntegrityError(
            f"{path} differs from its provenance record ({'; '.join(differs)}): it was cut, edited or left by "
            f"another run; rebuild it: {rebuild}"
        )


def _canonical(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True)


def check_binding(
    path: str | os.PathLike[str],
    record: Mapping[str, Any],
    wildcards: Mapping[str, str],
    config: Mapping[str, Any],
    rebuild: str,
) -> None:
    """Stop unless the table at ``path`` belongs to this run: written for the wildcards of its path, and with the
    values the current ``config`` gives every key it was made from (``reads``: the keys its rule and every rule
    upstream of it read)."""
    recorded_wildcards = record.get("wildcards") or {}
    for name, value in wildcards.items():
        if name in recorded_wildcards and str(recorded_wildcards[name]) != str(value):
            raise TableIntegrityError(
                f"{path} was written for {name} = {recorded_wildcards[name]}, but its path says {name} = {value}: "
                f"it was copied from another table; rebuild it: {rebuild}"
            )
    reads = record.get("reads")
    if not isinstance(reads, Mapping):
        raise TableIntegrityError(
            f"{path}: its provenance record does not say which settings made it; rebuild it: {rebuild}"
        )
    for difference in config_differences(reads, config)[:1]:
        raise TableIntegrityError(
            f"{path} was made with another configuration: {difference} in this run's config; rebuild it: {rebuild}"
        )


def config_differences(reads: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """The recorded settings ``reads`` (dotted key -> value) that ``config`` gives another value, each as
    "KEY is THEN in its record, NOW"."""
    differences = []
    for key, then in reads.items():
        now = _value(config, key)
        if _canonical(then) != _canonical(now):
            differences.append(f"{key} is {_canonical(then)} in its record, {_canonical(now)}")
    return differences


def replan_reasons(path: str | os.PathLike[str], config: Mapping[str, Any], code: str) -> list[str]:
    """Why the table at ``path``, there with its sidecar, is not this run's: each recorded setting (``reads``) this
    ``config`` gives another value, and a job code hash (its job's ``code`` param, :mod:`maxmargin.job_code`) other
    than ``code``. Asked of every table before a run plans its jobs, so that a results root copied without
    Snakemake's records (``.snakemake/``) is made again where it is not this run's. Nothing for a table or sidecar
    that is missing (Snakemake plans its job) or a record that is unreadable or says no settings (the read stops,
    naming it: :func:`read_record`, :func:`check_binding`)."""
    sidecar = provenance_path(path)
    if not (Path(path).exists() and sidecar.exists()):
        return []
    try:
        record = json.loads(sidecar.read_text())
    except (ValueError, OSError):
        return []
    if not isinstance(record, dict) or not isinstance(record.get("reads"), Mapping):
        return []
    reasons = [f"{d} in this config" for d in config_differences(record["reads"], config)]
    recorded = (record.get("params") or {}).get("code")
    if recorded != code:
        reasons.append(f"its job's code hash is {recorded} in its record, {code} now (maxmargin/job_code.py)")
    return reasons


def job_reads(rule: str, wildcards: Mapping[str, str], config: Mapping[str, Any]) -> dict[str, Any]:
    """The config values a job of ``rule`` reads, by dotted key (:mod:`maxmargin.registry.reads`)."""
    from maxmargin.registry.reads import read_keys

    return {key: _plain(_value(config, key)) for key in read_keys(rule, wildcards)}


def note_reads(record: Mapping[str, Any]) -> None:
    """Add the settings an input was made from to the job's own: its outputs are made from them too."""
    current = current_provenance()
    if current is not None and isinstance(record.get("reads"), Mapping):
        current.setdefault("reads", {}).update(record["reads"])


def _value(config: Mapping[str, Any], key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def sentences_record(claims_sha256: str, sentences: Mapping[str, str]) -> dict[str, Any]:
    """What ``tables/claims.json`` holds: the report captions' sentences (what the run measured), bound to the claims
    table by its sha256 and to themselves by theirs, so that a sentence edited by hand never reaches a caption
    (:func:`checked_sentences`)."""
    return {"claims_sha256": claims_sha256, "sentences_sha256": _sentences_sha256(sentences), "sentences": sentences}


def checked_sentences(found: Any, claims_sha256: str | None) -> dict[str, str]:
    """The sentences of a ``tables/claims.json`` record (:func:`sentences_record`), once they are text, of the claims
    table whose sha256 is ``claims_sha256`` and the sentences that were written (their sha256); a ValueError says
    which of these fails."""
    sentences = found.get("sentences") if isinstance(found, Mapping) else None
    if not isinstance(sentences, Mapping) or not all(isinstance(v, str) for v in sentences.values()):
        raise ValueError("it holds no sentences, or sentences that are not text")
    if found.get("claims_sha256") != claims_sha256:
        raise ValueError("it is not of the claims table beside it")
    if found.get("sentences_sha256") != _sentences_sha256(sentences):
        raise ValueError("it holds sentences other than those rule claims_table wrote (edited since, or an older form)")
    return dict(sentences)


def _sentences_sha256(sentences: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(sentences, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
