"""The maths as a library: the examples of maxmargin.core run, the README's session runs, docs/api.md is current, and
`pip install .` installs the maths alone (no torch, timm, Snakemake, pandas or matplotlib)."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from packaging.requirements import Requirement

import maxmargin.core as core
from maxmargin.docs import api_docs

MODULES = sorted(info.name for info in pkgutil.iter_modules(core.__path__))
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
# Every public function of the maths shows itself at work (the README's front door); the result classes aside.
PUBLIC_FUNCTIONS = sorted(name for name in core.__all__ if inspect.isfunction(getattr(core, name)))
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# What the pipeline adds to the maths: never needed by `import maxmargin.core`.
PIPELINE_ONLY = ("torch", "torchvision", "timm", "snakemake", "pandas", "pandera", "matplotlib", "PIL", "yaml")
IMPORT_NAMES = {"scikit-learn": "sklearn"}  # distribution -> the module it installs, where they differ


def _run_examples(test: doctest.DocTest) -> str:
    """The report of the failed examples of ``test`` ('' when all pass)."""
    out: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=out.append)
    return "".join(out)


@pytest.mark.parametrize("module", MODULES)
def test_the_examples_of_core_run(module: str) -> None:
    tests = doctest.DocTestFinder().find(importlib.import_module(f"maxmargin.core.{module}"))
    for test in tests:
        assert not (report := _run_examples(test)), report


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_every_public_function_shows_an_example_that_runs_on_its_own(name: str) -> None:
    """Its Examples section, run with nothing imported beforehand: each example imports what it uses, the function
    from maxmargin.core first of all."""
    doc = inspect.getdoc(getattr(core, name)) or ""
    assert "\nExamples\n--------\n" in doc, f"{name} has no Examples section"
    examples = doc.split("\nExamples\n--------\n")[1]
    assert re.search(rf">>> from maxmargin\.core import [^\n]*\b{name}\b", examples), f"{name}: no import of it"
    test = doctest.DocTestParser().get_doctest(examples, {}, name, None, 0)
    assert test.examples and not (report := _run_examples(test)), report


def test_the_papers_data_sets_show_an_example_with_the_maths_alone() -> None:
    import maxmargin.experiments.instances as instances

    tests = [test for test in doctest.DocTestFinder().find(instances) if test.examples]
    assert tests, "maxmargin.experiments.instances shows no example"
    for test in tests:
        assert not (report := _run_examples(test)), report


def test_the_synthetic_experiments_without_pandas_name_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed: `import pandas` fails
    monkeypatch.delitem(sys.modules, "maxmargin.experiments.synthetic", raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"needs pandas, of the extra 'workflow': pip install '\.\[workflow"):
        importlib.import_module("maxmargin.experiments.synthetic")


def _readme_session() -> str:
    section = (REPO / "README.md").read_text().split("## Use the maths as a library\n")[1].split("\n## ")[0]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_readme_session_runs() -> None:
    session = _readme_session()
    test = doctest.DocTestParser().get_doctest(session, {}, "README.md", "README.md", 0)
    assert len(test.examples) >= 8
    assert not (report := _run_examples(test)), report


def test_docs_api_md_is_written_from_the_docstrings() -> None:
    written = api_docs.render()
    assert (REPO / "docs/api.md").read_text() == written, "docs/api.md is stale: run `python tools/api_docs.py`"
    for name in PUBLIC_FUNCTIONS:
        assert f"`{name}(" in written
    assert "## `maxmargin.experiments.instances`" in written and "Lemma 1 ties it to (ATT-SVM)" in written


def test_every_result_class_of_core_is_listed_with_its_fields() -> None:
    """The README's promise for the result classes (a function's answer: dataclasses and named tuples): docs/api.md
    lists each with its fields, in order."""
    import dataclasses

    written = api_docs.render()
    classes = [getattr(core, name) for name in core.__all__ if inspect.isclass(getattr(core, name))]
    results = [c for c in classes if dataclasses.is_dataclass(c) or hasattr(c, "_fields")]
    assert {"SVMResult", "WSVMResult", "Trajectory", "RegularizationPath"} <= {c.__name__ for c in results}
    for cls in results:
        fields = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else list(cls._fields)
        section = written.split(f"### class `{cls.__name__}`\n", 1)[1].split("\n### ", 1)[0]
        assert f"Fields: {', '.join(f'`{name}`' for name in fields)}." in section, cls.__name__


def test_the_direction_of_an_infeasible_gmm_is_refused_where_it_is_used() -> None:
    K = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]])  # the best token lies between the others
    gmm = core.gmm_direction(K, np.array([[1.0, 0.0, 0.0]]))
    assert not gmm.feasible and gmm.direction is None
    with pytest.raises(ValueError, match=r"b is None.*no solution.*SVMResult.feasible is False"):
        core.cosine(np.ones(2), gmm.direction)
    with pytest.raises(ValueError, match=r"p_mm is None.*no solution.*SVMResult.feasible is False"):
        core.svm_neighbors(K, np.array([0]), gmm.solution)


def _third_party(path: Path) -> set[str]:
    """Top-level names of the modules a file imports (inside functions too), the package's own left out."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"maxmargin"}


