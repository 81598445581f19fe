"""docs/gpu/index.md: the GPU sessions committed under docs/gpu/<session>/ (the files that came back, docs/gpu.md);
and the sentence that says what of the paper-scale ViT has run, in the README and on the report's landing page
(:mod:`.gpu_status`).

    .venv/bin/python -m maxmargin.docs.gpu_report           # unpacks each archive, writes the page and sentences
    .venv/bin/python -m maxmargin.docs.gpu_report --check   # exit 1 where a file is not what the sessions' files give

(``.venv/bin/python tools/gpu_report.py``, the command the docs name, runs it with the same arguments.)

A session brings its page back packed (<docs>.tar.gz: the page and every file it links, each listed with its sha256
in session.json's ``files``): this unpacks it beside it, each member checked against that list, so that the page's
links and images work where the session's files are committed. Every number on the page and in the sentences is read
from those files and from workflow/config/paper.yaml; what the run means is said in docs/vit.md. A folder of
docs/gpu/ without its session.json (a session brought back in part) stops it, named, before anything is written: the
page and the sentence are never made from the other sessions as if it were not there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tarfile
from pathlib import Path

import pandas as pd
import yaml

from maxmargin.claims.sessions import DOCS as SESSION_DOCS
from maxmargin.claims.sessions import session_claims, session_config
from maxmargin.docs import REPO
from maxmargin.docs.gpu_status import PAPER_CONFIG, STATUS_PAGES, docs_name, page_path, run_data, with_status
from maxmargin.docs.gpu_tables import pilot_rows, session_rows, speed_rows, table
from maxmargin.files import atomic_path

GPU_DOCS = REPO / "docs" / "gpu"
PAGE = GPU_DOCS / "index.md"
MEMBER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # an archive's member: a plain file name, nothing above it
COMPARED = ["test_acc", "soft_sparsity", "w_frobenius"]
THREADS_AGAIN = 2  # vit.train.threads of the CPU rerun of vit_baseline for a session that did not bring it back


class IncompleteSession(ValueError):
    """A folder of docs/gpu/ without its session.json: what the page and the status sentence would say without it
    would be another session's, so nothing is written."""


def sessions(folder: Path | None = None) -> dict[str, dict]:
    """Each session folder's session.json, by folder name, in name order; an :class:`IncompleteSession` naming
    every folder that has none (a session brought back in part), never a page made from the others."""
    folder = GPU_DOCS if folder is None else folder
    if missing := [p for p in sorted(folder.iterdir()) if p.is_dir() and not (p / "session.json").is_file()]:
        raise IncompleteSession(
            "\n".join(
                f"{_shown(path)}: no session.json, so nothing says what that session ran or what its files are; "
                "bring it back with the session's other files (docs/gpu.md), or move the folder out of docs/gpu/ "
                "(nothing written)"
                for path in missing
            )
        )
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(folder.glob("*/session.json"))}


def _shown(path: Path) -> Path:
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def metrics_file(name: str, session: dict) -> Path:
    return GPU_DOCS / name / f"{docs_name(session)}_metrics.csv"


def page_file(name: str, session: dict) -> Path:
    return page_path(GPU_DOCS, name, session)


def unpack(folder: Path, session: dict, check: bool) -> list[str]:
    """The members of each archive the session brought back (session.json's ``files``: those with ``members``),
    written beside it (``check``: only compared); what is wrong or stale, one line each. A member whose bytes are
    not the sha256 the session recorded, or whose name is not a plain file name, is never written."""
    problems = []
    for archive, record in session.get("files", {}).items():
        if "members" not in record:
            continue
        path = folder / archive
        if not path.is_file():
            problems.append(f"{path}: missing (session.json lists it)")
            continue
        with tarfile.open(path, "r:gz") as tar:
            found = {m.name: m for m in tar.getmembers()}
            for name, digest in record["members"].items():
                member = found.get(name)
                if member is None or not member.isfile() or not MEMBER.match(name) or name in ("session.json",):
                    problems.append(f"{path}: no plain member {name!r}")
                    continue
                data = tar.extractfile(member).read()
                if hashlib.sha256(data).hexdigest() != digest:
                    problems.append(f"{path}: {name} is not the file the session recorded (sha256)")
                    continue
                target = folder / name
                if target.is_file() and target.read_bytes() == data:
                    continue
                if check:
                    problems.append(f"{target} is not {archive}'s member: run tools/gpu_report.py")
                else:
                    with atomic_path(target) as tmp:
                        tmp.write_bytes(data)
                    print(f"unpacked {_shown(target)}")
    return problems


