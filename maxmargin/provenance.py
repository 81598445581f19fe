"""Provenance records: what produced a table or a figure (rule, config values, seeds, versions, commit)."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PACKAGES = (
    "maxmargin",
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "scikit-learn",
    "cvxopt",
    "torch",
    "torchvision",
    "timm",
    "snakemake",
)


def _plain(value: Any) -> Any:
    """Snakemake's Namedlist / Params / config objects as plain JSON-able values."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "items") and callable(value.items):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


@functools.cache
def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@functools.cache
def git_commit(path: str = ".") -> dict[str, Any]:
    """The commit of the checkout that ran the job, and whether it had uncommitted changes."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = (
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=path,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            != ""
        )
        return {"git_commit": commit, "git_dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": "unknown (not a git checkout)", "git_dirty": None}


def snakemake_provenance(smk: Any) -> dict[str, Any]:
    """The provenance of the job a Snakemake ``script:`` runs in: rule, wildcards, params, config, versions."""
    repo = str(Path(__file__).resolve().parents[1])
    return {
        "rule": getattr(smk, "rule", None),
        "wildcards": _plain(dict(smk.wildcards.items())),
        "params": _plain(dict(smk.params.items())),
        "config": _plain(smk.config),
        "python": platform.python_version(),
        "packages": package_versions(),
        **git_commit(repo),
    }
