"""Snakemake script: shrink one figure PNG for the README gallery (rule gallery_thumbnail)."""

from PIL import Image

from maxmargin.files import atomic_path
from maxmargin.logs import rule_logging

with rule_logging(snakemake) as log:
    image = Image.open(snakemake.input[0]).convert("RGB")
    scale = snakemake.params.scale
    image = image.resize((round(image.width * scale), round(image.height * scale)), Image.LANCZOS)
    with atomic_path(snakemake.output[0]) as tmp:
        image.save(tmp, format="PNG", optimize=True)
    log.info("%s -> %s (%dx%d)", snakemake.input[0], snakemake.output[0], *image.size)
