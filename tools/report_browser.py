"""The HTML report as a reader sees it, in a real browser: the command the docs name for
``python -m maxmargin.docs.report_browser`` (maxmargin/docs/report_browser.py), with the same arguments."""

import runpy
import sys
from pathlib import Path

# The package of the checkout this file is in, ahead of the one the virtualenv installed (maybe another checkout's).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
runpy.run_module("maxmargin.docs.report_browser", run_name="__main__", alter_sys=True)
