# Shared by every rule file. The results root and the paths of registered outputs, the params of what a job reads,
# the inputs of a panel and the report's entries. Everything is derived from the figure registry (maxmargin/registry/,
# plain data) by the package (maxmargin.registry.derived, maxmargin.report): parsing imports neither numpy nor torch.
import os

from maxmargin import registry
from maxmargin.registry import derived
from maxmargin.provenance import RUN_ARGS_ENV
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
