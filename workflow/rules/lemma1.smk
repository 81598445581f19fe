# Lemma 1: GD on the key-query matrix W (autograd) against GD on p (the config's `lemma1` block).


rule lemma1_table:
    """Lemma 1: GD on W (autograd) and GD on p from W(0) = u p(0)^T / ||u||^2 stay on W(t) = u p(t)^T / ||u||^2."""
    output:
        report(
            results_path("tables/lemma1.csv"),
            caption="../report/lemma1.rst",
            category="4 Regularization paths and Lemma 1",
            subcategory="Tables",
            labels={"figure": "Lemma 1", "type": "table"},
        ),
    log:
        results_path("logs/lemma1_table/lemma1.log"),
    benchmark:
        results_path("benchmarks/lemma1_table/lemma1.tsv")
    conda:
        "../envs/torch.yaml"
    params:
        settings=config["lemma1"],
    script:
        "../../scripts/lemma1_table.py"


rule lemma1:
    input:
        results_path("tables/lemma1.csv"),


ALL_TARGETS += [results_path("tables/lemma1.csv")]
