"""Claims of gradient descent on the attention weights p alone (Theorems 2-3; Figures 1, 2 and 8), read from
directions.csv and fig1a.csv; and the readers of directions.csv that :mod:`.joint_and_dynamics` (Figures 3-5) shares.

directions.csv holds every max-margin direction of the synthetic instances (``direction`` records) and every GD run
next to the direction theory predicts for it (``gd_run`` records: its start, that direction's kind, the final cosine).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from maxmargin.claims.base import Claim, Config, Measurement, Tables, note_of, tables_only, verdict_of

# Threshold of the verdicts (the paper's "converges in direction").
CONVERGED_COSINE = 0.999  # a GD run has reached a direction: cosine at least this
# A cosine of float64 vectors is exact to a few units in the last place (the trajectory tables keep 17 digits): a
# fall along a path smaller than this is rounding, not a turn away from p_mm (Section 2's "consistently increases").
COSINE_ROUNDING = 10 * float(np.finfo(float).eps)


def runs_of(t: Tables, figure: str) -> pd.DataFrame:
    """The GD runs of the experiment ``figure`` (its ``gd_run`` records of directions.csv)."""
    d = t["directions"]
    return d[(d["record"] == "gd_run") & (d["figure"] == figure)]


def direction_of(t: Tables, figure: str, kind: str) -> np.ndarray:
    """The max-margin direction ``kind`` (``gmm``, ``p_mm``, ``v_mm``, ...) of the experiment ``figure``."""
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


def all_reach(r: pd.DataFrame, kind: str, rule: str, what: str = "starts") -> Measurement:
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
    r = runs_of(t, "fig1a")
    fig1 = cfg["synthetic"]["fig1"]
    _, verdict, note = all_reach(
        r,
        "gmm",
        f"normalized GD, eta {fig1['eta']:g}, {fig1['n_iter']} iterations, {_fig1_starts('fig1a', fig1)} "
        "(Fig 1(a) data)",
    )
    n_gmm, cos, norm = int((r["kind"] == "gmm").sum()), r["final_cosine"].min(), r["p_norm"].median()
    return f"{n_gmm}/{len(r)} starts -> GMM, min cosine {cos:.5f} at ||p|| ~ {norm:.0f}", verdict, note


def _gd_gmm_multi(t: Tables) -> Measurement:
    """Figure 1(c): with several inputs, GD converges in direction to the GMM from every start (Section 2)."""
    return all_reach(
        runs_of(t, "fig1c"), "gmm", f"holds when every start ends with cosine >= {CONVERGED_COSINE:g} with the GMM"
    )


def _path_cosines(traj: pd.DataFrame, direction: np.ndarray) -> pd.DataFrame:
    """cos(p(t), p_mm) at every recorded iteration of every run (p(t) = 0 left out: it has no direction)."""
    coords = [c for c in ("p1", "p2", "p3") if c in traj and traj[c].notna().all()]
    p = traj[coords].to_numpy(dtype=float)
    norm = np.linalg.norm(p, axis=1)
    keep = norm > 0
    cos = p[keep] @ direction[: len(coords)] / (norm[keep] * np.linalg.norm(direction[: len(coords)]))
    return traj.loc[keep, ["label", "iteration"]].assign(cosine=cos)


@dataclass(frozen=True)
class Fall:
    """The largest cumulative fall of a run's cos(p(t), p_mm): max over i < j of c_i - c_j, from iteration ``first``
    (cosine ``high``) to ``last`` (cosine ``low``); 0 from the start where the cosine never falls."""

    high: float
    low: float
    first: int
    last: int

    @property
    def size(self) -> float:
        return self.high - self.low

    def turn(self) -> str:
        """ "0.69 -> 15.3 degrees from p_mm, iterations 1 to 22"."""
        degrees = np.degrees(np.arccos(np.clip([self.high, self.low], -1.0, 1.0)))
        return f"{degrees[0]:.3g} -> {degrees[1]:.3g} degrees from p_mm, iterations {self.first} to {self.last}"

    def describe(self) -> str:
        """ "a fall of 0.0355 in cosine, 0.69 -> 15.3 degrees from p_mm, iterations 1 to 22"."""
        return f"a fall of {self.size:.3g} in cosine, {self.turn()}"


def largest_fall(path: pd.DataFrame) -> Fall:
    """The largest cumulative fall of a run's cosine (columns ``iteration``, ``cosine``): at each iteration j its
    fall below the highest cosine before it, and the largest of those; not the largest one-step fall, which
    understates a turn spread over many iterations."""
    cos, its = path["cosine"].to_numpy(dtype=float), path["iteration"].to_numpy()
    if cos.size == 0:
        return Fall(np.nan, np.nan, 0, 0)
    peak = np.maximum.accumulate(cos)
    j = int((peak - cos).argmax())
    i = int(cos[: j + 1].argmax())
    return Fall(float(cos[i]), float(cos[j]), int(its[i]), int(its[j]))


def _gd_corr_increases(t: Tables) -> Measurement:
    """Section 2, Figure 1(a): as t grows, cos(p(t), p_mm) consistently increases: no run's cosine falls below an
    earlier value of its own by more than :data:`COSINE_ROUNDING` (:func:`largest_fall`)."""
    runs = runs_of(t, "fig1a").set_index("run")
    paths = _path_cosines(t["fig1a"], direction_of(t, "fig1a", "gmm"))
    falls = {label: (largest_fall(g), float(g["cosine"].iloc[0])) for label, g in paths.groupby("label", sort=False)}
    turning = [label for label, (fall, _) in falls.items() if fall.size > COSINE_ROUNDING]
    worst = max(falls, key=lambda label: falls[label][0].size)
    fall = falls[worst][0]
    verdict = verdict_of(not turning and len(falls) > 0)
    why = "; ".join(
        f"the run from {_start(runs.loc[label, 'start'])} starts at cosine {first:.4f} with p_mm, turns away from it "
        f"({drop.describe()}) and then converges to it (final cosine {runs.loc[label, 'final_cosine']:.5f})"
        for label, (drop, first) in falls.items()
        if label in turning
    )
    return (
        f"{len(falls) - len(turning)}/{len(falls)} starts: cos(p(t), p_mm) never falls; largest fall "
        f"{fall.size:.3g}, from {_start(runs.loc[worst, 'start'])} ({fall.turn()})",
        verdict,
        note_of(
            verdict,
            why,
            f"a fall is the largest drop of a run's cosine below its own earlier value (max over i < j of c_i - c_j); "
            f"it counts where it is above {COSINE_ROUNDING:.1e}, the rounding of a float64 cosine; at every "
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


# An angle of a float64 path to a direction is exact to far below this: a start placed on the cone's edge (at its
# half-angle) is not outside it.
CONE_EDGE_DEG = 1e-6


def _cone_exits(traj: pd.DataFrame, lmm: np.ndarray) -> list[str]:
    """The paths of Figure 2 that leave the cone of half-angle ``cone_half_angle_deg`` around the LMM direction on
    the way: where each started (its signed angle to the LMM), the iterations it spends outside and how far out."""
    half = float(traj["cone_half_angle_deg"].iloc[0])
    coords = [c for c in ("p1", "p2", "p3") if c in traj and traj[c].notna().all()]
    exits = []
    for _, run in traj.groupby("label", sort=False):
        p = run[coords].to_numpy(dtype=float)
        cos = p @ lmm[: len(coords)] / (np.linalg.norm(p, axis=1) * np.linalg.norm(lmm[: len(coords)]))
        angle = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
        out = run["iteration"].to_numpy()[angle > half + CONE_EDGE_DEG]
        if out.size:
            start = np.degrees(np.arctan2(p[0, 1], p[0, 0]) - np.arctan2(lmm[1], lmm[0]))
            j = int(angle.argmax())
            exits.append(
                f"the start {start:+.3g} deg off the LMM is outside at {out.size} iterations from {out.min()} to "
                f"{out.max()}, up to {angle[j]:.3g} deg at iteration {int(run['iteration'].iloc[j])}"
            )
    return exits


def _gd_lmm_cone(t: Tables, cfg: Config) -> Measurement:
    """Theorem 3, Figure 2: GD started inside the cone C_{mu,R} of an LMM converges in direction to that LMM. The
    theorem says nothing of the path in between: the measurement says which paths leave the cone on the way."""
    fig2 = cfg["synthetic"]["fig2"]
    measured, verdict, note = all_reach(
        runs_of(t, "fig2"),
        "lmm",
        f"cone of half-angle {fig2['half_angle_deg']:g} deg at radius {fig2['start_radius']:g} around the Fig 1(b) "
        "LMM; wider or closer cones let GD escape to the GMM; Theorem 3 claims convergence from inside the cone, "
        "not that a path stays in it",
    )
    exits = _cone_exits(t["fig2"], direction_of(t, "fig2", "lmm"))
    n = t["fig2"]["label"].nunique()
    left = f"{len(exits)} of {n} paths {'leaves' if len(exits) == 1 else 'leave'} the cone on the way"
    left += f" ({'; '.join(exits)})" if exits else ""
    return f"{measured}; {left}", verdict, note


def _gd_local_or_global(t: Tables, figure: str) -> Measurement:
    """Theorem 3, Figure 1(b) (and Figure 8): some starts reach the GMM and others an LMM."""
    r = runs_of(t, figure)
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
)
