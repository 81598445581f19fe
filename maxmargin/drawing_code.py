"""What a panel is drawn by, hashed: the rerun trigger of the plot rules (their ``code`` param), one per panel.

A panel's fingerprint covers three things, and nothing else:

- its ``Panel`` entry, less the fields that reach only the report (:data:`REPORT_ONLY`: a new caption is read when
  the report is built and redraws nothing);
- the drawing code every panel shares, whole (:data:`SHARED_DRAWING_CODE`: the one style, and the pipeline's
  reading, drawing and saving of a panel);
- its drawing function's own code: the source of ``Panel.draw`` in its family's module
  (``maxmargin/figures/<family>.py``, or ``<family>/__init__.py`` of a family drawn by several modules), and, by
  the same rule again, of every module-level definition of the package (a function, a class, an assignment) that
  source names: in its own module, imported by name (``from maxmargin.figures.vit.notes import footer``) or reached
  through a module of the package (``notes.footer``). Names outside the package (numpy, matplotlib) and local
  names are left out; a name the package defines in a way this does not follow (a lazy package's ``__init__``)
  hashes that module's whole file instead.

So a changed title, a panel drawn by another function, or an edit of its function or of a helper it calls redraws
that panel; an edit of a neighbouring function in the same module, or a new panel, redraws no other panel. The
source is read as text (:mod:`ast`), never imported: the rule files build the DAG without matplotlib.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

from maxmargin import registry
from maxmargin.registry.types import Panel

# The package whose drawing code is hashed (a test points it at a copy).
PACKAGE = Path(__file__).resolve().parent
# The drawing code every panel shares, hashed whole: the one style, and the pipeline's reading, drawing and saving of
# a panel (maxmargin/pipeline.py: draw_panel, draw_synthetic_panel, save_figure).
SHARED_DRAWING_CODE = ("figures/style.py", "pipeline.py")
# Fields of a Panel that only the report reads (its caption, label and group, and the target that builds it).
REPORT_ONLY = ("target", "label", "caption", "caption_blocks", "subcategory")


@dataclasses.dataclass(frozen=True)
class _Named:
    """What a piece of source reads: its names, its ``name.attribute`` pairs (a module's attribute), and for each
    ``getattr(name, ...)`` the string constants of the source that are identifiers (names it may look up)."""

    names: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    looked_up: dict[str, tuple[str, ...]]


def _names_in(trees: list[ast.AST]) -> _Named:
    """:class:`_Named` of the syntax trees ``trees`` (one walk)."""
    names, pairs, bases, constants = set(), set(), set(), []
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            pairs.add((node.value.id, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            constants.append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            if node.args and isinstance(node.args[0], ast.Name):
                bases.add(node.args[0].id)
    return _Named(frozenset(names), frozenset(pairs), {base: tuple(constants) for base in bases})


@dataclasses.dataclass(frozen=True)
class _Module:
    """The module-level definitions of one source file: name -> its statements' source, and name -> where an
    import of the package takes it from (a module, or a module and a name)."""

    path: Path
    text: str
    defined: dict[str, list[str]]
    imported: dict[str, tuple[str, str | None]]
    functions: frozenset[str]  # the names a def or class binds (the others: assignments)
    named: dict[str, _Named]  # name -> what its definitions read


def module_file(dotted: str) -> Path | None:
    """The source file of a module of the package (``maxmargin.figures.census``: figures/census.py; a package: its
    __init__.py), or None (not the package's, or no such module)."""
    parts = dotted.split(".")
    if parts[0] != PACKAGE.name:
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module-level statements, those under a top-level ``if``/``try`` included (``if TYPE_CHECKING:``)."""
    for node in body:
        if isinstance(node, ast.If | ast.Try):
            yield from _statements([*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])])
        else:
            yield node


def _source(text: str, node: ast.stmt) -> str:
    """A statement's source, its decorators included."""
    lines = text.splitlines()
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(lines[start - 1 : node.end_lineno])


def _targets(node: ast.stmt) -> list[str]:
    """The names a module-level assignment binds."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


@functools.cache
def _parse(path: Path, mtime: float) -> _Module:
    """``path``'s definitions (cached by the file's time: a test edits its copy in place)."""
    text = path.read_text()
    package = ".".join(_label(path).with_suffix("").parts).removesuffix(".__init__")
    defined: dict[str, list[str]] = {}
    imported: dict[str, tuple[str, str | None]] = {}
    functions = set()
    nodes: dict[str, list[ast.AST]] = {}
    for node in _statements(ast.parse(text).body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.setdefault(node.name, []).append(_source(text, node))
            nodes.setdefault(node.name, []).append(node)
            functions.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            for name in _targets(node):
                defined.setdefault(name, []).append(_source(text, node))
                nodes.setdefault(name, []).append(node)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package of this module
                parent = package.rsplit(".", node.level - (path.name == "__init__.py"))[0]
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found = (submodule, None) if module_file(submodule) else (base, alias.name)
                imported[alias.asname or alias.name] = found
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imported[alias.asname or alias.name.split(".")[0]] = (alias.name if alias.asname else "", None)
    named = {name: _names_in(trees) for name, trees in nodes.items()}
    return _Module(path, text, defined, imported, frozenset(functions), named)


def _module(path: Path) -> _Module:
    return _parse(path, path.stat().st_mtime)


def _label(path: Path) -> Path:
    """A source file's name in a fingerprint, wherever the package lies: a module's path from the package's parent
    (maxmargin/figures/census.py), another file's bare name (a Snakemake script: run_synthetic.py)."""
    return _label_under(path, PACKAGE)


@functools.cache
def _label_under(path: Path, package: Path) -> Path:
    return path.relative_to(package.parent) if path.is_relative_to(package) else Path(path.name)


def functions_of(path: Path) -> frozenset[str]:
    """The names a module-level ``def`` or ``class`` of the module at ``path`` binds."""
    return _module(path).functions


def _shared(path: Path) -> bool:
    return any(path == PACKAGE / name for name in SHARED_DRAWING_CODE)


def references(path: Path, source: str) -> list[tuple[Path, str, str]]:
    """What a piece of source of the module at ``path`` names, as (module, name, how) to look up: its own names that
    the module defines or imports (``how`` "local": a local or builtin name is no definition), each
    ``module.attribute`` of an imported module of the package ("import": that module holds it), and, for a
    ``getattr(module, ...)`` of such a module (a name chosen at run time), every string constant of the source that
    the module defines ("local")."""
    return _references(path, _names_in([ast.parse(source)]))


def _references(path: Path, named: _Named) -> list[tuple[Path, str, str]]:
    module = _module(path)
    found = [(path, n, "local") for n in named.names if n in module.defined or n in module.imported]
    for base, attr in named.pairs:
        target = _imported_module(module, base)
        if target is not None:
            found.append((target, attr, "import"))
    for base, constants in named.looked_up.items():
        target = _imported_module(module, base)
        if target is not None:
            found += [(target, c, "local") for c in constants if c in _module(target).defined]
    return found


def _imported_module(module: _Module, name: str) -> Path | None:
    """The file of the module of the package that ``name`` is bound to in ``module`` (``import``ed whole), or None."""
    origin = module.imported.get(name)
    return module_file(origin[0]) if origin and origin[1] is None and origin[0] else None


def follow(todo: list[tuple[Path, str, str]], skip: Callable[[Path, str], bool] | None = None) -> dict[str, str]:
    """The code the names in ``todo`` stand on, transitively: "module:name" -> its source (see the module's
    docstring). ``todo`` holds (module, name, how): "own" must be there (a KeyError if not); "local" may be a local
    or builtin name; "import" was named through an import of the package, so its module holds it, in a way this may
    not follow (a lazy package's ``__init__``), and that module's whole text stands for it. ``skip(module, name)``:
    a definition left out, and not followed (default: the shared drawing code, which a panel hashes whole)."""
    skip = skip or (lambda at, _: _shared(at))
    found: dict[str, str] = {}
    seen: set[tuple[Path, str, str]] = set()  # a name that is no definition is looked up once too
    todo = list(todo)
    while todo:
        item = todo.pop()
        if item in seen:
            continue
        seen.add(item)
        at, wanted, how = item
        key = f"{_label(at)}:{wanted}"
        if key in found or skip(at, wanted):
            continue
        module = _module(at)
        if wanted in module.defined:
            found[key] = "\n".join(module.defined[wanted])
            todo += _references(at, module.named[wanted])
        elif wanted in module.imported:
            origin, attr = module.imported[wanted]
            target = module_file(origin) if origin else None
            if target is not None and attr is not None:
                found[key] = f"from {origin} import {attr}"
                todo.append((target, attr, "import"))
        elif how == "own":
            raise KeyError(wanted)
        elif how == "import":
            found[key] = module.text
    return found


def function_sources(path: Path, name: str) -> dict[str, str]:
    """The code a definition ``name`` of the module at ``path`` stands on (see the module's docstring): "module:name"
    -> its source, for it and every definition of the package it names, transitively (the shared drawing code
    left out: it is hashed whole). A KeyError when the module does not define or import ``name``."""
    return follow([(path, name, "own")])


def definition(path: Path, name: str) -> str | None:
    """The source of the module-level definition ``name`` of the module at ``path``, followed through the package's
    imports (a family package's ``__init__`` re-exporting it), or None."""
    seen = set()
    while (path, name) not in seen:
        seen.add((path, name))
        module = _module(path)
        if name in module.defined:
            return "\n".join(module.defined[name])
        origin, attr = module.imported.get(name, ("", None))
        target = module_file(origin) if origin and attr else None
        if target is None:
            return None
        path, name = target, attr
    return None


def drawing_module(family: str) -> Path:
    """The module a family's panels are named in (``Panel.draw``): maxmargin/figures/<family>.py, or the
    ``__init__.py`` of maxmargin/figures/<family>/ (a family drawn by several modules)."""
    path = module_file(f"{PACKAGE.name}.figures.{family}")
    if path is None:
        raise ValueError(
            f"family {family!r} has no drawing module maxmargin/figures/{family}.py (maxmargin.pipeline.FIGURE_MODULES)"
        )
    return path


def drawn_fields(entry: Panel) -> str:
    """The fields of a Panel that reach its drawing (all but :data:`REPORT_ONLY`), as text."""
    return repr({f.name: getattr(entry, f.name) for f in dataclasses.fields(entry) if f.name not in REPORT_ONLY})


def panel_sources(entry: Panel) -> dict[str, str]:
    """Everything a panel's fingerprint hashes, by name: its drawn fields, the shared drawing code and its drawing
    function's code (:func:`function_sources`)."""
    module = drawing_module(entry.family)
    try:
        own = function_sources(module, entry.draw)
    except KeyError:
        raise ValueError(
            f"panel {entry.name!r} ({registry.declared_in(entry)}) is drawn by {entry.draw!r}, which "
            f"{module.relative_to(PACKAGE.parent)} does not define; its public functions returning a Figure are "
            "the drawing functions"
        ) from None
    shared = {name: (PACKAGE / name).read_text() for name in SHARED_DRAWING_CODE}
    return {"panel": drawn_fields(entry), **shared, **dict(sorted(own.items()))}


def panel_fingerprint(entry: Panel) -> str:
    """A short hash of :func:`panel_sources`: the rerun trigger of a panel's job."""
    digest = hashlib.sha256()
    for name, text in panel_sources(entry).items():
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()[:16]


def drawing_code(panel: str) -> str:
    """The ``code`` param of the job drawing the registered panel ``panel`` (:func:`panel_fingerprint`)."""
    return panel_fingerprint(registry.panel(panel))
