"""Progress of long computations: one logger that the pipeline's I/O layer shows in the rule log and on the job's
terminal or SLURM log (:func:`maxmargin.logs.rule_logging`). Here, below every other layer, so that the library's
long loops (census chunks, regularization-path radii, basin starts, ViT epochs) can report without importing the
I/O layer. :class:`Progress` adds how far along a loop is and an estimate of the time left, at most every
``interval`` seconds, whether or not the job's stderr is a terminal."""

from __future__ import annotations

import logging
import math
import time
from numbers import Real
from typing import Any

__all__ = ["PROGRESS_LOGGER", "TERMINAL_GRACE", "TERMINAL_INTERVAL", "Progress", "duration", "progress"]

PROGRESS_LOGGER = "maxmargin.progress"
# Seconds between two progress lines of one job on the terminal.
TERMINAL_INTERVAL = 30.0
# Seconds a job runs before its progress lines reach the terminal (a shorter job shows only its start and end).
TERMINAL_GRACE = 10.0


def progress(message: str, *args: Any, final: bool = False, milestone: bool = False) -> None:
    """Report one step of a long job (``message % args``): in the rule log and on the job's terminal/SLURM log.

    Parameters
    ----------
    message : str
        A %-format string.
    *args : Any
        Its arguments.
    final : bool
        The job's last report: the terminal shows it where it showed an earlier one (it shows the others from
        :data:`TERMINAL_GRACE` seconds on, at most every :data:`TERMINAL_INTERVAL` seconds; the rule log gets
        them all).
    milestone : bool
        A step that ends a stage of the job (a ViT epoch): throttled only against the earlier milestones, so that a
        batch line shown just before does not hide it (epochs longer than :data:`TERMINAL_INTERVAL` all show).

    Returns
    -------
    None
        The record goes to the handlers of :data:`PROGRESS_LOGGER` (none outside a rule).

    Examples
    --------
    >>> from maxmargin.core import progress
    >>> progress("radius %d of %d", 3, 10)  # shown in a rule's log; nothing outside a rule
    """
    # Checked here without maxmargin.core.arguments: this module loads with maxmargin.core, before numpy.
    if not isinstance(message, str):
        raise ValueError(f"message must be a %-format str: got {type(message).__name__}")
    logging.getLogger(PROGRESS_LOGGER).info(message, *args, extra={"final": final, "milestone": milestone})


def duration(seconds: float) -> str:
    """A duration as people read it: "42 s", "3.5 min", "1.2 h".

    Parameters
    ----------
    seconds : float
        The duration.

    Returns
    -------
    str
        Seconds below 90 s, minutes below 90 min, hours beyond.

    Examples
    --------
    >>> from maxmargin.core import duration
    >>> duration(42), duration(210), duration(7200)
    ('42 s', '3.5 min', '2.0 h')
    """
    if not isinstance(seconds, Real) or not math.isfinite(seconds):
        raise ValueError(f"seconds must be a finite number (shape ()): got {seconds!r}")
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """How far a loop of ``total`` steps is, with the time left estimated from the rate so far.

    :meth:`update` reports (through :func:`progress`) when ``interval`` seconds have passed since the last report,
    and always at the last step; ``interval = 0`` reports every step.
    """

    def __init__(self, what: str, total: int, interval: float = 30.0, done: int = 0) -> None:
        self.what, self.total, self.interval = what, total, interval
        self.start_done = done
        self.start = self.last = time.perf_counter()

    def eta(self, done: int) -> float | None:
        """Seconds left at ``done`` steps, from the rate of the steps done in this call (None before any)."""
        steps = done - self.start_done
        if steps <= 0:
            return None
        return (time.perf_counter() - self.start) / steps * (self.total - done)

    def text(self, done: int, detail: str = "") -> str:
        """ "<what> 3/10 (30%), 1.2 min so far, about 2.8 min left[; detail]"."""
        left = self.eta(done)
        elapsed = duration(time.perf_counter() - self.start)
        line = f"{self.what} {done}/{self.total} ({100 * done / max(self.total, 1):.0f}%), {elapsed} so far"
        line += "" if left is None or done >= self.total else f", about {duration(left)} left"
        return f"{line}; {detail}" if detail else line

    def update(self, done: int, detail: str = "") -> None:
        now = time.perf_counter()
        if done >= self.total or now - self.last >= self.interval:
            self.last = now
            progress("%s", self.text(done, detail), final=done >= self.total)
