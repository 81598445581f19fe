"""The W-ATT-SVM of one attention head (maxmargin.core.w_svm) against independent solves, and the extraction of
each head's key-query matrix from timm's attention (maxmargin.experiments.vit.probes)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DEFAULT_CONFIG, Lazy

from maxmargin.claims import evaluate_claims
from maxmargin.core.svm import att_svm
from maxmargin.core.w_svm import frobenius_cosine, query_inputs, w_att_svm, w_logits, w_margins
from maxmargin.core.w_svm_nuclear import w_att_svm_nuclear
from maxmargin.core.w_svm_nulls import random_rank_matrix, rank_ceiling, span_cosine
from maxmargin.experiments.vit.settings import ModelSettings

torch = Lazy("torch")  # imported by the tests that use it: collection imports no torch
vit_model = Lazy("maxmargin.experiments.vit.model")
probe = Lazy("maxmargin.experiments.vit.w_svm_probe")
heads = Lazy("maxmargin.experiments.vit_heads")


def _tokens(seed: int = 0, n: int = 6, t: int = 5, c: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A small fixed probe set and the tokens a random W selects on it."""
    rng = np.random.default_rng(seed)
    z, x = rng.standard_normal((n, c)), rng.standard_normal((n, t, c))
    return z, x, w_logits(rng.standard_normal((c + 1, c)), z, x).argmax(axis=1)


def _primal_qp(z: np.ndarray, x: np.ndarray, selected: np.ndarray, query_bias: bool = True) -> np.ndarray:
    """min 1/2 ||vec W||^2 s.t. <a_i (x_io - x_it)^T, W> >= 1, written out row by row: cvxopt's primal QP."""
    from cvxopt import matrix, solvers

    a = query_inputs(z, query_bias)
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
    model = vit_model.build_vit(settings).eval()
    with torch.no_grad():  # biases away from timm's zero init, so that the query-bias row is tested too
        model.blocks[-1].attn.qkv.bias.normal_(0.0, 0.5)
    return model, torch.randn(5, 3, 32, 32)


def test_head_key_query_reproduces_timms_cls_attention():
    model, images = _tiny_vit()
    z, x = heads.attention_inputs(model, images, batch_size=2)
    wt = heads.head_key_query(vit_model.last_attention(model))
    assert wt.shape == (2, 17, 16) and z.shape == (5, 16) and x.shape == (5, 17, 16)
    expected = vit_model.cls_attention(model, images).double().numpy()  # (B, heads, 1 + T), timm's own qkv
    for h in range(2):
        logits = w_logits(wt[h], z, x)
        # Equal up to a constant per image (q_h^T b_K,h): the same softmax, the same selected token.
        shift = logits - np.log(expected[:, h])
        np.testing.assert_allclose(shift - shift[:, :1], 0.0, atol=1e-4)
        assert np.array_equal(logits.argmax(axis=1), expected[:, h].argmax(axis=1))
    assert np.abs(wt[:, -1]).max() > 1e-3  # the query-bias row is there


PROBE = dict(
    images=4, soft_c=1e4, query_bias=True, null_draws=3, shuffles=2, nuclear_images=2, nuclear_every=0,
    nuclear_draws=2, seed=0, device="cpu", runtime=1,
)  # fmt: skip


def test_the_probe_of_snapshots_gives_every_column_with_its_nulls_and_ceiling():
    model, images = _tiny_vit()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    snapshots = {"epochs": [0, 3, 7], "states": {0: state, 3: state, 7: state}}
    settings = ModelSettings(patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0, img_size=32,
                             num_classes=10)  # fmt: skip
    rows = probe.probe_snapshots(snapshots, settings, {"test": images}, probe.WSvmSettings(**PROBE), batch_size=2)
    assert [(r["epoch"], r["head"], r["images"]) for r in rows] == [(e, h, "test") for e in (0, 3, 7) for h in (0, 1)]
    for r in rows:
        assert r["n_constraints"] == 4 * 16 and r["n_images"] == 4 and r["hard_margin"] and r["margins_met"] == 1.0
        assert 0.0 < r["cosine"] <= r["span_cosine"] + 1e-9 <= 1.0 + 1e-9
        assert r["cosine"] <= r["ceiling"] + 1e-9 and r["ceiling_fraction"] == pytest.approx(r["cosine"] / r["ceiling"])
        assert r["null_rank_sd"] > 0 and np.isfinite(r["null_shuffled"])
    # the same model at every snapshot: the same selections, and the nuclear-norm solve at the first and last only
    assert [np.isnan(r["selection_kept"]) for r in rows[:2]] == [True, True]
    assert [r["selection_kept"] for r in rows[2:]] == [1.0] * 4
    assert [np.isfinite(r["cosine_nuclear"]) for r in rows] == [True, True, False, False, True, True]
    with pytest.raises(ValueError, match=r"the probe needs 4 test images \(vit.w_svm.images\), but the run has 3"):
        probe.probe_snapshots(snapshots, settings, {"test": images[:3]}, probe.WSvmSettings(**PROBE), batch_size=2)


