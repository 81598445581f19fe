# Regularization paths (eq. (2), Theorem 1; Theorems 5 and 6). Lemma 1 has its own rule file (lemma1.smk).

REGPATH = config["regpath"]


wildcard_constraints:
    regpath_instance="|".join(registry.REGPATH_INSTANCES),


REGPATH_RUNS = {
    "path": expand(
        results_path("runs/regpath/{regpath_instance}.csv"),
        regpath_instance=REGPATH["instances"],
    ),
    "compare": expand(
        results_path("runs/regpath/{regpath_instance}_compare.csv"),
        regpath_instance=REGPATH["instances"],
    ),
}
ALL_TARGETS.extend(REGPATH_RUNS["path"])
ALL_TARGETS.extend(REGPATH_RUNS["compare"])


rule regpath_instance:
    """Solve one instance's regularization path on the R grid (multi-start, every solution KKT-checked)."""
    output:
        path=results_path("runs/regpath/{regpath_instance}.csv"),
        compare=results_path("runs/regpath/{regpath_instance}_compare.csv"),
    log:
        results_path("logs/regpath_instance/{regpath_instance}.log"),
    benchmark:
        results_path("benchmarks/regpath_instance/{regpath_instance}.tsv")
    conda:
        "../envs/torch.yaml"
    params:
        settings=regpath_settings,
    script:
        "../../scripts/regpath_path.py"


rule regpath_table:
    """Gather the regularization paths of every instance into one table."""
    input:
        **REGPATH_RUNS,
    output:
        path=report(table_path("regpath"), **table_report("regpath")),
        compare=report(table_path("regpath_compare"), **table_report("regpath_compare")),
    log:
        results_path("logs/regpath_table/regpath.log"),
    benchmark:
        results_path("benchmarks/regpath_table/regpath.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/regpath_table.py"


rule plot_regpath:
    """Draw the cosine of each normalized path with each max-margin direction against R."""
    input:
        path=table_path("regpath"),
        compare=table_path("regpath_compare"),
    output:
        pdf=panel_files("regpath")[0],
        png=report(
            panel_files("regpath")[1],
            **panel_report("regpath", "../report/regpath.rst", panel="regpath"),
        ),
    log:
        results_path("logs/plot_regpath/regpath.log"),
    benchmark:
        results_path("benchmarks/plot_regpath/regpath.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/regpath_plot.py"
