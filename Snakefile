# Max-Margin Token Selection in Attention Mechanism (Tarzanagh et al., NeurIPS 2023): every figure and table.
# Thin entry point: config + schema validation, rule files, and the default target.
import os
from pathlib import Path

from snakemake.utils import min_version, validate

from maxmargin.config import check_config

min_version("9.0")

# Every job imports the library from beside this Snakefile, installed or not: the conda envs of workflow/envs/ hold
# only its dependencies, because Snakemake copies an env file to .snakemake/conda/, where `pip install -e .` could not
# find the repository. Jobs inherit the variable, locally and on SLURM (sbatch --export=ALL); tests/test_packaging.py
# checks that a job imports this copy.
_python_path = os.environ.get("PYTHONPATH", "").split(os.pathsep)
if _python_path[0] != workflow.basedir:
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [workflow.basedir, *filter(None, _python_path)]
    )


# Resolved beside this Snakefile, so `-s path/to/Snakefile --directory elsewhere` finds it too.
configfile: Path(workflow.basedir) / "workflow/config/default.yaml"


validate(config, "workflow/schemas/config.schema.yaml")
check_config(config)  # what the schema cannot say: every number finite


# The landing page of `snakemake --report` (captions per file: workflow/report/*.rst).
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/synthetic.smk"
include: "workflow/rules/census.smk"
include: "workflow/rules/vit.smk"
include: "workflow/rules/regpath.smk"
include: "workflow/rules/claims.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
