"""Atomic writes and per-rule logging for the Snakemake scripts."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd


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


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a table atomically, with full float precision."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.17g")


@contextlib.contextmanager
def rule_logging(log_path: str | os.PathLike[str]) -> Iterator[logging.Logger]:
    """Send the ``maxmargin`` logger and any traceback of the block to the rule's log file."""
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
        logger.removeHandler(handler)
        handler.close()
        sys.stderr.flush()
