"""Shared test fixtures (running the real Snakemake DAG in a temporary directory) and the test tiers."""

from __future__ import annotations

import ast
import fcntl
import functools
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import snakemake_forks
import yaml

# Two xdist workers each start Snakemake jobs and torch with two threads on two cores: OpenMP threads that spin while
# they wait (libgomp's default) then take the core the other worker's threads need, and both crawl (3x slower measured
# on 2 cores). Waiting threads that sleep at once lose nothing when a core is free. Set before torch is imported here
# and inherited by every program the tests start.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# The programs the tests start write no bytecode cache (pytest's own process keeps its: the Makefile). Python takes a
# cached module as current while its source has the recorded mtime, in whole seconds, and size: a test that edits a
# module of a copied tree, runs it and puts the module back within that second at the same size (data="fig1b" ->
# "fig1a" -> "fig1b") would otherwise run the edited module's cache.
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
DEFAULT_CONFIG = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())
CI_CONFIG = "workflow/config/ci_slurm.yaml"  # the small run: every rule of `all`, each job a few seconds
CI_RESULTS = yaml.safe_load((REPO / CI_CONFIG).read_text())["results"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regenerate-baselines",
        action="store_true",
        help="write tests/baseline_images/ from this run's figures instead of comparing with them",
    )


class Lazy:
    """A module imported on first use: a unit-tier test module that names torch (or timm, torchvision, Snakemake) at
    its top through this costs nothing at collection; attributes are read from, set on and deleted from the module
    (so monkeypatch works through it)."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _module(self) -> Any:
        return importlib.import_module(object.__getattribute__(self, "_name"))

    @property
    def __dict__(self) -> dict[str, Any]:  # monkeypatch's undo reads the old value from it
        return vars(self._module())

    def __getattr__(self, attr: str) -> Any:
        # pytest's collection looks up markers and dunders on every module-level object: those import nothing
        if attr.startswith("_") and object.__getattribute__(self, "_name") not in sys.modules:
            raise AttributeError(attr)
        return getattr(self._module(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._module(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self._module(), attr)


def copy_workflow(dest: Path) -> Path:
    """Copy the Snakefile, environment.yml, workflow/ and scripts/ into ``dest`` (results land there)."""
    for name in ("Snakefile", "environment.yml"):
        shutil.copy(REPO / name, dest / name)
    for folder in ("workflow", "scripts"):
        shutil.copytree(REPO / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "profiles").symlink_to("workflow/profiles")  # the default profile, as in the repo
    return dest


def snakemake(
    workdir: Path, *args: str, config: dict | None = None, check: bool = True, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run snakemake in ``workdir``; ``config`` is deep-merged over the default config via --configfile.

    Forked from this process's Snakemake server (tests/snakemake_forks.py): the `snakemake` program's command line
    without the 0.75 s of CPU it spends importing Snakemake and its plugins each time."""
    args = list(args)
    if config is not None:  # after the options (it takes every word that follows), before `-- TARGET ...`
        path = workdir / "test_config.yaml"
        path.write_text(yaml.safe_dump(config))
        at = args.index("--") if "--" in args else len(args)
        args[at:at] = ["--configfile", str(path)]
    proc = snakemake_forks.run(workdir, ["--cores", "2", *args], timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture
def workflow_dir(tmp_path: Path) -> Path:
    """A fresh copy of the workflow in a temporary directory."""
    return copy_workflow(tmp_path)


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory) -> Path:
    """A copy of the workflow after `all` on the CI config and `--report report.html` (shared, not to be changed).

    Built once per session: under pytest-xdist (`make test`) the workers share one, in the folder above their own
    temporary folders; the first that asks builds it under a lock, the others wait for it (a build cut short by a
    failure is started again)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    workdir = root / "ci_run"
    with open(root / "ci_run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (workdir / "report.html").exists():
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir()
            copy_workflow(workdir)
            snakemake(workdir, "--configfile", CI_CONFIG)
            snakemake(workdir, "--configfile", CI_CONFIG, "--report", "report.html")
    return workdir


@pytest.fixture
def ci_copy(ci_run: Path, tmp_path: Path) -> Path:
    """A copy of the shared CI run that a test may change: its files' times and Snakemake's records come with it, so
    that the copy is as complete as the run (`snakemake --configfile CI_CONFIG` has nothing to do there). Tests run
    Snakemake in a copy, never in the shared run itself (which only dry runs read)."""
    work = tmp_path / "ci_copy"
    shutil.copytree(ci_run, work, symlinks=True, ignore=shutil.ignore_patterns("locks"))  # a dry run's, if any
    return work


def ci_config(**blocks: dict) -> dict:
    """The CI config with ``blocks`` deep-merged over it (for ``snakemake(..., config=)`` in a copy of the CI run)."""
    from maxmargin.config import deep_merge, load_yaml

    return deep_merge(load_yaml(REPO / CI_CONFIG), blocks)


# The modules that take minutes, in the order `make test` and `make test-long` start them (their workers take a
# module each as they free up: a long one taken last would run alone at the end). From the junit report of a whole
# run (`PYTEST_ADDOPTS=--junitxml=...`), each module's seconds summed; a module whose first test builds the shared CI
# run comes first in its target, so that the other worker starts on modules that do not wait for it.
LONGEST_FIRST = (
    "test_config_reads.py",  # long: builds the shared CI run, then a Snakemake summary per config key
    "test_gpu_kit.py",  # long: GPU sessions rehearsed on the CPU, some cut at their wall limit
    "test_contributing.py",  # long: CONTRIBUTING's steps in a copy
    "test_integrity.py",  # the first of `make test` to build the shared CI run
    "test_workflow_synthetic.py",
    "test_data_forms.py",
    "test_bindings.py",
    "test_vit.py",
    "test_census.py",
    "test_gpu_theory.py",
    "test_soak.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """LONGEST_FIRST's modules first, the others in their order (`make test`: --no-loadscope-reorder)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


