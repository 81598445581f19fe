"""The recipe study's figure (panel vit_recipes, maxmargin/figures/vit/recipes.py) and its committed pages: readable
labels at any growth of ||W||_F, the legend off the data, the red line of a stand-in data set on a figure drawn
from a committed per-epoch table, and a page whose figure cannot be redrawn saying so."""

from __future__ import annotations

import itertools

import matplotlib
import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from matplotlib.text import Text

from maxmargin.figures import style
from maxmargin.figures.vit import WARNING_COLOR
from maxmargin.pipeline import drawing_function

RESULTS = REPO / "docs" / "results"


def drawn(table: pd.DataFrame) -> matplotlib.figure.Figure:
    """The registered panel drawn as rule plot_vit draws it (pipeline.draw_panel: the registered function, the
    shared style), rendered so that every tick label has its text and place."""
    with style.paper_style():
        fig = drawing_function("vit_recipes")(table, num_classes=10)
        fig.canvas.draw()
    return fig


def study(growth: float, recipes: int = 6) -> pd.DataFrame:
    """A study of ``recipes`` recipes over three evaluations whose ||W||_F grows up to ``growth`` times."""
    rows = [
        {"recipe": f"d{64 * (r + 1)}-adam-1e-3-warmup", "step": step, "test_acc": 0.1 + 0.1 * k * (r + 1) / recipes,
         "soft_sparsity": 1.0 - 0.3 * k * (r + 1) / recipes, "w_frobenius": 0.2 * growth ** (k / 2 * (r + 1) / recipes),
         "dataset": "fashion_mnist"}
        for r in range(recipes)
        for k, step in enumerate((0, 235, 470))
    ]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("growth", [1.5, 4.0, 51.0, 1e4])
def test_no_labels_collide_and_the_legend_covers_no_panel(growth: float) -> None:
    """The depth-12 study's ||W||_F grew 51-fold: its log axis labelled 0.9 over 1 and 9 over 10, and its legend sat on
    the lines of the first panel."""
    fig = drawn(study(growth))
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels() if t.get_visible() and t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in labels]
        assert len(boxes) >= 2, (growth, ax.get_title())
        for (a, box_a), (b, box_b) in itertools.combinations(zip(labels, boxes, strict=True), 2):
            assert not box_a.overlaps(box_b), (growth, ax.get_title(), a.get_text(), b.get_text())
    (legend,) = fig.legends
    assert not any(legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    matplotlib.pyplot.close(fig)


def test_a_committed_per_epoch_table_redraws_with_the_stand_in_line() -> None:
    """The one recipe study whose every epoch is committed (rule docs_vit_recipes writes the CSV beside its page),
    drawn again without training: Fashion-MNIST, said in red."""
    table = pd.read_csv(RESULTS / "cpu_paper_epochs_sgd_pilot.csv")
    fig = drawn(table)
    red = [t.get_text() for t in fig.findobj(Text) if t.get_color() == WARNING_COLOR]
    assert red == ["WARNING: made from Fashion-MNIST, a stand-in for the paper's CIFAR-10"]
    assert np.isclose(fig.axes[-1].get_lines()[0].get_ydata()[0], 1.0)  # ||W||_F relative to its first value
    matplotlib.pyplot.close(fig)


def recipe_pages() -> list[str]:
    """The committed pages of recipe studies (rule docs_vit_recipes: docs/results/<vit_recipes.docs>.md)."""
    return sorted(p.stem for p in RESULTS.glob("*.md") if p.read_text().startswith("# ViT recipe study"))


@pytest.mark.parametrize("page", recipe_pages())
def test_a_recipe_figure_that_cannot_be_redrawn_says_so(page: str) -> None:
    """Two studies' figures were drawn before the red stand-in line and their per-epoch tables were not kept: their
    pages say so and how to make them again (the page's own command: it trains); every other page has its CSV."""
    text = (RESULTS / f"{page}.md").read_text()
    assert (RESULTS / f"{page}.png").exists() and f"![recipe study]({page}.png)" in text
    if (RESULTS / f"{page}.csv").exists():
        assert f"[{page}.csv]({page}.csv)" in text
        return
    assert "This figure predates the red stand-in line" in text, page
    command = text.split(" of `", 1)[1].split("`", 1)[0]
    assert command.startswith("snakemake ") and command.endswith(f"-- docs/results/{page}.md")
    assert f"`{page}.csv`" in text  # the table the next run leaves beside the page


def test_the_readme_names_every_figure_without_the_red_line() -> None:
    """The README says that every figure not made from CIFAR-10 says so in red, and names the exceptions: the recipe
    figures whose per-epoch table was not kept (their pages say they predate the red line), and no other."""
    readme = (REPO / "README.md").read_text()
    assert "every figure not made from CIFAR-10 says so in red" in readme
    for page in recipe_pages():
        lacking = not (RESULTS / f"{page}.csv").exists()
        assert (f"[{page}.png](docs/results/{page}.md)" in readme) == lacking, page


def test_the_pages_found_are_the_committed_studies() -> None:
    assert {"vit_recipes_vitb_cpu", "vit_depth12_study", "cpu_paper_epochs_sgd_pilot"} <= set(recipe_pages())
