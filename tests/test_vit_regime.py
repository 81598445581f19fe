"""The theory's regime in a ViT run (docs/vit.md, "400 epochs on a CPU"): claim vit_regime, the attention's
saturation, the regime panel, the probe on the training images beside the held-out ones, the image-count curve the
probe's number of images is read from, and the SGD arm's recipe read from its pilot."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, Lazy

from maxmargin.claims import evaluate_claims
from maxmargin.claims.vit_w_svm import judged_set
from maxmargin.config import merged_config
from maxmargin.experiments import vit_image_counts as image_counts
from maxmargin.experiments.vit.results import w_svm_section
from maxmargin.experiments.vit.settings import ModelSettings
from maxmargin.experiments.vit_study import pick_pilot_recipe

# torch and the modules that import it, on first use: collecting this module imports none of them
torch = Lazy("torch")
vit_model = Lazy("maxmargin.experiments.vit.model")
probe = Lazy("maxmargin.experiments.vit.w_svm_probe")

CONFIG = merged_config([], REPO / "workflow/config/default.yaml")
GUARD = CONFIG["vit"]["guard"]


def _metrics(losses: list[float], saturation: bool = True) -> pd.DataFrame:
    """A metrics table of len(losses) rows, 10 epochs apart, whose W turns less and less."""
    n = len(losses)
    rows = pd.DataFrame(
        {
            "epoch": np.arange(n) * 10,
            "train_loss": losses,
            "train_acc": np.linspace(0.1, 1.0, n),
            "w_cosine_final": np.linspace(0.2, 1.0, n),
            "w_cosine_previous": np.r_[np.nan, np.full(n - 1, 0.99)],
            "dataset": "fashion_mnist",
        }
    )
    if saturation:
        rows["cls_max_attention"] = np.linspace(0.05, 0.9, n)
    return rows


def _regime(metrics: pd.DataFrame) -> pd.Series:
    claims = evaluate_claims({"vit_metrics": metrics}, CONFIG).set_index("claim_id")
    return claims.loc["vit_regime"]


def test_the_regime_is_judged_on_every_samples_loss_over_the_last_epochs() -> None:
    """vit.guard.regime_loss bounds each sample's loss, so the claim reads the largest per-sample loss of the rows
    from direction_from of the epochs on: under the bar at every row holds; a mean loss at or above the bar at every
    row differs (some sample is above it), logged or not; a run that logged only the mean, under the bar (the GPU run's
    last rows, docs/gpu/session3), is inconclusive: a mean under the bar does not put every sample under it."""
    bar = GUARD["regime_loss"]
    logged = _metrics([2.0] * 8 + [bar / 4, bar / 5, bar / 6, bar / 7, bar / 8])
    logged["train_loss_max"] = logged["train_loss"] * 3
    below = _regime(logged)
    assert below.verdict == "holds" and "epochs 90-120" in below.measured, below.to_dict()
    assert "largest per-sample training loss" in below.measured and "n_eff" in below.measured
    above = _regime(_metrics([2.0] * 8 + [4 * bar, 5 * bar, 4 * bar, 6 * bar, 5 * bar]))
    assert above.verdict == "differs" and "at or above vit.guard.regime_loss" in above.note, above.to_dict()
    gpu = _regime(_metrics([2.0] * 16 + [0.0267, 0.0147, 0.0295, 0.0302, 0.0731]))
    assert gpu.verdict == "inconclusive" and "per-sample loss was not logged" in gpu.note


def test_the_saturation_is_each_heads_largest_cls_probability() -> None:
    """cls_max_attention: each head's largest softmax probability of its [CLS] row (over all tokens), averaged over
    heads and images, from the same [CLS] rows as soft-sparsity: 1 / (1 + T) for uniform attention."""
    settings = ModelSettings(patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0, img_size=32,
                             num_classes=10)  # fmt: skip
    model = vit_model.build_vit(settings).eval()
    images = torch.randn(3, 3, 32, 32)
    rows = vit_model.cls_attention(model, images)  # (3, heads, 1 + T)
    expected = float(rows.amax(dim=-1).double().mean())
    assert rows.shape == (3, 2, 17) and 1 / 17 - 1e-6 <= expected <= 1.0
    with torch.no_grad():  # zero queries: uniform attention, the floor
        model.blocks[-1].attn.qkv.weight[:16].zero_()
        model.blocks[-1].attn.qkv.bias[:16].zero_()
    uniform = vit_model.cls_attention(model, images).amax(dim=-1).double().mean()
    assert float(uniform) == pytest.approx(1 / 17, rel=1e-6)


def test_the_probe_takes_its_number_of_images_from_the_curve() -> None:
    """The smallest count after which the head-mean cosine moves by less than vit.w_svm.curve_tol; the largest
    count where it has not levelled off; the training images' curve, not the held-out one's."""
    counts = [16, 32, 64, 128, 256]

    def curve(train: list[float], test: list[float]) -> pd.DataFrame:
        rows = [("train", n, c) for n, c in zip(counts, train, strict=True)] + [
            ("test", n, c) for n, c in zip(counts, test, strict=True)
        ]
        return pd.DataFrame(
            [
                {"images": s, "n_images": n, "head": h, "cosine": c + 0.01 * (h - 1)}
                for s, n, c in rows
                for h in range(3)
            ]
        )

    table = curve([0.2, 0.35, 0.44, 0.45, 0.455], [0.2, 0.3, 0.4, 0.5, 0.6])
    assert image_counts.chosen_image_count(table, "train", 0.02, 256) == 64
    assert image_counts.chosen_image_count(table, "train", 0.001, 256) == 256
    assert image_counts.chosen_image_count(table, "test", 0.02, 256) == 256  # still rising: the largest measured
    assert image_counts.chosen_image_count(table, "test", 0.02, 128) == 128  # at most vit.w_svm.images
    assert image_counts.chosen_image_count(table, "train", 0.02, 128) == 64  # the cap only bounds
    with pytest.raises(ValueError, match="no 'train' rows"):
        image_counts.chosen_image_count(table[table["images"] == "test"], "train", 0.02, 256)


def _tiny_snapshots() -> tuple[dict, ModelSettings, dict[str, torch.Tensor]]:
    settings = ModelSettings(patch_size=8, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0, img_size=32,
                             num_classes=10)  # fmt: skip
    torch.manual_seed(0)
    model = vit_model.build_vit(settings).eval()
    with torch.no_grad():
        model.blocks[-1].attn.qkv.bias.normal_(0.0, 0.5)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    images = {"train": torch.randn(6, 3, 32, 32), "test": torch.randn(5, 3, 32, 32)}
    return {"epochs": [0, 4], "states": {0: state, 4: state}}, settings, images


PROBE = dict(
    images=4, soft_c=1e4, query_bias=True, null_draws=2, shuffles=2, nuclear_images=0, nuclear_every=0,
    nuclear_draws=2, seed=0, device="cpu", runtime=1,
)  # fmt: skip


def test_the_probe_solves_on_each_image_set_and_the_curve_on_each_count() -> None:
    """Every snapshot x image set x head gets its row, each set's selections compared with its own previous epoch;
    the curve solves the last state on the first n images of each set that holds n, and on n images its W-ATT-SVM
    is the probe's on the same n."""
    snapshots, settings, images = _tiny_snapshots()
    s = probe.WSvmSettings(**PROBE, image_sets=("train", "test"), curve_images=(2, 4, 6))
    rows = probe.probe_snapshots(snapshots, settings, images, s, batch_size=4)
    assert [(r["epoch"], r["images"], r["head"]) for r in rows] == [
        (e, name, h) for e in (0, 4) for name in ("train", "test") for h in (0, 1)
    ]
    assert all(r["n_images"] == 4 and r["n_constraints"] == 4 * 16 for r in rows)
    assert [math.isnan(r["selection_kept"]) for r in rows] == [True] * 4 + [False] * 4
    assert {r["images"]: r["selection_kept"] for r in rows[4:]} == {"train": 1.0, "test": 1.0}
    train, test = (np.array([r["cosine"] for r in rows[:4] if r["images"] == name]) for name in ("train", "test"))
    assert not np.allclose(train, test)  # other images, other W-ATT-SVMs
    curve = pd.DataFrame(probe.probe_image_counts(snapshots["states"][4], settings, images, s, batch_size=4))
    assert sorted(set(zip(curve["images"], curve["n_images"], strict=True))) == [
        ("test", 2), ("test", 4), ("train", 2), ("train", 4), ("train", 6)
    ]  # fmt: skip
    at4 = curve[(curve["images"] == "train") & (curve["n_images"] == 4)].sort_values("head")
    np.testing.assert_allclose(at4["cosine"], train, rtol=1e-9)
    assert (curve["cosine"] <= curve["ceiling"] + 1e-9).all() and (
        curve["n_constraints"] == curve["n_images"] * 16
    ).all()


