"""The docs' numbers of the committed runs, written from their tables: the default run's (docs/results/default/, rule
docs_tables), the ViT runs' (docs/results/<run>_*.csv, rule docs_vit) and the GPU sessions' (docs/gpu/<session>/).

A page holds each generated passage between ``<!-- run: NAME ARG ... -->`` and ``<!-- /run -->``; this script
rewrites every passage from the tables (:data:`PASSAGES`: NAME -> function), so that no number about a committed
run is typed into the prose of docs/figures.md, docs/census.md, docs/regpath.md and docs/vit.md. Run by ``make
gallery`` after the tables are copied; tests/test_docs_numbers.py checks that the pages are what the tables give.

    python tools/run_docs.py           # rewrite the passages of the pages
    python tools/run_docs.py --check   # exit 1 where a page is not what the tables give
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
TABLES = REPO / "docs" / "results" / "default"
PAGES = [REPO / "docs" / name for name in ("figures.md", "census.md", "regpath.md", "vit.md")]
BLOCK = re.compile(r"(<!-- run: ([\w ]+?) -->\n)(.*?)(<!-- /run -->)", re.DOTALL)


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


RESULTS = REPO / "docs" / "results"  # the committed ViT runs' files (rule docs_vit): <run>_{metrics,claims,w_svm}.csv
GPU = REPO / "docs" / "gpu"  # what the GPU sessions brought back


def vit_claims(_folder: Path, run: str, *ids: str) -> str:
    """The verdict, measurement and (where it does not hold) reason of each claim of a committed ViT run."""
    return claims_list(RESULTS, *ids, name=f"{run}_claims")


def vit_run(_folder: Path, run: str) -> str:
    """A committed ViT run in one line: data, epochs, optimiser steps and time, from its generated page."""
    page = (RESULTS / f"{run}.md").read_text()
    data = re.search(r"- Data: (.*?)\.\n", page)[1]
    recipe = re.search(r"- Recipe: (.*?)\.\n", page)[1]
    took = re.search(r"Training took ([\d.]+ min)", page)[1]
    machine = re.search(r"- Machine: (.*?), \d+ torch threads", page)[1]
    return f"The run: {data}; {recipe}; {took} of training on {machine} ([its page](results/{run}.md)).\n"


def vit_w_svm(_folder: Path, run: str) -> str:
    """Each committed run's heads against their W-ATT-SVM solutions, head means per measured epoch: the cosine, the
    matched nulls, the span share, the ceiling, the nuclear-norm cosine, the selections kept."""
    t = table(f"{run}_w_svm", RESULTS)
    m = t.groupby("epoch").mean(numeric_only=True).sort_index()
    columns = {
        "cosine": "cos(Wt_h, W_mm,h)",
        "null_rank": "null: random rank d_h",
        "null_shuffled": "null: shuffled selection",
        "span_cosine": "span share",
        "ceiling": "rank ceiling",
        "ceiling_fraction": "cos / ceiling",
        "cosine_nuclear": "cos with W_nuc",
        "cosine_frobenius_nuclear_images": "cos with W_fro (same images)",
        "selection_kept": "selections kept",
    }
    head = "| epoch | " + " | ".join(columns.values()) + " |"
    rows = [
        f"| {int(e)} | " + " | ".join("" if np.isnan(r[c]) else f"{r[c]:.3f}" for c in columns) + " |"
        for e, r in m.iterrows()
    ]
    soft = int((~t["hard_margin"].astype(bool)).sum())
    note = (
        f"Head means over the {t['head'].nunique()} heads of the last layer, {int(t['n_constraints'].iloc[0])} margins "
        f"per head on {int(t['n_images'].iloc[0])} probe images; {soft} of {len(t)} solutions soft-margin; rule "
        f"vit_probe took {t['seconds'].sum():.0f} s ([{run}_w_svm.csv](results/{run}_w_svm.csv) has every head)."
    )
    return "\n".join([note, "", head, "|" + " --- |" * (len(columns) + 1), *rows]) + "\n"


def gpu_run_claims(run: str) -> pd.DataFrame:
    """The ViT claims of a GPU session's run measured again by today's claims code from the files it brought back,
    under the configs the session ran (:func:`maxmargin.claims.sessions.session_claims`)."""
    from maxmargin.claims.sessions import session_claims

    return session_claims(GPU / run, REPO)


def vit_gpu(_folder: Path, pilot: str, run: str) -> str:
    """The GPU sessions: the pilot's speed and memory, and the run's ViT claims measured again by today's code."""
    from maxmargin.claims.vit_runs import claim_lines

    p = pd.read_csv(GPU / pilot / "vit_pilot.csv").iloc[0]
    session = json.loads((GPU / run / "session.json").read_text())
    device = session["device"]
    mfu = p["images_per_s"] * device["gflops_per_image_train"] / (1e3 * device["peak_tflops"])
    ids = ["vit_sparsity", "vit_learns", "vit_w_direction", "vit_fig6_concentrates"]
    node = f"{session.get('docs', 'vit_gpu')}_claims.csv"
    lines = [
        f"- Speed and memory ({pilot}'s pilot, {int(p['epochs'])} epochs on {p['device']}, {p['dtype']}, "
        f"compiled {p['compiled']}): {p['images_per_s']:,.0f} training images/s, {100 * mfu:.1f} % MFU against "
        f"{device['peak_tflops']:g} TFLOP/s ({device['peak_source']}), a steady epoch of "
        f"{p['epoch_seconds']:.1f} s, {p['peak_memory_mb'] / 1024:.1f} GiB of GPU memory at its peak.",
        f"- The run ({run}): {session['run']['epochs_done']} epochs of the paper's 400; its ViT claims, measured "
        "again by today's claims code from the files it brought back (the node's own verdicts are in "
        f"[{run}/{node}](gpu/{run}/{node})):",
        *(f"  {line}" for line in claim_lines(gpu_run_claims(run), ids)),
    ]
    return "\n".join(lines) + "\n"


