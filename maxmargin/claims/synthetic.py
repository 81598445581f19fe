"""Claims of the synthetic family (Theorems 2-6, Figures 1-5 and 8), read from directions.csv and the experiment
tables fig3a.csv, fig4.csv and fig5.csv."""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd

from maxmargin.claims.base import Claim, Config, Measurement, Tables, note_of, tables_only, verdict_of
from maxmargin.core.gd import cosine

# Thresholds of the verdicts (the paper's "converges in direction", "saturates", "levels off").
CONVERGED_COSINE = 0.999  # a GD run has reached a direction: cosine at least this
DISTINCT_COSINE = 0.99  # two directions differ (p_relax vs p_mm, Theorem 6): cosine below this
SATURATED_PROBABILITY = 0.99  # the softmax (and logistic) probability has reached 1
LEVELLED_OFF_GROWTH = 0.2  # constant-step ||p|| grows by less than this share of normalized GD's (Fig 4(b))
FIG5_LARGEST_C = 10  # Fig 5's bias is read at the largest score C up to this
FIG5_RADIUS = 5.0  # ... where the trajectory first reaches this ||p||
# A cosine of float64 vectors is exact to a few units in the last place (the trajectory tables keep 17 digits): a
# fall along a path smaller than this is rounding, not a turn away from p_mm (Section 2's "consistently increases").
COSINE_ROUNDING = 10 * float(np.finfo(float).eps)


def _runs(t: Tables, figure: str) -> pd.DataFrame:
    d = t["directions"]
    return d[(d["record"] == "gd_run") & (d["figure"] == figure)]


def _direction(t: Tables, figure: str, kind: str) -> np.ndarray:
    d = t["directions"]
    row = d[(d["record"] == "direction") & (d["figure"] == figure) & (d["kind"] == kind)].iloc[0]
    return np.asarray(json.loads(row["direction"]))


def _start(start: str) -> str:
    """A run's start p(0) (a JSON list) in key-plane coordinates."""
    a, b = json.loads(start)[:2]
    return f"({a:.3g}, {b:.3g})"


def _runs_off(r: pd.DataFrame, kind: str) -> str:
    """The runs that did not reach ``kind`` at cosine :data:`CONVERGED_COSINE`: where each started and went."""
    off = r[(r["kind"] != kind) | (r["final_cosine"] < CONVERGED_COSINE)]
    return "; ".join(
        f"the run from {_start(x.start)}{'' if x.run.startswith('start') else f' ({x.run})'} ends "
        f"{'on the ' + x.kind.upper() if x.kind != kind else 'short of it'} (cosine {x.final_cosine:.5f} with it)"
        for x in off.itertuples()
    )


def _all_reach(r: pd.DataFrame, kind: str, rule: str, what: str = "starts") -> Measurement:
    """Every run of ``r`` reaches the ``kind`` direction (final cosine at least :data:`CONVERGED_COSINE`)."""
    n = int((r["kind"] == kind).sum())
    verdict = verdict_of(n == len(r) > 0 and r["final_cosine"].min() >= CONVERGED_COSINE)
    return (
        f"{n}/{len(r)} {what} -> {kind.upper()}, min cosine {r['final_cosine'].min():.5f}",
        verdict,
        note_of(verdict, _runs_off(r, kind) or "no run", rule),
    )


def _gd_to_gmm_n1(t: Tables, cfg: Config) -> Measurement:
    """Theorem 2, Figure 1(a): with n = 1, GD converges in direction to the GMM from every start."""
    r = _runs(t, "fig1a")
    fig1 = cfg["synthetic"]["fig1"]
    _, verdict, note = _all_reach(
        r,
        "gmm",
        f"normalized GD, eta {fig1['eta']:g}, {fig1['n_iter']} iterations, {_fig1_starts('fig1a', fig1)} "
        "(Fig 1(a) data)",
    )
    n_gmm, cos, norm = int((r["kind"] == "gmm").sum()), r["final_cosine"].min(), r["p_norm"].median()
    return f"{n_gmm}/{len(r)} starts -> GMM, min cosine {cos:.5f} at ||p|| ~ {norm:.0f}", verdict, note


