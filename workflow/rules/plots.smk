# The panels drawn from registered tables (census, regularization paths, ViT, basins): one rule per family, each
# derived from the registry (maxmargin/registry/: Panel.tables, .files, .options), one script for all. One rule per
# family keeps each at one level of the DAG (one node of the report's rule graph). Synthetic panels: synthetic.smk.
# A rule's `code` param hashes the shared drawing code and its family's module only: a new census panel redraws the
# census panels, no others (maxmargin/files.py: family_drawing_code).
from maxmargin.files import family_drawing_code

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
            code=family_drawing_code(family),
        script:
            "../../scripts/plot_panel.py"
