"""Tests of the ViT's CIFAR-10 (maxmargin.experiments.vit): a tiny archive in the real layout loads through
torchvision, a damaged one is named, and the fallback to a stand-in is said (or refused, at the paper's scale)."""

from __future__ import annotations

import hashlib
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest
from conftest import Lazy
from test_vit import DEFAULT_VIT, paper_vit_config

from maxmargin.experiments import vit
from maxmargin.experiments.vit.settings import DataSettings, VitSettings

# imported by the tests that use them: collection imports no torch, timm, torchvision or Snakemake
torch, tv_datasets, vit_images = Lazy("torch"), Lazy("torchvision.datasets"), Lazy("maxmargin.experiments.vit.images")


CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


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
