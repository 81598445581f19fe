"""The metrics row's full training pass and gradient statistics (maxmargin.experiments.vit.probes): the training
loss at the row's weights (mean, largest term, accuracy), the gradient on the Q and K slices of the last layer's
fused qkv weight against autograd in float64, and Adam's sqrt(v_hat) against its definition."""

from __future__ import annotations

import copy
import math

import pytest
from conftest import Lazy
from test_vit import tiny_image_data, tiny_settings

torch, functional = Lazy("torch"), Lazy("torch.nn.functional")
probes, model_mod, data_mod = (
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
