"""The tables of docs/gpu/index.md (:mod:`maxmargin.docs.gpu_report`) that the sessions' session.json alone gives:
the sessions, their pilots and every measured training rate."""

from __future__ import annotations


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


def speed_rows(found: dict[str, dict]) -> list[str]:
    """Each measured training rate (a pilot's steady epochs, or a run's steps alone over its last epochs) and its
    MFU, against the first pilot's."""
    measured = []
    for name, s in found.items():
        device = s["device"]
        if "pilot" in s:
            p = s["pilot"]
            what = f"pilot, {int(p['epochs'])} epochs"
            measured.append((name, device, what, float(p["images_per_s"]), float(p["mfu"])))
        if "images_per_s" in s.get("run", {}):
            run = s["run"]
            what = f"run, its steps alone over its last {run['rate_epochs']} epochs"
            measured.append((name, device, what, float(run["images_per_s"]), float(run["mfu"])))
    if not measured:
        return []
    first = measured[0]
    rows = [
        [
            name,
            d.get("name", "?"),
            what,
            f"{rate:,.0f}",
            f"{100 * mfu:.1f} % of {d['peak_tflops']:g} TFLOP/s ({d['peak_source']})",
            f"{rate / first[3]:.2f}",
        ]
        for name, d, what, rate, mfu in measured
    ]
    header = ["session", "device", "measured over", "training images/s", "MFU", f"images/s / {first[0]}'s"]
    note = (
        "MFU: the training FLOPs per image (forward and backward, `benchmarks/vit_benchmark.py`) times the images/s, "
        "over the card's dense bf16 peak. Rates of different cards compare cards and code together."
    )
    return [*table(rows, header), "", note]
