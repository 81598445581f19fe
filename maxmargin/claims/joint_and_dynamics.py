"""Claims of joint GD and of the transient dynamics (Figures 3-5), read from directions.csv and the experiment tables
fig3a.csv, fig4.csv and fig5.csv: joint GD on the head v and the attention weights p (Theorems 5-6, Figure 3),
normalized against constant-step GD (Figure 4), and the loss and the score C (Figure 5, Section 4)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from maxmargin.claims.base import Claim, Config, Measurement, Tables, note_of, tables_only, verdict_of
from maxmargin.claims.synthetic import CONVERGED_COSINE, all_reach, direction_of, runs_of
from maxmargin.core.gd import cosine

# Thresholds of the verdicts (the paper's "saturates", "levels off"); reaching a direction: CONVERGED_COSINE.
DISTINCT_COSINE = 0.99  # two directions differ (p_relax vs p_mm, Theorem 6): cosine below this
SATURATED_PROBABILITY = 0.99  # the softmax (and logistic) probability has reached 1
LEVELLED_OFF_GROWTH = 0.2  # constant-step ||p|| grows by less than this share of normalized GD's (Fig 4(b))
FIG5_LARGEST_C = 10  # Fig 5's bias is read at the largest score C up to this
FIG5_RADIUS = 5.0  # ... where the trajectory first reaches this ||p||


def _joint(t: Tables, figure: str, p_kind: str) -> Measurement:
    """Theorems 5-6, Figure 3: joint GD takes v to v_mm and p to ``p_kind`` (p_mm, or p_relax when p_relax differs
    from p_mm)."""
    r = runs_of(t, figure)
    p_runs = r[r["kind"] == "p_relax"]
    v_runs = r[r["kind"] == "v_mm"]
    final = np.array([json.loads(x) for x in p_runs["direction"]])
    cos_target = float(cosine(final, direction_of(t, figure, p_kind)).min())
    cos_pmm = float(cosine(final, direction_of(t, figure, "p_mm")).max())
    cos_v = float(v_runs["final_cosine"].min())
    why = [f"cos(p, {p_kind}) is only {cos_target:.5f}"] if cos_target < CONVERGED_COSINE else []
    why += [f"cos(v, v_mm) is only {cos_v:.5f}"] if cos_v < CONVERGED_COSINE else []
    rule = f"holds when every run ends at cosine >= {CONVERGED_COSINE:g} with {p_kind} and v_mm"
    if p_kind == "p_relax":
        rule += f", and below {DISTINCT_COSINE:g} with p_mm"
        if cos_pmm >= DISTINCT_COSINE:
            why.append(f"p also reaches p_mm (cosine {cos_pmm:.4f}): p_relax and p_mm are not told apart")
        else:
            rule = f"cosine with p_mm only {cos_pmm:.4f}: the limit is p_relax, not p_mm; {rule}"
    verdict = verdict_of(not why)
    return (
        f"cos(p, {p_kind}) >= {cos_target:.5f}; cos(v, v_mm) >= {cos_v:.5f}",
        verdict,
        note_of(verdict, "; ".join(why), rule),
    )


def _fig3_v_mm(t: Tables) -> Measurement:
    """Appendix E: in Figures 3(a) and 3(b), v_mm / ||v_mm|| = [0, 1]."""
    cos = {f: float(cosine(direction_of(t, f, "v_mm"), np.array([0.0, 1.0]))) for f in ("fig3a", "fig3b")}
    verdict = verdict_of(min(cos.values()) >= CONVERGED_COSINE)
    why = "; ".join(f"cos(v_mm, [0, 1]) is {c:.5f} in {f}" for f, c in cos.items() if c < CONVERGED_COSINE)
    return (
        "; ".join(f"{f}: v_mm/||v_mm|| = {(np.round(direction_of(t, f, 'v_mm'), 5) + 0.0).tolist()}" for f in cos),
        verdict,
        note_of(verdict, why, f"holds when cos(v_mm, [0, 1]) >= {CONVERGED_COSINE:g} in both"),
    )


def _fig3_relax_vs_mm(t: Tables) -> Measurement:
    """Appendix E: in Figure 3(a) every optimal token is a support vector, so p_relax = p_mm; in 3(b) the yellow
    input is not one, so p_relax differs from p_mm."""
    cos = {f: float(cosine(direction_of(t, f, "p_relax"), direction_of(t, f, "p_mm"))) for f in ("fig3a", "fig3b")}
    verdict = verdict_of(cos["fig3a"] >= CONVERGED_COSINE and cos["fig3b"] < DISTINCT_COSINE)
    why = [f"p_relax and p_mm differ in Fig 3(a) (cosine {cos['fig3a']:.5f})"] * (cos["fig3a"] < CONVERGED_COSINE)
    why += [f"p_relax and p_mm coincide in Fig 3(b) (cosine {cos['fig3b']:.5f})"] * (cos["fig3b"] >= DISTINCT_COSINE)
    return (
        f"cos(p_relax, p_mm): {cos['fig3a']:.5f} in Fig 3(a), {cos['fig3b']:.4f} in Fig 3(b)",
        verdict,
        note_of(
            verdict,
            "; ".join(why),
            f"holds when the cosine is >= {CONVERGED_COSINE:g} in 3(a) and below {DISTINCT_COSINE:g} in 3(b) "
            "(p_relax: eq. (10) at the support vectors of v_mm)",
        ),
    )


def _fig3c(t: Tables, cfg: Config) -> Measurement:
    """Figure 3(c): along the run of Figure 3(a), the softmax and the logistic probabilities both reach 1."""
    f = t["fig3a"]
    shown = cfg["plots"]["fig3c_iterations"]  # the last iteration Figure 3(c) draws
    last = f[f["iteration"] == f[f["iteration"] <= shown]["iteration"].max()]
    s, q = last["max_softmax"].mean(), last["logistic_prob"].mean()
    verdict = verdict_of(s > SATURATED_PROBABILITY and q > SATURATED_PROBABILITY)
    why = "; ".join(
        f"the {name} probability is {value:.4f}, not above {SATURATED_PROBABILITY:g}, by the last iteration drawn"
        for name, value in (("softmax", s), ("logistic", q))
        if value <= SATURATED_PROBABILITY
    )
    return (
        f"at iteration {int(last['iteration'].iloc[0])}: softmax {s:.4f}, logistic {q:.4f}",
        verdict,
        note_of(
            verdict,
            why,
            "averaged over the Fig 3(a) starts; the last iteration Fig 3(c) draws (plots.fig3c_iterations)",
        ),
    )


def _first_iteration(f: pd.DataFrame, column: str, level: float) -> float:
    hit = f[f[column] >= level]
    return float(hit["iteration"].min()) if len(hit) else float("inf")


def _fig4_saturation(t: Tables) -> Measurement:
    """Figure 4(a): normalized GD saturates the softmax in fewer iterations than constant-step GD."""
    f = t["fig4"]
    (norm_label, norm_f), (const_label, const_f) = list(f.groupby("label", sort=False))
    level = SATURATED_PROBABILITY
    a, b = _first_iteration(norm_f, "max_softmax", level), _first_iteration(const_f, "max_softmax", level)
    verdict = verdict_of(a < b)
    return (
        f"softmax prob >= {level:g} at iteration {a:.0f} ({norm_label}) vs {b:.0f} ({const_label})",
        verdict,
        note_of(verdict, f"{const_label} saturates first (iteration {b:.0f} against {a:.0f})", ""),
    )


def _fig4_norm(t: Tables, cfg: Config) -> Measurement:
    """Figure 4(b): constant-step GD's ||p|| levels off (its growth below :data:`LEVELLED_OFF_GROWTH` of normalized
    GD's over the second half of the iterations drawn)."""
    f = t["fig4"]
    (_, norm_f), (_, const_f) = list(f.groupby("label", sort=False))
    end = cfg["plots"]["fig4_iterations"]  # the second half of what Figure 4(b) draws
    start = end // 2

    def growth(g: pd.DataFrame) -> float:
        at = g.set_index("iteration")["p_norm"]
        return float(at.loc[end] - at.loc[start])

    gn, gc = growth(norm_f), growth(const_f)
    verdict = verdict_of(gc < LEVELLED_OFF_GROWTH * gn)
    why = f"constant-step ||p|| still grows by {gc:.2f}, {gc / gn:.2f} of normalized GD's {gn:.2f}"
    return (
        f"||p|| growth over iterations {start}-{end}: {gn:.2f} (normalized) vs {gc:.2f} (constant step)",
        verdict,
        note_of(
            verdict,
            why,
            f"holds when the constant-step growth is below {LEVELLED_OFF_GROWTH:g} of normalized GD's over the second "
            "half of the iterations Fig 4(b) draws (plots.fig4_iterations)",
        ),
    )


