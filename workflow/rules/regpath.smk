# Regularization paths (eq. (2), Theorem 1; Theorems 5 and 6). Lemma 1 has its own rule file (lemma1.smk).

from maxmargin.experiments.regpath import REGPATH_INSTANCES, regpath_table_settings


wildcard_constraints:
    regpath_instance="|".join(REGPATH_INSTANCES),


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
        settings=lambda wildcards: regpath_table_settings(
            config["regpath"], wildcards.regpath_instance
        ),
    script:
        "../../scripts/regpath_path.py"


rule regpath_table:
    """Gather the regularization paths of every instance into one table."""
    input:
        path=expand(
            results_path("runs/regpath/{regpath_instance}.csv"),
            regpath_instance=config["regpath"]["instances"],
        ),
        compare=expand(
            results_path("runs/regpath/{regpath_instance}_compare.csv"),
            regpath_instance=config["regpath"]["instances"],
        ),
    output:
        path=report(
            results_path("tables/regpath.csv"),
            caption="../report/regpath.rst",
            category="4 Regularization paths and Lemma 1",
            subcategory="Tables",
            labels={"figure": "Regularization paths", "type": "table"},
        ),
        compare=report(
            results_path("tables/regpath_compare.csv"),
            caption="../report/regpath.rst",
            category="4 Regularization paths and Lemma 1",
            subcategory="Tables",
            labels={
                "figure": "Regularization paths: GD and local optima",
                "type": "table",
            },
        ),
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
        path=results_path("tables/regpath.csv"),
        compare=results_path("tables/regpath_compare.csv"),
    output:
        pdf=results_path("figures/regpath.pdf"),
        png=report(
            results_path("figures/regpath.png"),
            caption="../report/regpath.rst",
            category="4 Regularization paths and Lemma 1",
            subcategory="Regularization paths",
            labels={"figure": "Regularization paths", "type": "figure"},
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


rule regpath:
    input:
        results_path("figures/regpath.pdf"),
        results_path("figures/regpath.png"),
        results_path("tables/regpath.csv"),
        results_path("tables/regpath_compare.csv"),


ALL_TARGETS += [
    results_path("figures/regpath.pdf"),
    results_path("figures/regpath.png"),
    results_path("tables/regpath.csv"),
    results_path("tables/regpath_compare.csv"),
] + expand(
    results_path("runs/regpath/{regpath_instance}{suffix}.csv"),
    regpath_instance=config["regpath"]["instances"],
    suffix=["", "_compare"],
)
