"""Checks on the cluster a SLURM run is about to use (docs/cluster.md), run by the Snakefile's ``onstart``.

A SLURM cluster without an accounting database (``AccountingStorageType=accounting_storage/none``) still has the
``sacct`` program, so snakemake-executor-plugin-slurm picks it as the status command; ``sacct`` then lists no job,
the plugin takes every job for "not yet in the database", and Snakemake waits forever without printing another line
(and ignores SIGTERM while it waits). Stopped at the start instead, with the fix. The same hang follows
``--slurm-status-command squeue`` where ``MinJobAge`` is below 3 times the first status-check delay: the plugin then
switches back to sacct.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

NO_ACCOUNTING = "accounting_storage/none"


def accounting_storage(scontrol_config: str) -> str | None:
    """``AccountingStorageType`` from the output of ``scontrol show config`` (None when absent)."""
    for line in scontrol_config.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "AccountingStorageType":
            return value.strip()
    return None


def min_job_age(scontrol_config: str) -> int | None:
    """``MinJobAge`` in seconds from the output of ``scontrol show config`` (None when absent)."""
    match = re.search(r"^MinJobAge\s*=\s*(\d+)", scontrol_config, re.MULTILINE)
    return int(match[1]) if match else None


def status_command_problem(status_command: str | None, scontrol_config: str, init_seconds: int) -> str | None:
    """Why this status command would leave Snakemake waiting forever on this cluster, or None when it would not.

    ``init_seconds``: the plugin's first status-check delay; squeue needs MinJobAge >= 3 times it, or the plugin
    switches back to sacct.
    """
    if accounting_storage(scontrol_config) != NO_ACCOUNTING:
        return None
    age = min_job_age(scontrol_config)
    if status_command == "squeue" and (age is None or age >= 3 * init_seconds):
        return None
    return (
        "this SLURM cluster has no accounting database (AccountingStorageType=accounting_storage/none), but job "
        "status would be queried with sacct: sacct lists no job there, and Snakemake would wait forever after the "
        f"jobs end. Add --slurm-status-command squeue (docs/cluster.md); squeue needs MinJobAge ({age} s here) of "
        f"at least 3 x --slurm-init-seconds-before-status-checks ({init_seconds} s)."
    )


def check_slurm_status_command(workflow: Any) -> None:
    """Raise before the first submission when a SLURM run would hang on its status command (see the module doc)."""
    plugin = getattr(workflow, "executor_plugin", None)
    if getattr(plugin, "name", None) != "slurm":
        return
    settings = getattr(workflow, "executor_settings", None)
    status_command = getattr(settings, "status_command", None)
    init_seconds = getattr(settings, "init_seconds_before_status_checks", None) or 40
    try:
        config = subprocess.run(
            ["scontrol", "show", "config"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return  # no answer: the plugin's own checks report an unreachable controller
    problem = status_command_problem(status_command, config, init_seconds)
    if problem is not None:
        raise RuntimeError(problem)
