"""Process trees found and stopped whole (Linux ``/proc``): what a GPU session starts never outlives it.

A stage of the session is a Snakemake run in a process group of its own; its jobs are Snakemake's children (its
group), and they may start processes of their own (torch's compile workers, a data loader). Signalling the group
alone misses a descendant that left it, and a job whose Snakemake died is reparented away from the tree. So the
session makes itself a *child subreaper* (orphans of its descendants become its children), and a stop signals every
process of the tree, found from ``/proc``, and every process group they lead, then kills what is left after a grace
period and reaps the orphans it adopted. Standard library only: the session imports this before the kit.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # what stops a session: its end, Ctrl-C, a closed terminal


class Interrupted(Exception):
    """One of :data:`SIGNALS` arrived (raised by :func:`raise_on_signals`'s handler, in the main thread)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted(signum)


def raise_on_signals() -> None:
    """From now on, each of :data:`SIGNALS` raises :class:`Interrupted` (no KeyboardInterrupt traceback)."""
    for signum in SIGNALS:
        signal.signal(signum, _interrupt)


def ignore_signals() -> None:
    """From now on, :data:`SIGNALS` are ignored: a second Ctrl-C does not cut the stop of what the first stops."""
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux prctl); whether that worked."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every process this one can see."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
        table[int(entry.name)] = (int(fields[1]), fields[0])
    return table


def descendants(roots: Iterable[int], table: dict[int, tuple[int, str]] | None = None) -> set[int]:
    """Every live (not zombie) process below ``roots``, the roots excluded."""
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return {pid for pid in found if table[pid][1] != "Z"}


def live(pids: Iterable[int]) -> set[int]:
    """Those of ``pids`` that still run (zombies and vanished processes left out)."""
    table = process_table()
    return {pid for pid in pids if pid in table and table[pid][1] != "Z"}


def reap_orphans(keep: Iterable[int] = ()) -> None:
    """Collect the exit status of this process's finished children, but for ``keep`` (those a Popen waits for)."""
    keep, me = set(keep), os.getpid()
    for pid, (parent, state) in process_table().items():
        if parent == me and state == "Z" and pid not in keep:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def signal_all(pids: Iterable[int], sig: int) -> None:
    """Send ``sig`` to each process and to each process group one of them leads (never this process's own)."""
    own = os.getpgrp()
    for pid in pids:
        try:
            if os.getpgid(pid) == pid and pid != own:
                os.killpg(pid, sig)
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _children(table: dict[int, tuple[int, str]]) -> set[int]:
    me = os.getpid()
    return {pid for pid, (parent, _) in table.items() if parent == me}


def stop_tree(root: int, grace: float = 10.0) -> bool:
    """SIGTERM to ``root``, everything below it and what it orphans (adopted by this process as their subreaper),
    SIGKILL to what still runs after ``grace`` seconds; whether all of it ended by itself (no SIGKILL needed)."""
    table = process_table()
    before = _children(table)  # this process's own children: never taken for orphans of the tree
    tree = signalled = {root} | descendants([root], table)
    signal_all(tree, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while True:
        table = process_table()
        adopted = _children(table) - before
        tree = live(tree | descendants(tree | adopted, table) | adopted)
        signal_all(tree - signalled, signal.SIGTERM)  # started while the tree stops (a job Snakemake just began)
        signalled = signalled | tree
        reap_orphans(before | {root})
        if not tree or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if tree:
        signal_all(tree, signal.SIGKILL)
        time.sleep(0.1)
        reap_orphans(before | {root})
    return not tree


def stop_descendants(grace: float = 5.0) -> None:
    """Stop everything below this process (the end of a session: nothing it started outlives it)."""
    for child in sorted(descendants([os.getpid()])):
        if child in live([child]):
            stop_tree(child, grace)
    reap_orphans()
