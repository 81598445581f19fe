"""The metrics row's full training pass and gradient statistics (maxmargin.experiments.vit.probes): the training
loss at the row's weights (mean, largest term, accuracy), the gradient on the Q and K slices of the last layer's
fused qkv weight against autograd in float64, and Adam's sqrt(v_hat) against its definition."""

from __future__ import annotations

import copy
import dataclasses
import math

import pandas as pd
import pytest
from conftest import Lazy
from test_vit import DEFAULT_VIT, tiny_image_data, tiny_settings

from maxmargin.claims.vit_regime import regime_window
from maxmargin.gpu import plan

torch, functional = Lazy("torch"), Lazy("torch.nn.functional")
vit, probes, model_mod, data_mod = (
    Lazy("maxmargin.experiments.vit"),
    Lazy("maxmargin.experiments.vit.probes"),
    Lazy("maxmargin.experiments.vit.model"),
    Lazy("maxmargin.experiments.vit.data"),
)

# float32 rounding over a forward and backward pass of a few hundred sequential operations, relative to the
# gradient's largest entry: the float64 reference differs from the float32 pass by at most this many eps.
FLOAT32_PASS_EPS = 1e3


@pytest.fixture(scope="module")
def run():
    torch.manual_seed(0)
    settings = tiny_settings(1)
    data = tiny_image_data()
    model = model_mod.build_vit(settings.model)
    ev = probes.Evaluator(model, model, data, settings, torch.device("cpu"))
    return settings, data, model, ev


def reference(model, data, ev):
    """The mean loss's gradient on the last qkv weight, per-sample losses and predictions, in float64, one batch."""
    twin = copy.deepcopy(model).double().eval()
    x = data_mod.normalize(data.x_train, ev.mean, ev.std).double()
    logits = twin(x)
    losses = functional.cross_entropy(logits, data.y_train, reduction="none")
    losses.mean().backward()
    return model_mod.last_attention(twin).qkv.weight.grad, losses.detach(), logits.argmax(-1)


def test_the_full_pass_gradient_and_losses_equal_autograd_in_float64(run) -> None:
    settings, data, model, ev = run
    assert ev.batch < len(data.x_train)  # several batches are summed
    stats, grad = ev.train_pass(data.x_train, data.y_train)
    ref_grad, ref_losses, ref_pred = reference(model, data, ev)
    tol = FLOAT32_PASS_EPS * torch.finfo(torch.float32).eps * float(ref_grad.abs().max())
    assert float((grad.double() - ref_grad).abs().max()) <= tol
    assert stats["train_loss_full"] == pytest.approx(float(ref_losses.mean()), rel=1e-5)
    assert stats["train_loss_max"] == pytest.approx(float(ref_losses.max()), rel=1e-5)
    assert stats["train_acc_full"] == float((ref_pred == data.y_train).double().mean())


def test_the_full_pass_leaves_every_gradient_and_the_mode_as_they_were(run) -> None:
    _, data, model, ev = run
    model.train()
    ev.train_pass(data.x_train, data.y_train)
    assert model.training
    assert all(p.grad is None for p in model.parameters())


def adam_after_steps(model, data, ev, eps: float, steps: int = 3):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=eps)
    x = data_mod.normalize(data.x_train, ev.mean, ev.std)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        functional.cross_entropy(model(x), data.y_train).backward()
        optimizer.step()
    return optimizer


def test_adams_sqrt_v_hat_and_its_share_below_eps_follow_their_definition(run) -> None:
    settings, data, _, ev = run
    torch.manual_seed(1)
    model = model_mod.build_vit(settings.model)
    ev = probes.Evaluator(model, model, data, settings, torch.device("cpu"))
    optimizer = adam_after_steps(model, data, ev, eps=1e-8)
    attn = model_mod.last_attention(model)
    _, grad = ev.train_pass(data.x_train, data.y_train)
    stats = probes.qk_gradient_stats(attn, grad, optimizer)
    c = attn.num_heads * attn.head_dim
    state = optimizer.state[attn.qkv.weight]
    sqrt_v = (state["exp_avg_sq"].double() / (1 - 0.999 ** float(state["step"]))).sqrt()
    for name, rows in {"q": slice(0, c), "k": slice(c, 2 * c)}.items():
        assert stats[f"grad_rms_{name}"] == pytest.approx(float(grad[rows].double().pow(2).mean().sqrt()), rel=1e-12)
        assert stats[f"adam_sqrt_v_rms_{name}"] == pytest.approx(float(sqrt_v[rows].pow(2).mean().sqrt()), rel=1e-6)
        share = float((sqrt_v[rows] < 1e-8).double().mean())
        assert stats[f"adam_below_eps_{name}"] == pytest.approx(share, abs=1 / sqrt_v[rows].numel())
    # planted: an eps above every sqrt(v_hat) puts every element below it; the V slice (not reported) is left out
    for group in optimizer.param_groups:
        group["eps"] = 10 * float(sqrt_v.max())
    planted = probes.qk_gradient_stats(attn, grad, optimizer)
    assert planted["adam_below_eps_q"] == planted["adam_below_eps_k"] == 1.0
    for group in optimizer.param_groups:
        group["eps"] = 0.0
    assert probes.qk_gradient_stats(attn, grad, optimizer)["adam_below_eps_q"] == 0.0


