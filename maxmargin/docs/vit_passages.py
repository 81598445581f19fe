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
    """A committed ViT run's tables (docs/results/<docs>_*.csv; rule docs_vit; an empty table for one the run did not
    make), its number of training images and its optimiser (from its page)."""
    names = ("metrics", "w_svm", "w_svm_images", "claims", "decisive_ray", "decisive_gd")
    read = {key: RESULTS / f"{docs}_{key}.csv" for key in names}
    tables = {key: pd.read_csv(path) if path.is_file() else pd.DataFrame() for key, path in read.items()}
    page = (RESULTS / f"{docs}.md").read_text()
    tables["n_train"] = int(re.search(r"- Data: \w+, (\d+) training", page)[1])
    tables["optimizer"] = re.search(r"- Recipe: (\w+)", page)[1]
    return tables


def _default_vit() -> dict:
    """The ``vit`` section of workflow/config/default.yaml (the guard the 400-epoch runs' claims are judged by)."""
    from maxmargin.config import merged_config

    return merged_config([], REPO / "workflow/config/default.yaml")["vit"]


def _probe_counts(w: pd.DataFrame) -> dict[str, int]:
    """Each image set's number of images at the probe's last snapshot, the judged set first."""
    from maxmargin.registry.vit_w_svm import JUDGED_IMAGES

    last = w[w["epoch"] == w["epoch"].max()]
    sets = last["images"].fillna("test") if "images" in last else pd.Series("test", index=last.index)
    counts = last.groupby(sets)["n_images"].max()
    return {name: int(counts[name]) for name in JUDGED_IMAGES if name in counts}


OPTIMIZERS = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD"}  # vit.train.optimizer, as the docs name it
# The claims of each run's bullets in the 400-epoch section, where its claims table has them.
PAPER_EPOCHS_CLAIMS = [
    "vit_regime",
    "vit_regime_markers",
    "vit_w_direction",
    "vit_fig6_concentrates",
    "vit_w_svm_direction",
    "vit_ray_precondition",
    "vit_frozen_converges",
    "vit_one_layer_converges",
]


def _arm_lines(folder: Path, docs: str, r: dict, vit: dict) -> list[str]:
    """One 400-epoch arm in bullets: the run, its loss, saturation, sparsity, direction and heads, W's gradient, the
    training images against the held-out ones, the number of images, the decisive experiment and its claims."""
    from maxmargin.claims import vit_runs as say
    from maxmargin.claims.vit_theory_runs import decisive_line, gradient_line

    guard = vit["guard"]
    lines = ["", f"`{docs}`: {vit_run(folder, docs).removeprefix('The run: ').strip()}", ""]
    lines += say.run_lines(r["metrics"], r["w_svm"], r["claims"], guard, r["n_train"])
    lines.append(gradient_line(r["metrics"], guard))
    gap = say.set_gap_line(r["w_svm_images"], guard["confidence"], guard["w_svm_equivalence"])
    lines += [gap] if gap else []
    if not r["w_svm_images"].empty:
        used = _probe_counts(r["w_svm"])
        chosen = next(iter(used.values()))
        lines.append(say.curve_line(r["w_svm_images"], vit["w_svm"]["curve_tol"], chosen, guard["confidence"], used))
    lines.append(decisive_line(r["decisive_ray"], r["decisive_gd"]))
    return lines + say.claim_lines(r["claims"], [i for i in PAPER_EPOCHS_CLAIMS if i in set(r["claims"]["claim_id"])])


def vit_paper_epochs(_folder: Path, *arms: str) -> str:
    """The paper's 400 epochs at stand-in scales on a CPU: the section's questions answered per run (one row per
    claim), each committed arm (``arms``: their vit.docs) in a row beside the GPU run of the same images
    (docs/gpu/session3), then each arm in bullets (:func:`_arm_lines`), Adam against SGD."""
    from maxmargin.claims import vit_runs as say
    from maxmargin.claims.sessions import session_config, session_tables

    vit = _default_vit()
    runs = {docs: _committed_run(docs) for docs in arms}
    rows = [say.arm_row(d, r["metrics"], r["w_svm"], r["claims"], vit["guard"]) for d, r in runs.items()]
    gpu = session_tables(GPU / "session3")
    gpu_guard = session_config(GPU / "session3", REPO)["vit"]["guard"]
    rows.append(
        say.arm_row("session3 (GPU)", gpu["vit_metrics"], gpu["vit_w_svm"], gpu_run_claims("session3"), gpu_guard)
    )
    answered = {d: r["claims"] for d, r in runs.items()} | {"session3 (GPU)": gpu_run_claims("session3")}
    lines = [*say.answers_table(answered), ""]
    lines += ["| " + " | ".join(say.ARM_HEADER) + " |", "|" + " --- |" * len(say.ARM_HEADER)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    for docs, r in runs.items():
        lines += _arm_lines(_folder, docs, r, vit)
    adam, sgd = arms[0], arms[1]
    lines += ["", say.contrast_line(adam, runs[adam]["metrics"], sgd, runs[sgd]["metrics"], vit["guard"])]
    return "\n".join(lines) + "\n"


def vit_paper_epochs_words(_folder: Path, *arms: str) -> str:
    """The 400-epoch section's "In words", from the committed arms' metrics and claims
    (:func:`maxmargin.claims.vit_theory_runs.in_words`)."""
    from maxmargin.claims.vit_theory_runs import in_words

    runs = {docs: _committed_run(docs) for docs in arms}
    answered = {
        docs: {
            "metrics": r["metrics"],
            "verdicts": r["claims"].set_index("claim_id")["verdict"].to_dict(),
            "ray": r["decisive_ray"],
        }
        for docs, r in runs.items()
    }
    lines = in_words(answered, _default_vit()["guard"], lambda docs: OPTIMIZERS[runs[docs]["optimizer"]])
    return "\n".join(lines) + "\n"


def vit_verdicts(_folder: Path, claim: str, *runs: str) -> str:
    """One claim's verdict on each named run: a committed CPU run (docs/results/<run>_claims.csv) or a GPU session's
    (docs/gpu/<run>/, measured again by today's claims code)."""
    said = []
    for run in runs:
        if (GPU / run / "session.json").is_file():
            claims, name = gpu_run_claims(run), f"{run} (GPU)"
        else:
            claims, name = pd.read_csv(RESULTS / f"{run}_claims.csv"), run
        said.append(f"{name} **{claims.set_index('claim_id').loc[claim, 'verdict']}**")
    return f"`{claim}` on those runs: {', '.join(said)}.\n"


def vit_w_svm_reading(_folder: Path, run: str) -> str:
    """A committed run's heads against their W-ATT-SVM in words (:func:`maxmargin.claims.vit_runs.w_svm_reading`)."""
    from maxmargin.claims.vit_w_svm_reading import w_svm_reading

    claims = pd.read_csv(RESULTS / f"{run}_claims.csv")
    return w_svm_reading(table(f"{run}_w_svm", RESULTS), claims) + "\n"
