"""Each job gets only the keys it reads: for every leaf key of the config, a change of it plans, first,
exactly the rules that maxmargin/registry/reads.py says read it (what depends on their outputs follows, "input
files updated by another job"), measured by Snakemake's own summary of a finished small run under the changed config.

The small run is the suite's shared CI run (tests/conftest.py) with tiny on-demand studies built on top; then one
summary per key, two at a time, each forked from a process that has imported Snakemake (tests/snakemake_forks.py).
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CI_CONFIG, DEFAULT_CONFIG, REPO, SNAKEMAKE
from snakemake_forks import run_many

from maxmargin.config import deep_merge, load_yaml, merged_config
from maxmargin.registry.reads import readers

pytestmark = [pytest.mark.slow, pytest.mark.long]  # minutes: `make test-long` (CI), not `make test`

# As small as each key's check allows: one cell of the phase diagram, one recipe (a list, either is one leaf key).
SMALL = {
    "census": {"grid": {"n": [1], "T": [2], "dims": [2]}},
    "vit_recipes": {
        "model": {"embed_dim": 16, "depth": 1, "num_heads": 2},
        "data": {"n_train": 64, "n_test": 32},
        "probe": {"n_images": 8},
        "train": {"epochs": 1, "batch_size": 32},
        "recipes": [{"name": "a", "optimizer": "adam", "lr": 1.0e-3}],
    },
    # Figure 6 at epochs 0 and 2 only: a change of vit.train.eval_every (1 -> 2) keeps every drawn epoch evaluated
    # and the decisive experiment's smallest the schema allows: three c values, three logs of GD of 8 steps
    "vit": {
        "pilot": {"epochs": 1},
        "plots": {"fig6_epochs": [0, 2]},
        "decisive": {
            "ray": {"points": 3},
            "frozen": {"steps": 8, "logs": 3},
            "one_layer": {"images": 16, "steps": 8, "logs": 3},
        },
    },
}
TARGETS = [
    "all",
    "census_grid",
    "vit_recipes",
    "vit_pilot",
    "vit_decisive",
    f"docs/results/{DEFAULT_CONFIG['vit']['docs']}.md",
]
# Not measured: the results root (every output moves) and the docs pages' names (outputs outside the run).
# vit.w_svm.whole_train: true is valid only with train among vit.w_svm.image_sets, which the small run has not
# (the change would be refused, not planned).
SKIPPED = {"results", "vit_recipes.docs", "vit.docs", "vit.w_svm.whole_train"}
# Reads that change a job's params only for some values of other keys. None since vit_data's params hold every key
# it reads (registry/reads.py), the proxy flag included.
CONDITIONAL: dict[str, set[str]] = {}
# A change that keeps the config valid where "change the value" alone would not (lists tied to other keys).
CHANGES: dict[str, Any] = {
    "census.dims": lambda v: [v[0] + 1, *v[1:]],  # census.histogram.dims must stay a subset
    "vit.plots.fig6_epochs": lambda v: v[:-1],
    "vit.data.fallback": lambda v: [*v, "fashion_mnist"] if "fashion_mnist" not in v else v[:-1],
    "vit.data.dataset": lambda v: "digits" if v != "digits" else "cifar10",
    "vit.train.device": lambda v: "cpu" if v != "cpu" else "auto",
    "vit.w_svm.device": lambda v: "cpu" if v != "cpu" else "auto",
    "vit.model.patch_size": lambda v: 4 if v != 4 else 8,  # one of the sizes that divide the image
    "vit.guard.min_w_growth": lambda v: 2 * v,  # at least 1
    "census.negative_gap.statistic": lambda v: "mean" if v != "mean" else "median",
    "vit_recipes.recipes": lambda v: [{**v[0], "lr": v[0]["lr"] / 2}, *v[1:]],
    "census.histogram.dims": lambda v: v[:-1],
    "lemma1.instances": lambda v: v[:-1],
    "regpath.instances": lambda v: v[:-1],
    "census.budget.dims": lambda v: v[:-1],
    "census.budget.n_iter": lambda v: v[:-1],
    "vit.w_svm.images": lambda v: v - 1,  # at most vit.probe.n_images
    "vit.w_svm.image_sets": lambda v: ["train"] if v != ["train"] else ["test"],  # never empty
    "vit.w_svm.curve_images": lambda v: v[:-1] if v else [2, 4],  # empty by default: a curve to measure
    "vit.decisive.parts": lambda v: ["ray"] if "ray" not in v else [p for p in v if p != "ray"],  # empty by default
    "vit.decisive.one_layer.positive_classes": lambda v: v[:-1],  # distinct classes
}


def leaves(config: Mapping, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf key (a list counts as a leaf) with its value."""
    for key, value in config.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping) and value and "circle" not in value:
            yield from leaves(value, path)
        else:
            yield path, value


