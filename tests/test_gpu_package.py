"""The GPU session's package (maxmargin/gpu/, docs/gpu.md) as a whole: what it imports before the kit is there, where
its paths come from, and its command line outside a repository. Its behaviour, stage by stage and rehearsed whole on
the CPU, is tests/test_gpu_kit.py's."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO

from maxmargin import registry
from maxmargin.gpu import paths, processes, request, session

PACKAGE = REPO / "maxmargin"
# What `python -m maxmargin.gpu` imports before the kit's wheels are installed (the device's numbers are measured by
# `python -m maxmargin.gpu.device`, which imports torch inside its function).
ENTRY_POINTS = ("maxmargin.gpu.__main__", "maxmargin.gpu.device")


def _source(module: str) -> Path:
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    return path if path.is_file() else path.with_suffix("") / "__init__.py"


def _top_level_imports(module: str) -> set[str]:
    """The modules ``module`` imports when it is imported: its module-level imports, not those inside a function or
    under ``if TYPE_CHECKING:`` (annotations only)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, f"{module}: a relative import (the package imports by absolute names)"
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names if _source(f"{node.module}.{a.name}").exists())
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(_source(module).read_text()))
    return found


def imported_before_the_kit() -> dict[str, set[str]]:
    """Every module of this package that the entry points import at import time, followed from module to module
    (a package's ``__init__`` included), with the libraries each imports."""
    todo, seen, libraries = list(ENTRY_POINTS), set(), {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages' __init__
        imports = _top_level_imports(module)
        todo += [m for m in imports if m.split(".")[0] == "maxmargin" and _source(m).exists()]
        libraries[module] = {m.split(".")[0] for m in imports} - {"maxmargin", "__future__"}
    return libraries


def test_the_session_imports_the_standard_library_only_before_the_kit() -> None:
    """The node has no Snakemake, pandera, cvxopt (nor, on some nodes, PyYAML) until the session installs the kit: what
    `python -m maxmargin.gpu` imports at start-up is the standard library and this package's plain modules (the
    registry, the atomic writes); the rest is imported inside the functions that run after the install."""
    libraries = imported_before_the_kit()
    assert {"maxmargin.gpu.session", "maxmargin.gpu.stages", "maxmargin.registry"} <= set(libraries)
    wrong = {m: sorted(libs - set(sys.stdlib_module_names)) for m, libs in libraries.items()}
    assert not {m: libs for m, libs in wrong.items() if libs}, wrong


def test_the_session_types_no_path_the_registry_declares() -> None:
    """The run's checkpoint and every table the session reads come from the registry (maxmargin/gpu/paths.py); no
    module of the package types a path under the results root's tables/ or runs/."""
    typed = {
        (path.name, node.value)
        for path in sorted((PACKAGE / "gpu").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.match(r"(tables|runs)/", node.value)
    }
    assert not typed, typed
    assert paths.CHECKPOINT == registry.vit.CHECKPOINTS["vit_train"]
    assert (paths.METRICS, paths.SIDECAR) == ("tables/vit_metrics.csv", "tables/vit_metrics.json")
    assert (paths.PILOT, paths.BASELINE, paths.W_SVM, paths.RAY) == tuple(
        registry.table(name).pattern for name in ("vit_pilot", "vit_baseline", "vit_w_svm", "vit_decisive_ray")
    )
    with pytest.raises(ValueError, match="vit_pilot has no .json file"):
        paths.table_file("vit_pilot", "json")


@pytest.mark.parametrize(
    ("rule", "log"),
    [
        ("vit_train", paths.TRAIN_LOG),
        ("vit_pilot_run", paths.PILOT_LOG),
        ("vit_probe", paths.PROBE_LOG),
        ("vit_decisive_ray", paths.RAY_LOG),
    ],
)
def test_the_logs_the_session_watches_are_the_rules_logs(rule: str, log: str) -> None:
    """The rule logs the session reads (the registry declares no logs) are the ``log:`` of their rules in
    workflow/rules/vit.smk: a renamed log fails here, not as a session that never sees its run's epochs."""
    text = (REPO / "workflow/rules/vit.smk").read_text()
    block = re.search(rf"^rule {rule}:\n(.*?)(?=^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    assert block, f"no rule {rule} in vit.smk"
    assert re.search(rf'^    log:\n        results_path\("{re.escape(log)}"\)', block[1], re.MULTILINE), (rule, log)


def test_outside_a_repository_the_command_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m maxmargin.gpu` runs in the repository's root (tools/gpu_session.sh goes there): elsewhere it is
    refused before OUT_DIR is touched, naming the fix."""
    monkeypatch.setattr(processes, "raise_on_signals", lambda: None)  # this test's process keeps its own handlers
    monkeypatch.chdir(tmp_path)
    assert session.main([str(tmp_path / "out"), "9"]) == request.EXIT_USAGE
    assert "holds no Snakefile: run from the repository's root" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
