"""docs/gpu/index.md and the status sentences, from the GPU sessions' files: the command the docs name for
``python -m maxmargin.docs.gpu_report`` (maxmargin/docs/gpu_report.py), with the same arguments."""

import runpy
import sys
from pathlib import Path

# The package of the checkout this file is in, ahead of the one the virtualenv installed (maybe another checkout's).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
runpy.run_module("maxmargin.docs.gpu_report", run_name="__main__", alter_sys=True)
