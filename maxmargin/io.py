"""Atomic writes, provenance sidecars, per-rule logging and terminal progress for the Snakemake scripts."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import json
import logging
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from maxmargin.core.progress import PROGRESS_LOGGER

# The provenance of the job in progress, set by rule_logging(snakemake): every table written
# inside the block gets a sidecar and every figure the same record in its metadata.
_PROVENANCE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("provenance", default=None)


def current_provenance() -> dict[str, Any] | None:
    return _PROVENANCE.get()


# Progress of long jobs (ViT epochs, census chunks, regularization-path radii). Inside rule_logging a record goes to the
# rule log like any other and also, one line each, to the job's stderr: the terminal when Snakemake runs the job
# itself, the job's SLURM log (.snakemake/slurm_logs/) on a cluster. Logging, not tqdm: it is flushed line by line
# and shown whether or not stderr is a terminal.
def provenance_path(path: str | os.PathLike[str]) -> Path:
    """Where the sidecar of an output lives: ``tables/x.csv`` -> ``tables/x.csv.provenance.json``."""
    return Path(f"{path}.provenance.json")


def _umask() -> int:
    """The process umask (reading it means setting it; it is put back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_path(path: str | os.PathLike[str]) -> contextlib.AbstractContextManager[Path]:
    """Yield a temporary path beside ``path`` that replaces it only if the block succeeds.

    An interrupted job then never leaves a half-written output that looks complete. The file gets the mode that
    the umask gives a new file (``mkstemp`` makes it 0600, which collaborators on a shared file system cannot read).
    """

    @contextlib.contextmanager
    def _ctx() -> Iterator[Path]:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent)
        os.close(fd)
        try:
            yield Path(tmp)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    return _ctx()


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    """Write JSON atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


class TableIntegrityError(RuntimeError):
    """A table differs from its provenance record, or has none: it is stale, partial or edited."""


def _config() -> Any:
    provenance = current_provenance()
    return None if provenance is None else provenance.get("config")


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes, as its records hold it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def verify_file(path: str | os.PathLike[str], sha256: str | None, rebuild: str) -> None:
    """Stop unless the file at ``path`` (an array, not a table) has the recorded sha256."""
    if (actual := file_sha256(path)) != sha256:
        raise TableIntegrityError(
            f"{path} differs from its record (sha256 {actual}, recorded {sha256}): it was cut, edited or left by "
            f"another run; rebuild it: snakemake --cores all --force -- {path} (rule {rebuild})"
        )


def table_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a provenance record holds of a table's bytes: its sha256 and its number of rows."""
    data = Path(path).read_bytes()
    try:
        rows: int | str = len(pd.read_csv(io.BytesIO(data)))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        rows = f"unreadable ({type(err).__name__})"
    return {"sha256": hashlib.sha256(data).hexdigest(), "rows": rows}


