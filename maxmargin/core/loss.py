"""The losses l of Assumption A (logistic, exponential, correlation), in forms that never overflow."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays

Array = NDArray[np.float64]
LossName = Literal["logistic", "exponential", "correlation"]
LOSSES: tuple[str, ...] = ("logistic", "exponential", "correlation")


def check_loss(loss: str) -> None:
    """Raise a ValueError naming the allowed losses.

    Parameters
    ----------
    loss : str
        The name to check.

    Returns
    -------
    None
        Raises ValueError naming the allowed losses.

    Examples
    --------
    >>> from maxmargin.core import check_loss
    >>> check_loss("logistic")
    >>> check_loss("hinge")
    Traceback (most recent call last):
    ...
    ValueError: unknown loss 'hinge'; allowed: logistic, exponential, correlation
    """
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; allowed: {', '.join(LOSSES)}")


def loss_value(u: Array, loss: LossName) -> Array:
    """The loss l(u) evaluated at margins u = Y_i f(X_i), without overflow for the logistic loss.

    Paper: Assumption A examples: logistic log(1 + e^-u), exponential e^-u, correlation -u.

    Parameters
    ----------
    u : ndarray, shape (...)
        Margins Y_i f(X_i).
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).

    Returns
    -------
    ndarray, shape (...)
        l(u).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import loss_value
    >>> np.round(loss_value(np.array([0.0, 2.0, 1000.0]), "logistic"), 4)  # log(1 + e^-u), no overflow
    array([0.6931, 0.1269, 0.    ])
    """
    check_loss(loss)
    (u,) = check_arrays(u=(u, "(...)"))
    return _loss_value(u, loss)


def _loss_value(u: Array, loss: LossName) -> Array:
    """:func:`loss_value` without the argument check (the loops of :mod:`.model` and :mod:`.span_gd`)."""
    if loss == "logistic":
        return np.logaddexp(0.0, -u)
    if loss == "exponential":
        with np.errstate(over="ignore"):
            return np.exp(-u)
    return -u


def log_neg_loss_derivative(u: Array, loss: LossName) -> Array:
    """log(-l'(u)), the log-magnitude of the (negative) loss derivative; finite for every finite u (-l'(800) = e^-800
    underflows, its log does not).

    Paper: Assumption A (l strictly decreasing, so -l' > 0).

    Parameters
    ----------
    u : ndarray, shape (...)
        Margins.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).

    Returns
    -------
    ndarray, shape (...)
        log(-l'(u)).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import log_neg_loss_derivative
    >>> [round(float(x), 4) for x in log_neg_loss_derivative(np.array([0.0, 800.0]), "logistic")]
    [-0.6931, -800.0]
    """
    check_loss(loss)
    (u,) = check_arrays(u=(u, "(...)"))
    return _log_neg_loss_derivative(u, loss)


def _log_neg_loss_derivative(u: Array, loss: LossName) -> Array:
    """:func:`log_neg_loss_derivative` without the argument check (the loops of :mod:`.model` and :mod:`.span_gd`)."""
    if loss == "logistic":
        return -np.logaddexp(0.0, u)  # -l'(u) = 1 / (1 + e^u)
    if loss == "exponential":
        return -u
    return np.zeros_like(u)
