"""Claims of the synthetic family (Theorems 2-6, Figures 1-5 and 8), read from directions.csv and the experiment
tables fig3a.csv, fig4.csv and fig5.csv."""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd

from maxmargin.claims.base import Claim, Config, Measurement, Tables, tables_only, verdict_of
from maxmargin.core.gd import cosine

# Thresholds of the verdicts (the paper's "converges in direction", "saturates", "levels off").
CONVERGED_COSINE = 0.999  # a GD run has reached a direction: cosine at least this
DISTINCT_COSINE = 0.99  # two directions differ (p_relax vs p_mm, Theorem 6): cosine below this
SATURATED_PROBABILITY = 0.99  # the softmax (and logistic) probability has reached 1
LEVELLED_OFF_GROWTH = 0.2  # constant-step ||p|| grows by less than this share of normalized GD's (Fig 4(b))
FIG5_LARGEST_C = 10  # Fig 5's bias is read at the largest score C up to this
FIG5_RADIUS = 5.0  # ... where the trajectory first reaches this ||p||


def _runs(t: Tables, figure: str) -> pd.DataFrame:
    d = t["directions"]
    return d[(d["record"] == "gd_run") & (d["figure"] == figure)]


def _direction(t: Tables, figure: str, kind: str) -> np.ndarray:
    d = t["directions"]
    row = d[(d["record"] == "direction") & (d["figure"] == figure) & (d["kind"] == kind)].iloc[0]
    return np.asarray(json.loads(row["direction"]))


def _gd_to_gmm_n1(t: Tables, cfg: Config) -> Measurement:
    r = _runs(t, "fig1a")
    n_gmm = int((r["kind"] == "gmm").sum())
    ok = n_gmm == len(r) and r["final_cosine"].min() >= CONVERGED_COSINE
    fig1 = cfg["synthetic"]["fig1"]
    cos, norm = r["final_cosine"].min(), r["p_norm"].median()
    return (
        f"{n_gmm}/{len(r)} starts -> GMM, min cosine {cos:.5f} at ||p|| ~ {norm:.0f}",
        verdict_of(ok),
        f"normalized GD, eta {fig1['eta']:g}, {fig1['n_iter']} iterations, {_fig1_starts('fig1a', fig1)} "
        "(Fig 1(a) data)",
    )


def _gd_gmm_multi(t: Tables) -> Measurement:
    """Figure 1(c): with several inputs, GD converges in direction to the GMM from every start."""
    r = _runs(t, "fig1c")
    n_gmm = int((r["kind"] == "gmm").sum())
    return (
        f"{n_gmm}/{len(r)} starts -> GMM, min cosine {r['final_cosine'].min():.5f}",
        verdict_of(n_gmm == len(r) and r["final_cosine"].min() >= CONVERGED_COSINE),
        f"holds when every start ends with cosine >= {CONVERGED_COSINE:g} with the GMM",
    )


def _fig1_starts(figure: str, fig1: Config) -> str:
    """Where the Figure 1 runs of ``figure`` started, in the words of the config that ran (``synthetic.fig1``)."""
    starts = fig1["starts"]
    if isinstance(starts, Mapping):
        return f"from {starts['circle']['n']} starts on a circle of radius {starts['circle']['radius']:g}"
    return f"from the {len(starts)} starts in synthetic.fig1.starts (the authors' notebook)"


def _went_to(r: pd.DataFrame, kind: str) -> str:
    """The starts p(0) (key-plane coordinates) of the runs that reached ``kind``."""
    starts = [json.loads(x)[:2] for x in r.loc[r["kind"] == kind, "start"]]
    return ", ".join(f"({a:.3g}, {b:.3g})" for a, b in starts) or "none"


