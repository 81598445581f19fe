import yaml

# The claims table (every quantitative claim of the paper next to the measured value), the README gallery and the
# generated pages of docs/results/.

# Every table a claim reads (the registry says which: maxmargin/registry/, Table.claims), but those of on-demand
# targets (registry.ON_DEMAND) that the run does not ask for: of the decisive experiment's, the parts of
# vit.decisive.parts (DOCS_DECISIVE, vit.smk); the claims of the others are "not run".
CLAIM_TABLES = {
    name: table_path(name)
    for name in dict.fromkeys(
        t for needs in derived.claim_tables().values() for t in needs
    )
    if name not in derived.on_demand_only() or name in DOCS_DECISIVE
}

# The README gallery: every panel of the default run (maxmargin/registry/).
GALLERY = list(registry.GALLERY)

# The paper-scale training settings, which the claims page quotes where they depart from the paper.
PAPER_CONFIG = Path(workflow.basedir) / "workflow/config/paper.yaml"
PAPER_TRAIN = yaml.safe_load(PAPER_CONFIG.read_text())["vit"]["train"]


rule claims_table:
    """Measure every claim of the paper from the pipeline's own tables."""
    input:
        unpack(current("claims_table")),
        **CLAIM_TABLES,
    output:
        csv=report(
            table_path("claims", "csv"),
            **(
                table_report("claims")
                | {"labels": {"figure": "Claims table (CSV)", "type": "table"}}
            ),
        ),
        html=report(table_path("claims", "html"), **table_report("claims")),
        md=table_path("claims", "md"),
        sentences=table_path("claims", "json"),  # the report captions' {run[...]} fields
        sidecar=table_outputs("claims")[-1],
    log:
        results_path("logs/claims_table/claims.log"),
    benchmark:
        results_path("benchmarks/claims_table/claims.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("claims_table"),  # the keys the claims read: their notes quote the settings that ran
        code=job_code("claims_table"),
    script:
        "../../scripts/claims_table.py"


rule gallery_thumbnail:
    """A small copy of a figure for the README gallery (docs/gallery/, committed)."""
    input:
        results_path("figures/{figure}.png"),
    output:
        "docs/gallery/{figure}.png",
    log:
        results_path("logs/gallery_thumbnail/{figure}.log"),
    benchmark:
        results_path("benchmarks/gallery_thumbnail/{figure}.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        scale=registry.GALLERY_SCALE,
        code=job_code("gallery_thumbnail"),
    script:
        "../../scripts/gallery_thumbnail.py"


rule docs_claims:
    """The claims table of the default run for the docs (docs/results/claims.md, committed): numbers, not prose."""
    input:
        table=table_path("claims", "md"),
        paper=PAPER_CONFIG,  # the paper-scale settings a deviation from the paper quotes
    output:
        "docs/results/claims.md",
    log:
        results_path("logs/docs_claims/claims.log"),
    benchmark:
        results_path("benchmarks/docs_claims/claims.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        paper_train=PAPER_TRAIN,
        code=job_code("docs_claims"),
    script:
        "../../scripts/docs_claims.py"


rule docs_tables:
    """The default run's tables the docs quote, for the docs (docs/results/default/, committed): tools/run_docs.py
    writes the numbers of docs/figures.md, docs/census.md and docs/regpath.md from them.
    """
    input:
        **{name: table_path(name) for name in registry.DOCS_TABLES},
    output:
        [f"docs/results/default/{name}.csv" for name in registry.DOCS_TABLES],
    log:
        results_path("logs/docs_tables/docs_tables.log"),
    benchmark:
        results_path("benchmarks/docs_tables/docs_tables.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        code=job_code("docs_tables"),
    script:
        "../../scripts/docs_tables.py"


rule gallery:
    input:
        expand("docs/gallery/{figure}.png", figure=GALLERY),
        "docs/results/claims.md",
        [f"docs/results/default/{name}.csv" for name in registry.DOCS_TABLES],
        f"docs/results/{config['vit']['docs']}.md",  # the default run's ViT: Figures 6-7, metrics, claims
    localrule: True
