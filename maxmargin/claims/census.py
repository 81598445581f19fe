"""Claims of the census (Appendix E, Figures 9-10), read from census_summary.csv, census_trials.csv and
census_budget.csv; proportions are judged by their Wilson intervals, means and medians of trials by their bootstrap
intervals (:func:`.base.interval_verdict`, :func:`.base.judge_statistic`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from maxmargin.claims.base import (
    Claim,
    Config,
    Judged,
    Measurement,
    Tables,
    bootstrap_text,
    interval_text,
    interval_verdict,
    judge_statistic,
    note_of,
)
from maxmargin.experiments.census_tables import wilson_interval

# Thresholds of the verdicts: the paper's words ("rare", "almost always", "often") as numbers.
ALIGNED_CORR = 0.99  # "aligned with its LMM/GMM direction": the mean correlation above this
RARE = 0.01  # "rare": a proportion below this (the paper: P(gap < 0) < 0.01)
GROWS_RHO = 0.5  # "grows with d": Spearman correlation of pct GMM with d above this
OFTEN_PCT = 10.0  # "often does not saturate": more than this percentage of trials
ALMOST_ALWAYS = 0.95  # "almost always": a share above this
LARGE_D = 10  # the dimensions from which "almost always" is claimed
NEGATIVE_GAP_CORR = 0.99  # the paper: over the gamma < 0 instances GD is "still > 0.99 correlated" on average


def _confidence(cfg: Config) -> str:
    return f"{100 * cfg['census']['confidence']:g}% Wilson intervals in brackets"


def _saturated(t: Tables) -> pd.DataFrame:
    """The saturated census trials (Appendix E: the mean softmax probability of the selected tokens >= 1 - tol)."""
    trials = t["census_trials"]
    return trials[trials["saturated"].astype(bool)]


def decided_by(values: pd.Series, threshold: float) -> tuple[int, float]:
    """The fewest of the lowest ``values`` whose removal lifts their mean above ``threshold``, and the mean of the
    rest (0 and the mean itself when it is above already; every value when nothing short of all of them does)."""
    ordered = np.sort(values.to_numpy(dtype=float))
    for k in range(ordered.size):
        rest = float(ordered[k:].mean())
        if rest > threshold:
            return k, rest
    return ordered.size, float("nan")


def _low_trials(trials: pd.DataFrame, k: int) -> str:
    """The ``k`` trials of lowest ``corr``, with their d."""
    low = trials.nsmallest(k, "corr")
    return ", ".join(f"{r.corr:.3f} (d = {int(r.d)})" for r in low.itertuples())


def _corr_reason(trials: pd.DataFrame, judged: Judged, threshold: float) -> str:
    """Why the mean correlation of ``trials`` is not surely above ``threshold``: its interval, how many trials are at
    or below it, and how few of the lowest decide the verdict."""
    corr = trials["corr"]
    k, rest = decided_by(corr, threshold)
    side = "contains" if judged.verdict == "inconclusive" else "lies below"
    why = (
        f"the interval {interval_text(judged.low, judged.high)} {side} {threshold:g}; {int((corr <= threshold).sum())} "
        f"of the {len(corr)} trials are at or below it"
    )
    if 0 < k < len(corr):
        which = "one trial at" if k == 1 else f"{k} trials at"
        decides, them = ("decides", "it") if k == 1 else ("decide", "them")
        why += f"; {which} {_low_trials(trials, k)} {decides} it: without {them} the mean is {rest:.4f}"
    return why


def pooled(trials: pd.DataFrame) -> str:
    """Which d a statistic over ``trials`` pools, with the trials each gives: the smallest d (where softmax often
    does not saturate, claim census_small_d) can weigh most in a pool of the rare trials."""
    counts = trials.groupby("d").size()
    return "pooled over d = " + ", ".join(f"{int(d)} ({n} trials)" for d, n in counts.items())


def _census_corr(t: Tables, cfg: Config) -> Measurement:
    """Appendix E, Figure 9: over the saturated trials, GD's correlation with its LMM/GMM direction averages 0.997;
    judged by the bootstrap interval of the mean against :data:`ALIGNED_CORR`."""
    s, sat = t["census_summary"], _saturated(t)
    per_d = ", ".join(f"d={int(r.d)}: {r.mean_corr:.4f}" for r in s.itertuples() if np.isfinite(r.mean_corr))
    judged = judge_statistic(sat["corr"], "mean", ALIGNED_CORR, below=False, cfg=cfg)
    return (
        f"mean {judged.estimate:.4f} {interval_text(judged.low, judged.high)} over the {len(sat)} saturated trials "
        f"({per_d})",
        judged.verdict,
        note_of(
            judged.verdict,
            _corr_reason(sat, judged, ALIGNED_CORR),
            f"holds when the interval of the mean lies above {ALIGNED_CORR:g}; {pooled(sat)}; {bootstrap_text(cfg)}",
        ),
    )


def _census_gap(t: Tables, cfg: Config) -> Measurement:
    s, sat = t["census_summary"], _saturated(t)
    negative = int((sat["gap"] < 0).sum())
    low, high = wilson_interval(negative, len(sat), cfg["census"]["confidence"])
    per_d = ", ".join(
        f"d={int(r.d)}: {r.p_gap_negative:.4f} {interval_text(r.p_gap_negative_ci_low, r.p_gap_negative_ci_high)}"
        for r in s.itertuples()
    )
    verdict = interval_verdict(float(low), float(high), RARE, below=True)
    side = "contains" if verdict == "inconclusive" else "lies above"
    why = f"{negative} of the {len(sat)} saturated trials have gamma < 0: the pooled interval {side} {RARE:g}"
    rule = f"fraction of saturated trials whose minimal score gap to an SVM-neighbour is negative, {_confidence(cfg)}"
    above = s[s["p_gap_negative_ci_low"] >= RARE]
    if len(above):
        rule += f"; above 1% at d = {', '.join(str(int(d)) for d in above['d'])} (see census_budget; the paper pools)"
    return (
        f"{negative / len(sat):.4f} pooled over all saturated trials {interval_text(low, high)}; {per_d}",
        verdict,
        note_of(verdict, why, rule),
    )


def _negative(t: Tables) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The saturated trials with a negative minimal score gap, and those with a non-negative one."""
    sat = _saturated(t)
    return sat[sat["gap"] < 0], sat[sat["gap"] >= 0]


