"""Every figure of the default DAG, drawn from the small CI run, against its baseline image: a change of
layout, legend, limits, markers or text shows up as a failed comparison with the diff image beside the figure.

The baselines are tests/baseline_images/<panel>.png. After an intended change of a figure, look at the new figures
and write them as the baselines with the one command:

    .venv/bin/python -m pytest tests/test_figure_images.py --regenerate-baselines

Each figure's PNG records its smallest text (pipeline.save_figure): at the gallery's scale no text may fall under
THUMBNAIL_TEXT_PX pixels: the README's thumbnails stay readable.
"""

from __future__ import annotations

import re
import shutil

import matplotlib.pyplot as plt
import numpy as np
import pytest
from conftest import CI_CONFIG, CI_RESULTS, DEFAULT_CONFIG, REPO, snakemake
from matplotlib.testing.compare import compare_images
from PIL import Image

from maxmargin import registry
from maxmargin.docs import gallery
from maxmargin.figures import style
from maxmargin.pipeline import draw_synthetic_panel, run_experiment, save_figure
from maxmargin.registry import derived

BASELINES = REPO / "tests" / "baseline_images"
# RMS of the pixel difference (0-255) a figure may differ by: text rendered by another FreeType, a curve of the
# small ViT moved by a last-bit difference of another CPU; a moved legend or changed limits is far above it.
TOLERANCE = 3.0
PANELS = list(registry.GALLERY)  # every panel of the default run
THUMBNAIL_TEXT_PX = 7.0  # the smallest text a gallery thumbnail may hold, in its pixels


def thumbnail_text_px(png) -> float:
    """The smallest text of a saved figure in the pixels of its gallery thumbnail (GALLERY_SCALE of its pixels)."""
    image = Image.open(png)
    return float(image.info[style.SMALLEST_TEXT_KEY]) * image.info["dpi"][0] / 72.0 * registry.GALLERY_SCALE


@pytest.mark.parametrize("size,readable", [(5.0, False), (7.0, True)])
def test_a_saved_figure_records_its_smallest_text(tmp_path, size: float, readable: bool) -> None:
    with style.paper_style():
        fig, ax = style.new_axes()
        ax.set_title("title")  # 9 pt
        ax.text(0.5, 0.5, "note", fontsize=size)
        ax.text(0.5, 0.2, "", fontsize=2)  # an empty text is not text a reader sees
    save_figure(fig, str(tmp_path / "f.pdf"), str(tmp_path / "f.png"))
    assert float(Image.open(tmp_path / "f.png").info[style.SMALLEST_TEXT_KEY]) == size
    assert (thumbnail_text_px(tmp_path / "f.png") >= THUMBNAIL_TEXT_PX) == readable


@pytest.mark.parametrize("panel", ["fig1a", "fig1b", "fig8"])
def test_figure1_shows_every_start_ending_near_the_direction_it_reaches(panel: str) -> None:
    """The key plane stops at a few token norms, so the angle panel beside it carries the convergence: each
    run's last angle is the arccos of its final cosine in the directions table, under 2 degrees at the default
    settings; the token an LMM selects is keyed locally-optimal (Definition 2), the others non-optimal."""
    name = registry.panel(panel).experiment
    settings, data = derived.experiment_settings(name, DEFAULT_CONFIG), derived.experiment_data(name, DEFAULT_CONFIG)
    tables = run_experiment(name, settings, data)
    fig = draw_synthetic_panel(panel, tables.trajectories, tables.tokens, tables.directions, {})
    runs = tables.directions[tables.directions["record"] == "gd_run"]
    last = [line.get_ydata()[-1] for line in fig.axes[1].get_lines()]
    np.testing.assert_allclose(last, np.degrees(np.arccos(runs["final_cosine"].clip(-1, 1))), atol=1e-6)
    assert max(last) < 2.0 and len(last) == len(runs)
    # the axis shows every path's closest approach (Figure 1(a)'s 0.69 degrees before its turn), not a floor above it
    lowest = min(np.nanmin(y[y > 0]) for y in (np.asarray(line.get_ydata()) for line in fig.axes[1].get_lines()))
    assert fig.axes[1].get_ylim()[0] <= lowest < 10 * fig.axes[1].get_ylim()[0]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    lmm = runs["kind"].eq("lmm").any()
    assert any(label.endswith("locally-optimal token, γ = 0.9" if panel == "fig1b" else "locally-optimal token, "
               "γ = -1.58") for label in legend) == lmm  # fmt: skip
    assert all("non-optimal" not in label for label in legend if "locally" in label)
    plt.close(fig)


