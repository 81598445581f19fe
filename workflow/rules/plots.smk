# The panels drawn from registered tables (census, regularization paths, ViT, basins): one rule per family, each
# derived from the registry (maxmargin/registry/: Panel.tables, .files, .options), one script for all. One rule per
# family keeps each at one level of the DAG (one node of the report's rule graph). Synthetic panels: synthetic.smk.
# A job's `code` param hashes what its panel is drawn by: its registry entry, the shared drawing code and its own
# drawing function with what that names (maxmargin/drawing_code.py): an edit of one panel redraws that panel only.
from maxmargin.drawing_code import drawing_code

TABLE_FAMILIES = list(
    dict.fromkeys(p.family for p in registry.PANELS if p.family != "synthetic")
)


for family in TABLE_FAMILIES:

    rule:
        name:
            f"plot_{family}"
        input:
            panel_input,
        output:
            pdf=results_path("figures/{panel}.pdf"),
            png=report(
                results_path("figures/{panel}.png"),
                **panel_report(
                    f"plot_{family}", [p.name for p in registry.panels_of(family)]
                ),
            ),
        log:
            results_path(f"logs/plot_{family}/{{panel}}.log"),
        benchmark:
            results_path(f"benchmarks/plot_{family}/{{panel}}.tsv")
        wildcard_constraints:
            panel="|".join(p.name for p in registry.panels_of(family)),
        localrule: True
        conda:
            "../envs/core.yaml"
        params:
            reads=reads(f"plot_{family}"),
            code=lambda wildcards: drawing_code(wildcards.panel),
        script:
            "../../scripts/plot_panel.py"
