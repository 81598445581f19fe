# Shared by every rule file. The results root and the paths of registered outputs, the params of what a job reads,
# the inputs of a panel and the report's entries. Everything is derived from the figure registry (maxmargin/registry/,
# plain data) by the package (maxmargin.registry.derived, maxmargin.report): parsing imports neither numpy nor torch.
import os

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.settings.enums import RerunTrigger

from maxmargin import registry
from maxmargin.job_code import job_fingerprint, job_tables
from maxmargin.registry import derived
from maxmargin.provenance import RUN_ARGS_ENV, replan_reasons
from maxmargin.registry.reads import read_keys, subset
from maxmargin.report import ReportEntries, run_sentences

# Every output lives under one results root chosen by the config (`results`), so a paper-scale run
# (workflow/config/paper.yaml: results/paper) never overwrites the quick-scale results.
RESULTS = config["results"]


def results_path(path):
    """``path`` (wildcards allowed) under the results root of this config."""
    return f"{RESULTS}/{path}"


def user_configfiles():
    """The --configfile files of this run (default.yaml left out), as given: what a rebuild command must repeat."""
    default = (Path(workflow.basedir) / "workflow/config/default.yaml").resolve()
    return [
        os.path.relpath(p) for p in workflow.configfiles if Path(p).resolve() != default
    ]


def run_args():
    """The arguments that select this run's config: the rebuild commands the jobs print repeat them, every config
    file after one --configfile (of several --configfile options Snakemake keeps only the last).
    """
    files = (
        [f"--configfile {' '.join(user_configfiles())}"] if user_configfiles() else []
    )
    pairs = workflow.config_settings.config or {}
    given = (
        [f"--config {' '.join(f'{k}={v}' for k, v in pairs.items())}"] if pairs else []
    )
    return " ".join(files + given)


# Jobs inherit it (a job on a cluster node parses this file again and sets it the same).
os.environ[RUN_ARGS_ENV] = run_args()


def reads(rule):
    """The params of a job of ``rule``: the part of the config it reads (maxmargin/registry/reads.py), nothing else."""

    def job_reads(wildcards):
        return subset(config, read_keys(rule, dict(wildcards.items())))

    return job_reads


def job_code(name):
    """The `code` param of the jobs of ``name`` (a rule), their rerun trigger. A hash of the script, the package code
    that names and the job's declarations in the registry (maxmargin/job_code.py), so that an edit reruns the jobs
    it concerns.
    """

    def code(wildcards):
        script = Path(workflow.get_rule(name).script).name
        return job_fingerprint(
            name, Path(workflow.basedir) / "scripts" / script, dict(wildcards.items())
        )

    return code


def current(name, code=None):
    """An input function of a job of rule ``name`` that adds no input. Before the run plans its jobs, it compares each
    table of the job found under the results root with its sidecar: where the sidecar records settings this config
    gives other values, or another job code (``code``, a function of the wildcards; default: job_code(name)), the
    job is planned again. Snakemake's own records (.snakemake/) would say so only where they are there: a results
    root copied or restored without them would serve the old tables. Settings and code are params: under
    --rerun-triggers without `params`, as for Snakemake, nothing is planned for them.
    """
    code = code or job_code(name)

    def check(wildcards):
        if RerunTrigger.PARAMS not in workflow.rerun_triggers:
            return {}
        found = dict(wildcards.items())
        paths = [
            table_path(table.name).format(**found)
            for table in job_tables(name, found)
            if table.sidecar
        ]
        for path in paths:
            if reasons := replan_reasons(path, config, code(wildcards)):
                plan_again(paths, name, f"{path}: {'; '.join(reasons)}")
                break
        return {}

    return check


def plan_again(paths, name, why):
    """Force the job writing ``paths`` (this DAG's forced files, as --forcerun PATH would, without making them
    targets), saying ``why``; where that cannot be done, stop naming the table and the command that rebuilds it.
    """
    forced = getattr(workflow.dag, "forcefiles", None)
    if not isinstance(forced, set):
        raise WorkflowError(
            f"{why}; rebuild it: snakemake --forcerun {paths[0]} {run_args()} (rule {name})"
        )
    if forced.isdisjoint(paths):
        logger.warning(
            f"Rule {name} is run again, its tables are not this run's: {why}"
        )
        forced.update(paths)


def data_manifest(block):
    """The data manifest of a config block that trains on images (vit, vit_recipes): rule vit_data's output."""
    return results_path(registry.vit.DATA_MANIFEST.format(block=block))


def run_checkpoint(rule):
    """The checkpoint of the ViT run of ``rule`` (vit_train, vit_pilot_run, vit_recipe_train; wildcards left in)."""
    return results_path(registry.vit.CHECKPOINTS[rule])


def table_path(name, ext="csv"):
    """results/tables/{name}.{ext} (or the table's own path) of a registered table, wildcards left in."""
    return results_path(registry.table(name).pattern.removesuffix(".csv") + f".{ext}")


def table_outputs(name):
    """Every file of a registered table: its extensions and, for its CSV, the provenance sidecar beside it."""
    entry = registry.table(name)
    files = [table_path(name, ext) for ext in entry.extensions]
    return files + ([f"{files[0]}.provenance.json"] if entry.sidecar else [])


def panel_files(panel):
    """[pdf, png] of a registered panel."""
    return [
        results_path(f"figures/{registry.panel(panel).name}.{ext}")
        for ext in ("pdf", "png")
    ]


# The report's entries (maxmargin/report.py): captions filled from the config that made each file and from what the
# run measured (its claims table's sentences: `snakemake --report` parses the workflow after the run).
REPORT = ReportEntries(
    config,
    RESULTS,
    run_sentences(table_path("claims", "json"), table_outputs("claims")[-1]),
)
table_report = REPORT.table
panel_report = REPORT.panel


def landing_page_file():
    """The report's landing page (workflow/report/workflow.rst with the run's verdicts and settings)."""
    return REPORT.landing_page(Path(workflow.basedir) / "workflow/report/workflow.rst")


def target_files(target):
    """The files of a target (derived.target_outputs): its panels, what they draw, the tables and files naming it."""
    return [results_path(p) for p in derived.target_outputs(target, config)]


def all_targets():
    """Every output of the default run (derived.all_outputs; every job's, tests/test_workflow_targets.py)."""
    return [results_path(p) for p in derived.all_outputs(config)]


def panel_tables(wildcards):
    """The three tables of the experiment a synthetic panel draws (rule plot_synthetic)."""
    experiment = registry.panel(wildcards.panel).experiment
    return {
        kind: results_path(pattern.format(experiment=experiment))
        for kind, (_, pattern, _) in registry.synthetic.EXPERIMENT_TABLES.items()
    }


def table_files(name):
    """Every file of a registered table under this config (one per value of its wildcards), for a gathering rule."""
    return [results_path(p) for p in derived.table_paths(registry.table(name), config)]


def panel_input(wildcards):
    """The files a panel draws, in the order its drawing function takes them (derived.panel_inputs)."""
    return [results_path(path) for _, path in derived.panel_inputs(wildcards.panel)]
