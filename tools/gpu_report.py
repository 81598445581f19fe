"""docs/gpu/index.md: the GPU sessions committed under docs/gpu/<session>/ (the files that came back, docs/gpu.md);
and the sentence that says what of the paper-scale ViT has run, in the README and on the report's landing page.

    .venv/bin/python tools/gpu_report.py           # writes docs/gpu/index.md and the status sentences from the files
    .venv/bin/python tools/gpu_report.py --check   # exit 1 where a page is not what the sessions' files give

Every number on the page and in the sentences is read from those files and from workflow/config/paper.yaml; what the
run means is said in docs/vit.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
GPU_DOCS = REPO / "docs" / "gpu"
PAGE = GPU_DOCS / "index.md"
METRICS = "vit_gpu_metrics.csv"
COMPARED = ["test_acc", "soft_sparsity", "w_frobenius"]
PAPER_CONFIG = REPO / "workflow" / "config" / "paper.yaml"
DATASETS = {"cifar10": "CIFAR-10", "fashion_mnist": "Fashion-MNIST", "digits": "scikit-learn's digits"}
# Where the status sentence stands, between two marks: the README (Markdown) and the report's landing page (a Jinja
# template of reStructuredText, whose comments the report does not show).
STATUS_PAGES = {
    REPO / "README.md": ("<!-- gpu-status: tools/gpu_report.py -->", "<!-- /gpu-status -->", "md"),
    REPO / "workflow" / "report" / "workflow.rst": (
        "{# gpu-status: tools/gpu_report.py #}",
        "{# /gpu-status #}",
        "rst",
    ),
}
THREADS_AGAIN = 2  # vit.train.threads of the CPU rerun of vit_baseline for a session that did not bring it back


def sessions(folder: Path = GPU_DOCS) -> dict[str, dict]:
    """Each session folder's session.json, by folder name, in name order."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(folder.glob("*/session.json"))}


def table(rows: list[list[object]], header: list[str]) -> list[str]:
    """A Markdown table (a cell's own pipes escaped: ||W||_F)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell).replace("|", r"\|") for cell in row) + " |" for row in rows]


def session_rows(found: dict[str, dict]) -> list[str]:
    """One row per session: its command, machine, stages and epochs."""
    rows = []
    for name, s in found.items():
        stages = ", ".join(
            f"{stage} {v['seconds']:.0f}" + (" (cut)" if v["cut"] else "") for stage, v in s["stages"].items()
        )
        run = s.get("run", {})
        rows.append(
            [
                f"[{name}]({name}/session.log)",
                f"`{s.get('command', 'not recorded')}`",
                s["device"].get("name", "?"),
                s["device"]["torch"],
                stages,
                f"{run.get('epochs_planned', '-')} / {run.get('epochs_done', '-')}",
                f"{s['seconds']:.0f}",
            ]
        )
    header = ["session", "command", "device", "torch", "stages (s)", "epochs planned / done", "wall (s)"]
    return table(rows, header)


def pilot_rows(found: dict[str, dict], paper_epochs: int) -> list[str]:
    """The pilots' numbers and what ``paper_epochs`` epochs at the steady rate would take."""
    rows = []
    for name, s in found.items():
        if "pilot" not in s:
            continue
        p = s["pilot"]
        steady = float(p["steady_epoch_seconds"])
        rows.append(
            [
                name,
                f"{p['dtype']}, compiled {p['compiled']}",
                f"{float(p['images_per_s']):.0f}",
                f"{100 * p['mfu']:.1f} % of {s['device']['peak_tflops']:g} TFLOP/s ({s['device']['peak_source']})",
                f"{p['compile_seconds']:.1f}",
                f"{steady:.1f}",
                f"{float(p['peak_memory_mb']) / 1024:.1f}",
                f"{paper_epochs * steady / 3600:.2f}",
            ]
        )
    header = ["session", "precision", "training images/s", "MFU", "compile (s)", "steady epoch (s)"]
    return table(rows, [*header, "peak GPU memory (GiB)", f"{paper_epochs} epochs of these images (h)"])


def comparison_rows(found: dict[str, dict]) -> list[str]:
    """The epochs every session's run shares, side by side: same settings and schedule, the GPU's own variation."""
    runs = {name: pd.read_csv(GPU_DOCS / name / METRICS) for name in found if (GPU_DOCS / name / METRICS).is_file()}
    if len(runs) < 2:
        return []
    shared = min(len(m) for m in runs.values())
    rows = [[e, *(f"{m[col][e]:.4g}" for col in COMPARED for m in runs.values())] for e in range(shared)]
    header = ["epoch", *(f"{col} ({name})" for col in COMPARED for name in runs)]
    same_lr = all(m["lr"][:shared].tolist() == next(iter(runs.values()))["lr"][:shared].tolist() for m in runs.values())
    gap = max(
        (a["test_acc"][:shared] - b["test_acc"][:shared]).abs().max() for a in runs.values() for b in runs.values()
    )
    note = (
        f"Learning rate identical at every shared epoch: {'yes' if same_lr else 'no'}. Largest difference of test "
        f"accuracy between the runs at a shared epoch: {gap:.4f}."
    )
    return [*table(rows, header), "", note]


def claims_rows(name: str) -> list[str]:
    """The ViT claims the session's page measured."""
    claims = pd.read_csv(GPU_DOCS / name / "vit_gpu_claims.csv")
    return table(claims[["claim_id", "measured", "verdict"]].values.tolist(), ["claim", "measured", "verdict"])