def _speed_line(session: dict, pilot: str) -> str:
    """The run's training rate and MFU against ``pilot``'s, each on its own card."""
    p = pd.read_csv(GPU / pilot / "vit_pilot.csv").iloc[0]
    ref = json.loads((GPU / pilot / "session.json").read_text())["device"]
    ref_mfu = p["images_per_s"] * ref["gflops_per_image_train"] / (1e3 * ref["peak_tflops"])
    run, device = session["run"], session["device"]
    return (
        f"- **Speed.** {run['images_per_s']:,.0f} training images/s over the steps of its last {run['rate_epochs']} "
        f"epochs, {100 * run['mfu']:.1f} % MFU of {device['peak_tflops']:g} TFLOP/s ({device['peak_source']}) on the "
        f"{device['name']}, against {p['images_per_s']:,.0f} images/s and {100 * ref_mfu:.1f} % in {pilot}'s pilot on "
        f"the {p['device']} (x{run['images_per_s'] / p['images_per_s']:.2f}; another card, so this compares card and "
        "code together)."
    )


def vit_gpu_paper_epochs(_folder: Path, run: str, pilot: str) -> str:
    """The paper's 400 epochs at the paper's model on one GPU: the loss, soft-sparsity and ||W||_F, W's direction,
    the heads against their W-ATT-SVM, and the speed against ``pilot``'s, each from the files ``run`` brought back."""
    from maxmargin.claims.sessions import session_config, session_tables
    from maxmargin.claims.vit_runs import claim_lines, run_lines

    session, tables = json.loads((GPU / run / "session.json").read_text()), session_tables(GPU / run)
    claims, guard = gpu_run_claims(run), session_config(GPU / run, REPO)["vit"]["guard"]
    n_train = int(session["baseline"]["n_train"])
    lines = [
        *run_lines(tables["vit_metrics"], tables["vit_w_svm"], claims, guard, n_train),
        _speed_line(session, pilot),
        "- Its ViT claims, measured again by today's claims code from the files it brought back:",
        *(f"  {line}" for line in claim_lines(claims)),
    ]
    return "\n".join(lines) + "\n"


def _committed_run(docs: str) -> dict:
    """A committed ViT run's tables (docs/results/<docs>_*.csv; rule docs_vit) and its number of training images."""
    read = {key: RESULTS / f"{docs}_{key}.csv" for key in ("metrics", "w_svm", "w_svm_images", "claims")}
    tables = {key: pd.read_csv(path) if path.is_file() else pd.DataFrame() for key, path in read.items()}
    tables["n_train"] = int(re.search(r"- Data: \w+, (\d+) training", (RESULTS / f"{docs}.md").read_text())[1])
    return tables


