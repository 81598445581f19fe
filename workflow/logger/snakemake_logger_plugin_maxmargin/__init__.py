"""The workflow's terminal: what runs, how far along the run is, what failed; Snakemake's full output one flag away.

A Snakemake logger plugin (``--logger maxmargin``, set by the workflow profile). During a run it prints one line when
a job starts (its rule and wildcards) and one when it ends (jobs done of the total, the job's time), the job counts
once, and drops the scheduler's chatter ("Select jobs to execute...", resources, host). Errors, warnings and every
message it does not know are printed as Snakemake prints them, failed logs included; ``--verbose`` and dry runs
(``-n``) print everything as Snakemake does. The jobs' own progress lines (time left of long jobs) reach the terminal
from the jobs themselves (maxmargin.logs).
"""

from __future__ import annotations

import logging
import re
import sys
import time
from typing import Any

from snakemake.logging import ColorizingTextHandler, DefaultFilter, DefaultFormatter, get_event
from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

__all__ = ["LogHandler"]

# Messages of a run that say nothing a user acts on (the job lines say what runs).
_CHATTER = re.compile(
    r"^(Building DAG of jobs|Using shell:|Select jobs to execute|Execute \d+ jobs|host:|Assuming unrestricted shared "
    r"filesystem|Conda environments: ignored|Singularity containers: ignored|Provided cores|Rules claiming more "
    r"threads|Using workflow specific profile|Job stats:|Waiting for more resources)"
)
_COMPACT = {LogEvent.JOB_INFO, LogEvent.JOB_STARTED, LogEvent.JOB_FINISHED, LogEvent.PROGRESS, LogEvent.RUN_INFO}


def _wildcards(value: Any) -> str:
    items = value.items() if hasattr(value, "items") else []
    return " ".join(f"{k}={v}" for k, v in items)


class LogHandler(LogHandlerBase):
    """Compact lines for the events of a run; Snakemake's own handler (``self.full``) for everything else."""

    def __post_init__(self) -> None:
        s = self.common_settings
        self.full = ColorizingTextHandler(nocolor=s.nocolor, stream=sys.stdout if s.stdout else sys.stderr)
        self.full.setFormatter(DefaultFormatter(s.quiet, s.show_failed_logs))
        self.full.addFilter(DefaultFilter(s.quiet, s.debug_dag, s.dryrun, s.printshellcmds))
        self.compact = not (s.verbose or s.dryrun)
        self.jobs: dict[int, tuple[str, float]] = {}  # job id -> (rule and wildcards, start time)
        self.finished: list[int] = []

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False

    def emit(self, record: logging.LogRecord) -> None:
        event = get_event(record)
        if not self.compact or record.levelno >= logging.WARNING:
            self.full.handle(record)  # Snakemake's filter and format: the quiet settings still apply
        elif not self.full.filter(record):
            return
        elif event in _COMPACT:
            self._compact(event, record)
        elif event == LogEvent.RESOURCES_INFO:
            return  # cores and nodes: given on the command line
        elif event is not None or not _CHATTER.match(str(record.msg or "")):
            self.full.handle(record)

    def _compact(self, event: LogEvent, record: logging.LogRecord) -> None:
        if event == LogEvent.RUN_INFO:
            stats = getattr(record, "stats", {}) or {}
            rules = ", ".join(f"{rule} x{n}" for rule, n in stats.items() if rule != "total")
            self._line(f"{stats.get('total', sum(stats.values()))} jobs to run: {rules}")
        elif event == LogEvent.JOB_INFO:
            name = " ".join(filter(None, [record.rule_name, _wildcards(record.wildcards)]))
            self.jobs[record.jobid] = (name, time.monotonic())
            self._line(f"start {name}")
        elif event == LogEvent.JOB_FINISHED:
            self.finished.append(record.job_id)
        elif event == LogEvent.PROGRESS:
            for jobid in self.finished:
                name, start = self.jobs.pop(jobid, (f"job {jobid}", time.monotonic()))
                self._line(f"done  {name} in {time.monotonic() - start:.0f} s [{record.done}/{record.total} jobs]")
            self.finished.clear()

    def _line(self, text: str) -> None:
        self.full.stream.write(f"{time.strftime('%H:%M:%S')} {text}\n")
        self.full.flush()
