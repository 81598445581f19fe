"""What every claim is: the paper's words, where they are made, the value stated, and a measurement.

Verdicts (:data:`VERDICTS`): ``holds`` and ``differs`` say whether the measurement agrees with the paper;
a claim about a statistic of a sample (the census's random trials; a ViT's test images, heads and null draws)
compares its interval with the threshold (:func:`interval_verdict`): a proportion's Wilson interval, a mean's or a
median's percentile bootstrap interval (:func:`bootstrap_interval`; ``census.bootstrap`` and ``census.confidence``,
``vit.guard.bootstrap`` and ``vit.guard.confidence``), or, for a mean over fewer than :data:`MIN_BOOTSTRAP_UNITS`
units (a ViT's heads), Student's t-interval (:func:`mean_interval`). ``holds`` when the whole interval is on the
paper's side, ``differs`` when it is all on the other side, and ``inconclusive`` when it contains the threshold, i.e.
this sample can neither confirm nor refute the claim. ``not run``: a table is missing. The note of a claim that
does not hold starts with the reason the measurement gives (:func:`note_of`).
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


def small(x: float, places: int = 3) -> str:
    """``x`` with ``places`` decimals, or to two significant digits where those decimals would print it as zero
    (a training loss of 2e-05 is not "0.000")."""
    return f"{x:.{places}f}" if x == 0 or abs(x) >= 10**-places or not np.isfinite(x) else f"{x:.2g}"


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


# A percentile bootstrap of a mean over n units draws from at most C(2n - 1, n) distinct resamples (10 at n = 3, 35 at
# n = 4), and its interval is the plug-in sd times z: narrower than Student's t-interval by t_{n-1} / z * sqrt(n / (n -
# 1)), x2.7 at n = 3, x1.2 at n = 10. Below this many units the interval of a mean is Student's t.
MIN_BOOTSTRAP_UNITS = 10


def t_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """Student's t-interval of the mean of a sample: mean -+ t_{n-1, (1 + confidence) / 2} s / sqrt(n), s the sample
    standard deviation (exact for normal values, Student 1908). NaN bounds for fewer than two values."""
    from scipy.stats import t as student

    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return float("nan"), float("nan")
    half = student.ppf((1 + confidence) / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return float(x.mean() - half), float(x.mean() + half)


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` units and its interval: Student's t (``method`` "t") below :data:`MIN_BOOTSTRAP_UNITS`
    units, else a percentile bootstrap ("bootstrap")."""

    estimate: float
    low: float
    high: float
    n: int
    method: str

    def text(self, digits: int = 3) -> str:
        """The estimate and its interval: ``0.290 [0.184, 0.396]``."""
        return f"{self.estimate:.{digits}f} {interval_text(self.low, self.high, digits)}"


def mean_interval(values: np.ndarray, *, confidence: float, bootstrap: Config) -> Interval:
    """The mean of ``values`` (one per unit) and its interval at ``confidence``: Student's t-interval below
    :data:`MIN_BOOTSTRAP_UNITS` units (:func:`t_interval`), else the percentile bootstrap of
    :func:`bootstrap_interval` (``bootstrap``: resamples, seed). NaN values are left out."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    estimate = float(x.mean()) if x.size else float("nan")
    if x.size < MIN_BOOTSTRAP_UNITS:
        return Interval(estimate, *t_interval(x, confidence), x.size, "t")
    return Interval(estimate, *bootstrap_interval(x, "mean", **bootstrap, confidence=confidence), x.size, "bootstrap")


def interval_method(interval: Interval, confidence: float, units: str) -> str:
    """How ``interval`` was made, for a claim's note: "95% Student t-interval over the 3 heads, in brackets (below 10
    heads a percentile bootstrap is too narrow)" or "95% percentile bootstrap interval over the 12 heads, in
    brackets"."""
    if interval.method == "t":
        return (
            f"{100 * confidence:g}% Student t-interval over the {interval.n} {units}, in brackets (below "
            f"{MIN_BOOTSTRAP_UNITS} {units} a percentile bootstrap is too narrow)"
        )
    return f"{100 * confidence:g}% percentile bootstrap interval over the {interval.n} {units}, in brackets"


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


@dataclass(frozen=True)
class LogSlope:
    """The least-squares slope of a series against ln t over its window and its interval, widened for serial
    correlation: ``n`` values worth ``n_eff`` independent ones (``rho``: the residuals' lag-1 autocorrelation)."""

    estimate: float
    low: float
    high: float
    n: int
    n_eff: float
    rho: float

    def text(self, digits: int = 3) -> str:
        """``0.120 [0.080, 0.160] (n_eff 9.4 of 17)``."""
        interval = interval_text(self.low, self.high, digits)
        return f"{self.estimate:.{digits}f} {interval} (n_eff {self.n_eff:.1f} of {self.n})"


def ar1_effective_size(values: np.ndarray) -> tuple[float, float]:
    """The number of independent values a serially correlated series is worth, n_eff = n (1 - rho) / (1 + rho), rho
    its lag-1 autocorrelation clipped to [0, 1) (the variance of the mean of an AR(1) series is that of n_eff
    independent values; a negative rho is not counted as extra information), and rho."""
    x = np.asarray(values, dtype=float) - np.mean(values)
    denominator = float(x @ x)
    rho = float(x[:-1] @ x[1:]) / denominator if x.size > 2 and denominator > 0 else 0.0
    rho = min(max(rho, 0.0), 1.0 - 1e-12)
    return x.size * (1 - rho) / (1 + rho), rho


def log_slope_interval(epochs: np.ndarray, values: np.ndarray, confidence: float) -> LogSlope:
    """dy / d ln t of a series over its window, log-t aware: the least-squares slope b of y = a + b ln t (epochs
    t > 0; a growth y = c ln t gives c, a series that stops gives 0) and its Student t-interval, the variance of b
    inflated by (1 + rho) / (1 - rho) for residuals of lag-1 autocorrelation rho and the degrees of freedom
    n_eff - 2 (at least 1) with n_eff of :func:`ar1_effective_size` (regression with AR(1) errors; the inflation is
    the largest that rho allows, so the interval errs wide). NaN bounds for fewer than three values."""
    from scipy.stats import t as student

    x, y = np.log(np.asarray(epochs, dtype=float)), np.asarray(values, dtype=float)
    if x.size < 3:
        return LogSlope(float("nan"), float("nan"), float("nan"), x.size, float(x.size), 0.0)
    xc = x - x.mean()
    slope = float(xc @ (y - y.mean()) / (xc @ xc))
    residuals = y - y.mean() - slope * xc
    n_eff, rho = ar1_effective_size(residuals)
    se = np.sqrt(residuals @ residuals / (x.size - 2) / (xc @ xc) * (1 + rho) / (1 - rho))
    half = float(student.ppf((1 + confidence) / 2, max(n_eff - 2, 1.0)) * se)
    return LogSlope(slope, slope - half, slope + half, x.size, n_eff, rho)