def test_the_claims_are_judged_on_the_training_images_and_the_page_shows_both() -> None:
    table = pd.DataFrame({"images": ["test", "train", "test", "train"], "epoch": [0, 0, 4, 4], "head": 0})
    assert judged_set(table) == "train" and judged_set(table[table["images"] == "test"]) == "test"
    assert judged_set(table.drop(columns="images")) == "test"
    snapshots, settings, images = _tiny_snapshots()
    s = probe.WSvmSettings(**PROBE, image_sets=("train", "test"))
    rows = pd.DataFrame(probe.probe_snapshots(snapshots, settings, images, s, batch_size=4)).assign(dataset="x")
    text = "\n".join(w_svm_section(rows))
    assert "On the training images (the first ones, or all: the ones the loss is on), 4 images, 64 constraints" in text
    assert "On the held-out probe images (the first test images), 4 images, 64 constraints a head:" in text


def test_the_sgd_arm_is_the_recipe_its_pilot_picks() -> None:
    """The committed pilot table, read by the rule its config states, gives the SGD arm's optimiser, rate and
    momentum; and the rule prefers plain SGD where one comes within a tenth of its epoch-0 loss."""
    pilot = yaml.safe_load((REPO / "workflow/config/cpu_paper_epochs_sgd_pilot.yaml").read_text())["vit_recipes"]
    table = pd.read_csv(REPO / f"docs/results/{pilot['docs']}.csv")
    name, why = pick_pilot_recipe(table, pilot["recipes"])
    recipe = next(r for r in pilot["recipes"] if r["name"] == name)
    arm = yaml.safe_load((REPO / "workflow/config/cpu_paper_epochs_sgd.yaml").read_text())["vit"]["train"]
    assert {k: arm[k] for k in ("optimizer", "lr", "momentum")} == {
        k: recipe[k] for k in ("optimizer", "lr", "momentum")
    }
    assert why.startswith(f"{name}: ") and "training loss at epoch 30" in why
    planted = pd.DataFrame(
        [{"recipe": r, "epoch": e, "train_loss": loss} for r, losses in
         {"plain": [2.3, 0.2], "fast": [2.3, 0.1], "bad": [2.3, 2.5]}.items() for e, loss in enumerate(losses)]
    )  # fmt: skip
    recipes = [{"name": "plain", "momentum": 0.0}, {"name": "fast", "momentum": 0.9}, {"name": "bad", "momentum": 0.0}]
    assert pick_pilot_recipe(planted, recipes)[0] == "plain"  # 0.2 < 0.23: plain is preferred over momentum
    assert (
        pick_pilot_recipe(planted.assign(train_loss=planted["train_loss"] * [1, 1.5, 1, 1, 1, 1]), recipes)[0] == "fast"
    )


