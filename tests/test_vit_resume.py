"""Tests of the ViT run's checkpoints (maxmargin.experiments.vit): a killed run resumes to the same numbers, a
finished one is trained again, another code's or settings' checkpoint is kept aside or ignored, and an edit undone
restores the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, Lazy
from test_vit import comparable, kill_at_epoch, tiny_image_data, tiny_settings

from maxmargin.experiments import vit
from maxmargin.logs import rule_logging

# imported by the tests that use them: collection imports no torch, timm, torchvision or Snakemake
torch, vit_images = Lazy("torch"), Lazy("maxmargin.experiments.vit.images")


@pytest.fixture(scope="module")
def tiny_data() -> vit_images.ImageData:
    """tests/test_vit.py's tiny images, once per module."""
    return tiny_image_data()


@pytest.mark.parametrize(
    "optimizer,augment,schedule,eval_every",
    [("adam", False, "cosine", 1), ("sgd", True, "constant", 1), ("adam", False, "constant", 2)],
)
def test_killed_and_resumed_run_equals_uninterrupted(
    tmp_path: Path,
    tiny_data: vit_images.ImageData,
    optimizer: str,
    augment: bool,
    schedule: str,
    eval_every: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = tiny_settings(
        3, optimizer=optimizer, schedule=schedule, warmup_epochs=1.0, grad_clip=1.0, eval_every=eval_every,
        snapshot_every=2,
    )  # fmt: skip
    settings = dataclasses.replace(s, data=dataclasses.replace(s.data, augment=augment))
    whole = vit.train_vit(settings, tiny_data, tmp_path / "a.pt")
    assert whole.info["resumed_from_epoch"] is None
    kill_at_epoch(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        vit.train_vit(settings, tiny_data, tmp_path / "b.pt")
    resumed = vit.train_vit(settings, tiny_data, tmp_path / "b.pt")
    assert resumed.info["resumed_from_epoch"] == 2
    pd.testing.assert_frame_equal(comparable(resumed), comparable(whole), check_exact=True)
    np.testing.assert_array_equal(resumed.maps, whole.maps)
    evaluated = [0, 1, 2, 3] if eval_every == 1 else [0, 2, 3]
    assert list(comparable(whole)["epoch"]) == evaluated
    assert whole.maps.shape == (len(evaluated), 16) and whole.grid == (4, 4)
    assert [t["epochs"] for t in whole.times] == [0] + [evaluated[1] - 0] + [1] * (len(evaluated) - 2)
    np.testing.assert_allclose(whole.maps.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(whole.image, tiny_data.x_test[1].permute(1, 2, 0).numpy())
    # the snapshots (epoch 0, every 2nd, the last) of the resumed run are those of the uninterrupted one
    assert whole.snapshots.epochs() == resumed.snapshots.epochs() == [0, 2, 3]
    for epoch in (0, 2, 3):
        a, b = (torch.load(r.snapshots._file(epoch), weights_only=True) for r in (whole, resumed))
        assert all(torch.equal(a[k], b[k]) for k in a)
    # one checkpoint per run, the latest, its W history and its snapshots
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{run}.pt{suffix}" for run in "ab" for suffix in ("", ".snapshots", ".w_history")
    ]


def test_a_resumed_runs_log_tells_the_whole_run(tmp_path: Path, tiny_data: vit_images.ImageData, monkeypatch) -> None:
    # Snakemake empties the rule log before each attempt; the resumed attempt replays the epochs it did not run
    settings = tiny_settings(3)
    kill_at_epoch(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        vit.train_vit(settings, tiny_data, tmp_path / "c.pt")
    monkeypatch.undo()
    log = tmp_path / "attempt2.log"
    with rule_logging(str(log)):
        vit.train_vit(settings, tiny_data, tmp_path / "c.pt")
    lines = [line for line in log.read_text().splitlines() if " epoch " in line and "train loss" in line]
    assert [line.split(" epoch ")[1].split(":")[0] for line in lines] == ["0", "1", "2", "3"]
    assert sum("(from the checkpoint)" in line for line in lines) == 3


def test_a_finished_run_is_trained_again_not_resumed(tmp_path: Path, tiny_data: vit_images.ImageData) -> None:
    first = vit.train_vit(tiny_settings(2), tiny_data, tmp_path / "f.pt")
    assert torch.load(tmp_path / "f.pt", weights_only=True)["finished"]
    again = vit.train_vit(tiny_settings(2), tiny_data, tmp_path / "f.pt")  # e.g. --forcerun vit_train
    assert again.info["resumed_from_epoch"] is None
    pd.testing.assert_frame_equal(comparable(again), comparable(first), check_exact=True)


def test_a_checkpoint_of_other_code_is_kept_aside_not_overwritten(
    tmp_path: Path, tiny_data: vit_images.ImageData, monkeypatch
) -> None:
    s = tiny_settings(1)
    vit.train_vit(s, tiny_data, tmp_path / "k.pt")
    old = torch.load(tmp_path / "k.pt", weights_only=True)
    monkeypatch.setattr(vit.settings, "training_code_fingerprint", lambda: "changed-code")  # an edit of the loop
    with pytest.warns(vit.checkpoint.CheckpointWarning, match=f"kept aside as .*k.{old['fingerprint']}.pt"):
        again = vit.train_vit(s, tiny_data, tmp_path / "k.pt")
    assert again.info["resumed_from_epoch"] is None
    aside = tmp_path / f"k.{old['fingerprint']}.pt"
    kept = torch.load(aside, weights_only=True)["metrics"]  # the long run of the other code
    pd.testing.assert_frame_equal(pd.DataFrame(kept), pd.DataFrame(old["metrics"]))
    assert (tmp_path / f"k.{old['fingerprint']}.pt.w_history").stat().st_size > 0
    assert torch.load(tmp_path / "k.pt", weights_only=True)["fingerprint"] == s.fingerprint(tiny_data.identity)


def test_only_the_training_code_is_in_the_checkpoints_fingerprint() -> None:
    """An edit of how results are written (results.py) or where a checkpoint is kept (checkpoint.py) restores a
    finished run instead of training it again; rule vit_train's `code` param covers the package but its analyses,
    so the outputs follow the edit; an edit of an analysis (w_svm_probe.py) reruns the analysis only."""
    modules = {p.name for p in (REPO / "maxmargin/experiments/vit").glob("*.py")}
    assert set(vit.settings.TRAINING_MODULES) <= modules
    outside = {"__init__.py", "baseline.py", "checkpoint.py", "machine.py", "results.py", "w_svm_probe.py"}
    assert modules - set(vit.settings.TRAINING_MODULES) == outside
    assert set(vit.settings.ANALYSIS_MODULES) == {"w_svm_probe.py"}


def test_an_analysis_edit_reruns_the_probe_and_never_the_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule vit_train's rerun trigger (its `code` param) hashes no analysis of the snapshots and no W-ATT-SVM solver;
    rule vit_probe's hashes both: adding or changing an analysis of a finished run trains nothing."""
    import maxmargin.files
    from maxmargin.experiments import vit_run_snapshots

    hashed: list[list[str]] = []
    record = lambda paths: hashed.append([Path(p).name for p in paths])  # noqa: E731
    monkeypatch.setattr(vit.settings, "source_fingerprint", record)
    monkeypatch.setattr(maxmargin.files, "source_fingerprint", record)
    vit.settings.code_fingerprint()
    vit_run_snapshots.probe_fingerprint()
    training, analysis = hashed
    assert "training.py" in training and "snapshots.py" in training
    solver = {"w_svm.py", "w_svm_active.py", "w_svm_dual.py", "w_svm_hard.py", "w_svm_nuclear.py", "w_svm_nulls.py"}
    probe = {"w_svm_probe.py", "vit_heads.py"}  # the analysis and the heads' W and tokens it reads
    assert not {*probe, *solver, "arguments.py"} & set(training)
    assert set(analysis) == {*probe, "vit_run_snapshots.py", *solver, "gd.py", "arguments.py"}
    package = REPO / "maxmargin"
    assert all((package / name).is_file() for name in vit_run_snapshots.PROBE_CODE)
    smk = (REPO / "workflow/rules/vit.smk").read_text()
    assert smk.count("code=probe_fingerprint()") == 2  # vit_probe and vit_probe_images


def test_checkpoint_of_other_settings_is_ignored(tmp_path: Path, tiny_data: vit_images.ImageData) -> None:
    vit.train_vit(tiny_settings(1), tiny_data, tmp_path / "c.pt")
    other = vit.train_vit(tiny_settings(1, lr=1e-3), tiny_data, tmp_path / "c.pt")
    assert other.info["resumed_from_epoch"] is None
    state = torch.load(tmp_path / "c.pt", weights_only=True)
    assert state["fingerprint"] == tiny_settings(1, lr=1e-3).fingerprint(tiny_data.identity) and state["epoch"] == 1
    smaller = dataclasses.replace(tiny_data, x_train=tiny_data.x_train[:40], y_train=tiny_data.y_train[:40])
    assert vit.train_vit(tiny_settings(1, lr=1e-3), smaller, tmp_path / "c.pt").info["resumed_from_epoch"] is None


def _no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> None:
        raise AssertionError("trained although a checkpoint of this run was kept aside")

    monkeypatch.setattr(vit.training._Trainer, "train_epoch", refuse)


def test_undoing_a_code_edit_restores_the_finished_run(tmp_path: Path, tiny_data, monkeypatch) -> None:
    """Edit the training code (the checkpoint is kept aside under its fingerprint), run, undo the edit: the
    finished run of the original code is taken back and restored without training: undoing an edit never costs a run."""
    settings, checkpoint = tiny_settings(2), tmp_path / "checkpoint.pt"
    first = vit.train_vit(settings, tiny_data, checkpoint, restore=True)
    with monkeypatch.context() as edit:
        edit.setattr(vit.settings, "training_code_fingerprint", lambda: "edited")
        with pytest.warns(vit.checkpoint.CheckpointWarning, match="kept aside"):
            edited = vit.train_vit(settings, tiny_data, checkpoint, restore=True)
        assert edited.info["resumed_from_epoch"] is None
    with monkeypatch.context() as undone:
        _no_training(undone)
        with pytest.warns(vit.checkpoint.CheckpointWarning, match="kept aside"):  # the edited run's, in turn
            again = vit.train_vit(settings, tiny_data, checkpoint, restore=True)
    assert again.info["resumed_from_epoch"] == 2 and again.info["fingerprint"] == first.info["fingerprint"]
    pd.testing.assert_frame_equal(comparable(again), comparable(first), check_exact=True)
    aside = f"checkpoint.{edited.info['fingerprint']}.pt"  # the edited code's run, in its turn
    kept = {"checkpoint.pt", aside}
    companions = {f"{name}{suffix}" for name in kept for suffix in (".w_history", ".snapshots")}
    assert {p.name for p in tmp_path.iterdir()} == kept | companions


@pytest.mark.slow  # four runs of four epochs
def test_undoing_an_edit_mid_run_resumes_where_the_run_stopped(tmp_path: Path, tiny_data, monkeypatch) -> None:
    """Interrupted at epoch 3, edited, interrupted again, edit undone: the run resumes from its epoch 2 and ends
    as an uninterrupted run does, bit for bit."""
    settings = tiny_settings(4)
    whole = vit.train_vit(settings, tiny_data, tmp_path / "whole.pt")
    checkpoint = tmp_path / "checkpoint.pt"
    kill_at_epoch(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        vit.train_vit(settings, tiny_data, checkpoint, restore=True)
    with monkeypatch.context() as edit:
        edit.setattr(vit.settings, "training_code_fingerprint", lambda: "edited")
        kill_at_epoch(edit, 2)
        with pytest.warns(vit.checkpoint.CheckpointWarning), pytest.raises(KeyboardInterrupt):
            vit.train_vit(settings, tiny_data, checkpoint, restore=True)
    with pytest.warns(vit.checkpoint.CheckpointWarning):
        resumed = vit.train_vit(settings, tiny_data, checkpoint, restore=True)
    assert resumed.info["resumed_from_epoch"] == 2
    pd.testing.assert_frame_equal(comparable(resumed), comparable(whole), check_exact=True)
    np.testing.assert_array_equal(resumed.maps, whole.maps)


def test_kept_aside_checkpoints_are_pruned_and_an_unreadable_one_is_named_and_removed(
    tmp_path: Path, tiny_data: vit_images.ImageData
) -> None:
    """vit.checkpoints.keep_aside bounds the checkpoints that edits of the code keep aside; taking one back skips an
    unreadable one with a warning that names it, and removes it."""
    import os

    checkpoint = tmp_path / "c.pt"
    for i, tag in enumerate(["a1", "b2", "c3", "d4", "e5"]):
        aside = tmp_path / f"c.{tag}.pt"
        aside.write_bytes(b"x")
        (tmp_path / f"c.{tag}.pt.w_history").write_bytes(b"w")
        os.utime(aside, (1_000 + i, 1_000 + i))
    removed = vit.checkpoint.prune_kept_aside(checkpoint, 3)
    assert sorted(p.name for p in removed) == ["c.a1.pt", "c.b2.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"c.{tag}.pt{suffix}" for tag in ("c3", "d4", "e5") for suffix in ("", ".w_history")
    ]
    settings = tiny_settings(1)
    fingerprint = settings.fingerprint(tiny_data.identity)
    broken = tmp_path / f"c.{fingerprint}.pt"
    broken.write_bytes(b"not a checkpoint")
    with pytest.warns(vit.checkpoint.CheckpointWarning, match=f"kept-aside checkpoint {broken} is unreadable"):
        vit.train_vit(settings, tiny_data, checkpoint)
    assert not broken.exists()
