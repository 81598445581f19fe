"""The claim of Lemma 1, read from lemma1.csv."""

from __future__ import annotations

from maxmargin.claims.base import Claim, Measurement, Tables, note_of, tables_only, verdict_of
from maxmargin.experiments.lemma1 import DEVIATION_COLUMN

# "Exact" in floating point: max_t ||W(t) - u p(t)^T/||u||^2||_F below this.
EXACT = 1e-9


def _lemma1(t: Tables) -> Measurement:
    """Lemma 1: GD on W stays on W(t) = u p(t)^T / ||u||^2 of GD on p, to rounding (:data:`EXACT`)."""
    table = t["lemma1"]
    worst = table.loc[table[DEVIATION_COLUMN].idxmax()]
    dev = float(worst[DEVIATION_COLUMN])
    verdict = verdict_of(dev < EXACT)
    why = f"on the {worst['instance']} instance W(t) leaves u p(t)^T/||u||^2 by {dev:.1e}, above rounding"
    return (
        f"max_t ||W(t) - u p(t)^T/||u||^2||_F = {dev:.1e}",
        verdict,
        note_of(verdict, why, f"holds when the deviation is below {EXACT:g} on every instance"),
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "lemma1",
        "GD on W and GD on p map one-to-one: W(t) = u p(t)^T / ||u||^2",
        "Lemma 1",
        "exact",
        tables_only(_lemma1),
    ),
)
