"""Tables of the convergence census (Figures 9 and 10) from its per-trial rows, with Wilson intervals.

Paper: Appendix E. :func:`summarize` gives Figure 9(a)'s percentages per d (or per (n, T, d) cell, or per
(d, n_iter)), each with its Wilson score interval; :func:`gap_distribution` Figure 9(b)'s histogram and
Figure 10's cumulative distribution of the minimal score gap; :func:`labels_moved` counts the trials whose
label changes with the iteration budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm

from maxmargin.registry.census import PROPORTIONS, summary_columns


def wilson_interval(successes: ArrayLike, n: ArrayLike, confidence: float) -> tuple[NDArray, NDArray]:
    """Wilson score interval of a binomial proportion successes / n at the given confidence (NaN where n = 0).

    Wilson (1927): the p with |p_hat - p| <= z sqrt(p (1 - p) / n), z the two-sided normal quantile; unlike the
    Wald interval it stays inside [0, 1] and keeps its coverage for counts near 0 or n (P(gap < 0) rests on a
    handful of trials).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"need 0 < confidence < 1, got {confidence}")
    z = float(norm.ppf(0.5 + confidence / 2))
    k, m = np.asarray(successes, dtype=np.float64), np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / m
        denom = 1.0 + z * z / m
        centre = (p + z * z / (2.0 * m)) / denom
        half = z * np.sqrt(p * (1.0 - p) / m + z * z / (4.0 * m * m)) / denom
    # at k = 0 (k = n) the bound is exactly 0 (1); the formula leaves a rounding error there
    return np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.where(
        k == m, 1.0, np.clip(centre + half, 0.0, 1.0)
    )


def _group_summary(g: pd.DataFrame, confidence: float) -> dict[str, float]:
    """Figure 9(a)'s proportions of one group of trials, each with its Wilson interval."""
    sat = g[g["saturated"].astype(bool)]
    totals = {"trials": len(g), "saturated": len(sat)}
    row: dict[str, float] = {"n_trials": len(g)}
    for name, (classes, over, scale) in PROPORTIONS.items():
        count = int((sat["gap"] < 0).sum()) if name == "p_gap_negative" else int(g["class"].isin(classes).sum())
        total = totals[over]
        low, high = wilson_interval(count, total, confidence)
        row[name] = scale * float(count) / total if total else float("nan")
        row[f"{name}_ci_low"], row[f"{name}_ci_high"] = scale * float(low), scale * float(high)
    row["mean_corr"] = float(sat["corr"].mean()) if len(sat) else float("nan")
    return row


def summarize(trials: pd.DataFrame, confidence: float, by: Sequence[str] = ("d",)) -> pd.DataFrame:
    """One row per group (per d by default): percentages of trials not saturated / locally optimal (LMM incl.
    GMM) / GMM / neither, mean_corr and P(gap < 0), each proportion with its Wilson interval at ``confidence``.

    Appendix E, Figure 9(a); ``mean_corr`` averages cos(p, p_mm(alpha)) over saturated trials (the paper's
    0.997) and ``p_gap_negative`` is P(gamma < 0) among them (the paper's < 1%).
    """
    keys = list(by)
    rows = [
        {**dict(zip(keys, (int(k) for k in np.atleast_1d(key)), strict=True)), **_group_summary(g, confidence)}
        for key, g in trials.groupby(keys, sort=True)
    ]
    columns = [c.name for c in summary_columns(*keys) if c.name != "n_labels_moved"]
    return pd.DataFrame(rows, columns=columns)


def census_table(trials: pd.DataFrame, confidence: float, by: Sequence[str]) -> pd.DataFrame:
    """:func:`summarize` by the given columns; a budget study (``n_iter`` in ``by``) also counts labels moved."""
    summary = summarize(trials, confidence, by)
    if "n_iter" not in by:
        return summary
    return summary.merge(labels_moved(trials), on=["d", "n_iter"], how="left", validate="one_to_one")


def labels_moved(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (d, n_iter): how many trials carry another label than at the smallest n_iter of the study.

    Issue of the census's iteration budget: trials near the saturation threshold, or whose selected tokens
    change late, move between classes as GD runs longer. Returns columns d, n_iter, n_labels_moved.
    """
    base = trials[trials["n_iter"] == trials.groupby("d")["n_iter"].transform("min")]
    ref = base.set_index(["d", "trial"])["class"]
    moved = trials["class"].to_numpy() != ref.loc[list(zip(trials["d"], trials["trial"], strict=True))].to_numpy()
    counts = trials.assign(moved=moved).groupby(["d", "n_iter"], sort=True)["moved"].sum()
    return counts.rename("n_labels_moved").reset_index()


def gap_distribution(trials: pd.DataFrame, dims: Sequence[int], bin_width: float) -> pd.DataFrame:
    """Histogram and cumulative distribution of the minimal score gap gamma per d, over saturated trials.

    Appendix E, Figure 9(b) (probability per bin of width ``bin_width``) and Figure 10 (cumulative
    probability at each bin's right edge). Bin edges are integer multiples of the width, so gamma = 0
    is an edge and ``cumulative`` at the bin ending at 0 is exactly P(gamma < 0). A d without saturated
    trials gets NaN probabilities.
    """
    if bin_width <= 0:
        raise ValueError(f"need bin_width > 0, got {bin_width}")
    sat = trials[trials["saturated"].astype(bool) & np.isfinite(trials["gap"])]
    sel = sat[sat["d"].isin(list(dims))]["gap"].to_numpy()
    lo = int(np.floor(min(sel.min(initial=0.0), -bin_width) / bin_width)) - 1
    hi = int(np.ceil(max(sel.max(initial=0.0), bin_width) / bin_width)) + 1
    edges = np.arange(lo, hi + 1) * bin_width
    frames = []
    for d in dims:
        gaps = sat.loc[sat["d"] == d, "gap"].to_numpy()
        counts, _ = np.histogram(gaps, bins=edges)
        # no saturated trial: the distribution is undefined (NaN, as in summarize), not "all zero"
        total = gaps.size if gaps.size else np.nan
        frames.append(
            pd.DataFrame(
                {
                    "d": int(d),
                    "bin_left": edges[:-1],
                    "bin_right": edges[1:],
                    "count": counts,
                    "probability": counts / total,
                    "cumulative": np.cumsum(counts) / total,
                    "n_saturated": gaps.size,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
