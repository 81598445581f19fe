"""Lemma 1: gradient descent on the key-query matrix W stays on W(t) = u p(t)^T / ||u||^2.

Paper: Lemma 1 with psi(z) = v^T z linear: L(p) = 1/n sum_i l(Y_i v^T X_i^T S(X_i p)) and
L(W) = 1/n sum_i l(Y_i v^T X_i^T S(X_i W^T u)). The table behind results/tables/lemma1.csv runs GD on p and GD
on W side by side on each instance's data (X, Y, v). GD on W uses torch autograd, so the two runs share no
gradient code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from maxmargin import registry
from maxmargin.core.gd import gradient_descent
from maxmargin.core.loss import LossName, check_loss
from maxmargin.core.model import Array, grad_p, risk, token_scores
from maxmargin.experiments import instances

LEMMA1_COLUMNS = registry.columns("lemma1")
DEVIATION_COLUMN = "max_deviation"  # max_t ||W(t) - u p(t)^T / ||u||^2||_F: what the lemma says is 0


def grad_W(X: Array, Y: Array, v: Array, W: Array, u: Array, loss: LossName = "logistic") -> Array:
    """Gradient of L(W) = 1/n sum_i l(Y_i v^T X_i^T S(X_i W^T u)) in closed form: u grad L(p)^T at p = W^T u.

    Paper: Lemma 1 and its proof (Appendix A.2): the gradient is rank one with left singular vector u.
    Convention: keys K = X W^T as in eq. (5), so the query u enters the softmax as X_i W^T u and
    W(0) = u p(0)^T / ||u||^2 gives W(0)^T u = p(0).
    """
    X = np.asarray(X, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    g = grad_p(X, token_scores(X, Y, v), np.asarray(W, dtype=np.float64).T @ u, loss).value
    return np.outer(u, g)


def _torch_grad_W(X: Array, Y: Array, v: Array, u: Array, loss: LossName) -> Callable[[Array], tuple[float, Array]]:
    """Autograd of L(W) in float64 (independent of the closed form of :func:`grad_W`)."""
    import torch

    X_t, Y_t, v_t, u_t = (torch.tensor(a, dtype=torch.float64) for a in (X, Y, v, u))
    loss_fn = {
        "logistic": lambda m: torch.nn.functional.softplus(-m),
        "exponential": lambda m: torch.exp(-m),
        "correlation": lambda m: -m,
    }[loss]

    def value_and_grad(W: Array) -> tuple[float, Array]:
        W_t = torch.tensor(W, dtype=torch.float64, requires_grad=True)
        attention = torch.softmax(torch.einsum("ntd,ed,e->nt", X_t, W_t, u_t), dim=-1)
        output = torch.einsum("nt,ntd,d->n", attention, X_t, v_t)
        value = loss_fn(Y_t * output).mean()
        value.backward()
        return float(value.detach()), W_t.grad.numpy().copy()

    return value_and_grad


@dataclass(frozen=True)
class Lemma1Check:
    """GD on W and on p side by side (Lemma 1).

    ``deviation[t]`` = ||W(t) - u p(t)^T / ||u||^2||_F, ``grad_deviation[t]`` = ||autograd grad_W(W(t)) -
    u grad L(p)^T at p = W(t)^T u||_F (the closed form of the proof against autograd), both (n_iter + 1,).
    """

    u: Array
    p: Array
    W_final: Array
    deviation: Array
    grad_deviation: Array
    risk_W: Array
    risk_p: Array

    @property
    def max_deviation(self) -> float:
        """max_t ||W(t) - u p(t)^T / ||u||^2||_F."""
        return float(self.deviation.max())

    @property
    def relative_max_deviation(self) -> float:
        """max_t deviation / max_t ||u p(t)^T / ||u||^2||_F (the latter is max_t ||p(t)|| / ||u||)."""
        return float(self.deviation.max() / (np.linalg.norm(self.p, axis=-1).max() / np.linalg.norm(self.u)))


def lemma1_check(
    X: Array, Y: Array, v: Array, u: Array, p0: Array, *, eta: float, n_iter: int, loss: LossName
) -> Lemma1Check:
    """Run GD on p (step eta) and on W (W(0) = u p(0)^T/||u||^2, step eta/||u||^2) on the same data.

    Paper: Lemma 1; the lemma says W(t) = u p(t)^T/||u||^2 for every t. GD on p uses
    :func:`maxmargin.core.gd.gradient_descent` (keys K_i = X_i); GD on W uses torch autograd of L(W).
    """
    check_loss(loss)
    X, Y, v, u, p0 = (np.asarray(a, dtype=np.float64) for a in (X, Y, v, u, p0))
    u_norm2 = float(u @ u)
    if u_norm2 == 0.0:
        raise ValueError("Lemma 1 needs u != 0")
    gamma = token_scores(X, Y, v)
    p = gradient_descent(X, gamma, p0, eta=eta, n_iter=n_iter, loss=loss, normalized=False).p
    value_and_grad = _torch_grad_W(X, Y, v, u, loss)
    W = np.outer(u, p0) / u_norm2
    deviation, grad_deviation, risk_W = [], [], []
    for t in range(n_iter + 1):
        deviation.append(np.linalg.norm(W - np.outer(u, p[t]) / u_norm2))
        value, gradient = value_and_grad(W)
        risk_W.append(value)
        grad_deviation.append(np.linalg.norm(gradient - grad_W(X, Y, v, W, u, loss)))
        if t < n_iter:
            W = W - (eta / u_norm2) * gradient
    return Lemma1Check(
        u=u,
        p=p,
        W_final=W,
        deviation=np.array(deviation),
        grad_deviation=np.array(grad_deviation),
        risk_W=np.array(risk_W),
        risk_p=risk(X, gamma, p, loss),
    )


def _instance(name: str, data: Mapping[str, Mapping[str, Any]]) -> instances.Instance:
    """The Fig. 1 instance ``name`` with its data parameters (the config's ``synthetic.data``: the Fig. 1(c) seed)."""
    if name not in ("fig1a", "fig1b", "fig1c"):
        raise ValueError(f"unknown Lemma 1 instance {name!r}; allowed: fig1a, fig1b, fig1c")
    return getattr(instances, name)(**data.get(name, {}))


def lemma1_table(
    *,
    instances: Sequence[str],
    u: Sequence[float],
    eta: float,
    n_iter: int,
    seed: int,
    loss: LossName,
    data: Mapping[str, Mapping[str, Any]],
) -> pd.DataFrame:
    """Lemma 1 on each instance's data (X, Y, v): max_t ||W(t) - u p(t)^T/||u||^2||_F for GD on W and on p.

    p(0) is drawn from N(0, I) with ``seed`` (one draw per instance, in order); ``data`` holds each data set's
    parameters (the config's ``synthetic.data``: the Fig. 1(c) tokens are those of Figures 1(c) and 4). One row
    per instance (``LEMMA1_COLUMNS``).
    """
    rng = np.random.default_rng(seed)
    u = np.asarray(u, dtype=np.float64)
    rows = []
    for name in instances:
        inst = _instance(name, data)
        n, T, d = inst.X.shape
        if u.shape != (d,):
            raise ValueError(f"u has {u.size} entries but the {name} tokens have d = {d}")
        p0 = rng.standard_normal(d)
        check = lemma1_check(inst.X, inst.Y, inst.v, u, p0, eta=eta, n_iter=n_iter, loss=loss)
        rows.append(
            {
                "instance": name,
                "n": n,
                "T": T,
                "d": d,
                "u": json.dumps(u.tolist()),
                "p0": json.dumps(p0.tolist()),
                "eta": eta,
                "n_iter": n_iter,
                "loss": loss,
                DEVIATION_COLUMN: check.max_deviation,
                "relative_max_deviation": check.relative_max_deviation,
                "max_grad_deviation": float(check.grad_deviation.max()),
                "final_p_norm": float(np.linalg.norm(check.p[-1])),
                "final_risk_p": float(check.risk_p[-1]),
                "final_risk_W": float(check.risk_W[-1]),
            }
        )
    return pd.DataFrame(rows, columns=LEMMA1_COLUMNS)


__all__ = ["DEVIATION_COLUMN", "LEMMA1_COLUMNS", "Lemma1Check", "grad_W", "lemma1_check", "lemma1_table"]