def comparison_rows(found: dict[str, dict]) -> list[str]:
    """The epochs every session's run shares, side by side: same settings and schedule, the GPU's own variation."""
    runs = {  # a run a session found made by an earlier one (nothing trained) is no second training
        name: pd.read_csv(metrics_file(name, s))
        for name, s in found.items()
        if metrics_file(name, s).is_file() and s.get("run", {}).get("made_here", True)
    }
    if len(runs) < 2:
        return []
    shared = min(len(m) for m in runs.values())
    first = next(iter(runs.values()))
    rows = [
        [first["epoch"][e], *(f"{m[col][e]:.4g}" for col in COMPARED for m in runs.values())] for e in range(shared)
    ]
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


def claims_rows(name: str, session: dict) -> list[str]:
    """The run's ViT claims measured by today's claims code from the files it brought back, beside the verdict the
    node's page recorded (the code of its commit)."""
    today = session_claims(GPU_DOCS / name, REPO)
    node_file = GPU_DOCS / name / f"{docs_name(session)}_claims.csv"
    node = pd.read_csv(node_file).set_index("claim_id")["verdict"] if node_file.is_file() else pd.Series(dtype=str)
    rows = [[r.claim_id, r.measured, r.verdict, node.get(r.claim_id, "-")] for r in today.itertuples()]
    note = (
        f"Measured again by today's claims code (`maxmargin/claims/sessions.py`) from the files {name} brought back; "
        f"the last column is the node's own record ([{node_file.name}]({name}/{node_file.name}), the code it ran)."
    )
    return [note, "", *table(rows, ["claim", "measured (today's code)", "verdict", "the node's verdict"])]


def runs_rows(found: dict[str, dict]) -> list[str]:
    """One row per run that made a page: card, epochs, training images, and where its loss, accuracy, soft-sparsity
    and ||W||_F ended (from its metrics table)."""
    rows = []
    for name, s in found.items():
        if not page_file(name, s).is_file():
            continue
        m = pd.read_csv(metrics_file(name, s))
        dataset, n_train = run_data(GPU_DOCS, name, s)
        first, last = m.iloc[0], m.iloc[-1]
        rows.append(
            [
                f"[{name}]({name}/{docs_name(s)}.md)",
                s["device"].get("name", "?"),
                s["run"]["epochs_done"],
                f"{n_train:,} {dataset}",
                f"{last.train_loss:.3f} (lowest {m.train_loss.min():.3f})",
                f"{last.train_acc:.3f}",
                f"{last.test_acc:.3f} (highest {m.test_acc.max():.3f})",
                f"{first.soft_sparsity:.3f} -> {last.soft_sparsity:.3f}",
                f"{first.w_frobenius:.3g} -> {last.w_frobenius:.3g}",
            ]
        )
    header = ["run", "device", "epochs", "training images", "train loss, last row", "train acc", "test acc"]
    return table(rows, [*header, "soft-sparsity", "\\|\\|W\\|\\|_F"])


