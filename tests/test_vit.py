"""Tests of maxmargin.experiments.vit (Section 4, Figures 6-7): the [CLS] probe and its metrics, the learning guard,
the run's files, the config, the DAG; its data: tests/test_vit_cifar.py; its checkpoints and resume:
tests/test_vit_resume.py."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
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

# imported by the tests that use them: collection imports no torch, timm, torchvision or Snakemake
torch, timm_vit = Lazy("torch"), Lazy("timm.models.vision_transformer")
smk_utils, vit_images = Lazy("snakemake.utils"), Lazy("maxmargin.experiments.vit.images")


TINY_MODEL = {"patch_size": 8, "embed_dim": 16, "depth": 2, "num_heads": 2, "mlp_ratio": 2.0}


DEFAULT_VIT = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())["vit"]


def paper_vit_config() -> dict:
    """The ``vit`` section of default.yaml with paper.yaml merged over it, as Snakemake merges --configfile."""
    merged = merged_config([REPO / "workflow/config/paper.yaml"], REPO / "workflow/config/default.yaml")
    smk_utils.validate(merged, str(REPO / "workflow/schemas/config.schema.yaml"))
    return merged["vit"]


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


def tiny_image_data() -> vit_images.ImageData:
    """72 random 32x32 images of 10 classes (no download), the same every time."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (72, 3, 32, 32), generator=g, dtype=torch.uint8)
    y = torch.randint(0, 10, (72,), generator=g)
    return vit_images.ImageData(x[:56], y[:56], x[56:], y[56:], "synthetic", [str(i) for i in range(10)])


@pytest.fixture(scope="module")
def tiny_data() -> vit_images.ImageData:
    """:func:`tiny_image_data`, once per module."""
    return tiny_image_data()


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


def test_learning_rate_schedule() -> None:
    factors = [vit.lr_factor(step, 10, 4, "cosine") for step in range(10)]
    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    assert factors[4] == pytest.approx(1.0) and factors[7] == pytest.approx(0.5) and factors[9] < 0.1
    assert [vit.lr_factor(step, 10, 0, "constant") for step in (0, 9)] == [1.0, 1.0]
    with pytest.raises(ValueError, match="schedule"):
        vit.lr_factor(5, 10, 0, "linear")


