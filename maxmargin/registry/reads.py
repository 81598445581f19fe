"""Which config keys each rule's jobs read: their params are built from this, and nothing else.

So a changed config value reruns exactly the jobs that read it (the workflow profile's promise; the planned jobs
are checked against this by tests/test_config_reads.py and listed in docs/config.md), and a table is only ever
read with the config that made it: its sidecar records the config of the run that wrote it, and every read
compares the keys its producing rule reads with the current config (:mod:`maxmargin.provenance`).

A rule's entry is a tuple of dotted keys, each a value or a whole block, and of :class:`PerJob` items: the keys that
depend on one of the job's wildcards, listed for each of its values (a panel's options, an experiment's block). It is
data: no key is resolved by a special case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from maxmargin.registry import EXPERIMENTS, PANELS
from maxmargin.registry.types import Panel


@dataclass(frozen=True)
class PerJob:
    """The keys a job reads by the value of its wildcard ``wildcard``: ``keys[value]``; a value not listed reads
    ``others``."""

    wildcard: str
    keys: Mapping[str, tuple[str, ...]]
    others: tuple[str, ...] | None = None

    def of(self, rule: str, wildcards: Mapping[str, str]) -> tuple[str, ...]:
        """The keys of a job with ``wildcards``."""
        value = wildcards.get(self.wildcard)
        if value in self.keys:
            return self.keys[value]
        if self.others is None:
            raise ValueError(f"rule {rule!r}: {self.wildcard} = {value!r} declares no config keys (registry/reads.py)")
        return self.others

    def every(self) -> tuple[str, ...]:
        """The keys any of its jobs reads."""
        return tuple(dict.fromkeys(k for keys in (*self.keys.values(), self.others or ()) for k in keys))


_CENSUS_RUN = tuple(f"census.{k}" for k in ("eta", "init_scale", "loss", "seed", "saturation_tol", "svm_tol", "chunk"))
_VIT_RUN = (
    "vit.model",
    "vit.data",
    "vit.train",
    "vit.probe",
    "vit.checkpoints",
    "vit.guard.after_epochs",
    "vit.guard.margin",
    "vit.guard.direction_from",  # where vit.train.full_pass: window starts
)
# The data keys that say where the images come from (the data manifest's; the others subset and augment them).
SOURCE_KEYS = ("dataset", "fallback", "root", "fashion_mnist_files", "fashion_mnist_root", "download")
_DATA_SOURCE = tuple(f"vit.data.{k}" for k in SOURCE_KEYS)
# The recipe study's images: the run's sources under its own, and its proxy flag (workflow/rules/vit.smk: VIT_DATA).
_STUDY_SOURCE = (*_DATA_SOURCE, "vit_recipes.proxy", *(f"vit_recipes.data.{k}" for k in SOURCE_KEYS))
# How a W-ATT-SVM is solved (its soft margin, the query-bias row, where its pivoting runs).
_W_SVM_SOLVE = ("vit.w_svm.soft_c", "vit.w_svm.query_bias", "vit.w_svm.device")
_REGPATH = tuple(f"regpath.{k}" for k in ("radii", "loss", "n_random", "seed", "n_iter", "tol", "local_tol"))


def _options(panels: tuple[Panel, ...]) -> PerJob:
    """A plot rule's jobs read their panel's options (``Panel.options``)."""
    return PerJob("panel", {p.name: p.options for p in panels})


_FAMILIES = tuple(dict.fromkeys(p.family for p in PANELS))
_PLOTS = {f"plot_{family}": (_options(tuple(p for p in PANELS if p.family == family)),) for family in _FAMILIES}

READS: dict[str, tuple[str | PerJob, ...]] = {
    "synthetic_experiment": (
        PerJob("experiment", {e.name: (f"synthetic.{e.block}", f"synthetic.data.{e.data}") for e in EXPERIMENTS}),
    ),
    "plot_synthetic": _PLOTS["plot_synthetic"],
    "directions_table": (),
    "census_trials": (*_CENSUS_RUN, "census.n", "census.T", "census.n_trials", "census.n_iter", "census.dims"),
    "census_budget_trials": (*_CENSUS_RUN, "census.n", "census.T", "census.n_trials", "census.budget"),
    "census_grid_cell": (*_CENSUS_RUN, "census.n_iter", "census.grid"),
    "census_gather": ("census.confidence", "census.dims"),
    "census_budget_gather": ("census.confidence", "census.budget"),
    "census_grid_gather": ("census.confidence", "census.grid.n", "census.grid.T", "census.grid.dims"),
    "census_histogram": ("census.histogram",),
    # the GD runs belong to the Theorem 1 path (Fig. 1(b) data) only
    "regpath_instance": (*_REGPATH, "regpath.instances", PerJob("regpath_instance", {"fig1b": ("regpath.gd",)}, ())),
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
    "vit_data": (PerJob("block", {"vit": _DATA_SOURCE, "vit_recipes": _STUDY_SOURCE}),),
    "vit_train": _VIT_RUN,
    "vit_baseline": ("vit.data", "vit.train.seed", "vit.train.threads", "vit.model.num_classes", "vit.baseline"),
    "vit_metrics_table": (),
    "vit_probe": (*(key for key in _VIT_RUN if key != "vit.checkpoints"), "vit.w_svm"),
    "vit_probe_images": (*(key for key in _VIT_RUN if key != "vit.checkpoints"), "vit.w_svm"),
    # the decisive experiment: the run's snapshots and training images, how the W-ATT-SVM is solved, its own block
    "vit_decisive_ray": (*(key for key in _VIT_RUN if key != "vit.checkpoints"), *_W_SVM_SOLVE, "vit.decisive"),
    "vit_decisive_gd": (*(key for key in _VIT_RUN if key != "vit.checkpoints"), *_W_SVM_SOLVE, "vit.decisive"),
    "plot_census": _PLOTS["plot_census"],
    "plot_regpath": _PLOTS["plot_regpath"],
    "plot_vit": _PLOTS["plot_vit"],
    "plot_basin": _PLOTS["plot_basin"],
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
        "vit.data.n_train",
        "vit.train.batch_size",
        "vit.model.num_classes",
        "vit.guard",
        "vit.plots.fig6_epochs",
        "vit.w_svm",
        "vit.decisive",
    ),
    # the claims' notes quote the settings that ran: the claims table depends on these only (maxmargin.claims)
    "claims_table": (
        "synthetic.fig1",
        "synthetic.fig2",
        "plots.fig3c_iterations",
        "plots.fig4_iterations",
        "census.confidence",
        "census.bootstrap",
        "census.negative_gap",
        "vit.model.num_classes",
        "vit.plots.fig6_epochs",
        "vit.guard",
        "vit.w_svm.null_draws",
        "vit.train.snapshot_every",
        "vit.data.n_train",
        "vit.train.batch_size",
        "vit.docs_w_svm",
        "vit.w_svm.shuffles",
        "vit.w_svm.nuclear_images",
        "vit.w_svm.nuclear_draws",
        "basin.constant",
        "basin.cone",
        "vit.decisive",
    ),
    "gallery_thumbnail": (),
    "docs_claims": (),
    "docs_tables": (),
}  # fmt: skip


def read_keys(rule: str, wildcards: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The dotted config keys a job of ``rule`` reads (its wildcards choose the keys that depend on them)."""
    if rule not in READS:
        raise ValueError(f"rule {rule!r} declares no config keys in maxmargin/registry/reads.py")
    found: list[str] = []
    for item in READS[rule]:
        found += item.of(rule, wildcards or {}) if isinstance(item, PerJob) else (item,)
    return tuple(found)


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


def every_key(rule: str) -> tuple[str, ...]:
    """The dotted config keys any job of ``rule`` reads."""
    return tuple(k for item in READS[rule] for k in (item.every() if isinstance(item, PerJob) else (item,)))


def readers(key: str) -> list[str]:
    """The rules whose jobs read the dotted config ``key`` (a value, or a block holding it), in declaration order:
    the jobs a change of it reruns first (tests/test_config_reads.py checks this against Snakemake's dry runs)."""
    found = []
    for rule in READS:
        if any(key == k or key.startswith(k + ".") or k.startswith(key + ".") for k in every_key(rule)):
            found.append(rule)
    return found
