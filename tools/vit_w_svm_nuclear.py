"""Each last-layer head of a trained ViT against both max-margin directions: the Frobenius W-ATT-SVM (what the
pipeline's table vit_w_svm measures) and the nuclear-norm one (the implicit bias of W = W_Q^T W_K trained as a
product), at initialisation and at the checkpoint's epoch (docs/vit.md, "Does attention turn toward the
max-margin solution?").

Usage: python tools/vit_w_svm_nuclear.py RESULTS_DIR [N_IMAGES]
  RESULTS_DIR: a run's results folder (runs/vit/checkpoint.pt and runs/data/vit.json in it); N_IMAGES: probe
  images of both SVMs (default: the run's vit.probe.w_svm_images). Prints one line per head and epoch.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

from maxmargin.core.w_svm import frobenius_cosine, w_att_svm, w_att_svm_nuclear, w_logits
from maxmargin.experiments.vit import VitSettings, load_image_data
from maxmargin.experiments.vit.data import normalize
from maxmargin.experiments.vit.model import build_vit, last_attention
from maxmargin.experiments.vit.probes import attention_inputs, head_key_query


def main(results: Path, n_images: int | None) -> None:
    state = torch.load(results / "runs/vit/checkpoint.pt", map_location="cpu", weights_only=False)
    cfg = state["settings"]
    settings = VitSettings.from_config(cfg)
    torch.set_num_threads(settings.train.threads)
    manifest = json.loads((results / "runs/data/vit.json").read_text())
    data = load_image_data(settings.data, settings.train.seed, manifest)
    n = n_images or settings.probe.w_svm_images
    images = normalize(data.x_test[:n], data.mean, data.std)
    torch.manual_seed(settings.train.seed)  # as the run builds its model: the initialisation
    model = build_vit(settings.model)
    for epoch in (0, int(state["epoch"])):
        if epoch:
            model.load_state_dict(state["model"])
        z, x = attention_inputs(model, images, 256)
        for head, w in enumerate(head_key_query(last_attention(model))):
            selected = w_logits(w, z, x).argmax(axis=1)
            with threadpool_limits(settings.train.threads):
                t0 = time.perf_counter()
                frob = w_att_svm(z, x, selected, soft_c=settings.probe.w_svm_soft_c)
                t1 = time.perf_counter()
                nuc = w_att_svm_nuclear(z, x, selected)
                t2 = time.perf_counter()
            print(
                f"epoch {epoch} head {head}: cos(W, W_fro) {frobenius_cosine(w, frob.solution):.3f} "
                f"cos(W, W_nuc) {frobenius_cosine(w, nuc.solution):.3f} cos(W_fro, W_nuc) "
                f"{frobenius_cosine(frob.solution, nuc.solution):.3f}; hard {frob.hard}/{nuc.hard}, met "
                f"{frob.met:.4f}/{nuc.met:.4f}, support {frob.support}/{nuc.support}, {x.shape[0]} images, "
                f"{t1 - t0:.1f} s / {t2 - t1:.1f} s",
                flush=True,
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)