def test_the_regime_panel_draws_with_and_without_the_saturation(tmp_path: Path) -> None:
    from maxmargin.figures.vit import draw_regime

    sidecar = {"grid": [8, 8], "dataset": "fashion_mnist", "settings": {
        "model": {"embed_dim": 64, "depth": 4, "num_heads": 4, "patch_size": 4},
        "train": {"optimizer": "adam", "lr": 3e-3, "batch_size": 128}}, "n_train": 1920, "n_test": 1000}  # fmt: skip
    for saturation in (True, False):
        fig = draw_regime(_metrics([2.0, 1.0, 0.1, 0.01, 0.005], saturation), sidecar, regime_loss=0.05,
                          max_direction_angle=10.0, settings_footer=True)  # fmt: skip
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert ("not measured in this run" in texts) is not saturation
        turning = fig.axes[2].get_lines()[0].get_ydata()
        np.testing.assert_allclose(turning[1:], np.degrees(np.arccos(0.99)))
        assert fig.axes[0].get_yscale() == "log"


def test_the_regime_panel_draws_a_partial_full_pass_beside_the_batches_mean() -> None:
    """vit.train.full_pass: window: panel (a) draws the batches' mean on every row and the full pass's largest and
    mean loss on its rows only (NaN elsewhere, a dot each), its legend in two rows; with every row, the pass alone."""
    from maxmargin.figures.vit import draw_regime

    sidecar = {"grid": [8, 8], "dataset": "fashion_mnist", "settings": {
        "model": {"embed_dim": 64, "depth": 4, "num_heads": 4, "patch_size": 4},
        "train": {"optimizer": "adam", "lr": 3e-3, "batch_size": 128}}, "n_train": 1920, "n_test": 1000}  # fmt: skip
    metrics = _metrics([2.0, 1.0, 0.1, 0.01, 0.005])
    for partial in (True, False):
        full = metrics.assign(train_loss_max=metrics["train_loss"] * 3, train_loss_full=metrics["train_loss"] / 2)
        if partial:
            full.loc[full["epoch"].between(10, 20), ["train_loss_max", "train_loss_full"]] = np.nan
        fig = draw_regime(full, sidecar, regime_loss=0.05, max_direction_angle=10.0, settings_footer=True)
        lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
        assert ("mean loss (epoch's batches)" in lines) is partial
        largest = np.asarray(lines["largest per-sample loss"].get_ydata(), dtype=float)
        np.testing.assert_array_equal(np.isnan(largest), [False, partial, partial, False, False])
        assert (lines["largest per-sample loss"].get_marker() == ".") is partial
        legend = fig.axes[0].get_legend()
        assert len(legend.get_texts()) == 4 + partial and legend._ncols == 2 + partial  # two rows either way


