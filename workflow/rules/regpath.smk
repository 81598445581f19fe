# Regularization paths (eq. (2), Theorem 1; Theorems 5 and 6) and the Lemma 1 check (GD on W vs GD on p).

REGPATH_INSTANCES = ["fig1b", "fig3a", "fig3b"]


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
        # The regpath config as keyword arguments of maxmargin.experiments.regpath.regpath_table; the GD runs
        # belong to the Theorem 1 path (Fig 1(b) data) only.
        settings=lambda wildcards: {
            **{
                key: value
                for key, value in config["regpath"].items()
                if key not in ("instances", "lemma1", "gd")
            },
            "gd": (
                config["regpath"]["gd"]
                if wildcards.regpath_instance == "fig1b"
                else None
            ),
        },
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
            category="Tables",
        ),
        compare=report(
            results_path("tables/regpath_compare.csv"),
            caption="../report/regpath.rst",
            category="Tables",
        ),
    log:
        results_path("logs/regpath_table/regpath.log"),
    benchmark:
        results_path("benchmarks/regpath_table/regpath.tsv")
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
            category="Regularization paths",
        ),
    log:
        results_path("logs/plot_regpath/regpath.log"),
    benchmark:
        results_path("benchmarks/plot_regpath/regpath.tsv")
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/regpath_plot.py"


rule lemma1_table:
    """Lemma 1: GD on W (autograd) and GD on p from W(0) = u p(0)^T / ||u||^2 stay on W(t) = u p(t)^T / ||u||^2."""
    output:
        report(
            results_path("tables/lemma1.csv"),
            caption="../report/lemma1.rst",
            category="Tables",
        ),
    log:
        results_path("logs/lemma1_table/lemma1.log"),
    benchmark:
        results_path("benchmarks/lemma1_table/lemma1.tsv")
    conda:
        "../envs/torch.yaml"
    params:
        settings=config["regpath"]["lemma1"],
    script:
        "../../scripts/regpath_lemma1.py"


rule regpath:
    input:
        results_path("figures/regpath.pdf"),
        results_path("figures/regpath.png"),
        results_path("tables/regpath.csv"),
        results_path("tables/regpath_compare.csv"),


rule lemma1:
    input:
        results_path("tables/lemma1.csv"),


ALL_TARGETS += [
    results_path("figures/regpath.pdf"),
    results_path("figures/regpath.png"),
    results_path("tables/regpath.csv"),
    results_path("tables/regpath_compare.csv"),
    results_path("tables/lemma1.csv"),
] + expand(
    results_path("runs/regpath/{regpath_instance}{suffix}.csv"),
    regpath_instance=config["regpath"]["instances"],
    suffix=["", "_compare"],
)
