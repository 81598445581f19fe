"""The public API of the maths, maxmargin.core: every public name exported, every function documented (numpydoc)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import maxmargin.core as core

MODULES = [importlib.import_module(f"maxmargin.core.{m.name}") for m in pkgutil.iter_modules(core.__path__)]
FUNCTIONS = [
    (module.__name__, name, fn)
    for module in MODULES
    for name, fn in inspect.getmembers(module, inspect.isfunction)
    if fn.__module__ == module.__name__ and not name.startswith("_")
]


def test_all_lists_every_public_name_of_core():
    public = {
        name
        for module in MODULES
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and ((inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == module.__name__ or name.isupper())
    }
    assert set(core.__all__) == public | {"Array", "LossName"}
    assert all(hasattr(core, name) for name in core.__all__)


@pytest.mark.parametrize(("module", "name", "fn"), FUNCTIONS, ids=[f"{m}.{n}" for m, n, _ in FUNCTIONS])
def test_numpydoc_with_shapes(module, name, fn):
    doc = inspect.getdoc(fn) or ""
    assert "\nParameters\n----------\n" in doc and "\nReturns\n-------\n" in doc, f"{module}.{name}"
    params = doc.split("\nParameters\n----------\n")[1].split("\nReturns\n")[0]
    documented = {
        n.strip().lstrip("*")
        for line in re.findall(r"^(\S[^:\n]*?)(?: :|$)", params, re.MULTILINE)
        for n in line.split(",")
    }
    signature = [p for p in inspect.signature(fn).parameters if p not in ("self", "cls")]
    assert set(signature) <= documented, f"{module}.{name}: undocumented {set(signature) - documented}"
    for line in re.findall(r"^\S.* : (.*)$", params, re.MULTILINE):
        if "ndarray" in line:
            assert "shape" in line, f"{module}.{name}: an array without its shape: {line}"
