"""The docs' passages about the committed ViT runs (docs/results/<run>_*.csv, rule docs_vit) and the GPU sessions
(docs/gpu/<session>/): a run in one line, its claims, its heads against their W-ATT-SVM, the GPU sessions' speed and
claims measured again, the paper's 400 epochs on one GPU and on CPUs (passages of :mod:`maxmargin.docs.run_docs`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from maxmargin.docs import REPO
from maxmargin.docs.default_passages import claims_list, table

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
    n, margins = (sorted({int(v) for v in t[c]}) for c in ("n_images", "n_constraints"))
    note = (
        f"Head means over the {t['head'].nunique()} heads of the last layer, {'/'.join(map(str, margins))} margins "
        f"per head on {'/'.join(map(str, n))} images; {soft} of {len(t)} solutions soft-margin "
        f"([{run}_w_svm.csv](results/{run}_w_svm.csv) has every head)."
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
    """The paper's 400 epochs at stand-in scales on a CPU: the section's questions answered per run, each committed
    arm (``arms``: their vit.docs) in a row beside the GPU run of the same images (docs/gpu/session3), then each arm
    in bullets (the training images against the held-out ones, the number of images), Adam against SGD."""
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
    answered = {d: r["claims"] for d, r in runs.items()} | {"session3 (GPU)": gpu_run_claims("session3")}
    lines = [*say.answers_table(answered), ""]
    lines += ["| " + " | ".join(say.ARM_HEADER) + " |", "|" + " --- |" * len(say.ARM_HEADER)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    ids = ["vit_regime", "vit_w_direction", "vit_fig6_concentrates", "vit_w_svm_direction"]
    for docs, r in runs.items():
        lines += ["", f"`{docs}`: {vit_run(_folder, docs).removeprefix('The run: ').strip()}", ""]
        lines += say.run_lines(r["metrics"], r["w_svm"], r["claims"], guard, r["n_train"])
        gap = say.set_gap_line(r["w_svm_images"], guard["confidence"], guard["w_svm_equivalence"])
        lines += [gap] if gap else []
        if not r["w_svm_images"].empty:
            lines.append(
                say.curve_line(
                    r["w_svm_images"], w_svm["curve_tol"], int(r["w_svm"]["n_images"].iloc[0]), guard["confidence"]
                )
            )
        lines += say.claim_lines(r["claims"], [i for i in ids if i in set(r["claims"]["claim_id"])])
    adam, sgd = arms[0], arms[1]
    lines += ["", say.contrast_line(adam, runs[adam]["metrics"], sgd, runs[sgd]["metrics"], guard)]
    return "\n".join(lines) + "\n"
