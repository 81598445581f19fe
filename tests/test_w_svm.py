"""The W-ATT-SVM of one attention head (maxmargin.core.w_svm) against independent solves, and the extraction of
each head's key-query matrix from timm's attention (maxmargin.experiments.vit.probes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import DEFAULT_CONFIG

from maxmargin.claims import evaluate_claims
from maxmargin.core.svm import att_svm
from maxmargin.core.w_svm import frobenius_cosine, query_inputs, w_att_svm, w_att_svm_nuclear, w_logits, w_margins
from maxmargin.experiments.vit.model import build_vit, cls_attention, last_attention
from maxmargin.experiments.vit.probes import WSvmProbe, attention_inputs, head_key_query
from maxmargin.experiments.vit.results import w_svm_table
from maxmargin.experiments.vit.settings import ModelSettings, ProbeSettings


def _tokens(seed: int = 0, n: int = 6, t: int = 5, c: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A small fixed probe set and the tokens a random W selects on it."""
    rng = np.random.default_rng(seed)
    z, x = rng.standard_normal((n, c)), rng.standard_normal((n, t, c))
    return z, x, w_logits(rng.standard_normal((c + 1, c)), z, x).argmax(axis=1)


def _primal_qp(z: np.ndarray, x: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """min 1/2 ||vec W||^2 s.t. <a_i (x_io - x_it)^T, W> >= 1, written out row by row: cvxopt's primal QP."""
    from cvxopt import matrix, solvers

    a = query_inputs(z)
    rows = [
        np.outer(a[i], x[i, selected[i]] - x[i, t]).ravel()
        for i in range(len(z))
        for t in range(x.shape[1])
        if t != selected[i]
    ]
    d = a.shape[1] * x.shape[2]
    opts = {"show_progress": False, "abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12}
    sol = solvers.qp(
        matrix(np.eye(d)), matrix(np.zeros(d)), matrix(-np.array(rows)), matrix(-np.ones(len(rows))), options=opts
    )
    return np.array(sol["x"]).reshape(a.shape[1], x.shape[2])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_w_svm_agrees_with_the_primal_qp_and_the_vectorised_att_svm(seed):
    z, x, selected = _tokens(seed)
    res = w_att_svm(z, x, selected)
    assert res.hard and res.met == 1.0 and res.n_constraints == 6 * 4
    primal = _primal_qp(z, x, selected)
    np.testing.assert_allclose(res.solution, primal, atol=1e-6)
    assert frobenius_cosine(res.solution, primal) > 1 - 1e-9
    # The same problem as (ATT-SVM) in vec(W) with keys a_i (x) x_it (Lemma 1).
    keys = np.einsum("ia,itc->itac", query_inputs(z), x).reshape(len(z), x.shape[1], -1)
    p = att_svm(keys, selected).solution.reshape(primal.shape)
    np.testing.assert_allclose(res.solution, p, atol=1e-6)
    margins = w_margins(res.solution, z, x, selected)
    assert margins.min() == pytest.approx(1.0, abs=1e-9)  # the margin is attained: the solution is not scaled up


def test_a_planted_svm_solution_scores_cosine_one_and_a_random_w_does_not():
    z, x, selected = _tokens(3, n=8, t=6, c=4)
    w_mm = w_att_svm(z, x, selected).solution
    # W_mm selects the same tokens and is its own max-margin solution: cosine 1, at any scale.
    assert np.array_equal(w_logits(w_mm, z, x).argmax(axis=1), selected)
    again = w_att_svm(z, x, w_logits(3.7 * w_mm, z, x).argmax(axis=1)).solution
    assert frobenius_cosine(3.7 * w_mm, again) == pytest.approx(1.0, abs=1e-9)
    other = np.random.default_rng(9).standard_normal(w_mm.shape)
    assert frobenius_cosine(other, w_mm) < 0.9


def test_a_copy_of_the_selected_token_falls_back_to_the_soft_margin():
    z, x, selected = _tokens(4)
    x[0, (selected[0] + 1) % x.shape[1]] = x[0, selected[0]]  # 0 >= 1 cannot hold
    res = w_att_svm(z, x, selected, soft_c=10.0)
    assert not res.hard
    assert 0.9 < res.met < 1.0  # every other margin is met: one constraint of 24 fails
    assert res.met == pytest.approx(23 / 24)


def _tiny_vit() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    settings = ModelSettings(
        patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0, img_size=32, num_classes=10
    )
    model = build_vit(settings).eval()
    with torch.no_grad():  # biases away from timm's zero init, so that the query-bias row is tested too
        model.blocks[-1].attn.qkv.bias.normal_(0.0, 0.5)
    return model, torch.randn(5, 3, 32, 32)


def test_head_key_query_reproduces_timms_cls_attention():
    model, images = _tiny_vit()
    z, x = attention_inputs(model, images, batch_size=2)
    wt = head_key_query(last_attention(model))
    assert wt.shape == (2, 17, 16) and z.shape == (5, 16) and x.shape == (5, 17, 16)
    expected = cls_attention(model, images).double().numpy()  # (B, heads, 1 + T), timm's own qkv
    for h in range(2):
        logits = w_logits(wt[h], z, x)
        # Equal up to a constant per image (q_h^T b_K,h): the same softmax, the same selected token.
        shift = logits - np.log(expected[:, h])
        np.testing.assert_allclose(shift - shift[:, :1], 0.0, atol=1e-4)
        assert np.array_equal(logits.argmax(axis=1), expected[:, h].argmax(axis=1))
    assert np.abs(wt[:, -1]).max() > 1e-3  # the query-bias row is there


def test_w_svm_probe_rows_on_a_tiny_vit():
    model, images = _tiny_vit()

    class Settings:  # only what the probe reads
        probe = ProbeSettings(n_images=5, image_index=0, w_svm_every=3, w_svm_images=4, w_svm_soft_c=1e4)
        train = type("T", (), {"epochs": 7, "threads": 1})()

    probe = WSvmProbe(Settings(), images, batch_size=2)
    assert [e for e in range(8) if probe.due(e)] == [0, 3, 6, 7]
    rows = probe.measure(model, 0)
    assert [r["head"] for r in rows] == [0, 1]
    for r in rows:
        assert r["n_constraints"] == 4 * 16 and r["hard_margin"] and r["margins_met"] == 1.0
        assert 0.0 < r["cosine"] < 1.0


def test_the_nuclear_norm_svm_trades_frobenius_norm_for_nuclear_norm():
    z, x, selected = _tokens(5, n=5, t=4, c=3)
    frob, nuc = w_att_svm(z, x, selected), w_att_svm_nuclear(z, x, selected)
    assert nuc.hard and nuc.met == 1.0
    assert w_margins(nuc.solution, z, x, selected).min() == pytest.approx(1.0, abs=1e-6)

    def nuclear(w):
        return np.linalg.svd(w, compute_uv=False).sum()

    # Each is the minimiser of its own norm over the same feasible set.
    assert nuclear(nuc.solution) <= nuclear(frob.solution) + 1e-6
    assert np.linalg.norm(frob.solution) <= np.linalg.norm(nuc.solution) + 1e-9
    # Scaling either down breaks a margin: both sit on the boundary of the feasible set.
    assert not np.all(w_margins(0.99 * nuc.solution, z, x, selected) >= 1.0)


def _w_svm_rows(cosines: dict[int, list[float]]) -> list[dict]:
    return [
        {"epoch": e, "head": h, "cosine": c, "hard_margin": True, "margins_met": 1.0, "n_constraints": 16384,
         "support": 80, "w_frobenius": 1.0, "svm_frobenius": 3.0, "selected_cls": 0.0, "seconds": 0.5}
        for e, heads in cosines.items()
        for h, c in enumerate(heads)
    ]  # fmt: skip


@pytest.mark.parametrize(
    "cosines, verdict",
    [
        ({0: [0.1, 0.12], 10: [0.3, 0.35], 20: [0.5, 0.55]}, "holds"),  # +0.415, rising
        ({0: [0.1, 0.12], 10: [0.2, 0.25], 20: [0.25, 0.3]}, "differs"),  # +0.165 < 0.2
        ({0: [0.1, 0.12], 10: [0.6, 0.65], 20: [0.4, 0.45]}, "differs"),  # Spearman 0.5 < 0.8
    ],
)
def test_the_claim_needs_the_gain_over_the_null_and_a_rise(cosines, verdict):
    assert DEFAULT_CONFIG["vit"]["guard"]["min_w_svm_gain"] == 0.2
    assert DEFAULT_CONFIG["vit"]["guard"]["min_w_svm_spearman"] == 0.8
    table = w_svm_table({"w_svm": _w_svm_rows(cosines), "dataset": "fashion_mnist"})
    assert list(table["cosine_init"]) == [0.1, 0.12] * 3 and "seconds" not in table
    claims = evaluate_claims({"vit_w_svm": table}, DEFAULT_CONFIG).set_index("claim_id")
    assert claims.loc["vit_w_svm_direction", "verdict"] == verdict
    assert "0.110 at initialisation" in claims.loc["vit_w_svm_direction", "measured"]


def test_the_qp_fallback_of_pivoting_gives_the_same_solution(monkeypatch):
    import maxmargin.core.w_svm as w_svm

    z, x, selected = _tokens(6, n=8, t=6, c=4)
    exact = w_att_svm(z, x, selected).solution
    monkeypatch.setattr(w_svm, "_PIVOTING_STEPS", 0)  # every round by cvxopt's QP
    res = w_att_svm(z, x, selected)
    assert res.hard
    np.testing.assert_allclose(res.solution, exact, atol=1e-6)


def test_a_run_without_the_probe_gets_a_panel_that_says_so() -> None:
    """vit.probe.w_svm_every 0 (the GPU session's config): the table is empty and the companion panel of Figure 7
    says why, instead of failing the run's docs page."""
    import matplotlib.pyplot as plt

    from maxmargin.figures.vit import NO_W_SVM, draw_w_svm

    table = w_svm_table({"w_svm": [], "dataset": "fashion_mnist"})
    assert table.empty
    fig = draw_w_svm(table, min_w_svm_gain=DEFAULT_CONFIG["vit"]["guard"]["min_w_svm_gain"])
    assert [t.get_text() for t in fig.texts] == [NO_W_SVM] and not fig.axes
    plt.close(fig)