def _fig5_bias(t: Tables) -> Measurement:
    """Figure 5: at the largest score C drawn, the correlation loss leans to the high-score token (p_2 > 0) and the
    logistic loss to the low-score one (p_2 < 0), where the path first reaches ||p|| = :data:`FIG5_RADIUS`."""
    f = t["fig5"]
    c = max(x for x in f["C"].unique() if x <= FIG5_LARGEST_C)

    def p2_at(loss: str, radius: float = FIG5_RADIUS) -> float:
        g = f[(f["loss"] == loss) & (f["C"] == c) & (f["p_norm"] >= radius)]
        return float(g.sort_values("iteration")["p2"].iloc[0])

    corr, logi = p2_at("correlation"), p2_at("logistic")
    verdict = verdict_of(corr > 0 > logi)
    why = [f"the correlation loss leans to (1, -1) (p_2 = {corr:+.3f})"] * (corr <= 0)
    why += [f"the logistic loss leans to (1, 1) (p_2 = {logi:+.3f})"] * (logi >= 0)
    return (
        f"C = {c:g}, at ||p|| = {FIG5_RADIUS:g}: p_2 = {corr:+.3f} (correlation) vs {logi:+.3f} (logistic)",
        verdict,
        note_of(verdict, "; ".join(why), "p_2 > 0 leans to the high-score token (1, 1), p_2 < 0 to (1, -1)"),
    )