def _gd_gmm_multi(t: Tables) -> Measurement:
    """Figure 1(c): with several inputs, GD converges in direction to the GMM from every start (Section 2)."""
    return _all_reach(
        _runs(t, "fig1c"), "gmm", f"holds when every start ends with cosine >= {CONVERGED_COSINE:g} with the GMM"
    )


def _fig5_gmm(t: Tables) -> Measurement:
    """Figure 5: whatever the loss and the score C, every run from p(0) = 0 ends on the GMM direction (Section 4:
    "the asymptotic direction of gradient descent is determined by p_mm")."""
    return _all_reach(
        _runs(t, "fig5"),
        "gmm",
        f"every loss and every C of synthetic.fig5; holds when every run ends with cosine >= {CONVERGED_COSINE:g} "
        "with the GMM",
        what="runs",
    )


def _path_cosines(traj: pd.DataFrame, direction: np.ndarray) -> pd.DataFrame:
    """cos(p(t), p_mm) at every recorded iteration of every run (p(t) = 0 left out: it has no direction)."""
    coords = [c for c in ("p1", "p2", "p3") if c in traj and traj[c].notna().all()]
    p = traj[coords].to_numpy(dtype=float)
    norm = np.linalg.norm(p, axis=1)
    keep = norm > 0
    cos = p[keep] @ direction[: len(coords)] / (norm[keep] * np.linalg.norm(direction[: len(coords)]))
    return traj.loc[keep, ["label", "iteration"]].assign(cosine=cos)


def _largest_fall(path: pd.DataFrame) -> tuple[float, int, int]:
    """The largest fall of a run's cosine from one recorded iteration to the next, and its two iterations."""
    fall = -np.diff(path["cosine"].to_numpy())
    j = int(fall.argmax()) if fall.size else 0
    its = path["iteration"].to_numpy()
    return (float(fall[j]), int(its[j]), int(its[j + 1])) if fall.size else (0.0, 0, 0)


