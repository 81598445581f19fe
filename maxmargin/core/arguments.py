"""The one argument check at the entry of every public function of :mod:`maxmargin.core`.

Each argument is checked against the shape its docstring states, its numbers finite and no axis empty, and a wrong
one raises a ValueError naming it and the shape expected: without it, numpy or scipy fail deep inside with a message
that names neither, or the maths returns a plausible wrong answer (a NaN start gives a NaN path, an empty data set
a risk of NaN).
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

# A shape: "(..., n, T, d)", "(n,)", "()" (a number), "(C + 1, C)", optionally after a kind ("int (n,)",
# "bool (n, T)", "float (...)"), "?" where it may be empty ("(c, k)?"), and a bound on the values of an int
# argument ("int (n,) < T").
_SPEC = re.compile(r"^(?:(finite|float|int|bool) )?\((.*)\)(\?)?(?: < (\w+))?$")
_AXIS = re.compile(r"^(?:(?P<name>[A-Za-z_]\w*)(?: \+ (?P<plus>\d+))?|(?P<size>\d+))$")


class _Spec(NamedTuple):
    """A parsed shape: its kind, its text ("(n, T, d)"), leading batch axes, the named or fixed axes as (name,
    offset) or (None, size), whether it may be empty, the name of the axis bounding its int values."""

    kind: str
    shape: str
    batch: bool
    axes: tuple[tuple[str | None, int], ...]
    empty: bool
    bound: str | None


@functools.cache
def _parse(spec: str) -> _Spec:
    match = _SPEC.match(spec)
    if match is None:
        raise ValueError(f"not a shape: {spec!r}")
    kind, inner, empty, bound = match.group(1) or "finite", match.group(2), bool(match.group(3)), match.group(4)
    parts = [part.strip() for part in inner.split(",") if part.strip()]
    batch = bool(parts) and parts[0] == "..."
    axes = []
    for part in parts[batch:]:
        axis = _AXIS.match(part)
        if axis is None:
            raise ValueError(f"not an axis: {part!r} in {spec!r}")
        axes.append((None, int(axis["size"])) if axis["size"] else (axis["name"], int(axis["plus"] or 0)))
    return _Spec(kind, f"({inner})", batch, tuple(axes), empty, bound)


def _as_array(name: str, value: Any, spec: _Spec) -> NDArray:
    """``value`` as a numpy array of the spec's kind (float64 for finite and float, int64, bool)."""
    try:
        array = np.asarray(value)
        if spec.kind == "bool":
            return array.astype(bool)
        if spec.kind == "int":
            floating = np.issubdtype(array.dtype, np.floating)
            whole = floating and bool(np.all(np.isfinite(array)) and np.all(array == np.round(array)))
            if not (np.issubdtype(array.dtype, np.integer) or whole):
                raise TypeError(f"got dtype {array.dtype}")
            return array.astype(np.int64)
        return array.astype(np.float64)
    except (TypeError, ValueError) as err:
        what = "integers" if spec.kind == "int" else "numbers"
        raise ValueError(f"{name} must hold {what}, shape {spec.shape}: {err}") from None


def _expected(spec: _Spec, sizes: dict[str, tuple[int, str]]) -> str:
    """The shape and the sizes other arguments have fixed, e.g. "(..., d) with d = 2 (as K)"."""
    names = {axis for axis, _ in spec.axes if axis is not None} | ({spec.bound} if spec.bound else set())
    fixed = [f"{axis} = {sizes[axis][0]} (as {sizes[axis][1]})" for axis in sorted(names) if axis in sizes]
    return spec.shape + (f" with {', '.join(fixed)}" if fixed else "")


