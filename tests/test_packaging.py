"""What a user installs: environment.yml and pyproject.toml in step, the rules' conda envs, the repository files."""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, copy_workflow
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from maxmargin.config import load_yaml
from maxmargin.docs import config_docs

ENVS = REPO / "workflow" / "envs"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# Every requirement of the package: the maths (`pip install .`) and its extras (`make figures`: workflow, vit, test)
EVERY_REQUIREMENT = PROJECT["dependencies"] + [r for extra in PROJECT["optional-dependencies"].values() for r in extra]
# Top-level import name -> distribution, for the modules the library and its scripts import
DISTRIBUTIONS = {"sklearn": "scikit-learn", "PIL": "pillow", "yaml": "pyyaml"}


def _split(requirement: str) -> tuple[str, str]:
    name, spec = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", requirement.strip()).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def env_requirements(path: Path) -> dict[str, str]:
    """Package -> version spec of a conda env file (conda and pip entries alike, python and pip left out)."""
    deps = yaml.safe_load(path.read_text())["dependencies"]
    conda = [d.replace("=", "==", 1) if "==" not in d else d for d in deps if isinstance(d, str)]
    pip = [p for d in deps if isinstance(d, dict) for p in d["pip"]]
    return {
        name: spec
        for name, spec in map(_split, conda + [p for p in pip if not p.startswith("-")])
        if name not in ("pip", "python")
    }


def rule_blocks() -> dict[str, str]:
    """Rule name -> its text, for every rule that runs a script."""
    blocks = {}
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"(?m)^(?=rule \w+:)", smk.read_text()):
            name = re.match(r"rule (\w+):", block)
            if name and "script:" in block:
                blocks[name.group(1)] = block
    return blocks


def _directive(block: str, name: str) -> str:
    return re.search(rf'^    {name}:\n        "([^"]+)"', block, re.MULTILINE).group(1)


@functools.cache
def _imports_of(path: Path) -> tuple[frozenset[str], tuple[Path, ...]]:
    """The top-level names of the non-library modules one file imports, and the library's files it imports (each
    file parsed once: every rule's script reaches most of the library)."""
    tree = ast.parse(path.read_text())
    typing_only = {  # `if TYPE_CHECKING:` blocks never run
        id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for n in ast.walk(block)
    }  # fmt: skip
    names: set[str] = set()
    library: list[Path] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            if module.split(".")[0] != "maxmargin":
                names.add(module.split(".")[0])
                continue
            parts = module.split(".")
            for depth in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__, a/b/__init__, a/b/c
                base = REPO.joinpath(*parts[:depth])
                library += [c for c in (base / "__init__.py", base.with_suffix(".py")) if c.exists()]
    return frozenset(names), tuple(library)


def third_party_imports(path: Path) -> set[str]:
    """Top-level names of the non-library modules a file imports, following the library's own modules."""
    names: set[str] = set()
    seen, todo = set(), [path]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        direct, library = _imports_of(current)
        names |= direct
        todo += library
    return names - set(sys.stdlib_module_names) - {"snakemake"}


# The workflow profile's terminal output, a Snakemake logger plugin installed beside the package (not editable:
# Snakemake finds logger plugins among the installed top-level modules).
LOGGER_PLUGIN = "./workflow/logger"

# conda-forge name -> PyPI name, where they differ
CONDA_NAMES = {"pytorch": "torch"}


def _conda_split(entry: str) -> tuple[str, str]:
    """A conda entry as (PyPI name, pip spec): ``pytorch=2.14.1=cpu*`` -> ("torch", "==2.14.1"), and
    ``pytorch >=2.4,<3 cpu*`` (version and build) -> ("torch", ">=2.4,<3")."""
    pinned = re.fullmatch(r"([A-Za-z0-9_.\-]+)=([^=<>!]+)=(\S+)", entry.strip())
    if pinned:
        return CONDA_NAMES.get(pinned[1], pinned[1]), f"=={pinned[2]}"
    ranged = re.fullmatch(r"([A-Za-z0-9_.\-]+) ([<>=!][^ ]*) (\S+)", entry.strip())
    if ranged:
        return CONDA_NAMES.get(ranged[1], ranged[1]), ranged[2]
    return _split(entry)


