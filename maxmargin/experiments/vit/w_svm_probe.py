"""Beyond the paper: each last-layer head of a finished ViT run against its max-margin solution, at every snapshot
(rule vit_probe, table vit_w_svm; docs/vit.md, "Does attention turn toward the max-margin solution?").

The theory (Lemma 1, Theorems 1-3) says that W / ||W|| converges to the solution of (W-ATT-SVM) for the tokens the
head selects. For head h, Wt_h = scale [W_Q,h^T W_K,h; b_Q,h^T W_K,h] gives the key-dependent logits a_i^T Wt_h x_it
(a_i = [z_i; 1]); it selects o_i = argmax_t of them, and W_mm,h solves (W-ATT-SVM) for that selection on the same
inputs. cos(Wt_h, W_mm,h) alone does not say whether training turned the head: each measurement comes with

- matched nulls on the same epoch's inputs: (a) random matrices of rank d_head, each against the W-SVM of its own
  selection (what a head that merely selects gets); (b) the trained head against the W-SVM of a shuffled selection
  (whether its alignment is specific to what it selects); (c) the cosine of the head with its projection onto the
  span the constraints live in (:func:`~maxmargin.core.w_svm_nulls.span_cosine`);
- the ceiling: a rank-d_head matrix has cosine at most :func:`~maxmargin.core.w_svm_nulls.rank_ceiling` with W_mm,h;
- the nuclear-norm solution (the implicit bias of W trained as W_Q^T W_K), against the Frobenius one on the same
  images, with the same difference for the rank-d_head nulls;
- selection stability: the share of images whose selected token is unchanged since the previous measured epoch.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import torch

from maxmargin.core.progress import Progress
from maxmargin.core.w_svm import WSVMResult, frobenius_cosine, w_att_svm, w_logits
from maxmargin.core.w_svm_nuclear import w_att_svm_nuclear
from maxmargin.core.w_svm_nulls import random_rank_matrix, rank_ceiling, span_cosine
from maxmargin.experiments.vit.data import ImageData, normalize
from maxmargin.experiments.vit.model import build_vit, last_attention
from maxmargin.experiments.vit.settings import ModelSettings
from maxmargin.experiments.vit_heads import attention_inputs, device_linalg, head_key_query
from maxmargin.experiments.vit_image_counts import curve_counts, solved_images
from maxmargin.registry.vit_w_svm import SOLVE_STATUSES

log = logging.getLogger("maxmargin")
Solved = TypeVar("Solved")


@dataclass(frozen=True)
class WSvmSettings:
    """The config's ``vit.w_svm``: the probe images, the soft margin, the query-bias row, the nulls' draws, the
    nuclear-norm measurement (its images, its epochs, its null draws), the seed of the draws, where the Frobenius
    solves' pivoting runs (``device``: auto, cpu or cuda) and ``whole_train``: the head's own W-ATT-SVM and null
    (a) on every training image (the ones the loss is on), the image-count curve up to all of them."""

    images: int
    soft_c: float
    query_bias: bool
    null_draws: int
    shuffles: int
    nuclear_images: int
    nuclear_every: int
    nuclear_draws: int
    seed: int
    device: str
    runtime: int
    shuffle_every: int = 1
    image_sets: tuple[str, ...] = ("test",)
    curve_images: tuple[int, ...] = ()
    curve_tol: float = 0.02
    whole_train: bool = False

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> WSvmSettings:
        lists = {key: tuple(cfg[key]) for key in ("image_sets", "curve_images") if key in cfg}
        return cls(**{**cfg, **lists})

    def frobenius(self, z: np.ndarray, x: np.ndarray, selected: np.ndarray, soft: bool = True) -> WSVMResult:
        """The Frobenius W-ATT-SVM of ``selected`` on these inputs, by these settings (its pivoting on ``device``;
        ``soft`` False: no soft-margin solve where no W meets every margin)."""
        linalg = _device_linalg(self.device)
        return w_att_svm(z, x, selected, soft_c=self.soft_c, query_bias=self.query_bias, linalg=linalg, soft=soft)

    def nuclear_due(self, epoch: int, epochs: list[int]) -> bool:
        """Whether ``epoch`` (of the snapshot ``epochs``) gets the nuclear-norm measurement: the first and the last
        snapshot and every ``nuclear_every`` epochs (``nuclear_images`` 0: never)."""
        return self.nuclear_images > 0 and _due(self.nuclear_every, epoch, epochs)

    def shuffle_due(self, epoch: int, epochs: list[int]) -> bool:
        """Whether ``epoch`` gets the shuffled-selection null (b): the first and the last snapshot and every
        ``shuffle_every`` epochs (its permutations, often close to having no W that selects them, cost the most)."""
        return _due(self.shuffle_every, epoch, epochs)


def _due(every: int, epoch: int, epochs: list[int]) -> bool:
    """The first and the last of ``epochs``, and every ``every`` epochs (0: those two only)."""
    return epoch in (epochs[0], epochs[-1]) or (every > 0 and epoch % every == 0)


_device_linalg = functools.cache(device_linalg)


def _spread(values: list[float]) -> tuple[float, float]:
    """Mean and standard deviation (ddof 1) of the draws (NaN where there are too few)."""
    mean = float(np.mean(values)) if len(values) else math.nan
    return mean, float(np.std(values, ddof=1)) if len(values) > 1 else math.nan


@dataclass
class Solves:
    """The solves of one head's row: ``where`` it is (epoch, image set, head), the row's number of ``images`` and
    the null solves that failed there (``failed``, each named)."""

    where: str
    images: int
    failed: list[str] = field(default_factory=list)

    def own(self, what: str, solve: Callable[[], Solved]) -> Solved:
        """A measurement's own solve (the head's, the nuclear norm's): the solver's ArithmeticError, naming the
        epoch, image set, head and ``what`` was solved, stops the probe."""
        try:
            return solve()
        except ArithmeticError as err:
            raise ArithmeticError(f"W-ATT-SVM probe at {self.where}, {what}: {err}") from err

    def null(self, what: str, solve: Callable[[], Solved]) -> Solved | None:
        """A null draw's solve: where the solver raises an ArithmeticError (a cutting-plane solve that leaves margins
        short of 1, a cvxopt status never optimal), None, counted and logged with the epoch, image set, head and
        ``what``, and left out of the null like a permutation no W selects: one draw fewer does not stop a probe."""
        try:
            return solve()
        except ArithmeticError as err:
            self.failed.append(what)
            log.warning("W-ATT-SVM probe at %s, %s: unsolved, left out of the null (%s)", self.where, what, err)
            return None


def _null_rank(z: np.ndarray, x: np.ndarray, shape: tuple, rank: int, s: WSvmSettings, rng, solves: Solves) -> list:
    """Null (a): random rank-``rank`` matrices, each against the W-SVM of the tokens it selects itself (the draws
    whose solve failed left out: :meth:`Solves.null`)."""
    out = []
    for draw in range(1, s.null_draws + 1):
        m = random_rank_matrix(rng, shape, rank)
        sel = w_logits(m, z, x, s.query_bias).argmax(axis=1)
        res = solves.null(f"null (a) draw {draw} on {len(z)} images", functools.partial(s.frobenius, z, x, sel))
        if res is not None:
            out.append((m, frobenius_cosine(m, res.solution)))
    return out


def _null_shuffled(w: np.ndarray, z: np.ndarray, x: np.ndarray, selected, s: WSvmSettings, rng, solves) -> tuple:
    """Null (b): the head against the W-SVM of its selection permuted over the images (the same share of each token
    position), for ``s.shuffles`` permutations that some W can select (no W selects a token inside the hull of its
    image's others: such a permutation has no max-margin solution, and its soft-margin one costs 100 times more; a
    permutation whose solve fails is skipped the same way, :meth:`Solves.null`); at most 3 x ``s.shuffles`` drawn.
    The cosines, and how many permutations were drawn."""
    out, drawn = [], 0
    while len(out) < s.shuffles and drawn < 3 * s.shuffles:
        drawn += 1
        shuffled = selected[rng.permutation(len(selected))]
        solve = functools.partial(s.frobenius, z, x, shuffled, soft=False)
        res = solves.null(f"null (b) shuffle {drawn} on {len(z)} images", solve)
        if res is not None and res.hard:
            out.append(frobenius_cosine(w, res.solution))
    return out, drawn


def nuclear_gap(w: np.ndarray, z: np.ndarray, x: np.ndarray, s: WSvmSettings) -> tuple[float, float, str]:
    """cos(W, W_nuc) and cos(W, W_fro) for the tokens ``w`` selects, both on the same inputs, and how the
    nuclear-norm SDP was solved (``WSVMResult.status``)."""
    sel = w_logits(w, z, x, s.query_bias).argmax(axis=1)
    nuc = w_att_svm_nuclear(z, x, sel, soft_c=s.soft_c, query_bias=s.query_bias)
    fro = s.frobenius(z, x, sel).solution
    return frobenius_cosine(w, nuc.solution), frobenius_cosine(w, fro), nuc.status


def probe_head(
    w: np.ndarray,
    z: np.ndarray,
    x: np.ndarray,
    rank: int,
    s: WSvmSettings,
    rng: np.random.Generator,
    nuclear: bool,
    shuffle: bool = True,
    *,
    capped: int | None = None,
    where: str = "a head",
) -> dict[str, Any]:
    """One head at one epoch: the columns of table ``vit_w_svm`` but epoch, head, selection_kept and dataset. The
    head's own W-ATT-SVM, null (a), the span and the ceiling on all of ``z``, ``x``; null (b) (with ``shuffle``)
    beside the head's own cosine, and the nuclear-norm measurement (with ``nuclear``), on the first ``capped`` of
    them (all where None): both sides of each comparison on the same images. ``where`` (epoch, image set, head)
    names the row in every solver error and log line (:class:`Solves`)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    solves, capped = Solves(where, len(z)), len(z) if capped is None else capped
    selected = w_logits(w, z, x, s.query_bias).argmax(axis=1)
    res = solves.own(f"the head's own selection on {len(z)} images", functools.partial(s.frobenius, z, x, selected))
    cosine, ceiling = frobenius_cosine(w, res.solution), rank_ceiling(res.solution, rank)
    nulls = _null_rank(z, x, w.shape, rank, s, rng, solves)
    row = {
        "cosine": cosine,
        "null_rank": _spread([c for _, c in nulls])[0],
        "null_rank_sd": _spread([c for _, c in nulls])[1],
        **_shuffled_columns(w, cosine, z[:capped], x[:capped], selected[:capped], s, rng, solves, shuffle),
        "span_cosine": span_cosine(w, z, x, s.query_bias),
        "ceiling": ceiling,
        "ceiling_fraction": cosine / ceiling,
        **_nuclear_columns(w, z, x, [m for m, _ in nulls], s, solves, nuclear),
    }
    row.update(
        status=res.status,
        hard_margin=res.hard,
        margins_met=res.met,
        n_images=len(z),
        n_constraints=res.n_constraints,
        support=res.support,
        w_frobenius=float(np.linalg.norm(w)),
        svm_frobenius=float(np.linalg.norm(res.solution)),
        selected_cls=float(np.mean(selected == 0)),
        null_failed=len(solves.failed),
    )
    return {**row, "_selected": selected, "_seconds": (time.perf_counter() - t0, time.process_time() - cpu0)}


