"""The W-ATT-SVM probe of the ViT heads (maxmargin.experiments.vit.w_svm_probe): the head's own solve and null (a)
on every training image (vit.w_svm.whole_train) with null (b) beside the own cosine on its own images, the image
count beside every cosine, and null solves that fail counted and logged instead of stopping the probe (issue 59
item 4, issue 61 item 5)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from conftest import Lazy
from test_vit_regime import PROBE, _tiny_snapshots

from maxmargin.core.w_svm import frobenius_cosine, w_att_svm, w_logits
from maxmargin.experiments import vit_image_counts as image_counts
from maxmargin.registry import columns

# the modules that import torch, on first use: collecting this module imports none of them
probe = Lazy("maxmargin.experiments.vit.w_svm_probe")
heads = Lazy("maxmargin.experiments.vit_heads")
vit_model = Lazy("maxmargin.experiments.vit.model")


def _inputs(snapshots, settings, images, epoch: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The last layer's inputs on the first ``n`` images and the heads' key-query matrices at ``epoch``."""
    net = vit_model.build_vit(settings)
    net.load_state_dict(snapshots["states"][epoch])
    z, x = heads.attention_inputs(net, images[:n], batch_size=4)
    return z, x, heads.head_key_query(vit_model.last_attention(net))


@pytest.mark.solves  # seconds of GD or of solves: `make test` and the second-kernel step, not the unit tier
def test_the_whole_training_set_beside_null_b_on_the_capped_images() -> None:
    """With whole_train the training rows solve the head's own W-ATT-SVM and null (a) on all 6 training images;
    null (b) stays on the first 4 (vit.w_svm.images) beside the head's own cosine solved on those same 4, and the
    nuclear norm on the first 2. The held-out rows are on 4 images throughout, their cosine_null_images the cosine
    itself. Every cosine has its image count in the table."""
    snapshots, settings, images = _tiny_snapshots()
    s = probe.WSvmSettings(**{**PROBE, "nuclear_images": 2}, image_sets=("train", "test"), whole_train=True)
    rows = pd.DataFrame(probe.probe_snapshots(snapshots, settings, images, s, batch_size=4))
    assert set(rows.columns) == set(columns("vit_w_svm")) - {"dataset"}
    train, test = rows[rows["images"] == "train"], rows[rows["images"] == "test"]
    assert (train["n_images"] == 6).all() and (train["n_constraints"] == 6 * 16).all()
    assert (test["n_images"] == 4).all() and (rows["n_images_null"] == 4).all()
    assert (rows["n_images_nuclear"] == 2).all()  # the first and the last snapshot, the only two
    z, x, heads = _inputs(snapshots, settings, images["train"], 4, 6)
    for head, w in enumerate(heads):
        row = train[(train["epoch"] == 4) & (train["head"] == head)].iloc[0]
        on = {n: w_att_svm(z[:n], x[:n], w_logits(w, z[:n], x[:n]).argmax(axis=1)).solution for n in (6, 4)}
        assert row["cosine"] == pytest.approx(frobenius_cosine(w, on[6]), abs=1e-12)
        assert row["cosine_null_images"] == pytest.approx(frobenius_cosine(w, on[4]), abs=1e-12)
    assert not np.allclose(train["cosine"], train["cosine_null_images"])  # 6 images are not 4
    np.testing.assert_array_equal(test["cosine_null_images"], test["cosine"])
    assert (rows["null_shuffled_kept"] <= rows["null_shuffled_drawn"]).all() and (rows["null_failed"] == 0).all()


def test_the_image_count_curve_runs_to_the_whole_training_set() -> None:
    """whole_train ends the training images' curve at all of them (6, not among curve_images); the held-out curve
    stops at the counts its set holds; at 6 training images the curve's cosine is the probe's."""
    snapshots, settings, images = _tiny_snapshots()
    s = probe.WSvmSettings(**PROBE, image_sets=("train", "test"), curve_images=(2, 4, 8), whole_train=True)
    assert image_counts.curve_counts(s, "train", 6) == [2, 4, 6] and image_counts.curve_counts(s, "test", 5) == [2, 4]
    curve = pd.DataFrame(probe.probe_image_counts(snapshots["states"][4], settings, images, s, batch_size=4))
    assert sorted(set(zip(curve["images"], curve["n_images"], strict=True))) == [
        ("test", 2), ("test", 4), ("train", 2), ("train", 4), ("train", 6)
    ]  # fmt: skip
    assert list(curve.columns) == columns("vit_w_svm_images")[:-1]  # no seconds: they go to the log
    rows = pd.DataFrame(probe.probe_snapshots(snapshots, settings, images, s, batch_size=4))
    last = rows[(rows["epoch"] == 4) & (rows["images"] == "train")].sort_values("head")["cosine"]
    at6 = curve[(curve["images"] == "train") & (curve["n_images"] == 6)].sort_values("head")["cosine"]
    np.testing.assert_allclose(at6.to_numpy(), last.to_numpy(), rtol=1e-12)


def _planted(monkeypatch: pytest.MonkeyPatch, fails) -> None:
    """WSvmSettings.frobenius raises an ArithmeticError, as a cutting-plane solve that leaves margins short of 1
    does, for the calls ``fails(soft, n)`` picks (``soft`` False: null (b)'s permutations; ``n`` images)."""
    real = probe.WSvmSettings.frobenius

    def frobenius(self, z, x, selected, soft=True):
        if fails(soft, len(z)):
            raise ArithmeticError("the hard-margin W-ATT-SVM left 15 of 2048 margins below 1 - 1.0e-06 (planted)")
        return real(self, z, x, selected, soft)

    monkeypatch.setattr(probe.WSvmSettings, "frobenius", frobenius)


