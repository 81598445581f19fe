"""The model, its risk and its gradients: against autograd, and against mpmath deep in saturation."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from maxmargin.core.loss import LOSSES, log_neg_loss_derivative, loss_value
from maxmargin.core.model import grad_p, grad_v, keys, model_output, risk, token_scores
from maxmargin.core.softmax import log_non_selected_mass


def random_problem(seed: int, n: int = 3, T: int = 5, d: int = 4, B: int = 6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, T, d))
    Y = rng.choice([-1.0, 1.0], size=n)
    W = rng.normal(size=(d, d))
    v = rng.normal(size=d)
    p = rng.normal(size=(B, d))
    return X, Y, W, v, p


def torch_risk(X, Y, W, v, p, loss):
    """The risk in torch, whose autograd is the reference (torch imported here: collecting this module imports none)."""
    import torch

    Xt, Wt = torch.tensor(X), torch.tensor(W)
    s = torch.softmax(torch.einsum("ntd,ed,...e->...nt", Xt, Wt, p), dim=-1)
    u = torch.tensor(Y) * torch.einsum("...nt,ntd,...d->...n", s, Xt, v)
    of_minus_u = {"logistic": torch.nn.functional.softplus, "exponential": torch.exp, "correlation": lambda m: m}
    return of_minus_u[loss](-u).mean(-1)  # l(u): log(1 + e^-u), e^-u, -u


@pytest.mark.parametrize("loss", LOSSES)
def test_risk_and_gradients_match_autograd(loss):
    import torch

    X, Y, W, v, p = random_problem(1)
    K, gamma = keys(X, W), token_scores(X, Y, v)
    pt = torch.tensor(p, requires_grad=True)
    vt = torch.tensor(np.broadcast_to(v, p.shape).copy(), requires_grad=True)
    value = torch_risk(X, Y, W, vt, pt, loss)
    value.sum().backward()
    np.testing.assert_allclose(risk(K, gamma, p, loss), value.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(grad_p(K, gamma, p, loss).value, pt.grad.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(grad_v(X, K, Y, v, p, loss).value, vt.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_batched_data_equals_per_run_calls():
    X, Y, W, v, p = random_problem(2, B=3)
    K, gamma = keys(X, W), token_scores(X, Y, v)
    Kb = np.stack([K * (1 + b) for b in range(3)])
    batched = grad_p(Kb, np.stack([gamma] * 3), p).value
    for b in range(3):
        np.testing.assert_allclose(batched[b], grad_p(K * (1 + b), gamma, p[b]).value, rtol=1e-13)


def mp_gradient(K, gamma, p, loss, dps=80):
    """grad L(p) in arbitrary precision, straight from eq. (15a)."""
    with mpmath.workdps(dps):
        n, T, d = K.shape
        g = [mpmath.mpf(0)] * d
        for i in range(n):
            z = [mpmath.fsum(mpmath.mpf(K[i, t, j]) * mpmath.mpf(p[j]) for j in range(d)) for t in range(T)]
            zmax = max(z)
            e = [mpmath.exp(zt - zmax) for zt in z]
            s = [et / mpmath.fsum(e) for et in e]
            u = mpmath.fsum(s[t] * mpmath.mpf(gamma[i, t]) for t in range(T))
            dl = {"logistic": -1 / (1 + mpmath.exp(u)), "exponential": -mpmath.exp(-u), "correlation": -1}[loss]
            for t in range(T):
                c = s[t] * (mpmath.mpf(gamma[i, t]) - u)
                for j in range(d):
                    g[j] += dl * c * mpmath.mpf(K[i, t, j]) / n
        norm = mpmath.sqrt(mpmath.fsum(x**2 for x in g))
        return np.array([float(x / norm) for x in g])


@pytest.mark.parametrize("scale", [50.0, 300.0, 3000.0])
@pytest.mark.parametrize("loss", ["logistic", "correlation"])
def test_gradient_direction_exact_in_saturation(scale, loss):
    # ||p|| in the hundreds and thousands: logit gaps far above 40 (and above 745, where every
    # non-selected probability underflows in float64).
    X, Y, W, v, _ = random_problem(3, n=2, T=4, d=3, B=1)
    K, gamma = keys(X, W), token_scores(X, Y, v)
    p = scale * np.array([0.6, -0.3, 0.74])
    exact = mp_gradient(K, gamma, p, loss, dps=60 + int(scale / 2))
    direction, zero = grad_p(K, gamma, p, loss).direction()
    assert not zero
    assert float(direction @ exact) > 1 - 1e-12


def test_naive_softmax_backward_loses_the_direction():
    # The failure the exact gradient exists for: torch's softmax backward at large ||p||.
    import torch

    X, Y, W, v, _ = random_problem(3, n=2, T=4, d=3, B=1)
    K, gamma = keys(X, W), token_scores(X, Y, v)
    p = 300.0 * np.array([0.6, -0.3, 0.74])
    exact = mp_gradient(K, gamma, p, "logistic", dps=200)
    pt = torch.tensor(p, requires_grad=True)
    torch_risk(X, Y, W, torch.tensor(v), pt, "logistic").backward()
    naive = pt.grad.numpy()
    naive_cos = 0.0 if not np.any(naive) else float(naive @ exact / np.linalg.norm(naive))
    assert naive_cos < 0.99


def test_losses_never_overflow():
    u = np.array([-1e4, -800.0, 0.0, 800.0, 1e4])
    np.testing.assert_allclose(loss_value(u, "logistic"), [1e4, 800.0, np.log(2), 0.0, 0.0], atol=1e-300)
    for loss in LOSSES:
        assert np.all(np.isfinite(log_neg_loss_derivative(u, loss)))
    # log(-l'(u)) = -log(1 + e^u) for the logistic loss
    np.testing.assert_allclose(log_neg_loss_derivative(np.array([-1e4, 1e4]), "logistic"), [0.0, -1e4])


def test_non_selected_mass_far_below_epsilon():
    K = np.array([[[0.0, 0.0], [1.0, 0.0], [0.5, 0.0]]])
    p = np.array([100.0, 0.0])  # gaps 50 and 100: 1 - s = e^-50 + e^-100 ~ 2e-22
    expected = float(
        mpmath.log(mpmath.exp(-50) + mpmath.exp(-100)) - mpmath.log(1 + mpmath.exp(-50) + mpmath.exp(-100))
    )
    np.testing.assert_allclose(log_non_selected_mass(K, p), [expected], rtol=1e-14)


def test_unknown_loss_names_the_allowed_values():
    with pytest.raises(ValueError, match="allowed: logistic, exponential, correlation"):
        loss_value(np.zeros(1), "hinge")


def test_model_output_selects_token_in_the_limit():
    # Paper below (ATT-SVM): lim_R X_i^T S(R K_i p_mm) = x_{i alpha_i}.
    X, Y, W, v, _ = random_problem(4, n=1, T=3, d=3, B=1)
    K = keys(X, W)
    direction = np.linalg.lstsq(K[0, 1:] - K[0, 0], -np.ones(2), rcond=None)[0]  # token 0 ahead by 1
    f = model_output(X, K, v, 1e4 * direction)
    np.testing.assert_allclose(f, X[:, 0] @ v, rtol=1e-12)