def _shuffled_columns(w, cosine: float, z, x, selected, s: WSvmSettings, rng, solves: Solves, due: bool) -> dict:
    """Null (b) on ``z``, ``x`` (the first images of the row's), beside the head's own cosine on the same images:
    ``cosine`` where they are the row's, else its own solve on them; empty where null (b) is not ``due``."""
    if not due:
        return {"null_shuffled": math.nan, "null_shuffled_sd": math.nan, "null_shuffled_drawn": 0,
                "null_shuffled_kept": 0, "cosine_null_images": math.nan, "n_images_null": math.nan}  # fmt: skip
    shuffled, drawn = _null_shuffled(w, z, x, selected, s, rng, solves)
    if len(z) < solves.images:
        what = f"the head's own selection on {len(z)} images (null (b)'s)"
        cosine = frobenius_cosine(w, solves.own(what, functools.partial(s.frobenius, z, x, selected)).solution)
    return {
        "null_shuffled": _spread(shuffled)[0],
        "null_shuffled_sd": _spread(shuffled)[1],
        "null_shuffled_drawn": drawn,
        "null_shuffled_kept": len(shuffled),
        "cosine_null_images": cosine,
        "n_images_null": len(z),
    }


def _nuclear_columns(w, z, x, nulls: list[np.ndarray], s: WSvmSettings, solves: Solves, due: bool) -> dict:
    """The nuclear-norm measurement on the first ``s.nuclear_images`` images, with its null (a) gap over the first
    ``s.nuclear_draws`` null matrices (a draw whose solves fail left out, :meth:`Solves.null`); empty where it is not
    ``due``."""
    row = {"cosine_nuclear": math.nan, "cosine_frobenius_nuclear_images": math.nan, "null_nuclear_gap": math.nan,
           "null_nuclear_gap_sd": math.nan, "nuclear_status": None, "n_images_nuclear": math.nan}  # fmt: skip
    if not due:
        return row
    zn, xn = z[: s.nuclear_images], x[: s.nuclear_images]
    what = f"the head's own selection, nuclear norm and Frobenius, on {len(zn)} images"
    row["cosine_nuclear"], row["cosine_frobenius_nuclear_images"], status = solves.own(
        what, functools.partial(nuclear_gap, w, zn, xn, s)
    )
    gaps = []
    for draw, m in enumerate(nulls[: s.nuclear_draws], start=1):
        what = f"null (a) draw {draw}, nuclear norm and Frobenius, on {len(zn)} images"
        gaps.append(solves.null(what, functools.partial(nuclear_gap, m, zn, xn, s)))
    gaps = [g for g in gaps if g is not None]
    row["null_nuclear_gap"], row["null_nuclear_gap_sd"] = _spread([nuc - fro for nuc, fro, _ in gaps])
    row["nuclear_status"] = max([status, *(st for *_, st in gaps)], key=SOLVE_STATUSES.index)
    row["n_images_nuclear"] = len(zn)
    return row


