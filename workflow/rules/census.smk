# Convergence census (Figures 9 and 10, Appendix E): random trials scattered over d, gathered, then plotted.

CENSUS = config["census"]
CENSUS_DIMS = [int(d) for d in CENSUS["dims"]]
CENSUS_HIST_DIMS = [int(d) for d in CENSUS["histogram"]["dims"]]
if not set(CENSUS_HIST_DIMS) <= set(CENSUS_DIMS):
    raise ValueError(
        f"census.histogram.dims {CENSUS_HIST_DIMS} must be a subset of census.dims {CENSUS_DIMS}"
    )

# Keyword arguments of maxmargin.experiments.census.CensusSettings: the census block less the per-d and plot settings.
CENSUS_SETTINGS = {k: v for k, v in CENSUS.items() if k not in ("dims", "histogram")}

# Figure target -> its panels' files.
CENSUS_FIGURES = {
    figure: expand(
        results_path("figures/{panel}.{ext}"), panel=panels, ext=["pdf", "png"]
    )
    for figure, panels in {"fig9": ["fig9a", "fig9b"], "fig10": ["fig10"]}.items()
}

ALL_TARGETS += (
    [f for files in CENSUS_FIGURES.values() for f in files]
    + [
        results_path("tables/census_trials.csv"),
        results_path("tables/census_summary.csv"),
        results_path("tables/fig9b.csv"),
    ]
    + expand(results_path("runs/census/d{d}.csv"), d=CENSUS_DIMS)
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


rule census_gather:
    """One table of every trial, and the per-d summary behind Figure 9(a) and the paper's claims."""
    input:
        expand(results_path("runs/census/d{d}.csv"), d=CENSUS_DIMS),
    output:
        trials=report(
            results_path("tables/census_trials.csv"),
            caption="../report/census_trials.rst",
            category="Convergence census",
        ),
        summary=report(
            results_path("tables/census_summary.csv"),
            caption="../report/census_summary.rst",
            category="Convergence census",
        ),
    log:
        results_path("logs/census_gather/census.log"),
    benchmark:
        results_path("benchmarks/census_gather/census.tsv")
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/census_gather.py"


rule census_histogram:
    """Histogram and cumulative distribution of the minimal score gap (Figures 9(b) and 10)."""
    input:
        results_path("tables/census_trials.csv"),
    output:
        results_path("tables/fig9b.csv"),
    log:
        results_path("logs/census_histogram/fig9b.log"),
    benchmark:
        results_path("benchmarks/census_histogram/fig9b.tsv")
    conda:
        "../envs/core.yaml"
    params:
        dims=CENSUS_HIST_DIMS,
        bin_width=CENSUS["histogram"]["bin_width"],
    script:
        "../../scripts/census_histogram.py"


rule plot_fig9a:
    """Figure 9(a) from the census summary."""
    input:
        results_path("tables/census_summary.csv"),
    output:
        pdf=results_path("figures/fig9a.pdf"),
        png=report(
            results_path("figures/fig9a.png"),
            caption="../report/fig9a.rst",
            category="Convergence census",
        ),
    log:
        results_path("logs/plot_fig9a/fig9a.log"),
    benchmark:
        results_path("benchmarks/plot_fig9a/fig9a.tsv")
    conda:
        "../envs/core.yaml"
    params:
        panel="fig9a",
    script:
        "../../scripts/census_plot.py"


rule plot_fig9b:
    """Figure 9(b) from the gap distribution."""
    input:
        results_path("tables/fig9b.csv"),
    output:
        pdf=results_path("figures/fig9b.pdf"),
        png=report(
            results_path("figures/fig9b.png"),
            caption="../report/fig9b.rst",
            category="Convergence census",
        ),
    log:
        results_path("logs/plot_fig9b/fig9b.log"),
    benchmark:
        results_path("benchmarks/plot_fig9b/fig9b.tsv")
    conda:
        "../envs/core.yaml"
    params:
        panel="fig9b",
    script:
        "../../scripts/census_plot.py"


rule plot_fig10:
    """Figure 10 from the gap distribution."""
    input:
        results_path("tables/fig9b.csv"),
    output:
        pdf=results_path("figures/fig10.pdf"),
        png=report(
            results_path("figures/fig10.png"),
            caption="../report/fig10.rst",
            category="Convergence census",
        ),
    log:
        results_path("logs/plot_fig10/fig10.log"),
    benchmark:
        results_path("benchmarks/plot_fig10/fig10.tsv")
    conda:
        "../envs/core.yaml"
    params:
        panel="fig10",
    script:
        "../../scripts/census_plot.py"


rule fig9:
    input:
        CENSUS_FIGURES["fig9"],


rule fig10:
    input:
        CENSUS_FIGURES["fig10"],