def test_the_probe_records_how_each_solve_was_solved() -> None:
    """The probe's status columns take the solver's statuses, ordered best first as the solver orders them."""
    from maxmargin.core.w_svm_dual import _STATUSES
    from maxmargin.registry.vit_w_svm import SOLVE_STATUSES

    assert SOLVE_STATUSES == _STATUSES
    snapshots, settings, images = _tiny_snapshots()
    s = probe.WSvmSettings(**{**PROBE, "nuclear_images": 2})
    rows = probe.probe_snapshots(snapshots, settings, {"test": images["test"]}, s, batch_size=4)
    assert {r["status"] for r in rows} <= set(SOLVE_STATUSES)
    assert [r["nuclear_status"] in SOLVE_STATUSES for r in rows] == [True] * len(rows)  # the first and last epoch


def test_the_shuffled_null_is_measured_at_the_epochs_it_is_due() -> None:
    """vit.w_svm.shuffle_every 0: null (b) at the first and the last snapshot only (0 permutations drawn between);
    1: at every snapshot."""
    snapshots, settings, images = _tiny_snapshots()
    state = snapshots["states"][0]
    three = {"epochs": [0, 2, 4], "states": {0: state, 2: state, 4: state}}
    for every, measured in ((0, [True, False, True]), (1, [True, True, True])):
        s = probe.WSvmSettings(**PROBE, shuffle_every=every)
        rows = probe.probe_snapshots(three, settings, {"test": images["test"]}, s, batch_size=4)
        drawn = [r["null_shuffled_drawn"] > 0 for r in rows if r["head"] == 0]
        assert drawn == measured
        assert all(math.isnan(r["null_shuffled"]) for r in rows if r["epoch"] == 2) is not every


def _curve(means: dict[int, float]) -> pd.DataFrame:
    """An image-count curve of two heads on the training images whose head mean at n images is ``means[n]``."""
    return pd.DataFrame(
        [
            {"images": "train", "n_images": n, "head": h, "cosine": c + (0.01 if h else -0.01)}
            for n, c in means.items()
            for h in (0, 1)
        ]
    )


def test_the_curve_sentence_says_whether_it_levelled_and_what_the_cap_cost() -> None:
    from maxmargin.claims.vit_runs import curve_line

    rising = _curve({16: 0.34, 32: 0.39, 64: 0.44, 128: 0.51, 256: 0.57})
    line = curve_line(rising, 0.02, 128, 0.95)
    assert (
        "has not levelled off by 256 (still +0.060 [+0.060, +0.060] from 128 to 256, 95% t-interval over 2 heads"
        in line
    )
    assert "use 128 images, the run's cap" in line and "(0.510 on the train images here, 0.570 at 256)" in line
    flat = _curve({16: 0.30, 32: 0.40, 64: 0.45, 128: 0.46, 256: 0.455})
    line = curve_line(flat, 0.02, 64, 0.95)
    assert "levels off (moves by less than vit.w_svm.curve_tol = 0.02) from 64 on" in line
    assert line.endswith("the probe's solves use 64 images.")


@pytest.mark.parametrize(
    ("x", "places", "text"),
    [(2.1e-05, 3, "2.1e-05"), (0.0123, 3, "0.012"), (0.031, 1, "0.031"), (13.94, 1, "13.9"), (0.0, 3, "0.000")],
)
def test_a_small_number_is_not_printed_as_zero(x, places, text) -> None:
    from maxmargin.claims.base import small

    assert small(x, places) == text
