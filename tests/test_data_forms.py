"""A second run is a no-op whatever form the ViT's data set is stored in.

The first run extracts the CIFAR-10 archive and decompresses the Fashion-MNIST ``.gz`` files; rule ``vit_data``'s
``plan`` must still describe the same data set afterwards, or the next DAG rebuilds the manifest and retrains. Each
form is written here at a tiny size (never the real data sets, never the network); torchvision's and
:data:`fashion.IDX_MD5`'s checksums are pointed at the tiny files, in this process by monkeypatch and in Snakemake's
jobs by a ``sitecustomize`` on their ``PYTHONPATH``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from conftest import CI_CONFIG, REPO, snakemake

from maxmargin.config import deep_merge
from maxmargin.experiments import vit
from maxmargin.files import write_json


def datasets() -> ModuleType:
    """torchvision's data sets (torchvision imports torch: imported by the tests that ask, not by collection)."""
    import torchvision.datasets

    return torchvision.datasets


def fashion() -> ModuleType:
    """The ViT's Fashion-MNIST module (it imports torch: imported as :func:`datasets`)."""
    from maxmargin.experiments.vit import fashion

    return fashion


FORMS = ("cifar10_archive", "cifar10_extracted", "fashion_mnist_gz", "fashion_mnist_raw")
DEFAULT_DATA = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())["vit"]["data"]


def write_cifar10(root: Path) -> None:
    """tests/test_vit_cifar.py's tiny CIFAR-10 (that module imports torch: imported here when a test needs it)."""
    from test_vit_cifar import write_cifar10 as write

    write(root)


def write_fashion(folder: Path, monkeypatch: pytest.MonkeyPatch, gz: bool) -> None:
    """tests/test_vit_data.py's tiny Fashion-MNIST (imported when a test needs it, as :func:`write_cifar10`)."""
    from test_vit_data import write_fashion as write

    write(folder, monkeypatch, gz=gz)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def write_form(form: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict]:
    """The data set of ``form`` under ``root``: the config's data keys that find it (no stand-in, no download) and
    the checksums that make its tiny files pass (:func:`set_checksums`)."""
    data = {
        **DEFAULT_DATA,
        "root": str(root / "cifar10"),
        "fashion_mnist_files": str(root / "debian"),
        "fashion_mnist_root": str(root / "fashion_mnist"),
        "fallback": [],
        "download": False,
    }
    if form.startswith("fashion_mnist"):
        raw = form.endswith("raw")
        folder = root / "fashion_mnist" / "FashionMNIST" / "raw" if raw else root / "debian"
        write_fashion(folder, monkeypatch, gz=not raw)
        return {**data, "dataset": "fashion_mnist"}, {"idx": dict(fashion().IDX_MD5)}
    source = root / ("cifar10" if form.endswith("extracted") else "cifar_src")
    write_cifar10(source)
    folder = source / datasets().CIFAR10.base_folder
    checksums = {
        "train_list": [[f"data_batch_{i}", _md5(folder / f"data_batch_{i}")] for i in range(1, 6)],
        "test_list": [["test_batch", _md5(folder / "test_batch")]],
        "meta_md5": _md5(folder / "batches.meta"),
        "tgz_md5": "",
    }
    if form.endswith("archive"):
        archive = root / "cifar10" / datasets().CIFAR10.filename
        archive.parent.mkdir(parents=True)
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(folder, arcname=datasets().CIFAR10.base_folder)
        checksums["tgz_md5"] = _md5(archive)
    return {**data, "dataset": "cifar10"}, checksums


def set_checksums(checksums: dict, setattr_=setattr) -> None:
    """Point torchvision's CIFAR-10 md5s, or Fashion-MNIST's :data:`fashion.IDX_MD5`, at the tiny files."""
    if "idx" in checksums:
        setattr_(fashion(), "IDX_MD5", checksums["idx"])
        return
    cifar10 = datasets().CIFAR10
    setattr_(cifar10, "train_list", checksums["train_list"])
    setattr_(cifar10, "test_list", checksums["test_list"])
    setattr_(cifar10, "meta", {**cifar10.meta, "md5": checksums["meta_md5"]})
    setattr_(cifar10, "tgz_md5", checksums["tgz_md5"])


@pytest.mark.parametrize("form", FORMS)
def test_the_plan_after_the_manifest_is_the_plan_before(form: str, tmp_path: Path, monkeypatch) -> None:
    """What Snakemake compares: the ``plan`` param of the DAG after rule vit_data ran equals the one it ran with."""
    data, checksums = write_form(form, tmp_path, monkeypatch)
    set_checksums(checksums, monkeypatch.setattr)
    manifest = tmp_path / "runs" / "data" / "vit.json"
    before = vit.data_plan(data, manifest)
    write_json(vit.resolve_data(data, before), manifest)
    changed_form = {"cifar10_archive": "cifar-10-batches-py", "fashion_mnist_gz": "FashionMNIST"}.get(form)
    if changed_form:  # the job extracted / decompressed: the files' own description changed
        assert changed_form in json.dumps(vit.data_plan(data)) and changed_form not in json.dumps(before)
    assert repr(vit.data_plan(data, manifest)) == repr(before)


