"""Every figure of the default DAG, drawn from the small CI run, against its baseline image (issue 27): a change of
layout, legend, limits, markers or text shows up as a failed comparison with the diff image beside the figure.

The baselines are tests/baseline_images/<panel>.png. After an intended change of a figure, look at the new figures
and write them as the baselines with the one command:

    .venv/bin/python -m pytest tests/test_figure_images.py --regenerate-baselines
"""

from __future__ import annotations

import shutil

import pytest
from conftest import CI_CONFIG, CI_RESULTS, REPO, snakemake
from matplotlib.testing.compare import compare_images
from PIL import Image

from maxmargin import registry

pytestmark = pytest.mark.slow

BASELINES = REPO / "tests" / "baseline_images"
# RMS of the pixel difference (0-255) a figure may differ by: text rendered by another FreeType, a curve of the
# small ViT moved by a last-bit difference of another CPU; a moved legend or changed limits is far above it.
TOLERANCE = 3.0
PANELS = [p.name for p in registry.PANELS if p.figure not in registry.ON_DEMAND]


@pytest.mark.parametrize("panel", PANELS)
def test_figure_matches_its_baseline(ci_run, panel, request) -> None:
    png = ci_run / CI_RESULTS / "figures" / f"{panel}.png"
    baseline = BASELINES / f"{panel}.png"
    if request.config.getoption("--regenerate-baselines"):
        BASELINES.mkdir(exist_ok=True)
        shutil.copyfile(png, baseline)
        pytest.skip(f"wrote {baseline.relative_to(REPO)}")
    assert baseline.exists(), f"no baseline for {panel}: see this module's docstring"
    assert compare_images(str(baseline), str(png), tol=TOLERANCE) is None, f"{panel} differs from its baseline"


def test_every_figure_has_a_baseline_and_a_thumbnail() -> None:
    """Every figure of the default run, and no other, has its baseline here and its thumbnail in the README's
    gallery (docs/gallery/, `make gallery`)."""
    assert {p.stem for p in BASELINES.glob("*.png")} == set(PANELS)
    assert {p.name for p in registry.PANELS if p.gallery} == set(PANELS)


def test_the_gallery_target_makes_every_thumbnail_at_one_scale(ci_run) -> None:
    """`make gallery`'s target on the small run: every thumbnail, at GALLERY_SCALE of its figure's pixels."""
    snakemake(ci_run, "--configfile", CI_CONFIG, "--", "gallery")
    for panel in PANELS:
        figure = Image.open(ci_run / CI_RESULTS / "figures" / f"{panel}.png")
        thumbnail = Image.open(ci_run / "docs" / "gallery" / f"{panel}.png")
        assert thumbnail.size == tuple(round(n * registry.GALLERY_SCALE) for n in figure.size), panel
    assert (ci_run / "docs" / "results" / "claims.md").read_text().startswith("#")
