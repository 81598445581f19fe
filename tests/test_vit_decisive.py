"""The decisive experiment (maxmargin.experiments.vit_decisive) and its claims (maxmargin.claims.vit_decisive): the
frozen [CLS] path against timm's own logits, the gradients against finite differences and autograd, the ray test on
planted tokens where the theory's premise holds and where it fails, and the convergence claims on planted tokens
where the theory holds, on the untrained model, and on tables of each verdict."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG, Lazy

from maxmargin.claims import vit_decisive as claims
from maxmargin.core.w_svm import frobenius_cosine, w_att_svm

torch = Lazy("torch")  # imported by the tests that use it: collection imports no torch
decisive = Lazy("maxmargin.experiments.vit_decisive")
timm_vit = Lazy("timm.models.vision_transformer")

CFG = {"vit": {"decisive": DEFAULT_CONFIG["vit"]["decisive"], "guard": DEFAULT_CONFIG["vit"]["guard"]}}


def _tiny_vit(seed: int = 0):
    """A tiny timm ViT (2 blocks, 2 heads, 16 tokens + [CLS]) with weights and biases far from timm's init, so that
    every term of the path (the query-bias row, the value biases, the MLP) counts, and 12 images with labels."""
    torch.manual_seed(seed)
    net = timm_vit.VisionTransformer(
        img_size=32, patch_size=8, num_classes=10, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0,
        qkv_bias=True, class_token=True, global_pool="token",
    )  # fmt: skip
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return net, torch.randn(12, 3, 32, 32), torch.randint(0, 10, (12,))


def test_the_recomputed_cls_path_is_timms_network_in_float64():
    net, images, labels = _tiny_vit()
    frozen, w = decisive.snapshot_layer(net, images, labels, batch_size=5, query_bias=True, dtype=torch.float64)
    twin = copy.deepcopy(net).double().eval()
    with torch.no_grad():
        expected = twin(images.double())
        found, _ = decisive.class_logits(frozen, torch.as_tensor(w))
    assert expected.abs().max() > 1.0  # logits that a wrong path could not match by being near 0
    assert float((found - expected).abs().max()) <= 1e-10
    # the ray's c W_h is timm's network with W_Q and b_Q scaled by c: only the last layer's key-query matrices change
    attn = twin.blocks[-1].attn
    with torch.no_grad():
        attn.qkv.weight[:16] *= 3.0
        attn.qkv.bias[:16] *= 3.0
        scaled, _ = decisive.class_logits(frozen, torch.as_tensor(3.0 * w))
        assert float((scaled - twin(images.double())).abs().max()) <= 1e-10
        assert float((scaled - expected).abs().max()) > 1e-3
    loss = decisive.network_loss(frozen, torch.as_tensor(w))
    assert float(loss.loss) == pytest.approx(float(torch.nn.functional.cross_entropy(expected, labels)), rel=1e-12)
    # the pipeline's default: the layers before the last at the float32 they were trained at, the path in float64
    single, _ = decisive.snapshot_layer(net, images, labels, batch_size=5, query_bias=True)
    with torch.no_grad():
        found32, _ = decisive.class_logits(single, torch.as_tensor(w))
        assert 1e-12 < float((found32 - expected).abs().max()) <= 1e-4
    assert loss.saturation.shape == (2,) and np.all((loss.saturation > 1 / 17) & (loss.saturation < 1))


def test_the_ray_scales_only_its_heads_and_its_losses_are_the_networks():
    net, images, labels = _tiny_vit(3)
    frozen, w = decisive.snapshot_layer(net, images, labels, batch_size=12, query_bias=True)
    direction = np.random.default_rng(0).standard_normal(w.shape)
    rows = pd.DataFrame(decisive.ray_losses(frozen, w, {"d": direction}, np.array([0.5, 4.0])))
    assert len(rows) == 2 * 3 and rows["heads"].tolist() == ["one"] * 4 + ["all"] * 2
    for row in rows.itertuples():
        scaled = [int(row.head)] if row.heads == "one" else [0, 1]
        w_c = w.copy()
        w_c[scaled] = row.c * direction[scaled]
        with torch.no_grad():
            expected = decisive.network_loss(frozen, torch.as_tensor(w_c))
        assert row.loss == pytest.approx(float(expected.loss), rel=1e-12)
        assert row.saturation == pytest.approx(float(expected.saturation[scaled].mean()), rel=1e-12)
        assert row.w_frobenius == pytest.approx(row.c * np.linalg.norm(direction[scaled]), rel=1e-12)


def test_the_frozen_networks_gradient_in_w_is_its_derivative():
    net, images, labels = _tiny_vit(1)
    frozen, w = decisive.snapshot_layer(net, images, labels, batch_size=12, query_bias=True)
    wt = torch.tensor(w, requires_grad=True)
    (grad,) = torch.autograd.grad(decisive.network_loss(frozen, wt).loss, wt)
    rng = np.random.default_rng(0)
    for _ in range(3):
        e, eps = torch.as_tensor(rng.standard_normal(w.shape)), 1e-5
        with torch.no_grad():
            up, down = (decisive.network_loss(frozen, wt + s * eps * e).loss for s in (1, -1))
        assert float((grad * e).sum()) == pytest.approx(float(up - down) / (2 * eps), rel=1e-7, abs=1e-10)
    # the attention output written around the selected token is the plain softmax average, value and gradient
    logits = torch.tensor(rng.standard_normal((4, 2, 5)) * 3, requires_grad=True)
    values = torch.as_tensor(rng.standard_normal((4, 2, 5, 3)))
    plain = torch.einsum("nht,nhtd->nhd", torch.softmax(logits, -1), values).reshape(4, -1)
    ours = decisive.attention_output(logits, values)
    torch.testing.assert_close(ours, plain, rtol=0, atol=1e-14)
    g = torch.as_tensor(rng.standard_normal((4, 6)))
    (a,), (b,) = torch.autograd.grad((ours * g).sum(), logits), torch.autograd.grad((plain * g).sum(), logits)
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-14)


def _planted(n: int = 8, tokens: int = 5, width: int = 6, seed: int = 0):
    """Tokens where image i's token 1 is its own: queries z_i, keys x_it, labels y_i in {0, 1}, and the W-ATT-SVM
    W_mm of selecting token 1 everywhere (a hard-margin solution: 32 margins in 42 unknowns)."""
    rng = np.random.default_rng(seed)
    z, x = rng.standard_normal((n, width)), rng.standard_normal((n, tokens, width))
    x[:, 0] = z  # [CLS]'s own key input is its query input, as in the network
    y = np.arange(n) % 2
    res = w_att_svm(z, x, np.ones(n, dtype=int))
    assert res.hard
    return z, x, y, res.solution


def _planted_layer(sign: float, seed: int = 0):
    """A one-head frozen layer on :func:`_planted`'s tokens whose tail reads the two class logits straight from the
    attention output: token 1's value is ``sign`` x 4 (e_y - e_other), the others' are small. ``sign`` +1: the
    selected tokens carry the label (locally optimal: hard attention on them lowers the loss); -1: they carry the
    other class (attending to them harder raises it)."""
    z, x, y, w_mm = _planted(seed=seed)
    rng = np.random.default_rng(seed + 1)
    values = 0.1 * rng.standard_normal((len(z), 1, x.shape[1], 2))
    values[np.arange(len(z)), 0, 1] = sign * 4.0 * (np.eye(2)[y] - np.eye(2)[1 - y])
    query = np.concatenate([z, np.ones((len(z), 1))], axis=1)
    tail = torch.nn.Module()
    tail.forward = lambda o, residual: o  # the class logits are the head's output
    as_t = torch.as_tensor
    frozen = decisive.FrozenLayer(as_t(query), as_t(x), as_t(values), as_t(np.zeros((len(z), 2))), as_t(y), tail)
    return frozen, 0.3 * w_mm[None] / np.linalg.norm(w_mm)


@pytest.mark.parametrize(("sign", "verdict"), [(1.0, "holds"), (-1.0, "differs")])
def test_the_ray_tests_precondition_holds_on_locally_optimal_tokens_and_fails_on_the_others(sign, verdict):
    frozen, w = _planted_layer(sign)
    z, x = frozen.numpy_inputs()
    memo = decisive.SvmMemo(z, x, lambda z, x, s: w_att_svm(z, x, s))
    grid = decisive.ray_grid(0.5, 64.0, 8)
    rows = pd.DataFrame(decisive.ray_test(frozen, w, memo, grid)).assign(epoch=60, n_images=len(z), dataset="planted")
    assert set(rows["c"]) == set(grid) and 1.0 in set(rows["c"])
    # W selects token 1 everywhere, so its max-margin direction is W itself: cosine 1, the two rays the same losses
    assert rows["cosine"].min() == pytest.approx(1.0, abs=1e-9)
    mm = rows[rows["direction"] == "max_margin"].sort_values(["heads", "c"])
    own = rows[rows["direction"] == "trained"].sort_values(["heads", "c"])
    np.testing.assert_allclose(mm["loss"].to_numpy(), own["loss"].to_numpy(), rtol=1e-9)
    losses = mm[mm["heads"] == "all"]["loss"].to_numpy()
    assert (np.diff(losses) < 0).all() if sign > 0 else (np.diff(losses) > 0).all()
    measured, found, note = claims._precondition({"vit_decisive_ray": rows}, CFG)
    assert found == verdict and "on 8 training images" in measured
    if verdict == "differs":
        assert note.startswith("differs: along the max-margin ray of head 0 alone the loss rises by ")


def test_a_flat_ray_is_inconclusive_and_says_so():
    rows = pd.DataFrame(
        {"epoch": 5, "direction": "max_margin", "heads": ["one"] * 3 + ["all"] * 3, "head": [0, 0, 0, None, None, None],
         "c": [1.0, 2.0, 4.0] * 2, "loss": [0.5, 0.5, 0.5, 0.5, 0.4, 0.3], "cosine": 0.7, "n_images": 10}
    )  # fmt: skip
    rows = pd.concat([rows, rows.assign(direction="trained")])
    measured, verdict, note = claims._precondition({"vit_decisive_ray": rows}, CFG)
    assert verdict == "inconclusive" and note.startswith("inconclusive: along the max-margin ray of head 0 alone")
    assert "falls along the max-margin ray from c = 1 on for 1 of 2 scalings" in measured


def test_the_one_layer_gradient_is_autograds_and_exact_in_direction_under_saturation():
    z, x, y, w_mm = _planted()
    rng = np.random.default_rng(3)
    query = np.concatenate([z, np.ones((len(z), 1))], axis=1)
    v = rng.standard_normal((2, x.shape[2]))
    labels = 2.0 * y - 1
    data = decisive.OneLayerData(query, x, labels, v, labels[None, :, None] * np.einsum("hd,ntd->hnt", v, x))
    w = rng.standard_normal((2, *w_mm.shape))
    scaled, log_scale = decisive.one_layer_gradient(data, w)
    wt = torch.tensor(w, requires_grad=True)
    s = torch.softmax(torch.einsum("nc,hcd,ntd->hnt", torch.as_tensor(query), wt, torch.as_tensor(x)), dim=-1)
    f = torch.einsum("hnt,hnt->hn", s, torch.as_tensor(data.scores))
    risk = torch.nn.functional.softplus(-f).mean(dim=1)
    (expected,) = torch.autograd.grad(risk.sum(), wt)
    np.testing.assert_allclose(scaled * np.exp(log_scale)[:, None, None], expected.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(decisive.one_layer_risk(data, w), risk.detach().numpy(), rtol=1e-12)
    # at 500 x the scale every softmax is one-hot in float64: the value underflows, its direction does not
    far, log_far = decisive.one_layer_gradient(data, 500 * w)
    assert np.all(np.isfinite(log_far)) and np.all(np.linalg.norm(far.reshape(2, -1), axis=1) > 0)


def _one_layer(seed: int = 0):
    """The one-layer model on :func:`_planted`'s tokens with token 1 the top-score token of every image (score 2
    against at most 0: Assumption B's setting, where GD's direction converges to the W-ATT-SVM of the top tokens)."""
    z, x, y, w_mm = _planted(seed=seed)
    rng = np.random.default_rng(seed + 7)
    labels = 2.0 * y - 1
    scores = -rng.uniform(0.0, 1.0, (len(z), x.shape[1]))
    scores[:, 1] = 2.0
    query = np.concatenate([z, np.ones((len(z), 1))], axis=1)
    data = decisive.OneLayerData(query, x, labels, np.zeros((1, x.shape[2])), scores[None])
    start = 0.5 * w_mm / np.linalg.norm(w_mm) + 0.2 * rng.standard_normal(w_mm.shape) / np.sqrt(w_mm.size)
    return data, start[None], w_mm


def _rows(trajectory, data, model: str, arm: str) -> list[dict]:
    memo = decisive.SvmMemo(data.tokens[:, 0], data.tokens, lambda z, x, s: w_att_svm(z, x, s))
    found = decisive.direction_rows(trajectory, data.query, data.tokens, memo, data.scores)
    return [{"epoch": 60, "model": model, "arm": arm, **r} for r in found]


def test_normalised_gd_on_planted_tokens_converges_to_the_w_att_svm_and_the_claim_holds():
    data, start, w_mm = _one_layer()
    logged = decisive.log_steps(2000, 10)
    rows = []
    for arm, normalized in (("gd", False), ("normalized_gd", True)):
        trajectory = decisive.one_layer_gd(data, start, lr=0.05, steps=2000, logged=logged, normalized=normalized)
        rows += _rows(trajectory, data, "one_layer", arm)
    table = pd.DataFrame(rows).assign(dataset="planted")
    last = table[(table["arm"] == "normalized_gd") & (table["step"] == 2000)].iloc[0]
    assert last["cosine"] > 0.99 and last["locally_optimal"] == 1.0 and last["top_score"] == 1.0
    assert last["w_frobenius"] > 50 and last["saturation"] > 0.999
    assert frobenius_cosine(trajectory[-1].w[0], w_mm) == pytest.approx(last["cosine"], abs=1e-9)
    plain = table[(table["arm"] == "gd") & (table["step"] == 2000)].iloc[0]
    assert plain["cosine"] < last["cosine"] and plain["w_frobenius"] < 10  # plain GD's norm grows like log t
    one_head = pd.concat([table, table.assign(head=1)])  # an interval needs two heads: the same head twice
    measured, verdict, note = claims._converges({"vit_decisive_gd": one_head}, CFG, "one_layer")
    assert verdict == "holds", note
    assert "on 8 images" in measured and "locally optimal on 100.0% of the images" in measured


def test_the_untrained_network_frozen_does_not_pass_the_bar():
    net, images, labels = _tiny_vit(2)
    frozen, w = decisive.snapshot_layer(net, images, labels, batch_size=12, query_bias=True)
    z, x = frozen.numpy_inputs()
    memo = decisive.SvmMemo(z, x, lambda z, x, s: w_att_svm(z, x, s))
    cfg = {"steps": 30, "logs": 5, "lr": 0.5, "normalized_lr": 0.05}
    rows = decisive.frozen_arms(frozen, w, memo, cfg, lambda what, total: None)
    table = pd.DataFrame(rows).assign(epoch=0, dataset="tiny")
    assert sorted(table["step"].unique()) == [0, 1, 2, 5, 13, 30]
    assert table["locally_optimal"].isna().all() and (table["n_images"] == 12).all()
    first = table[table["step"] == 0]
    assert (first["loss"] == first["loss"].iloc[0]).all()  # one network, one loss for every head
    measured, verdict, note = claims._converges({"vit_decisive_gd": table}, CFG, "frozen_vit")
    assert verdict != "holds" and note.startswith(f"{verdict}: the head-mean cosine ")
    assert "on 12 images" in measured


def _arm(cosines: list[float], kept: list[float], norms: list[float]) -> pd.DataFrame:
    """Normalised-GD rows of two heads at steps 10, 100, 1000 with these head-mean cosines (last step), shares of
    final selections and ||W_h||_F."""
    rows = [
        {"epoch": 400, "model": "one_layer", "arm": arm, "step": step, "head": h, "loss": 0.1,
         "w_frobenius": norm, "saturation": 0.9, "cosine": cosines[h] if step == 1000 else 0.5,
         "cosine_final": 0.5, "selection_final": share, "locally_optimal": 1.0, "top_score": 0.5, "n_images": 256}
        for arm in ("gd", "normalized_gd") for step, share, norm in zip((10, 100, 1000), kept, norms, strict=True)
        for h in (0, 1)
    ]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("cosines", "kept", "norms", "verdict", "opens"),
    [
        ([0.97, 0.975], [1.0, 1.0, 1.0], [1.0, 10.0, 100.0], "holds", ""),
        ([0.70, 0.72], [1.0, 1.0, 1.0], [1.0, 10.0, 100.0], "differs", "differs: the head-mean cosine 0.710"),
        ([0.70, 0.72], [0.80, 0.99, 1.0], [1.0, 10.0, 100.0], "inconclusive", "inconclusive: the head-mean cosine"),
        ([0.97, 0.975], [0.80, 0.99, 1.0], [1.0, 10.0, 100.0], "inconclusive", "inconclusive: 80.0% of the selections"),
        ([0.97, 0.975], [1.0, 1.0, 1.0], [10.0, 10.5, 11.0], "inconclusive", "inconclusive: ||W||_F grows as t^0.021"),
    ],
)
def test_the_convergence_claim_needs_the_cosine_the_settled_selections_and_the_growth(
    cosines, kept, norms, verdict, opens
):
    measured, found, note = claims._converges({"vit_decisive_gd": _arm(cosines, kept, norms)}, CFG, "one_layer")
    assert found == verdict and note.startswith(opens)
    assert f"{np.mean(cosines):.3f}" in measured and "on 256 images" in measured


def test_the_grids_and_the_snapshots():
    assert decisive.log_steps(1000, 4) == [0, 1, 10, 100, 1000]
    grid = decisive.ray_grid(0.5, 64.0, 8)
    assert grid[0] == 0.5 and grid[-1] == 64.0 and 1.0 in grid and np.all(np.diff(np.log(grid[grid != 1.0])) > 0)
    assert decisive.decisive_epochs([0.5, 1.0], 400, list(range(0, 401, 25))) == [200, 400]
    assert decisive.decisive_epochs([0.5, 1.0], 60, [0, 10, 20, 25, 30, 40, 50, 60]) == [30, 60]
    assert decisive.decisive_epochs([0.55], 60, [0, 10, 20, 30, 40, 50, 60]) == [30]
    w = np.random.default_rng(0).standard_normal((3, 4, 3))
    rays = decisive.max_margin_rays(w, [np.ones((4, 3)), 2 * np.eye(4, 3), -np.ones((4, 3))])
    np.testing.assert_allclose(np.linalg.norm(rays.reshape(3, -1), axis=1), np.linalg.norm(w.reshape(3, -1), axis=1))
    assert frobenius_cosine(rays[2], -np.ones((4, 3))) == pytest.approx(1.0)


def test_local_optimality_counts_only_the_svm_neighbours():
    # one image, query [1; 1], tokens on a line: token 0 selected; token 1 is the SVM-neighbour (margin 1), token 2 far
    z = np.array([[1.0]])
    x = np.array([[[1.0], [0.0], [-5.0]]])
    w_mm = w_att_svm(z, x, np.array([0])).solution
    assert np.allclose(w_mm, [[0.5], [0.5]])
    # token 2 outscores the selected one but is no neighbour: locally optimal, not the top score
    local, top = decisive.optimality_shares(np.array([[1.0, 0.5, 3.0]]), np.array([0]), w_mm, z, x, True)
    assert (local, top) == (1.0, 0.0)
    local, top = decisive.optimality_shares(np.array([[1.0, 1.5, 0.0]]), np.array([0]), w_mm, z, x, True)
    assert (local, top) == (0.0, 0.0)


def test_the_panel_draws_the_rays_and_both_models_cosines():
    from maxmargin.figures.style import smallest_text
    from maxmargin.figures.vit import draw_decisive

    frozen, w = _planted_layer(1.0)
    z, x = frozen.numpy_inputs()
    memo = decisive.SvmMemo(z, x, lambda z, x, s: w_att_svm(z, x, s))
    ray = pd.DataFrame(decisive.ray_test(frozen, w, memo, decisive.ray_grid(0.5, 64.0, 8))).assign(epoch=60)
    gd = pd.concat([_arm([0.9, 0.95], [1.0] * 3, [1.0, 2.0, 4.0]).assign(model=m) for m in ("frozen_vit", "one_layer")])
    fig = draw_decisive(ray, gd)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "(a) loss along the rays, epoch 60",
        "(b) the network, tokens frozen, 256 images",
        "(c) one-layer model, real tokens, 256 images",
    ]
    # (a): two all-heads rays and one grey line per head and ray; (b)-(c): each arm's current and final cosines
    assert [len(ax.lines) for ax in fig.axes] == [2 + 2 + 1, 4, 4]
    assert fig.axes[1].lines[2].get_ydata()[-1] == pytest.approx(0.925)  # normalised GD's last head-mean cosine
    assert smallest_text(fig) >= 7.0
