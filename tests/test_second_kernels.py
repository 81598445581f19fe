"""CI's second OpenBLAS kernel set (tests/second_kernels.py): the tests it reruns, the kernel set it picks, the
environment it runs them in, and its place in .ci/run."""

from __future__ import annotations

import re

import pytest
import second_kernels
from conftest import REPO


def test_every_test_file_it_reruns_exists_and_holds_unit_tier_tests():
    files = second_kernels.NUMERICS_TESTS
    assert len(set(files)) == len(files) and "tests/test_w_svm_edges.py" in files
    for name in files:
        text = (REPO / name).read_text()
        tests = re.findall(r"^def (test_\w+)", text, re.MULTILINE)
        slow = re.findall(r"^@pytest\.mark\.slow\n(?:@.*\n)*def (test_\w+)", text, re.MULTILINE)
        assert set(tests) - set(slow), f"{name}: no test of the unit tier"


def test_the_second_kernel_set_is_the_first_whose_architecture_differs_from_the_default():
    step = second_kernels
    architecture_of = {"Sandybridge": "Sandybridge", "Prescott": "Katmai"}.get  # OpenBLAS names Prescott Katmai
    assert step.second_coretype("Haswell", architecture_of) == ("Sandybridge", "Sandybridge")
    assert step.second_coretype("Sandybridge", architecture_of) == ("Prescott", "Katmai")
    assert step.second_coretype("Haswell", lambda coretype: "Haswell") is None  # no runtime kernel choice


def test_the_second_environment_has_the_kernel_set_and_one_thread_and_the_default_is_left_alone():
    step = second_kernels
    base = {"OPENBLAS_CORETYPE": "Zen", "OPENBLAS_NUM_THREADS": "2", "PATH": "/bin"}
    assert step.environment(None, base) == base
    second = step.environment("Prescott", base)
    assert second["OPENBLAS_CORETYPE"] == "Prescott" and second["PATH"] == "/bin"
    assert second["OPENBLAS_NUM_THREADS"] == second["OMP_NUM_THREADS"] == "1"


def test_the_step_fails_naming_the_architecture_where_no_kernel_set_differs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    step = second_kernels
    monkeypatch.setattr(step, "architecture", lambda env: "Haswell")
    assert step.main() == 1
    out = capsys.readouterr().out
    assert "default kernel set: architecture Haswell" in out
    assert "FAIL: no OPENBLAS_CORETYPE of Sandybridge, Prescott gives another architecture than Haswell" in out


def test_ci_runs_it_after_make_test_and_before_the_slurm_check():
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert lines.index("make test") < lines.index(".venv/bin/python tests/second_kernels.py")
    assert lines.index(".venv/bin/python tests/second_kernels.py") < lines.index(".ci/slurm_check.sh")