def _fig5_gmm(t: Tables) -> Measurement:
    """Figure 5: whatever the loss and the score C, every run from p(0) = 0 ends on the GMM direction (Section 4:
    "the asymptotic direction of gradient descent is determined by p_mm")."""
    return all_reach(
        runs_of(t, "fig5"),
        "gmm",
        f"every loss and every C of synthetic.fig5; holds when every run ends with cosine >= {CONVERGED_COSINE:g} "
        "with the GMM",
        what="runs",
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "joint_p_mm",
        "All selected tokens are support vectors: p -> p_mm and v -> v_mm",
        "Theorem 5, Fig 3(a)",
        "corr -> 1",
        lambda t, _cfg: _joint(t, "fig3a", "p_mm"),
    ),
    Claim(
        "joint_p_relax",
        "A non-support input relaxes the p-SVM: p -> p_relax, not p_mm",
        "Theorem 6, Fig 3(b)",
        "corr -> 1",
        lambda t, _cfg: _joint(t, "fig3b", "p_relax"),
    ),
    Claim(
        "fig3_v_mm",
        "In Figures 3(a) and 3(b) the label SVM's direction is v_mm / ||v_mm|| = [0, 1]",
        "Appendix E, Fig 3",
        "[0, 1]",
        tables_only(_fig3_v_mm),
    ),
    Claim(
        "fig3_p_relax_vs_p_mm",
        "In Fig 3(a) all optimal tokens are support vectors and p_relax = p_mm; in Fig 3(b) they differ",
        "Appendix E, Fig 3",
        "equal in (a), not in (b)",
        tables_only(_fig3_relax_vs_mm),
    ),
    Claim(
        "joint_probabilities",
        "Softmax and logistic probabilities both reach 1",
        "Fig 3(c)",
        "1",
        _fig3c,
    ),
    Claim(
        "normalized_gd_faster",
        "Normalized GD saturates the softmax faster than constant-step GD",
        "Fig 4(a)",
        "qualitative",
        tables_only(_fig4_saturation),
    ),
    Claim(
        "constant_gd_levels_off",
        "Constant-step GD's ||p|| levels off (vanishing gradients)",
        "Fig 4(b)",
        "qualitative",
        _fig4_norm,
    ),
    Claim(
        "loss_transient_bias",
        "Correlation loss leans to the high-score token, logistic loss to the low-score one",
        "Fig 5",
        "qualitative",
        tables_only(_fig5_bias),
    ),
    Claim(
        "loss_gmm_limit",
        "Whatever the loss and the score C, the asymptotic direction of GD is the GMM's (transient bias only)",
        "Section 4, Fig 5",
        "corr -> 1",
        tables_only(_fig5_gmm),
    ),
)
