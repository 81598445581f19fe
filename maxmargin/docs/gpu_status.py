"""The sentence that says what of the paper-scale ViT has run (the README's and the report's landing page's), from
the GPU sessions' files under docs/gpu/ (:mod:`maxmargin.docs.gpu_report` writes it with the sessions' page) and
workflow/config/paper.yaml. Each function takes the sessions' folder, so that a test can point it at its own.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from maxmargin.claims.sessions import DOCS as SESSION_DOCS
from maxmargin.docs import REPO
from maxmargin.registry.vit import DATASET_NAMES

PAPER_CONFIG = REPO / "workflow" / "config" / "paper.yaml"
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


def docs_name(session: dict) -> str:
    """The name of the session's run page (vit.docs): its files are <docs>.md, <docs>_metrics.csv, ..."""
    return session.get("docs", SESSION_DOCS)


def page_path(folder: Path, name: str, session: dict) -> Path:
    """The run page of session ``name`` in the sessions' ``folder``."""
    return folder / name / f"{docs_name(session)}.md"


def run_data(folder: Path, name: str, session: dict) -> tuple[str, int]:
    """The data set of the session's run and its number of training images, from its page's data line."""
    line = re.search(r"- Data: (\w+), (\d+) training", page_path(folder, name, session).read_text())
    return DATASET_NAMES.get(line[1], line[1]), int(line[2])


def status(found: dict[str, dict], style: str, folder: Path) -> str:
    """What of the paper-scale ViT has run, from the sessions' files (the last run that made a page) and paper.yaml:
    its model, card, epochs and data against the paper's, and the pilot's projection of the paper's run on all the
    training images. ``style``: ``md`` or ``rst`` links."""
    vit = yaml.safe_load(PAPER_CONFIG.read_text())["vit"]
    model, epochs = vit["model"], vit["train"]["epochs"]
    run = [name for name, s in found.items() if page_path(folder, name, s).is_file()][-1]
    dataset, n_train = run_data(folder, run, found[run])
    done, device = found[run]["run"]["epochs_done"], found[run]["device"].get("name", "CPU")
    pilot = [name for name, s in found.items() if "pilot" in s][-1]
    steady, card = float(found[pilot]["pilot"]["steady_epoch_seconds"]), found[pilot]["device"]["name"]
    page = "[docs/gpu/index.md](docs/gpu/index.md)" if style == "md" else "``docs/gpu/index.md``"
    config = "`workflow/config/paper.yaml`" if style == "md" else "``workflow/config/paper.yaml``"
    span = f"the paper's {epochs} epochs" if done == epochs else f"{done} epochs (the paper trains {epochs})"
    return (
        f"Figures 6-7 have been made at the paper's model (patch {model['patch_size']}, width {model['embed_dim']}, "
        f"depth {model['depth']}) on one {device} for {span}, on {n_train:,} {dataset} training images "
        f"{'instead of CIFAR-10' if dataset != 'CIFAR-10' else ''} ({page}). The paper's own run (CIFAR-10 for "
        f"{epochs} epochs, {config}) has not been made; {epochs} epochs at the steady epoch {pilot}'s pilot measured "
        f"on the {card} ({steady:.1f} s) take about {epochs * steady / 3600:.1f} hours."
    )


def with_status(text: str, marks: tuple[str, str, str], found: dict[str, dict], folder: Path) -> str:
    """``text`` with the status sentence between its two marks."""
    start, end, style = marks
    head, rest = text.split(start, 1)
    return head + start + status(found, style, folder) + end + rest.split(end, 1)[1]