def test_pip_install_dot_is_the_maths_alone() -> None:
    base = {Requirement(r).name for r in PROJECT["dependencies"]}
    imported = set().union(*(_third_party(path) for path in (REPO / "maxmargin/core").glob("*.py")))
    assert imported == {IMPORT_NAMES.get(name, name) for name in base}, "pyproject's dependencies: what core imports"
    extras = PROJECT["optional-dependencies"]
    assert {"torch", "torchvision", "timm"} <= {Requirement(r).name for r in extras["vit"]}
    assert {"snakemake", "pandas", "matplotlib"} <= {Requirement(r).name for r in extras["workflow"]}


# Run in a fresh Python: the package from the wheel's files, every pipeline-only module refused on import.
BLOCKED_IMPORT = """
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not installed with the maths alone")
sys.meta_path.insert(0, Refuse())
import doctest, maxmargin.core
assert maxmargin.core.__file__.startswith(sys.argv[2]), maxmargin.core.__file__
test = doctest.DocTestParser().get_doctest(open(sys.argv[3]).read(), {}, "README", "README", 0)
runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
runner.run(test)
assert runner.failures == 0 and runner.tries > 0
assert not set(sys.modules) & BLOCKED
print("ran", runner.tries, "examples")
"""


def test_the_wheel_requires_the_maths_alone_and_runs_the_session_without_the_pipeline(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "maxmargin", source / "maxmargin", ignore=shutil.ignore_patterns("__pycache__"))
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path)]
    subprocess.run([*build, str(source)], check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("maxmargin-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        archive.extractall(tmp_path / "site")
    requires = [Requirement(line.split(": ", 1)[1]) for line in metadata.splitlines() if "Requires-Dist" in line]
    assert {r.name for r in requires if r.marker is None} == {"numpy", "scipy", "scikit-learn", "cvxopt", "tqdm"}
    extra_of = {r.name: str(r.marker) for r in requires if r.marker is not None}
    assert all(extra_of[name] == 'extra == "vit"' for name in ("torch", "torchvision", "timm"))
    assert extra_of["snakemake"] == extra_of["pandas"] == 'extra == "workflow"'
    session = tmp_path / "session.txt"
    session.write_text(_readme_session())
    site = str(tmp_path / "site")
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORT, ",".join(PIPELINE_ONLY), site, str(session)],
        env={"PYTHONPATH": site, "PATH": "/usr/bin:/bin", "OMP_WAIT_POLICY": "PASSIVE"},
        cwd=tmp_path,  # not the checkout, whose maxmargin/ would come first on sys.path
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "ran" in proc.stdout, proc.stdout + proc.stderr
