"""The README gallery and the baseline images of the default run's figures, from the registry.

``make gallery`` runs it for every panel; after a new panel's registry entry, ``python tools/gallery.py PANEL``
makes what `make test` asks of that panel, and only that:

- its thumbnail, docs/gallery/PANEL.png (the rule gallery_thumbnail, on the default config);
- its baseline image, tests/baseline_images/PANEL.png, where it has none: its figure from the small CI run
  (workflow/config/ci_slurm.yaml), which tests/test_figure_images.py compares with (an existing baseline is only
  replaced on purpose: ``pytest tests/test_figure_images.py --regenerate-baselines``);
- the README's gallery block, written from the registry: a heading per family, its panels' thumbnails.

Usage: python tools/gallery.py [--cores N] [PANEL ...]   (no PANEL: every panel of the gallery, and `gallery`),
the wrapper of python -m maxmargin.docs.gallery
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from maxmargin import registry
from maxmargin.docs import REPO
from maxmargin.files import atomic_path
from maxmargin.registry import derived

README = REPO / "README.md"
BASELINES = REPO / "tests" / "baseline_images"
CI_CONFIG = "workflow/config/ci_slurm.yaml"
BEGIN = "<!-- gallery: written by tools/gallery.py from the registry -->"
END = "<!-- /gallery -->"
PER_LINE = 3


def readme_block() -> str:
    """The README's gallery: a heading per family with panels in the gallery (its report category, less the order),
    then their thumbnails; in a family that draws the paper's figures, its panels beyond the paper under a heading of
    their own ("ViT, beyond the paper"), not under the paper's figure numbers."""
    lines = [BEGIN]
    for family in sorted(registry.FAMILIES, key=lambda f: f.order):
        panels = [p for p in registry.panels_of(family.name) if p.name in registry.GALLERY]
        paper = [p.name for p in panels if p.paper_figure is not None]
        groups = [(derived.category(family.name).split(" ", 1)[1], paper)] if paper else []
        beyond = [p.name for p in panels if p.paper_figure is None]
        groups.append((f"{family.title}, beyond the paper" if paper else family.title, beyond))
        for heading, names in groups:
            if names:
                lines += ["", f"**{heading}**", ""]
                lines += [
                    " ".join(f"![{n}](docs/gallery/{n}.png)" for n in names[i : i + PER_LINE])
                    for i in range(0, len(names), PER_LINE)
                ]
    return "\n".join([*lines, "", END])


def write_readme(path: Path = README) -> None:
    """Replace the README's gallery block with :func:`readme_block`."""
    text = path.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no gallery block ({BEGIN} ... {END})")
    with atomic_path(path) as tmp:
        tmp.write_text(pattern.sub(lambda _: readme_block(), text))


def snakemake(cores: int, *args: str) -> None:
    command = [str(Path(sys.executable).with_name("snakemake")), "--cores", str(cores), *args]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, cwd=REPO, check=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("panels", nargs="*", help="panels of the gallery (default: all, and the `gallery` target)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.panels) - set(registry.GALLERY))
    if unknown:
        raise SystemExit(f"not panels of the default run: {unknown} (registered? on demand?)")
    panels = args.panels or list(registry.GALLERY)
    snakemake(args.cores, "--", *([f"docs/gallery/{p}.png" for p in args.panels] or ["gallery"]))
    missing = [p for p in panels if not (BASELINES / f"{p}.png").exists()]
    if missing:
        results = yaml.safe_load((REPO / CI_CONFIG).read_text())["results"]
        snakemake(args.cores, "--configfile", CI_CONFIG, "--", *(f"{results}/figures/{p}.png" for p in missing))
        BASELINES.mkdir(exist_ok=True)
        for panel in missing:
            with atomic_path(BASELINES / f"{panel}.png") as tmp:
                shutil.copyfile(REPO / results / "figures" / f"{panel}.png", tmp)
            print(f"wrote {(BASELINES / f'{panel}.png').relative_to(REPO)}: look at it before committing")
    write_readme()


if __name__ == "__main__":
    main(sys.argv[1:])
