"""The HTML report as a reader sees it, in a real browser (headless Chromium through Playwright).

    python -m maxmargin.docs.report_browser results/report.html [--screenshots docs/report]

(or ``python tools/report_browser.py``, the command the docs name, with the same arguments) prints the checks of
tests/test_report_browser.py (file size, where the landing text starts, the claims table's rows, every embedded figure
decoded by the browser) and, with ``--screenshots``, saves the landing and claims pages of the default run's report as
``landing.png`` and ``claims.png`` there (committed under docs/report/, linked from the README), each with the sha256
of what it shows in its metadata (maxmargin.report.screenshot_sources), which tests/test_report_screenshots.py
compares with today's files. The browser is Debian's ``chromium`` (or ``$CHROMIUM``): Playwright's own download needs
the network.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from maxmargin.docs import REPO
from maxmargin.files import atomic_path
from maxmargin.report import SCREENSHOT_KEYWORD, ReportEntries, png_with_text

TEMPLATE = REPO / "workflow/report/workflow.rst"
DEFAULT_CONFIG = REPO / "workflow/config/default.yaml"

# Chromium in a container: no sandbox (no user namespaces), no GPU, nothing fetched from the network.
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync",
        "--disable-component-update"]  # fmt: skip
VIEWPORT = {"width": 1500, "height": 950}

# Every embedded image, decoded by the browser: name -> natural width in pixels (0: it does not load).
_FIGURES_JS = """async () => Object.fromEntries(await Promise.all(
  Object.values(results).filter(r => r.mime_type.startsWith('image/')).map(r => new Promise(done => {
    const img = new Image();
    img.onload = () => done([r.name, img.naturalWidth]);
    img.onerror = () => done([r.name, 0]);
    img.src = r.data_uri;
  }))))"""
# Where the landing page's first paragraph starts, in pixels from the top of the window.
_LANDING_TOP_JS = """() => {
  const p = [...document.querySelectorAll('p')].find(e => e.textContent.startsWith('Replication'));
  return p ? p.getBoundingClientRect().top : null; }"""


@dataclass
class ReportView:
    """What a reader of the report sees: the file's size, the landing text's top, the claims table's rows, the
    figures' widths as decoded."""

    megabytes: float
    landing_top: float | None
    claims_rows: int
    figures: dict[str, int]


def chromium() -> str | None:
    """The Chromium executable: ``$CHROMIUM``, else Debian's ``chromium`` on the PATH (None when there is none)."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium")


@contextlib.contextmanager
def opened(report: Path) -> Iterator[Any]:
    """A page of headless Chromium with ``report`` loaded (Playwright's sync API)."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    if executable is None:
        raise FileNotFoundError("no Chromium: install Debian's `chromium` or set $CHROMIUM")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(report.resolve().as_uri())
            page.wait_for_load_state("load")
            yield page
        finally:
            browser.close()


def open_claims(page: Any) -> Any:
    """Go to the claims table (category "1 Claims", its HTML entry) and return the frame that shows it."""
    page.get_by_role("link", name="1 Claims").click()
    page.locator("tr", has_text="Claims table").first.locator("a, button").first.click()
    page.wait_for_function("() => window.frames.length > 0")
    frame = next(f for f in page.frames if f != page.main_frame)
    frame.wait_for_selector("tr")
    return frame


def default_run(report: Path) -> ReportEntries:
    """The report entries of the default run (the default config's results root), whose report ``report`` is;
    refused for a report older than the files its screenshots' records are made from: it would show less."""
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    entries = ReportEntries(config, str(REPO / config["results"]))
    newer = [
        p for p in (TEMPLATE, Path(entries.path("tables/claims.csv"))) if p.stat().st_mtime > report.stat().st_mtime
    ]
    if newer:
        raise SystemExit(f"{report} is older than {', '.join(map(str, newer))}: rebuild it first (make report)")
    return entries


def claims_in_view(page: Any, frame: Any) -> list[str]:
    """The claim ids of the claims page's rows in the window, partly or whole (the frame scrolls inside the page)."""
    below = VIEWPORT["height"] - page.locator("iframe").first.bounding_box()["y"]
    return frame.evaluate(
        "(below) => [...document.querySelectorAll('tbody tr')].filter(tr => tr.getBoundingClientRect().top <"
        " Math.min(window.innerHeight, below)).map(tr => tr.cells[0].textContent.trim())",
        below,
    )


def save_screenshot(path: Path, png: bytes, shows: dict[str, Any]) -> None:
    """A screenshot at ``path``, carrying ``shows``, the record of what it shows (as JSON)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(png_with_text(png, SCREENSHOT_KEYWORD, json.dumps(shows, sort_keys=True)))


def view(report: Path, screenshots: Path | None = None) -> ReportView:
    """Open ``report`` and measure what a reader sees (and save the two screenshots of the default run's report,
    each with the record of what it shows, when asked)."""
    run = default_run(report) if screenshots is not None else None
    with opened(report) as page:
        top = page.evaluate(_LANDING_TOP_JS)
        figures = page.evaluate(_FIGURES_JS)
        landing = page.screenshot() if run is not None else b""
        frame = open_claims(page)
        rows = frame.evaluate("() => document.querySelectorAll('tbody tr').length")
        if run is not None:
            claims, in_view = page.screenshot(), claims_in_view(page, frame)
    if run is not None:
        table = pd.read_csv(run.path("tables/claims.csv"))
        if in_view != list(table["claim_id"][: len(in_view)]):
            raise SystemExit(f"the claims page's first rows {in_view} are not the first rows of the run's claims table")
        shows = run.screenshot_sources(TEMPLATE, len(in_view))
        save_screenshot(screenshots / "landing.png", landing, shows["landing.png"])
        save_screenshot(screenshots / "claims.png", claims, shows["claims.png"])
    return ReportView(report.stat().st_size / 1e6, top, rows, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--screenshots", type=Path, help="folder for landing.png and claims.png (the default run's)")
    args = parser.parse_args()
    seen = view(args.report, args.screenshots)
    print(f"{args.report}: {seen.megabytes:.2f} MB; landing text starts {seen.landing_top} px from the top;")
    print(f"claims table: {seen.claims_rows} rows; figures decoded: {sum(w > 0 for w in seen.figures.values())}")
    print(f"of {len(seen.figures)} ({', '.join(name for name, w in seen.figures.items() if w == 0) or 'none fails'})")


if __name__ == "__main__":
    main()