def _census_gap_size(t: Tables, cfg: Config) -> Measurement:
    """Where gamma < 0, |gamma| is typically close to zero: its statistic (``census.negative_gap``) is judged by its
    bootstrap interval against the threshold. The median positive gap at the same d is quoted beside it as the scale
    of a gap."""
    spec = cfg["census"]["negative_gap"]
    negative, positive = _negative(t)
    if negative.empty:
        return "no saturated trial has gamma < 0", "holds", "nothing to measure: the claim holds vacuously"
    judged = judge_statistic(negative["gap"].abs(), spec["statistic"], spec["near_zero"], below=True, cfg=cfg)
    positive_median = positive.groupby("d")["gap"].median()
    per_d = ", ".join(
        f"d={int(d)}: {len(g)}, median {g['gap'].median():.3f} (positive gaps: {positive_median.get(d, np.nan):.3f})"
        for d, g in negative.groupby("d", sort=True)
    )
    far = int((negative["gap"] < -spec["near_zero"]).sum())
    side = "contains" if judged.verdict == "inconclusive" else "lies above"
    scale = float(getattr(positive.loc[positive["d"].isin(negative["d"]), "gap"], spec["statistic"])())
    stat = spec["statistic"]
    why = (
        f"{far} of the {len(negative)} negative gaps are below -{spec['near_zero']:g}, and the interval of the {stat} "
        f"{side} {spec['near_zero']:g}: the {stat} |gamma| is {judged.estimate / scale:.2f} times the {stat} positive "
        f"gap ({scale:.3f}) at the same d"
    )
    return (
        f"{spec['statistic']} |gamma| over the {len(negative)} trials with gamma < 0: {judged.estimate:.3f} "
        f"{interval_text(judged.low, judged.high, 3)}; {far} of them below -{spec['near_zero']:g}; by d: {per_d}",
        judged.verdict,
        note_of(
            judged.verdict,
            why,
            f"holds when the interval of the {spec['statistic']} of |gamma| over the saturated trials with gamma < 0 "
            f"lies below census.negative_gap.near_zero = {spec['near_zero']:g}; {pooled(negative)}; "
            f"{bootstrap_text(cfg)}",
        ),
    )


def _census_negative_corr(t: Tables, cfg: Config) -> Measurement:
    """Over the gamma < 0 instances, GD is still > 0.99 correlated with p_mm(alpha) on average (Appendix E, text on
    Figure 9(b)): judged by the bootstrap interval of the mean."""
    negative, _ = _negative(t)
    if negative.empty:
        return "no saturated trial has gamma < 0", "not run", "nothing to measure"
    corr = negative["corr"]
    judged = judge_statistic(corr, "mean", NEGATIVE_GAP_CORR, below=False, cfg=cfg)
    per_d = ", ".join(f"d={int(d)}: {c.mean():.4f}" for d, c in corr.groupby(negative["d"], sort=True))
    return (
        f"mean {judged.estimate:.4f} {interval_text(judged.low, judged.high)} over the {len(negative)} trials with "
        f"gamma < 0 ({per_d}); lowest {corr.min():.4f}; {int((corr <= NEGATIVE_GAP_CORR).sum())} at or below "
        f"{NEGATIVE_GAP_CORR:g}",
        judged.verdict,
        note_of(
            judged.verdict,
            _corr_reason(negative, judged, NEGATIVE_GAP_CORR),
            "corr = cos(p, p_mm(alpha)), alpha the tokens GD selects (census_trials.csv); holds when the interval of "
            f"the mean lies above {NEGATIVE_GAP_CORR:g}; {pooled(negative)}; {bootstrap_text(cfg)}",
        ),
    )


