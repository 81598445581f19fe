"""Tables of the convergence census (Figures 9 and 10) from its per-trial rows.

Paper: Appendix E. :func:`summarize` gives Figure 9(a)'s percentages per d, :func:`gap_distribution`
Figure 9(b)'s histogram and Figure 10's cumulative distribution of the minimal score gap.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

SUMMARY_COLUMNS = [
    "d",
    "n_trials",
    "pct_not_saturated",
    "pct_lmm",
    "pct_gmm",
    "pct_neither",
    "mean_corr",
    "p_gap_negative",
]


def summarize(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per d: percentages of trials not saturated / locally optimal (LMM incl. GMM) / GMM / neither.

    Appendix E, Figure 9(a); ``mean_corr`` averages cos(p, p_mm(alpha)) over saturated trials (the paper's
    0.997) and ``p_gap_negative`` is P(gamma < 0) among them (the paper's < 1%).
    """
    rows = []
    for d, g in trials.groupby("d", sort=True):
        n = len(g)
        sat = g[g["saturated"].astype(bool)]
        cls = g["class"]
        rows.append(
            {
                "d": int(d),
                "n_trials": n,
                "pct_not_saturated": 100.0 * float((cls == "not_saturated").sum()) / n,
                "pct_lmm": 100.0 * float(cls.isin(["lmm", "gmm"]).sum()) / n,
                "pct_gmm": 100.0 * float((cls == "gmm").sum()) / n,
                "pct_neither": 100.0 * float((cls == "neither").sum()) / n,
                "mean_corr": float(sat["corr"].mean()) if len(sat) else float("nan"),
                "p_gap_negative": float((sat["gap"] < 0).mean()) if len(sat) else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


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
