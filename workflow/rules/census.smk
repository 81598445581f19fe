# Convergence census (Figures 9 and 10, Appendix E): random trials scattered over d, gathered, then plotted;
# the iteration-budget study (target census_budget) and the (n, T, d) phase diagram (target census_grid).
# Tables and figures: maxmargin/registry/census.py; the plots: rule plot_census (plots.smk).

CENSUS = config["census"]


rule census_trials:
    """Normalized GD and GMM/LMM classification of every random trial of one dimension d."""
    input:
        unpack(current("census_trials")),
    output:
        table_outputs("census_run"),
    log:
        results_path("logs/census_trials/d{d}.log"),
    benchmark:
        results_path("benchmarks/census_trials/d{d}.tsv")
    wildcard_constraints:
        d="|".join(str(d) for d in CENSUS["dims"]),
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("census_trials"),
        code=job_code("census_trials"),
    script:
        "../../scripts/census_trials.py"


rule census_budget_trials:
    """The census of one small d at one iteration budget n_iter (target census_budget)."""
    input:
        unpack(current("census_budget_trials")),
    output:
        table_outputs("census_budget_run"),
    log:
        results_path("logs/census_budget_trials/d{d}_iter{n_iter}.log"),
    benchmark:
        results_path("benchmarks/census_budget_trials/d{d}_iter{n_iter}.tsv")
    wildcard_constraints:
        d="|".join(str(d) for d in CENSUS["budget"]["dims"]),
        n_iter="|".join(str(k) for k in CENSUS["budget"]["n_iter"]),
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("census_budget_trials"),
        code=job_code("census_budget_trials"),
    script:
        "../../scripts/census_trials.py"


rule census_grid_cell:
    """The census of one (n, T, d) cell of the phase diagram (target census_grid)."""
    input:
        unpack(current("census_grid_cell")),
    output:
        table_outputs("census_grid_run"),
    log:
        results_path("logs/census_grid_cell/n{n}_T{T}_d{d}.log"),
    benchmark:
        results_path("benchmarks/census_grid_cell/n{n}_T{T}_d{d}.tsv")
    wildcard_constraints:
        n="|".join(str(k) for k in CENSUS["grid"]["n"]),
        T="|".join(str(k) for k in CENSUS["grid"]["T"]),
        d="|".join(str(k) for k in CENSUS["grid"]["dims"]),
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("census_grid_cell"),
        code=job_code("census_grid_cell"),
    script:
        "../../scripts/census_trials.py"


rule census_gather:
    """One table of every trial, and the per-d summary (with Wilson intervals) behind Figure 9(a) and the claims."""
    input:
        unpack(current("census_gather")),
        table_files("census_run"),
    output:
        trials=report(table_path("census_trials"), **table_report("census_trials")),
        summary=report(table_path("census_summary"), **table_report("census_summary")),
        sidecars=[
            table_outputs(name)[-1] for name in ("census_trials", "census_summary")
        ],
    log:
        results_path("logs/census_gather/census.log"),
    benchmark:
        results_path("benchmarks/census_gather/census.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        by=["d"],
        reads=reads("census_gather"),
        code=job_code("census_gather"),
    script:
        "../../scripts/census_gather.py"


rule census_budget_gather:
    """The census summary per (d, n_iter) with the number of labels that move with the budget."""
    input:
        unpack(current("census_budget_gather")),
        table_files("census_budget_run"),
    output:
        trials=table_path("census_budget_trials"),
        summary=report(table_path("census_budget"), **table_report("census_budget")),
        sidecars=[
            table_outputs(name)[-1]
            for name in ("census_budget_trials", "census_budget")
        ],
    log:
        results_path("logs/census_budget_gather/census_budget.log"),
    benchmark:
        results_path("benchmarks/census_budget_gather/census_budget.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        by=["d", "n_iter"],
        reads=reads("census_budget_gather"),
        code=job_code("census_budget_gather"),
    script:
        "../../scripts/census_gather.py"


rule census_grid_gather:
    """The census summary per (n, T, d) cell of the phase diagram."""
    input:
        unpack(current("census_grid_gather")),
        table_files("census_grid_run"),
    output:
        trials=table_path("census_grid_trials"),
        summary=report(table_path("census_grid"), **table_report("census_grid")),
        sidecars=[
            table_outputs(name)[-1] for name in ("census_grid_trials", "census_grid")
        ],
    log:
        results_path("logs/census_grid_gather/census_grid.log"),
    benchmark:
        results_path("benchmarks/census_grid_gather/census_grid.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        by=["n", "T", "d"],
        reads=reads("census_grid_gather"),
        code=job_code("census_grid_gather"),
    script:
        "../../scripts/census_gather.py"


rule census_histogram:
    """Histogram and cumulative distribution of the minimal score gap (Figures 9(b) and 10)."""
    input:
        unpack(current("census_histogram")),
        # the runs themselves, not the gathered table: every census plot is then one level of the DAG
        [
            results_path(registry.table("census_run").pattern.format(d=d))
            for d in CENSUS["histogram"]["dims"]
        ],
    output:
        report(table_path("fig9b"), **table_report("fig9b")),
        table_outputs("fig9b")[-1],
    log:
        results_path("logs/census_histogram/fig9b.log"),
    benchmark:
        results_path("benchmarks/census_histogram/fig9b.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("census_histogram"),
        code=job_code("census_histogram"),
    script:
        "../../scripts/census_histogram.py"