def _gd_lmm_cone(t: Tables, cfg: Config) -> Measurement:
    r = _runs(t, "fig2")
    n_lmm = int((r["kind"] == "lmm").sum())
    ok = n_lmm == len(r) and r["final_cosine"].min() >= CONVERGED_COSINE
    fig2 = cfg["synthetic"]["fig2"]
    return (
        f"{n_lmm}/{len(r)} starts -> LMM, min cosine {r['final_cosine'].min():.5f}",
        verdict_of(ok),
        f"cone of half-angle {fig2['half_angle_deg']:g} deg at radius {fig2['start_radius']:g} around the Fig 1(b) "
        "LMM; wider or closer cones let GD escape to the GMM",
    )


def _gd_local_or_global(t: Tables, figure: str) -> Measurement:
    r = _runs(t, figure)
    counts = r["kind"].value_counts()
    ok = counts.get("gmm", 0) > 0 and counts.get("lmm", 0) > 0 and r["final_cosine"].min() >= CONVERGED_COSINE
    n_gmm, n_lmm, cos = counts.get("gmm", 0), counts.get("lmm", 0), r["final_cosine"].min()
    return (
        f"{n_gmm} start(s) -> GMM, {n_lmm} -> LMM; min cosine {cos:.5f}",
        verdict_of(ok),
        f"p(0) -> GMM: {_went_to(r, 'gmm')}; p(0) -> LMM: {_went_to(r, 'lmm')}",
    )


def _joint(t: Tables, figure: str, p_kind: str) -> Measurement:
    r = _runs(t, figure)
    p_runs = r[r["kind"] == "p_relax"]
    v_runs = r[r["kind"] == "v_mm"]
    final = np.array([json.loads(x) for x in p_runs["direction"]])
    cos_target = float(cosine(final, _direction(t, figure, p_kind)).min())
    cos_pmm = float(cosine(final, _direction(t, figure, "p_mm")).max())
    ok = cos_target >= CONVERGED_COSINE and v_runs["final_cosine"].min() >= CONVERGED_COSINE
    note = ""
    if p_kind == "p_relax":
        ok = ok and cos_pmm < DISTINCT_COSINE
        note = f"cosine with p_mm only {cos_pmm:.4f}: the limit is p_relax, not p_mm"
    return (
        f"cos(p, {p_kind}) >= {cos_target:.5f}; cos(v, v_mm) >= {v_runs['final_cosine'].min():.5f}",
        verdict_of(ok),
        note,
    )


def _fig3_v_mm(t: Tables) -> Measurement:
    """Appendix E: in Figures 3(a) and 3(b), v_mm / ||v_mm|| = [0, 1]."""
    cos = {f: float(cosine(_direction(t, f, "v_mm"), np.array([0.0, 1.0]))) for f in ("fig3a", "fig3b")}
    return (
        "; ".join(f"{f}: v_mm/||v_mm|| = {(np.round(_direction(t, f, 'v_mm'), 5) + 0.0).tolist()}" for f in cos),
        verdict_of(min(cos.values()) >= CONVERGED_COSINE),
        f"holds when cos(v_mm, [0, 1]) >= {CONVERGED_COSINE:g} in both",
    )


def _fig3_relax_vs_mm(t: Tables) -> Measurement:
    """Appendix E: in Figure 3(a) every optimal token is a support vector, so p_relax = p_mm; in 3(b) the yellow
    input is not one, so p_relax differs from p_mm."""
    cos = {f: float(cosine(_direction(t, f, "p_relax"), _direction(t, f, "p_mm"))) for f in ("fig3a", "fig3b")}
    return (
        f"cos(p_relax, p_mm): {cos['fig3a']:.5f} in Fig 3(a), {cos['fig3b']:.4f} in Fig 3(b)",
        verdict_of(cos["fig3a"] >= CONVERGED_COSINE and cos["fig3b"] < DISTINCT_COSINE),
        f"holds when the cosine is >= {CONVERGED_COSINE:g} in 3(a) and below {DISTINCT_COSINE:g} in 3(b) (p_relax: "
        "eq. (10) at the support vectors of v_mm)",
    )