def image_sets(data: ImageData, names: tuple[str, ...], n_probe: int) -> dict[str, torch.Tensor]:
    """The probe's image sets, normalised: ``test``, the run's first ``n_probe`` held-out probe images
    (``vit.probe.n_images``), and ``train``, its training images in order (the ones the loss is on)."""
    raw = {"test": data.x_test[:n_probe], "train": data.x_train}
    return {name: normalize(raw[name], data.mean, data.std) for name in names}


def probe_snapshots(
    snapshots: Mapping[str, Any],
    model: ModelSettings,
    images: Mapping[str, torch.Tensor],
    s: WSvmSettings,
    batch_size: int,
    n_images: int | None = None,
) -> list[dict[str, Any]]:
    """Every head of the last layer at every snapshot epoch, in order, on the first ``n_images`` (default
    ``s.images``) of each image set (``images``: name -> normalised images, e.g. the held-out probe images ``test``
    and the training images ``train`` the loss is on), and with ``s.whole_train`` the head's own W-ATT-SVM and null
    (a) on every training image (null (b) and the nuclear norm still on the first ``n_images``): the rows of table
    ``vit_w_svm`` (but its ``dataset``). Each head's seconds (wall and CPU) go to the log."""
    n = s.images if n_images is None else n_images
    for name, x in images.items():
        if len(x) < n:
            raise ValueError(f"the probe needs {n} {name} images (vit.w_svm.images), but the run has {len(x)}")
    net, rows, previous = build_vit(model), [], {}
    rng = np.random.default_rng(s.seed)
    epochs = [int(e) for e in snapshots["epochs"]]
    bar = Progress("W-ATT-SVM probe: heads", len(epochs) * len(images) * model.num_heads)
    for epoch in epochs:
        net.load_state_dict(snapshots["states"][epoch])
        attn = last_attention(net)
        for name, x_set in images.items():
            z, x = attention_inputs(net, x_set[: solved_images(s, name, len(x_set), n)], batch_size)
            for head, w in enumerate(head_key_query(attn, s.query_bias)):
                due = s.nuclear_due(epoch, epochs), s.shuffle_due(epoch, epochs)
                where = f"epoch {epoch}, {name} images, head {head}"
                row = probe_head(w, z, x, attn.head_dim, s, rng, *due, capped=n, where=where)
                selected, seconds = row.pop("_selected"), row.pop("_seconds")
                kept = float(np.mean(selected == previous[name, head])) if (name, head) in previous else math.nan
                previous[name, head] = selected
                rows.append({"epoch": epoch, "head": head, **row, "selection_kept": kept, "images": name})
                said = f"{where}: cosine {row['cosine']:.3f} on {len(z)} images ({seconds[0]:.1f} s"
                log.info("%s, %.1f s of CPU)", said, seconds[1])
                bar.update(len(rows), said + ")")
    return rows


