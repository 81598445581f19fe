"""The docs' lists of what a table's columns measure, from the registry: the command the docs name for
``python -m maxmargin.docs.column_docs`` (maxmargin/docs/column_docs.py), with the same arguments."""

import runpy
import sys
from pathlib import Path

# The package of the checkout this file is in, ahead of the one the virtualenv installed (maybe another checkout's).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
runpy.run_module("maxmargin.docs.column_docs", run_name="__main__", alter_sys=True)
