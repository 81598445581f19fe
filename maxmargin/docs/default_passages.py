"""The docs' passages about the default run (docs/results/default/, rule docs_tables): the claims, the census
verdicts and proportions, the key-plane angles, the basin, the regularization paths and Lemma 1, each written from
the run's committed tables (a passage ``<!-- run: NAME ARG ... -->`` of :mod:`maxmargin.docs.run_docs`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from maxmargin.docs import REPO

TABLES = REPO / "docs" / "results" / "default"


def table(name: str, folder: Path = TABLES) -> pd.DataFrame:
    """A committed table of the default run."""
    return pd.read_csv(folder / f"{name}.csv")


def claims_list(folder: Path, *ids: str, name: str = "claims") -> str:
    """Each claim's verdict and measurement (and, where it does not hold, its note: the reason first), from the
    claims table ``name`` in ``folder``."""
    claims = table(name, folder).set_index("claim_id")
    lines = []
    for claim_id in ids:
        row = claims.loc[claim_id]
        line = f"- `{claim_id}` (**{row.verdict}**): {row.measured}"
        why = str(row.note).removeprefix(f"{row.verdict}: ")
        lines.append(line + (f". Why: {why}" if row.verdict in ("differs", "inconclusive") else ""))
    return "\n".join(lines) + "\n"


def census_verdicts(folder: Path) -> str:
    """Every census claim that does not hold, what the paper says and what was measured, and why (its note)."""
    claims = table("claims", folder)
    census = claims[claims["claim_id"].str.startswith("census_")]
    apart = census[census["verdict"].isin(["differs", "inconclusive"])]
    lines = [
        f"- **`{r.claim_id}`** (**{r.verdict}**). The paper: {r.claim} ({r.source}: {r.paper_value}). Measured: "
        f"{r.measured}. Why: {r.note.removeprefix(r.verdict + ': ')}"
        for r in apart.itertuples()
    ]
    held = ", ".join(f"`{c}`" for c in census.loc[census["verdict"] == "holds", "claim_id"])
    return "\n".join([*lines, f"- The other census claims hold: {held or 'none'}."]) + "\n"


def final_angles(folder: Path) -> str:
    """The largest final angle of a GD run to the direction it reaches, per experiment of the key-plane panels."""
    d = table("directions", folder)
    runs = d[(d["record"] == "gd_run") & d["figure"].isin(["fig1a", "fig1b", "fig1c", "fig2", "fig8"])]
    worst = runs.groupby("figure", sort=True)["final_cosine"].min()
    angles = ", ".join(f"{np.degrees(np.arccos(min(c, 1.0))):.2f} degrees in {f}" for f, c in worst.items())
    return f"Every labelled start ends near its direction: at most {angles}.\n"


def _deg(mu: float) -> float:
    return float(np.degrees(np.arccos(1 - mu)))


def basin(folder: Path) -> str:
    """Where normalized GD sends the starts of the grid, and the measured onset of Theorem 3's cone."""
    s = table("basin_summary", folder)
    cone = table("basin_cone", folder)
    counts = s[s["variant"] == "normalized"].set_index("class")["n_starts"]
    normalized = cone[cone["variant"] == "normalized"].sort_values("R")
    onset = normalized[normalized["mu_cone"] > 0].iloc[0]
    last = normalized.iloc[-1]
    constant = s[s["variant"] == "constant"].set_index("class")["n_starts"]
    return (
        f"Normalized GD sends {counts.get('lmm', 0)} starts to the LMM and {counts.get('gmm', 0)} to the GMM "
        f"({counts.get('not_saturated', 0)} do not saturate). Theorem 3's cone opens at R0 = {onset.R:.3g} "
        f"(mu = {onset.mu_cone:.2g}, {_deg(onset.mu_cone):.2f} degrees) and widens to {_deg(last.mu_cone):.2f} "
        f"degrees at R = {last.R:.3g}. Constant-step GD with eta = 1 / (a bound L_p <= "
        f"{cone['L_p_bound'].iloc[0]:.2f}) leaves {constant.get('not_saturated', 0)} of the {int(constant.sum())} "
        "starts unsaturated.\n"
    )


def fig9a(folder: Path) -> str:
    """Figure 9(a)'s proportions: not saturated at the smallest d, and the GMM share over d."""
    s = table("census_summary", folder).sort_values("d")
    first = s.iloc[0]
    climb = " -> ".join(f"{r.pct_gmm:.1f}%" for r in s.itertuples())
    dims = ", ".join(str(int(d)) for d in s["d"])
    return (
        f"At d = {int(first.d)}, {first.pct_not_saturated:.1f}% "
        f"[{first.pct_not_saturated_ci_low:.1f}, {first.pct_not_saturated_ci_high:.1f}] of the trials do not saturate; "
        f"the GMM share climbs {climb} over d = {dims}.\n"
    )