def probe_image_counts(
    state: Mapping[str, torch.Tensor],
    model: ModelSettings,
    images: Mapping[str, torch.Tensor],
    s: WSvmSettings,
    batch_size: int,
) -> list[dict[str, Any]]:
    """How cos(Wt_h, W_mm,h) depends on the number of images the W-ATT-SVM is solved on: each head of the model
    ``state`` on the first n images of each set, for every n of ``s.curve_images`` the set holds (with
    ``s.whole_train``, on the training images up to all of them), with the rank null (``s.null_draws`` draws, a draw
    whose solve fails left out) and the ceiling at each n (table ``vit_w_svm_images``). Each row's seconds go to the
    log."""
    net, rows = build_vit(model), []
    net.load_state_dict(state)
    attn = last_attention(net)
    counts = {name: curve_counts(s, name, len(x)) for name, x in images.items()}
    bar = Progress("W-ATT-SVM by image count: heads", sum(map(len, counts.values())) * model.num_heads)
    for name, x_set in images.items():
        for n in counts[name]:
            z, x = attention_inputs(net, x_set[:n], batch_size)
            rng = np.random.default_rng(s.seed)
            for head, w in enumerate(head_key_query(attn, s.query_bias)):
                t0, solves = time.process_time(), Solves(f"the last snapshot, {name} images, head {head}", n)
                selected = w_logits(w, z, x, s.query_bias).argmax(axis=1)
                res = solves.own(
                    f"the head's own selection on {n} images", functools.partial(s.frobenius, z, x, selected)
                )
                cosine = frobenius_cosine(w, res.solution)
                null, null_sd = _spread([c for _, c in _null_rank(z, x, w.shape, attn.head_dim, s, rng, solves)])
                rows.append(
                    {"images": name, "n_images": n, "head": head, "cosine": cosine, "null_rank": null,
                     "null_rank_sd": null_sd, "ceiling": rank_ceiling(res.solution, attn.head_dim),
                     "hard_margin": res.hard, "n_constraints": res.n_constraints, "null_failed": len(solves.failed)}
                )  # fmt: skip
                said = f"{name} {n} images head {head}: cosine {cosine:.3f}"
                log.info("%s (%.1f s of CPU)", said, time.process_time() - t0)
                bar.update(len(rows), said)
    return rows
