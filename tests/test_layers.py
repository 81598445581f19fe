"""The library's layers, enforced: every import points down, dynamic imports included. This is the one statement of
them (the docs point here):

- ``lazy`` (a package's names imported from their modules on first use) imports the standard library only; ``core``
  and ``experiments`` use it in their ``__init__``, for their own modules (``lazy_exports(__name__, ...)``);
- ``core`` (the maths) imports nothing of the package but ``lazy`` (its ``__init__`` its own modules, on first use);
- ``registry`` (plain data: panels, tables and their columns, files, experiments, the config keys each rule reads)
  imports nothing at all of it;
- ``io`` (``files``: atomic writes; ``provenance``: sidecars and the checks of every read; ``tables``: contracts
  built from the registry, the one way tables are written and read) imports the registry and itself;
- ``experiments`` and ``figures`` import core and the registry (experiments write through ``io`` too: a ViT run
  saves its own files);
- ``logs``, ``config``, ``claims`` and ``pipeline`` sit above them; scripts and rule files on top.

The rule files import only what parsing needs (the registry, the config checks, the torch-free ViT settings), so
that the DAG is built without the heavy libraries.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE

import maxmargin

PACKAGE = Path(maxmargin.__file__).parent
HEAVY = {"numpy", "scipy", "pandas", "torch", "torchvision", "timm", "matplotlib", "sklearn", "cvxopt"}

# Layer -> (maxmargin modules it may import, third-party packages it must not import).
IO = {"maxmargin.files", "maxmargin.provenance", "maxmargin.tables"}
LAYERS: dict[str, tuple[set[str], set[str]]] = {
    # core's __init__ imports its own submodules on first use (lazy_exports(__name__, ...), checked)
    "core": (
        {"maxmargin.core", "maxmargin.lazy"},
        {"pandas", "torch", "torchvision", "timm", "matplotlib", "snakemake"},
    ),
    "registry": ({"maxmargin.registry"}, HEAVY | {"snakemake", "importlib"}),
    "io": ({"maxmargin.registry", *IO}, {"torch", "torchvision", "timm", "matplotlib", "snakemake", "scipy"}),
    "experiments": (
        {"maxmargin.core", "maxmargin.registry", "maxmargin.experiments", "maxmargin.lazy", *IO},
        {"matplotlib", "snakemake"},
    ),
    "figures": ({"maxmargin.core", "maxmargin.registry", "maxmargin.figures"}, {"torch", "torchvision", "timm"}),
}
DYNAMIC = {"import_module", "__import__"}
# maxmargin.lazy: a package's names imported from ``<first argument>.<module>`` on first use
LAZY = "lazy_exports"


def _resolve(name: str, package: str, level: int) -> str:
    if not level:
        return name
    parent = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{parent}.{name}" if name else parent


def _dynamic_target(call: ast.Call, package: str) -> str | None:
    """The module a dynamic import names: a string, or an f-string of this package's submodules; '?' otherwise."""
    if not call.args:
        return "?"
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        level = len(arg.value) - len(arg.value.lstrip("."))
        return _resolve(arg.value.lstrip("."), package, level) if level else arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        head, rest = arg.values[0], arg.values[1:]
        own = isinstance(head, ast.FormattedValue) and isinstance(head.value, ast.Name) and head.value.id == "__name__"
        if own and rest and isinstance(rest[0], ast.Constant) and str(rest[0].value).startswith("."):
            return package + ".*"
    return "?"


