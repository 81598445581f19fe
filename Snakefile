# Max-Margin Token Selection in Attention Mechanism (Tarzanagh et al., NeurIPS 2023): every figure and table.
# Thin entry point: config + schema validation, rule files, and the default target.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "workflow/config/default.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


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