def _census_gmm_grows(t: Tables, cfg: Config) -> Measurement:
    """Appendix E, Figure 9(a): the share of GMM runs grows with d (Spearman correlation above :data:`GROWS_RHO`,
    and the Wilson intervals of the smallest and the largest d apart)."""
    s = t["census_summary"].sort_values("d")
    rho = pd.Series(s["pct_gmm"].to_numpy()).corr(pd.Series(s["d"].to_numpy()), method="spearman")
    per_d = ", ".join(
        f"{int(r.d)}: {r.pct_gmm:.1f}% {interval_text(r.pct_gmm_ci_low, r.pct_gmm_ci_high, 1)}" for r in s.itertuples()
    )
    first, last = s.iloc[0], s.iloc[-1]
    apart = last["pct_gmm_ci_low"] > first["pct_gmm_ci_high"]
    verdict = "differs" if rho <= GROWS_RHO else "holds" if apart else "inconclusive"
    why = (
        f"the Spearman correlation of pct GMM with d is {rho:.2f}, not above {GROWS_RHO:g}"
        if verdict == "differs"
        else f"pct GMM grows, but its intervals at d = {int(first.d)} and d = {int(last.d)} overlap: more trials "
        "(census.n_trials) would decide"
    )
    rule = (
        f"holds when the Spearman correlation of pct GMM with d is above {GROWS_RHO:g} and the intervals of the "
        f"smallest and the largest d are apart; {_confidence(cfg)}"
    )
    return f"pct GMM by d {per_d}; Spearman rho {rho:.2f}", verdict, note_of(verdict, why, rule)


def _census_small_d(t: Tables, cfg: Config) -> Measurement:
    """Appendix E, Figure 9(a): at the smallest d softmax often (more than :data:`OFTEN_PCT` %) does not saturate."""
    s = t["census_summary"].sort_values("d")
    first = s.iloc[0]
    verdict = interval_verdict(
        first["pct_not_saturated_ci_low"], first["pct_not_saturated_ci_high"], OFTEN_PCT, below=False
    )
    ci = interval_text(first.pct_not_saturated_ci_low, first.pct_not_saturated_ci_high, 1)
    side = "contains" if verdict == "inconclusive" else "lies below"
    why = f"the interval {ci} of the share not saturated at d = {int(first.d)} {side} {OFTEN_PCT:g}%"
    least = s.loc[s["pct_not_saturated"].idxmax()]
    if first["pct_not_saturated"] < least["pct_not_saturated"]:
        verdict = "differs"  # the smallest d must be the least saturated
        why = (
            f"d = {int(least.d)} saturates less often ({least.pct_not_saturated:.1f}% not saturated) than "
            f"d = {int(first.d)}"
        )
    return (
        f"not saturated: {first.pct_not_saturated:.1f}% {ci} at d = {int(first.d)}, "
        f"{s['pct_not_saturated'].iloc[-1]:.1f}% at d = {int(s['d'].iloc[-1])}",
        verdict,
        note_of(
            verdict,
            why,
            f"the claim holds where more than {OFTEN_PCT:g}% of trials do not saturate at the smallest d; "
            f"{_confidence(cfg)}",
        ),
    )


def _census_lmm(t: Tables, cfg: Config) -> Measurement:
    """Appendix E, Figure 9(a): for d >= :data:`LARGE_D`, saturated runs almost always (a share above
    :data:`ALMOST_ALWAYS`) select locally-optimal tokens."""
    s = t["census_summary"]
    big = s[s["d"] >= LARGE_D]
    saturated = np.rint(big["n_trials"] * (100 - big["pct_not_saturated"]) / 100)
    lmm = np.rint(big["n_trials"] * big["pct_lmm"] / 100)
    low, high = wilson_interval(lmm, saturated, cfg["census"]["confidence"])
    share = lmm / saturated
    each = [interval_verdict(lo, hi, ALMOST_ALWAYS, below=False) for lo, hi in zip(low, high, strict=True)]
    verdict = "differs" if "differs" in each else "inconclusive" if "inconclusive" in each else "holds"
    why = "; ".join(
        f"at d = {int(d)} the share's interval {interval_text(100 * lo, 100 * hi, 1)}% "
        + ("contains" if v == "inconclusive" else "lies below")
        + f" {100 * ALMOST_ALWAYS:g}%"
        for d, lo, hi, v in zip(big["d"], low, high, each, strict=True)
        if v == verdict
    )
    return (
        f"LMM share among saturated trials >= {100 * share.min():.1f}% for d >= {LARGE_D} "
        f"(lowest bound {100 * low.min():.1f}%)",
        verdict,
        note_of(
            verdict,
            why,
            f"the claim holds where the share's interval lies above {100 * ALMOST_ALWAYS:g}% at every d >= "
            f"{LARGE_D}; {_confidence(cfg)}",
        ),
    )


