"""The SLURM profile without a cluster: it parses, it names real rules, and Snakemake plans a run with it.

The run on a real (one-node) SLURM is .ci/slurm_check.sh.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, copy_workflow

PROFILE = REPO / "workflow" / "profiles" / "slurm"
CI_CONFIG = "workflow/config/ci_slurm.yaml"
# Rules the profile sizes before they are committed (workflow/rules/vit.smk is being written); drop a name once its
# rule exists.
PENDING_RULES = {"vit_train"}


def run(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(SNAKEMAKE), *args], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def profile() -> dict:
    return yaml.safe_load((PROFILE / "config.yaml").read_text())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("slurm"))


@pytest.fixture(scope="module")
def rules(workdir) -> set[str]:
    return {line.split()[0] for line in run(workdir, "--list-rules").stdout.splitlines() if line.strip()}


def test_profile_submits_to_slurm_and_polls_with_squeue(profile):
    assert profile["executor"] == "slurm"
    # sacct without slurmdbd accounting never reports a job as finished: Snakemake would wait forever
    assert profile["slurm-status-command"] == "squeue"
    assert profile["jobs"] >= 20 and profile["latency-wait"] >= 10 and profile["retries"] >= 1
    assert {"runtime", "mem_mb"} <= set(profile["default-resources"])
    # site-specific names stay out of the shared profile (see its comments)
    assert not {"slurm_partition", "slurm_account"} & set(profile["default-resources"])


def test_profile_leaves_threads_to_the_rules(profile):
    # Snakemake caps every job's threads at --cores, also on a cluster; and a default cpus_per_task would override
    # the threads a rule declares, so SLURM would grant fewer CPUs than the job runs threads
    assert "cores" not in profile
    assert "cpus_per_task" not in profile["default-resources"]


def test_profile_names_rules_of_the_workflow(profile, rules):
    assert "synthetic_experiment" in rules  # the rule list was read
    named = set(profile["set-resources"]) | set(profile.get("set-threads", {}))
    unknown = named - rules - PENDING_RULES
    assert not unknown, f"the profile sizes no rule of the workflow: {sorted(unknown)} (a typo, or a renamed rule?)"


def test_vit_resources_follow_the_config_not_the_profile(profile):
    # vit.resources in the config sets gpu, runtime and mem_mb per scale (CPU-only quick run, one GPU in paper.yaml);
    # a value in the profile would override both
    vit = profile["set-resources"].get("vit_train", {})
    assert not {"gpu", "runtime", "mem_mb"} & set(vit)


def test_dry_run_through_the_profile_needs_no_cluster(workdir):
    proc = run(workdir, "--profile", "workflow/profiles/slurm", "-n", "--configfile", CI_CONFIG, "--", "fig1", "fig3")
    out = proc.stdout + proc.stderr
    assert "workflow/profiles/slurm" in out and "for setting default command line arguments" in out
    # each job is planned with the profile's resources, expressions in `attempt` evaluated for the first attempt
    jobs = re.findall(r"^rule (\w+):\n(?:    .*\n)*?    resources: (.*)$", proc.stdout, flags=re.MULTILINE)
    planned = {rule for rule, _ in jobs}
    assert {"synthetic_experiment", "plot_synthetic"} <= planned
    for rule, resources in jobs:
        if rule in ("synthetic_experiment", "plot_synthetic"):
            assert "mem_mb=1000," in resources and "runtime=15" in resources


@pytest.mark.skipif(not (REPO / "workflow" / "config" / "paper.yaml").exists(), reason="no paper-scale config yet")
def test_paper_scale_vit_asks_slurm_for_one_gpu(workdir):
    proc = run(
        workdir,
        "--profile",
        "workflow/profiles/slurm",
        "-n",
        "--configfile",
        "workflow/config/paper.yaml",
        "--",
        "results/paper/tables/vit_metrics.csv",
    )
    job = re.search(r"^rule vit_train:\n(?:    .*\n)*?    resources: (.*)$", proc.stdout, flags=re.MULTILINE)
    assert job, proc.stdout[-2000:]
    assert "gpu=1" in job.group(1) and "mem_mb=32000" in job.group(1)


def test_ci_config_shortens_the_run():
    ci = yaml.safe_load((REPO / CI_CONFIG).read_text())
    default = yaml.safe_load((REPO / "workflow" / "config" / "default.yaml").read_text())
    for fig, settings in ci["synthetic"].items():
        assert settings["n_iter"] < default["synthetic"][fig]["n_iter"]


def test_slurm_check_script_parses():
    script = REPO / ".ci" / "slurm_check.sh"
    assert script.stat().st_mode & 0o111, "not executable"
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=10)
