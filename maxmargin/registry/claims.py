"""The claims table (workflow/rules/claims.smk): every quantitative claim of the paper next to the value measured."""

from __future__ import annotations

from maxmargin.registry.columns import described, text
from maxmargin.registry.types import Table

# What each verdict means is the claims table's ``verdict`` column's description (decided in maxmargin.claims.base).
VERDICTS: tuple[str, ...] = ("holds", "differs", "inconclusive", "not run")

TABLES: tuple[Table, ...] = (
    Table(
        "claims",
        "claims",
        (
            described(text("claim_id"), "the claim's name (its measurement: ``maxmargin/claims/``)"),
            described(text("claim"), "what the paper claims"),
            described(text("source"), "where the paper claims it (section, figure, theorem)"),
            described(text("paper_value", nullable=True), "the value the paper states (empty: none)"),
            described(text("measured", nullable=True), "the value measured from the pipeline's own tables"),
            described(
                text("verdict", VERDICTS),
                "holds: the measurement agrees with the paper; differs: it does not (the likely reason in ``note``); "
                "inconclusive: a census proportion's Wilson interval contains the paper's threshold (this many trials "
                "can neither confirm nor refute it); not run: a table the claim reads is missing",
            ),
            described(text("note", nullable=True), "the settings that ran, and why a measurement differs"),
        ),
        "claims_table",
        extensions=("csv", "html", "md", "json"),  # json: the captions' sentences (registry.RUN_SENTENCES_FILE)
        figure="claims",
        label="Claims table",
        caption="Every quantitative claim of the paper the pipeline can test, next to the value measured from the "
        "pipeline's own tables (never typed in); the census's proportions are judged by their Wilson intervals at "
        "confidence {census[confidence]:g}.",
    ),
)
