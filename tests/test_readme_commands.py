"""Every `snakemake` command in the code blocks of the README and docs/ does what it says, checked by a dry run.

A command that the README shows but this file does not know fails the test: documentation and behaviour stay in
step. The expected jobs are what the command's targets need, so an option that swallows a target (the old
`--configfile my.yaml fig9`, which then rebuilt everything) shows up as jobs of unrelated rules.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, copy_workflow
from snakemake_forks import run_many

SYNTHETIC = {"synthetic_experiment", "plot_synthetic"}
CENSUS = {"census_trials", "census_gather", "census_histogram", "plot_census"}
VIT = {"vit_data", "vit_train", "vit_baseline", "vit_metrics_table", "plot_vit"}
# A 400-epoch run's page: its probe, its image-count curve and the decisive experiment (vit.decisive.parts).
PROBED = {"vit_probe", "vit_probe_images", "docs_vit"}
DECISIVE = {"vit_decisive_ray", "vit_decisive_gd"}
EVERYTHING = {"vit_train", "census_trials", "regpath_instance", "lemma1_table", "claims_table", "all"}
DOCUMENTS = ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")), "CONTRIBUTING.md"]

# The targets after the options -> the rules its dry run must plan (exactly), or None for "at least EVERYTHING".
EXPECTED_RULES: dict[tuple[str, ...], set[str] | None] = {
    (): None,
    ("fig3",): SYNTHETIC | {"fig3"},
    ("fig5",): SYNTHETIC | {"fig5"},
    ("results/figures/fig1b.png",): SYNTHETIC,
    ("fig9",): CENSUS | {"fig9"},
    ("fig9", "fig10"): CENSUS | {"fig9", "fig10"},
    ("census_budget",): {"census_budget_trials", "census_budget_gather", "plot_census", "census_budget"},
    ("census_grid",): {"census_grid_cell", "census_grid_gather", "plot_census", "census_grid"},
    ("regpath", "lemma1"): {"regpath_instance", "regpath_table", "plot_regpath", "regpath", "lemma1_table", "lemma1"},
    ("fig6", "fig7"): VIT | {"vit_probe", "fig6", "fig7"},  # fig7 has the W-SVM companion panel
    ("vit_pilot",): {"vit_data", "vit_pilot_run", "vit_pilot"},
    ("vit_recipes",): {"vit_data", "vit_recipe_train", "vit_recipes_table", "plot_vit", "vit_recipes"},
    ("vit_decisive",): {"vit_data", "vit_train", "plot_vit", "vit_decisive"} | DECISIVE,  # the default run's snapshots
    ("docs/results/cpu_depth12.md",): VIT | {"vit_probe", "docs_vit"},  # the page shows the W-SVM panel
    ("docs/results/cpu_paper_epochs_adam.md",): VIT | PROBED | DECISIVE,
    ("docs/results/cpu_paper_epochs_sgd.md",): VIT | PROBED | DECISIVE,
    ("docs/results/cpu_paper_epochs_depth12.md",): VIT | PROBED | DECISIVE,
    ("docs/results/cpu_paper_epochs_sgd_pilot.md",): {
        "vit_data",
        "vit_recipe_train",
        "vit_recipes_table",
        "plot_vit",
        "docs_vit_recipes",
    },
    ("docs/results/vit_depth12_study.md",): {
        "vit_data",
        "vit_recipe_train",
        "vit_recipes_table",
        "plot_vit",
        "docs_vit_recipes",
    },
    ("docs/results/vit_recipes_vitb_cpu.md",): {
        "vit_data",
        "vit_recipe_train",
        "vit_recipes_table",
        "plot_vit",
        "docs_vit_recipes",
    },
}
# Commands shown as templates or needing conda (absent here; tests/test_packaging.py checks the envs statically).
# CONTRIBUTING.md's examples exist only once its steps have run: tests/test_contributing.py runs them.
NOT_RUN = ("figN", "PANEL", "--software-deployment-method conda", "circle", "census_saturation")


def readme_commands(documents: list[str] = DOCUMENTS) -> list[str]:
    """The `snakemake ...` lines of the code blocks (indented fences too) of the README and docs, without comments."""
    commands = []
    for name in documents:
        in_block = False
        for line in (REPO / name).read_text().splitlines():
            if line.strip().startswith("```"):
                in_block = not in_block
            elif in_block and line.strip().startswith("snakemake "):
                command = line.split(" #")[0].strip()
                if not any(word in command for word in NOT_RUN):
                    commands.append(command)
    return commands


def targets_of(args: list[str]) -> tuple[str, ...]:
    """The targets: what follows `--`, else the words that are neither options nor an option's value."""
    if "--" in args:
        return tuple(args[args.index("--") + 1 :])
    takes_value = {"--cores", "--profile", "--configfile", "--report", "--forcerun", "--resources", "--directory"}
    targets, skip = [], False
    for arg in args:
        if skip or arg.startswith("-"):
            skip = arg in takes_value
            continue
        targets.append(arg)
    return tuple(targets)


def planned_rules(output: str) -> set[str]:
    stats = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+\s*$", stats, flags=re.MULTILINE)}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = copy_workflow(tmp_path_factory.mktemp("readme"))
    (work / "my.yaml").write_text("census:\n  n_trials: 20\n")  # the README's example override file
    return work


def test_the_readme_shows_snakemake_commands():
    assert len(readme_commands(["README.md"])) >= 10


@pytest.fixture(scope="module")
def dry_runs(workdir: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every command's dry run, forked from one process that has imported Snakemake (tests/snakemake_forks.py)."""
    commands = readme_commands()
    calls = []
    for command in commands:
        args = shlex.split(command)[1:]
        # the docs export it on the line above: Snakemake's cache needs a folder
        env = {"SNAKEMAKE_OUTPUT_CACHE": str(workdir / "cache")} if "--cache" in args else {}
        calls.append((workdir, ["-n", *args], env))
    return dict(zip(commands, run_many(calls), strict=True))


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_plans_the_jobs_its_targets_need(command, dry_runs):
    args = shlex.split(command)[1:]
    targets = targets_of(args)
    assert targets in EXPECTED_RULES, f"README command {command!r}: targets {targets} unknown to this test"
    proc = dry_runs[command]
    out = proc.stdout + proc.stderr
    if "--report" in args:  # the report needs a finished run; a dry run shows the command is understood
        assert "Creating report..." in out, out[-3000:]
        return
    assert proc.returncode == 0, f"{command}\n{out[-3000:]}"
    rules = planned_rules(proc.stdout)
    expected = EXPECTED_RULES[targets]
    if expected is None:
        assert EVERYTHING <= rules, f"{command}: plans {sorted(rules)}"
    else:
        assert rules == expected, f"{command}: plans {sorted(rules)}, expected {sorted(expected)}"
    if "paper.yaml" in command:
        assert "results/paper/tables/vit_" in proc.stdout  # the paper scale keeps its own results root
