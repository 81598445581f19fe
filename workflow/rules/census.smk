# Convergence census (Figures 9 and 10, Appendix E): random trials scattered over d, gathered, then plotted;
# the iteration-budget study (target census_budget) and the (n, T, d) phase diagram (target census_grid).

CENSUS = config["census"]
CENSUS_DIMS = [int(d) for d in CENSUS["dims"]]
CENSUS_HIST_DIMS = [int(d) for d in CENSUS["histogram"]["dims"]]
if not set(CENSUS_HIST_DIMS) <= set(CENSUS_DIMS):
    raise ValueError(
        f"census.histogram.dims {CENSUS_HIST_DIMS} must be a subset of census.dims {CENSUS_DIMS}"
    )
CENSUS_BUDGET = CENSUS["budget"]
CENSUS_GRID = CENSUS["grid"]

CENSUS_PANELS = [panel.name for panel in registry.panels_of("census")]


wildcard_constraints:
    census_panel="|".join(CENSUS_PANELS),


CENSUS_GRID_CELLS = expand(
    results_path("runs/census_grid/n{n}_T{T}_d{d}.csv"),
    n=CENSUS_GRID["n"],
    T=CENSUS_GRID["T"],
    d=CENSUS_GRID["dims"],
)
CENSUS_BUDGET_RUNS = expand(
    results_path("runs/census_budget/d{d}_iter{n_iter}.csv"),
    d=CENSUS_BUDGET["dims"],
    n_iter=CENSUS_BUDGET["n_iter"],
)

# The figures and tables are registered (common.smk puts them in `all`); here the per-job runs behind them.
ALL_TARGETS += expand(results_path("runs/census/d{d}.csv"), d=CENSUS_DIMS) + [
    results_path("runs/census_budget/trials.csv"),
    *CENSUS_BUDGET_RUNS,
]


rule census_trials:
    """Normalized GD and GMM/LMM classification of every random trial of one dimension d."""
    output:
        results_path("runs/census/d{d}.csv"),
    log:
        results_path("logs/census_trials/d{d}.log"),
    benchmark:
        results_path("benchmarks/census_trials/d{d}.tsv")
    wildcard_constraints:
        d="|".join(str(d) for d in CENSUS_DIMS),
    conda:
        "../envs/core.yaml"
    params:
        census=CENSUS,  # maxmargin.experiments.census.CensusSettings.from_config picks its keys
        changes={},
    script:
        "../../scripts/census_trials.py"


rule census_budget_trials:
    """The census of one small d at one iteration budget n_iter (target census_budget)."""
    output:
        results_path("runs/census_budget/d{d}_iter{n_iter}.csv"),
    log:
        results_path("logs/census_budget_trials/d{d}_iter{n_iter}.log"),
    benchmark:
        results_path("benchmarks/census_budget_trials/d{d}_iter{n_iter}.tsv")
    wildcard_constraints:
        d="|".join(str(d) for d in CENSUS_BUDGET["dims"]),
        n_iter="|".join(str(k) for k in CENSUS_BUDGET["n_iter"]),
    conda:
        "../envs/core.yaml"
    params:
        census=CENSUS,
        changes=lambda wildcards: {"n_iter": int(wildcards.n_iter)},
    script:
        "../../scripts/census_trials.py"


rule census_grid_cell:
    """The census of one (n, T, d) cell of the phase diagram (target census_grid)."""
    output:
        results_path("runs/census_grid/n{n}_T{T}_d{d}.csv"),
    log:
        results_path("logs/census_grid_cell/n{n}_T{T}_d{d}.log"),
    benchmark:
        results_path("benchmarks/census_grid_cell/n{n}_T{T}_d{d}.tsv")
    wildcard_constraints:
        n="|".join(str(k) for k in CENSUS_GRID["n"]),
        T="|".join(str(k) for k in CENSUS_GRID["T"]),
        d="|".join(str(k) for k in CENSUS_GRID["dims"]),
    conda:
        "../envs/core.yaml"
    params:
        census=CENSUS,
        changes=lambda wildcards: {
            "n": int(wildcards.n),
            "T": int(wildcards.T),
            "n_trials": CENSUS_GRID["n_trials"],
        },
    script:
        "../../scripts/census_trials.py"


rule census_gather:
    """One table of every trial, and the per-d summary (with Wilson intervals) behind Figure 9(a) and the claims."""
    input:
        expand(results_path("runs/census/d{d}.csv"), d=CENSUS_DIMS),
    output:
        trials=report(table_path("census_trials"), **table_report("census_trials")),
        summary=report(table_path("census_summary"), **table_report("census_summary")),
    log:
        results_path("logs/census_gather/census.log"),
    benchmark:
        results_path("benchmarks/census_gather/census.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        by=["d"],
        confidence=CENSUS["confidence"],
    script:
        "../../scripts/census_gather.py"


rule census_budget_gather:
    """The census summary per (d, n_iter) with the number of labels that move with the budget."""
    input:
        CENSUS_BUDGET_RUNS,
    output:
        trials=results_path("runs/census_budget/trials.csv"),
        summary=report(table_path("census_budget"), **table_report("census_budget")),
    log:
        results_path("logs/census_budget_gather/census_budget.log"),
    benchmark:
        results_path("benchmarks/census_budget_gather/census_budget.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        by=["d", "n_iter"],
        confidence=CENSUS["confidence"],
    script:
        "../../scripts/census_gather.py"


rule census_grid_gather:
    """The census summary per (n, T, d) cell of the phase diagram."""
    input:
        CENSUS_GRID_CELLS,
    output:
        trials=results_path("runs/census_grid/trials.csv"),
        summary=report(table_path("census_grid"), **table_report("census_grid")),
    log:
        results_path("logs/census_grid_gather/census_grid.log"),
    benchmark:
        results_path("benchmarks/census_grid_gather/census_grid.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        by=["n", "T", "d"],
        confidence=CENSUS["confidence"],
    script:
        "../../scripts/census_gather.py"


rule census_histogram:
    """Histogram and cumulative distribution of the minimal score gap (Figures 9(b) and 10)."""
    input:
        # the runs themselves, not the gathered table: every census plot is then one level of the DAG (one
        # plot_census in the report's rule graph)
        expand(results_path("runs/census/d{d}.csv"), d=CENSUS_HIST_DIMS),
    output:
        report(table_path("fig9b"), **table_report("fig9b")),
    log:
        results_path("logs/census_histogram/fig9b.log"),
    benchmark:
        results_path("benchmarks/census_histogram/fig9b.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        dims=CENSUS_HIST_DIMS,
        bin_width=CENSUS["histogram"]["bin_width"],
    script:
        "../../scripts/census_histogram.py"


rule plot_census:
    """Figure 9(a), 9(b), 10, the budget study or the phase diagram, from its registered tables."""
    input:
        lambda wildcards: [
            table_path(name) for name in registry.panel(wildcards.census_panel).tables
        ],
    output:
        pdf=results_path("figures/{census_panel}.pdf"),
        png=report(
            results_path("figures/{census_panel}.png"),
            **panel_report("census", "../report/census.rst", wildcard="census_panel"),
        ),
    log:
        results_path("logs/plot_census/{census_panel}.log"),
    benchmark:
        results_path("benchmarks/plot_census/{census_panel}.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/census_plot.py"