def test_environment_yml_matches_pyproject():
    wanted = dict(_split(r) for r in EVERY_REQUIREMENT)
    env_file = yaml.safe_load((REPO / "environment.yml").read_text())
    env = env_file["dependencies"]
    conda = [d for d in env if isinstance(d, str) and not d.startswith(("python=", "pip"))]
    pip = next(d["pip"] for d in env if isinstance(d, dict))
    listed = dict(map(_conda_split, conda)) | dict(_split(r) for r in pip if not r.startswith(("-e", "./")))
    assert len(listed) == len(conda) + len(pip) - 2  # no package listed twice
    assert listed == wanted
    assert "-e ." in pip and LOGGER_PLUGIN in pip
    assert LOGGER_PLUGIN in (REPO / "Makefile").read_text()  # make installs what conda users get
    # conda-forge only, and PyTorch's CPU build (GPU users switch =cpu* to =cuda*, see the file's header)
    assert env_file["channels"] == ["conda-forge", "nodefaults"]
    assert {d.split()[0]: d.split()[-1] for d in conda if d.startswith(("pytorch ", "torchvision "))} == {
        "pytorch": "cpu*",
        "torchvision": "cpu*",
    }


def test_every_rule_uses_a_pinned_env_of_workflow_envs():
    blocks = rule_blocks()
    assert {"census_trials", "synthetic_experiment", "vit_train", "claims_table"} <= set(blocks)  # the rules were read
    used = set()
    for rule, block in blocks.items():
        env = (REPO / "workflow" / "rules" / _directive(block, "conda")).resolve()
        assert env.parent == ENVS and env.exists(), f"rule {rule}: conda env {env} is not a file of workflow/envs"
        used.add(env)
    assert used == set(ENVS.glob("*.yaml")), "an env file no rule uses"
    ranges = {canonicalize_name(Requirement(r).name): Requirement(r).specifier for r in EVERY_REQUIREMENT}
    for env in used:
        spec = yaml.safe_load(env.read_text())
        assert "python=3.11" in spec["dependencies"] and "name" not in spec  # Snakemake names the env itself
        # copied to .snakemake/conda/, a path (`-e .`) would point elsewhere; the workflow tools are not the jobs'
        assert not any(p.startswith("-") for d in spec["dependencies"] if isinstance(d, dict) for p in d["pip"])
        for name, pin in env_requirements(env).items():
            assert pin.startswith("==") and name not in ("snakemake", "snakemake-executor-plugin-slurm"), name
            assert name not in ranges or ranges[name].contains(pin[2:]), f"{env.name}: {name}{pin} not in pyproject"
    core, torch = env_requirements(ENVS / "core.yaml"), env_requirements(ENVS / "torch.yaml")
    assert core.items() <= torch.items()  # the same numpy etc. for every job


def test_each_rule_env_holds_what_its_script_imports():
    for rule, block in rule_blocks().items():
        script = (REPO / "workflow" / "rules" / _directive(block, "script")).resolve()
        env = env_requirements((REPO / "workflow" / "rules" / _directive(block, "conda")).resolve())
        needed = {canonicalize_name(DISTRIBUTIONS.get(name, name)) for name in third_party_imports(script)}
        assert "pandas" in needed  # the walk reached the library (maxmargin.io, which every script uses)
        assert needed <= set(env), f"rule {rule} ({script.name}) imports {sorted(needed - set(env))}, not in its env"


