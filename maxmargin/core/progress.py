"""Progress of long computations: one logger that the pipeline's I/O layer shows in the rule log and on the job's
terminal or SLURM log (:func:`maxmargin.io.rule_logging`). Here, below every other layer, so that the library's
long loops (census chunks, regularization-path radii, ViT epochs) can report without importing the I/O layer."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["PROGRESS_LOGGER", "progress"]

PROGRESS_LOGGER = "maxmargin.progress"


def progress(message: str, *args: Any) -> None:
    """Report one step of a long job (``message % args``): in the rule log and on the job's terminal/SLURM log.

    Parameters
    ----------
    message : str
        A %-format string.
    *args : Any
        Its arguments.

    Returns
    -------
    None
        The record goes to the handlers of :data:`PROGRESS_LOGGER` (none outside a rule).
    """
    logging.getLogger(PROGRESS_LOGGER).info(message, *args)
