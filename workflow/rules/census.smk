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

# Keyword arguments of maxmargin.experiments.census.CensusSettings: the census block less the per-d, plot and
# study settings.
CENSUS_SETTINGS = {
    k: v
    for k, v in CENSUS.items()
    if k not in ("dims", "histogram", "budget", "grid", "confidence")
}

# Figure panel -> the table it draws. Panels, figure targets and report labels: the figure registry.
CENSUS_PANELS = {
    "fig9a": "census_summary",
    "fig9b": "fig9b",
    "fig10": "fig9b",
    "census_budget": "census_budget",
    "census_grid": "census_grid",
}
CENSUS_FIGURES = registry.figures_of("census")


wildcard_constraints:
    census_panel="|".join(CENSUS_PANELS),


# Figure target -> its panels' files.
CENSUS_FIGURE_FILES = {
    figure: expand(
        results_path("figures/{panel}.{ext}"), panel=panels, ext=["pdf", "png"]
    )
    for figure, panels in CENSUS_FIGURES.items()
}


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

# The grid is its own target (minutes of compute); the budget study feeds a claim, so it is part of `all`.
ALL_TARGETS += (
    CENSUS_FIGURE_FILES["fig9"]
    + CENSUS_FIGURE_FILES["fig10"]
    + CENSUS_FIGURE_FILES["census_budget"]
    + [
        results_path("tables/census_trials.csv"),
        results_path("tables/census_summary.csv"),
        results_path("tables/fig9b.csv"),
        results_path("tables/census_budget.csv"),
        results_path("runs/census_budget/trials.csv"),
    ]
    + expand(results_path("runs/census/d{d}.csv"), d=CENSUS_DIMS)
    + CENSUS_BUDGET_RUNS
)


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
        settings=CENSUS_SETTINGS,
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
        settings=lambda wildcards: {**CENSUS_SETTINGS, "n_iter": int(wildcards.n_iter)},
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
        settings=lambda wildcards: {
            **CENSUS_SETTINGS,
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
        trials=report(
            results_path("tables/census_trials.csv"),
            caption="../report/census_trials.rst",
            category="3 Census (Figures 9-10)",
            subcategory="Tables",
            labels={"figure": "census trials", "type": "table"},
        ),
        summary=report(
            results_path("tables/census_summary.csv"),
            caption="../report/census_summary.rst",
            category="3 Census (Figures 9-10)",
            subcategory="Tables",
            labels={"figure": "census summary", "type": "table"},
        ),
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
        summary=report(
            results_path("tables/census_budget.csv"),
            caption="../report/census_summary.rst",
            category="3 Census (Figures 9-10)",
            subcategory="Tables",
            labels={"figure": "census budget", "type": "table"},
        ),
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
        summary=report(
            results_path("tables/census_grid.csv"),
            caption="../report/census_summary.rst",
            category="3 Census (Figures 9-10)",
            subcategory="Tables",
            labels={"figure": "census grid", "type": "table"},
        ),
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
        report(
            results_path("tables/fig9b.csv"),
            caption="../report/census_summary.rst",
            category="3 Census (Figures 9-10)",
            subcategory="Tables",
            labels={"figure": "Figure 9(b), 10", "type": "table"},
        ),
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
    """Figure 9(a), 9(b), 10, the budget study or the phase diagram, from its census table."""
    input:
        lambda wildcards: results_path(
            f"tables/{CENSUS_PANELS[wildcards.census_panel]}.csv"
        ),
    output:
        pdf=results_path("figures/{census_panel}.pdf"),
        png=report(
            results_path("figures/{census_panel}.png"),
            caption="../report/census.rst",
            category="3 Census (Figures 9-10)",
            subcategory=lambda wildcards: registry.panel(
                wildcards.census_panel
            ).figure_label,
            labels=lambda wildcards: {
                "figure": registry.panel(wildcards.census_panel).label,
                "type": "figure",
            },
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


rule fig9:
    input:
        CENSUS_FIGURE_FILES["fig9"],


rule fig10:
    input:
        CENSUS_FIGURE_FILES["fig10"],


rule census_budget:
    input:
        CENSUS_FIGURE_FILES["census_budget"],
        results_path("tables/census_budget.csv"),


rule census_grid:
    input:
        CENSUS_FIGURE_FILES["census_grid"],
        results_path("tables/census_grid.csv"),