def test_a_data_set_its_own_job_downloaded_stands_as_planned(tmp_path: Path, monkeypatch) -> None:
    """The plan said "no files, download allowed"; the job downloaded them; the next DAG's plan is the same."""
    data, _ = write_form("fashion_mnist_gz", tmp_path, monkeypatch)
    for gz in (tmp_path / "debian").iterdir():
        gz.unlink()
    raw = tmp_path / "fashion_mnist" / "FashionMNIST" / "raw"
    monkeypatch.setattr(datasets().FashionMNIST, "download", lambda _self: write_fashion(raw, monkeypatch, gz=False))
    data = {**data, "download": True}
    manifest = tmp_path / "manifest.json"
    before = vit.data_plan(data, manifest)
    written = vit.resolve_data(data, before)
    assert written["downloaded"] and before["candidates"][0]["files"] is None
    write_json(written, manifest)
    assert repr(vit.data_plan(data, manifest)) == repr(before)


def test_a_data_set_that_appears_or_changes_still_reruns_the_manifest(tmp_path: Path, monkeypatch) -> None:
    data, checksums = write_form("fashion_mnist_gz", tmp_path, monkeypatch)
    set_checksums(checksums, monkeypatch.setattr)
    manifest = tmp_path / "manifest.json"
    data = {**data, "fallback": ["digits"]}
    before = vit.data_plan(data, manifest)
    write_json(vit.resolve_data(data, before), manifest)
    raw = tmp_path / "fashion_mnist" / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte"
    raw.write_bytes(raw.read_bytes() + b"\0")  # the decompressed file changed after the manifest
    assert vit.data_plan(data, manifest) != before
    raw.write_bytes(raw.read_bytes()[:-1])
    assert vit.data_plan(data, manifest) == before
    cifar = {**data, "dataset": "cifar10", "fallback": ["fashion_mnist", "digits"]}
    before = vit.data_plan(cifar, manifest)
    write_cifar10(tmp_path / "cifar10")  # CIFAR-10 dropped in later: the configured data set now is there
    assert vit.data_plan(cifar, manifest) != before


SITECUSTOMIZE = '''"""Tests only (tests/test_data_forms.py): tiny data sets' checksums in Snakemake's jobs."""
import importlib.abc, json, os, sys

CHECKSUMS = json.loads(os.environ["MAXMARGIN_TEST_CHECKSUMS"])
MODULES = ("torchvision.datasets.cifar", "maxmargin.experiments.vit.fashion")


def patch(module):
    if "idx" in CHECKSUMS:
        if hasattr(module, "IDX_MD5"):
            module.IDX_MD5 = CHECKSUMS["idx"]
        return
    if hasattr(module, "CIFAR10"):
        c = module.CIFAR10
        c.train_list, c.test_list = CHECKSUMS["train_list"], CHECKSUMS["test_list"]
        c.meta, c.tgz_md5 = {**c.meta, "md5": CHECKSUMS["meta_md5"]}, CHECKSUMS["tgz_md5"]


class Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in MODULES:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self else getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                run = spec.loader.exec_module
                spec.loader.exec_module = lambda module: (run(module), patch(module))
                return spec
        return None


sys.meta_path.insert(0, Hook())
'''


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
def test_a_second_run_has_nothing_to_do(form: str, workflow_dir: Path, monkeypatch) -> None:
    """On a clean copy: the ViT run (CI's size) on each form, then `snakemake -n` has nothing to do."""
    data, checksums = write_form(form, workflow_dir / "data", monkeypatch)
    hook = workflow_dir / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    monkeypatch.setenv("MAXMARGIN_TEST_CHECKSUMS", json.dumps(checksums))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    ci = yaml.safe_load((REPO / CI_CONFIG).read_text())
    # the tiny sets hold 6 test images: the probes take 4 of them
    few = {"probe": {"n_images": 4}, "w_svm": {"images": 4, "nuclear_images": 4}}
    config = deep_merge(ci, {"vit": {"data": data, **few}})
    targets = ["--", f"{ci['results']}/runs/vit/vit_metrics.csv"]
    snakemake(workflow_dir, *targets, config=config)
    manifest = json.loads((workflow_dir / ci["results"] / "runs" / "data" / "vit.json").read_text())
    assert manifest["dataset"] == data["dataset"] and not manifest["tried"]
    dry = snakemake(workflow_dir, "-n", *targets, config=config)
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]


@pytest.mark.slow
def test_a_second_make_figures_prints_nothing_to_be_done(ci_run: Path) -> None:
    """CI's check of a clean clone's second `make figures`, on the suite's shared run (CI's size): a dry run of
    `all` after it has nothing to do."""
    dry = snakemake(ci_run, "-n", "--configfile", CI_CONFIG)
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]
