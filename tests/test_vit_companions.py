"""The companion panel of Figure 7 (maxmargin/figures/vit/companions.py): each last-layer head against its W-ATT-SVM
solution, drawn from table vit_w_svm; what it joins and what it says where the probe measured few epochs."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from conftest import REPO
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D

from maxmargin.figures.vit import draw_w_svm
from maxmargin.figures.vit.companions import CEILING_COLOR, MIN_JOINED

# GPU session3 probed its 400-epoch run at epochs 0 and 400 only; the CPU 400-epoch Adam run every 50 epochs, its
# shuffled null at the first and last snapshot only.
TWO_EPOCHS = REPO / "docs" / "gpu" / "session3" / "vit_gpu_paper_epochs_w_svm.csv"
EVERY_50 = REPO / "docs" / "results" / "cpu_paper_epochs_adam_w_svm.csv"


def drawn_series(fig) -> list[Line2D]:
    """Every line of the panel's axes that draws measured points (legend proxies hold none)."""
    return [line for ax in fig.axes for line in ax.get_lines() if len(line.get_xdata())]


def notes(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


@pytest.mark.parametrize("path", [TWO_EPOCHS, EVERY_50])
def test_no_line_joins_fewer_than_three_measured_points(path) -> None:
    """A series of fewer than MIN_JOINED points is drawn as its points (no line between them: two epochs joined read
    as a steady rise); a series of more is joined. Session3's panel: every series has two points, none is joined,
    no band spans the two, and each panel says that only epochs 0 and 400 were measured."""
    fig = draw_w_svm(pd.read_csv(path), min_w_svm_gain=0.2)
    series = drawn_series(fig)
    short = [line for line in series if len(line.get_xdata()) < MIN_JOINED]
    assert short and all(line.get_linestyle() == "None" and line.get_marker() not in ("", "None") for line in short)
    long = [line for line in series if len(line.get_xdata()) >= MIN_JOINED]
    if path == TWO_EPOCHS:
        assert not long and not [c for ax in fig.axes for c in ax.collections if isinstance(c, PolyCollection)]
        assert notes(fig) == ["measured at epochs 0 and 400 only:\nno trend between them was measured"] * 2
    else:
        assert long and all(line.get_linestyle() != "None" for line in long) and notes(fig) == []
        shuffled = [line for line in series if line.get_label() == "null: shuffled selection"]
        assert [len(line.get_xdata()) for line in shuffled] == [2] and shuffled[0].get_linestyle() == "None"
    plt.close(fig)


def test_every_heads_ceiling_is_drawn_in_the_colour_its_legend_gives() -> None:
    """Panel (a) keys the rank ceiling in grey: every head's ceiling is drawn in it, not in the head's colour (the
    last head's would cover the others')."""
    fig = draw_w_svm(pd.read_csv(EVERY_50), min_w_svm_gain=0.2)
    heads = fig.axes[0]
    ceilings = [line for line in heads.get_lines() if line.get_linestyle() == ":"]
    assert len(ceilings) == 1 + pd.read_csv(EVERY_50)["head"].nunique()  # one per head, and the legend's key
    assert {line.get_color() for line in ceilings} == {CEILING_COLOR}
    plt.close(fig)
