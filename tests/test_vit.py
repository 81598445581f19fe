"""Tests of maxmargin.experiments.vit (Section 4, Figures 6-7): data, the [CLS] probe, metrics, resume, the DAG."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import CI_RESULTS, REPO, Lazy, ci_config, copy_workflow, snakemake

from maxmargin.config import merged_config
from maxmargin.experiments import vit
from maxmargin.experiments.vit.results import save_result
from maxmargin.experiments.vit.settings import DataSettings, VitSettings
from maxmargin.experiments.vit_run_snapshots import run_snapshots
from maxmargin.files import file_sha256
from maxmargin.logs import rule_logging

# imported by the tests that use them: collection imports no torch, timm, torchvision or Snakemake
torch, timm_vit = Lazy("torch"), Lazy("timm.models.vision_transformer")
tv_datasets, smk_utils, vit_images = (
    Lazy("torchvision.datasets"),
    Lazy("snakemake.utils"),
    Lazy("maxmargin.experiments.vit.images"),
)

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
TINY_MODEL = {"patch_size": 8, "embed_dim": 16, "depth": 2, "num_heads": 2, "mlp_ratio": 2.0}
DEFAULT_VIT = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())["vit"]


def data_settings(**overrides: object) -> DataSettings:
    """The default config's data settings over the whole (tiny) data set (n_train = n_test = 0), overridden."""
    return DataSettings(**{**DEFAULT_VIT["data"], "n_train": 0, "n_test": 0, **overrides})


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def write_cifar10(root: Path, per_batch: int = 4, n_test: int = 6, seed: int = 0) -> dict[str, np.ndarray]:
    """A tiny archive in the real ``cifar-10-batches-py`` layout: 5 train batches, test_batch, batches.meta.

    Each batch is a pickled dict whose ``data`` is uint8 (N, 3072) (1024 red, 1024 green, 1024 blue values,
    row-major) and ``labels`` a list of ints. The real files were pickled by Python 2, whose ``str`` keys
    torchvision reads as ``str`` (``encoding="latin1"``); Python 3 ``str`` keys give torchvision the same dicts.
    """
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    arrays: dict[str, np.ndarray] = {}
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        n = n_test if name == "test_batch" else per_batch
        data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n).tolist()
        entry = {
            "batch_label": f"{name} of 6",
            "labels": labels,
            "data": data,
            "filenames": [f"img_{name}_{i}.png" for i in range(n)],
        }
        (folder / name).write_bytes(pickle.dumps(entry, protocol=2))
        arrays[name] = data
        arrays[f"{name}_labels"] = np.asarray(labels)
    meta = {"num_cases_per_batch": per_batch, "label_names": CLASSES, "num_vis": 3072}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=2))
    return arrays


@pytest.fixture
def tiny_cifar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, np.ndarray]]:
    """The tiny archive, with torchvision's md5 table pointed at its files (its integrity check still runs)."""
    root = tmp_path / "cifar10"
    arrays = write_cifar10(root)
    folder = root / tv_datasets.CIFAR10.base_folder
    train = [[f"data_batch_{i}", md5(folder / f"data_batch_{i}")] for i in range(1, 6)]
    monkeypatch.setattr(tv_datasets.CIFAR10, "train_list", train)
    monkeypatch.setattr(tv_datasets.CIFAR10, "test_list", [["test_batch", md5(folder / "test_batch")]])
    monkeypatch.setattr(tv_datasets.CIFAR10, "meta", {**tv_datasets.CIFAR10.meta, "md5": md5(folder / "batches.meta")})
    return root, arrays


