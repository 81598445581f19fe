"""Checks on the cluster a SLURM run is about to use (docs/cluster.md), run by the Snakefile's ``onstart``.

A SLURM cluster without an accounting database (``AccountingStorageType=accounting_storage/none``) still has the
``sacct`` program, so snakemake-executor-plugin-slurm picks it as the status command; ``sacct`` then lists no job,
the plugin takes every job for "not yet in the database", and Snakemake waits forever without printing another line
(and ignores SIGTERM while it waits). Stopped at the start instead, with the fix.
"""

from __future__ import annotations

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


def status_command_problem(status_command: str | None, scontrol_config: str) -> str | None:
    """Why this status command would leave Snakemake waiting forever on this cluster, or None when it would not."""
    if status_command != "sacct" or accounting_storage(scontrol_config) != NO_ACCOUNTING:
        return None
    return (
        "this SLURM cluster has no accounting database (AccountingStorageType=accounting_storage/none), but job "
        "status would be queried with sacct: sacct lists no job there, and Snakemake would wait forever after the "
        "jobs end. Add --slurm-status-command squeue (docs/cluster.md)."
    )


def check_slurm_status_command(workflow: Any) -> None:
    """Raise before the first submission when a SLURM run would hang on its status command (see the module doc)."""
    plugin = getattr(workflow, "executor_plugin", None)
    if getattr(plugin, "name", None) != "slurm":
        return
    status_command = getattr(getattr(workflow, "executor_settings", None), "status_command", None)
    try:
        config = subprocess.run(
            ["scontrol", "show", "config"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return  # no answer: the plugin's own checks report an unreachable controller
    problem = status_command_problem(status_command, config)
    if problem is not None:
        raise RuntimeError(problem)
