"""``python -m maxmargin.gpu OUT_DIR [MINUTES]``: a GPU session (:mod:`maxmargin.gpu.session`; docs/gpu.md)."""

import sys

from maxmargin.gpu.session import main

if __name__ == "__main__":
    sys.exit(main())