def test_cifar10_loads_through_torchvision(tiny_cifar: tuple[Path, dict[str, np.ndarray]]) -> None:
    root, arrays = tiny_cifar
    data = vit.load_image_data(data_settings(root=str(root), download=False, fallback=[]), 0)
    assert data.name == "cifar10" and data.classes == CLASSES and data.note == ""
    assert data.x_train.shape == (20, 3, 32, 32) and data.x_train.dtype == torch.uint8
    expected = np.concatenate([arrays[f"data_batch_{i}"] for i in range(1, 6)]).reshape(-1, 3, 32, 32)
    np.testing.assert_array_equal(data.x_train.numpy(), expected)  # channel c, row h, column w of each row
    np.testing.assert_array_equal(data.x_test.numpy(), arrays["test_batch"].reshape(-1, 3, 32, 32))
    np.testing.assert_array_equal(data.y_test.numpy(), arrays["test_batch_labels"])
    sub = vit.load_image_data(data_settings(root=str(root), download=False, fallback=[], n_train=7, n_test=2), 0)
    assert len(sub.x_train) == 7 and len(sub.x_test) == 2


def test_archive_placed_by_hand_is_extracted_offline(tmp_path: Path, tiny_cifar, monkeypatch) -> None:
    """``cifar-10-python.tar.gz`` dropped into the data directory is used even with download off (no network)."""
    src, arrays = tiny_cifar
    root = tmp_path / "fresh"
    root.mkdir()
    archive = root / tv_datasets.CIFAR10.filename
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / tv_datasets.CIFAR10.base_folder, arcname=tv_datasets.CIFAR10.base_folder)
    monkeypatch.setattr(tv_datasets.CIFAR10, "tgz_md5", md5(archive))
    data = vit.load_image_data(data_settings(root=str(root), download=False, fallback=[]), 0)
    assert data.name == "cifar10"
    np.testing.assert_array_equal(data.x_test.numpy(), arrays["test_batch"].reshape(-1, 3, 32, 32))


def truncated_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """``root/cifar-10-python.tar.gz`` cut to half its size, as an interrupted download leaves it.

    torchvision's ``tgz_md5`` is pointed at the whole tiny archive (the real md5 is that of the real archive), and
    its download is made to fail the test: a damaged archive must be reported without going to the network.
    """
    src = tmp_path / "src"
    write_cifar10(src)
    root = tmp_path / "cifar10"
    root.mkdir()
    archive = root / tv_datasets.CIFAR10.filename
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / tv_datasets.CIFAR10.base_folder, arcname=tv_datasets.CIFAR10.base_folder)
    monkeypatch.setattr(tv_datasets.CIFAR10, "tgz_md5", md5(archive))
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    monkeypatch.setattr(
        "torchvision.datasets.cifar.download_and_extract_archive",
        lambda *args, **kwargs: pytest.fail("tried to download CIFAR-10"),
    )
    return archive, tv_datasets.CIFAR10.tgz_md5


def test_corrupt_archive_is_reported_as_corrupt_not_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive, expected = truncated_archive(tmp_path, monkeypatch)
    settings = DataSettings(**{**paper_vit_config()["data"], "root": str(archive.parent), "download": False})
    with pytest.raises(vit_images.DataUnavailableError, match="corrupt") as err:
        vit.load_image_data(settings, 0)
    message = str(err.value)
    assert str(archive.resolve()) in message and "md5 checksum" in message and "not available" not in message
    assert f"has md5 {md5(archive)}, expected {expected}" in message and md5(archive) != expected


def test_corrupt_batch_is_reported_by_name(tiny_cifar: tuple[Path, dict[str, np.ndarray]]) -> None:
    root, _ = tiny_cifar
    batch = root / tv_datasets.CIFAR10.base_folder / "data_batch_3"
    expected = md5(batch)
    batch.write_bytes(batch.read_bytes()[:-100])
    with pytest.raises(vit_images.DataUnavailableError, match="corrupt") as err:
        vit.load_image_data(data_settings(root=str(root), download=False, fallback=[]), 0)
    assert f"{batch.resolve()} has md5 {md5(batch)}, expected {expected}" in str(err.value)
    assert "data_batch_1" not in str(err.value)  # the intact batches are not blamed


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_quick_fallback_warning_reaches_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], damage: str
) -> None:
    """In a Snakemake job the ``maxmargin`` logger writes only to the rule's log; the fallback must show on stderr."""
    root = truncated_archive(tmp_path, monkeypatch)[0].parent if damage == "corrupt" else tmp_path / "empty"
    data = vit.load_image_data(data_settings(root=str(root), download=False, fallback=["digits"], n_test=10), 0)
    assert data.name == vit.DIGITS_NAME and "stand-in scikit-learn's digits used instead" in data.note
    err = capfd.readouterr().err
    assert "WARNING" in err and "stand-in" in err and str(root.resolve()) in err
    if damage == "corrupt":
        assert (
            "corrupt" in data.note and "corrupt" in err and str((root / tv_datasets.CIFAR10.filename).resolve()) in err
        )
    else:
        assert "unavailable" in data.note and "not available" in err and "checksum" not in err