@functools.cache
def imported_modules(source: str, package: str) -> frozenset[str]:
    """Every module a source imports, statically or through importlib / __import__ ('?' when not knowable)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module or "", package, node.level)
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in DYNAMIC:
                names.add(_dynamic_target(node, package))
            elif called == LAZY:  # its own modules when handed its own name, else not knowable
                own = node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "__name__"
                names.add(package + ".*" if own else "?")
    return frozenset(names)


def violations(layer: str, source: str, module: str) -> list[str]:
    """The imports of ``source`` (the module ``module``) that its layer forbids."""
    allowed, banned = LAYERS[layer]
    package = module.removesuffix(".__init__") if module.endswith(".__init__") else module.rsplit(".", 1)[0]
    wrong = []
    for name in sorted(imported_modules(source, package)):
        top = name.split(".")[0]
        if name == "?":
            wrong.append("a dynamic import of a module it computes (cannot be checked)")
        elif name == "maxmargin":
            continue  # `from maxmargin import x`: x is checked (the package's __init__ imports nothing eagerly)
        elif top == "maxmargin":
            inside = name.removesuffix(".*")
            if not any(inside == a or inside.startswith(a + ".") for a in allowed):
                wrong.append(name)
        elif top in banned:
            wrong.append(name)
    return wrong


def layer_modules(layer: str) -> list[tuple[Path, str]]:
    if layer == "io":
        paths = [PACKAGE / f"{name.split('.')[-1]}.py" for name in sorted(IO)]
    else:
        paths = sorted((PACKAGE / layer).rglob("*.py"))
    return [(p, ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in paths]


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_imports_point_down(layer: str) -> None:
    modules = layer_modules(layer)
    assert modules, f"maxmargin/{layer} is empty"
    wrong = [f"{m} imports {name}" for path, m in modules for name in violations(layer, path.read_text(), m)]
    assert not wrong, "\n".join(wrong)


# The four counterexamples (and more), each a one-line change to a real module: every one must be caught.
COUNTEREXAMPLES = [
    ("experiments", "maxmargin.experiments.vit.results", "from maxmargin.logs import rule_logging\n"),
    ("figures", "maxmargin.figures.style", "def f():\n    from maxmargin.files import atomic_path\n"),
    ("io", "maxmargin.tables", "from maxmargin.experiments import census\n"),
    ("io", "maxmargin.provenance", "def f():\n    from maxmargin.pipeline import save_figure\n"),
    ("registry", "maxmargin.registry.__init__", "from maxmargin.figures import synthetic\n"),
    ("registry", "maxmargin.registry.synthetic", "import numpy\n"),
    ("core", "maxmargin.core.model", "import importlib\nm = importlib.import_module(name)\n"),
    ("core", "maxmargin.core.model", "x = __import__('maxmargin.experiments.synthetic')\n"),
    ("core", "maxmargin.core.model", "import importlib as il\nm = il.import_module('maxmargin.files')\n"),
    ("core", "maxmargin.core.__init__", "g, d, a = lazy_exports('maxmargin', {'files': ('atomic_path',)})\n"),
    ("experiments", "maxmargin.experiments.census", "m = __import__(name)\n"),
    (
        "experiments",
        "maxmargin.experiments.census",
        "from importlib import import_module\nimport_module('..io', __package__)\n",
    ),
    ("figures", "maxmargin.figures.census", "from ..claims import CLAIMS\n"),
    ("experiments", "maxmargin.experiments.synthetic", "from maxmargin import pipeline\n"),
    ("experiments", "maxmargin.experiments.synthetic", "from maxmargin import logs\n"),
]


@pytest.mark.parametrize(("layer", "module", "line"), COUNTEREXAMPLES)
def test_every_forbidden_import_is_caught(layer: str, module: str, line: str) -> None:
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    assert not violations(layer, path.read_text(), module), "the module itself is clean"
    assert violations(layer, path.read_text() + "\n" + line, module), f"{line!r} in {module} went unnoticed"


def test_lazy_imports_of_own_submodules_are_allowed() -> None:
    """``maxmargin.experiments.vit`` and ``maxmargin.core`` import their submodules on first use (torch, scipy,
    scikit-learn and cvxopt only when asked for), through the one loader, :mod:`maxmargin.lazy`."""
    for layer, folder in (("experiments", "experiments/vit"), ("core", "core")):
        module = f"maxmargin.{folder.replace('/', '.')}.__init__"
        source = (PACKAGE / folder / "__init__.py").read_text()
        assert not violations(layer, source, module)
        assert f"maxmargin.{folder.replace('/', '.')}.*" in imported_modules(source, module.removesuffix(".__init__"))


def test_the_lazy_loader_imports_the_standard_library_only() -> None:
    """Below every layer: it imports nothing of the package itself, only the modules its caller names (a caller
    passes its own ``__name__``: checked above); every package's public names come through it."""
    imported = imported_modules((PACKAGE / "lazy.py").read_text(), "maxmargin")
    assert {name.split(".")[0] for name in imported - {"?"}} <= set(sys.stdlib_module_names)
    loaders = [p for p in PACKAGE.rglob("__init__.py") if "def __getattr__" in p.read_text()]
    assert not loaders, f"a module __getattr__ of its own: {loaders} (use maxmargin.lazy.lazy_exports)"


def imports_under(importtime: str, prefix: str) -> set[str]:
    """The modules that modules named ``prefix``* imported, from the tree ``python -X importtime`` prints (a
    module's own imports come just before it, indented deeper)."""
    rows = []
    for line in importtime.splitlines():
        if line.startswith("import time:") and "|" in line and not line.rstrip().endswith("| imported package"):
            name = line.split("|")[-1]
            rows.append((len(name) - len(name.lstrip()), name.strip()))
    found = set()
    for i, (indent, name) in enumerate(rows):
        if name.startswith(prefix):
            j = i - 1
            while j >= 0 and rows[j][0] > indent:
                found.add(rows[j][1])
                j -= 1
    return found


