"""What each rule's jobs read is data (maxmargin/registry/reads.py): dotted keys and, for the keys that depend on a
wildcard, their list per value; no key is resolved by a special case (tests/test_config_reads.py checks the
declarations against Snakemake)."""

from __future__ import annotations

import re

import pytest
from conftest import DEFAULT_CONFIG, REPO

from maxmargin import registry
from maxmargin.claims import CONFIG_KEYS, claims_config
from maxmargin.registry.reads import READS, PerJob, every_key, read_keys, readers, subset


def test_every_entry_is_keys_or_keys_per_wildcard_value() -> None:
    for rule, items in READS.items():
        for item in items:
            keys = item.every() if isinstance(item, PerJob) else (item,)
            assert all(re.fullmatch(r"[A-Za-z_]\w*(\.\w+)*", key) for key in keys), (rule, keys)


def test_the_rules_params_are_their_declared_reads() -> None:
    """Every rule whose params hold its reads is declared; every rule declared to read a key has them (a rule that
    reads none may go without: its jobs' records say so all the same)."""
    rules = set()
    for path in (REPO / "workflow/rules").glob("*.smk"):
        rules |= set(re.findall(r"reads\((?:f?\"([\w{}]+)\")\)", path.read_text()))
    families = {p.family for p in registry.PANELS if p.family != "synthetic"}
    rules = {r for r in rules if "{" not in r} | {f"plot_{family}" for family in families}
    assert {rule for rule in READS if every_key(rule)} <= rules <= set(READS)


def test_a_jobs_keys_follow_its_wildcards() -> None:
    assert read_keys("synthetic_experiment", {"experiment": "fig4"}) == ("synthetic.fig4", "synthetic.data.fig1c")
    assert read_keys("plot_synthetic", {"panel": "fig3c"}) == ("plots.fig3c_iterations",)
    assert read_keys("plot_vit", {"panel": "fig7_w_svm"}) == ("vit.guard.min_w_svm_gain",)
    assert read_keys("regpath_instance", {"regpath_instance": "fig1b"})[-1] == "regpath.gd"
    assert "regpath.gd" not in read_keys("regpath_instance", {"regpath_instance": "fig3a"})
    study = read_keys("vit_data", {"block": "vit_recipes"})
    assert set(read_keys("vit_data", {"block": "vit"})) < set(study) and "vit_recipes.proxy" in study
    with pytest.raises(ValueError, match=r"rule 'plot_vit': panel = 'fig1a' declares no config keys"):
        read_keys("plot_vit", {"panel": "fig1a"})
    with pytest.raises(ValueError, match="rule 'plot_nothing' declares no config keys"):
        read_keys("plot_nothing")


def test_readers_take_every_value_of_a_wildcard() -> None:
    assert "regpath_instance" in readers("regpath.gd")
    assert readers("vit_recipes.proxy")[0] == "vit_data"
    assert readers("plots.fig4_iterations") == ["plot_synthetic", "claims_table"]
    assert set(every_key("plot_census")) == set()


def test_the_claims_read_the_claims_rules_keys() -> None:
    assert [".".join(path) for path in CONFIG_KEYS] == list(read_keys("claims_table"))
    assert claims_config(DEFAULT_CONFIG) == subset(DEFAULT_CONFIG, read_keys("claims_table"))
    assert claims_config(DEFAULT_CONFIG)["basin"] == {k: DEFAULT_CONFIG["basin"][k] for k in ("cone", "constant")}