def _check_shape(name: str, array: NDArray, spec: _Spec, sizes: dict[str, tuple[int, str]]) -> None:
    """The number of axes and each named axis's size (bound by the first argument that has it)."""
    count = len(spec.axes)
    wrong = array.ndim < count or (not spec.batch and array.ndim != count)
    trailing = () if wrong else array.shape[array.ndim - count :]
    for (axis, offset), size in zip(spec.axes if trailing else (), trailing, strict=True):
        wrong |= size != offset if axis is None else (axis in sizes and sizes[axis][0] != size - offset)
    if wrong:
        raise ValueError(f"{name} must have shape {_expected(spec, sizes)}: got shape {array.shape}")
    for (axis, offset), size in zip(spec.axes if trailing else (), trailing, strict=True):
        if axis is not None:
            sizes.setdefault(axis, (size - offset, name))


def _check_values(name: str, array: NDArray, spec: _Spec, sizes: dict[str, tuple[int, str]]) -> None:
    """No empty axis (unless the spec allows it); finite numbers (kind finite); int values within their bound."""
    if array.size == 0:
        if spec.empty:
            return
        raise ValueError(f"{name} is empty (shape {array.shape}): expected shape {spec.shape}, no axis of size 0")
    if spec.kind == "finite" and not np.all(np.isfinite(array)):
        bad = int(np.sum(~np.isfinite(array)))
        raise ValueError(f"{name} holds {bad} NaN or infinite value(s): expected finite numbers, shape {spec.shape}")
    if spec.bound in sizes and not np.all((array >= 0) & (array < sizes[spec.bound][0])):
        size, source = sizes[spec.bound]
        raise ValueError(
            f"{name} must hold indices in [0, {spec.bound}) with {spec.bound} = {size} (as {source}): got values "
            f"from {array.min()} to {array.max()}"
        )


def check_arrays(**arguments: tuple[Any, str]) -> tuple[NDArray, ...]:
    """Each argument as a numpy array, checked against its shape: the one argument check of :mod:`maxmargin.core`.

    A shape is written as the docstrings write it: ``"(..., n, T, d)"`` (any leading batch axes, then named
    axes), ``"(n,)"``, ``"()"`` (one number), ``"(C + 1, C)"``, with fixed sizes as integers. A named axis must
    have the same size in every argument of the call that names it (the first one fixes it), the batch axes of the
    arguments must broadcast. The kind before the shape: ``finite`` (the default: float64, every value finite),
    ``float`` (float64, NaN and infinity allowed), ``int`` (integer values; ``"int (n,) < T"``: indices in
    [0, T)), ``bool``. No argument may be empty but one whose shape ends in ``?`` (``"(c, k)?"``).

    Parameters
    ----------
    **arguments : tuple of (array_like, str)
        Argument name -> (its value, its shape).

    Returns
    -------
    tuple of ndarray
        The arguments in order, as arrays of their kind (a number, float, int or bool, for shape ``"()"``).

    Raises
    ------
    ValueError
        Naming the argument, the shape expected (and the sizes other arguments fixed) and what it got.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import check_arrays
    >>> K, p = check_arrays(K=(np.ones((3, 2, 2)), "(..., n, T, d)"), p=([1, 0], "(..., d)"))
    >>> p
    array([1., 0.])
    >>> check_arrays(K=(np.ones((3, 2, 2)), "(..., n, T, d)"), p=(np.ones(3), "(..., d)"))
    Traceback (most recent call last):
    ...
    ValueError: p must have shape (..., d) with d = 2 (as K): got shape (3,)
    """
    sizes: dict[str, tuple[int, str]] = {}
    specs = {name: _parse(spec) for name, (_, spec) in arguments.items()}
    arrays = {name: _as_array(name, value, specs[name]) for name, (value, _) in arguments.items()}
    for name, array in arrays.items():
        _check_shape(name, array, specs[name], sizes)
    for name, array in arrays.items():
        _check_values(name, array, specs[name], sizes)
    batches = {
        name: array.shape[: array.ndim - len(specs[name].axes)] for name, array in arrays.items() if specs[name].batch
    }
    try:
        np.broadcast_shapes(*batches.values())
    except ValueError:
        shapes = ", ".join(f"{name} {shape}" for name, shape in batches.items())
        raise ValueError(f"the leading (batch) axes of the arguments must broadcast: {shapes}") from None
    return tuple(array.item() if specs[name].shape == "()" else array for name, array in arrays.items())
