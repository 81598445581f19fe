"""What every claim is: the paper's words, where they are made, the value stated, and a measurement.

Verdicts (:data:`VERDICTS`): ``holds`` and ``differs`` say whether the measurement agrees with the paper;
a claim about a statistic of a sample (the census's random trials; a ViT's test images, heads and null draws)
compares its interval with the threshold (:func:`interval_verdict`): a proportion's Wilson interval, a mean's or a
median's percentile bootstrap interval (:func:`bootstrap_interval`; ``census.bootstrap`` and ``census.confidence``,
``vit.guard.bootstrap`` and ``vit.guard.confidence``). ``holds`` when the whole interval is on the paper's side,
``differs`` when it is all on the other side, and ``inconclusive`` when it contains the threshold, i.e. this sample
can neither confirm nor refute the claim. ``not run``: a table is
missing. The note of a claim that does not hold starts with the reason the measurement gives (:func:`note_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
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


_BOOTSTRAP_CHUNK = 500  # resamples drawn at once: bounds memory at 500 x the sample's size


def bootstrap_interval(
    values: np.ndarray, statistic: str, *, resamples: int, seed: int, confidence: float
) -> tuple[float, float]:
    """Percentile bootstrap interval of the ``statistic`` (``mean`` or ``median``) of a sample.

    ``resamples`` samples of the same size, drawn with replacement from ``default_rng(seed)``; the interval is the
    (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of their statistics (Efron and Tibshirani, *An
    Introduction to the Bootstrap*, 1993, Section 13.3). A sample of one value gives that value twice.
    """
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    stat = getattr(np, statistic)
    draws = []
    for start in range(0, resamples, _BOOTSTRAP_CHUNK):
        size = min(_BOOTSTRAP_CHUNK, resamples - start)
        draws.append(stat(x[rng.integers(0, x.size, size=(size, x.size))], axis=1))
    low, high = np.quantile(np.concatenate(draws), [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


@dataclass(frozen=True)
class Judged:
    """A statistic of a sample, its interval and the verdict of the interval against the paper's threshold."""

    estimate: float
    low: float
    high: float
    verdict: str


def judge_statistic(values: np.ndarray, statistic: str, threshold: float, *, below: bool, cfg: Config) -> Judged:
    """The verdict on "the ``statistic`` of the trials is below ``threshold``" (``below``) or "above it", from its
    bootstrap interval at ``census.confidence`` (``census.bootstrap``: resamples, seed) by :func:`interval_verdict`."""
    low, high = bootstrap_interval(
        values, statistic, **cfg["census"]["bootstrap"], confidence=cfg["census"]["confidence"]
    )
    estimate = float(getattr(np, statistic)(np.asarray(values, dtype=float)))
    return Judged(estimate, low, high, interval_verdict(low, high, threshold, below=below))


def bootstrap_text(cfg: Config) -> str:
    """How a bootstrap interval was made, in the words of the config that ran."""
    bootstrap = cfg["census"]["bootstrap"]
    return (
        f"{100 * cfg['census']['confidence']:g}% percentile bootstrap interval in brackets ("
        f"{bootstrap['resamples']} resamples, seed {bootstrap['seed']}: census.bootstrap)"
    )


def note_of(verdict: str, why: str, rule: str) -> str:
    """A claim's note: its ``rule`` (when it holds), preceded, when it does not hold, by ``verdict: why``, the
    reason the measurement gives ("inconclusive: one trial at 0.794 decides it")."""
    if verdict in ("holds", "not run"):
        return rule
    return f"{verdict}: {why}" + (f"; {rule}" if rule else "")


def tables_only(measure: Callable[[Tables], Measurement]) -> Callable[[Tables, Config], Measurement]:
    """A measurement that reads no config."""
    return lambda t, _cfg: measure(t)