def paper_vit_config() -> dict:
    """The ``vit`` section of default.yaml with paper.yaml merged over it, as Snakemake merges --configfile."""
    merged = merged_config([REPO / "workflow/config/paper.yaml"], REPO / "workflow/config/default.yaml")
    smk_utils.validate(merged, str(REPO / "workflow/schemas/config.schema.yaml"))
    return merged["vit"]


def test_paper_config_refuses_to_fall_back(tmp_path: Path) -> None:
    cfg = paper_vit_config()
    paper_model = {"patch_size": 2, "embed_dim": 768, "depth": 12, "num_heads": 12, "mlp_ratio": 4.0}
    assert cfg["model"] == {**paper_model, "img_size": 32, "num_classes": 10}
    assert cfg["train"]["epochs"] == 400 and cfg["resources"]["gpu"] == 1
    # the recipe the study picked (docs/vit.md): Adam after a warm-up, clipped, then a fixed rate, no decay
    assert (cfg["train"]["optimizer"], cfg["train"]["schedule"], cfg["train"]["weight_decay"]) == (
        "adam",
        "constant",
        0,
    )
    assert cfg["train"]["warmup_epochs"] > 0 and cfg["train"]["grad_clip"] > 0 and cfg["train"]["device"] == "cuda"
    settings = VitSettings.from_config(cfg)
    empty = tmp_path / "no_cifar"
    data = DataSettings(**{**cfg["data"], "root": str(empty), "download": False})  # no network in tests
    with pytest.raises(vit_images.DataUnavailableError, match="cifar-10-python.tar.gz") as err:
        vit.load_image_data(data, 0)
    assert str(empty.resolve()) in str(err.value)
    assert not settings.data.fallback


def test_quick_config_falls_back_to_digits_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="maxmargin"):
        data = vit.load_image_data(data_settings(root=str(tmp_path), download=False, fallback=["digits"], n_test=50), 0)
    assert data.name == vit.DIGITS_NAME and "stand-in" in data.note and "stand-in" in caplog.text
    assert data.x_train.shape == (1437, 3, 32, 32) and len(data.x_test) == 50
    assert set(data.y_train.tolist()) == set(range(10))
    img = data.x_train[0].numpy()
    assert (img[0] == img[1]).all() and (img[:, ::4, ::4].repeat(4, 1).repeat(4, 2) == img).all()


@pytest.mark.parametrize("qk_norm", [False, True])
def test_probe_equals_timms_unfused_attention(qk_norm: bool) -> None:
    torch.manual_seed(0)
    model = timm_vit.VisionTransformer(
        img_size=32, patch_size=8, num_classes=10, embed_dim=32, depth=2, num_heads=4, qk_norm=qk_norm
    ).eval()
    with torch.no_grad():  # move the attention away from uniform so the comparison is not trivial
        for p in model.blocks[-1].attn.qkv.parameters():
            p.mul_(8.0)
        if qk_norm:
            model.blocks[-1].attn.q_norm.weight.uniform_(0.5, 3.0)
    assert model.blocks[-1].attn.fused_attn  # training and the probe's own forward use SDPA
    x = torch.randn(5, 3, 32, 32)
    probe = vit.cls_attention(model, x, batch_size=2)  # (5, heads, 1 + 16)

    twin = vit.unfused_copy(model)
    captured = []
    twin.blocks[-1].attn.attn_drop.register_forward_hook(lambda m, args, out: captured.append(args[0]))
    with torch.no_grad():
        twin(x)
    reference = captured[0][:, :, 0, :]
    assert probe.shape == reference.shape == (5, 4, 17)
    torch.testing.assert_close(probe, reference, atol=1e-6, rtol=0)
    assert float(vit.soft_sparsity(vit.patch_attention(probe)).min()) < 0.9
    with torch.no_grad():  # the hook leaves the model's output unchanged
        torch.testing.assert_close(model(x), twin(x), atol=1e-5, rtol=0)