def test_the_authors_form_without_the_bias_row_is_the_same_svm_in_z():
    z, x, _ = _tokens(7)
    selected = w_logits(np.random.default_rng(1).standard_normal((3, 3)), z, x, query_bias=False).argmax(axis=1)
    res = w_att_svm(z, x, selected, query_bias=False)
    assert res.solution.shape == (3, 3) and res.hard
    np.testing.assert_allclose(res.solution, _primal_qp(z, x, selected, query_bias=False), atol=1e-6)
    model, images = _tiny_vit()
    assert heads.head_key_query(vit_model.last_attention(model), query_bias=False).shape == (2, 16, 16)


def test_feasibility_is_decided_by_the_hard_problem_whatever_the_soft_margin_weight():
    """A feasible instance whose multipliers exceed soft_c is still solved by its hard margin (a soft weight of
    1e-3 boxes every multiplier of this instance: the hard W_mm's squared norm, their sum, is about 7)."""
    z, x, selected = _tokens(5, n=5, t=5, c=3)
    res = w_att_svm(z, x, selected, soft_c=1e-3)
    assert res.hard and res.met == 1.0
    np.testing.assert_allclose(res.solution, _primal_qp(z, x, selected), atol=1e-6)
    assert np.linalg.norm(res.solution) ** 2 > 1.0