def _budget_verdict(g: pd.DataFrame) -> str:
    """Whether P(gap < 0) at one d falls from the smallest to the largest budget: significantly (holds), within
    overlapping intervals (inconclusive), or not at all (differs)."""
    first, last = g.iloc[0], g.iloc[-1]
    if last["p_gap_negative"] >= first["p_gap_negative"]:
        return "differs"
    return "holds" if last["p_gap_negative_ci_high"] < first["p_gap_negative_ci_low"] else "inconclusive"


def _census_budget(t: Tables, cfg: Config) -> Measurement:
    """Appendix E (text on Figure 9(b)): negative gaps are near-ties that more iterations resolve, so P(gap < 0)
    falls with the iteration budget at every d of ``census.budget.dims``."""
    b = t["census_budget"].sort_values(["d", "n_iter"])
    parts, each = [], {}
    for d, g in b.groupby("d"):
        steps = ", ".join(
            f"{int(r.n_iter)}: {r.p_gap_negative:.3f} "
            f"{interval_text(r.p_gap_negative_ci_low, r.p_gap_negative_ci_high, 3)}"
            f" ({int(r.n_labels_moved)} labels moved)"
            for r in g.itertuples()
        )
        parts.append(f"d = {int(d)}: P(gap < 0) at n_iter {steps}")
        each[int(d)] = _budget_verdict(g)
    verdict = next(v for v in ("differs", "inconclusive", "holds") if v in each.values())
    at = ", ".join(str(d) for d, v in each.items() if v == verdict)
    why = {
        "differs": f"P(gap < 0) does not fall with the budget at d = {at}",
        "inconclusive": f"P(gap < 0) falls at d = {at}, but the intervals of the smallest and the largest budget "
        "overlap there: more trials (census.n_trials) would decide",
    }.get(verdict, "")
    rule = (
        "the claim holds where P(gap < 0) falls significantly from the smallest to the largest budget at every d; "
        f"labels moved: trials whose class differs from the smallest budget's; {_confidence(cfg)}"
    )
    longest = b[b["n_iter"] == b["n_iter"].max()]
    still = longest[longest["p_gap_negative_ci_low"] >= RARE]
    if len(still):
        rule += (
            f"; at d = {', '.join(str(int(d)) for d in still['d'])} P(gap < 0) stays above 1% after "
            f"{int(b['n_iter'].max())} iterations: the budget does not explain it there"
        )
    return "; ".join(parts), verdict, note_of(verdict, why, rule)


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "census_mean_corr",
        "When softmax saturates, GD is aligned with its LMM/GMM direction",
        "Appendix E, Fig 9",
        "0.997 on average",
        _census_corr,
    ),
    Claim(
        "census_gap_negative",
        "Saturated trials with a negative score gap are rare",
        "Appendix E, Fig 9(b), 10",
        "P(gap < 0) < 0.01",
        _census_gap,
    ),
    Claim(
        "census_gap_size",
        "Where gamma < 0, it is typically close to zero: an SVM-neighbour scores only slightly higher",
        "Appendix E, Fig 9(b)",
        "close to zero",
        _census_gap_size,
    ),
    Claim(
        "census_negative_corr",
        "Over the instances with gamma < 0, GD is still correlated with the max-margin solution p_mm(alpha)",
        "Appendix E (text on Fig 9(b))",
        "> 0.99 on average",
        _census_negative_corr,
    ),
    Claim(
        "census_budget",
        "Negative gaps are near-ties that need more iterations: P(gap < 0) falls with the iteration budget",
        "Appendix E (text on Fig 9(b))",
        "falls with n_iter",
        _census_budget,
    ),
    Claim(
        "census_gmm_grows",
        "The probability of converging to the GMM grows with d",
        "Appendix E, Fig 9(a)",
        "increasing",
        _census_gmm_grows,
    ),
    Claim(
        "census_small_d",
        "For small d (d = 2) softmax often does not saturate",
        "Appendix E, Fig 9(a)",
        "tall red bar at d = 2",
        _census_small_d,
    ),
    Claim(
        "census_lmm",
        "Saturated runs almost always select locally-optimal tokens (LMM)",
        "Appendix E, Fig 9(a)",
        "almost always",
        _census_lmm,
    ),
)