def _fig3c(t: Tables, cfg: Config) -> Measurement:
    f = t["fig3a"]
    shown = cfg["plots"]["fig3c_iterations"]  # the last iteration Figure 3(c) draws
    last = f[f["iteration"] == f[f["iteration"] <= shown]["iteration"].max()]
    s, q = last["max_softmax"].mean(), last["logistic_prob"].mean()
    return (
        f"at iteration {int(last['iteration'].iloc[0])}: softmax {s:.4f}, logistic {q:.4f}",
        verdict_of(s > SATURATED_PROBABILITY and q > SATURATED_PROBABILITY),
        "averaged over the Fig 3(a) starts; the last iteration Fig 3(c) draws (plots.fig3c_iterations)",
    )


def _first_iteration(f: pd.DataFrame, column: str, level: float) -> float:
    hit = f[f[column] >= level]
    return float(hit["iteration"].min()) if len(hit) else float("inf")


def _fig4_saturation(t: Tables) -> Measurement:
    f = t["fig4"]
    (norm_label, norm_f), (const_label, const_f) = list(f.groupby("label", sort=False))
    level = SATURATED_PROBABILITY
    a, b = _first_iteration(norm_f, "max_softmax", level), _first_iteration(const_f, "max_softmax", level)
    return (
        f"softmax prob >= {level:g} at iteration {a:.0f} ({norm_label}) vs {b:.0f} ({const_label})",
        verdict_of(a < b),
        "",
    )


def _fig4_norm(t: Tables, cfg: Config) -> Measurement:
    f = t["fig4"]
    (_, norm_f), (_, const_f) = list(f.groupby("label", sort=False))
    end = cfg["plots"]["fig4_iterations"]  # the second half of what Figure 4(b) draws
    start = end // 2

    def growth(g: pd.DataFrame) -> float:
        at = g.set_index("iteration")["p_norm"]
        return float(at.loc[end] - at.loc[start])

    gn, gc = growth(norm_f), growth(const_f)
    return (
        f"||p|| growth over iterations {start}-{end}: {gn:.2f} (normalized) vs {gc:.2f} (constant step)",
        verdict_of(gc < LEVELLED_OFF_GROWTH * gn),
        "the second half of the iterations Fig 4(b) draws (plots.fig4_iterations)",
    )


def _fig5_bias(t: Tables) -> Measurement:
    f = t["fig5"]
    c = max(x for x in f["C"].unique() if x <= FIG5_LARGEST_C)

    def p2_at(loss: str, radius: float = FIG5_RADIUS) -> float:
        g = f[(f["loss"] == loss) & (f["C"] == c) & (f["p_norm"] >= radius)]
        return float(g.sort_values("iteration")["p2"].iloc[0])

    corr, logi = p2_at("correlation"), p2_at("logistic")
    return (
        f"C = {c:g}, at ||p|| = {FIG5_RADIUS:g}: p_2 = {corr:+.3f} (correlation) vs {logi:+.3f} (logistic)",
        verdict_of(corr > 0 > logi),
        "p_2 > 0 leans to the high-score token (1, 1), p_2 < 0 to (1, -1)",
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "gd_gmm_n1",
        "For n = 1, GD on p converges in direction to the GMM from any start",
        "Theorem 2, Fig 1(a)",
        "corr -> 1",
        _gd_to_gmm_n1,
    ),
    Claim(
        "gd_local_or_global",
        "GD reaches the GMM or an LMM depending on the start",
        "Theorem 3, Fig 1(b)",
        "both occur",
        lambda t, _cfg: _gd_local_or_global(t, "fig1b"),
    ),
    Claim(
        "gd_gmm_multi",
        "With several inputs, GD on p converges in direction to the GMM from various starts",
        "Section 2, Fig 1(c)",
        "corr -> 1",
        tables_only(_gd_gmm_multi),
    ),
    Claim(
        "gd_lmm_cone",
        "GD started inside the cone of an LMM converges to that LMM",
        "Theorem 3, Fig 2",
        "corr -> 1",
        _gd_lmm_cone,
    ),
    Claim(
        "n1_necessary",
        "With n = 2, two starts converge to two different directions (GMM and LMM)",
        "Appendix E, Fig 8",
        "both occur",
        lambda t, _cfg: _gd_local_or_global(t, "fig8"),
    ),
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
)
