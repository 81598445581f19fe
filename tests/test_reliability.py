"""Nothing silently lost: output permissions, logs that keep everything, no orphan sidecars, byte-identical reruns."""

from __future__ import annotations

import ast
import errno
import os
import stat
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, snakemake

import maxmargin
from maxmargin.files import write_npz
from maxmargin.logs import rule_logging
from maxmargin.provenance import provenance_path
from maxmargin.tables import write_csv


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_outputs_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        write_csv(pd.DataFrame({"x": [1.0]}), tmp_path / "t.csv")
        write_npz({"a": np.zeros(2)}, tmp_path / "a.npz")
    finally:
        os.umask(old)
    for name in ("t.csv", "a.npz"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode


# The writes of the package that do not go through maxmargin.files.atomic_path, and why: a log is appended to as
# the job runs (a reader wants every line so far); the W history is appended to per epoch and cut back to the
# checkpoint's epochs on resume. The others write a temporary file and rename it by hand, or write in place: they
# belong in atomic_path, and stay listed until their modules may change.
NOT_ATOMIC = {
    ("logs.py", "rule_logging"): "an append-only log",
    ("gpu/request.py", "claim_out_dir"): "an append-only log (session.log)",
    ("experiments/vit/probes.py", "reset"): "the W history, append-only",
    ("experiments/vit/probes.py", "append"): "the W history, append-only",
    ("experiments/vit/probes.py", "truncate"): "the W history, cut back to the checkpoint's epochs",
}
# Calls that write a file: methods (whatever the object), functions of a module, open() in a writing mode.
WRITING_METHODS = {"write_text", "write_bytes", "to_csv", "savefig", "tofile", "fdopen"}
WRITING_FUNCTIONS = {("torch", "save"), ("np", "save"), ("np", "savez"), ("json", "dump"), ("shutil", "copyfile")}


def _writes(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else None
        mode = call.args[0] if func.attr == "open" and call.args else None
        in_memory = func.attr == "to_csv" and not call.args and "path_or_buf" not in {k.arg for k in call.keywords}
        return (
            (func.attr in WRITING_METHODS and not in_memory)
            or (owner, func.attr) in WRITING_FUNCTIONS
            or (isinstance(mode, ast.Constant) and bool(set(str(mode.value)) & set("wax+")))
        )
    mode = call.args[1] if isinstance(func, ast.Name) and func.id == "open" and len(call.args) > 1 else None
    return isinstance(mode, ast.Constant) and bool(set(str(mode.value)) & set("wax+"))


def _unguarded_writes(tree: ast.AST) -> set[str]:
    """The functions of a module that write a file outside a ``with atomic_path(...)`` block."""
    found: set[str] = set()

    def walk(node: ast.AST, guarded: bool, function: str) -> None:
        if isinstance(node, ast.With):
            calls = [item.context_expr for item in node.items if isinstance(item.context_expr, ast.Call)]
            guarded = guarded or any(getattr(c.func, "id", getattr(c.func, "attr", "")) == "atomic_path" for c in calls)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Call) and not guarded and _writes(node):
            found.add(function)
        for child in ast.iter_child_nodes(node):
            walk(child, guarded, function)

    walk(tree, False, "<module>")
    return found


def test_a_full_disk_is_named_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails on a full disk says "No space left on device" and names the file, whatever the writer
    raised (torch.save: "basic_ios::clear: iostream error"); with room left, the writer's own error stands. Neither
    leaves a file behind."""
    from maxmargin import files

    def failing_write(path: Path) -> None:
        with files.atomic_path(path) as tmp:
            tmp.write_bytes(b"the first blocks")
            raise RuntimeError("basic_ios::clear: iostream error")

    monkeypatch.setattr(files.shutil, "disk_usage", lambda folder: SimpleNamespace(total=2**30, used=2**30, free=0))
    with pytest.raises(OSError, match=r"^\[Errno 28\] No space left on device while writing .*snapshots\.pt \(basic"):
        failing_write(tmp_path / "snapshots.pt")
    monkeypatch.setattr(files.shutil, "disk_usage", lambda folder: SimpleNamespace(total=2**30, used=0, free=2**30))
    with pytest.raises(RuntimeError, match="basic_ios::clear"):
        failing_write(tmp_path / "snapshots.pt")
    assert list(tmp_path.iterdir()) == []


def test_a_table_write_on_a_full_disk_names_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python's own write on a full disk raises a bare "[Errno 28] No space left on device" naming no file (the disk
    may show room again by the time it is read: another job's file removed); the table writer's error names the
    table, and leaves no file behind."""
    from maxmargin import files, tables

    def no_space(self: Path, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.shutil, "disk_usage", lambda folder: SimpleNamespace(total=2**30, used=0, free=2**30))
    monkeypatch.setattr(Path, "write_bytes", no_space)
    target = tmp_path / "tables" / "anything.csv"
    with pytest.raises(OSError, match=r"^\[Errno 28\] No space left on device while writing .*tables/anything\.csv$"):
        tables.write_csv(pd.DataFrame({"x": [1.0]}), target)
    assert list((tmp_path / "tables").iterdir()) == []


def test_every_file_the_package_writes_goes_through_atomic_path() -> None:
    """A killed job never leaves half a file that looks whole: every write is a temporary file that replaces its
    target when complete (maxmargin.files.atomic_path), but the listed ones."""
    package = Path(maxmargin.__file__).parent
    found = {
        (path.relative_to(package).as_posix(), function)
        for path in sorted(package.rglob("*.py"))
        for function in _unguarded_writes(ast.parse(path.read_text()))
    }
    unguarded = sorted(found - set(NOT_ATOMIC))
    assert not unguarded, f"write these through maxmargin.files.atomic_path: {unguarded}"
    assert set(NOT_ATOMIC) <= found, f"no longer written outside atomic_path: {sorted(set(NOT_ATOMIC) - found)}"


def test_the_write_finder_sees_each_kind_of_write() -> None:
    for line in ("p.write_text('x')", "torch.save(s, p)", "open(p, 'wb')", "p.open('a')", "frame.to_csv(p)"):
        assert _unguarded_writes(ast.parse(f"def f():\n    {line}\n")) == {"f"}, line
    guarded = "def f():\n    with atomic_path(p) as tmp:\n        torch.save(s, tmp)\n"
    assert not _unguarded_writes(ast.parse(guarded))
    assert not _unguarded_writes(ast.parse("def f():\n    open(p)\n    s.replace('a', 'b')\n    t = frame.to_csv()\n"))


def test_npz_is_byte_reproducible(tmp_path: Path) -> None:
    arrays = {"maps": np.arange(12.0).reshape(3, 4), "epochs": np.array([0, 5])}
    write_npz(arrays, tmp_path / "a.npz")
    first = (tmp_path / "a.npz").read_bytes()
    os.utime(tmp_path / "a.npz", (0, 0))
    write_npz(arrays, tmp_path / "a.npz")
    assert (tmp_path / "a.npz").read_bytes() == first
    np.testing.assert_array_equal(np.load(tmp_path / "a.npz")["maps"], arrays["maps"])


def test_rule_log_keeps_stderr_warnings_and_earlier_attempts(tmp_path: Path, capsys) -> None:
    log = tmp_path / "rule.log"
    with rule_logging(str(log)) as logger:
        logger.info("attempt 1")
    with rule_logging(str(log)) as logger:
        logger.info("attempt 2")
        print("a message from torch", file=sys.stderr)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a library warning", UserWarning, stacklevel=1)
    text = log.read_text()
    for line in ("attempt 1", "attempt 2", "a message from torch", "a library warning"):
        assert line in text
    # ... and the terminal still sees what went to stderr
    assert "a message from torch" in capsys.readouterr().err


def test_a_failing_job_leaves_its_traceback_and_no_orphan_sidecar(tmp_path: Path) -> None:
    table = tmp_path / "tables" / "t.csv"
    table.parent.mkdir()
    provenance_path(table).write_text("{}")  # left by an earlier run whose table Snakemake has since deleted
    job = SimpleNamespace(
        output=[str(table)],
        log=[str(tmp_path / "rule.log")],
        rule="directions_table",
        wildcards={},
        params={},
        config={},
    )
    with pytest.raises(ZeroDivisionError), rule_logging(job):
        1 / 0  # noqa: B018
    assert not provenance_path(table).exists()
    assert "ZeroDivisionError" in (tmp_path / "rule.log").read_text()


@pytest.mark.slow
def test_forced_rerun_is_byte_identical(workflow_dir: Path) -> None:
    snakemake(workflow_dir, "fig4")
    outputs = sorted(p for p in (workflow_dir / "results").rglob("*") if p.is_file() and _compared(p))
    assert any(p.suffix == ".pdf" for p in outputs) and any(p.suffix == ".png" for p in outputs)
    before = {p: p.read_bytes() for p in outputs}
    snakemake(workflow_dir, "--forceall", "--", "fig4")
    changed = [str(p.relative_to(workflow_dir)) for p in outputs if p.read_bytes() != before[p]]
    assert not changed, f"a forced rerun changed {changed}"


def _compared(path: Path) -> bool:
    """Every output but logs and benchmarks (wall-clock times by nature)."""
    return not {"logs", "benchmarks"} & set(path.parts)


def test_snakefile_run_from_another_directory_finds_its_config(workflow_dir: Path, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    proc = snakemake(elsewhere, "-s", str(workflow_dir / "Snakefile"), "--directory", str(elsewhere), "-n", "fig4")
    assert "synthetic" in proc.stdout and "fig4" in proc.stdout


@pytest.mark.slow
def test_a_missing_logger_plugin_is_documented_with_what_to_install(workflow_dir: Path) -> None:
    """Without the terminal's plugin, Snakemake stops on the profile's `logger` before reading the workflow; the
    last line it prints is quoted in docs/running.md, with the command that installs the plugin."""
    profile = workflow_dir / "workflow/profiles/default/config.yaml"
    text = profile.read_text()
    assert "logger: [maxmargin]" in text
    profile.write_text(text.replace("logger: [maxmargin]", "logger: [maxmargin_absent]"))
    proc = snakemake(workflow_dir, "-n", check=False)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and "invalid choice: 'maxmargin_absent'" in last
    docs = (REPO / "docs/running.md").read_text()
    assert last.split(" (choose")[0].replace("maxmargin_absent", "maxmargin") in " ".join(docs.split())
    assert "`pip install ./workflow/logger`" in docs and (REPO / "workflow/logger/pyproject.toml").is_file()