def test_sgd_and_a_fresh_adam_have_no_second_moment(run) -> None:
    _, data, model, ev = run
    attn = model_mod.last_attention(model)
    _, grad = ev.train_pass(data.x_train, data.y_train)
    for optimizer in (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), torch.optim.Adam(model.parameters())):
        stats = probes.qk_gradient_stats(attn, grad, optimizer)
        assert stats["grad_rms_q"] > 0 and stats["grad_rms_k"] > 0
        assert all(math.isnan(stats[f"{k}_{n}"]) for k in ("adam_sqrt_v_rms", "adam_below_eps") for n in "qk")


def test_a_window_run_makes_the_full_pass_on_the_rows_the_regime_claims_read(tmp_path) -> None:
    """vit.train.full_pass: window: epoch 0 and the rows of the regime claims' window carry the pass, the others are
    empty, and the claims' own window (regime_window) is exactly those rows after epoch 0."""
    settings = tiny_settings(5)  # the default config's window: from the last row at or before 0.8 x 5 epochs
    assert settings.train.full_pass == "window" and settings.full_pass_epochs() == [0, 4, 5]
    m = pd.DataFrame(vit.train_vit(settings, tiny_image_data(), tmp_path / "w.pt").metrics)
    columns = list(probes.FULL_PASS_COLUMNS + probes.GRADIENT_COLUMNS)
    assert m.loc[m["train_loss_max"].notna(), "epoch"].tolist() == [0, 4, 5]
    assert m.loc[m["epoch"].between(1, 3), columns].isna().all().all()
    assert (
        m.loc[m["epoch"] == 5, ["train_loss_full", "train_loss_max", "grad_rms_q", "adam_sqrt_v_rms_k"]]
        .gt(0)
        .all(axis=None)
    )
    window = regime_window(m, DEFAULT_VIT["guard"])
    assert window.index.tolist() == [4, 5] and window[columns[:4]].notna().all(axis=None)
    every = vit.train_vit(tiny_settings(5, full_pass="every"), tiny_image_data(), tmp_path / "e.pt").metrics
    assert pd.DataFrame(every)["train_loss_max"].notna().all()


def test_which_rows_carry_the_full_pass_is_part_of_the_runs_fingerprint() -> None:
    window, every = tiny_settings(5), tiny_settings(5, full_pass="every")

    def moved(s):  # the claims' window starts elsewhere
        return dataclasses.replace(s, guard=dataclasses.replace(s.guard, direction_from=0.5))

    assert len({window.fingerprint("d"), every.fingerprint("d"), moved(window).fingerprint("d")}) == 3
    assert moved(every).fingerprint("d") == every.fingerprint("d")  # every row: the window does not matter
    assert moved(window).full_pass_epochs() == [0, 2, 3, 4, 5]
    with pytest.raises(ValueError, match=r"vit.train.full_pass is 'some': one of every, window"):
        tiny_settings(5, full_pass="some").full_pass_epochs()


def test_the_gpu_plan_prices_the_full_pass_on_the_rows_that_carry_it() -> None:
    """maxmargin.gpu.plan: the rows' training passes cost a training epoch each, on those rows only."""
    vit_config = {**DEFAULT_VIT, "data": {**DEFAULT_VIT["data"], "n_train": 2000, "n_test": 1000}}
    window = plan.project_run(vit_config).parts["rows' training passes"]
    every = plan.project_run({**vit_config, "train": {**vit_config["train"], "full_pass": "every"}})
    assert window == pytest.approx(every.parts["rows' training passes"] * 14 / 61)  # epochs 0 and 48-60 of 0-60
