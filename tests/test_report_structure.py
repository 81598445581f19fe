"""What the HTML report shows, checked without building it: the landing text and the claims caption as
rendered from the config, figures in numeric order, a parameter panel with only the keys the claims read, and each
rule once in the report's rule graph. (tests/test_report.py builds a whole report: slow.)"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import jinja2
import pytest
from conftest import DEFAULT_CONFIG, REPO, SNAKEMAKE, copy_workflow
from test_claims_provenance import census_summary

from maxmargin import registry
from maxmargin.claims import CONFIG_KEYS, claims_config, evaluate_claims
from maxmargin.registry import derived
from maxmargin.registry.claims import VERDICT_MEANINGS

REPORT = REPO / "workflow" / "report"


def render(name: str, config: dict, recorded: dict | None = None) -> str:
    """A report text as Snakemake renders it (Jinja2 with its settings, with ``snakemake.config``); the landing page
    as the Snakefile hands it over, with ``recorded``: block -> the config its table's record holds."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    text = (REPORT / name).read_text()
    text = derived.landing_page(text, config, recorded) if name == "workflow.rst" else text
    return env.from_string(text).render(snakemake=type("S", (), {"config": config}))


def rst_problems(text: str) -> list[str]:
    """The warnings docutils reports while turning rST into the report's HTML (it prints them into the page)."""
    from docutils.core import publish_parts

    html = publish_parts(text, writer="html", settings_overrides={"report_level": 5})["body"]
    strict = publish_parts(text, writer="html", settings_overrides={"report_level": 1, "halt_level": 5})
    return [m for m in re.findall(r"System Message: (\w+)/", strict["body"])] + (
        ["html"] if "System Message" in html else []
    )


def test_every_caption_and_the_landing_page_are_clean_rst() -> None:
    """Snakemake prints docutils' warnings into the report ("Bullet list ends without a blank line"): none."""
    entries = [*registry.PANELS, *(t for t in registry.TABLES if t.label)]
    for entry in entries:
        assert not rst_problems(derived.caption(entry, DEFAULT_CONFIG)), entry.name
    for dataset, fallback in (("cifar10", ["fashion_mnist", "digits"]), ("fashion_mnist", []), ("cifar10", ["digits"])):
        config = copy.deepcopy(DEFAULT_CONFIG)
        config["vit"]["data"] |= {"dataset": dataset, "fallback": fallback}
        assert not rst_problems(render("workflow.rst", config)), (dataset, fallback)


def test_landing_page_explains_every_verdict() -> None:
    text = render("workflow.rst", DEFAULT_CONFIG)
    for verdict, meaning in VERDICT_MEANINGS.items():  # written from the registry, as the verdict column's caption
        assert f"- ``{verdict}``: {meaning}." in text
        assert f"``{verdict}``: {meaning}" in derived.column_list(registry.table("claims"))
    assert "judged by their\n95% Wilson intervals" in text  # census.confidence, not typed in
    assert "by their bootstrap intervals (10000 resamples), at confidence 0.95" in derived.caption(
        registry.table("claims"), DEFAULT_CONFIG
    )


def test_the_claims_table_starts_its_own_paragraph_after_the_gpu_status() -> None:
    """The comment closing the GPU status sentence eats the newline after it (Jinja's trim_blocks, as Snakemake
    renders): one blank line left the invitation to the claims table inside the paragraph of the paper's scale."""
    text = render("workflow.rst", DEFAULT_CONFIG)
    assert "\n\n**Start with the claims table**" in text and "\n\n**What is at the paper's scale.**" in text


def test_landing_page_states_the_settings_the_tables_were_made_with() -> None:
    """Issue 56's case: the census tables made with 50 trials, the report built with a config of 40. The page states
    the tables' 50 (and their ViT's epochs and confidence), and says that this config's differ, naming each key;
    without records (before a run), or with records of this config, it states this config's, with no such note."""
    asked = copy.deepcopy(DEFAULT_CONFIG)
    asked["census"]["n_trials"] = 40
    made = copy.deepcopy(DEFAULT_CONFIG)
    made["census"] |= {"n_trials": 50, "confidence": 0.9}
    made["vit"]["train"]["epochs"] = 7
    text = " ".join(render("workflow.rst", asked, {"census": made, "vit": made}).split())
    assert f"{DEFAULT_CONFIG['census']['n']}, T = {DEFAULT_CONFIG['census']['T']}, 50 trials for each d" in text
    assert "40 trials" not in text and "trained 7 epochs" in text and "judged by their 90% Wilson intervals" in text
    assert (
        "**Made by other settings than this config's (as this page states them: census.n_trials 50 (this config: "
        "40); census.confidence 0.9 (this config: 0.95); vit.train.epochs 7 (this config: "
    ) in text
    assert not rst_problems(render("workflow.rst", asked, {"census": made, "vit": made}))
    for recorded in (None, {"census": None, "vit": None}, {"census": asked, "vit": asked}):
        text = " ".join(render("workflow.rst", asked, recorded).split())
        assert "40 trials for each d" in text and "Made by other settings" not in text
    lacking = render("workflow.rst", asked, {"census": {"results": "x"}, "vit": None})
    assert "the record of census_summary lacks census settings (shown: this config's)" in " ".join(lacking.split())