def changed(key: str, value: Any) -> Any:
    """Another valid value of ``key``."""
    if key in CHANGES:
        return CHANGES[key](value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2 if value else 0.5
    if isinstance(value, str):
        options = {
            "logistic": "exponential",
            "adam": "adamw",
            "constant": "cosine",
            "cifar10": "fashion_mnist",
            "window": "every",
        }
        return options.get(value, value + "x")
    if isinstance(value, Mapping):  # {circle: {n, radius}}
        return {"circle": {**value["circle"], "n": value["circle"]["n"] + 1}}
    if value and isinstance(value[0], list):
        return [[value[0][0] + 0.25, *value[0][1:]], *value[1:]]
    if value and isinstance(value[0], int | float):
        return [value[0] / 2 if isinstance(value[0], float) else value[0] + 1, *value[1:]]
    return value[:-1]


def snakemake(work: Path, *args: str) -> str:
    proc = subprocess.run(
        [str(SNAKEMAKE), "--cores", "2", *args, "--", *TARGETS],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, f"{args}: {proc.stderr[-4000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def finished(tmp_path_factory, ci_run: Path) -> tuple[Path, dict]:
    """A copy of the suite's CI run (``all``: SMALL changes no key its jobs read but vit.decisive, which its claims
    and page quote) with TARGETS built on top."""
    work = tmp_path_factory.mktemp("reads") / "work"
    # times and Snakemake's records kept: `all` stays complete (as conftest's ci_copy, once for the module)
    shutil.copytree(ci_run, work, symlinks=True, ignore=shutil.ignore_patterns("locks"))
    base = deep_merge(load_yaml(REPO / CI_CONFIG), SMALL)
    (work / "base.yaml").write_text(yaml.safe_dump(base))
    snakemake(work, "--configfile", "base.yaml")
    return work, merged_config([work / "base.yaml"], REPO / "workflow/config/default.yaml")  # as the Snakefile


def change_file(work: Path, base: dict, key: str, value: Any, name: str) -> Path:
    """A config file in ``work``: ``base`` with the dotted ``key`` set to ``value``."""
    config = copy.deepcopy(base)
    node = config
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    path = work / f"change-{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def summary(work: Path, config: Path) -> tuple[Path, list[str]]:
    """The call of run_many for Snakemake's summary of TARGETS in ``work`` under the config file ``config``."""
    return work, ["--cores", "2", "--configfile", str(config), "--summary", "--", *TARGETS]


def planned(work: Path, base: dict, changes: list[tuple[str, Any]]) -> list[set[str]]:
    """For each ``(key, value)`` of ``changes``, the rules a change of ``key`` to ``value`` reruns for a reason of
    their own: those with an output whose status in Snakemake's summary is not "ok" (missing, params or the set of
    input files changed). Not the dry run's reasons: Snakemake checks the params only of jobs that nothing upstream
    reruns."""
    paths = [change_file(work, base, key, value, f"{i}-{key}") for i, (key, value) in enumerate(changes)]
    found = []
    for (key, _), proc in zip(changes, run_many([summary(work, path) for path in paths]), strict=True):
        assert proc.returncode == 0, f"{key}: {proc.stderr[-4000:]}"
        rows = [line.split("\t") for line in proc.stdout.splitlines()[1:]]
        found.append({rule for _, _, rule, _, status, _ in rows if status != "ok"})
    return found


def test_a_forked_summary_is_the_programs(finished) -> None:
    """The summaries below come from run_many's forks: one of them, line by line, is what `snakemake` prints."""
    work, config = finished
    path = change_file(work, config, "census.grid.n_trials", config["census"]["grid"]["n_trials"] + 1, "forked")
    (forked,) = run_many([summary(work, path)])
    assert forked.returncode == 0, forked.stderr[-4000:]
    program = snakemake(work, "--configfile", str(path), "--summary")
    assert sorted(forked.stdout.splitlines()) == sorted(program.splitlines())


def test_a_changed_key_reruns_exactly_the_jobs_that_read_it(finished) -> None:
    work, config = finished
    keys = [(key, value) for key, value in leaves(config) if key not in SKIPPED]
    unchanged, *found = planned(
        work, config, [("census.seed", config["census"]["seed"])] + [(key, changed(key, value)) for key, value in keys]
    )
    assert unchanged == set()  # the run is complete
    rerun = dict(zip([k for k, _ in keys], found, strict=True))
    wrong = {
        key: (sorted(rules), readers(key))
        for key, rules in rerun.items()
        if rules != set(readers(key)) - CONDITIONAL.get(key, set())
    }
    assert not wrong, "key: (rerun per Snakemake's summary, declared in reads.py)\n" + "\n".join(
        f"  {key}: {v}" for key, v in wrong.items()
    )
    # the case: an on-demand study's setting reruns no job of Figure 9
    assert rerun["census.grid.n_trials"] == {"census_grid_cell"}
    assert rerun["vit.guard.min_w_growth"] == {"claims_table", "docs_vit"}  # a claim's threshold: no retraining
    # an analysis of the finished run's snapshots (its settings): the probe reruns, and the claims and the page that
    # state its settings; the training does not
    # (the image-count curve draws its rank nulls too)
    assert rerun["vit.w_svm.null_draws"] == {"vit_probe", "vit_probe_images", "claims_table", "docs_vit"}
