# Synthetic experiments: GD trajectories on p (Figures 1, 2, 4, 5, 8) and on (v, p) (Figure 3).
# Experiments, panels and figures come from the figure registry (maxmargin/registry.py, via common.smk).


rule synthetic_experiment:
    """Run one synthetic experiment: GD trajectories, max-margin directions and final cosines."""
    output:
        trajectories=results_path("tables/{experiment}.csv"),
        tokens=results_path("tables/{experiment}_tokens.csv"),
        directions=results_path("runs/{experiment}/directions.csv"),
    log:
        results_path("logs/synthetic_experiment/{experiment}.log"),
    benchmark:
        results_path("benchmarks/synthetic_experiment/{experiment}.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        settings=experiment_settings,
        data=experiment_data,
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
            caption="../report/synthetic.rst",
            category="2 Synthetic (Figures 1-5, 8)",
            subcategory=lambda wildcards: registry.panel(wildcards.panel).figure_label,
            labels=lambda wildcards: {
                "figure": registry.panel(wildcards.panel).label,
                "type": "figure",
            },
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
            results_path("runs/{experiment}/directions.csv"),
            experiment=SYNTHETIC_EXPERIMENTS,
        ),
    output:
        report(
            results_path("tables/directions.csv"),
            caption="../report/directions.rst",
            category="2 Synthetic (Figures 1-5, 8)",
            subcategory="Tables",
            labels={"figure": "Directions (Figures 1-3, 5, 8)", "type": "table"},
        ),
    log:
        results_path("logs/directions_table/directions.log"),
    benchmark:
        results_path("benchmarks/directions_table/directions.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/gather_directions.py"


# One aggregate target per figure (fig1, fig2, ...), from the registry.
for figure, panels in FIGURES.items():

    rule:
        name:
            figure
        input:
            figure_files(figure),
        localrule: True
