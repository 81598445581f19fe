# Lemma 1: GD on the key-query matrix W (autograd) against GD on p (the config's `lemma1` block).


rule lemma1_table:
    """Lemma 1: GD on W (autograd) and GD on p from W(0) = u p(0)^T / ||u||^2 stay on W(t) = u p(t)^T / ||u||^2."""
    input:
        unpack(current("lemma1_table")),
    output:
        report(table_path("lemma1"), **table_report("lemma1")),
        table_outputs("lemma1")[-1],
    log:
        results_path("logs/lemma1_table/lemma1.log"),
    benchmark:
        results_path("benchmarks/lemma1_table/lemma1.tsv")
    conda:
        "../envs/torch.yaml"
    params:
        reads=reads("lemma1_table"),
        code=job_code("lemma1_table"),
    script:
        "../../scripts/lemma1_table.py"