def census_budget(folder: Path) -> str:
    """The budget study's table (census_budget.csv) and what more iterations changed."""
    b = table("census_budget", folder).sort_values(["d", "n_iter"])
    rows = [
        f"| {int(r.d)} | {int(r.n_iter)} | {r.pct_not_saturated:.1f}% | {r.p_gap_negative:.3f} "
        f"[{r.p_gap_negative_ci_low:.3f}, {r.p_gap_negative_ci_high:.3f}] | {int(r.n_labels_moved)} |"
        for r in b.itertuples()
    ]
    moved = []
    for d, g in b.groupby("d"):
        first, last = g.iloc[0], g.iloc[-1]
        moved.append(
            f"at d = {int(d)}, {first.pct_not_saturated:.1f}% -> {last.pct_not_saturated:.1f}% not saturated and "
            f"{int(last.n_labels_moved)} labels moved from {int(first.n_iter)} to {int(last.n_iter)} iterations, "
            f"P(gap < 0) {first.p_gap_negative:.3f} -> {last.p_gap_negative:.3f}"
        )
    head = [
        "| d | n_iter | not saturated | P(gap < 0) [95% interval] | labels moved from the smallest budget |",
        "| --- | --- | --- | --- | --- |",
    ]
    return "\n".join([*head, *rows, "", "More iterations: " + "; ".join(moved) + "."]) + "\n"


def regpath(folder: Path) -> str:
    """The regularization paths at their largest R, the local optimum near the LMM, GD beside them, the solver."""
    r, c = table("regpath", folder), table("regpath_compare", folder)
    top = r[r["R"] == r["R"].max()].set_index(["instance", "kind"])["cosine"]
    gd = c[c["method"] == "gd"].sort_values("R").groupby(["run", "kind"]).tail(1)
    gd_text = "; ".join(
        f"{g.run} ends at cosine {g.cosine:.5f} with the {g.kind.upper()} at ||p|| = {g.R:.0f}"
        for g in gd[gd["cosine"] > 0].itertuples()
    )
    local = c[(c["method"] == "local") & (c["kind"] == "lmm")].sort_values("R")
    path_loss = r[(r["instance"] == "fig1b") & (r["kind"] == "gmm")].set_index("R")["log_excess_loss"]
    radii = np.sort(r.loc[r["instance"] == "fig1b", "R"].unique())
    before = radii[radii < local["R"].iloc[0]].max()
    fig1b = r[r["instance"] == "fig1b"]
    joint = r[r["instance"] != "fig1b"]
    lines = [
        f"- **Fig. 1(b), Theorem 1.** At R = {r['R'].max():g} the path's 1 - cos with the GMM is "
        f"{1 - top['fig1b', 'gmm']:.1e}, its cosine with the LMM {top['fig1b', 'lmm']:.4f}. Beside it, {gd_text}.",
        f"- **The local optimum near the LMM** (`regpath_compare.csv`, method `local`): from R = "
        f"{local['R'].iloc[0]:.2f} on (not at the grid radius before, {before:.2f}), cosine with the LMM "
        f"{local['cosine'].iloc[0]:.5f} there and {local['cosine'].iloc[-1]:.6f} at R = {local['R'].iloc[-1]:g}. Its "
        f"log(L - inf L) stays at {local['log_excess_loss'].iloc[0]:.3f} while the path's falls from "
        f"{path_loss.loc[local['R'].iloc[0]]:.1f} to {path_loss.iloc[-1]:.1f}: the path prefers the GMM.",
        f"- **Fig. 3(a), Theorem 5.** At R = {r['R'].max():g}, 1 - cos is {1 - top['fig3a', 'p_mm']:.1e} with p_mm "
        f"(= p_relax here) and {1 - top['fig3a', 'v_mm']:.1e} with v_mm.",
        f"- **Fig. 3(b), Theorem 6.** At R = {r['R'].max():g}, 1 - cos is {1 - top['fig3b', 'p_relax']:.1e} with "
        f"p_relax, while the cosine with p_mm stays at {top['fig3b', 'p_mm']:.4f}; 1 - cos with v_mm "
        f"{1 - top['fig3b', 'v_mm']:.1e}.",
        f"- **Solver.** Largest KKT residual on any path: {r['kkt_residual'].max():.1e}. On the joint paths at least "
        f"{int(joint['n_at_best'].min())} of {int(joint['n_starts'].max())} starts ended at the kept solution, on "
        f"the Fig. 1(b) path at least {int(fig1b['n_at_best'].min())} of {int(fig1b['n_starts'].max())}.",
    ]
    return "\n".join(lines) + "\n"


def lemma1(folder: Path) -> str:
    """Lemma 1's largest deviation per instance."""
    t = table("lemma1", folder)
    per = ", ".join(f"{r.max_deviation:.1e} ({r.instance})" for r in t.itertuples())
    return f"- **Lemma 1.** `max_deviation` {per}.\n"
