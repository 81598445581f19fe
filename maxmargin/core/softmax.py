"""The softmax of the attention over the tokens, exact at any logit gap: its log, the attention S(K_i p), the token
it selects and the mass it leaves to the others.

Paper: eq. (5), the map S(X W^T p); Section 2 and Appendix E (the selected tokens, the saturation test). Every
function takes optional leading batch axes ("..."). Where the softmax saturates (logit gaps beyond ~37 in float64)
1 - max_t s_t rounds to 0 and past gaps of ~745 the other probabilities underflow: everything here is computed from
the log-softmax, so that the mass left to the other tokens keeps its exponent.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays

Array = NDArray[np.float64]


def log_softmax(z: Array) -> Array:
    """Log-softmax along the token axis, exact for arbitrarily large logit gaps.

    Parameters
    ----------
    z : ndarray, shape (..., T)
        Logits.

    Returns
    -------
    ndarray, shape (..., T)
        log S(z).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import log_softmax
    >>> log_softmax(np.array([0.0, 1000.0]))  # exp(1000) overflows; its log-softmax does not
    array([-1000.,     0.])
    """
    (z,) = check_arrays(z=(z, "(..., T)"))
    return _log_softmax(z)


def _log_softmax(z: Array) -> Array:
    """:func:`log_softmax` without the argument check."""
    zmax = z.max(axis=-1, keepdims=True)
    return z - zmax - np.log(np.exp(z - zmax).sum(axis=-1, keepdims=True))


def attention(K: Array, p: Array) -> Array:
    """Softmax attention S(K_i p) over the T tokens of every input, shape (..., n, T).

    Paper: eq. (5), the map S(X W^T p).

    Parameters
    ----------
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    p : ndarray, shape (..., d)
        Attention weights.

    Returns
    -------
    ndarray, shape (..., n, T)
        S(K_i p).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import attention
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> np.round(attention(K, np.array([2.0, 0.0])), 4)  # the first key scores highest along p
    array([[0.8668, 0.1173, 0.0159]])
    """
    K, p = check_arrays(K=(K, "(..., n, T, d)"), p=(p, "(..., d)"))
    return _attention(K, p)


def _attention(K: Array, p: Array) -> Array:
    """:func:`attention` without the argument check."""
    return np.exp(_log_softmax(np.einsum("...ntd,...d->...nt", K, p)))


def selected_tokens(K: Array, p: Array) -> NDArray[np.int64]:
    """alpha_i = argmax_t (K_i p)_t, the token the softmax of input i selects, shape (..., n).

    Paper: Section 2 and Appendix E. The argmax of the logits, not of S(K_i p): once the softmax saturates its
    probabilities round, and two of them can tie where the logits still differ.

    Parameters
    ----------
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    p : ndarray, shape (..., d)
        Attention weights.

    Returns
    -------
    ndarray of int, shape (..., n)
        alpha_i.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import selected_tokens
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> selected_tokens(K, np.array([-1.0, -2.0]))  # logits -1, -2, 3: the third token
    array([2])
    """
    K, p = check_arrays(K=(K, "(..., n, T, d)"), p=(p, "(..., d)"))
    return np.einsum("...ntd,...d->...nt", K, p).argmax(axis=-1)


def log_non_selected_mass(K: Array, p: Array) -> Array:
    """log(1 - max_t S(K_i p)_t) per input, accurate when 1 - s is far below float64 epsilon.

    Paper: Appendix E's saturation test, mean_i s_{i alpha_i} >= 1 - 1e-5.

    Parameters
    ----------
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    p : ndarray, shape (..., d)
        Attention weights.

    Returns
    -------
    ndarray, shape (..., n)
        log(1 - max_t S(K_i p)_t) (-inf when it is exactly 0).

    Examples
    --------
    1 - s rounds to 0 in float64 at a logit gap of 100; its log is about -100:

    >>> import numpy as np
    >>> from maxmargin.core import log_non_selected_mass
    >>> K = np.array([[[1.0, 0.0], [0.0, 0.0]]])
    >>> np.round(log_non_selected_mass(K, np.array([100.0, 0.0])), 4)
    array([-100.])
    """
    K, p = check_arrays(K=(K, "(..., n, T, d)"), p=(p, "(..., d)"))
    return _log_non_selected_mass_of_logits(np.einsum("...ntd,...d->...nt", K, p))


def log_non_selected_mass_of_logits(z: Array) -> Array:
    """:func:`log_non_selected_mass` from the logits z_i = K_i p, shape (..., n, T).

    Parameters
    ----------
    z : ndarray, shape (..., n, T)
        Logits K_i p.

    Returns
    -------
    ndarray, shape (..., n)
        log(1 - max_t S(z_i)_t).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import log_non_selected_mass_of_logits
    >>> np.round(log_non_selected_mass_of_logits(np.array([[0.0, 0.0]])), 4)  # two equal logits: log(1/2)
    array([-0.6931])
    """
    (z,) = check_arrays(z=(z, "(..., n, T)"))
    return _log_non_selected_mass_of_logits(z)


def _log_non_selected_mass_of_logits(z: Array) -> Array:
    """:func:`log_non_selected_mass_of_logits` without the argument check."""
    logs = _log_softmax(z)
    top = logs.argmax(axis=-1)
    others = np.where(np.arange(logs.shape[-1]) == top[..., None], -np.inf, logs)
    omax = others.max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = omax[..., 0] + np.log(np.exp(others - omax).sum(axis=-1))
    return np.where(np.isfinite(omax[..., 0]), lse, -np.inf)