@pytest.mark.parametrize("panel", ["fig1a", "fig1b", "fig1c"])
def test_figure1s_captions_name_the_directions_each_panel_draws(panel: str) -> None:
    """The three panels of Figure 1 share a caption's text, but only (b) draws an LMM direction (a dashed blue
    ray): its caption alone names one, and every caption names the dashed red GMM direction each panel draws."""
    from maxmargin.figures.style import COLORS

    name = registry.panel(panel).experiment
    settings, data = derived.experiment_settings(name, DEFAULT_CONFIG), derived.experiment_data(name, DEFAULT_CONFIG)
    tables = run_experiment(name, settings, data)
    fig = draw_synthetic_panel(panel, tables.trajectories, tables.tokens, tables.directions, {})
    rays = {line.get_color() for line in fig.axes[0].get_lines() if line.get_linestyle() == "--"}
    caption = derived.caption(registry.panel(panel), DEFAULT_CONFIG)
    assert COLORS["gmm"] in rays and "Dashed red: the GMM direction." in caption
    assert (COLORS["lmm"] in rays) == ("dashed blue" in caption.lower()) == (panel == "fig1b")
    plt.close(fig)


def test_figure4as_caption_says_its_claim_is_measured_past_the_iterations_it_draws() -> None:
    """Figure 4(a) draws the first plots.fig4_iterations iterations; its claim finds constant-step GD saturating later
    in the run (iteration 297 of 1000 at the default settings): the caption says over how many iterations the claim
    measured and how many the panel draws, so the iteration it quotes is not looked for on the panel."""
    from maxmargin.claims import claims_config, evaluate_claims, run_sentences

    name = registry.panel("fig4a").experiment
    settings, data = derived.experiment_settings(name, DEFAULT_CONFIG), derived.experiment_data(name, DEFAULT_CONFIG)
    tables = {"fig4": run_experiment(name, settings, data).trajectories}
    claims = evaluate_claims(tables, claims_config(DEFAULT_CONFIG))
    measured = claims.set_index("claim_id").loc["normalized_gd_faster", "measured"]
    drawn = DEFAULT_CONFIG["plots"]["fig4_iterations"]
    assert max(int(i) for i in re.findall(r"(?:iteration|vs) (\d+)", measured)) > drawn  # the case the caption is for
    caption = derived.caption(registry.panel("fig4a"), DEFAULT_CONFIG, run_sentences(claims, tables))
    assert f"over all {settings['n_iter']} iterations (the panel draws the first {drawn}): " in caption
    assert measured in caption


@pytest.mark.slow
@pytest.mark.parametrize("panel", PANELS)
def test_every_thumbnail_keeps_its_text_at_7_px(ci_run, panel) -> None:
    px = thumbnail_text_px(ci_run / CI_RESULTS / "figures" / f"{panel}.png")
    assert px >= THUMBNAIL_TEXT_PX, f"{panel}: smallest text {px:.1f} px in its thumbnail"


@pytest.mark.slow
@pytest.mark.parametrize("panel", PANELS)
def test_figure_matches_its_baseline(ci_run, panel, request, tmp_path) -> None:
    png = ci_run / CI_RESULTS / "figures" / f"{panel}.png"
    baseline = BASELINES / f"{panel}.png"
    if request.config.getoption("--regenerate-baselines"):
        BASELINES.mkdir(exist_ok=True)
        shutil.copyfile(png, baseline)
        pytest.skip(f"wrote {baseline.relative_to(REPO)}")
    assert baseline.exists(), f"no baseline for {panel}: run `python tools/gallery.py {panel}`"
    # compared from a copy: compare_images writes its -failed-diff image beside the figure it is given, and the
    # run's figures folder is what the report tests list
    actual = shutil.copyfile(png, tmp_path / png.name)
    result = compare_images(str(baseline), str(actual), tol=TOLERANCE)
    assert result is None, f"{panel} differs from its baseline (diff image beside {actual})"