def write_provenance(path: str | os.PathLike[str]) -> None:
    """Write the sidecar of the table at ``path``: the job's provenance, the table's sha256 and row count."""
    provenance = current_provenance()
    if provenance is not None:
        write_json({**provenance, **table_record(path)}, provenance_path(path))


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Check a table against its contract (maxmargin/tables.py), write it atomically with full float precision,
    plus, inside a rule, its provenance sidecar (with the table's sha256 and row count)."""
    from maxmargin.tables import check_table

    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.17g")
        check_table(pd.read_csv(tmp), str(path), _config())  # as every reader will see it
    write_provenance(path)


def rebuild_command(path: str | os.PathLike[str]) -> str:
    """The command that rebuilds the table at ``path``, naming the rule that writes it when the table is declared.

    ``--force`` reruns that one job (a finished ViT run is then restored from its checkpoint, not retrained).
    """
    from maxmargin.tables import find_contract

    found = find_contract(str(path))
    rule = f" (rule {found[0].rule})" if found is not None else ""
    return f"snakemake --cores all --force -- {path}{rule}, with the --configfile of the run if any"


def verify_table(path: str | os.PathLike[str], record: dict[str, Any] | None = None) -> None:
    """Stop unless the table at ``path`` has the sha256 and row count of its provenance record.

    ``record`` defaults to the sidecar ``<path>.provenance.json``; a missing sidecar is an error too.
    """
    if record is None:
        sidecar = provenance_path(path)
        if not sidecar.exists():
            raise TableIntegrityError(
                f"{path}: its provenance record {sidecar} is missing, so nothing says the table is complete and "
                f"unedited; rebuild it: {rebuild_command(path)}"
            )
        record = json.loads(sidecar.read_text())
    actual = table_record(path)
    differs = [
        f"{key} {actual[key]} (recorded {record.get(key)})"
        for key in ("rows", "sha256")
        if actual[key] != record.get(key)
    ]
    if differs:
        raise TableIntegrityError(
            f"{path} differs from its provenance record ({'; '.join(differs)}): it was cut, edited or left by "
            f"another run; rebuild it: {rebuild_command(path)}"
        )


def read_table(path: str | os.PathLike[str], record: dict[str, Any] | None = None) -> pd.DataFrame:
    """Read a table a rule depends on: verified against its provenance record, then against its contract."""
    from maxmargin.tables import TableContractError, check_table

    verify_table(path, record)
    frame = pd.read_csv(path)
    try:
        check_table(frame, str(path), _config())
    except TableContractError as err:
        raise TableContractError(f"{err}\nrebuild it: {rebuild_command(path)}") from None
    return frame


def save_figure(fig: Any, pdf: str, png: str, metadata: dict[str, str] | None = None) -> None:
    """Save a figure as PDF and PNG (atomically) and close it; inside a rule both carry its provenance.

    Saved under the shared style: its ``savefig.*`` and ``pdf.fonttype`` keys are read when the file is written.
    """
    import matplotlib.pyplot as plt

    from maxmargin.figures.style import paper_style

    meta = dict(metadata or {})
    provenance = current_provenance()
    if provenance is not None:
        meta["Provenance"] = json.dumps(provenance, sort_keys=True, default=str)
    # No CreationDate: a forced rerun then writes a byte-identical PDF.
    pdf_meta: dict[str, str | None] = {k: v for k, v in meta.items() if k in ("Title", "Author", "Subject", "Keywords")}
    pdf_meta["CreationDate"] = None
    if "Provenance" in meta:
        pdf_meta["Keywords"] = meta["Provenance"]
    with paper_style(), atomic_path(pdf) as tmp:
        fig.savefig(tmp, format="pdf", metadata=pdf_meta)
    with paper_style(), atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", metadata=meta or None)
    plt.close(fig)


def write_npz(arrays: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write arrays as an ``.npz`` atomically and byte-reproducibly.

    ``np.savez`` stamps every member with the current time; a fixed stamp makes a forced rerun byte-identical.
    """
    import numpy as np

    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


class _Tee:
    """A text stream that writes to the terminal's stderr and to the rule log alike."""

    def __init__(self, terminal: Any, log_file: Any) -> None:
        self.terminal, self.log_file = terminal, log_file

    def write(self, text: str) -> int:
        self.log_file.write(text)
        self.log_file.flush()
        return self.terminal.write(text)

    def flush(self) -> None:
        self.log_file.flush()
        self.terminal.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.terminal, name)


def remove_stale_sidecars(outputs: Any) -> None:
    """Delete the provenance sidecars of a job's outputs before it runs.

    Snakemake deletes a job's outputs before it runs them again, but not the sidecars it does not know of: a job
    that then fails would leave a sidecar describing a table that no longer exists.
    """
    for output in outputs:
        provenance_path(output).unlink(missing_ok=True)


@contextlib.contextmanager
def rule_logging(job: Any) -> Iterator[logging.Logger]:
    """Send the ``maxmargin`` logger, warnings, everything written to stderr and any traceback to the rule's log.

    ``job`` is the ``snakemake`` object of a script (its log file and provenance are used) or a log path. The log
    is appended to; stderr still reaches the terminal too (a fallback warning must be seen, not only logged), and
    so do the :func:`progress` lines, prefixed with the job's rule and wildcards.
    """
    if isinstance(job, str | os.PathLike):
        log_path, token, name = job, None, Path(job).stem
    else:
        from maxmargin.provenance import snakemake_provenance

        remove_stale_sidecars(job.output)
        log_path, token = job.log[0], _PROVENANCE.set(snakemake_provenance(job))
        name = _job_name(job)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    terminal = sys.stderr
    with open(log_path, "a", encoding="utf-8") as log_file, _stderr_to(log_file):
        logger = logging.getLogger("maxmargin")
        logger.setLevel(logging.INFO)
        handler = logging.StreamHandler(log_file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        # the terminal's own stream, not the tee: the rule log already gets the record through `handler`
        progress_handler = logging.StreamHandler(terminal)
        progress_handler.setFormatter(logging.Formatter(f"%(asctime)s [{name}] %(message)s", "%H:%M:%S"))
        logging.getLogger(PROGRESS_LOGGER).addHandler(progress_handler)
        try:
            yield logger
        except BaseException:
            logger.exception("rule failed")
            raise
        finally:
            if token is not None:
                _PROVENANCE.reset(token)
            logger.removeHandler(handler)
            logging.getLogger(PROGRESS_LOGGER).removeHandler(progress_handler)


def _job_name(job: Any) -> str:
    """``rule k=v ...``: which job a progress line on a shared terminal comes from."""
    wildcards = getattr(job, "wildcards", None) or {}
    items = dict(wildcards.items()) if hasattr(wildcards, "items") else {}
    return " ".join([str(getattr(job, "rule", "job")), *(f"{k}={v}" for k, v in items.items())])


@contextlib.contextmanager
def _stderr_to(log_file: Any) -> Iterator[None]:
    """Tee ``sys.stderr`` (Python warnings, torch and timm messages, progress bars) into ``log_file``."""
    terminal = sys.stderr
    sys.stderr = _Tee(terminal, log_file)
    # Warnings as log records written to the tee: a test runner's or library's own showwarning cannot divert them.
    logging.captureWarnings(True)
    warnings_logger = logging.getLogger("py.warnings")
    handler = logging.StreamHandler(sys.stderr)
    warnings_logger.addHandler(handler)
    try:
        yield
    finally:
        warnings_logger.removeHandler(handler)
        logging.captureWarnings(False)
        sys.stderr.flush()
        sys.stderr = terminal


def save_result(
    result: Any,
    settings: Any,
    metrics_path: str | os.PathLike[str],
    sidecar_path: str | os.PathLike[str],
    maps_path: str | os.PathLike[str],
) -> pd.DataFrame:
    """Write a ViT run's metrics table, its JSON sidecar and its maps atomically (``TrainResult``, ``VitSettings``:
    :mod:`maxmargin.experiments.vit`; the files: :func:`maxmargin.experiments.vit.results.result_tables`)."""
    from maxmargin.experiments.vit.results import result_tables

    table, sidecar, maps = result_tables(result, settings)
    write_csv(table, metrics_path)
    write_npz(maps, maps_path)
    # The sha256 (and rows) of the metrics and maps travel with the run: Snakemake's cache keeps no other record.
    sidecar["metrics_table"] = table_record(metrics_path)
    sidecar["maps_sha256"] = file_sha256(maps_path)
    with atomic_path(sidecar_path) as tmp:  # last: a run whose JSON exists wrote everything
        tmp.write_text(json.dumps(sidecar, indent=2) + "\n")
    return table
