"""The HTML report in a real browser: headless Chromium (Debian's package) opens the report of the small
CI run, as a reader would: the file is small enough to open fast, the landing text starts at the top of the window,
the claims page renders every claim as a row, and every embedded figure decodes. maxmargin.docs.report_browser drives
the browser (and takes the screenshots of docs/report/). CI installs Chromium (.ci/run); without it this test skips.
"""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import CI_RESULTS

from maxmargin.docs import report_browser

pytestmark = pytest.mark.slow

pytest.importorskip("playwright")

MAX_MEGABYTES = 8.0  # a report a reader opens at once (one table embedded whole can weigh several megabytes)


@pytest.mark.skipif(report_browser.chromium() is None, reason="no Chromium (Debian: apt-get install chromium)")
def test_the_report_opens_in_a_browser(ci_run) -> None:
    seen = report_browser.view(ci_run / "report.html")
    assert seen.megabytes < MAX_MEGABYTES
    assert seen.landing_top is not None and 0 <= seen.landing_top < 120  # no blank band above the text
    claims = pd.read_csv(ci_run / CI_RESULTS / "tables" / "claims.csv")
    assert seen.claims_rows == len(claims) > 20
    figures = sorted(p.name for p in (ci_run / CI_RESULTS / "figures").glob("*.png"))
    assert sorted(seen.figures) == figures and all(width > 0 for width in seen.figures.values()), seen.figures