def test_every_figure_has_a_baseline_and_a_thumbnail() -> None:
    """Every figure of the default run, and no other, has its baseline here and its thumbnail in the README's
    gallery (docs/gallery/), and the README shows the gallery of the registry: `python tools/gallery.py PANEL`
    writes all three for a new panel (`make gallery`: for every panel)."""
    problems = []
    for what, folder in (("baseline image", BASELINES), ("thumbnail", REPO / "docs" / "gallery")):
        found = {p.stem for p in folder.glob("*.png")}
        problems += [
            f"{panel}: no {what} in {folder.relative_to(REPO)}/: run `python tools/gallery.py {panel}`"
            for panel in sorted(set(PANELS) - found)
        ]
        problems += [
            f"{folder.relative_to(REPO)}/{stem}.png: no panel of the default run is named {stem} (remove it)"
            for stem in sorted(found - set(PANELS))
        ]
    assert not problems, "\n".join(problems)
    assert gallery.readme_block() in (REPO / "README.md").read_text(), (
        "the README's gallery is not the registry's: run `python tools/gallery.py` (a new panel: its name)"
    )


def _headings(block: str) -> dict[str, str]:
    """Panel -> the heading it is shown under in a README gallery block (each panel once)."""
    heading, where = "", {}
    for line in block.splitlines():
        if title := re.fullmatch(r"\*\*(.+)\*\*", line):
            heading = title[1]
        for name in re.findall(r"!\[(\w+)\]\(docs/gallery/\1\.png\)", line):
            assert name not in where, f"{name} shown twice in the gallery"
            where[name] = heading
    return where


def _figure_numbers(heading: str) -> set[int]:
    """The paper's figure numbers a heading names: "Synthetic (Figures 1-5, 8)" -> {1, 2, 3, 4, 5, 8}."""
    spans = re.findall(r"(\d+)(?:-(\d+))?", heading.partition("(Figure")[2])
    return {n for low, high in spans for n in range(int(low), int(high or low) + 1)}


def test_a_panel_beyond_the_paper_is_not_shown_under_the_papers_figures(monkeypatch) -> None:
    """The README's gallery holds each panel of the gallery once, under a heading of its family: a panel of the
    paper's Figure N under the heading naming the family's figure numbers (N among them), a panel beyond the paper
    under one naming no figure ("Synthetic, beyond the paper" beside "Synthetic (Figures 1-5, 8)"). Checked with
    two panels beyond the paper that a newcomer might add to the synthetic family, CONTRIBUTING.md's ``circle`` and
    another, registered here unless the tree holds them already (tests/test_contributing.py follows the guide)."""
    import dataclasses

    for name, label in (("circle", "Starts on a circle"), ("newcomer_panel", "Figure 1(b) data, another loss")):
        if name not in registry.GALLERY:
            panel = dataclasses.replace(registry.panel("fig1a"), name=name, target=name, label=label)
            monkeypatch.setattr(registry, "PANELS", (*registry.PANELS, panel))
            monkeypatch.setattr(registry, "GALLERY", (*registry.GALLERY, name))
    where = _headings(gallery.readme_block())
    assert set(where) == set(registry.GALLERY)
    for name, heading in where.items():
        panel = registry.panel(name)
        family = registry.family(panel.family)
        assert heading.startswith(family.title), (name, heading)
        if panel.paper_figure is not None:
            assert panel.paper_figure in _figure_numbers(heading), (name, heading)
        else:
            assert not _figure_numbers(heading) and "Figure" not in heading, (name, heading)
    assert where["circle"] == where["newcomer_panel"] != where["fig1a"]
    assert where["circle"].endswith(", beyond the paper")  # its family draws the paper's figures too


@pytest.mark.slow
def test_the_gallery_target_makes_every_thumbnail_at_one_scale(ci_copy) -> None:
    """`make gallery`'s target on the small run: every thumbnail, at GALLERY_SCALE of its figure's pixels."""
    snakemake(ci_copy, "--configfile", CI_CONFIG, "--", "gallery")
    for panel in PANELS:
        figure = Image.open(ci_copy / CI_RESULTS / "figures" / f"{panel}.png")
        thumbnail = Image.open(ci_copy / "docs" / "gallery" / f"{panel}.png")
        assert thumbnail.size == tuple(round(n * registry.GALLERY_SCALE) for n in figure.size), panel
    assert (ci_copy / "docs" / "results" / "claims.md").read_text().startswith("#")