def baseline_line(name: str, session: dict) -> str:
    """Where the run's linear baseline is: its row in session.json, else (sessions before it travelled there) the
    rule's table computed again on a CPU, which need not agree with the node's."""
    if "baseline" in session:
        return (
            f"The linear baseline (its row in `{name}/session.json`): test accuracy {session['baseline']['test_acc']}."
        )
    path = GPU_DOCS / name / "vit_gpu_baseline_cpu.csv"
    if not path.is_file():
        return "The linear baseline's table stayed on the node."
    row = pd.read_csv(path).iloc[0]
    return (
        f"The linear baseline's table stayed on the node (its page gives its test accuracy to 3 decimals). Rule "
        f"`vit_baseline` under the session's configs, run again on a CPU with {THREADS_AGAIN} BLAS threads, gave "
        f"{row.test_acc:.4f} ([{name}/vit_gpu_baseline_cpu.csv]({name}/vit_gpu_baseline_cpu.csv)): lbfgs stopped "
        f"at its {row.n_iter}-iteration cap unconverged, so where it stops depends on the machine and its threads."
    )


def status(found: dict[str, dict], style: str) -> str:
    """What of the paper-scale ViT has run, from the sessions' files (the run that made a page) and paper.yaml: its
    model, card, epochs and data set against the paper's, and the pilot's projection of the paper's run. ``style``:
    ``md`` or ``rst`` links."""
    vit = yaml.safe_load(PAPER_CONFIG.read_text())["vit"]
    model, epochs = vit["model"], vit["train"]["epochs"]
    run = [name for name in found if (GPU_DOCS / name / "vit_gpu.md").is_file()][-1]
    dataset = str(pd.read_csv(GPU_DOCS / run / METRICS)["dataset"].iloc[-1])
    done, device = found[run]["run"]["epochs_done"], found[run]["device"]["name"]
    steady = max(float(s["pilot"]["steady_epoch_seconds"]) for s in found.values() if "pilot" in s)
    page = "[docs/gpu/index.md](docs/gpu/index.md)" if style == "md" else "``docs/gpu/index.md``"
    config = "`workflow/config/paper.yaml`" if style == "md" else "``workflow/config/paper.yaml``"
    return (
        f"Figures 6-7 have been made at the paper's model (patch {model['patch_size']}, width {model['embed_dim']}, "
        f"depth {model['depth']}) on one {device} for {done} epochs, on {DATASETS.get(dataset, dataset)} "
        f"{'instead of CIFAR-10 ' if dataset != 'cifar10' else ''}and not for the paper's {epochs} epochs ({page}). "
        f"The paper's own run (CIFAR-10 for {epochs} epochs, {config}) has not been made; {epochs} epochs of the "
        f"pilot's images take about {epochs * steady / 3600:.1f} hours on that card (its steady epoch: {steady:.1f} s)."
    )


def with_status(text: str, marks: tuple[str, str, str], found: dict[str, dict]) -> str:
    """``text`` with the status sentence between its two marks."""
    start, end, style = marks
    head, rest = text.split(start, 1)
    return head + start + status(found, style) + end + rest.split(end, 1)[1]


def render(found: dict[str, dict]) -> str:
    """The page: sessions, pilots, the run with the page (the last such session), the runs compared."""
    paper_epochs = yaml.safe_load((REPO / "workflow/config/paper.yaml").read_text())["vit"]["train"]["epochs"]
    run = [name for name in found if (GPU_DOCS / name / "vit_gpu.md").is_file()][-1]
    lines = [
        "# Figures 6-7 at ViT-B/2 on one GPU, measured",
        "",
        "Generated by `tools/gpu_report.py` from the files each session brought back (`docs/gpu/<session>/`, what "
        "they are: [docs/gpu.md](../gpu.md)); do not edit. What the run shows, and how it differs from the paper: "
        "[docs/vit.md](../vit.md#vit-b2-on-one-gpu).",
        "",
        "## Sessions",
        "",
        *session_rows(found),
        "",
        "## Pilot",
        "",
        *pilot_rows(found, paper_epochs),
        "",
        f"## The run ({run})",
        "",
        f"Its page, with every epoch: [{run}/vit_gpu.md]({run}/vit_gpu.md).",
        "",
        f"![Figure 6]({run}/vit_gpu_fig6.png)",
        "",
        f"![Figure 7]({run}/vit_gpu_fig7.png)",
        "",
        *claims_rows(run),
        "",
        baseline_line(run, found[run])
        + " The W-ATT-SVM table and panel the page names stayed on the node too: the probe "
        "was off there (`vit.probe.w_svm_every: 0`), so both only say so.",
    ]
    compared = comparison_rows(found)
    if compared:
        lines += ["", "## The same settings trained twice", "", *compared]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed page instead of writing it")
    args = ap.parse_args()
    found = sessions()
    pages = {PAGE: render(found)} | {
        path: with_status(path.read_text(), marks, found) for path, marks in STATUS_PAGES.items()
    }
    stale = [path for path, text in pages.items() if path.read_text() != text]
    for path in stale:
        if args.check:
            print(f"{path.relative_to(REPO)} is not what the sessions' files give: run tools/gpu_report.py")
        else:
            path.write_text(pages[path])
            print(f"wrote {path.relative_to(REPO)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