def test_an_infeasible_nuclear_norm_svm_returns_its_soft_margin_solution():
    """min ||w|| + C sum hinge(1 - <w, f_k>) with W of one column (C = 1: the nuclear norm is the 2-norm), checked
    against a direct minimisation; a copy of the selected token makes the hard problem infeasible."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    z, x = rng.standard_normal((4, 1)), rng.standard_normal((4, 3, 1))
    selected = np.array([0, 1, 2, 0])
    x[0, 1] = x[0, 0]  # 0 >= 1 cannot hold
    res = w_att_svm_nuclear(z, x, selected, soft_c=2.0)
    assert not res.hard and res.met < 1.0
    feats = np.array([np.outer(query_inputs(z)[i], x[i, selected[i]] - x[i, t]).ravel()
                      for i in range(4) for t in range(3) if t != selected[i]])  # fmt: skip

    def objective(w: np.ndarray) -> float:
        return float(np.linalg.norm(w) + 2.0 * np.maximum(0.0, 1.0 - feats @ w).sum())

    best = min((minimize(objective, w0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                "maxiter": 20000}) for w0 in rng.standard_normal((8, 2))), key=lambda r: r.fun)  # fmt: skip
    assert objective(res.solution.ravel()) == pytest.approx(best.fun, abs=1e-5)


def test_the_rank_ceiling_is_attained_and_never_beaten():
    rng = np.random.default_rng(0)
    w_mm = rng.standard_normal((9, 8))
    ceiling = rank_ceiling(w_mm, 3)
    u, s, vt = np.linalg.svd(w_mm)
    best = (u[:, :3] * s[:3]) @ vt[:3]
    assert frobenius_cosine(best, w_mm) == pytest.approx(ceiling, abs=1e-12)
    assert max(frobenius_cosine(random_rank_matrix(rng, (9, 8), 3), w_mm) for _ in range(200)) < ceiling
    assert rank_ceiling(np.eye(4), 1) == pytest.approx(0.5) and rank_ceiling(w_mm, 8) == pytest.approx(1.0)


def test_the_span_cosine_bounds_the_cosine_with_any_svm_solution_of_the_inputs():
    z, x, selected = _tokens(2, n=3, t=3, c=5)  # few inputs: the span is a strict subspace of the 6 x 5 matrices
    w_mm = w_att_svm(z, x, selected).solution
    assert span_cosine(w_mm, z, x) == pytest.approx(1.0, abs=1e-9)
    other = np.random.default_rng(4).standard_normal(w_mm.shape)
    assert abs(frobenius_cosine(other, w_mm)) <= span_cosine(other, z, x) < 0.9


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


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_pivoting_on_a_torch_device_gives_the_numpy_solution(seed):
    """The probe's device path (``vit.w_svm.device``: torch's float64 Cholesky) against numpy's, on the random
    instances of the solver tests and on a planted one (a W_mm that selects its own tokens)."""
    z, x, selected = _tokens(seed, n=8, t=6, c=5)
    on_torch = heads.torch_linalg(torch.device("cpu"))
    res, dev = w_att_svm(z, x, selected), w_att_svm(z, x, selected, linalg=on_torch)
    assert dev.hard == res.hard and dev.met == res.met and dev.support == res.support
    np.testing.assert_allclose(dev.solution, res.solution, atol=1e-6)
    planted = w_logits(3.0 * res.solution, z, x).argmax(axis=1)
    np.testing.assert_allclose(w_att_svm(z, x, planted, linalg=on_torch).solution, res.solution, atol=1e-6)


def test_the_qp_fallback_of_the_active_set_method_gives_the_same_solution(monkeypatch):
    import maxmargin.core.w_svm_active as w_svm_active
    import maxmargin.core.w_svm_dual as w_svm_dual

    z, x, selected = _tokens(6, n=8, t=6, c=4)
    exact = w_att_svm(z, x, selected).solution
    monkeypatch.setattr(w_svm_active, "STEPS_PER_CONSTRAINT", 0)  # the active-set method gives up at once,
    monkeypatch.setattr(w_svm_dual, "_PIVOTING_STEPS", 0)  # and no pivoting polishes: every round by cvxopt's QP
    res = w_att_svm(z, x, selected)
    assert res.hard
    np.testing.assert_allclose(res.solution, exact, atol=1e-6)


def test_a_run_without_snapshots_gets_a_panel_that_says_so() -> None:
    """vit.train.snapshot_every 0 (the GPU session's config): the table is empty and the companion panel of Figure 7
    says why, instead of failing the run's docs page."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from maxmargin.figures.vit import NO_W_SVM, draw_w_svm
    from maxmargin.registry import columns

    fig = draw_w_svm(pd.DataFrame(columns=columns("vit_w_svm")), min_w_svm_gain=0.2)
    assert [t.get_text() for t in fig.texts] == [NO_W_SVM] and not fig.axes
    plt.close(fig)


def _w_svm_table(cosine: dict[int, list[float]], null: float = 0.1, null_sd: float = 0.02, **last: float):
    """Table vit_w_svm with the given head cosines per epoch, a flat null, a ceiling of 0.6, and the last epoch's
    other columns overridden by ``last``."""
    import pandas as pd

    from maxmargin.registry import columns

    rows = []
    for epoch, heads in cosine.items():
        for head, c in enumerate(heads):
            rows.append({
                "epoch": epoch, "head": head, "cosine": c, "null_rank": null, "null_rank_sd": null_sd,
                "null_shuffled": 0.2, "null_shuffled_sd": 0.02, "null_shuffled_drawn": 4, "null_shuffled_kept": 2,
                "cosine_null_images": c, "n_images_null": 256, "span_cosine": 0.9, "ceiling": 0.6,
                "ceiling_fraction": c / 0.6, "cosine_nuclear": 0.5, "cosine_frobenius_nuclear_images": 0.4,
                "null_nuclear_gap": 0.05, "null_nuclear_gap_sd": 0.01, "n_images_nuclear": 16, "hard_margin": True,
                "margins_met": 1.0, "null_failed": 0,
                "n_images": 256, "n_constraints": 16384, "support": 80, "w_frobenius": 1.0, "svm_frobenius": 3.0,
                "selected_cls": 0.0, "selection_kept": 0.9, "dataset": "fashion_mnist",
                "status": "optimal", "nuclear_status": "optimal", "images": "test",
            })  # fmt: skip
    table = pd.DataFrame(rows)[columns("vit_w_svm")]
    last_epoch = table["epoch"] == max(cosine)
    for key, value in last.items():  # a scalar, or one value per head
        table.loc[last_epoch, key] = value
    return table


def _path(start: float, end: float, jumps: tuple[float, ...] = (0.0, 0.02, 0.0, 0.01)) -> dict[int, list[float]]:
    """Head cosines every 10 epochs to 100: the jump from the initialisation (0.1 at epoch 0, ``start`` at 10 and
    over the first half), then from epoch 50 linear in ln(epoch) to ``end`` at 100; each head offset by ``jumps``
    and a small alternating jitter."""
    x = np.log(np.arange(50, 101, 10) / 50) / np.log(2)
    late = dict(zip(range(50, 101, 10), start + (end - start) * x, strict=True))
    path = {0: 0.1, 10: start, 20: start, 30: start, 40: start} | late
    return {e: [c + j + (0.004 if (e // 10 + h) % 2 else -0.004) for h, j in enumerate(jumps)] for e, c in path.items()}


RISING = _path(0.3, 0.5)  # rises 0.2 (a third of the ceiling 0.6) over the last half
FLAT = _path(0.3, 0.3)
FALLING = _path(0.5, 0.4)


@pytest.mark.parametrize(
    "cosine, verdict",
    [
        (RISING, "holds"),  # +0.4 over the null at the end, rising toward the ceiling over epochs 50-100
        (_path(0.15, 0.16), "differs"),  # gain +0.06 over the null, under the bar 0.2
        (FLAT, "differs"),  # a plateau: the rise's interval excludes vit.guard.min_w_svm_rise
        (FALLING, "differs"),
        ({**RISING, 100: [0.2, 0.3, 0.2, 0.62]}, "inconclusive"),  # a gain whose interval over the heads holds 0.2
    ],
)
def test_the_direction_claim_needs_the_gain_over_the_matched_null_and_a_rise_toward_the_ceiling(cosine, verdict):
    """Gain over the null and a rise of cos / ceiling against ln(epoch) over the last half: holds; a small gain, a
    plateau or a fall: differs; a gain whose t-interval over the 4 heads contains the bar 0.2: inconclusive."""
    assert DEFAULT_CONFIG["vit"]["guard"]["min_w_svm_gain"] == 0.2
    claims = evaluate_claims({"vit_w_svm": _w_svm_table(cosine)}, DEFAULT_CONFIG).set_index("claim_id")
    row = claims.loc["vit_w_svm_direction"]
    assert row["verdict"] == verdict, row.to_dict()
    assert "against the rank-d_head null 0.100" in row["measured"] and "of the rank ceiling 0.600" in row["measured"]
    assert "on 256 test images" in row["measured"]
    if verdict != "holds":
        assert row["note"].startswith(f"{verdict}: ")


def test_the_direction_claims_trend_is_judged_over_the_last_half_of_the_epochs():
    """A rise over all epochs made by the first epochs' jump from the initialisation, then a plateau: judged over all
    epochs the trend would rise; over the last half (the epochs from vit.guard.w_svm_trend_from = 0.5 of the last
    on), which the measurement and the note name, it differs, and the note opens with the trend."""
    guard = DEFAULT_CONFIG["vit"]["guard"]
    assert guard["w_svm_trend_from"] == 0.5 and guard["min_w_svm_rise"] == 0.05
    row = evaluate_claims({"vit_w_svm": _w_svm_table(_path(0.45, 0.45))}, DEFAULT_CONFIG).set_index("claim_id")
    row = row.loc["vit_w_svm_direction"]
    assert row["verdict"] == "differs", row.to_dict()
    assert "from epoch 50 on (the last 50% of the 100 epochs: vit.guard.w_svm_trend_from)" in row["measured"]
    assert row["note"].startswith("differs: trend differs: the rise of cos / ceiling from epoch 50 on")
    assert "excludes a rise of vit.guard.min_w_svm_rise = 0.05" in row["note"]
    assert "the theory is about W's limit direction" in row["note"] and "power, simulated" in row["note"]


def test_a_trend_that_cannot_be_measured_says_why():
    """Two measured epochs (the first and the last snapshot of a long run) leave one epoch in the judged window: no
    slope, and the verdict is inconclusive with that reason, not an empty one."""
    row = evaluate_claims({"vit_w_svm": _w_svm_table({0: RISING[0], 400: RISING[100]})}, DEFAULT_CONFIG)
    row = row.set_index("claim_id").loc["vit_w_svm_direction"]
    assert row["verdict"] == "inconclusive", row.to_dict()
    assert row["note"].startswith(
        "inconclusive: trend inconclusive: the trend is not measured: the probe measured 1 epoch from epoch 400 on "
        "(the last 50% of the 400 epochs: vit.guard.w_svm_trend_from), and the test needs at least 5 (measured "
        "epochs: 0, 400)"
    ), row["note"]
    assert "not measured (1 epoch)" in row["measured"] and "nan" not in row["measured"]


def test_three_heads_whose_bootstrap_excludes_0_and_t_interval_does_not_are_inconclusive():
    """Three heads, each far from its shuffled null by 0.05, 0.1 and 0.6: every percentile bootstrap resample's
    mean is at least 0.05 (its interval excludes 0), Student's t-interval over 3 heads (t_2 = 4.30) contains 0: the
    specificity and nuclear claims are inconclusive, and their notes say the interval is Student's t."""
    from maxmargin.claims.base import bootstrap_interval, mean_interval

    excess = np.array([0.05, 0.1, 0.6])
    guard = DEFAULT_CONFIG["vit"]["guard"]
    assert bootstrap_interval(excess, "mean", **guard["bootstrap"], confidence=guard["confidence"])[0] > 0
    interval = mean_interval(excess, confidence=guard["confidence"], bootstrap=guard["bootstrap"])
    assert interval.method == "t" and interval.low < 0 < interval.high
    epochs = {e: [0.5, 0.5, 0.5] for e in (0, 10, 20)}
    table = _w_svm_table(
        epochs, null_shuffled=0.5 - excess, null_shuffled_sd=1e-6, null_nuclear_gap=0.1 - excess,
        null_nuclear_gap_sd=1e-6, cosine_nuclear=0.5, cosine_frobenius_nuclear_images=0.4,
    )  # fmt: skip
    claims = evaluate_claims({"vit_w_svm": table}, DEFAULT_CONFIG).set_index("claim_id")
    for claim in ("vit_w_svm_specific", "vit_w_svm_nuclear"):
        row = claims.loc[claim]
        assert row["verdict"] == "inconclusive", row.to_dict()
        assert "[-" in row["measured"] and "contains 0" in row["note"], row.to_dict()
        assert "95% Student t-interval over the 3 heads" in row["note"], row["note"]


@pytest.mark.parametrize(
    "last, specific, nuclear",
    [
        ({}, "holds", "holds"),  # own 0.52 vs shuffled 0.2; nuclear gap 0.1 vs the null's 0.05
        ({"null_shuffled": 0.75, "cosine_nuclear": 0.42}, "differs", "differs"),
        # each head's null a draw of its own: the heads' differences spread around 0 (own - shuffled: 0.2, 0.05,
        # -0.2, -0.03; nuclear excess: 0.1, -0.05, -0.1, 0.06)
        ({"null_shuffled": [0.2, 0.4, 0.62, 0.45], "null_nuclear_gap": [0.0, 0.15, 0.2, 0.04]},
         "inconclusive", "inconclusive"),
    ],
)  # fmt: skip
def test_the_specificity_and_nuclear_claims_are_judged_by_the_heads_spread(last, specific, nuclear):
    """Each head's null is a mean over its own draws: the heads' spread of their differences with it carries the
    draws' spread, and the interval over heads (Student's t for these 4) is judged against 0. Own minus shuffled is
    -0.1 at the first epoch (0.1 against 0.2): at the last it gains +0.42 (holds), loses about 0.15 (differs) or
    spreads around no gain (inconclusive)."""
    claims = evaluate_claims({"vit_w_svm": _w_svm_table(RISING, **last)}, DEFAULT_CONFIG).set_index("claim_id")
    assert claims.loc["vit_w_svm_specific", "verdict"] == specific, claims.loc["vit_w_svm_specific"].to_dict()
    assert claims.loc["vit_w_svm_nuclear", "verdict"] == nuclear, claims.loc["vit_w_svm_nuclear"].to_dict()
