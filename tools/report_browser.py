"""The HTML report as a reader sees it, in a real browser (headless Chromium through Playwright).

    python tools/report_browser.py results/report.html [--screenshots docs/report]

prints the checks of tests/test_report_browser.py (file size, where the landing text starts, the claims table's rows,
every embedded figure decoded by the browser) and, with ``--screenshots``, saves the landing and claims pages as
``landing.png`` and ``claims.png`` there (committed under docs/report/, linked from the README). The browser is
Debian's ``chromium`` (or ``$CHROMIUM``): Playwright's own download needs the network.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def view(report: Path, screenshots: Path | None = None) -> ReportView:
    """Open ``report`` and measure what a reader sees (and save the two screenshots when asked)."""
    with opened(report) as page:
        top = page.evaluate(_LANDING_TOP_JS)
        figures = page.evaluate(_FIGURES_JS)
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshots / "landing.png"))
        frame = open_claims(page)
        rows = frame.evaluate("() => document.querySelectorAll('tbody tr').length")
        if screenshots is not None:
            page.screenshot(path=str(screenshots / "claims.png"))
    return ReportView(report.stat().st_size / 1e6, top, rows, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--screenshots", type=Path, help="folder for landing.png and claims.png")
    args = parser.parse_args()
    seen = view(args.report, args.screenshots)
    print(f"{args.report}: {seen.megabytes:.2f} MB; landing text starts {seen.landing_top} px from the top;")
    print(f"claims table: {seen.claims_rows} rows; figures decoded: {sum(w > 0 for w in seen.figures.values())}")
    print(f"of {len(seen.figures)} ({', '.join(name for name, w in seen.figures.items() if w == 0) or 'none fails'})")


if __name__ == "__main__":
    main()
