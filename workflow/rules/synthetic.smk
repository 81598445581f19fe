# Synthetic experiments: GD trajectories on p and on (v, p). Experiments, panels, figure targets and report labels
# come from the figure registry (maxmargin/registry/synthetic.py, via common.smk).

SYNTHETIC_EXPERIMENTS = [experiment.name for experiment in registry.EXPERIMENTS]

# Figure panel -> the experiment whose tables it draws.
SYNTHETIC_PANELS = {
    panel.name: panel.experiment for panel in registry.panels_of("synthetic")
}


wildcard_constraints:
    experiment="|".join(SYNTHETIC_EXPERIMENTS),
    panel="|".join(SYNTHETIC_PANELS),


for template in EXPERIMENT_TABLES.values():
    ALL_TARGETS += expand(results_path(template), experiment=SYNTHETIC_EXPERIMENTS)


rule synthetic_experiment:
    """Run one synthetic experiment: GD trajectories, max-margin directions and final cosines."""
    output:
        **{name: results_path(path) for name, path in EXPERIMENT_TABLES.items()},
    log:
        results_path("logs/synthetic_experiment/{experiment}.log"),
    benchmark:
        results_path("benchmarks/synthetic_experiment/{experiment}.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        settings=lambda wildcards: registry.experiment_settings(
            wildcards.experiment, config
        ),
        data=lambda wildcards: registry.experiment_data(wildcards.experiment, config),
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
            **panel_report("synthetic", "../report/synthetic.rst", wildcard="panel"),
        ),
    log:
        results_path("logs/plot_synthetic/{panel}.log"),
    benchmark:
        results_path("benchmarks/plot_synthetic/{panel}.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        plots=config["plots"],
        caption=lambda wildcards: registry.caption(wildcards.panel, config),
    script:
        "../../scripts/plot_synthetic.py"


rule directions_table:
    """Gather every max-margin direction and every GD run's final cosine into one table."""
    input:
        expand(
            results_path(EXPERIMENT_TABLES["directions"]),
            experiment=SYNTHETIC_EXPERIMENTS,
        ),
    output:
        report(table_path("directions"), **table_report("directions")),
    log:
        results_path("logs/directions_table/directions.log"),
    benchmark:
        results_path("benchmarks/directions_table/directions.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/gather_directions.py"
