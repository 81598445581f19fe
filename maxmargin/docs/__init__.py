"""The generated pages of the docs, each written from what it states (``make docs``; ``make gallery`` for a full run's).

A module per writer, each run as ``python -m maxmargin.docs.<writer>`` (the docs name ``tools/<writer>.py``, a
wrapper of it), by what it writes:

- :mod:`~maxmargin.docs.config_docs`: docs/config.md, from the schema, default.yaml and who reads each key;
- :mod:`~maxmargin.docs.column_docs`: the docs' lists of what a table's columns measure, from the registry;
- :mod:`~maxmargin.docs.api_docs`: docs/api.md, from the docstrings of ``maxmargin.core``;
- :mod:`~maxmargin.docs.committed_claims`: the committed ViT runs' claims (docs/results/<run>_claims.csv and their
  pages' claims tables), measured again by today's claims code from their committed tables;
- :mod:`~maxmargin.docs.run_docs`: the docs' numbers of the committed runs, a passage per ``<!-- run: NAME -->``
  block, written by :mod:`~maxmargin.docs.default_passages` (the default run: synthetic, census, basin, regpath,
  Lemma 1) and :mod:`~maxmargin.docs.vit_passages` (the committed ViT runs and GPU sessions);
- :mod:`~maxmargin.docs.gpu_report`: docs/gpu/index.md and the status sentence of the README and the report's
  landing page, from the GPU sessions' files (the tables that session.json alone gives:
  :mod:`~maxmargin.docs.gpu_tables`);
- :mod:`~maxmargin.docs.gallery`: the README's gallery, the thumbnails and baseline images (a full run's);
- :mod:`~maxmargin.docs.timings`: docs/results/timings.md, from a full run's benchmark files.
- :mod:`~maxmargin.docs.report_browser`: the report as a reader sees it in headless Chromium, and its screenshots
  (docs/report/, by hand).

Every page is written through :func:`maxmargin.files.atomic_path`; a test per generated page fails while the
committed one is stale (tests/test_packaging.py, ``DOCS_GENERATORS``).
"""

from __future__ import annotations

from pathlib import Path

# The checkout whose pages are written: the one this package is in (an editable install's, or the one a command run
# from its root imports first).
REPO = Path(__file__).resolve().parents[2]
