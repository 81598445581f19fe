"""The workflow passes `snakemake --lint`, its rules are snakefmt-formatted, its Python ruff-clean (CI checks all)."""

from __future__ import annotations

import subprocess

from conftest import REPO, SNAKEMAKE


def test_snakemake_lint_is_clean():
    proc = subprocess.run([str(SNAKEMAKE), "--lint"], cwd=REPO, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Congratulations, your workflow is in a good condition!" in out, out


def test_rules_are_snakefmt_formatted():
    snakefmt = SNAKEMAKE.with_name("snakefmt")
    files = ["Snakefile", *sorted(str(p.relative_to(REPO)) for p in (REPO / "workflow" / "rules").glob("*.smk"))]
    proc = subprocess.run([str(snakefmt), "--check", *files], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_python_is_ruff_clean_and_formatted():
    ruff = SNAKEMAKE.with_name("ruff")
    for args in (["check", "."], ["format", "--check", "."]):
        proc = subprocess.run([str(ruff), *args], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