def _vit_line(text: str) -> str:
    return " ".join(text.split("*5 ViT (Figures 6-7)*:")[1].split("This run wrote")[0].split())


@pytest.mark.parametrize(
    "dataset, fallback, shown, absent",
    [
        (
            "cifar10",
            ["fashion_mnist", "digits"],
            "trained on CIFAR-10 (or, where it is missing, on Fashion-MNIST, else scikit-learn's digits as a stand-in",
            "",
        ),
        ("cifar10", [], "trained on CIFAR-10.", "digits"),
        ("fashion_mnist", ["digits"], "trained on Fashion-MNIST (or, where it is missing, on scikit", "CIFAR"),
    ],
)
def test_landing_page_names_the_data_set_of_the_config(dataset, fallback, shown, absent) -> None:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["vit"]["data"] |= {"dataset": dataset, "fallback": fallback}
    line = _vit_line(render("workflow.rst", config))
    assert shown in line and (not absent or absent not in line)


def test_figures_are_listed_in_numeric_order() -> None:
    """The report sorts a category's subcategories by their names (JavaScript's localeCompare): the figures' groups
    must come out in the paper's order, with no padding character in their names."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node.js: the report sorts subcategories with JavaScript's localeCompare")
    script = "console.log(JSON.stringify(JSON.parse(process.argv[1]).sort((a, b) => a.localeCompare(b))))"
    for family in registry.FAMILIES:
        names = list(dict.fromkeys(p.figure_label for p in registry.panels_of(family.name)))
        figures = [n for n in names if n.startswith("Figure")]
        assert all(n.isascii() for n in names), names  # "Figure 1", not "Figure\u20071"
        argv = [node, "-e", script, json.dumps(figures[::-1])]
        out = subprocess.run(argv, capture_output=True, text=True, check=True)
        first = [int(re.search(r"\d+", name).group()) for name in json.loads(out.stdout)]
        assert first == sorted(first), (family.name, json.loads(out.stdout))


def test_claims_rule_gets_only_the_keys_the_claims_read() -> None:
    sources = sorted((REPO / "maxmargin" / "claims").glob("*.py"))
    source = "\n".join(path.read_text() for path in sources)
    read = {tuple(re.findall(r"\[[\"'](\w+)[\"']\]", m)) for m in re.findall(r"cfg((?:\[[\"']\w+[\"']\])+)", source)}
    # every key path a claim reads lies in a declared block, and every declared block is read
    assert all(any(path[: len(key)] == key for key in CONFIG_KEYS) for path in read), read
    assert all(any(path[: len(key)] == key for path in read) for key in CONFIG_KEYS), CONFIG_KEYS
    subset = claims_config(DEFAULT_CONFIG)
    assert set(subset) == {"synthetic", "plots", "census", "vit", "basin"}
    assert subset["census"] == {
        "confidence": 0.95,
        "bootstrap": DEFAULT_CONFIG["census"]["bootstrap"],
        "negative_gap": DEFAULT_CONFIG["census"]["negative_gap"],
    }
    tables = {"census_summary": census_summary([10.0, 12.0, 16.0], n_trials=100)}
    assert evaluate_claims(tables, subset).equals(evaluate_claims(tables, DEFAULT_CONFIG))


def test_each_rule_is_one_node_of_the_report_rule_graph(tmp_path: Path) -> None:
    """The report's rule graph keeps one job per rule and DAG level: a rule at two levels is drawn twice."""
    workdir = copy_workflow(tmp_path)
    dot = subprocess.run(
        [str(SNAKEMAKE), "--cores", "1", "-n", "--dag"], cwd=workdir, capture_output=True, text=True, check=True
    ).stdout
    rule = {int(i): label.split("\\n")[0] for i, label in re.findall(r'^\s*(\d+)\[label = "([^"]*)"', dot, re.M)}
    deps = defaultdict(set)
    for u, v in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M):
        deps[int(v)].add(int(u))
    level: dict[int, int] = {}

    def depth(job: int) -> int:
        if job not in level:
            level[job] = 1 + max((depth(d) for d in deps[job]), default=-1)
        return level[job]

    levels = defaultdict(set)
    for job in rule:
        levels[rule[job]].add(depth(job))
    assert "plot_census" in levels and len(rule) > 50
    assert {name: sorted(lv) for name, lv in levels.items() if len(lv) > 1} == {}


def test_the_vit_page_gets_every_vit_key_the_claims_read() -> None:
    """Rule docs_vit evaluates a run's claims on its own reads: every ViT key the claims table reads lies in one of
    them (a claim reading a key the page's job does not get is "not run" on the page alone)."""
    from maxmargin.registry.reads import read_keys

    page = [tuple(key.split(".")) for key in read_keys("docs_vit")]
    claims = [tuple(key.split(".")) for key in read_keys("claims_table") if key.startswith("vit.")]
    missing = [key for key in claims if not any(key[: len(p)] == p for p in page)]
    assert not missing, missing
