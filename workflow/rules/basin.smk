# Basins of attraction on the Figure 1(b) data and the measured cone of Theorem 3 (beyond the paper; config `basin`).
# Normalized GD runs with the authors' settings (synthetic.fig1); runs are labelled with the census's rule.
# Figure, tables, report labels and the target: the registry (maxmargin/registry/basin.py); the plot: rule plot_basin
# (plots.smk).


rule basin_tables:
    """GD from every start of the grid and of the arcs of C_{mu,R}(p_mm); Theorem 3's constants per radius."""
    input:
        unpack(current("basin_tables")),
    output:
        basin=table_path("basin"),
        cone=report(table_path("basin_cone"), **table_report("basin_cone")),
        summary=report(table_path("basin_summary"), **table_report("basin_summary")),
        paths=table_path("basin_paths"),
        sidecars=[
            table_outputs(name)[-1]
            for name in ("basin", "basin_cone", "basin_summary", "basin_paths")
        ],
    log:
        results_path("logs/basin_tables/basin.log"),
    benchmark:
        results_path("benchmarks/basin_tables/basin.tsv")
    conda:
        "../envs/core.yaml"
    threads: 2
    params:
        reads=reads("basin_tables"),
        code=job_code("basin_tables"),
    script:
        "../../scripts/basin_tables.py"
