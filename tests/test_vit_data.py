"""Tests of the Fashion-MNIST stand-in (maxmargin.experiments.vit.fashion): tiny idx files written here, never the
Debian package, never the network."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO, Lazy

from maxmargin.experiments import vit
from maxmargin.experiments.vit.settings import DataSettings
from maxmargin.provenance import RUN_ARGS_ENV

# imported by the tests that use them: collection imports no torch, torchvision or Snakemake
torch, smk_utils, tv_datasets = Lazy("torch"), Lazy("snakemake.utils"), Lazy("torchvision.datasets")
fashion, vit_images = Lazy("maxmargin.experiments.vit.fashion"), Lazy("maxmargin.experiments.vit.images")

DEFAULT_VIT = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())["vit"]
N_TRAIN, N_TEST = 7, 5


def idx_bytes(array: np.ndarray) -> bytes:
    """The idx format of LeCun's MNIST: magic (0, 0, dtype 0x08 = uint8, ndim), each dimension as a big-endian
    int32, then the values row-major."""
    head = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    return head + array.astype(np.uint8).tobytes()


def write_fashion(folder: Path, monkeypatch: pytest.MonkeyPatch, seed: int = 0, gz: bool = True) -> dict:
    """The four files of Fashion-MNIST with random 28x28 images, gzipped (Debian's layout) or raw (torchvision's),
    and :data:`fashion.IDX_MD5` set to their md5s; the arrays."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (N_TRAIN, 28, 28)),
        "train-labels-idx1-ubyte": rng.integers(0, 10, N_TRAIN),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (N_TEST, 28, 28)),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, N_TEST),
    }
    folder.mkdir(parents=True, exist_ok=True)
    md5s = {}
    for name, array in arrays.items():
        raw = idx_bytes(array)
        md5s[name] = hashlib.md5(raw).hexdigest()
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(raw))
        else:
            (folder / name).write_bytes(raw)
    monkeypatch.setattr(fashion, "IDX_MD5", md5s)
    return arrays


def settings(tmp_path: Path, **overrides: object) -> DataSettings:
    data = {
        **DEFAULT_VIT["data"],
        "dataset": "fashion_mnist",
        "fashion_mnist_files": str(tmp_path / "debian"),
        "fashion_mnist_root": str(tmp_path / "root"),
        "download": False,
        "n_train": 0,
        "n_test": 0,
    }
    return DataSettings(**{**data, **overrides})


