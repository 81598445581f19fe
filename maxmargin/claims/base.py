"""What every claim is: the paper's words, where they are made, the value stated, and a measurement.

Verdicts (:data:`VERDICTS`): ``holds`` and ``differs`` say whether the measurement agrees with the paper;
a claim about a proportion measured on random trials (the census) compares the proportion's Wilson interval
(at ``census.confidence``) with the paper's threshold: ``holds`` when the whole interval is on the paper's side,
``differs`` when it is all on the other side, and ``inconclusive`` when it contains the threshold, i.e. this many
trials can neither confirm nor refute the claim. ``not run``: a table is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from maxmargin import registry

Tables = Mapping[str, pd.DataFrame]
Config = Mapping[str, Any]  # the pipeline's config: claim notes quote the settings that were run
Measurement = tuple[str, str, str]  # measured, verdict, note
COLUMNS = registry.columns("claims")
VERDICTS = registry.VERDICTS


@dataclass(frozen=True)
class Claim:
    """One claim of the paper; the tables it reads are declared in the registry (``Table.claims``)."""

    claim_id: str
    claim: str
    source: str
    paper_value: str
    measure: Callable[[Tables, Config], Measurement]


def verdict_of(ok: bool) -> str:
    """``holds`` or ``differs``."""
    return "holds" if ok else "differs"


def interval_verdict(low: float, high: float, threshold: float, *, below: bool) -> str:
    """Verdict on "the proportion is below ``threshold``" (``below``) or "above it", from its confidence interval.

    holds: the interval [low, high] lies entirely on the claimed side; differs: entirely on the other side;
    inconclusive: it contains the threshold.
    """
    if below:
        return "holds" if high < threshold else "differs" if low >= threshold else "inconclusive"
    return "holds" if low > threshold else "differs" if high <= threshold else "inconclusive"


def interval_text(low: float, high: float, digits: int = 4) -> str:
    """A confidence interval as text."""
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def tables_only(measure: Callable[[Tables], Measurement]) -> Callable[[Tables, Config], Measurement]:
    """A measurement that reads no config."""
    return lambda t, _cfg: measure(t)
