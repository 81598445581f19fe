"""The SLURM profile without a cluster: its layering with the workflow profile, what it submits, and a planned run.

The runs on a real (one-node) SLURM are .ci/slurm_check.sh.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, copy_workflow

PROFILES = REPO / "workflow" / "profiles"
CI_CONFIG = "workflow/config/ci_slurm.yaml"
CHECK = REPO / ".ci" / "slurm_check.sh"
# The only rules whose jobs go to SLURM (.ci/slurm_check.sh fails a run that submits another one); every other rule
# that runs a script is `localrule: True`.
SUBMITTED = set(re.search(r'^COMPUTE_RULES="([^"]*)"', CHECK.read_text(), re.MULTILINE).group(1).split())
COMPUTE_RULES = {name for name in SUBMITTED if not name.startswith("group:")}
# ... and the rules the site profile groups (`group:<rule>` in slurm_check.sh), compute rules only
COMPUTE_GROUPS = {name.removeprefix("group:") for name in SUBMITTED - COMPUTE_RULES}


def run(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(SNAKEMAKE), *args], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def planned_resources(stdout: str) -> dict[str, list[str]]:
    """Rule -> the `resources:` line of each job a dry run plans."""
    # a job of a group job is printed indented under "Group job <name>"
    jobs = re.findall(r"^( *)rule (\w+):\n(?:\1    .*\n)*?\1    resources: (.*)$", stdout, flags=re.MULTILINE)
    planned: dict[str, list[str]] = {}
    for _, rule, resources in jobs:
        planned.setdefault(rule, []).append(resources)
    return planned


@pytest.fixture(scope="module")
def site() -> dict:
    return yaml.safe_load((PROFILES / "slurm" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def workflow_profile() -> dict:
    return yaml.safe_load((PROFILES / "default" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("slurm"))


@pytest.fixture(scope="module")
def rules(workdir) -> set[str]:
    return {line.split()[0] for line in run(workdir, "--list-rules").stdout.splitlines() if line.strip()}


def test_site_profile_keeps_what_it_promises(site):
    assert site["executor"] == "slurm"
    assert site["slurm-keep-successful-logs"] is True  # the plugin deletes successful jobs' logs by default
    # the plugin's default (sacct) also reports why a job failed; squeue only where there is no accounting (CI)
    assert "slurm-status-command" not in site
    assert site["jobs"] >= 20 and site["latency-wait"] >= 10 and site["retries"] >= 1
    assert {"runtime", "mem_mb"} <= set(site["default-resources"])
    # site names stay out of the shared profile (commented there), and so does a CPU count that would override threads
    assert not {"slurm_partition", "slurm_account", "cpus_per_task"} & set(site["default-resources"])
    assert "# slurm_account: " in (PROFILES / "slurm" / "config.yaml").read_text()


def test_profiles_share_no_key_and_rule_resources_live_with_the_workflow(site, workflow_profile):
    # Snakemake layers the workflow profile over --profile key by key: a shared key would silently take its value
    assert not set(site) & set(workflow_profile)
    # rule-specific sizes belong to the workflow, not to a site's profile; and no `cores`, which caps every job
    assert not {"set-resources", "set-threads", "cores"} & set(site)
    assert "cores" not in workflow_profile


def test_workflow_profile_sizes_rules_of_the_workflow(workflow_profile, rules):
    assert "synthetic_experiment" in rules  # the rule list was read
    unknown = set(workflow_profile.get("set-resources", {})) - rules
    assert not unknown, f"the workflow profile sizes no rule of the workflow: {sorted(unknown)}"


def test_only_compute_rules_are_submitted(rules):
    assert COMPUTE_RULES <= rules, f"slurm_check.sh names unknown rules: {sorted(COMPUTE_RULES - rules)}"
    submitted = set()
    for smk in (REPO / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"(?m)^(?=rule \w+:)", smk.read_text()):
            name = re.match(r"rule (\w+):", block)
            # a rule without script is an aggregate (fig1, all, ...): done in place, never a job of its own
            if name and "script:" in block and not re.search(r"^    localrule: True$", block, re.MULTILINE):
                submitted.add(name.group(1))
    assert submitted == COMPUTE_RULES


def test_site_groups_hold_compute_rules_one_job_at_a_time(site, workflow_profile):
    groups = dict(entry.split("=") for entry in site["groups"])
    assert set(groups) == COMPUTE_GROUPS and set(groups) <= COMPUTE_RULES  # the rules slurm_check.sh sees grouped
    components = dict(entry.split("=") for entry in site["group-components"])
    assert set(components) == set(groups.values())
    # plugin 2.8.0 runs a group's jobs one after the other: one job per layer, so a group asks SLURM for 1 CPU
    assert "census_slot=1" in site["resources"] and "census_slot=local" in site["set-resource-scopes"]
    assert all(workflow_profile["set-resources"][rule]["census_slot"] == 1 for rule in groups)
    assert site["slurm-init-seconds-before-status-checks"] <= 10  # measured: 40 s of waiting per check otherwise


def test_dry_run_through_the_profile_plans_each_job(workdir):
    proc = run(
        workdir,
        "--profile",
        "workflow/profiles/slurm",
        "-n",
        "--forceall",
        "--configfile",
        CI_CONFIG,
        "--",
        "fig9",
        "lemma1",
        "results/ci/tables/vit_metrics.csv",
    )
    out = proc.stdout + proc.stderr
    assert "Using profiles workflow/profiles/slurm and workflow specific profile profiles/default" in out
    planned = planned_resources(proc.stdout)
    # the site defaults ("15m" is 15 minutes) and expressions in `attempt` evaluated for the first attempt
    assert all("mem_mb=1000," in r and "runtime=15" in r for r in planned["census_trials"])
    assert all("census_slot=1" in r for r in planned["census_trials"])  # grouped, one at a time
    assert "Group job census " in proc.stdout
    assert "mem_mb=2000," in planned["lemma1_table"][0]  # the workflow profile's set-resources
    # the ViT asks SLURM for the config's runtime and memory, and as many CPUs as the rule's threads (no override)
    vit = yaml.safe_load((REPO / CI_CONFIG).read_text())["vit"]["resources"]
    assert (
        f"mem_mb={vit['mem_mb']}," in planned["vit_train"][0] and f"runtime={vit['runtime']}" in planned["vit_train"][0]
    )
    threads = re.search(r"^rule vit_train:\n(?:    .*\n)*?    threads: (\d+)$", proc.stdout, flags=re.MULTILINE)
    assert threads and threads.group(1) == "2"


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
    resources = planned_resources(proc.stdout)["vit_train"][0]
    asked = yaml.safe_load((REPO / "workflow" / "config" / "paper.yaml").read_text())["vit"]["resources"]
    assert (
        "gpu=1" in resources
        and f"mem_mb={asked['mem_mb']}," in resources
        and f"runtime={asked['runtime']}" in resources
    )


def test_ci_config_is_a_smaller_run_of_the_same_experiments():
    ci = yaml.safe_load((REPO / CI_CONFIG).read_text())
    default = yaml.safe_load((REPO / "workflow" / "config" / "default.yaml").read_text())
    assert ci["results"] != default["results"]
    for fig, settings in ci["synthetic"].items():
        assert settings["n_iter"] < default["synthetic"][fig]["n_iter"]
    assert set(ci["census"]["dims"]) < set(default["census"]["dims"])
    assert ci["census"]["n_trials"] < default["census"]["n_trials"]
    assert ci["regpath"]["radii"]["num"] < default["regpath"]["radii"]["num"]
    assert ci["vit"]["train"]["epochs"] < default["vit"]["train"]["epochs"]
    assert ci["vit"]["data"]["n_train"] < default["vit"]["data"]["n_train"]


def test_slurm_check_script_parses():
    assert CHECK.stat().st_mode & 0o111, "not executable"
    subprocess.run(["bash", "-n", str(CHECK)], check=True, timeout=10)


SCONTROL_NO_ACCOUNTING = """Configuration data as of 2026-11-25T10:00:00
AccountingStorageHost   = (null)
AccountingStorageType   = accounting_storage/none
MinJobAge               = 300 sec
"""


def test_sacct_without_accounting_is_stopped_with_the_fix() -> None:
    from maxmargin.cluster import accounting_storage, min_job_age, status_command_problem

    assert accounting_storage(SCONTROL_NO_ACCOUNTING) == "accounting_storage/none"
    assert min_job_age(SCONTROL_NO_ACCOUNTING) == 300
    problem = status_command_problem("sacct", SCONTROL_NO_ACCOUNTING, 5)
    assert problem is not None and "--slurm-status-command squeue" in problem
    assert status_command_problem("squeue", SCONTROL_NO_ACCOUNTING, 5) is None
    # the plugin switches squeue back to sacct where MinJobAge < 3 x the first status-check delay: 300 < 3 x 120
    assert status_command_problem("squeue", SCONTROL_NO_ACCOUNTING, 120) is not None
    with_db = SCONTROL_NO_ACCOUNTING.replace("accounting_storage/none", "accounting_storage/slurmdbd")
    assert status_command_problem("sacct", with_db, 5) is None


def test_every_job_waits_passively_unless_told_otherwise(tmp_path: Path) -> None:
    """The Snakefile sets OMP_WAIT_POLICY=PASSIVE before any job starts (torch's OpenMP threads then sleep while they
    wait instead of spinning on the cores other jobs need); a job sees it, unless the environment already says
    otherwise. A SLURM job gets the submitting environment (sbatch --export=ALL) and parses the Snakefile again."""
    workdir = copy_workflow(tmp_path)
    with (workdir / "Snakefile").open("a") as snakefile:
        snakefile.write('\n\nrule omp_probe:\n    output:\n        "omp-{name}.txt",\n    localrule: True\n')
        snakefile.write('    shell:\n        "echo ${{OMP_WAIT_POLICY:-unset}} > {output}"\n')
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    for name, given, seen in (("unset", None, "PASSIVE"), ("active", "ACTIVE", "ACTIVE")):
        job_env = env if given is None else env | {"OMP_WAIT_POLICY": given}
        command = [str(SNAKEMAKE), "--cores", "1", "--", f"omp-{name}.txt"]
        proc = subprocess.run(command, cwd=workdir, env=job_env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert (workdir / f"omp-{name}.txt").read_text().strip() == seen
