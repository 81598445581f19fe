"""Which config keys each rule's jobs read: their params are built from this, and nothing else.

So a changed config value reruns exactly the jobs that read it (the workflow profile's promise; the planned jobs
are checked against this by tests/test_config_reads.py and listed in docs/config.md), and a table is only ever
read with the config that made it: its sidecar records the config of the run that wrote it, and every read
compares the keys its producing rule reads with the current config (:mod:`maxmargin.provenance`). A key names a
value or a whole block; ``{experiment}`` and the like are filled from the job's wildcards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_CENSUS_RUN = tuple(f"census.{k}" for k in ("eta", "init_scale", "loss", "seed", "saturation_tol", "svm_tol", "chunk"))
_VIT_RUN = (
    "vit.model",
    "vit.data",
    "vit.train",
    "vit.probe",
    "vit.checkpoints",
    "vit.guard.after_epochs",
    "vit.guard.margin",
)
# The data keys that say where the images come from (the data manifest's; the others subset and augment them).
SOURCE_KEYS = ("dataset", "fallback", "root", "fashion_mnist_files", "fashion_mnist_root", "download")
_DATA_SOURCE = tuple(f"vit.data.{k}" for k in SOURCE_KEYS)
_REGPATH = tuple(f"regpath.{k}" for k in ("radii", "loss", "n_random", "seed", "n_iter", "tol", "local_tol"))

READS: dict[str, tuple[str, ...]] = {
    "synthetic_experiment": ("synthetic.{block}", "synthetic.data.{data}"),
    "plot_synthetic": ("{options}",),
    "directions_table": (),
    "census_trials": (*_CENSUS_RUN, "census.n", "census.T", "census.n_trials", "census.n_iter", "census.dims"),
    "census_budget_trials": (*_CENSUS_RUN, "census.n", "census.T", "census.n_trials", "census.budget"),
    "census_grid_cell": (*_CENSUS_RUN, "census.n_iter", "census.grid"),
    "census_gather": ("census.confidence", "census.dims"),
    "census_budget_gather": ("census.confidence", "census.budget"),
    "census_grid_gather": ("census.confidence", "census.grid.n", "census.grid.T", "census.grid.dims"),
    "census_histogram": ("census.histogram",),
    "regpath_instance": (*_REGPATH, "regpath.instances", "{regpath_gd}"),
    "regpath_table": ("regpath.instances",),
    "lemma1_table": ("lemma1", "synthetic.data"),
    "basin_tables": (
        "basin",
        "synthetic.fig1.eta",
        "synthetic.fig1.n_iter",
        "synthetic.fig1.loss",
        "synthetic.fig1.starts",
        "census.saturation_tol",
        "census.svm_tol",
    ),
    "vit_data": ("{data_source}",),
    "vit_train": _VIT_RUN,
    "vit_baseline": ("vit.data", "vit.train.seed", "vit.train.threads", "vit.model.num_classes", "vit.baseline"),
    "vit_metrics_table": (),
    "vit_probe": (*(key for key in _VIT_RUN if key != "vit.checkpoints"), "vit.w_svm"),
    "vit_probe_images": (*(key for key in _VIT_RUN if key != "vit.checkpoints"), "vit.w_svm"),
    "plot_census": ("{options}",),
    "plot_regpath": ("{options}",),
    "plot_vit": ("{options}",),
    "plot_basin": ("{options}",),
    "vit_pilot_run": (*_VIT_RUN, "vit.pilot.epochs"),
    "vit_recipe_train": (*_VIT_RUN, "vit_recipes.proxy", "vit_recipes.model", "vit_recipes.data", "vit_recipes.probe",
                         "vit_recipes.train", "vit_recipes.recipes"),
    "vit_recipes_table": ("vit_recipes.recipes",),
    "docs_vit_recipes": ("vit_recipes.docs",),
    # docs_vit: the rest of the page comes from the run's sidecar
    "docs_vit": (
        "vit.docs",
        "vit.docs_w_svm",
        "vit.train.snapshot_every",
        "vit.model.num_classes",
        "vit.guard",
        "vit.plots.fig6_epochs",
        "vit.w_svm",
    ),
    "claims_table": ("{claims}",),
    "gallery_thumbnail": (),
    "docs_claims": (),
    "docs_tables": (),
}  # fmt: skip


def _fill(key: str, wildcards: Mapping[str, str]) -> tuple[str, ...]:
    """A key with its ``{field}`` filled from the job's wildcards and the registry (several keys, or none)."""
    from maxmargin import registry

    if key == "{options}":
        return registry.panel(wildcards["panel"]).options
    if key == "{claims}":
        return tuple(".".join(path) for path in registry.CLAIMS_CONFIG_KEYS)
    if key == "{regpath_gd}":
        return ("regpath.gd",) if wildcards.get("regpath_instance") == "fig1b" else ()
    if key == "{data_source}":
        recipes = wildcards.get("block") == "vit_recipes"
        study = ("vit_recipes.proxy", *(f"vit_recipes.data.{k}" for k in SOURCE_KEYS)) if recipes else ()
        return _DATA_SOURCE + study
    if "{" in key:
        entry = registry.experiment(wildcards["experiment"])
        return (key.format(block=entry.block, data=entry.data),)
    return (key,)


def read_keys(rule: str, wildcards: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The dotted config keys a job of ``rule`` reads (its wildcards fill the keys that depend on them)."""
    if rule not in READS:
        raise ValueError(f"rule {rule!r} declares no config keys in maxmargin/registry/reads.py")
    return tuple(k for key in READS[rule] for k in _fill(key, wildcards or {}))


def _canonical(value: Any) -> Any:
    """``value`` with the keys of every mapping in it sorted: a job's params do not depend on the order in which a
    config file lists its keys (Snakemake compares params as written, and would rerun the job)."""
    if isinstance(value, Mapping):
        return {key: _canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value


def subset(config: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The part of ``config`` under ``keys``, nested as in the config (a key absent from the config is left out),
    its keys sorted."""
    out: dict[str, Any] = {}
    for key in keys:
        parts, value = key.split("."), config
        try:
            for part in parts:
                value = value[part]
        except (KeyError, TypeError):
            continue
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return _canonical(out)


def _jobs(rule: str) -> list[dict[str, str]]:
    """The wildcards of every kind of job of ``rule`` (one empty mapping for a rule without wildcards)."""
    from maxmargin import registry

    if rule == "synthetic_experiment":
        return [{"experiment": e.name} for e in registry.EXPERIMENTS]
    if rule.startswith("plot_"):
        family = rule.removeprefix("plot_")
        return [{"panel": p.name} for p in registry.panels_of(family)]
    if rule == "regpath_instance":
        return [{"regpath_instance": name} for name in registry.REGPATH_INSTANCES]
    if rule == "vit_data":
        return [{"block": "vit"}, {"block": "vit_recipes"}]
    return [{}]


def readers(key: str) -> list[str]:
    """The rules whose jobs read the dotted config ``key`` (a value, or a block holding it), in declaration order:
    the jobs a change of it reruns first (tests/test_config_reads.py checks this against Snakemake's dry runs)."""
    found = []
    for rule in READS:
        keys = {k for wildcards in _jobs(rule) for k in read_keys(rule, wildcards)}
        if any(key == k or key.startswith(k + ".") or k.startswith(key + ".") for k in keys):
            found.append(rule)
    return found