def test_soft_sparsity_known_vectors() -> None:
    T = 256
    assert float(vit.soft_sparsity(torch.full((T,), 1.0 / T))) == pytest.approx(1.0, abs=1e-12)
    assert float(vit.soft_sparsity(torch.eye(T)[3])) == pytest.approx(1.0 / T, abs=1e-15)
    # (1)^2 / (0.25 + 0.0625 + 0.0625) / 3 = 8/9; batched over a leading axis, and scale-free
    s = torch.tensor([[0.5, 0.25, 0.25], [2.0, 1.0, 1.0]])
    torch.testing.assert_close(vit.soft_sparsity(s), torch.tensor([8 / 9, 8 / 9], dtype=torch.float64))
    # patch_attention: mean over heads, [CLS] self-entry dropped, renormalised
    rows = torch.tensor([[[0.2, 0.4, 0.4, 0.0], [0.6, 0.0, 0.2, 0.2]]])  # (1 image, 2 heads, 1 + 3)
    torch.testing.assert_close(vit.patch_attention(rows), torch.tensor([[0.2, 0.3, 0.1]]) / 0.6)


def test_key_query_frobenius_by_hand() -> None:
    torch.manual_seed(1)
    model = timm_vit.VisionTransformer(img_size=32, patch_size=16, num_classes=10, embed_dim=12, depth=2, num_heads=3)
    attn = model.blocks[-1].attn
    w = attn.qkv.weight.detach().double().numpy()  # rows: [q (3 heads x 4), k (3 x 4), v (3 x 4)]
    W = np.zeros((12, 12))
    for h in range(3):
        wq, wk = w[4 * h : 4 * h + 4], w[12 + 4 * h : 12 + 4 * h + 4]
        W += wq.T @ wk
    assert vit.key_query_frobenius(model) == pytest.approx(np.linalg.norm(W), rel=1e-12)
    np.testing.assert_allclose(vit.key_query_matrix(attn).numpy(), W, rtol=1e-12)
    # W is the sum over heads of the bilinear forms behind the logits: sum_h q_h . k_h = x^T W x' (zero bias)
    with torch.no_grad():
        attn.qkv.bias.zero_()
        x = torch.randn(2, 12)
        q, k = attn.qkv(x)[:, :12].double(), attn.qkv(x)[:, 12:24].double()
    bilinear = x[0].double() @ vit.key_query_matrix(attn) @ x[1].double()
    assert float((q[0] * k[1]).sum()) == pytest.approx(float(bilinear))


def tiny_settings(epochs: int, **train: object) -> VitSettings:
    """A tiny ViT on the CPU: the default config's settings with a small model, probe and batch."""
    return VitSettings.from_config(
        {
            **DEFAULT_VIT,
            "model": {**DEFAULT_VIT["model"], **TINY_MODEL},
            "data": {**DEFAULT_VIT["data"], "augment": False},
            "train": {
                **DEFAULT_VIT["train"],
                **{"optimizer": "adam", "lr": 3e-3, "epochs": epochs, "batch_size": 16, "device": "cpu", **train},
            },
            "probe": {**DEFAULT_VIT["probe"], "n_images": 8, "image_index": 1},
        }
    )


@pytest.fixture(scope="module")
def tiny_data() -> vit_images.ImageData:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (72, 3, 32, 32), generator=g, dtype=torch.uint8)
    y = torch.randint(0, 10, (72,), generator=g)
    return vit_images.ImageData(x[:56], y[:56], x[56:], y[56:], "synthetic", [str(i) for i in range(10)])


