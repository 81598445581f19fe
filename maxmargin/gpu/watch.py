"""A GPU session's stages watched through their rule logs (docs/gpu.md, "Run" and "Probe").

The lines of a rule log, with their times (:func:`stamped`), give where a job is: the training's epochs
(:func:`run_projection`) and the probe's heads (:func:`probe_projection`), each with its rate and projected end
against its stage's limit, logged as they come and kept in session.json (:class:`RunWatch`, :class:`ProbeWatch`);
and what the training job did in a stage, by its own word (:func:`job_work`: trained from which epoch, restored, or
nothing), never a file's time. Standard library only.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from maxmargin.gpu import processes
from maxmargin.gpu.plan import MEASURED
from maxmargin.gpu.record import Session

_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")
_EPOCH = re.compile(r" epoch (\d+): train loss ")
_HEADS = re.compile(r"W-ATT-SVM probe: heads (\d+)/(\d+)")
_PROBE_START = re.compile(r" INFO snapshots of epochs ")


def stamped(lines: Iterable[str], since: float = -math.inf) -> list[tuple[float, str]]:
    """The lines of a rule log (``2026-11-26 23:30:06,288 INFO ...``, the machine's local time) with their time in
    seconds since the epoch, from ``since`` on (an earlier attempt's lines left out)."""
    out = []
    for line in lines:
        m = _STAMP.match(line)
        if m:
            t = time.mktime(time.strptime(m[1], "%Y-%m-%d %H:%M:%S")) + int(m[2]) / 1000
            if t >= since:
                out.append((t, line))
    return out


@dataclass(frozen=True)
class Progressing:
    """Where a stage's job is, from its log's lines: ``done`` of ``total`` (epochs or heads) at time ``at``, going
    at ``rate`` per second since ``since`` (of ``done - since_done`` of them), so that it ends at ``end``."""

    done: int
    total: int
    at: float
    rate: float
    since: float
    since_done: int

    @property
    def end(self) -> float:
        return self.at + (self.total - self.done) / self.rate if self.rate > 0 else math.inf

    def by(self, when: float) -> int:
        """How many are done by ``when`` at this rate."""
        return min(self.total, self.done + max(0, math.floor((when - self.at) * self.rate)))


def run_projection(lines: Iterable[str], total: int, since: float = -math.inf, few: int = 3) -> Progressing | None:
    """The training's rate and end from its rule log's epoch lines (those read back from a checkpoint left out):
    the rate of the epochs after the first two of this job (the first carries the evaluation's compilation or a
    resumed run's training's, the second the training's), once ``few`` of them are done; None before. Every row
    and checkpoint of those epochs is in the rate. An epoch past ``total`` is no line of this run (another run
    writing into the same results root from another working directory: docs/gpu.md): left out."""
    points = [
        (t, int(m[1]))
        for t, line in stamped(lines, since)
        if (m := _EPOCH.search(line)) and "(from the checkpoint)" not in line and int(m[1]) <= total
    ]
    if len(points) < 2 + few:
        return None
    (t0, e0), (t1, e1) = points[1], points[-1]
    return Progressing(e1, total, t1, (e1 - e0) / max(t1 - t0, 1e-9), t0, e0)


def probe_projection(lines: Iterable[str], since: float = -math.inf) -> tuple[float | None, Progressing | None]:
    """The probe's start (its line naming the snapshots: the data and the snapshots read) and its rate and end from
    its heads' progress lines (at most one every 30 s: :class:`maxmargin.core.progress.Progress`); None for what
    its log does not say yet."""
    started, last = None, None
    for t, line in stamped(lines, since):
        if _PROBE_START.search(line):
            started = t
        elif (m := _HEADS.search(line)) and started is not None:
            last = (t, int(m[1]), int(m[2]))
    if started is None or last is None:
        return started, None
    t, done, total = last
    return started, Progressing(done, total, t, done / max(t - started, 1e-9), started, 0)


@dataclass(frozen=True)
class JobWork:
    """What a stage's training job did, by its own rule log (:func:`job_work`): the first epoch it trained (None:
    none), and whether it restored a finished run's outputs from its checkpoint instead."""

    trained_from: int | None
    restored: bool = False


_RESUMED = re.compile(r" INFO resuming from .* at epoch (\d+)$")
_RESTORED = " INFO restoring the outputs of the finished run "


def job_work(lines: Iterable[str], since: float) -> JobWork:
    """What the training job did, by its rule log's lines from ``since`` on (the stage's start: an earlier job's
    lines left out). It trained from epoch 0 where its first metrics row is its own (a fresh start: the
    initialisation), from k + 1 where it says it resumed at epoch k; it trained nothing where it restored a finished
    run, where it wrote no line (it did not run: Snakemake had nothing to do) or failed before its first row. The
    job's word, not a file's time: a checkpoint taken back from aside, or a file copied in, is not this session's
    training."""
    for _, line in stamped(lines, since):
        if _RESTORED in line:
            return JobWork(None, restored=True)
        if m := _RESUMED.search(line):
            return JobWork(int(m[1]) + 1)
        if (m := _EPOCH.search(line)) and "(from the checkpoint)" not in line:
            return JobWork(int(m[1]))
    return JobWork(None)


def read_job_work(log: Path, since: float) -> JobWork:
    """What the run's training job did in this stage (trained from which epoch, restored, or nothing), by its rule
    log's lines from ``since`` on: the job's own word (:func:`job_work`), never a file's time."""
    if not log.is_file():
        return JobWork(None)
    return job_work(log.read_text(errors="replace").splitlines(), since)


class RunWatch:
    """The run's rule log read while it trains: after a few epochs, its measured rate, projected end and whether
    that fits the stage's limit, logged then (and every minute) and kept in session.json's ``run``."""

    def __init__(self, s: Session, log: Path, epochs: int, since: float, reserve: float) -> None:
        self.s, self.log, self.epochs, self.since = s, log, epochs, since
        self.limit = s.deadline - 0.5 * reserve  # the run's stage is cut there
        self.after = MEASURED.job_end_s + MEASURED.table_s  # its last epoch to the stage's end
        self.next, self.last = 0.0, None

    def __call__(self, force: bool = False) -> None:
        if not self.log.is_file() or (time.time() < self.next and not force):
            return
        lines = self.log.read_text(errors="replace").splitlines()
        p = run_projection(lines, self.epochs, since=self.since)
        if p is None or p == self.last:
            return
        self.next, self.last = time.time() + 60.0, p
        s, end = self.s, p.end + self.after
        record = {
            "at": round(p.at - s.start, 1),
            "epoch": p.done,
            "seconds_per_epoch": round(1 / p.rate, 4),
            "over_epochs": [p.since_done + 1, p.done],
            "end": round(end - s.start, 1),
            "limit": round(self.limit - s.start, 1),
            "fits": end <= self.limit,
        }
        s.summary["run"].setdefault("first_projection", record)
        s.summary["run"]["projection"] = record
        verdict = (
            f"within the stage's limit at {self.limit - s.start:.0f} s ({self.limit - end:.0f} s to spare)"
            if end <= self.limit
            else f"past the stage's limit at {self.limit - s.start:.0f} s: it is cut there, at about epoch "
            f"{p.by(self.limit - self.after)}, and its checkpoint's epochs come back"
        )
        s.log(
            f"run: epoch {p.done} of {p.total} at {p.at - s.start:.0f} s, {1 / p.rate:.2f} s an epoch over epochs "
            f"{p.since_done + 1}-{p.done} (rows and checkpoints included): it ends at about {end - s.start:.0f} s, "
            f"{verdict}"
        )
        s.save()

    def final(self) -> None:
        """The last projection, once the stage has ended (its last lines read)."""
        last_read(self.s, "run", lambda: self(force=True))


def last_read(s: Session, what: str, read: Callable[[], None]) -> None:
    """A watch's last reading of its log, after its stage: a note, never the session's end."""
    try:
        read()
    except processes.Interrupted:
        raise
    except Exception as err:  # noqa: BLE001 - whatever a damaged log raises
        s.log(f"{what}: its log could not be read ({type(err).__name__}: {err})")


class ProbeWatch:
    """The probe's rule log read while it runs: its start (the data and snapshots read) and, from its heads'
    progress lines, its rate and projected end against its limit; kept in session.json's ``probe``."""

    def __init__(self, s: Session, log: Path, since: float, limit: float) -> None:
        self.s, self.log, self.since, self.limit = s, log, since, limit
        self.started, self.last = None, None

    def final(self) -> None:
        last_read(self.s, "probe", self)

    def __call__(self) -> None:
        if not self.log.is_file():
            return
        started, p = probe_projection(self.log.read_text(errors="replace").splitlines(), self.since)
        s, probe = self.s, self.s.summary["probe"]
        if started is not None and self.started is None:
            self.started = started
            probe["job_start"] = round(started - self.since, 1)
            s.log(f"probe: its job read the data and the snapshots {started - self.since:.0f} s after the stage began")
        if p is None or p == self.last:
            return
        self.last = p
        probe.update(heads_done=p.done, heads=p.total, seconds_per_head=round(1 / p.rate, 2))
        probe.update(end=round(p.end - s.start, 1), limit=round(self.limit - s.start, 1))
        verdict = "before" if p.end <= self.limit else "after"
        s.log(
            f"probe: {p.done} of {p.total} heads in {p.at - started:.0f} s ({1 / p.rate:.1f} s a head): it ends at "
            f"about {p.end - s.start:.0f} s, {verdict} its limit at {self.limit - s.start:.0f} s"
        )
        s.save()