def test_learning_guard_warns_at_chance(tmp_path: Path, tiny_data: vit_images.ImageData) -> None:
    rows = [{"epoch": 0, "test_acc": 0.1}, {"epoch": 2, "test_acc": 0.12}]
    s = tiny_settings(1)  # random labels: test accuracy stays near chance

    def guard(after_epochs: int, margin: float) -> vit.GuardSettings:
        return dataclasses.replace(s.guard, after_epochs=after_epochs, margin=margin)

    message = vit.check_learning(rows, guard(2, 0.05), 10)
    assert message and "after 2 epochs" in message and "0.120" in message and "chance (0.100)" in message
    assert vit.check_learning(rows, guard(2, 0.01), 10) is None
    assert vit.check_learning(rows, guard(3, 0.05), 10) is None
    s = dataclasses.replace(s, guard=guard(1, 0.9))
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
    snapshots, sidecar, fingerprint = eight[3], eight[1], long.fingerprint(tiny_data.identity)
    assert run_snapshots(snapshots, sidecar, fingerprint)["epochs"] == [0, 4, 8]
    own = json.loads(sidecar.read_text())
    other = json.loads(four[1].read_text())
    assert other["fingerprint"] != own["fingerprint"]

    snapshots.write_bytes(four[3].read_bytes())
    with pytest.raises(ValueError) as err:
        run_snapshots(snapshots, sidecar, fingerprint)
    message = str(err.value)
    for value in (other["fingerprint"], own["fingerprint"], other["snapshots_sha256"], own["snapshots_sha256"]):
        assert value in message
    assert "[0, 4] in the file, [0, 4, 8] in the sidecar" in message
    assert message.startswith(f"{snapshots} is not this run's")  # the snapshot file alone, not the run's sidecar
    assert f"(rm {snapshots})" in message and "rule vit_train then restores" in message and str(sidecar) in message

    snapshots.unlink()  # the fix the message gives: rule vit_train restores the file from the finished checkpoint
    restored = saved_run(tmp_path / "eight", long, tiny_data, restore=True)
    assert json.loads(restored[1].read_text())["resumed_from_epoch"] == 8  # restored, not trained
    assert run_snapshots(snapshots, sidecar, fingerprint)["epochs"] == [0, 4, 8]

    good = snapshots.read_bytes()
    snapshots.write_bytes(good[: len(good) // 2])
    with pytest.raises(ValueError, match=r"cannot be read as a snapshot file .*truncated.*rm "):
        run_snapshots(snapshots, sidecar, fingerprint)
    torch.save([1, 2, 3], snapshots)
    with pytest.raises(ValueError, match=r"holds a list, not a snapshot file's dict; remove it"):
        run_snapshots(snapshots, sidecar, fingerprint)


def test_the_probe_refuses_a_sidecar_or_metrics_table_of_another_run(
    tmp_path: Path, tiny_data: vit_images.ImageData
) -> None:
    """Issue 61's case: the sidecar and the snapshot file of another run of the same model restored into a finished
    run (a partial restore, a sync from a node), its own metrics table beside them. The snapshot file agrees with
    the sidecar, but the sidecar is not this config's run (another fingerprint) nor of this metrics table: both are
    named as the foreign files, the metrics table not. A sidecar swapped alone is blamed alone (the snapshot file
    carries this config's fingerprint), so is a metrics table swapped alone, and a sidecar that records neither
    file beside it (another run of the same settings) is the one named."""
    short, long = tiny_settings(2, snapshot_every=2), tiny_settings(4, snapshot_every=2)
    other = saved_run(tmp_path / "other", short, tiny_data)
    own = saved_run(tmp_path / "own", long, tiny_data)
    metrics, sidecar, snapshots = own[0], own[1], own[3]
    fingerprint = long.fingerprint(tiny_data.identity)
    kept = {path: path.read_bytes() for path in own}
    theirs = json.loads(other[1].read_text())

    def refusal() -> str:
        with pytest.raises(ValueError) as err:
            run_snapshots(snapshots, sidecar, fingerprint)
        return str(err.value)

    sidecar.write_bytes(other[1].read_bytes())
    snapshots.write_bytes(other[3].read_bytes())
    message = refusal()
    assert message.startswith(f"{sidecar} and {snapshots} are not this run's")
    assert theirs["fingerprint"] in message and fingerprint in message and file_sha256(metrics) in message
    assert f"(rm {sidecar} {snapshots})" in message and "rule vit_train then restores" in message

    snapshots.write_bytes(kept[snapshots])  # the sidecar alone swapped: the snapshot file is this config's
    message = refusal()
    assert message.startswith(f"{sidecar} is not this run's") and f"(rm {sidecar})" in message
    assert f"the snapshot file {snapshots} carries this config's fingerprint" in message

    sidecar.write_bytes(kept[sidecar])
    metrics.write_bytes(other[0].read_bytes())  # the metrics table alone swapped
    message = refusal()
    assert message.startswith(f"{metrics} is not this run's") and f"(rm {metrics})" in message
    assert file_sha256(other[0]) in message and json.loads(kept[sidecar])["metrics_table"]["sha256"] in message

    metrics.write_bytes(kept[metrics])
    record = json.loads(kept[sidecar])
    record["metrics_table"]["sha256"], record["snapshots_sha256"] = "0" * 64, "1" * 64  # same settings, other run
    sidecar.write_text(json.dumps(record))
    message = refusal()
    assert message.startswith(f"{sidecar} is not this run's") and "describes neither file beside it" in message

    sidecar.write_bytes(kept[sidecar])
    assert run_snapshots(snapshots, sidecar, fingerprint)["epochs"] == [0, 2, 4]  # the run's own files pass
    with pytest.raises(ValueError) as err:  # the probe of another config: all three files are another run's
        run_snapshots(snapshots, sidecar, short.fingerprint(tiny_data.identity))
    assert str(err.value).startswith(f"{sidecar} and {snapshots} and {metrics} are not this run's")


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
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
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
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
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
