# Synthetic experiments: GD trajectories on p (Figures 1, 2, 4, 5, 8) and on (v, p) (Figure 3).


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
    conda:
        "../envs/core.yaml"
    params:
        settings=experiment_params,
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
            category="Synthetic experiments",
            subcategory="{panel}",
        ),
    log:
        results_path("logs/plot_synthetic/{panel}.log"),
    benchmark:
        results_path("benchmarks/plot_synthetic/{panel}.tsv")
    conda:
        "../envs/core.yaml"
    params:
        plots=config["plots"],
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
            category="Tables",
        ),
    log:
        results_path("logs/directions_table/directions.log"),
    benchmark:
        results_path("benchmarks/directions_table/directions.tsv")
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/gather_directions.py"


rule fig1:
    input:
        figure_files("fig1"),


rule fig2:
    input:
        figure_files("fig2"),


rule fig3:
    input:
        figure_files("fig3"),


rule fig4:
    input:
        figure_files("fig4"),


rule fig5:
    input:
        figure_files("fig5"),


rule fig8:
    input:
        figure_files("fig8"),
