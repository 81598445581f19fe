"""The report's screenshots (docs/report/, linked from the README and docs/running.md) show today's report: each PNG
carries the sha256 of what it shows (tools/report_browser.py --screenshots, maxmargin.report.screenshot_sources),
compared here with what today's files give: the landing page from workflow/report/workflow.rst with the default
config's settings and the registry's verdicts, and the claims table of the default run's committed copy
(docs/results/default/claims.csv, written by make gallery from the same run's table)."""

from __future__ import annotations

import copy
import io
import json

import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG, REPO
from PIL import Image

from maxmargin.report import SCREENSHOT_KEYWORD, png_text, png_with_text, screenshot_sources

SCREENSHOTS = REPO / "docs" / "report"
TEMPLATE = REPO / "workflow" / "report" / "workflow.rst"
CLAIMS = REPO / "docs" / "results" / "default" / "claims.csv"
SHOWS = {
    "landing.png": "landing page (workflow/report/workflow.rst with workflow/config/default.yaml's settings and the "
    "verdicts of maxmargin/registry/claims.py)",
    "claims.png": "claims table (the rows in its window of docs/results/default/claims.csv)",
}
RETAKE = (
    "make figures CORES=1 && make report CORES=1 && "
    ".venv/bin/python tools/report_browser.py results/report.html --screenshots docs/report"
)


def carried(name: str) -> dict | None:
    """The record a screenshot of docs/report/ carries of what it shows (None: none)."""
    text = png_text(SCREENSHOTS / name, SCREENSHOT_KEYWORD)
    return None if text is None else json.loads(text)


@pytest.mark.parametrize("name", sorted(SHOWS))
def test_each_screenshot_shows_todays_files(name: str) -> None:
    """A screenshot records the sha256 of the landing page it shows, or of the claims table's rows in its window
    (their number kept with it): today's files must give the same."""
    record = carried(name)
    rows = (record or {}).get("claims_rows", 0)
    today = screenshot_sources(TEMPLATE, DEFAULT_CONFIG, None, CLAIMS, rows)[name]
    assert record == today, (
        f"docs/report/{name} shows another {SHOWS[name]} than today's"
        f"{' (it carries no record of what it shows)' if record is None else ''}: retake it with {RETAKE}"
    )
    assert name != "claims.png" or rows >= 5  # a window of claims, not an empty page


def test_the_default_runs_records_give_the_digests_of_the_default_config(tmp_path) -> None:
    """The tool hashes the landing page as the run's records set it (ReportEntries.screenshot_sources), the test as
    the default config does: a run made with the default config gives the same digest, one made with other
    settings (which its landing page states) another. A claims table edited by one byte in the rows in view
    changes its digest, a claim added below them does not."""
    claims = tmp_path / "claims.csv"
    claims.write_bytes(CLAIMS.read_bytes())
    bare = screenshot_sources(TEMPLATE, DEFAULT_CONFIG, None, claims, 5)
    recorded = {"census": DEFAULT_CONFIG, "vit": DEFAULT_CONFIG}
    assert screenshot_sources(TEMPLATE, DEFAULT_CONFIG, recorded, claims, 5) == bare
    other = copy.deepcopy(DEFAULT_CONFIG)
    other["census"]["n_trials"] += 1
    changed = screenshot_sources(TEMPLATE, DEFAULT_CONFIG, {"census": other, "vit": DEFAULT_CONFIG}, claims, 5)
    assert changed["landing.png"] != bare["landing.png"] and changed["claims.png"] == bare["claims.png"]
    template = tmp_path / "workflow.rst"
    template.write_text(TEMPLATE.read_text().replace("Replication of", "A replication of", 1))
    assert screenshot_sources(template, DEFAULT_CONFIG, None, claims, 5)["landing.png"] != bare["landing.png"]

    table = pd.read_csv(CLAIMS)
    for row, edited in ((4, True), (5, False)):  # the fifth claim is in view, the sixth is not
        changed = table.copy()
        changed.loc[row, "measured"] += " (edited)"
        changed.to_csv(claims, index=False)
        assert (
            screenshot_sources(TEMPLATE, DEFAULT_CONFIG, None, claims, 5)["claims.png"] != bare["claims.png"]
        ) == edited
    table.iloc[:5].to_csv(claims, index=False)  # written again by pandas: the same rows give the same digest
    assert screenshot_sources(TEMPLATE, DEFAULT_CONFIG, None, claims, 5) == bare
    pd.concat([table.iloc[:1], table]).to_csv(claims, index=False)  # a claim inserted above: the rows in view move
    assert screenshot_sources(TEMPLATE, DEFAULT_CONFIG, None, claims, 5)["claims.png"] != bare["claims.png"]


def test_the_digest_travels_in_a_png_that_still_opens_with_the_same_pixels(tmp_path) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (7, 5), (200, 30, 10)).save(buffer, format="PNG")
    path = tmp_path / "shot.png"
    path.write_bytes(png_with_text(buffer.getvalue(), SCREENSHOT_KEYWORD, "ab" * 32))
    assert png_text(path, SCREENSHOT_KEYWORD) == "ab" * 32 and png_text(path, "Provenance") is None
    with Image.open(path) as image:  # Pillow checks each chunk's CRC
        image.load()
        assert image.info[SCREENSHOT_KEYWORD] == "ab" * 32
        assert image.tobytes() == Image.open(io.BytesIO(buffer.getvalue())).tobytes()
