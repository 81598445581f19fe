"""The claim of Lemma 1, read from lemma1.csv."""

from __future__ import annotations

from maxmargin.claims.base import Claim, Measurement, Tables, tables_only, verdict_of
from maxmargin.experiments.lemma1 import DEVIATION_COLUMN

# "Exact" in floating point: max_t ||W(t) - u p(t)^T/||u||^2||_F below this.
EXACT = 1e-9


def _lemma1(t: Tables) -> Measurement:
    dev = float(t["lemma1"][DEVIATION_COLUMN].max())
    return (f"max_t ||W(t) - u p(t)^T/||u||^2||_F = {dev:.1e}", verdict_of(dev < EXACT), "")


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "lemma1",
        "GD on W and GD on p map one-to-one: W(t) = u p(t)^T / ||u||^2",
        "Lemma 1",
        "exact",
        tables_only(_lemma1),
    ),
)
