"""The ViT claims of a GPU session's run, measured again by today's claims code from the files it brought back.

A session (docs/gpu.md) brings back its run's metrics, its W-ATT-SVM table where the probe finished, the decisive
experiment's tables its page includes (``vit.decisive.parts``: the ray test's where it finished), and its linear
baseline's row (``session.json``'s ``baseline``; the first sessions left the baseline's table on the node, and a CPU
rerun of rule ``vit_baseline`` stands in: ``vit_gpu_baseline_cpu.csv``). The node's own verdicts (``<docs>_claims.csv``)
are the record of the code it ran; these are today's, under the configs the session merged (``session.json``'s
``configs``: those of the repository; the per-session files under the results root only say where the kit lay).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd

from maxmargin.claims import evaluate_claims
from maxmargin.config import merged_config
from maxmargin.registry import columns

DOCS = "vit_gpu"  # the run's page name (vit.docs) of the sessions that did not record it
# The configs of the sessions that did not record theirs (tools/gpu_session.sh without GPU_SESSION_CONFIG).
SESSION_CONFIGS = ("workflow/config/paper.yaml", "workflow/config/gpu_session.yaml")


def session_record(folder: Path) -> dict:
    """The session's ``session.json``."""
    return json.loads((folder / "session.json").read_text())


def session_config(folder: Path, repo: Path) -> dict:
    """The config the session's run was made with: its repository configs merged over default.yaml, then the epochs
    it planned and the Figure 6 epochs the session wrote for them (``maxmargin.gpu.plan.fig6_epochs``)."""
    from maxmargin.gpu.plan import fig6_epochs

    record = session_record(folder)
    files = [repo / f for f in record.get("configs", SESSION_CONFIGS) if (repo / f).is_file()]
    config = merged_config(files, repo / "workflow/config/default.yaml")
    vit = config["vit"]
    epochs = record["run"]["epochs_planned"]
    vit["train"]["epochs"] = epochs
    vit["plots"]["fig6_epochs"] = fig6_epochs(epochs, vit["train"]["eval_every"])
    return config


def session_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """The run's tables as the session brought them back (the W-ATT-SVM table empty where the probe did not run)."""
    record = session_record(folder)
    docs = record.get("docs", DOCS)
    if "baseline" in record:
        baseline = pd.read_csv(io.StringIO(pd.DataFrame([record["baseline"]]).to_csv(index=False)))
    else:
        baseline = pd.read_csv(folder / f"{docs}_baseline_cpu.csv")
    w_svm = folder / f"{docs}_w_svm.csv"
    # the decisive experiment's tables of its page (vit.decisive.parts), where they came back: the others' claims are
    # then not run, as on the page
    decisive = {
        name: folder / f"{docs}_{name.removeprefix('vit_')}.csv" for name in ("vit_decisive_ray", "vit_decisive_gd")
    }
    return {
        "vit_metrics": pd.read_csv(folder / f"{docs}_metrics.csv"),
        "vit_baseline": baseline,
        "vit_w_svm": pd.read_csv(w_svm) if w_svm.is_file() else pd.DataFrame(columns=columns("vit_w_svm")),
        **{name: pd.read_csv(path) for name, path in decisive.items() if path.is_file()},
    }


def session_claims(folder: Path, repo: Path) -> pd.DataFrame:
    """The ViT claims of the session in ``folder`` (docs/gpu/<session>/) by today's claims code: one row per ViT
    claim (``claim_id``, ``measured``, ``verdict``, ``note``)."""
    claims = evaluate_claims(session_tables(folder), session_config(folder, repo))
    return claims[claims["claim_id"].str.startswith("vit_")].reset_index(drop=True)
