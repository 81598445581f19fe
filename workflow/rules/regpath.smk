# Regularization paths (eq. (2), Theorem 1; Theorems 5 and 6). Lemma 1 has its own rule file (lemma1.smk).
# Tables and figure: maxmargin/registry/regpath.py; the plot: rule plot_regpath (plots.smk).


rule regpath_instance:
    """Solve one instance's regularization path on the R grid (multi-start, every solution KKT-checked)."""
    input:
        unpack(current("regpath_instance")),
    output:
        path=table_path("regpath_run"),
        compare=table_path("regpath_compare_run"),
        sidecars=[
            table_outputs(name)[-1] for name in ("regpath_run", "regpath_compare_run")
        ],
    log:
        results_path("logs/regpath_instance/{regpath_instance}.log"),
    benchmark:
        results_path("benchmarks/regpath_instance/{regpath_instance}.tsv")
    wildcard_constraints:
        regpath_instance="|".join(registry.REGPATH_INSTANCES),
    conda:
        "../envs/torch.yaml"
    params:
        reads=reads("regpath_instance"),
        code=job_code("regpath_instance"),
    script:
        "../../scripts/regpath_path.py"


rule regpath_table:
    """Gather the regularization paths of every instance into one table."""
    input:
        unpack(current("regpath_table")),
        path=[
            results_path(p)
            for p in derived.table_paths(registry.table("regpath_run"), config)
        ],
        compare=[
            results_path(p)
            for p in derived.table_paths(registry.table("regpath_compare_run"), config)
        ],
    output:
        path=report(table_path("regpath"), **table_report("regpath")),
        compare=report(table_path("regpath_compare"), **table_report("regpath_compare")),
        sidecars=[table_outputs(name)[-1] for name in ("regpath", "regpath_compare")],
    log:
        results_path("logs/regpath_table/regpath.log"),
    benchmark:
        results_path("benchmarks/regpath_table/regpath.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("regpath_table"),
        code=job_code("regpath_table"),
    script:
        "../../scripts/regpath_table.py"