@pytest.mark.slow
def test_jobs_import_the_library_beside_the_snakefile(tmp_path):
    # No `pip install -e .` in a rule's conda env, and Snakemake drops PYTHONPATH for conda jobs: a job's script finds
    # the library through the sys.path Snakemake hands it, which holds the Snakefile's folder, ahead of any installed
    # copy (here the .venv's editable install of another checkout)
    workdir = copy_workflow(tmp_path)
    shutil.copytree(REPO / "maxmargin", workdir / "maxmargin", ignore=shutil.ignore_patterns("__pycache__"))
    probe = workdir / "imported_from.txt"
    with (workdir / "maxmargin" / "__init__.py").open("a") as init:  # records which copy each process imports
        init.write(f"\nimport sys\nopen({str(probe)!r}, 'a').write(sys.argv[0] + ' ' + __file__ + '\\n')\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    cmd = [str(SNAKEMAKE), "--cores", "1", "--", "results/tables/fig8.csv"]
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    imports = dict(line.split() for line in probe.read_text().splitlines())
    jobs = {script: module for script, module in imports.items() if "/.snakemake/scripts/" in script}
    assert len(jobs) == 1 and set(imports.values()) == {str(workdir / "maxmargin" / "__init__.py")}, imports


def test_config_docs_are_up_to_date():
    text = config_docs.config_markdown(load_yaml(config_docs.SCHEMA), config_docs.DEFAULTS.read_text())
    assert text == (REPO / "docs" / "config.md").read_text(), "docs/config.md is stale: run `make docs`"
    for key in ("census.n_trials", "vit.train.lr", "regpath.radii.num", "vit_recipes.recipes[].lr"):
        assert f"| `{key}` |" in text


# Every writer of maxmargin/docs/ (a module run as `python -m maxmargin.docs.<writer>`; the package's other modules
# are parts of one), by what it writes: a generator of committed pages, which `make docs` runs, each with the test that
# fails while one of its pages is stale; or a writer of a full run's pages (`make gallery`).
DOCS_GENERATORS = {
    "config_docs": "tests/test_packaging.py::test_config_docs_are_up_to_date",
    "column_docs": "tests/test_contributing.py::test_the_docs_column_lists_are_written_from_the_registry",
    "api_docs": "tests/test_library.py::test_docs_api_md_is_written_from_the_docstrings",
    "committed_claims": "tests/test_vit_claims.py::test_the_committed_runs_claims_are_what_todays_code_measures",
    "run_docs": "tests/test_docs_numbers.py::test_the_pages_numbers_are_what_the_default_runs_tables_give",
    "gpu_report": "tests/test_gpu_results.py::test_the_page_is_what_the_sessions_files_give",
}
FULL_RUN_WRITERS = ("gallery", "timings")  # a default run's thumbnails and benchmarks: `make gallery`
BY_HAND = ("report_browser",)  # the report checked in a browser, and its screenshots (docs/report/) retaken by hand


def docs_writers() -> set[str]:
    """The modules of maxmargin/docs/ that run as a program."""
    package = REPO / "maxmargin" / "docs"
    return {path.stem for path in package.glob("*.py") if '\nif __name__ == "__main__":' in path.read_text()}


def test_make_docs_runs_every_generator_and_each_has_a_staleness_test():
    recipe = re.search(r"^docs:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile has no docs target"
    assert re.findall(r"python -m maxmargin\.docs\.(\w+)", recipe[1]) == list(DOCS_GENERATORS)
    assert docs_writers() == {*DOCS_GENERATORS, *FULL_RUN_WRITERS, *BY_HAND}, (
        "classify the new writer of maxmargin/docs/"
    )
    for test in DOCS_GENERATORS.values():
        path, name = test.split("::")
        assert f"\ndef {name}(" in (REPO / path).read_text(), test


def test_tools_holds_only_thin_wrappers_of_the_docs_writers():
    """A docs writer's code is in the package (imported by the tests, never loaded from its file): tools/<writer>.py,
    the command the docs and the pages' own headers name, only runs maxmargin.docs.<writer>, and each writer has one."""
    scripts = {path.stem: path.read_text() for path in (REPO / "tools").glob("*.py")}
    assert set(scripts) == docs_writers()
    for name in docs_writers():
        run = f'runpy.run_module("maxmargin.docs.{name}", run_name="__main__", alter_sys=True)'
        assert run in scripts[name] and len(scripts[name].splitlines()) <= 12, f"tools/{name}.py is more than a wrapper"


def test_a_wrapper_runs_its_writer_from_its_own_checkout(tmp_path: Path) -> None:
    """``python tools/run_docs.py --check`` is ``python -m maxmargin.docs.run_docs --check``, from any directory;
    in a copy of the checkout, the copy's package writes the copy's pages (not the virtualenv's checkout's)."""
    for wrapper, module in (("run_docs.py", "maxmargin.docs.run_docs"), ("gpu_report.py", "maxmargin.docs.gpu_report")):
        by_wrapper = subprocess.run(
            [sys.executable, str(REPO / "tools" / wrapper), "--check"], cwd=tmp_path, capture_output=True, text=True
        )
        by_module = subprocess.run([sys.executable, "-m", module, "--check"], cwd=REPO, capture_output=True, text=True)
        assert (by_wrapper.returncode, by_wrapper.stdout) == (0, by_module.stdout) == (0, ""), by_wrapper.stderr
    copy = tmp_path / "copy"
    for folder in ("maxmargin", "tools"):
        shutil.copytree(REPO / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "maxmargin" / "docs" / "api_docs.py").write_text(
        (REPO / "maxmargin/docs/api_docs.py").read_text().replace("# `maxmargin.core`: the maths", "# the copy's")
    )
    printed = subprocess.run(
        [sys.executable, str(copy / "tools" / "api_docs.py"), "-"], cwd=tmp_path, capture_output=True, text=True
    )
    assert printed.returncode == 0 and printed.stdout.startswith("# the copy's as a library\n"), printed.stderr


def test_no_test_loads_a_module_from_its_file() -> None:
    """The tests import what they test from the package, as its users do (a script of tools/ loaded by path was a
    second copy of a module, outside the import layers); only the import check of the benchmark scripts, which are
    no package, loads files by path."""
    loaders = {
        f"{path.name}::{node.name}"
        for path in sorted((REPO / "tests").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef)
        and any(
            getattr(call.func, "attr", getattr(call.func, "id", None)) == "spec_from_file_location"
            for call in ast.walk(node)
            if isinstance(call, ast.Call)
        )
    }
    assert loaders == {"test_packaging.py::test_every_benchmark_script_imports"}, loaders


def test_license_and_citation():
    assert PROJECT["license"] == "MIT"  # SPDX expression (PEP 639)
    assert (REPO / "LICENSE").read_text().startswith("MIT License\n")
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "MIT"
    assert citation["version"] == PROJECT["version"]
    assert citation["repository-code"].startswith("https://") and str(citation["date-released"])
    assert {"type": "other", "value": "arXiv:2306.13596"}.items() <= citation["identifiers"][0].items()
    paper = citation["preferred-citation"]
    assert paper["title"] == "Max-Margin Token Selection in Attention Mechanism" and paper["year"] == 2023
    assert [author["family-names"] for author in paper["authors"]] == ["Ataee Tarzanagh", "Li", "Zhang", "Oymak"]


@pytest.mark.parametrize("script", sorted(p.name for p in (REPO / "benchmarks").glob("*.py")))
def test_every_benchmark_script_imports(script: str) -> None:
    """The benchmark scripts are run by hand, not by the pipeline: importing each (its main() not run) catches a
    name that moved."""
    name = f"benchmark_{script[:-3]}"
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]


def test_the_docs_name_only_scripts_and_rules_that_exist() -> None:
    """docs/*.md and the README name scripts (`x.py` in scripts/, benchmarks/, tools/) and rules that exist: a
    rename shows up here, not in a reader's failed search."""
    listed = subprocess.run([str(SNAKEMAKE), "--list-rules"], cwd=REPO, capture_output=True, text=True, check=True)
    rules = set(listed.stdout.split())
    files = {p.name for folder in ("scripts", "benchmarks", "tools") for p in (REPO / folder).glob("*.py")}
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = doc.read_text()
        for name in re.findall(r"`(\w+\.py)`", text):
            assert name in files or any((REPO / "maxmargin").rglob(name)), f"{doc.name}: `{name}`"
        for row in re.findall(r"^\| `\w+`.*$", text, flags=re.MULTILINE):
            cells = row.split(" | ")
            for cell in cells:
                if cell.startswith("`") and "(" in cell and cell.split("(")[1].startswith("`"):
                    for rule in re.findall(r"`(\w+)`", cell.split("(")[0]):
                        assert rule in rules, f"{doc.name}: rule `{rule}`"
