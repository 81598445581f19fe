# Basins of attraction on the Figure 1(b) data and the measured cone of Theorem 3 (beyond the paper; config `basin`).
# Normalized GD runs with the authors' settings (synthetic.fig1); runs are labelled with the census's rule.

# Figure, tables, report labels and the target: the registry (maxmargin/registry/basin.py).


rule basin_tables:
    """GD from every start of the grid and of the arcs of C_{mu,R}(p_mm); Theorem 3's constants per radius."""
    output:
        basin=report(table_path("basin"), **table_report("basin")),
        cone=report(table_path("basin_cone"), **table_report("basin_cone")),
        paths=table_path("basin_paths"),
    log:
        results_path("logs/basin_tables/basin.log"),
    benchmark:
        results_path("benchmarks/basin_tables/basin.tsv")
    conda:
        "../envs/core.yaml"
    threads: 2
    params:
        basin=config["basin"],
        fig1=config["synthetic"]["fig1"],
        tols={
            "saturation_tol": config["census"]["saturation_tol"],
            "svm_tol": config["census"]["svm_tol"],
        },
    script:
        "../../scripts/basin_tables.py"


rule plot_basin:
    """The basin map of each GD variant with the measured cone, and mu_max against R."""
    input:
        basin=table_path("basin"),
        cone=table_path("basin_cone"),
        paths=table_path("basin_paths"),
        tokens=results_path(EXPERIMENT_TABLES["tokens"].format(experiment="fig1b")),
        directions=results_path(
            EXPERIMENT_TABLES["directions"].format(experiment="fig1b")
        ),
    output:
        pdf=panel_files("basin")[0],
        png=report(
            panel_files("basin")[1],
            **panel_report("basin", "../report/basin.rst", panel="basin"),
        ),
    log:
        results_path("logs/plot_basin/basin.log"),
    benchmark:
        results_path("benchmarks/plot_basin/basin.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/basin_plot.py"
