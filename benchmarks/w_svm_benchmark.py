"""Benchmark of the W-ATT-SVM probe of one last-layer head at a given width (rule vit_probe, table vit_w_svm).

At the paper's model (ViT-B/2: width 768, 12 heads of 64, 256 patch tokens + [CLS]) on 256 probe images, one head's
W-ATT-SVM has a 769 x 768 W and 256 x 256 = 65,536 margins. The inputs are LayerNorm-like random tokens (each
token centred and scaled, as the block's norm leaves them) and the selection that of a random rank-d_head W: the
size and the structure of the real problem, not its trained values. Prints the wall time, the process's peak
resident memory and the cutting-plane rounds of each part a head's row needs: the head's own solve (Frobenius),
one rank-d_head null draw, one shuffled selection, the span share and the ceiling; then the seconds per epoch for
``--heads`` heads with ``--draws`` null draws and ``--shuffles`` shuffles each (vit.w_svm), on the threads given.

Not a test: run it by hand, e.g.
``PYTHONPATH=. .venv/bin/python benchmarks/w_svm_benchmark.py --width 768 --head-dim 64 --tokens 257 --images 256``.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
from threadpoolctl import threadpool_limits

from maxmargin.core.w_svm import w_att_svm, w_logits
from maxmargin.core.w_svm_nulls import random_rank_matrix, rank_ceiling, span_cosine


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    rounds = getattr(out, "rounds", "")
    hard = getattr(out, "hard", "")
    print(f"{label}: {seconds:.1f} s, peak memory {_peak_mb():.0f} MB, rounds {rounds}, hard {hard}", flush=True)
    return out, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=257)
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--shuffles", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-shuffle", action="store_true", help="leave out the shuffled selection's solve")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.images, args.tokens, args.width))
    x = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)
    z = x[:, 0]
    w = random_rank_matrix(rng, (args.width + 1, args.width), args.head_dim) / args.width
    print(f"inputs: {x.nbytes / 2**20:.0f} MB; peak memory {_peak_mb():.0f} MB", flush=True)
    with threadpool_limits(args.threads):
        selected = w_logits(w, z, x).argmax(axis=1)
        res, own = _timed("own selection (Frobenius)", lambda: w_att_svm(z, x, selected))
        _, ceiling = _timed("ceiling", lambda: rank_ceiling(res.solution, args.head_dim))
        _, span = _timed("span share", lambda: span_cosine(w, z, x))
        m = random_rank_matrix(rng, w.shape, args.head_dim)
        _, null = _timed("one rank-d_head null", lambda: w_att_svm(z, x, w_logits(m, z, x).argmax(axis=1)))
        shuffle = 0.0
        if not args.skip_shuffle:
            permuted = selected[rng.permutation(len(selected))]
            _, shuffle = _timed("one shuffled selection", lambda: w_att_svm(z, x, permuted))
    per_head = own + ceiling + span + args.draws * null + args.shuffles * shuffle
    print(
        f"per head {per_head:.0f} s; per epoch ({args.heads} heads, {args.draws} draws, {args.shuffles} shuffles) "
        f"{args.heads * per_head / 60:.1f} min on {args.threads} threads; {res.n_constraints} margins, support "
        f"{res.support}"
    )


if __name__ == "__main__":
    main()
