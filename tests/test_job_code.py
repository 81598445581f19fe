"""Every job that runs package code reruns when what it computes with changes, and only then: its `code` param
hashes its script, the package code that names (its experiment's functions too), its Experiment entry and its
tables' declared columns (maxmargin/job_code.py); its input function `current` plans it again where a table it wrote
records other settings or another code hash (a results root copied without .snakemake/)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import CI_CONFIG, CI_RESULTS, REPO, SNAKEMAKE, copy_workflow

from maxmargin import drawing_code, job_code, registry
from maxmargin.job_code import job_fingerprint
from maxmargin.provenance import replan_reasons

# Rules with a script and a rerun trigger other than code=job_code(...): the param, and what it hashes.
OWN_TRIGGER = {
    "vit_data": ("plan", "the data's files; a rerun would retrain every run trained on its manifest"),
    "vit_train": ("code", "code_fingerprint(): the ViT package's source (long runs depend on its value)"),
    "vit_recipe_train": ("code", "code_fingerprint(), as vit_train"),
    "vit_probe": ("code", "probe_fingerprint(): the analyses of the snapshots"),
    "vit_probe_images": ("code", "probe_fingerprint(), as vit_probe"),
    "plot_synthetic": ("code", "drawing_code(panel): maxmargin/drawing_code.py"),
}
# A rule that writes a table with a sidecar and is not planned again from it: its record is the run's JSON.
UNCHECKED = {"vit_train"}
NEW_FUNCTION = '''

def a_new_function(x):
    """Defined beside the others, called by no job."""
    return x
'''


def _rules() -> dict[str, str]:
    """Rule name -> its block of workflow/rules/*.smk (a rule made in a loop: ``plot_<family>``, one block)."""
    rules = {}
    for path in sorted((REPO / "workflow/rules").glob("*.smk")):
        for block in re.split(r"\n(?=\s*rule\b)", path.read_text())[1:]:
            name = re.match(r"\s*rule (\w+):", block)
            rules[name[1] if name else f"{path.stem}:loop"] = block
    return rules


def _script(block: str) -> str | None:
    found = re.search(r"scripts/(\w+\.py)", block)
    return found[1] if found else None


def test_every_rule_that_runs_package_code_has_a_rerun_trigger_and_every_table_rule_its_check() -> None:
    rules = _rules()
    tables = {t.rule for t in registry.TABLES if t.sidecar}
    assert {"synthetic_experiment", "census_trials", "regpath_instance", "lemma1_table", "basin_tables"} <= tables
    for name, block in rules.items():
        if _script(block) is None:
            continue
        if name in OWN_TRIGGER or name.endswith(":loop"):  # the plot rules of plots.smk: drawing_code(panel)
            param = OWN_TRIGGER.get(name, ("code",))[0]
            assert re.search(rf"\n\s+{param}=", block), f"rule {name}: its own {param} param is gone"
        else:
            assert f'code=job_code("{name}")' in block, f'rule {name} runs package code without code=job_code("{name}")'
        if name in tables - UNCHECKED:
            assert f'unpack(current("{name}"' in block, f'rule {name} writes tables without unpack(current("{name}"))'
    assert set(OWN_TRIGGER) <= set(rules) and UNCHECKED <= set(rules)


def _jobs() -> dict[str, tuple[str, Path, dict[str, str]]]:
    """A job of every rule with code=job_code(...) (one per experiment, per regpath instance): label -> (rule,
    script, wildcards)."""
    jobs = {}
    for name, block in _rules().items():
        if f'code=job_code("{name}")' not in block:
            continue
        script = REPO / "scripts" / _script(block)
        if name == "synthetic_experiment":
            jobs |= {e.name: (name, script, {"experiment": e.name}) for e in registry.EXPERIMENTS}
        elif name == "regpath_instance":
            jobs |= {f"{name}:{i}": (name, script, {"regpath_instance": i}) for i in registry.REGPATH_INSTANCES}
        else:
            jobs[name] = (name, script, {"d": "5", "n": "2", "T": "4", "n_iter": "10"})
    return jobs


def _fingerprints() -> dict[str, str]:
    return {label: job_fingerprint(*job) for label, job in _jobs().items()}


def _changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {label for label in before if after[label] != before[label]}


@pytest.fixture
def package(tmp_path, monkeypatch) -> Path:
    """A copy of the package whose sources the fingerprints read (edited by the tests)."""
    copy = tmp_path / "maxmargin"
    shutil.copytree(drawing_code.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(drawing_code, "PACKAGE", copy)
    return copy


def _edit_function(path: Path, name: str) -> None:
    """Change the source of the module-level function ``name`` of ``path`` (a decorator that changes nothing)."""
    text = path.read_text()
    assert f"\ndef {name}(" in text, name
    path.write_text(text.replace(f"\ndef {name}(", f"\n@lambda f: f  # edited\ndef {name}(", 1))


def test_an_experiment_entry_reruns_its_experiment_only(monkeypatch) -> None:
    """The issue's case: fig1b's data set, fig3b's data_args, fig2's function and fig5's block each rerun that
    experiment's job, none other."""
    before = _fingerprints()
    assert {"fig1b", "fig3b", "census_trials", "lemma1_table", "basin_tables", "regpath_table"} <= set(before)
    edits = {
        "fig1b": {"data": "fig1a"},
        "fig3b": {"data_args": {"variant": "a"}},
        "fig2": {"run": "gd_on_p"},
        "fig5": {"block": "fig4"},
    }
    for name, change in edits.items():
        entries = tuple(dataclasses.replace(e, **change) if e.name == name else e for e in registry.EXPERIMENTS)
        monkeypatch.setattr(registry, "EXPERIMENTS", entries)
        assert _changed(before, _fingerprints()) == {name}, name
        monkeypatch.undo()
    assert _fingerprints() == before


def test_an_edited_function_reruns_the_jobs_that_run_it_and_no_neighbour(package) -> None:
    before = _fingerprints()
    runs = {e.name: e.run for e in registry.EXPERIMENTS}
    cases = [
        ("experiments/synthetic.py", "gd_in_lmm_cone", {"fig2"}),  # an experiment function
        ("experiments/synthetic.py", "joint_gd_on_v_and_p", {e for e, r in runs.items() if r == "joint_gd_on_v_and_p"}),
        ("experiments/instances.py", "fig5", {"fig5"}),  # a data function
        ("experiments/lemma1.py", "_torch_grad_W", {"lemma1_table"}),  # a helper of the Lemma 1 job
        ("experiments/basin.py", "arc_starts", {"basin_tables"}),
        (  # and the claims (and the ViT page's) that judge proportions by it
            "experiments/census_tables.py",
            "wilson_interval",
            {"census_gather", "census_budget_gather", "census_grid_gather", "claims_table", "docs_vit"},
        ),
        ("experiments/regpath.py", "_fig3_rows", {f"regpath_instance:{i}" for i in registry.REGPATH_INSTANCES}),
    ]
    for module, function, expected in cases:
        _edit_function(package / module, function)
        after = _fingerprints()
        assert _changed(before, after) == expected, function
        before = after
    for module in ("experiments/synthetic.py", "experiments/census.py", "core/gd.py"):
        with (package / module).open("a") as source:
            source.write(NEW_FUNCTION)
    assert _changed(before, _fingerprints()) == set()


def test_the_code_a_job_runs_is_followed_into_the_core_and_by_name(package) -> None:
    """A core function reaches the jobs that call it through their experiment functions; the Lemma 1 job's
    ``getattr(instances, name)`` reaches the three data sets its source names; the io layer reaches none."""
    before = _fingerprints()
    _edit_function(package / "core/span_gd.py", "normalized_gd_in_span")
    census = {"census_trials", "census_budget_trials", "census_grid_cell"}
    assert census <= _changed(before, after := _fingerprints()) and "fig1a" not in _changed(before, after)
    _edit_function(package / "experiments/instances.py", "fig1c")
    users = {e.name for e in registry.EXPERIMENTS if e.data == "fig1c"}
    assert _changed(after, again := _fingerprints()) == users | {"lemma1_table"}
    _edit_function(package / "tables.py", "write_csv")  # writes and checks a table: changes no number
    assert _changed(again, _fingerprints()) == set()


def test_a_table_declaration_reruns_its_job_and_a_caption_or_description_nothing(monkeypatch) -> None:
    before = _fingerprints()
    summary = registry.table("census_summary")
    first = dataclasses.replace(summary.columns[0], description="Edited.")
    described = dataclasses.replace(summary, caption="Edited.", label="Edited", columns=(first, *summary.columns[1:]))
    renamed = dataclasses.replace(summary, columns=(dataclasses.replace(first, name="dim"), *summary.columns[1:]))
    for entry, expected in ((described, set()), (renamed, {"census_gather"})):
        tables = tuple(entry if t.name == "census_summary" else t for t in registry.TABLES)
        monkeypatch.setattr(registry, "TABLES", tables)
        assert _changed(before, _fingerprints()) == expected
        monkeypatch.undo()


def test_an_entry_naming_no_function_is_named_with_its_rule(monkeypatch) -> None:
    entries = tuple(dataclasses.replace(e, run="gd_nowhere") if e.name == "fig2" else e for e in registry.EXPERIMENTS)
    monkeypatch.setattr(registry, "EXPERIMENTS", entries)
    with pytest.raises(ValueError, match=r"rule 'synthetic_experiment' .*'gd_nowhere'"):
        job_fingerprint("synthetic_experiment", REPO / "scripts/run_synthetic.py", {"experiment": "fig2"})


def test_a_table_is_replanned_when_its_record_is_not_this_runs(tmp_path) -> None:
    table = tmp_path / "fig1a.csv"
    table.write_text("a\n1\n")
    config = {"synthetic": {"fig1": {"eta": 0.1, "n_iter": 200}}}
    record = {"reads": {"synthetic.fig1": {"eta": 0.1, "n_iter": 200}}, "params": {"code": "abc"}}
    sidecar = tmp_path / "fig1a.csv.provenance.json"
    sidecar.write_text(json.dumps(record))
    assert replan_reasons(table, config, "abc") == []
    (other,) = replan_reasons(table, {"synthetic": {"fig1": {"eta": 0.2, "n_iter": 200}}}, "abc")
    assert other.startswith('synthetic.fig1 is {"eta": 0.1, "n_iter": 200} in its record, {"eta": 0.2')
    (code,) = replan_reasons(table, config, "def")
    assert "code hash is abc in its record, def now" in code
    sidecar.write_text("{cut")  # left to the read, which stops naming it
    assert replan_reasons(table, config, "def") == []
    table.unlink()
    assert replan_reasons(table, config, "def") == []  # a missing table: Snakemake plans it anyway


def test_job_code_follows_the_package_wherever_it_lies(package) -> None:
    """Fingerprints name files from the package's parent (a script by its name): a copy beside the Snakefile of a
    workflow, as the tests make, gives the fingerprints of the package itself."""
    rule, script, wildcards = _jobs()["fig3a"]
    copied = job_fingerprint(rule, script, wildcards)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(drawing_code, "PACKAGE", REPO / "maxmargin")
        assert job_fingerprint(rule, script, wildcards) == copied
    assert all(not key.startswith(str(REPO)) for key in job_code.job_sources(rule, script, wildcards))


# The small CI run's synthetic experiments that the Snakemake tests build: two of gd_on_p, two of fig3's data.
BUILT = ("fig1a", "fig1b", "fig3a", "fig3b")


def _snakemake(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`snakemake` (the program: the workflow imports the package copy beside its Snakefile) on BUILT's tables."""
    targets = [f"{CI_RESULTS}/tables/{name}.csv" for name in BUILT]
    command = [str(SNAKEMAKE), "--cores", "2", "--configfile", CI_CONFIG, *args, "--", *targets]
    proc = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def _planned(work: Path, *args: str) -> set[str]:
    """The experiments a dry run plans (every job here is a synthetic experiment's)."""
    out = _snakemake(work, "-n", *args).stdout
    return set(re.findall(r"wildcards: experiment=(\w+)", out))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A workflow with a copy of the package beside its Snakefile, BUILT's experiments made under the CI config."""
    work = copy_workflow(tmp_path_factory.mktemp("job_code"))
    shutil.copytree(REPO / "maxmargin", work / "maxmargin", ignore=shutil.ignore_patterns("__pycache__"))
    _snakemake(work)
    return work


def _copy(built: Path, tmp_path: Path, records: bool = True) -> Path:
    """A copy of the built run, its files' times kept; ``records``: with Snakemake's (.snakemake/), else without (a
    results root copied from a cluster)."""
    work = tmp_path / "work"
    ignore = shutil.ignore_patterns("locks", *(() if records else (".snakemake",)))
    shutil.copytree(built, work, symlinks=True, ignore=ignore)
    return work


def _edited(path: Path, old: str, new: str) -> str:
    """Replace ``old`` by ``new`` once in ``path``; its text before, to put back."""
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
    return text


def test_an_edit_replans_exactly_the_experiments_it_concerns(built: Path, tmp_path: Path) -> None:
    """The issue's cases in a dry run: an Experiment's data set, its data_args, the body of the function two
    experiments run; a new function beside them replans nothing."""
    work = _copy(built, tmp_path)
    assert _planned(work) == set()
    registry_file = work / "maxmargin/registry/synthetic.py"
    experiments = work / "maxmargin/experiments/synthetic.py"
    edits = [
        (registry_file, 'name="fig1b", data="fig1b"', 'name="fig1b", data="fig1a"', {"fig1b"}),
        (registry_file, 'data_args={"variant": "b"}', 'data_args={"variant": "a"}', {"fig3b"}),
        (experiments, "\ndef joint_gd_on_v_and_p(", "\n@lambda f: f\ndef joint_gd_on_v_and_p(", {"fig3a", "fig3b"}),
        (experiments, "\ndef gd_on_p(", f"{NEW_FUNCTION}\n\ndef gd_on_p(", set()),
    ]
    for path, old, new, expected in edits:
        before = _edited(path, old, new)
        assert _planned(work) == expected, new
        path.write_text(before)


def test_a_copied_results_root_is_made_again_where_it_is_not_this_runs(built: Path, tmp_path: Path) -> None:
    """Without .snakemake/ (an rsync from a cluster), a changed setting or an edited experiment function replans
    the tables it concerns; with it, a table whose sidecar records other settings (copied in) is made again too.
    Before, each gave "Nothing to be done"."""
    work = _copy(built, tmp_path, records=False)
    assert _planned(work) == set()
    (work / "eta.yaml").write_text(yaml.safe_dump({"synthetic": {"fig3": {"eta": 0.5}}}))
    proc = _snakemake(work, "-n", "--configfile", CI_CONFIG, "eta.yaml")
    assert set(re.findall(r"wildcards: experiment=(\w+)", proc.stdout)) == {"fig3a", "fig3b"}
    assert f"{CI_RESULTS}/tables/fig3a.csv: synthetic.fig3 is" in proc.stderr + proc.stdout
    experiments = work / "maxmargin/experiments/synthetic.py"
    before = _edited(experiments, "\ndef gd_on_p(", "\n@lambda f: f\ndef gd_on_p(")
    assert _planned(work) == {"fig1a", "fig1b"}
    experiments.write_text(before)
    work = _copy(built, tmp_path / "records")
    sidecar = work / CI_RESULTS / "tables/fig1a.csv.provenance.json"
    record = json.loads(sidecar.read_text())
    record["reads"]["synthetic.fig1"]["eta"] = 0.5
    sidecar.write_text(json.dumps(record))
    assert _planned(work) == {"fig1a"}
