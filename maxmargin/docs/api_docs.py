"""docs/api.md, the reference of the maths (``maxmargin.core``), written from its docstrings.

    python -m maxmargin.docs.api_docs            # writes docs/api.md (or: python tools/api_docs.py)
    python -m maxmargin.docs.api_docs -          # prints it

tests/test_library.py fails when docs/api.md is not what this writes (a docstring changed without it).
"""

from __future__ import annotations

import ast
import inspect
import pkgutil
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import maxmargin.core as core
from maxmargin.docs import REPO
from maxmargin.files import atomic_path

OUT = REPO / "docs" / "api.md"

HEADER = """# `maxmargin.core`: the maths as a library

<!-- written by tools/api_docs.py from the docstrings of maxmargin/core/: edit those, then run it -->

The model, the risk and its exact gradients, gradient descent, the max-margin problems and the regularization paths
of the paper, on numpy arrays (float64). Installed alone by `pip install .` (numpy, scipy, scikit-learn, cvxopt,
tqdm: no torch, no Snakemake); the README's "Use the maths as a library" is a first session. Every name below is
imported from `maxmargin.core` (`from maxmargin.core import att_svm`), which loads a module on first use.

Conventions: arrays are `(..., n, T, d)` for the tokens `X` and keys `K = X W^T` of n inputs of T tokens in d
dimensions, `(..., n, T)` for the scores `gamma`, `(..., d)` for `p` and `v`; a leading `...` is a batch of
independent runs, one call for all of them. `Array` is an ndarray of float64 and `LossName` one of `"logistic"`,
`"exponential"`, `"correlation"`. Every function checks its arguments on entry (`check_arrays`): a wrong shape,
a NaN or infinite number, an empty array or an index out of range raises a `ValueError` naming the argument and the
shape expected. Every function shows an example, run by the unit tier (`tests/test_library.py`) on its own (each
imports what it uses). The paper's data sets, importable with the maths alone, are at the end:
[`maxmargin.experiments.instances`](#maxmarginexperimentsinstances).
"""

# Modules outside maxmargin.core documented here too: they need nothing but the maths.
DATA_MODULES = ("maxmargin.experiments.instances",)


def _modules() -> list[ModuleType]:
    """The modules of maxmargin.core that define a public name, in the order of their file names."""
    found = [
        __import__(f"{core.__name__}.{info.name}", fromlist=["_"])
        for info in pkgutil.iter_modules(core.__path__)
        if not info.name.startswith("_")
    ]
    return [module for module in found if _public_names(module)]


def _prose(doc: str) -> str:
    """A module docstring as Markdown: an indented paragraph of doctest examples becomes a Python code block."""
    paragraphs = doc.split("\n\n")
    for j, paragraph in enumerate(paragraphs):
        lines = paragraph.splitlines()
        if lines and all(line.startswith("    ") for line in lines) and lines[0].lstrip().startswith(">>>"):
            paragraphs[j] = "```python\n" + textwrap.dedent(paragraph) + "\n```"
    return "\n\n".join(paragraphs)


def _constants(module: ModuleType) -> dict[str, str]:
    """The upper-case names a module assigns at its top level (not those it imports), with the source of their value
    (not its repr, which may hold memory addresses)."""
    source = inspect.getsource(module)
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name) and target.id.isupper() and target.id in core.__all__:
                    found[target.id] = " ".join(ast.get_source_segment(source, node.value).split())
    return found


def _public_names(module: ModuleType) -> list[str]:
    """The names of ``core.__all__`` that ``module`` defines: its constants, then its classes and functions."""
    defined = [
        name
        for name, obj in vars(module).items()
        if name in core.__all__
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module.__name__
    ]
    return [*_constants(module)] + sorted(defined, key=lambda name: inspect.getsourcelines(getattr(module, name))[1])


def _signature(obj: object, name: str) -> str:
    """``name(a, b, *, c=1.0)``: the signature as the source writes it (defaults by name), without annotations."""
    node = ast.parse(textwrap.dedent(inspect.getsource(obj))).body[0]
    arguments = node.args
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
        if arg is not None:
            arg.annotation = None
    return f"{name}({ast.unparse(arguments)})"


def _docstring(obj: object) -> str:
    """The first paragraph as text, the rest (Parameters, Returns, Examples) as a preformatted block."""
    doc = inspect.getdoc(obj) or ""
    head, _, rest = doc.partition("\n\n")
    text = " ".join(line.strip() for line in head.splitlines())
    return f"{text}\n\n```text\n{rest}\n```\n" if rest.strip() else f"{text}\n"


def _members(cls: type) -> str:
    """A class's fields, properties and public methods, each with the first line of its docstring."""
    lines = []
    fields = getattr(cls, "__dataclass_fields__", None) or getattr(cls, "_fields", ())  # a dataclass or named tuple
    if fields:
        lines.append("Fields: " + ", ".join(f"`{field}`" for field in fields) + ".\n")
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        target = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if isinstance(member, property) or inspect.isfunction(target):
            doc = (inspect.getdoc(member) or "").split("\n\n")[0].replace("\n", " ")
            call = "" if isinstance(member, property) else "()"
            lines.append(f"- `{name}{call}`" + (f": {doc}" if doc else ""))
    return "\n".join(lines) + "\n" if lines else ""


def _entry(module: ModuleType, name: str) -> str:
    obj = getattr(module, name)
    if name.isupper():
        return f"- `{name} = {_constants(module)[name]}`\n"
    if inspect.isclass(obj):
        return f"### class `{name}`\n\n{_docstring(obj)}\n{_members(obj)}"
    return f"### `{_signature(obj, name)}`\n\n{_docstring(obj)}"


def render() -> str:
    """The text of docs/api.md."""
    modules = _modules()
    parts = [HEADER, "## Modules\n"]
    parts += [f"- [`{m.__name__}`](#{m.__name__.replace('.', '')}): {_summary(m)}" for m in modules]
    for module in modules:
        parts.append(f"\n## `{module.__name__}`\n\n{_prose(inspect.getdoc(module))}\n")
        constants = [name for name in _public_names(module) if name.isupper()]
        if constants:
            parts.append("Constants:\n\n" + "".join(_entry(module, name) for name in constants))
        parts += [_entry(module, name) for name in _public_names(module) if not name.isupper()]
    for name in DATA_MODULES:
        module = __import__(name, fromlist=["_"])
        parts.append(f"\n## `{name}`\n\n{_prose(inspect.getdoc(module))}\n")
        parts += [_entry(module, member) for member in _defined(module)]
    return "\n".join(parts).rstrip() + "\n"


def _defined(module: ModuleType) -> list[str]:
    """The public classes and functions ``module`` defines, in the order of its source."""
    names = [
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module.__name__
    ]
    return sorted(names, key=lambda name: inspect.getsourcelines(getattr(module, name))[1])


def _summary(module: ModuleType) -> str:
    return (inspect.getdoc(module) or "").split("\n\n")[0].replace("\n", " ")


def main(argv: list[str]) -> None:
    text = render()
    if argv[1:] == ["-"]:
        sys.stdout.write(text)
    else:
        with atomic_path(Path(argv[1] if len(argv) > 1 else OUT)) as tmp:
            tmp.write_text(text)


if __name__ == "__main__":
    main(sys.argv)
