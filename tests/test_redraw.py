"""A changed panel redraws, and only that panel: each plot job's rerun trigger hashes its own registry entry (less
what only the report reads), the shared drawing code and its own drawing function with what that function names
(maxmargin/drawing_code.py)."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest
from conftest import CI_CONFIG, snakemake

from maxmargin import drawing_code, registry
from maxmargin.drawing_code import function_sources, panel_fingerprint
from maxmargin.files import source_fingerprint

REPO = Path(__file__).resolve().parents[1]
DRAWING_SCRIPTS = ("plot_panel.py", "plot_synthetic.py")
# A new census panel's function, not yet registered (CONTRIBUTING.md's first step of a new panel, its body left out),
# under a name no module defines: a tree that followed CONTRIBUTING.md holds its example, saturation_by_d, already.
NEW_PANEL = """

def trials_by_d(summary):
    \"\"\"A new census panel, not yet registered.\"\"\"
    return summary
"""


def test_source_fingerprint_follows_bytes_and_names(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    before = source_fingerprint([a, b])
    assert before == source_fingerprint([a, b]) and len(before) == 16
    a.write_text("x = 2\n")
    assert source_fingerprint([a, b]) != before
    a.write_text("x = 1\n")
    assert source_fingerprint([a, b]) == before
    assert source_fingerprint([b, a]) != before  # the order is part of what is hashed: callers sort


def _rule_blocks(text: str) -> list[str]:
    return re.split(r"\n(?=\s*rule\b)", text)


def test_every_rule_that_draws_hashes_its_own_panel():
    drawing = []
    for path in sorted((REPO / "workflow/rules").glob("*.smk")):
        for block in _rule_blocks(path.read_text()):
            script = re.search(r"scripts/(\w+\.py)", block)
            if script and script.group(1) in DRAWING_SCRIPTS:
                drawing.append(script.group(1))
                assert "code=lambda wildcards: drawing_code(wildcards.panel)" in block, (
                    f"{path.name}: a rule running {script.group(1)} has no per-panel code param"
                )
    assert set(drawing) == set(DRAWING_SCRIPTS)


@pytest.fixture
def package(tmp_path, monkeypatch) -> Path:
    """A copy of the package whose sources the fingerprints read (edited by the tests)."""
    copy = tmp_path / "maxmargin"
    shutil.copytree(drawing_code.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(drawing_code, "PACKAGE", copy)
    return copy


def _fingerprints(panels=registry.PANELS) -> dict[str, str]:
    return {p.name: panel_fingerprint(p) for p in panels}


def _changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before if after[name] != before[name]}


def _edit_function(path: Path, name: str) -> None:
    """Change the source of the function ``name`` of ``path`` (a comment above its ``def`` line, inside its
    decorators' place)."""
    text = path.read_text()
    assert f"\ndef {name}(" in text, name
    path.write_text(text.replace(f"\ndef {name}(", f"\n@lambda f: f  # edited\ndef {name}(", 1))


def test_a_title_a_draw_name_and_a_caption_replan_only_their_panel(package) -> None:
    before = _fingerprints()
    fig1a, fig1b, fig3c = (registry.panel(name) for name in ("fig1a", "fig1b", "fig3c"))
    edited = {
        "fig1a": dataclasses.replace(fig1a, title="(a) Another title"),
        "fig1b": dataclasses.replace(fig1b, draw="key_plane_gd_with_hyperplane"),
        # only the report reads these: a new caption, label or group redraws nothing
        "fig3c": dataclasses.replace(fig3c, caption="Another caption.", label="Figure 3(c')", subcategory="x"),
    }
    after = _fingerprints([edited.get(p.name, p) for p in registry.PANELS])
    assert _changed(before, after) == {"fig1a", "fig1b"}


def test_an_edited_function_replans_the_panels_it_draws_and_no_neighbour(package) -> None:
    before = _fingerprints()
    _edit_function(package / "figures/synthetic.py", "joint_probabilities")  # fig3c's own function
    assert _changed(before, after := _fingerprints()) == {"fig3c"}
    _edit_function(package / "figures/synthetic.py", "_curves")  # a helper of two panels
    assert _changed(after, again := _fingerprints()) == {"fig4a", "fig4b"}
    assert "def trials_by_d(" not in (package / "figures/census.py").read_text()
    with (package / "figures/census.py").open("a") as module:  # a new panel's function
        module.write(NEW_PANEL)
    assert _changed(again, _fingerprints()) == set()


def test_what_a_function_names_elsewhere_in_the_package_is_followed(package) -> None:
    """regpath's panel names synthetic's KIND_LABELS (imported by name): a change there redraws both families'
    panels that use it, and only those."""
    before = _fingerprints()
    text = (package / "figures/synthetic.py").read_text()
    (package / "figures/synthetic.py").write_text(text.replace("KIND_LABELS = {", "KIND_LABELS = {  # edited", 1))
    users = {p.name for p in registry.PANELS if "maxmargin/figures/synthetic.py:KIND_LABELS" in _sources(p)}
    assert "regpath" in users and "fig1a" in users and "fig4a" not in users
    assert _changed(before, _fingerprints()) == users


def _sources(panel) -> dict[str, str]:
    return function_sources(drawing_code.drawing_module(panel.family), panel.draw)


def test_the_shared_drawing_code_replans_every_panel(package) -> None:
    before = _fingerprints()
    with (package / "figures/style.py").open("a") as module:
        module.write("\n# the shared style changed\n")
    assert _changed(before, _fingerprints()) == set(before)


def test_a_draw_name_no_module_defines_names_the_panel_and_its_registry_module() -> None:
    wrong = dataclasses.replace(registry.panel("fig9a"), draw="fig9z")
    with pytest.raises(ValueError, match=r"panel 'fig9a' \(maxmargin/registry/census.py\) is drawn by 'fig9z'"):
        panel_fingerprint(wrong)
    with pytest.raises(ValueError, match="no drawing module"):
        panel_fingerprint(dataclasses.replace(wrong, family="claims"))


def _figures_to_redraw(work: Path) -> set[str]:
    """The panels whose files Snakemake's summary of `all` finds out of date in ``work`` (any reason)."""
    proc = snakemake(work, "--configfile", CI_CONFIG, "--summary", "--", "all")
    rows = [line.split("\t") for line in proc.stdout.splitlines()[1:]]
    return {Path(path).stem for path, _, rule, _, status, _ in rows if rule.startswith("plot_") and status != "ok"}


def test_a_snakemake_summary_replans_exactly_the_edited_panels(ci_copy: Path) -> None:
    """The issue's case on the finished CI run, in a copy of the package beside the Snakefile (which the workflow
    imports): a new title (fig1a), another drawing function (fig1b), an edit of one function (fig3c's), a new
    function beside it and a new caption (fig9a): Snakemake plans exactly fig1a, fig1b and fig3c."""
    package = ci_copy / "maxmargin"
    shutil.copytree(drawing_code.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    assert _figures_to_redraw(ci_copy) == set()
    synthetic = package / "registry/synthetic.py"
    text = synthetic.read_text().replace('title="(a) Global convergence"', 'title="(a) Another title"', 1)
    text = re.sub(r'(name="fig1b",(?:\n.*?){3}\n\s*draw=)"key_plane_gd"', r'\1"key_plane_gd_with_hyperplane"', text)
    synthetic.write_text(text)
    census = package / "registry/census.py"
    census.write_text(census.read_text().replace('caption="', 'caption="Edited. ', 1))
    _edit_function(package / "figures/synthetic.py", "joint_probabilities")
    with (package / "figures/census.py").open("a") as module:
        module.write(NEW_PANEL)
    assert _figures_to_redraw(ci_copy) == {"fig1a", "fig1b", "fig3c"}
