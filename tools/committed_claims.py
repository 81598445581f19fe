"""The committed ViT runs' claims, measured again by today's code: the command the docs name for
``python -m maxmargin.docs.committed_claims`` (maxmargin/docs/committed_claims.py), with the same arguments."""

import runpy
import sys
from pathlib import Path

# The package of the checkout this file is in, ahead of the one the virtualenv installed (maybe another checkout's).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
runpy.run_module("maxmargin.docs.committed_claims", run_name="__main__", alter_sys=True)
