"""The HTML report of a small full run: landing text, the claims table as an HTML table, every figure embedded."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import CI_RESULTS as RESULTS
from conftest import REPO, ci_config, snakemake

from maxmargin import registry

pytestmark = pytest.mark.slow

# The report is Snakemake's page (its scripts, 2.8 MB, the rules' code and the installed packages' list: 3.3 MB on
# the CI run) with every figure and table embedded base64-encoded; docs/running.md states this bound on the page. Its
# margin, 0.7 MB over the CI run's, is for rules, scripts and packages added; a page over it means the report carries
# something besides its figures and tables, or Snakemake's scripts grew.
PAGE_BOUND_MB = 4.0


@pytest.fixture(scope="module")
def run(ci_run) -> Path:
    """A copy of the workflow after `all` on the CI config and `--report report.html`."""
    return ci_run


@pytest.fixture(scope="module")
def report(run) -> str:
    return (run / "report.html").read_text()


def _embedded(report: str, filename: str) -> bytes:
    """The bytes of a file the report embeds as a data URI."""
    match = re.search(rf"data:[\w/+.-]+;charset=[\w-]+;filename={re.escape(filename)};base64,([A-Za-z0-9+/=]+)", report)
    assert match, f"{filename} is not embedded in the report"
    return base64.b64decode(match.group(1))


def _json_var(report: str, name: str) -> dict:
    """A JavaScript `var NAME = {...};` of the report, parsed."""
    start = report.index(f"var {name} = {{") + len(f"var {name} = ")  # the report's bundled libraries have others
    return json.JSONDecoder().raw_decode(report, start)[0]


def test_landing_page_introduces_the_run(report):
    assert "Start with the claims table" in report  # workflow/report/workflow.rst, through `report:` in the Snakefile
    assert f"{RESULTS}/" in report  # its Jinja read the results root from the config
    assert "inconclusive</tt>: a statistic of a sample" in report  # every verdict explained (registry)
    # each rule is one node of the rule graph (the report draws one per rule and DAG level)
    nodes = re.findall(r'"rule": "(\w+)", "fx"', report)
    assert "plot_census" in nodes and len(nodes) == len(set(nodes))
    # the claims job's parameter panel: the keys the claims read, not the whole config
    params = re.search(r'"job_properties": \{"rule": "claims_table"[^}]*"params": "([^"]*)"', report).group(1)
    census = re.search(r"'census': \{'bootstrap': \{[^}]*\}, 'confidence': 0.95,", params)
    assert census and "'regpath'" not in params and "'results'" not in params


def test_claims_table_is_an_html_table_with_every_claim(run, report):
    claims = pd.read_csv(run / RESULTS / "tables" / "claims.csv")
    page = _embedded(report, "claims.html").decode()
    rows = re.findall(r'<tr class="([\w-]+)">(.*?)</tr>', page)
    assert len(rows) == len(claims) > 0
    for (css, cells), claim in zip(rows, claims.itertuples(), strict=True):
        values = re.findall(r"<td>(.*?)</td>", cells)
        assert html.unescape(values[0]) == claim.claim_id and html.unescape(values[5]) == claim.verdict
        assert css == claim.verdict.replace(" ", "-")  # the verdict colours the row
    # filed where a reader starts, with the labels the report lists files by
    categories = _json_var(report, "categories")
    path = f"{RESULTS}/tables/claims.html"
    assert path in categories["1 Claims"]["Tables"]
    assert _json_var(report, "results")[path]["labels"] == {"figure": "Claims table", "type": "table"}


def test_every_figure_of_the_run_is_in_the_report(run, report):
    figures = sorted((run / RESULTS / "figures").glob("*.png"))
    assert len(figures) >= 17  # Figures 1-10 (6, 7 from the ViT) and the regularization paths
    for png in figures:
        assert _embedded(report, png.name) == png.read_bytes(), png.name


def _report_section() -> str:
    """docs/running.md's paragraph on the report, up to its screenshots."""
    text = (REPO / "docs" / "running.md").read_text()
    return text.split("## The report", 1)[1].split("Seen in headless Chromium", 1)[0]


