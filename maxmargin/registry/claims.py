"""The claims table (workflow/rules/claims.smk): every quantitative claim of the paper next to the value measured."""

from __future__ import annotations

from maxmargin.registry.columns import described, text
from maxmargin.registry.types import Table

# What each verdict means (decided in maxmargin.claims.base): the claims table's ``verdict`` column's description
# and the list on the report's landing page (:func:`maxmargin.registry.derived.landing_page`) are written from it.
VERDICT_MEANINGS: dict[str, str] = {
    "holds": "the measurement agrees with the paper",
    "differs": "it does not; the ``note`` column gives the likely reason",
    "inconclusive": "a statistic of a sample (the census's random trials, a ViT's test images, heads and null draws) "
    "whose interval (a proportion's Wilson interval, a mean's or a median's bootstrap interval, at "
    "``census.confidence`` or ``vit.guard.confidence``) or measured tolerance contains the threshold: this sample can "
    "neither confirm nor refute the claim (a larger one narrows the interval); the ``note`` column says what decides "
    "it",
    "not run": "a table the claim needs was not made in this run",
}
VERDICTS: tuple[str, ...] = tuple(VERDICT_MEANINGS)

TABLES: tuple[Table, ...] = (
    Table(
        name="claims",
        family="claims",
        columns=(
            described(text("claim_id"), "the claim's name (its measurement: ``maxmargin/claims/``)"),
            described(text("claim"), "what the paper claims"),
            described(text("source"), "where the paper claims it (section, figure, theorem)"),
            described(text("paper_value", nullable=True), "the value the paper states (empty: none)"),
            described(text("measured", nullable=True), "the value measured from the pipeline's own tables"),
            described(text("verdict", VERDICTS), "; ".join(f"``{v}``: {m}" for v, m in VERDICT_MEANINGS.items())),
            described(text("note", nullable=True), "the settings that ran, and why a measurement differs"),
        ),
        rule="claims_table",
        extensions=("csv", "html", "md", "json"),  # json: the captions' sentences (registry.RUN_SENTENCES_FILE)
        target="claims",
        label="Claims table",
        caption="Every quantitative claim of the paper the pipeline can test, next to the value measured from the "
        "pipeline's own tables (never typed in); the census's proportions are judged by their Wilson intervals, its "
        "means and medians of trials by their bootstrap intervals ({census[bootstrap][resamples]} resamples), at "
        "confidence {census[confidence]:g}.",
    ),
)
