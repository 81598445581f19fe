# Synthetic experiments: GD trajectories on p and on (v, p). Experiments, panels, tables, figure targets and report
# labels come from the figure registry (maxmargin/registry/synthetic.py, via common.smk).
from maxmargin.drawing_code import drawing_code

SYNTHETIC_EXPERIMENTS = [experiment.name for experiment in registry.EXPERIMENTS]
SYNTHETIC_PANELS = [panel.name for panel in registry.panels_of("synthetic")]


wildcard_constraints:
    experiment="|".join(SYNTHETIC_EXPERIMENTS),


# The three tables of every experiment (maxmargin/registry/synthetic.py: EXPERIMENT_TABLES).
EXPERIMENT_TABLES = {
    kind: results_path(pattern)
    for kind, (_, pattern, _) in registry.synthetic.EXPERIMENT_TABLES.items()
}


rule synthetic_experiment:
    """Run one synthetic experiment: GD trajectories, max-margin directions and final cosines."""
    input:
        unpack(current("synthetic_experiment")),
    output:
        **EXPERIMENT_TABLES,
        sidecars=[f"{path}.provenance.json" for path in EXPERIMENT_TABLES.values()],
    log:
        results_path("logs/synthetic_experiment/{experiment}.log"),
    benchmark:
        results_path("benchmarks/synthetic_experiment/{experiment}.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("synthetic_experiment"),
        code=job_code("synthetic_experiment"),
    script:
        "../../scripts/run_synthetic.py"


rule plot_synthetic:
    """Draw one figure panel from its experiment's tables (restyling never reruns GD)."""
    input:
        unpack(panel_tables),
    output:
        pdf=results_path("figures/{panel}.pdf"),
        png=report(
            results_path("figures/{panel}.png"),
            **panel_report("plot_synthetic", SYNTHETIC_PANELS),
        ),
    log:
        results_path("logs/plot_synthetic/{panel}.log"),
    benchmark:
        results_path("benchmarks/plot_synthetic/{panel}.tsv")
    wildcard_constraints:
        panel="|".join(SYNTHETIC_PANELS),
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("plot_synthetic"),
        code=lambda wildcards: drawing_code(wildcards.panel),
    script:
        "../../scripts/plot_synthetic.py"


rule directions_table:
    """Gather every max-margin direction and every GD run's final cosine into one table."""
    input:
        unpack(current("directions_table")),
        [table_path(f"{name}_directions") for name in SYNTHETIC_EXPERIMENTS],
    output:
        report(table_path("directions"), **table_report("directions")),
        table_outputs("directions")[1],
    log:
        results_path("logs/directions_table/directions.log"),
    benchmark:
        results_path("benchmarks/directions_table/directions.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("directions_table"),
        code=job_code("directions_table"),
    script:
        "../../scripts/gather_directions.py"
