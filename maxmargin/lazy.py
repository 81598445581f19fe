"""A package's public names, each imported from its module on first use (PEP 562's module ``__getattr__``).

A package lists where each name lives and hands the list to :func:`lazy_exports`, with its own ``__name__``::

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {"model": ("risk", "grad_p"), "gd": ("cosine",)})

``import maxmargin.core`` then imports no submodule: ``maxmargin.core.risk`` imports ``maxmargin.core.model`` (and
scipy with it) when first asked for, and is found without this function from then on. Only the package's own
submodules are imported (``<package>.<module>``), so tests/test_layers.py reads a call with ``__name__`` as an
import of the package's own modules. The standard library only: every layer may use it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, Sequence[str]], eager: Sequence[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The module ``__getattr__``, ``__dir__`` and ``__all__`` of ``package`` whose names live in its submodules.

    Parameters
    ----------
    package : the package's ``__name__``.
    homes : submodule (relative to the package, dots for deeper ones: ``"experiments.census"``) -> the public names
        it defines.
    eager : public names the package imports itself (in ``__all__``, never looked up here).

    Returns
    -------
    (``__getattr__``, ``__dir__``, ``__all__``): a name is imported from its home on first use and kept in the
    package's namespace; an unknown name raises AttributeError, as for any module.
    """
    listed = [name for names in homes.values() for name in names] + list(eager)
    if twice := sorted({name for name in listed if listed.count(name) > 1}):
        raise ValueError(f"{package}: {twice} listed twice (a name has one home)")
    home_of = {name: module for module, names in homes.items() for name in names}
    public = sorted(home_of) + list(eager)

    def __getattr__(name: str) -> Any:
        if name not in home_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home_of[name]}"), name)
        setattr(sys.modules[package], name, value)  # found there from now on, without this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(public))

    return __getattr__, __dir__, public