def vit_paper_epochs(_folder: Path, *arms: str) -> str:
    """The paper's 400 epochs at stand-in scales on a CPU: each committed arm (``arms``: their vit.docs) in a row
    beside the GPU run of the same images (docs/gpu/session3), then each arm in bullets, Adam against SGD, the
    training images against the held-out ones and the number of images."""
    from maxmargin.claims import vit_runs as say
    from maxmargin.claims.sessions import session_config, session_tables
    from maxmargin.config import merged_config

    guard = merged_config([], REPO / "workflow/config/default.yaml")["vit"]["guard"]
    w_svm = merged_config([], REPO / "workflow/config/default.yaml")["vit"]["w_svm"]
    runs = {docs: _committed_run(docs) for docs in arms}
    rows = [say.arm_row(d, r["metrics"], r["w_svm"], r["claims"], guard) for d, r in runs.items()]
    gpu = session_tables(GPU / "session3")
    gpu_guard = session_config(GPU / "session3", REPO)["vit"]["guard"]
    rows.append(
        say.arm_row("session3 (GPU)", gpu["vit_metrics"], gpu["vit_w_svm"], gpu_run_claims("session3"), gpu_guard)
    )
    lines = ["| " + " | ".join(say.ARM_HEADER) + " |", "|" + " --- |" * len(say.ARM_HEADER)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    ids = ["vit_regime", "vit_w_direction", "vit_fig6_concentrates", "vit_w_svm_direction"]
    for docs, r in runs.items():
        lines += ["", f"`{docs}` ({vit_run(_folder, docs).removeprefix('The run: ').strip()})", ""]
        lines += say.run_lines(r["metrics"], r["w_svm"], r["claims"], guard, r["n_train"])
        lines += [line for line in [say.set_gap_line(r["w_svm"], guard["confidence"])] if line]
        if not r["w_svm_images"].empty:
            lines.append(say.curve_line(r["w_svm_images"], w_svm["curve_tol"], int(r["w_svm"]["n_images"].iloc[0])))
        lines += say.claim_lines(r["claims"], [i for i in ids if i in set(r["claims"]["claim_id"])])
    adam, sgd = arms[0], arms[1]
    lines += ["", say.contrast_line(adam, runs[adam]["metrics"], sgd, runs[sgd]["metrics"], guard)]
    return "\n".join(lines) + "\n"


PASSAGES: dict[str, Callable[..., str]] = {
    "vit_claims": vit_claims,
    "vit_run": vit_run,
    "vit_w_svm": vit_w_svm,
    "vit_gpu": vit_gpu,
    "vit_gpu_paper_epochs": vit_gpu_paper_epochs,
    "vit_paper_epochs": vit_paper_epochs,
    "claims": claims_list,
    "census_verdicts": census_verdicts,
    "final_angles": final_angles,
    "basin": basin,
    "fig9a": fig9a,
    "census_budget": census_budget,
    "regpath": regpath,
    "lemma1": lemma1,
}


class PassageError(Exception):
    """A passage the committed files cannot give: an unknown name, a missing file, or a file without what the
    passage reads (a run committed in part); the message names the passage and the file."""


_OPENED: list[str] | None = None  # the files the passage being written has opened (an audit hook adds them)
_HOOKED = False  # the hook is added once per process, at the first passage: audit hooks cannot be removed


def _shown(path: str | os.PathLike) -> str:
    """``path`` relative to the repository where it is inside it."""
    path = Path(os.fsdecode(path)).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def _note_open(event: str, args: tuple) -> None:
    if event == "open" and _OPENED is not None and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED.append(_shown(args[0]))


def passage(spec: str, folder: Path = TABLES) -> str:
    """The text of a passage ``NAME ARG ...`` from the tables in ``folder``. Where a run's files are missing or
    partial, :class:`PassageError` names the passage and the file, instead of the bare KeyError, IndexError or
    TypeError of the line that reads it."""
    global _OPENED, _HOOKED
    name, *args = spec.split()
    if name not in PASSAGES:
        raise PassageError(f"passage `{spec}`: no passage {name!r} (tools/run_docs.py has {', '.join(PASSAGES)})")
    if not _HOOKED:
        sys.addaudithook(_note_open)
        _HOOKED = True
    _OPENED = opened = []
    try:
        return PASSAGES[name](folder, *args)
    except (OSError, LookupError, TypeError, ValueError) as err:
        if isinstance(err, FileNotFoundError) and err.filename:
            what = f"{_shown(err.filename)} is missing (a run not committed, or not all of it)"
        else:  # pandas reads a file whole: what a passage then lacks is in one of the files it read
            read = ", ".join(dict.fromkeys(opened)) or "none"
            what = f"the files it read ({read}) lack what it reads (a run committed in part)"
        raise PassageError(f"passage `{spec}` cannot be written: {what}; {type(err).__name__}: {err}") from err
    finally:
        _OPENED = None


def rewritten(text: str, folder: Path = TABLES) -> str:
    """``text`` with every passage written from the tables in ``folder``."""
    return BLOCK.sub(lambda m: m[1] + passage(m[2], folder) + m[4], text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the pages with the tables instead of writing")
    args = parser.parse_args(argv)
    try:
        stale = [page for page in PAGES if rewritten(page.read_text()) != page.read_text()]
    except PassageError as err:
        print(f"run_docs: {err}", file=sys.stderr)
        return 1
    for page in stale:
        if args.check:
            print(f"{page.relative_to(REPO)} is not what docs/results/default/ gives: run tools/run_docs.py")
        else:
            page.write_text(rewritten(page.read_text()))
            print(f"wrote {page.relative_to(REPO)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