@pytest.fixture(autouse=True)
def no_download(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("Fashion-MNIST must never be downloaded")

    monkeypatch.setattr(tv_datasets.FashionMNIST, "download", refuse)


def test_debian_files_load_through_torchvision_as_32x32x3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arrays = write_fashion(tmp_path / "debian", monkeypatch)
    data = vit.load_image_data(settings(tmp_path), 0)
    assert data.name == "fashion_mnist" and data.note == "" and data.classes[0] == "T-shirt/top"
    assert data.x_train.shape == (N_TRAIN, 3, 32, 32) and data.x_test.shape == (N_TEST, 3, 32, 32)
    assert data.x_train.dtype == torch.uint8
    images_of = {"train-images-idx3-ubyte": data.x_train, "t10k-images-idx3-ubyte": data.x_test}
    for name, x in images_of.items():
        images = arrays[name]
        np.testing.assert_array_equal(x[:, 1, 2:30, 2:30].numpy(), images)  # the 28x28 image, pixel for pixel
        assert int(x[:, :, :2].max()) == int(x[:, :, 30:].max()) == int(x[:, :, :, :2].max()) == 0  # zero border
        assert torch.equal(x[:, 0], x[:, 1]) and torch.equal(x[:, 0], x[:, 2])  # grey in all three channels
    np.testing.assert_array_equal(data.y_train.numpy(), arrays["train-labels-idx1-ubyte"])
    np.testing.assert_array_equal(data.y_test.numpy(), arrays["t10k-labels-idx1-ubyte"])
    raw = tmp_path / "root" / "FashionMNIST" / "raw"  # torchvision's layout, decompressed
    assert sorted(p.name for p in raw.iterdir()) == sorted(arrays)
    sub = vit.load_image_data(settings(tmp_path, n_train=3, n_test=2), 0)  # the second load reads the raw folder
    assert len(sub.x_train) == 3 and len(sub.x_test) == 2 and torch.equal(sub.x_train, data.x_train[:3])


def test_raw_files_in_torchvisions_layout_need_no_gz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arrays = write_fashion(tmp_path / "root" / "FashionMNIST" / "raw", monkeypatch, gz=False)
    data = vit.load_image_data(settings(tmp_path, fashion_mnist_files=str(tmp_path / "nowhere")), 0)
    np.testing.assert_array_equal(data.y_test.numpy(), arrays["t10k-labels-idx1-ubyte"])


def test_missing_files_are_named_and_the_paper_config_stops(tmp_path: Path) -> None:
    with pytest.raises(vit_images.DataUnavailableError, match="dataset-fashion-mnist") as err:
        vit.load_image_data(settings(tmp_path, fallback=[]), 0)
    assert "train-images-idx3-ubyte.gz" in str(err.value) and str((tmp_path / "debian").resolve()) in str(err.value)


def test_quick_scale_falls_back_to_digits_with_the_reason(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    data = vit.load_image_data(settings(tmp_path, fallback=["digits"]), 0)
    assert (
        data.name == vit.DIGITS_NAME
        and data.note == "Fashion-MNIST unavailable: stand-in scikit-learn's digits used instead"
    )
    assert "dataset-fashion-mnist" in capfd.readouterr().err


def test_an_offline_download_falls_back_naming_both_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """vit.data.download lets torchvision try the network where the files are missing; offline, the run falls back
    to the next stand-in, and the message names the missing files and the failed download."""
    import urllib.error

    def offline(*_args: object, **_kwargs: object) -> None:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(tv_datasets.FashionMNIST, "download", offline)
    source = dataclasses.asdict(settings(tmp_path, download=True, fallback=["digits"]))
    manifest = vit.resolve_data(source)
    assert manifest["dataset"] == "digits" and not manifest["downloaded"]
    (tried,) = manifest["tried"]
    assert tried["dataset"] == "fashion_mnist" and "dataset-fashion-mnist" in tried["message"]
    assert "download failed too (URLError" in tried["message"]


def test_a_damaged_file_is_reported_as_corrupt_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_fashion(tmp_path / "debian", monkeypatch)
    labels = tmp_path / "debian" / "t10k-labels-idx1-ubyte.gz"
    raw = bytearray(gzip.decompress(labels.read_bytes()))
    raw[-1] = (raw[-1] + 1) % 10  # a valid gzip of the wrong content: only the md5 can tell
    labels.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(vit_images.DataUnavailableError, match="corrupt") as err:
        vit.load_image_data(settings(tmp_path, fallback=[]), 0)
    assert "t10k-labels-idx1-ubyte" in str(err.value) and hashlib.md5(raw).hexdigest() in str(err.value)
    assert not (tmp_path / "root" / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte").exists()


def test_a_damaged_decompressed_file_is_decompressed_again_from_its_intact_gz(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decompressed idx file damaged after its .gz was decompressed is made again in the same run: the run keeps
    Fashion-MNIST instead of falling back to the digits (and the next plan does not flip back)."""
    arrays = write_fashion(tmp_path / "debian", monkeypatch)
    vit.load_image_data(settings(tmp_path, fallback=["digits"]), 0)
    decompressed = tmp_path / "root" / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte"
    damaged = bytearray(decompressed.read_bytes())
    damaged[-1] = (damaged[-1] + 1) % 10
    decompressed.write_bytes(bytes(damaged))
    data = vit.load_image_data(settings(tmp_path, fallback=["digits"]), 0)
    assert data.name == vit.FASHION_MNIST_NAME
    np.testing.assert_array_equal(data.y_test.numpy(), arrays["t10k-labels-idx1-ubyte"])


def test_to_rgb32_pads_without_resampling() -> None:
    image = torch.arange(28 * 28, dtype=torch.int64).remainder(256).to(torch.uint8).reshape(1, 28, 28)
    out = fashion.to_rgb32(image)
    assert out.shape == (1, 3, 32, 32)
    assert torch.equal(out[0, 2, 2:30, 2:30], image[0]) and int(out.sum()) == 3 * int(image.sum())


def test_the_schema_takes_fashion_mnist_and_nothing_else() -> None:
    config = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())
    config["vit"]["data"]["dataset"] = "fashion_mnist"
    smk_utils.validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    config["vit"]["data"]["dataset"] = "mnist"
    with pytest.raises(Exception, match="mnist"):
        smk_utils.validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))


def test_the_data_location_is_not_part_of_the_fingerprint(tmp_path: Path) -> None:
    vit_config = {**DEFAULT_VIT}
    a = vit.VitSettings.from_config({**vit_config, "data": {**DEFAULT_VIT["data"], "dataset": "fashion_mnist"}})
    moved = {**DEFAULT_VIT["data"], "dataset": "fashion_mnist", "fashion_mnist_root": str(tmp_path)}
    b = vit.VitSettings.from_config({**vit_config, "data": moved})
    c = vit.VitSettings.from_config(vit_config)
    # which data set a run got is the data identity (name, files' digest, sizes), not the configured preference
    assert a.fingerprint("x") == b.fingerprint("x") == c.fingerprint("x") != a.fingerprint("y")


def test_a_truncated_gz_is_named_leaves_no_partial_and_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A .gz cut short (an interrupted copy) is told apart like a corrupt CIFAR-10: named, no partial file left,
    and the next stand-in taken where one is allowed."""
    write_fashion(tmp_path / "debian", monkeypatch)
    images = tmp_path / "debian" / "train-images-idx3-ubyte.gz"
    images.write_bytes(images.read_bytes()[: images.stat().st_size // 2])
    with pytest.raises(vit_images.DataUnavailableError, match="truncated or damaged") as err:
        vit.load_image_data(settings(tmp_path, fallback=[]), 0)
    assert str(images.resolve()) in str(err.value) and "EOFError" in str(err.value)
    raw = tmp_path / "root" / "FashionMNIST" / "raw"
    assert not list(raw.glob(".tmp-*")) and not (raw / "train-images-idx3-ubyte").exists()
    data = vit.load_image_data(settings(tmp_path, fallback=["digits"]), 0)
    assert data.name == vit.DIGITS_NAME
    assert data.note == "Fashion-MNIST corrupt (truncated or damaged .gz): stand-in scikit-learn's digits used instead"
    assert str(images.resolve()) in capfd.readouterr().err


def test_a_file_changed_since_the_manifest_names_the_rebuild_of_this_runs_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rebuild command carries the run's --configfile/--config, as the tables' messages do."""
    write_fashion(tmp_path / "root" / "FashionMNIST" / "raw", monkeypatch, gz=False)
    data = settings(tmp_path, fallback=[])
    manifest = vit.resolve_data(dataclasses.asdict(data))
    labels = tmp_path / "root" / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte"
    labels.write_bytes(labels.read_bytes()[:-1] + b"\x09")
    monkeypatch.setenv(RUN_ARGS_ENV, "--configfile workflow/config/paper.yaml --config results=results/paper")
    with pytest.raises(vit_images.DataUnavailableError, match="changed since the data manifest was written") as err:
        vit.load_image_data(data, 0, manifest)
    command = (
        "snakemake --cores all --configfile workflow/config/paper.yaml --config results=results/paper "
        "--forcerun vit_data -- fig6 fig7"
    )
    assert str(err.value).endswith(command)
