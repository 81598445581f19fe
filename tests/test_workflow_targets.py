"""Every output of the workflow is a target of `all`: none can go missing while Snakemake says "Nothing to be done"."""

from __future__ import annotations

import re
import subprocess

from conftest import REPO, SNAKEMAKE, copy_workflow

# Rules deliberately off `all`, each run by its own target:
OFF_ALL = {
    "gallery_thumbnail",  # writes docs/gallery/ (committed), outside the results root: `make gallery`
    "docs_claims",  # writes docs/results/claims.md (committed): `make gallery`
    "docs_tables",  # writes docs/results/default/ (committed): `make gallery`
    "docs_vit",  # writes docs/results/<vit.docs>.md and its figures and tables (committed): docs/vit.md
    "docs_vit_recipes",  # writes docs/results/<vit_recipes.docs>.{md,png} (committed): docs/vit.md
    "vit_pilot_run",  # times a few epochs before a long run: `vit_pilot`
    "vit_recipe_train",
    "vit_recipes_table",  # ~5 min of CPU: `vit_recipes`
    "census_grid_cell",
    "census_grid_gather",  # ~9 min on 2 cores: `census_grid`
    "vit_decisive_ray",
    "vit_decisive_gd",  # beyond the paper, from a run's snapshots: `vit_decisive` (README), a 400-epoch run's page
}


def rule_blocks() -> dict[str, str]:
    text = "\n".join(p.read_text() for p in sorted((REPO / "workflow" / "rules").glob("*.smk")))
    text += "\n" + (REPO / "Snakefile").read_text()
    parts = re.split(r"^rule (\w+):\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def planned_jobs(stdout: str) -> list[tuple[str, list[str], list[str]]]:
    """(rule, inputs, outputs) of every job in a dry run's listing."""
    jobs = []
    for match in re.finditer(r"^rule (\w+):\n((?:    .*\n)*)", stdout, flags=re.MULTILINE):
        fields = dict(re.findall(r"^    (\w+): (.*)$", match.group(2), flags=re.MULTILINE))
        jobs.append((match.group(1), fields.get("input", "").split(", "), fields.get("output", "").split(", ")))
    return jobs


def test_every_output_is_a_target_of_all(tmp_path):
    work = copy_workflow(tmp_path)
    proc = subprocess.run(
        [str(SNAKEMAKE), "-n", "--forceall", "--cores", "2"], cwd=work, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = planned_jobs(proc.stdout)
    (all_inputs,) = [set(inputs) for rule, inputs, _ in jobs if rule == "all"]
    for rule, _, outputs in jobs:
        missing = {o for o in outputs if o} - all_inputs
        assert rule == "all" or not missing, f"rule {rule}: outputs not targets of `all`: {sorted(missing)}"
    aggregates = {name for name, body in rule_blocks().items() if "    output:" not in body}
    unplanned = set(rule_blocks()) - {rule for rule, _, _ in jobs} - aggregates
    assert unplanned == OFF_ALL, f"rules never run by `all`: {sorted(unplanned - OFF_ALL)}"