def _gd_corr_increases(t: Tables) -> Measurement:
    """Section 2, Figure 1(a): as t grows, cos(p(t), p_mm) consistently increases, up to :data:`COSINE_ROUNDING`."""
    runs = _runs(t, "fig1a").set_index("run")
    paths = _path_cosines(t["fig1a"], _direction(t, "fig1a", "gmm"))
    falls = {label: (_largest_fall(g), float(g["cosine"].iloc[0])) for label, g in paths.groupby("label", sort=False)}
    turning = [label for label, ((fall, _, _), _) in falls.items() if fall > COSINE_ROUNDING]
    worst = max(falls, key=lambda label: falls[label][0][0])
    (fall, t0, t1), _ = falls[worst]
    verdict = verdict_of(not turning and len(falls) > 0)
    why = "; ".join(
        f"the run from {_start(runs.loc[label, 'start'])} starts at cosine {first:.4f} with p_mm, turns away from it "
        f"(a fall of {drop:.2g} from iteration {a} to {b}) and then converges to it (final cosine "
        f"{runs.loc[label, 'final_cosine']:.5f})"
        for label, ((drop, a, b), first) in falls.items()
        if label in turning
    )
    return (
        f"{len(falls) - len(turning)}/{len(falls)} starts: cos(p(t), p_mm) never falls; largest fall {fall:.2g}, "
        f"from {_start(runs.loc[worst, 'start'])} (iteration {t0} to {t1})",
        verdict,
        note_of(
            verdict,
            why,
            f"a fall counts where it is above {COSINE_ROUNDING:.1e}, the rounding of a float64 cosine; at every "
            "recorded iteration of fig1a.csv (Figure 1(a)'s angle panel draws the same paths)",
        ),
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
    """Theorem 3, Figure 2: GD started inside the cone C_{mu,R} of an LMM converges in direction to that LMM."""
    fig2 = cfg["synthetic"]["fig2"]
    return _all_reach(
        _runs(t, "fig2"),
        "lmm",
        f"cone of half-angle {fig2['half_angle_deg']:g} deg at radius {fig2['start_radius']:g} around the Fig 1(b) "
        "LMM; wider or closer cones let GD escape to the GMM",
    )


def _gd_local_or_global(t: Tables, figure: str) -> Measurement:
    """Theorem 3, Figure 1(b) (and Figure 8): some starts reach the GMM and others an LMM."""
    r = _runs(t, figure)
    counts = r["kind"].value_counts()
    n_gmm, n_lmm, cos = counts.get("gmm", 0), counts.get("lmm", 0), r["final_cosine"].min()
    verdict = verdict_of(n_gmm > 0 and n_lmm > 0 and cos >= CONVERGED_COSINE)
    missing = [
        f"none of the {len(r)} starts reaches {name}" for name, n in (("the GMM", n_gmm), ("an LMM", n_lmm)) if n == 0
    ]
    short = [
        f"the run from {_start(x.start)} ends at cosine {x.final_cosine:.5f} with its {x.kind.upper()}"
        for x in r[r["final_cosine"] < CONVERGED_COSINE].itertuples()
    ]
    return (
        f"p(0) -> GMM: {_went_to(r, 'gmm')}; p(0) -> LMM: {_went_to(r, 'lmm')}; min cosine {cos:.5f}",
        verdict,
        note_of(
            verdict,
            "; ".join(missing + short),
            f"holds when some starts reach the GMM and others an LMM, each at cosine >= {CONVERGED_COSINE:g}",
        ),
    )


def _joint(t: Tables, figure: str, p_kind: str) -> Measurement:
    """Theorems 5-6, Figure 3: joint GD takes v to v_mm and p to ``p_kind`` (p_mm, or p_relax when p_relax differs
    from p_mm)."""
    r = _runs(t, figure)
    p_runs = r[r["kind"] == "p_relax"]
    v_runs = r[r["kind"] == "v_mm"]
    final = np.array([json.loads(x) for x in p_runs["direction"]])
    cos_target = float(cosine(final, _direction(t, figure, p_kind)).min())
    cos_pmm = float(cosine(final, _direction(t, figure, "p_mm")).max())
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
    cos = {f: float(cosine(_direction(t, f, "v_mm"), np.array([0.0, 1.0]))) for f in ("fig3a", "fig3b")}
    verdict = verdict_of(min(cos.values()) >= CONVERGED_COSINE)
    why = "; ".join(f"cos(v_mm, [0, 1]) is {c:.5f} in {f}" for f, c in cos.items() if c < CONVERGED_COSINE)
    return (
        "; ".join(f"{f}: v_mm/||v_mm|| = {(np.round(_direction(t, f, 'v_mm'), 5) + 0.0).tolist()}" for f in cos),
        verdict,
        note_of(verdict, why, f"holds when cos(v_mm, [0, 1]) >= {CONVERGED_COSINE:g} in both"),
    )


def _fig3_relax_vs_mm(t: Tables) -> Measurement:
    """Appendix E: in Figure 3(a) every optimal token is a support vector, so p_relax = p_mm; in 3(b) the yellow
    input is not one, so p_relax differs from p_mm."""
    cos = {f: float(cosine(_direction(t, f, "p_relax"), _direction(t, f, "p_mm"))) for f in ("fig3a", "fig3b")}
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


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "gd_gmm_n1",
        "For n = 1, GD on p converges in direction to the GMM from any start",
        "Theorem 2, Fig 1(a)",
        "corr -> 1",
        _gd_to_gmm_n1,
    ),
    Claim(
        "gd_corr_increases",
        "As t grows, the correlation of p(t) / ||p(t)|| with p_mm / ||p_mm|| consistently increases",
        "Section 2, Fig 1(a)",
        "increases along every path",
        tables_only(_gd_corr_increases),
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
    Claim(
        "loss_gmm_limit",
        "Whatever the loss and the score C, the asymptotic direction of GD is the GMM's (transient bias only)",
        "Section 4, Fig 5",
        "corr -> 1",
        tables_only(_fig5_gmm),
    ),
)
