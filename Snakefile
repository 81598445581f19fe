# Max-Margin Token Selection in Attention Mechanism (Tarzanagh et al., NeurIPS 2023): every figure and table.
# Thin entry point: config + schema validation, rule files, and the default target.
import os
from pathlib import Path

from snakemake.utils import min_version

# Torch's OpenMP threads spin while they wait (libgomp's default): beside one busy core a ViT epoch takes several
# times as long (docs/results/timings.md). Waiting threads that sleep lose nothing on a free core. Set before any job
# starts and before any job imports torch: every job inherits it (local jobs; SLURM's sbatch --export=ALL, and a job
# on a node parses this file again). A value already in the environment is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Found beside this Snakefile, installed or not: Snakemake puts the Snakefile's folder on sys.path, and hands its
# sys.path to every Python script it runs, also in a conda env of workflow/envs/ (which holds only the library's
# dependencies: tests/test_packaging.py checks that a job imports this copy).
from maxmargin.cluster import check_slurm_status_command
from maxmargin.config import check_config_beyond_schema, validate_config
from maxmargin.config_yaml import follow_yaml_merges

min_version("9.0")


# Resolved beside this Snakefile, so `-s path/to/Snakefile --directory elsewhere` finds it too.
configfile: Path(workflow.basedir) / "workflow/config/default.yaml"


# A block that default.yaml builds by YAML merge (synthetic.fig1c: <<: *fig1) follows its source as this run's
# config files set it (a CI config's shorter synthetic.fig1.n_iter reaches fig1c too), its own keys over it.
follow_yaml_merges(
    config,
    Path(workflow.basedir) / "workflow/config/default.yaml",
    workflow.configfiles,
    workflow.config_settings.config,
)

# The schema's check (snakemake.utils.validate), its error naming the key and the config file that holds it.
validate_config(
    config,
    Path(workflow.basedir) / "workflow/schemas/config.schema.yaml",
    Path(workflow.basedir) / "workflow/config/default.yaml",
    workflow.configfiles,
    workflow.config_settings.config,
)
# What the schema cannot say (every number finite, integers, indices inside the data, no duplicate YAML key).
check_config_beyond_schema(
    config,
    Path(workflow.basedir) / "workflow/schemas/config.schema.yaml",
    workflow.configfiles,
)


# A SLURM run whose job status would never arrive (sacct on a cluster without accounting) stops here, not hangs.
onstart:
    check_slurm_status_command(workflow)


include: "workflow/rules/common.smk"
include: "workflow/rules/synthetic.smk"
include: "workflow/rules/census.smk"
include: "workflow/rules/vit.smk"
include: "workflow/rules/regpath.smk"
include: "workflow/rules/lemma1.smk"
include: "workflow/rules/basin.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/targets.smk"


# The landing page of `snakemake --report`: workflow/report/workflow.rst with the verdicts from the registry
# (captions per file: workflow/report/*.rst and the registry's).
report: landing_page_file()


rule all:
    default_target: True
    input:
        all_targets(),
