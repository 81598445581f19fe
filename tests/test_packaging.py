"""environment.yml (the conda route) stays in step with pyproject.toml (the pip route)."""

from __future__ import annotations

import re
import tomllib

import yaml
from conftest import REPO


def _split(requirement: str) -> tuple[str, str]:
    name, spec = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", requirement.strip()).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = dict(_split(r) for r in project["dependencies"] + project["optional-dependencies"]["test"])
    env = yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]
    conda = [d for d in env if isinstance(d, str) and not d.startswith(("python=", "pip"))]
    pip = next(d["pip"] for d in env if isinstance(d, dict))
    listed = dict(_split(r) for r in conda + [p for p in pip if not p.startswith("-e")])
    assert listed == wanted
    assert "-e ." in pip