def test_the_dag_is_built_without_heavy_libraries() -> None:
    """Parsing the Snakefile and building the DAG imports no heavy library through the package: the rule files
    import the registry, the config checks and the ViT settings only (Snakemake's own plugins import pandas)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(SNAKEMAKE), "-n", "--forceall", "--cores", "1", "--quiet", "all"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"\|\s+maxmargin\.registry$", proc.stderr, re.MULTILINE), "the rule files read the registry"
    tops = {name.split(".")[0] for name in imports_under(proc.stderr, "maxmargin")}
    assert not tops & HEAVY, sorted(tops & HEAVY)
    everything = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line}
    assert not everything & {"torch", "scipy", "matplotlib", "sklearn", "cvxopt"}


def test_a_table_job_imports_no_solver_or_plotting_library() -> None:
    """What every job's script imports (its rule log, tables and sidecars) brings no scipy, scikit-learn, cvxopt,
    matplotlib or torch: the maths of ``maxmargin.core`` is imported when a job uses it."""
    code = "import sys, maxmargin.logs, maxmargin.tables, maxmargin.core; print(' '.join(sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    tops = {name.split(".")[0] for name in proc.stdout.split()}
    assert not tops & {"scipy", "sklearn", "cvxopt", "matplotlib", "torch"}, sorted(tops & HEAVY)


def test_collecting_the_tests_imports_no_torch_and_no_snakemake() -> None:
    """Collecting every test module (what each worker of `make test-fast` does first) imports neither torch, timm,
    torchvision nor Snakemake: a module that needs them names them through ``conftest.Lazy`` (CONTRIBUTING.md, "Test
    tiers"); torch alone would cost each worker seconds before its first test."""
    code = (
        "import sys, pytest\n"
        "code = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'tests'])\n"
        "print('MODULES', ' '.join(sys.modules) if code == 0 else 'collection failed')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    modules = proc.stdout.rsplit("MODULES", 1)[-1].split()
    assert "conftest" in modules, proc.stdout[-3000:] + proc.stderr[-3000:]
    heavy = {name.split(".")[0] for name in modules} & {"torch", "timm", "torchvision", "snakemake"}
    assert not heavy, sorted(heavy)


def test_imports_under_reads_the_tree() -> None:
    tree = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:   5 |   5 |     numpy.core\n"
        "import time:   5 |  10 |   numpy\n"
        "import time:   5 |  15 | maxmargin.experiments.synthetic\n"
        "import time:   5 |   5 | pandas\n"
    )
    assert imports_under(tree, "maxmargin") == {"numpy", "numpy.core"}


def test_public_api_names_exist() -> None:
    assert maxmargin.__all__, "maxmargin.__all__ lists the public API"
    missing = [name for name in maxmargin.__all__ if not hasattr(maxmargin, name)]
    assert not missing, missing


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at any depth of its code (a function's lazy import included):
    ``from a import b`` names the module ``a.b`` where that is a module, else ``a``; a package's lazy import of its
    own submodules by computed name (``import_module(f"{__name__}.{name}")``) is no edge."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = (path, name if parts[-1] == "__init__" else name.rsplit(".", 1)[0])
    graph = {}
    for name, (path, package) in modules.items():
        found = set()
        for target in imported_modules(path.read_text(), package):
            while target and target not in modules:  # `from a import b` with b a name of a: the module a
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
        graph[name] = found
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    """No import cycle in the package, lazy imports inside functions included: a circle is a layer inside a layer."""
    graph = import_graph()
    assert "maxmargin.core.gd" in graph["maxmargin.experiments.synthetic"] and len(graph) > 50
    assert import_cycles(graph) == []


def test_an_import_cycle_is_found(tmp_path: Path) -> None:
    """A cycle through a function's lazy import and a `from package import module` line is caught; a package
    importing its own submodules by computed name is not a cycle."""
    pkg = tmp_path / "maxmargin"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from importlib import import_module\nimport_module(f'{__name__}.a')\n")
    (pkg / "sub" / "a.py").write_text("from maxmargin.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .a import g\n")
    (pkg / "c.py").write_text("from maxmargin.sub.a import x\n")
    assert import_cycles(import_graph(pkg)) == [["maxmargin.sub.a", "maxmargin.sub.b"]]
    (pkg / "sub" / "b.py").write_text("import maxmargin.c\n")
    assert import_cycles(import_graph(pkg)) == [["maxmargin.c", "maxmargin.sub.a", "maxmargin.sub.b"]]


def test_a_lazy_name_has_one_home() -> None:
    from maxmargin.lazy import lazy_exports

    with pytest.raises(ValueError, match=r"\['x'\] listed twice"):
        lazy_exports("maxmargin", {"core.gd": ("x",), "core.svm": ("x",)})
    with pytest.raises(ValueError, match=r"\['y'\] listed twice"):
        lazy_exports("maxmargin", {"core.gd": ("y",)}, eager=("y",))
