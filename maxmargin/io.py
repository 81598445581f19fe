"""Atomic writes, provenance sidecars and per-rule logging for the Snakemake scripts."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

# The provenance of the job in progress, set by rule_logging(snakemake): every table written
# inside the block gets a sidecar and every figure the same record in its metadata.
_PROVENANCE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("provenance", default=None)


def current_provenance() -> dict[str, Any] | None:
    return _PROVENANCE.get()


def provenance_path(path: str | os.PathLike[str]) -> Path:
    """Where the sidecar of an output lives: ``tables/x.csv`` -> ``tables/x.csv.provenance.json``."""
    return Path(f"{path}.provenance.json")


def atomic_path(path: str | os.PathLike[str]) -> contextlib.AbstractContextManager[Path]:
    """Yield a temporary path beside ``path`` that replaces it only if the block succeeds.

    An interrupted job then never leaves a half-written output that looks complete.
    """

    @contextlib.contextmanager
    def _ctx() -> Iterator[Path]:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent)
        os.close(fd)
        try:
            yield Path(tmp)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    return _ctx()


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    """Write JSON atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a table atomically, with full float precision, plus its provenance sidecar inside a rule."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.17g")
    provenance = current_provenance()
    if provenance is not None:
        write_json(provenance, provenance_path(path))


@contextlib.contextmanager
def rule_logging(job: Any) -> Iterator[logging.Logger]:
    """Send the ``maxmargin`` logger and any traceback of the block to the rule's log file.

    ``job`` is the ``snakemake`` object of a script (its log file and provenance are used) or a log path.
    """
    if isinstance(job, str | os.PathLike):
        log_path, token = job, None
    else:
        from maxmargin.provenance import snakemake_provenance

        log_path, token = job.log[0], _PROVENANCE.set(snakemake_provenance(job))
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger("maxmargin")
    logger.setLevel(logging.INFO)
    handler = logging.FileHandler(log_path, mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    try:
        yield logger
    except BaseException:
        logger.exception("rule failed")
        raise
    finally:
        if token is not None:
            _PROVENANCE.reset(token)
        logger.removeHandler(handler)
        handler.close()
        sys.stderr.flush()
