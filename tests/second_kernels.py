"""The numerics tests again under a second OpenBLAS kernel set and one thread.

A bound taken from one kernel set's rounding, not from the instance, passes where it was written and fails on
another machine: OpenBLAS picks its kernels by CPU (Haswell on an AMD EPYC, SkylakeX on a recent Xeon), and
``OPENBLAS_CORETYPE`` makes it pick others. This step prints threadpoolctl's ``architecture`` of the default
environment and of the second, fails unless they differ, then runs the tests of the maths (:data:`NUMERICS_TESTS`):
those of the unit tier and those of seconds of GD or solves (marked solves), under the second with one BLAS thread.

Run by ``.ci/run`` after ``make test``: ``.venv/bin/python tests/second_kernels.py`` (a program, not a test
module: tests/test_second_kernels.py checks it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The tests of maxmargin.core's solvers and optimisers (the SVMs, W-ATT-SVM, regularization paths, GD, the census's
# and the basin's GD) and of its examples: every assertion on their output takes its bound from the instance.
UNIT_AND_SOLVES = "not slow or solves"
NUMERICS_TESTS = (
    "tests/test_svm.py",
    "tests/test_w_svm.py",
    "tests/test_w_svm_edges.py",
    "tests/test_regpath.py",
    "tests/test_gd.py",
    "tests/test_model.py",
    "tests/test_census.py",
    "tests/test_basin.py",
    "tests/test_core_arguments.py",
    "tests/test_library.py",
)
# Kernel sets every x86-64 CPU of the last decade runs (AVX; SSE3), tried in order: the first whose architecture
# differs from the default's is the second. SkylakeX needs AVX-512 (an illegal instruction on an EPYC).
CORETYPES = ("Sandybridge", "Prescott")
_PROBE = (
    "import numpy, scipy.linalg, threadpoolctl; "
    "print(','.join(sorted({i.get('architecture') or '?' for i in threadpoolctl.threadpool_info() "
    "if i['internal_api'] == 'openblas'})))"
)


def environment(coretype: str | None, base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``base`` (None: as it is, the default step's) with OpenBLAS's kernel set ``coretype`` and one BLAS thread (a
    reduction split over threads rounds in another order)."""
    if coretype is None:
        return dict(base)
    return {**base, "OPENBLAS_CORETYPE": coretype, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def architecture(env: Mapping[str, str]) -> str:
    """threadpoolctl's ``architecture`` of the OpenBLAS libraries numpy and scipy load in ``env``."""
    probe = subprocess.run([sys.executable, "-c", _PROBE], env=dict(env), capture_output=True, text=True, check=True)
    return probe.stdout.strip()


def second_coretype(default: str, architecture_of: Callable[[str], str]) -> tuple[str, str] | None:
    """The first of :data:`CORETYPES` whose architecture differs from ``default``, and that architecture; None where
    none does (an OpenBLAS without runtime kernel choice, another CPU family)."""
    for coretype in CORETYPES:
        arch = architecture_of(coretype)
        if arch != default:
            return coretype, arch
    return None


def main() -> int:
    default = architecture(environment(None))
    print(f"default kernel set: architecture {default}", flush=True)
    second = second_coretype(default, lambda coretype: architecture(environment(coretype)))
    if second is None:
        print(f"FAIL: no OPENBLAS_CORETYPE of {', '.join(CORETYPES)} gives another architecture than {default}")
        return 1
    coretype, arch = second
    print(f"second kernel set: OPENBLAS_CORETYPE={coretype}, architecture {arch}, one thread", flush=True)
    # the unit tier's tests of these modules and those of seconds of GD or solves (marked solves): none starts a program
    command = [sys.executable, "-m", "pytest", "-q", "-m", UNIT_AND_SOLVES, "-p", "no:cacheprovider", *NUMERICS_TESTS]
    return subprocess.run(command, cwd=REPO, env=environment(coretype)).returncode


if __name__ == "__main__":
    sys.exit(main())