# -- Test tiers (CONTRIBUTING.md, "Test tiers") ----------------------------------------------------------------------
# `make test-fast` runs the unit tier, `-m "not slow"`: no test there starts a program. A test is `slow` when it says
# so (`@pytest.mark.slow`, e.g. one that trains for more than a few steps) or when its body, a function of its module
# it calls, or a fixture it uses names one of STARTS (found here, from the source: no new test needs a mark for
# that). A test left in the unit tier that starts one of PROGRAMS all the same fails, naming this rule (libraries
# may start small helpers of their own: git for a sidecar's commit, ldconfig when torch looks for its libraries).
STARTS = {"subprocess", "snakemake", "SNAKEMAKE", "ci_run", "run_many"}
PROGRAMS = {"snakemake", "make", "ruff", "snakefmt", "bash", "sh", "node", "chromium", "python", "python3"}


@functools.cache
def _module_functions(path: Path) -> dict[str, ast.AST]:
    """Every function a test module (or this conftest) defines, methods included, by name."""
    tree = ast.parse(path.read_text())
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _names(node: ast.AST) -> set[str]:
    """The names and attribute names ``node`` holds."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
    return found


@functools.cache
def _named_by(path: Path, name: str) -> frozenset[str] | None:
    """What the function ``name`` of the test module ``path`` (or of this conftest) names in its body, with its
    arguments; None where neither defines it. Cached: the parametrised items of one test share it."""
    node = next(
        (scope[name] for scope in (_module_functions(path), _module_functions(Path(__file__))) if name in scope), None
    )
    if node is None:
        return None
    body = ast.Module(body=node.body, type_ignores=[])  # the decorators' names are not calls
    return frozenset(_names(body) | {a.arg for a in node.args.args})


def starts_a_program(path: Path, function: str, fixtures: list[str]) -> bool:
    """Whether ``function`` of the test module ``path``, a function of that module it calls or a fixture it uses
    (of that module or this conftest), names one of STARTS."""
    todo, seen = [function, *fixtures], {_unit_tests_start_no_program.__name__}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = _named_by(path, name)
        if found is None:
            continue
        if found & STARTS:
            return True
        todo += sorted(found)
    return False


def pytest_itemcollected(item: pytest.Item) -> None:
    """Each test's tier, as it is collected (before `-m` deselects): a long test (`make test-long`) and one of
    seconds of GD or solves (marked solves) are slow ones."""
    function = getattr(item, "originalname", item.name)
    fixtures = getattr(item, "fixturenames", [])
    if item.get_closest_marker("slow"):
        return
    marked = item.get_closest_marker("long") or item.get_closest_marker("solves")
    if marked or starts_a_program(item.path, function, fixtures):
        item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_program(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test of the unit tier that starts one of PROGRAMS (or this Python) fails, naming the rule."""
    if request.node.get_closest_marker("slow"):
        return
    execute = subprocess.Popen._execute_child

    def refuse(self, args, *rest, **kwargs):
        first = os.fsdecode(args).split()[0] if isinstance(args, str | bytes) else os.fsdecode(args[0])
        program = Path(first).name
        if program in PROGRAMS or program == Path(sys.executable).name:
            raise AssertionError(
                f"a unit-tier test started {program!r}: mark it @pytest.mark.slow (CONTRIBUTING.md, Test tiers)"
            )
        return execute(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
