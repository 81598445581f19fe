"""CONTRIBUTING.md is executable: its steps, followed block by block in a copy of the repository, add a synthetic
figure and a census panel whose targets build and whose registry tests pass, within the files it promises."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE

# Block info strings: "LANG append PATH", "LANG insert PATH NAME" (a tuple of a module, or a top-level section of a
# YAML file), "bash run". Sections of the page: "## Add ...".
BLOCK = re.compile(r"^```(\w+) (append|insert|run)([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
# At most this many files per example (issue 26: a synthetic figure with its own caption: 3; a panel: 2).
LIMITS = {"Add a synthetic figure": 3, "Add a panel": 2}


def steps(text: str) -> dict[str, list[tuple[str, list[str], str]]]:
    """Section title -> its blocks (action, arguments, body), in order."""
    found: dict[str, list[tuple[str, list[str], str]]] = {}
    for part in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        title = part.splitlines()[0]
        found[title] = [(m[2], m[3].split(), m[4]) for m in BLOCK.finditer(part)]
    return found


def insert_into_tuple(source: str, name: str, body: str) -> str:
    """``body`` before the closing parenthesis of the tuple assigned to ``name``."""
    node = next(
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.Assign | ast.AnnAssign)
        and name in [t.id for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)]
    )
    lines = source.splitlines(keepends=True)
    closing = node.end_lineno - 1  # the line of the closing parenthesis
    return "".join(lines[:closing]) + body + "".join(lines[closing:])


def insert_into_section(source: str, section: str, body: str) -> str:
    """``body`` at the end of the top-level YAML ``section`` (before the comments of the next one)."""
    lines = source.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{section}:"))
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^[A-Za-z_]", lines[i])), len(lines))
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return "".join(lines[:end]) + body + "".join(lines[end:])


def apply(work: Path, action: str, args: list[str], body: str, env: dict[str, str]) -> set[str]:
    """Carry out one block; the files it touched."""
    if action == "run":
        for command in body.splitlines():
            words = command.split()
            program = {"snakemake": str(SNAKEMAKE), "python": sys.executable}[words[0]]
            proc = subprocess.run(
                [program, *words[1:]], cwd=work, env=env, capture_output=True, text=True, timeout=1200
            )
            assert proc.returncode == 0, f"{command}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return set()
    path = work / args[0]
    text = path.read_text()
    if body.strip() in text:  # followed before: the tree holds it already (the test must not depend on that)
        return {args[0]}
    if action == "append":
        text = text.rstrip("\n") + "\n\n\n" + body
    elif path.suffix == ".py":
        text = insert_into_tuple(text, args[1], body)
    else:
        text = insert_into_section(text, args[1], body)
    path.write_text(text)
    return {args[0]}


def test_blocks_are_found_and_the_inserts_work():
    sections = steps((REPO / "CONTRIBUTING.md").read_text())
    for prefix in LIMITS:
        (title,) = [t for t in sections if t.startswith(prefix)]
        assert any(action == "run" for action, _, _ in sections[title])
    source = "X = (\n    1,\n)\nY = 2\n"
    assert insert_into_tuple(source, "X", "    3,\n") == "X = (\n    1,\n    3,\n)\nY = 2\n"
    yaml = "a:\n  b: 1\n\n# c\nc: 2\n"
    assert insert_into_section(yaml, "a", "  d: 3\n") == "a:\n  b: 1\n  d: 3\n\n# c\nc: 2\n"


@pytest.mark.slow
def test_contributing_steps_leave_ci_green(tmp_path):
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    work = tmp_path / "repo"
    for name in tracked.splitlines():
        source, target = REPO / name, work / name
        if not source.exists() and not source.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    env = {**os.environ, "PYTHONPATH": str(work)}
    for title, blocks in steps((REPO / "CONTRIBUTING.md").read_text()).items():
        limit = next((n for prefix, n in LIMITS.items() if title.startswith(prefix)), None)
        if limit is None:
            continue
        touched: set[str] = set()
        for action, args, body in blocks:
            touched |= apply(work, action, args, body, env)
        assert len(touched) <= limit, f"{title}: {sorted(touched)}"
        assert touched, title
    figures = work / "results" / "figures"
    for panel in ("circle", "census_saturation"):
        assert (figures / f"{panel}.png").stat().st_size > 10_000


def test_following_the_guide_twice_adds_each_block_once(tmp_path):
    """A contributor who applied the examples and then runs the tests: the steps find their blocks in place."""
    sections = steps((REPO / "CONTRIBUTING.md").read_text())
    (title,) = [t for t in sections if t.startswith("Add a panel")]
    work = tmp_path / "repo"
    target = "maxmargin/figures/census.py"
    (work / target).parent.mkdir(parents=True)
    (work / target).write_text((REPO / target).read_text())
    (_, args, body) = next(block for block in sections[title] if block[0] == "append")
    assert apply(work, "append", args, body, {}) == {target}
    once = (work / target).read_text()
    assert apply(work, "append", args, body, {}) == {target} and (work / target).read_text() == once
