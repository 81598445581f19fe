"""`make docs` leaves nothing out: a GPU session folder without its session.json stops the GPU page and the status
sentence (named, nothing written), and docs/config.md documents every registered experiment's block and keys, a
block added by CONTRIBUTING.md's recipe (checked by the schema's generic experiment) too."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from maxmargin import registry
from maxmargin.config import load_yaml
from maxmargin.docs import config_docs, gpu_report


@pytest.fixture
def gpu_docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of docs/gpu/ and of the pages holding the status sentence, which gpu_report reads and writes."""
    folder = tmp_path / "gpu"
    shutil.copytree(gpu_report.GPU_DOCS, folder)
    pages = {}
    for path, marks in gpu_report.STATUS_PAGES.items():
        shutil.copy(path, tmp_path / path.name)
        pages[tmp_path / path.name] = marks
    monkeypatch.setattr(gpu_report, "GPU_DOCS", folder)
    monkeypatch.setattr(gpu_report, "PAGE", folder / "index.md")
    monkeypatch.setattr(gpu_report, "STATUS_PAGES", pages)
    return folder


def test_a_session_folder_without_its_record_stops_the_gpu_page(gpu_docs: Path, capsys) -> None:
    """The issue's case: the last session (the 400-epoch run) without session.json. Before, `make docs` dropped it
    and wrote the status sentence from the earlier sessions."""
    last = sorted(p for p in gpu_docs.iterdir() if p.is_dir())[-1]
    (last / "session.json").unlink()
    written = {path: path.read_bytes() for path in [gpu_report.PAGE, *gpu_report.STATUS_PAGES]}
    for argv in ([], ["--check"]):
        assert gpu_report.main(argv) == 1
        out = capsys.readouterr().out
        assert f"{last}: no session.json" in out and "nothing written" in out
    assert {path: path.read_bytes() for path in written} == written
    with pytest.raises(gpu_report.IncompleteSession, match=last.name):
        gpu_report.sessions()


def _with_block(defaults: str, block: str) -> str:
    """default.yaml's text with ``block`` (indented YAML lines) at the end of its ``synthetic`` section."""
    lines = defaults.splitlines(keepends=True)
    start = lines.index("synthetic:\n")
    end = next(i for i in range(start + 1, len(lines)) if re.match(r"[A-Za-z_]", lines[i]))
    while not lines[end - 1].strip() or lines[end - 1].startswith("#"):  # the next section's comment stays its own
        end -= 1
    return "".join(lines[:end]) + block + "".join(lines[end:])


def _rows(defaults: str) -> dict[str, list[str]]:
    """docs/config.md's rows as config_docs writes them from ``defaults``: dotted key -> its cells."""
    text = config_docs.config_markdown(load_yaml(config_docs.SCHEMA), defaults)
    cells = [line.strip("| ").split(" | ") for line in text.splitlines() if line.startswith("| `")]
    return {row[0].strip("`"): row for row in cells}


def test_config_docs_document_a_new_synthetic_block_and_its_keys() -> None:
    """CONTRIBUTING.md's example block (a figure of one's own: its experiment's block under `synthetic`) gets its
    rows, with its comment and its defaults; before, docs/config.md left it out."""
    contributing = (REPO / "CONTRIBUTING.md").read_text()
    block = re.search(r"```yaml insert workflow/config/default\.yaml synthetic\n(.*?)```", contributing, re.S)[1]
    ((name, keys),) = yaml.safe_load("synthetic:\n" + block)["synthetic"].items()
    defaults = config_docs.DEFAULTS.read_text()
    before = _rows(defaults) if name not in load_yaml(config_docs.DEFAULTS)["synthetic"] else None
    rows = _rows(_with_block(defaults, block) if before is not None else defaults)
    assert rows[f"synthetic.{name}"][3].endswith("(CONTRIBUTING.md's example).")  # its comment in default.yaml
    for key, value in keys.items():
        assert rows[f"synthetic.{name}.{key}"][2] == f"`{json.dumps(value)}`", key
    if before is not None:  # nothing else moves
        assert set(rows) - set(before) == {f"synthetic.{name}", *(f"synthetic.{name}.{key}" for key in keys)}


def test_config_docs_document_every_registered_experiment_block_and_key() -> None:
    defaults, documented = load_yaml(config_docs.DEFAULTS), _rows(config_docs.DEFAULTS.read_text())
    for block in dict.fromkeys(e.block for e in registry.EXPERIMENTS):
        for key in defaults["synthetic"][block]:
            assert f"synthetic.{block}.{key}" in documented, (block, key)
