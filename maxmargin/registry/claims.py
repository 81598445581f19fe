"""The claims table (workflow/rules/claims.smk): every quantitative claim of the paper next to the value measured."""

from __future__ import annotations

from maxmargin.registry.columns import text
from maxmargin.registry.types import Table

# holds / differs: the measurement agrees with the paper or not; inconclusive: a census proportion's interval
# contains the paper's threshold; not run: a table the claim reads is missing (maxmargin.claims.base).
VERDICTS: tuple[str, ...] = ("holds", "differs", "inconclusive", "not run")

TABLES: tuple[Table, ...] = (
    Table(
        "claims",
        "claims",
        (
            text("claim_id"),
            text("claim"),
            text("source"),
            text("paper_value", nullable=True),
            text("measured", nullable=True),
            text("verdict", VERDICTS),
            text("note", nullable=True),
        ),
        "claims_table",
        extensions=("csv", "html", "md", "json"),  # json: the captions' sentences (registry.RUN_SENTENCES_FILE)
        figure="claims",
        label="Claims table",
        caption="Every quantitative claim of the paper the pipeline can test, next to the value measured from the "
        "pipeline's own tables (never typed in): ``holds`` when the measurement agrees, ``differs`` (with the likely "
        "reason in ``note``) when it does not, ``inconclusive`` when a census proportion's Wilson interval at "
        "confidence {census[confidence]:g} contains the paper's threshold (this many trials can neither confirm nor "
        "refute it), ``not run`` when its table is missing.",
    ),
)
