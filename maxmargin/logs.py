"""The frame of every Snakemake script: the rule's log, its provenance, its inputs checked before any output.

:func:`rule_logging` sends the ``maxmargin`` logger, warnings, stderr and any traceback to the rule's log, while the
terminal still sees stderr and the progress lines (:mod:`maxmargin.core.progress`); it removes what an earlier,
killed attempt left (temporary files of the job's outputs), sets the job's provenance (every table written gets its
sidecar) and reads and checks every declared table among the job's inputs before the script writes anything.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from maxmargin.core.progress import PROGRESS_LOGGER, TERMINAL_GRACE, TERMINAL_INTERVAL
from maxmargin.files import remove_stale_temporaries
from maxmargin.provenance import provenance_path, reset_provenance, set_provenance, snakemake_provenance


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


class _Throttle(logging.Filter):
    """Lets a job's progress lines through to the terminal once it has run ``grace`` seconds, then at most every
    ``interval`` seconds, and its last line (``final``) where an earlier one showed: a short job is only its start and
    done lines, a long one says how far along it is; the rule log keeps every line. A ``milestone`` line (an epoch's
    summary) is held back only by the milestones before it."""

    def __init__(self, interval: float, grace: float) -> None:
        super().__init__()
        self.interval, self.grace = interval, grace
        self.start = time.monotonic()
        self.last: float | None = None  # when the last line was shown (None: none yet)
        self.last_milestone: float | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if getattr(record, "final", False):
            return self.last is not None
        milestone = getattr(record, "milestone", False)
        last = self.last_milestone if milestone else self.last
        # a second of slack: a Progress reports every `interval` seconds by its own clock
        due = last is None or now - last >= self.interval - 1.0
        if due and now - self.start >= self.grace:
            self.last = now
            self.last_milestone = now if milestone else self.last_milestone
            return True
        return False


def _clear_earlier_attempt(outputs: Any) -> None:
    """Remove the temporary files a killed write of the job's outputs left, and sidecars of outputs that are gone.

    Snakemake deletes a job's declared outputs before it runs it again, but not what it does not know of.
    """
    for output in outputs:
        remove_stale_temporaries(output)
        if not Path(output).exists() and not str(output).endswith(".provenance.json"):
            provenance_path(output).unlink(missing_ok=True)


def _job_name(job: Any) -> str:
    """``rule k=v ...``: which job a progress line on a shared terminal comes from."""
    wildcards = getattr(job, "wildcards", None) or {}
    items = dict(wildcards.items()) if hasattr(wildcards, "items") else {}
    return " ".join([str(getattr(job, "rule", "job")), *(f"{k}={v}" for k, v in items.items())])


@contextlib.contextmanager
def _stderr_to(log_file: Any) -> Iterator[None]:
    """Tee ``sys.stderr`` (Python warnings, torch and timm messages) into ``log_file``."""
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


@contextlib.contextmanager
def _handlers(log_file: Any, terminal: Any, name: str) -> Iterator[logging.Logger]:
    logger = logging.getLogger("maxmargin")
    logger.setLevel(logging.INFO)
    handler = logging.StreamHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    # the terminal's own stream, not the tee: the rule log already gets the record through `handler`
    progress_handler = logging.StreamHandler(terminal)
    progress_handler.setFormatter(logging.Formatter(f"%(asctime)s [{name}] %(message)s", "%H:%M:%S"))
    progress_handler.addFilter(_Throttle(TERMINAL_INTERVAL, TERMINAL_GRACE))
    logging.getLogger(PROGRESS_LOGGER).addHandler(progress_handler)
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        logging.getLogger(PROGRESS_LOGGER).removeHandler(progress_handler)


@contextlib.contextmanager
def rule_logging(job: Any) -> Iterator[logging.Logger]:
    """Run a Snakemake script's body with its log, provenance and checked inputs (see the module's docstring).

    ``job`` is the ``snakemake`` object of a script, or a log path (a plain log, no provenance). The log is appended
    to; stderr still reaches the terminal too (a stand-in warning must be seen, not only logged), and so do the
    progress lines, prefixed with the job's rule and wildcards.
    """
    from maxmargin.tables import reading_session, verify_inputs

    if isinstance(job, str | os.PathLike):
        log_path, token, name, inputs = job, None, Path(job).stem, []
    else:
        _clear_earlier_attempt(job.output)
        inputs = getattr(job, "input", [])
        log_path, token, name = job.log[0], set_provenance(snakemake_provenance(job)), _job_name(job)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    terminal = sys.stderr
    with open(log_path, "a", encoding="utf-8") as log_file, _stderr_to(log_file), reading_session():
        with _handlers(log_file, terminal, name) as logger:
            try:
                verify_inputs([str(path) for path in inputs])
                yield logger
            except BaseException:
                logger.exception("rule failed")
                raise
            finally:
                if token is not None:
                    reset_provenance(token)