def comparable(result: vit.TrainResult) -> pd.DataFrame:
    """The metrics of a run (the wall-clock times are apart, in ``result.times``)."""
    return pd.DataFrame(result.metrics)


def kill_at_epoch(monkeypatch: pytest.MonkeyPatch, epoch: int) -> None:
    """Make the next run die (as on SIGINT) while it trains ``epoch``, after the checkpoint of ``epoch - 1``."""
    train_epoch = vit.training._Trainer.train_epoch

    def dying(self: vit.training._Trainer, e: int) -> tuple[float, float]:
        if e == epoch:
            monkeypatch.setattr(vit.training._Trainer, "train_epoch", train_epoch)
            raise KeyboardInterrupt
        return train_epoch(self, e)

    monkeypatch.setattr(vit.training._Trainer, "train_epoch", dying)


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
    assert not {"w_svm_probe.py", "w_svm.py", "w_svm_dual.py", "w_svm_nulls.py", "arguments.py"} & set(training)
    assert set(analysis) == {
        "w_svm_probe.py", "vit_run_snapshots.py", "w_svm.py", "w_svm_dual.py", "w_svm_nulls.py", "gd.py", "arguments.py"
    }  # fmt: skip
    package = REPO / "maxmargin"
    assert all((package / name).is_file() for name in vit_run_snapshots.PROBE_CODE)
    smk = (REPO / "workflow/rules/vit.smk").read_text()
    assert smk.count("code=probe_fingerprint()") == 2  # vit_probe and vit_probe_images


def test_learning_rate_schedule() -> None:
    factors = [vit.lr_factor(step, 10, 4, "cosine") for step in range(10)]
    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    assert factors[4] == pytest.approx(1.0) and factors[7] == pytest.approx(0.5) and factors[9] < 0.1
    assert [vit.lr_factor(step, 10, 0, "constant") for step in (0, 9)] == [1.0, 1.0]
    with pytest.raises(ValueError, match="schedule"):
        vit.lr_factor(5, 10, 0, "linear")


def test_learning_guard_warns_at_chance(tmp_path: Path, tiny_data: vit_images.ImageData) -> None:
    rows = [{"epoch": 0, "test_acc": 0.1}, {"epoch": 2, "test_acc": 0.12}]
    message = vit.check_learning(rows, vit.GuardSettings(after_epochs=2, margin=0.05), 10)
    assert message and "after 2 epochs" in message and "0.120" in message and "chance (0.100)" in message
    assert vit.check_learning(rows, vit.GuardSettings(after_epochs=2, margin=0.01), 10) is None
    assert vit.check_learning(rows, vit.GuardSettings(after_epochs=3, margin=0.05), 10) is None
    s = tiny_settings(1)  # random labels: test accuracy stays near chance
    s = dataclasses.replace(s, guard=vit.GuardSettings(after_epochs=1, margin=0.9))
    with pytest.warns(vit.LearningStalledWarning, match="not learning"):
        vit.train_vit(s, tiny_data, tmp_path / "g.pt")


