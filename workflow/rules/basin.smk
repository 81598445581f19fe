# Basins of attraction on the Figure 1(b) data and the measured cone of Theorem 3 (beyond the paper; config `basin`).
# Normalized GD runs with the authors' settings (synthetic.fig1); runs are labelled with the census's rule.

BASIN_TABLES = {
    "basin": results_path("tables/basin.csv"),
    "cone": results_path("tables/basin_cone.csv"),
    "paths": results_path("tables/basin_paths.csv"),
}
BASIN_FIGURE = expand(results_path("figures/basin.{ext}"), ext=["pdf", "png"])


rule basin_tables:
    """GD from every start of the grid and of the arcs of C_{mu,R}(p_mm); Theorem 3's constants per radius."""
    output:
        basin=report(
            BASIN_TABLES["basin"],
            caption="../report/basin.rst",
            category="6 Beyond the paper",
            subcategory="Tables",
            labels={"figure": "Basins: one row per start", "type": "table"},
        ),
        cone=report(
            BASIN_TABLES["cone"],
            caption="../report/basin.rst",
            category="6 Beyond the paper",
            subcategory="Tables",
            labels={"figure": "Basins: the cone of Theorem 3", "type": "table"},
        ),
        paths=BASIN_TABLES["paths"],
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
        **BASIN_TABLES,
        tokens=results_path("tables/fig1b_tokens.csv"),
        directions=results_path("runs/fig1b/directions.csv"),
    output:
        pdf=BASIN_FIGURE[0],
        png=report(
            BASIN_FIGURE[1],
            caption="../report/basin.rst",
            category="6 Beyond the paper",
            subcategory=registry.panel("basin").figure_label,
            labels={"figure": registry.panel("basin").label, "type": "figure"},
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


rule basin:
    input:
        BASIN_FIGURE,
        BASIN_TABLES.values(),


ALL_TARGETS += BASIN_FIGURE + list(BASIN_TABLES.values())