def test_the_report_holds_the_tables_running_md_names_and_no_other(report):
    """docs/running.md names the tables the report embeds (the on-demand census_grid's once made) and where the
    others are: every other table of the results root's tables/ (an experiment's as ``<experiment>``)."""
    results = _json_var(report, "results")
    embedded = {Path(path).name for path, entry in results.items() if entry["labels"].get("type") == "table"}
    named, others = _report_section().split("The other tables", 1)
    listed = set(re.findall(r"`([\w.]+\.(?:csv|html))`", named))
    on_demand = {Path(t.pattern).name for t in registry.TABLES if t.name in registry.ON_DEMAND and t.label}
    assert on_demand <= listed and embedded == listed - on_demand
    experiments = {e.name for e in registry.EXPERIMENTS}
    for table in registry.TABLES:
        name = Path(table.pattern).name
        if table.pattern.startswith("tables/") and name not in embedded | on_demand:
            stem, _, rest = Path(name).stem.partition("_")
            shown = f"<experiment>{'_' + rest if rest else ''}.csv" if stem in experiments else name
            assert f"`{shown}`" in others, name


def test_the_reports_page_beside_its_figures_and_tables_stays_under_its_bound(run, report):
    """The report's bytes are Snakemake's page plus each embedded file's base64 (4/3 of its bytes): on the CI run the
    page stays under PAGE_BOUND_MB, the bound docs/running.md states, so a report's size follows its figures."""
    results = _json_var(report, "results")
    uris = {path: entry["data_uri"] for path, entry in results.items()}
    for path, uri in uris.items():
        size = (run / path).stat().st_size
        assert len(uri.split(";base64,", 1)[1]) == 4 * -(-size // 3), path  # base64: 4 characters per 3 bytes
    page = (run / "report.html").stat().st_size - sum(len(uri) for uri in uris.values())
    assert 0 < page < PAGE_BOUND_MB * 1e6, f"Snakemake's page beside the embedded files: {page:,} bytes"
    assert f"under {PAGE_BOUND_MB:g} MB" in _report_section()


def _caption(report: str, path: str) -> str:
    """The caption the report shows for the file at ``path`` (its rendered HTML, tags dropped)."""
    return re.sub(r"<[^>]+>", "", html.unescape(_json_var(report, "results")[path]["caption"]))


def test_a_report_after_a_config_change_describes_its_data_not_the_new_config(ci_copy):
    """The CI run's census has 50 trials per d; `--report` under 40 without a rerun: each caption is filled from the
    config that made its file (50), and says that the config has changed since."""
    report = ci_copy / "report40.html"
    snakemake(ci_copy, "--report", str(report), config=ci_config(census={"n_trials": 40}))
    text = report.read_text()
    figure = _caption(text, f"{RESULTS}/figures/fig9a.png")
    assert "the 50 trials" in figure and "the 40 trials" not in figure
    assert "Made by other settings than this config's" in figure
    unchanged = _caption(text, f"{RESULTS}/figures/fig1a.png")  # its settings are the config's own
    assert "Made by other settings" not in unchanged


def test_a_damaged_or_stale_claims_file_never_stops_planning(ci_copy):
    """A damaged tables/claims.json (or one not of the claims table beside it, or with a sentence edited by hand):
    every command still plans, says so, and the next run writes it again."""
    sentences = ci_copy / RESULTS / "tables/claims.json"
    good = json.loads(sentences.read_text())
    edited = {**good, "sentences": {**good["sentences"], "census_lmm": "every trial reaches an LMM"}}
    for damaged in ('{"broken', json.dumps({**good, "claims_sha256": "0" * 64}), json.dumps(edited)):
        sentences.write_text(damaged)
        for args in (["-n"], ["--unlock"], ["-n", "--forcerun", "claims_table"]):
            proc = snakemake(ci_copy, *args, config=ci_config(), check=False)
            out = proc.stdout + proc.stderr
            assert proc.returncode == 0 and "claims.json: it " in out and "JSONDecodeError in file" not in out, out
        planned = snakemake(ci_copy, "-n", config=ci_config()).stdout
        assert "claims_table" in planned
    snakemake(ci_copy, config=ci_config())
    assert json.loads(sentences.read_text()) == good  # written again, the same sentences
    proc = snakemake(ci_copy, "-n", config=ci_config())
    assert "claims.json: it " not in proc.stdout + proc.stderr and "Nothing to be done" in proc.stdout