def test_cuda_is_never_replaced_by_the_cpu_silently(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(vit.DeviceUnavailableError, match="vit.train.device is 'cuda'"):
        vit.resolve_device("cuda")
    assert vit.resolve_device("auto").type == "cpu"


def test_soft_sparsity_of_the_figure6_image_is_logged(tmp_path: Path, tiny_data: vit_images.ImageData) -> None:
    result = vit.train_vit(tiny_settings(1), tiny_data, tmp_path / "s.pt")
    for row, fixed in zip(result.metrics, result.maps, strict=True):
        assert row["soft_sparsity_image"] == pytest.approx(float(vit.soft_sparsity(torch.from_numpy(fixed))))


def test_checkpoint_of_other_settings_is_ignored(tmp_path: Path, tiny_data: vit_images.ImageData) -> None:
    vit.train_vit(tiny_settings(1), tiny_data, tmp_path / "c.pt")
    other = vit.train_vit(tiny_settings(1, lr=1e-3), tiny_data, tmp_path / "c.pt")
    assert other.info["resumed_from_epoch"] is None
    state = torch.load(tmp_path / "c.pt", weights_only=True)
    assert state["fingerprint"] == tiny_settings(1, lr=1e-3).fingerprint(tiny_data.identity) and state["epoch"] == 1
    smaller = dataclasses.replace(tiny_data, x_train=tiny_data.x_train[:40], y_train=tiny_data.y_train[:40])
    assert vit.train_vit(tiny_settings(1, lr=1e-3), smaller, tmp_path / "c.pt").info["resumed_from_epoch"] is None


def test_save_result_files(tmp_path: Path, tiny_data: vit_images.ImageData) -> None:
    settings = tiny_settings(1)
    result = vit.train_vit(settings, tiny_data, tmp_path / "ck.pt")
    files = [tmp_path / name for name in ("m.csv", "m.json", "maps.npz", "snapshots.pt")]
    table = save_result(result, settings, *files)
    assert list(pd.read_csv(tmp_path / "m.csv").columns) == vit.METRIC_COLUMNS == list(table.columns)
    sidecar = json.loads((tmp_path / "m.json").read_text())
    assert sidecar["optimizer"] == "adam" and sidecar["device"] == "cpu" and sidecar["dataset"] == "synthetic"
    assert sidecar["settings"]["model"]["embed_dim"] == 16 and sidecar["snapshot_epochs"] == [0, 1]
    with np.load(tmp_path / "maps.npz") as f:
        assert f["maps"].shape == (2, 16) and f["image"].shape == (32, 32, 3) and list(f["grid"]) == [4, 4]
        assert list(f["epochs"]) == [0, 1]
    snapshots = vit.load_snapshots(tmp_path / "snapshots.pt")
    assert snapshots["epochs"] == [0, 1] and snapshots["fingerprint"] == result.info["fingerprint"]
    model = vit.build_vit(settings.model)
    model.load_state_dict(snapshots["states"][1])  # the trained model, whole
    assert sidecar["snapshots_sha256"] == file_sha256(tmp_path / "snapshots.pt")


def saved_run(folder: Path, settings: VitSettings, data: vit_images.ImageData, restore: bool = False) -> list[Path]:
    """A run trained (or restored) into ``folder`` and written as rule vit_train writes it: its metrics, sidecar,
    maps and snapshot file."""
    result = vit.train_vit(settings, data, folder / "checkpoint.pt", restore=restore)
    files = [folder / name for name in ("vit_metrics.csv", "vit_metrics.json", "vit_maps.npz", "vit_snapshots.pt")]
    save_result(result, settings, *files)
    return files


def test_the_probe_refuses_the_snapshots_of_another_run(tmp_path: Path, tiny_data: vit_images.ImageData) -> None:
    """Issue 56's case: a 4-epoch run's snapshot file copied into a finished 8-epoch run of the same model. Read
    with the 8-epoch run's sidecar, it is refused, naming both fingerprints, both epoch lists, both sha256 and the
    fix; removed, the run's own comes back from its checkpoint without training. A truncated file and a file of
    another form are named as such, not with torch's own message."""
    short, long = tiny_settings(4, snapshot_every=4), tiny_settings(8, snapshot_every=4)
    four = saved_run(tmp_path / "four", short, tiny_data)
    eight = saved_run(tmp_path / "eight", long, tiny_data)
    snapshots, sidecar = eight[3], eight[1]
    assert run_snapshots(snapshots, sidecar)["epochs"] == [0, 4, 8]
    own = json.loads(sidecar.read_text())
    other = json.loads(four[1].read_text())
    assert other["fingerprint"] != own["fingerprint"]

    snapshots.write_bytes(four[3].read_bytes())
    with pytest.raises(ValueError) as err:
        run_snapshots(snapshots, sidecar)
    message = str(err.value)
    for value in (other["fingerprint"], own["fingerprint"], other["snapshots_sha256"], own["snapshots_sha256"]):
        assert value in message
    assert "[0, 4] in the file, [0, 4, 8] in the sidecar" in message
    assert f"rm {snapshots}" in message and "rule vit_train then restores" in message and str(sidecar) in message

    snapshots.unlink()  # the fix the message gives: rule vit_train restores the file from the finished checkpoint
    restored = saved_run(tmp_path / "eight", long, tiny_data, restore=True)
    assert json.loads(restored[1].read_text())["resumed_from_epoch"] == 8  # restored, not trained
    assert run_snapshots(snapshots, sidecar)["epochs"] == [0, 4, 8]

    good = snapshots.read_bytes()
    snapshots.write_bytes(good[: len(good) // 2])
    with pytest.raises(ValueError, match=r"cannot be read as a snapshot file .*truncated.*rm "):
        run_snapshots(snapshots, sidecar)
    torch.save([1, 2, 3], snapshots)
    with pytest.raises(ValueError, match=r"holds a list, not a snapshot file's dict; remove it"):
        run_snapshots(snapshots, sidecar)


TINY_RUN = {
    "model": TINY_MODEL,
    "data": {"root": "data/none", "download": False, "fallback": ["digits"], "n_train": 96, "n_test": 48},
    "train": {"epochs": 2, "batch_size": 32},
    "probe": {"n_images": 16, "image_index": 3},
    "w_svm": {"images": 16},  # the W-ATT-SVM probe's images are among the 16 probe images
    "plots": {"fig6_epochs": [0, 1, 2]},
}


@pytest.mark.slow
def test_fig6_fig7_end_to_end(ci_copy: Path) -> None:
    """The ViT of the suite's CI run (the digits, two epochs: workflow/config/ci_slurm.yaml) and its Figures 6-7."""
    results = ci_copy / CI_RESULTS
    for name in ("fig6", "fig7"):
        for ext in ("pdf", "png"):
            assert (results / f"figures/{name}.{ext}").stat().st_size > 0
    metrics = pd.read_csv(results / "tables/vit_metrics.csv")
    metrics_bytes = (results / "tables/vit_metrics.csv").read_bytes()
    assert list(metrics["epoch"]) == [0, 1, 2] and set(metrics["dataset"]) == {vit.DIGITS_NAME}
    assert metrics["soft_sparsity"].between(0, 1).all() and (metrics["w_frobenius"] > 0).all()
    sidecar = json.loads((results / "tables/vit_metrics.json").read_text())
    assert "stand-in" in sidecar["dataset_note"] and sidecar["optimizer"] == "adam"
    assert sidecar["cpu"] and sidecar["torch_threads"] == DEFAULT_VIT["train"]["threads"]  # which machine, how
    assert [t["epoch"] for t in sidecar["epoch_times"]] == [0, 1, 2]
    assert (results / "runs/vit/checkpoint.pt").exists()
    # A forced rerun of a finished run trains again from epoch 0 (never resumes it) and gives the same numbers.
    snakemake(ci_copy, "fig7", "--forcerun", "vit_train", config=ci_config())
    log = (results / "logs/vit_train/vit.log").read_text()
    assert "epoch 0" in log and "resuming from" not in log
    again = (results / "tables/vit_metrics.csv").read_bytes()
    assert again == metrics_bytes  # the table holds no wall-clock time: the same bytes


@pytest.mark.slow
def test_cached_training_is_reused_by_another_work_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # With vit.cache (paper.yaml) and --cache, a second work directory takes the trained run from
    # SNAKEMAKE_OUTPUT_CACHE instead of training again, and its tables are the first one's, byte for byte.
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("SNAKEMAKE_OUTPUT_CACHE", str(cache))
    config = {"vit": {**TINY_RUN, "cache": True}}
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        copy_workflow(folder)
    trained = snakemake(first, "fig7", "--cache", config=config)
    assert "Moving output file" in trained.stdout + trained.stderr
    assert len(list(cache.iterdir())) == 4  # metrics, sidecar, maps, snapshots: one multiext
    reused = snakemake(second, "fig7", "--cache", config=config)
    assert "from cache" in reused.stdout + reused.stderr
    log = second / "results/logs/vit_train/vit.log"  # Snakemake may create it, but nothing trained there
    assert "epoch 0" not in (log.read_text() if log.exists() else "")
    assert "epoch 0" in (first / "results/logs/vit_train/vit.log").read_text()
    for table in ("vit_metrics.csv", "vit_metrics.json"):
        assert (second / "results/tables" / table).read_bytes() == (first / "results/tables" / table).read_bytes()


def test_the_figures_read_files_without_torch() -> None:
    # maxmargin.figures.vit labels its plots from the tables; importing it must not pull torch in.
    code = "import sys, maxmargin.figures.vit; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert proc.stdout.strip() == "False"


def schema_defaults(node: object, path: str = "") -> list[str]:
    """Every place where the schema states a default value."""
    found = []
    if isinstance(node, dict):
        found += [path or "/"] if "default" in node else []
        for key, sub in node.items():
            found += schema_defaults(sub, f"{path}/{key}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            found += schema_defaults(sub, f"{path}/{i}")
    return found


def test_the_config_is_the_one_source_of_defaults() -> None:
    # Defaults in the schema, default.yaml and the dataclasses could disagree: the schema keeps types and ranges
    # only; default.yaml holds every value (it validates without any default filled in).
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    assert schema_defaults(schema) == []
    default = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())
    smk_utils.validate(default, str(REPO / "workflow/schemas/config.schema.yaml"), set_default=False)


def test_vit_settings_take_every_value_from_the_config() -> None:
    # A default in code would be a second home of a setting, free to disagree with the config's: there is none.
    classes = (vit.ModelSettings, DataSettings, vit.TrainSettings, vit.ProbeSettings, vit.GuardSettings, VitSettings)
    for cls in classes:
        for field in dataclasses.fields(cls):
            assert field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING, field.name
    settings = VitSettings.from_config(DEFAULT_VIT)
    assert dataclasses.asdict(settings.train) == DEFAULT_VIT["train"]
    assert dataclasses.asdict(settings.model) == DEFAULT_VIT["model"]
    with pytest.raises(KeyError, match="probe"):
        VitSettings.from_config({key: value for key, value in DEFAULT_VIT.items() if key != "probe"})


@pytest.mark.slow
def test_the_paper_configs_code_path_runs_on_the_cpu_at_a_tiny_width(
    tmp_path: Path, tiny_data: vit_images.ImageData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the GPU run turns on (bf16 autocast, torch.compile, the checkpoint cadence, the probe, resume),
    here at width 16 on the CPU, so that a GPU run fails for no reason a CPU could have shown."""
    cfg = paper_vit_config()
    cfg["model"] |= {"embed_dim": 16, "depth": 2, "num_heads": 2}  # the paper's patch 2: 256 tokens
    cfg["train"] |= {"device": "cpu", "epochs": 3, "batch_size": 16, "checkpoint_every": 2}
    cfg["probe"] |= {"n_images": 8, "image_index": 1}
    settings = VitSettings.from_config(cfg)
    assert settings.train.bf16 and settings.train.compile and settings.train.warmup_epochs > 0
    whole = vit.train_vit(settings, tiny_data, tmp_path / "a.pt")
    assert whole.grid == (16, 16) and whole.maps.shape == (4, 256)
    kill_at_epoch(monkeypatch, 3)  # after the checkpoint of epoch 2 (the cadence skips epoch 1)
    with pytest.raises(KeyboardInterrupt):
        vit.train_vit(settings, tiny_data, tmp_path / "b.pt")
    assert torch.load(tmp_path / "b.pt", weights_only=True)["epoch"] == 2
    resumed = vit.train_vit(settings, tiny_data, tmp_path / "b.pt")
    assert resumed.info["resumed_from_epoch"] == 2
    assert [row["epoch"] for row in resumed.metrics] == [0, 1, 2, 3]  # no gap, no epoch twice
    assert [t["epoch"] for t in resumed.times] == [0, 1, 2, 3]
    pd.testing.assert_frame_equal(comparable(resumed), comparable(whole), check_exact=False, rtol=1e-6)
    assert vit.WHistory(tmp_path / "b.pt", 16).blocks() == 4


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
