"""A changed drawing redraws its panels, and only its family's: the plot rules' rerun trigger is the hash of the
shared drawing code and of the family's own module (maxmargin/files.py: family_drawing_code)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CI_CONFIG, SNAKEMAKE

from maxmargin import files, registry
from maxmargin.files import drawing_code_files, family_drawing_code, source_fingerprint

REPO = Path(__file__).resolve().parents[1]
FAMILIES = sorted({panel.family for panel in registry.PANELS})  # each draws with maxmargin/figures/<family>.py
DRAWING_SCRIPTS = ("plot_panel.py", "plot_synthetic.py", "docs_vit.py")
NEW_PANEL = """

def saturation_by_d(summary):
    \"\"\"A new census panel (CONTRIBUTING.md's example, its body left out).\"\"\"
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


def test_every_rule_that_draws_reruns_when_the_drawing_code_changes():
    drawing = []
    for path in sorted((REPO / "workflow/rules").glob("*.smk")):
        for block in _rule_blocks(path.read_text()):
            script = re.search(r"scripts/(\w+\.py)", block)
            if script and script.group(1) in DRAWING_SCRIPTS:
                drawing.append((path.name, script.group(1)))
                assert re.search(r"code=family_drawing_code\((family|\"\w+\")\)", block), (
                    f"{path.name}: a rule running {script.group(1)} has no code param"
                )
    assert {s for _, s in drawing} == set(DRAWING_SCRIPTS)


def test_a_family_hashes_the_shared_drawing_code_and_its_own_module_only() -> None:
    modules = {family: files.PACKAGE / "figures" / f"{family}.py" for family in FAMILIES}
    for family in FAMILIES:
        own = drawing_code_files(family)
        assert modules[family] in own and (files.PACKAGE / "figures/style.py") in own
        assert not {module for other, module in modules.items() if other != family} & set(own)
    with pytest.raises(ValueError, match="no drawing module"):
        family_drawing_code("claims")


def test_a_new_panel_changes_its_familys_hash_and_no_other(tmp_path, monkeypatch) -> None:
    package = tmp_path / "maxmargin"
    (package / "figures").mkdir(parents=True)
    for path in [*files.PACKAGE.glob("figures/*.py"), files.PACKAGE / "pipeline.py"]:
        shutil.copy(path, package / path.relative_to(files.PACKAGE))
    monkeypatch.setattr(files, "PACKAGE", package)
    before = {family: family_drawing_code(family) for family in FAMILIES}
    with (package / "figures/census.py").open("a") as module:
        module.write(NEW_PANEL)
    after = {family: family_drawing_code(family) for family in FAMILIES}
    assert {family for family in FAMILIES if after[family] != before[family]} == {"census"}
    with (package / "figures/style.py").open("a") as module:
        module.write("\n# the shared style changed\n")
    assert all(family_drawing_code(family) != after[family] for family in FAMILIES)


def _redrawn_for_their_params(workdir: Path) -> set[str]:
    """The drawing rules whose params changed since their last run (`snakemake -n all`'s reasons)."""
    command = [str(SNAKEMAKE), "-n", "--cores", "2", "--configfile", CI_CONFIG, "--", "all"]
    proc = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    reasons = proc.stdout.split("params have changed since last execution:\n", 1)
    rules = reasons[1].splitlines()[0].strip().split(", ") if len(reasons) > 1 else []
    return {rule for rule in rules if rule.startswith("plot_") or rule == "docs_vit"}


def test_a_new_census_panel_puts_only_the_census_panels_out_of_date(ci_copy: Path) -> None:
    """The issue's case, on the finished CI run: a function added to figures/census.py, then `snakemake -n all`
    (a copy of the package beside the Snakefile, which the workflow imports, before and after the edit)."""
    shutil.copytree(files.PACKAGE, ci_copy / "maxmargin", ignore=shutil.ignore_patterns("__pycache__"))
    before = _redrawn_for_their_params(ci_copy)
    with (ci_copy / "maxmargin/figures/census.py").open("a") as module:
        module.write(NEW_PANEL)
    assert _redrawn_for_their_params(ci_copy) - before == {"plot_census"}