def baseline_line(name: str, session: dict) -> str:
    """Where the run's linear baseline is: its row in session.json, else (sessions before it travelled there) the
    rule's table computed again on a CPU, which need not agree with the node's."""
    if "baseline" in session:
        return (
            f"The linear baseline (its row in `{name}/session.json`): test accuracy "
            f"{float(session['baseline']['test_acc']):.4f}."
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


def probe_line(name: str, session: dict) -> str:
    """What became of the session's W-ATT-SVM probe (session.json's ``probe``; sessions without one had it off)."""
    probe = session.get("probe")
    if probe is None:
        every = session_config(GPU_DOCS / name, REPO)["vit"]["train"]["snapshot_every"]
        return (
            f"The session kept no snapshots (`vit.train.snapshot_every` is {every} in its configs), so rule "
            "`vit_probe` had nothing to read: the W-ATT-SVM table and panel its page names only say so."
        )
    heads = f", {probe['heads_done']} of {probe['heads']} heads done" if "heads" in probe else ""
    cvxopt = "" if probe.get("cvxopt", True) else " (cvxopt was not on the node: its fallbacks need it)"
    if probe["status"] == "done":
        table = f"{docs_name(session)}_w_svm.csv"
        return (
            f"The W-ATT-SVM probe ran on the node in {probe['seconds']:.0f} s{heads}: every head against its "
            f"max-margin solution is on the page and in [{name}/{table}]({name}/{table})."
        )
    what = (
        f"not started ({probe['reason']})"
        if probe["status"] == "not started"
        else f"{probe['status']} after {probe['seconds']:.0f} s{heads}{cvxopt}"
    )
    return (
        f"The W-ATT-SVM probe was {what}: the page was made without its table and panel (`vit.docs_w_svm: false`) "
        'and says so, and its W-ATT-SVM claims are "not run".'
    )


def ray_line(name: str, session: dict) -> str:
    """What became of the session's ray test (session.json's ``ray``; empty where its configs did not ask for it)."""
    ray = session.get("ray")
    if ray is None:
        return ""
    if ray["status"] == "done":
        table = f"{docs_name(session)}_decisive_ray.csv"
        return (
            f" The ray test ran on the node in {ray['seconds']:.0f} s: the training loss along each head's ray and its "
            f"max-margin ray is on the page and in [{name}/{table}]({name}/{table})."
        )
    what = (
        f"not started ({ray['reason']})"
        if ray["status"] == "not started"
        else f"{ray['status']} after {ray['seconds']:.0f} s"
    )
    return f' The ray test was {what}: the page was made without its table and section, and its claim is "not run".'


def without_w_svm(session: dict) -> bool:
    """Whether the session's page was made without the W-ATT-SVM probe's table and panel: its probe did not finish
    (a session without a ``probe`` had it off, and its page names the table and panel, which say so)."""
    probe = session.get("probe")
    return probe is not None and probe["status"] != "done"


def unprobed_rows(found: dict[str, dict], shown: str | None) -> list[str]:
    """The sessions whose page came back without the W-ATT-SVM part (their probe did not finish), but ``shown``."""
    lines = []
    for name, s in found.items():
        if name == shown or not page_file(name, s).is_file() or not without_w_svm(s):
            continue
        docs, run = docs_name(s), s.get("run", {})
        lines += [
            f"### {name}: {run.get('epochs_done', '-')} epochs, the page without the W-ATT-SVM probe",
            "",
            probe_line(name, s) + ray_line(name, s),
            "",
            f"Its page, with every epoch and its claims: [{name}/{docs}.md]({name}/{docs}.md).",
            "",
            f"![Figure 6]({name}/{docs}_fig6.png)",
            "",
            f"![Figure 7]({name}/{docs}_fig7.png)",
            "",
        ]
    return ["## Runs whose probe did not finish", "", *lines[:-1]] if lines else []


def render(found: dict[str, dict]) -> str:
    """The page: sessions, pilots, the run with the page (the last session whose page has its W-ATT-SVM part, else
    the last with a page), the other pages made without it (their probe did not finish), the runs compared."""
    paper_epochs = yaml.safe_load(PAPER_CONFIG.read_text())["vit"]["train"]["epochs"]
    pages = [name for name, s in found.items() if page_file(name, s).is_file()]
    runs = [name for name in pages if not without_w_svm(found[name])] or pages
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
        "## Speed",
        "",
        *speed_rows(found),
        "",
        "## Runs",
        "",
        *runs_rows(found),
    ]
    if runs:
        run, docs = runs[-1], docs_name(found[runs[-1]])
        lines += [
            "",
            f"## The run ({run})",
            "",
            f"Its page, with every epoch: [{run}/{docs}.md]({run}/{docs}.md).",
            "",
            f"![Figure 6]({run}/{docs}_fig6.png)",
            "",
            f"![Figure 7]({run}/{docs}_fig7.png)",
            "",
            *claims_rows(run, found[run]),
            "",
            baseline_line(run, found[run]) + " " + probe_line(run, found[run]) + ray_line(run, found[run]),
        ]
    unprobed = unprobed_rows(found, runs[-1] if runs else None)
    if unprobed:
        lines += ["", *unprobed]
    groups: dict[str, dict[str, dict]] = {}
    for name, s in found.items():
        groups.setdefault(docs_name(s), {})[name] = s
    for docs, group in groups.items():
        compared = comparison_rows(group)
        if compared:
            title = "The same settings trained twice" + ("" if docs == SESSION_DOCS else f" ({docs})")
            lines += ["", f"## {title}", "", *compared]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing them")
    args = ap.parse_args(argv)
    try:
        found = sessions()
    except IncompleteSession as err:
        print(err)
        return 1
    problems = [line for name, s in found.items() for line in unpack(GPU_DOCS / name, s, args.check)]
    for line in problems:
        print(line)
    pages = {PAGE: render(found)} | {
        path: with_status(path.read_text(), marks, found, GPU_DOCS) for path, marks in STATUS_PAGES.items()
    }
    stale = [path for path, text in pages.items() if path.read_text() != text]
    for path in stale:
        if args.check:
            print(f"{_shown(path)} is not what the sessions' files give: run tools/gpu_report.py")
        else:
            with atomic_path(path) as tmp:
                tmp.write_text(pages[path])
            print(f"wrote {_shown(path)}")
    return 1 if problems or (args.check and stale) else 0  # written, only a damaged archive is left


if __name__ == "__main__":
    sys.exit(main())