def test_an_unsolvable_shuffle_is_counted_and_logged_and_the_probe_goes_on(monkeypatch, caplog) -> None:
    """Every null (b) permutation's solve fails (vit.w_svm.seed 0 on a small config once stopped rule vit_probe
    so): the probe finishes, each row counts its failed solves with the permutations drawn, none kept, null (b)
    empty, and the log names the epoch, image set, head and solve of each."""
    snapshots, settings, images = _tiny_snapshots()
    _planted(monkeypatch, lambda soft, n: not soft)
    s = probe.WSvmSettings(**PROBE)
    with caplog.at_level(logging.WARNING, logger="maxmargin"):
        rows = pd.DataFrame(probe.probe_snapshots(snapshots, settings, {"test": images["test"]}, s, batch_size=4))
    assert (rows["null_shuffled_drawn"] == 3 * PROBE["shuffles"]).all() and (rows["null_shuffled_kept"] == 0).all()
    assert (rows["null_failed"] == 3 * PROBE["shuffles"]).all() and rows["null_shuffled"].isna().all()
    assert rows["null_rank"].notna().all() and rows["cosine"].notna().all()
    warned = [r.getMessage() for r in caplog.records if "unsolved" in r.getMessage()]
    assert len(warned) == len(rows) * 3 * PROBE["shuffles"]
    assert warned[0].startswith("W-ATT-SVM probe at epoch 0, test images, head 0, null (b) shuffle 1 on 4 images:")
    assert "15 of 2048 margins" in warned[0]


def test_a_failed_null_a_draw_is_left_out_of_its_mean(monkeypatch) -> None:
    """One null (a) draw in every row fails: the row's null (a) is the mean of the others (one left of 2 here: no
    spread), and the row counts the failure."""
    snapshots, settings, images = _tiny_snapshots()
    calls = {"n": 0}

    def second_draw_fails(soft: bool, n: int) -> bool:
        calls["n"] += soft
        return soft and calls["n"] % 3 == 0  # each row's soft solves: its own, null (a) 1, null (a) 2

    _planted(monkeypatch, second_draw_fails)
    s = probe.WSvmSettings(**PROBE)
    rows = pd.DataFrame(probe.probe_snapshots(snapshots, settings, {"test": images["test"]}, s, batch_size=4))
    assert (rows["null_failed"] == 1).all() and rows["null_rank"].notna().all()
    assert rows["null_rank_sd"].isna().all()


def test_a_failed_own_solve_stops_the_probe_naming_where_and_what(monkeypatch) -> None:
    """The head's own solve is the measurement: its error stops the probe, naming the epoch, image set, head and
    solve, and the solver's own words, with no advice that no config key follows."""
    snapshots, settings, images = _tiny_snapshots()
    _planted(monkeypatch, lambda soft, n: soft)
    s = probe.WSvmSettings(**PROBE)
    with pytest.raises(ArithmeticError) as raised:
        probe.probe_snapshots(snapshots, settings, {"test": images["test"]}, s, batch_size=4)
    message = str(raised.value)
    assert message.startswith("W-ATT-SVM probe at epoch 0, test images, head 0, the head's own selection on 4 images:")
    assert "15 of 2048 margins" in message and "raise" not in message


def test_the_solvers_error_names_no_setting_the_probe_cannot_change(monkeypatch) -> None:
    """The library's error for planes short of their margins (the one the planted solves above stand for) names the
    rounds and w_att_svm's max_rounds as a fact, not 'raise max_rounds' (no config key sets it)."""
    from maxmargin.core import w_svm

    exact = w_svm._hard_margin_planes

    def short(*args, **kwargs):
        p = exact(*args, **kwargs)
        return p._replace(w=p.w * 0.9, margins=p.margins * 0.9, alpha=p.alpha * 0.9)

    monkeypatch.setattr(w_svm, "_hard_margin_planes", short)
    z, x = np.random.default_rng(0).standard_normal((5, 3)), np.random.default_rng(1).standard_normal((5, 4, 3))
    with pytest.raises(ArithmeticError) as raised:
        w_att_svm(z, x, np.zeros(5, dtype=int))
    assert "w_att_svm's max_rounds" in str(raised.value) and "raise" not in str(raised.value)


def test_whole_train_without_the_training_images_is_refused() -> None:
    """vit.w_svm.whole_train asks for the training images: with image_sets [test] it would do nothing, and the
    config is refused naming both keys."""
    from conftest import DEFAULT_CONFIG

    from maxmargin.config import check_cross_keys

    w_svm = {**DEFAULT_CONFIG["vit"]["w_svm"], "whole_train": True}
    with pytest.raises(ValueError, match=r"'vit.w_svm.whole_train' is true, but 'vit.w_svm.image_sets' \['test'\]"):
        check_cross_keys({**DEFAULT_CONFIG, "vit": {**DEFAULT_CONFIG["vit"], "w_svm": w_svm}})
    check_cross_keys({**DEFAULT_CONFIG, "vit": {**DEFAULT_CONFIG["vit"], "w_svm": {**w_svm, "image_sets": ["train"]}}})
