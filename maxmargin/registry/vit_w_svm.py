"""The ViT's last-layer heads against their W-ATT-SVM solutions (beyond the paper; rules vit_probe and
vit_probe_images): the probe's tables, the image sets it solves on and the statuses of its solves."""

from __future__ import annotations

import dataclasses

from maxmargin.registry.columns import cosine, count, described, flag, integer, positive, real, text, unit
from maxmargin.registry.types import Column, Table
from maxmargin.registry.vit import DATASET, METRIC


def _later(column: Column) -> Column:
    """A column added after tables were committed without it: absent from those, checked where present."""
    return dataclasses.replace(column, required=False)


_BOTH = "on the same epoch's inputs (the row's ``n_images`` images)"
SOLVE_STATUSES = ("optimal", "looser", "repaired")  # WSVMResult.status, best first
# The image set the W-ATT-SVM claims and panel judge a run on, the first present: the theory's max-margin problem is
# over the training inputs; tables without the ``images`` column hold the held-out probe images.
JUDGED_IMAGES = ("train", "test")
IMAGE_SET = described(
    text("images", ("test", "train"), required=False),
    "the images the solutions are computed on: ``test``, the first held-out probe images, or ``train``, the first "
    "training images (the ones the loss is on, the theory's max-margin problem) (``vit.w_svm.image_sets``; absent "
    "from tables made before it: ``test``)",
)
TABLES: tuple[Table, ...] = (
    Table(
        name="vit_w_svm",
        family="vit",
        columns=(
            METRIC["epoch"],
            described(count("head"), "the head h of the last layer"),
            described(
                cosine("cosine"),
                "cos(Wt_h, W_mm,h) (Frobenius) of the head's key-query matrix Wt_h = scale [W_Q,h^T W_K,h; "
                "b_Q,h^T W_K,h] (without the bias row where ``vit.w_svm.query_bias`` is false) with the W-ATT-SVM "
                "solution W_mm,h for the tokens o_i = argmax_t [z_i; 1]^T Wt_h x_it it selects " + _BOTH,
            ),
            described(
                cosine("null_rank"),
                "null (a): the mean over ``vit.w_svm.null_draws`` random matrices M of rank d_head of cos(M, W_mm(M)), "
                "W_mm(M) the W-ATT-SVM of the tokens M selects " + _BOTH,
            ),
            described(real("null_rank_sd", ge=0), "the standard deviation of null (a) over its draws"),
            described(
                cosine("null_shuffled", nullable=True),
                "null (b): the mean over ``vit.w_svm.shuffles`` permutations of the head's selection over the images "
                "of cos(Wt_h, W_mm(shuffled)): whether the head's alignment is specific to what it selects (only "
                "permutations some W can select, which have a max-margin solution; empty where none was found, and at "
                "the epochs without it: it is measured at the first and the last snapshot and every "
                "``vit.w_svm.shuffle_every`` epochs)",
            ),
            described(
                real("null_shuffled_sd", ge=0, nullable=True),
                "the standard deviation of null (b) over its permutations",
            ),
            described(
                count("null_shuffled_drawn"),
                "the permutations drawn to find those (at most 3 x ``vit.w_svm.shuffles``): the others have no W "
                "that selects them, or their solve failed (``null_failed``); 0 at an epoch without null (b) "
                "(``vit.w_svm.shuffle_every``)",
            ),
            described(
                _later(count("null_shuffled_kept")),
                "of those, the permutations kept (some W selects them): the draws behind ``null_shuffled``; absent "
                "from tables made before it",
            ),
            described(
                _later(cosine("cosine_null_images", nullable=True)),
                "cos(Wt_h, W_mm,h) on null (b)'s images (``n_images_null``): the side of the head's own selection in "
                "the comparison with null (b), on the same images (``cosine`` itself where they are the row's); empty "
                "at the epochs without null (b); absent from tables made before it",
            ),
            described(
                _later(integer("n_images_null", gt=0, nullable=True)),
                "the images null (b) and ``cosine_null_images`` are solved on: the first ``vit.w_svm.images`` (or "
                "the number read from the image-count curve), fewer than ``n_images`` where "
                "``vit.w_svm.whole_train`` solves the rest on every training image; empty at the epochs without "
                "null (b); absent from tables made before it",
            ),
            described(
                cosine("span_cosine"),
                "null (c): cos(Wt_h, P Wt_h), P the projection onto span{[z_i; 1]} x span{x_it - x_is}, where every "
                "W-ATT-SVM solution of these inputs lies: an upper bound of ``cosine`` that any head using the data's "
                "directions approaches",
            ),
            described(
                unit("ceiling"),
                "the largest cosine a rank-d_head matrix can have with W_mm,h: the energy share (as a norm ratio) of "
                "its best rank-d_head approximation (Eckart-Young)",
            ),
            described(real("ceiling_fraction"), "``cosine`` / ``ceiling``"),
            described(
                cosine("cosine_nuclear", nullable=True),
                "cos(Wt_h, W_nuc,h) with the nuclear-norm W-ATT-SVM of the head's selection on the first "
                "``vit.w_svm.nuclear_images`` probe images (empty at epochs without it: ``vit.w_svm.nuclear_every``)",
            ),
            described(
                cosine("cosine_frobenius_nuclear_images", nullable=True),
                "cos(Wt_h, W_mm,h) on those same images: what ``cosine_nuclear`` is compared with",
            ),
            described(
                real("null_nuclear_gap", nullable=True),
                "the mean over ``vit.w_svm.nuclear_draws`` of the null (a) matrices of cos(M, W_nuc(M)) - cos(M, "
                "W_mm(M)) on those images: what a rank-d_head matrix gets from the nuclear norm by its rank alone",
            ),
            described(real("null_nuclear_gap_sd", ge=0, nullable=True), "its standard deviation over the draws"),
            described(
                _later(integer("n_images_nuclear", gt=0, nullable=True)),
                "the images of ``cosine_nuclear``, ``cosine_frobenius_nuclear_images`` and ``null_nuclear_gap``: "
                "the first ``vit.w_svm.nuclear_images``; empty at the epochs without them; absent from tables made "
                "before it",
            ),
            described(
                text("nuclear_status", SOLVE_STATUSES, nullable=True, required=False),
                "how the nuclear-norm SDPs of the row were solved, the worst of them (``WSVMResult.status``: optimal; "
                "looser, at 1000x looser tolerances; repaired, rescaled onto its margins and accepted by its duality "
                "gap); empty where none ran; absent from tables made before it",
            ),
            described(
                text("status", SOLVE_STATUSES, required=False),
                "how the head's Frobenius W-ATT-SVM was solved (``WSVMResult.status``); absent from tables made "
                "before it",
            ),
            described(
                flag("hard_margin"), "whether W_mm,h meets every margin (the hard-margin solution), else soft-margin"
            ),
            described(
                unit("margins_met"),
                "the fraction of the margins [z_i; 1]^T W (x_io_i - x_it) >= 1 that W_mm,h meets",
            ),
            described(
                positive("n_images"),
                "the images of ``cosine``, ``null_rank``, ``span_cosine``, the ceiling and the margins: the first "
                "``vit.w_svm.images`` of the set (or the number read from the image-count curve), or with "
                "``vit.w_svm.whole_train`` every training image (the images the loss is on)",
            ),
            described(positive("n_constraints"), "the margins: one per image and token other than o_i"),
            described(count("support"), "the margins with a positive dual weight (the support vectors)"),
            described(real("w_frobenius", ge=0), "||Wt_h||_F"),
            described(real("svm_frobenius", ge=0), "||W_mm,h||_F"),
            described(unit("selected_cls"), "the share of the probe images on which the head selects [CLS] itself"),
            described(
                unit("selection_kept", nullable=True),
                "the share of the probe images whose selected token is the one of the previous measured epoch (empty "
                "at the first): whether the target W_mm,h moves because the selections do",
            ),
            described(
                _later(count("null_failed")),
                "the null solves of the row (null (a), null (b), the nuclear norm's null) whose solver raised an "
                "ArithmeticError: each logged with epoch, image set, head and solve (rule vit_probe's log) and left "
                "out of its null like a permutation no W selects; absent from tables made before it",
            ),
            IMAGE_SET,
            DATASET,
        ),
        rule="vit_probe",
        label="ViT heads against their W-ATT-SVM",
        caption="Beyond the paper: each head of the ViT's last layer against its W-ATT-SVM solution at every snapshot "
        "of the run, on the images of its n_images column (every training image where vit.w_svm.whole_train is true, "
        "here {w_svm[whole_train]}), with its matched nulls, its rank ceiling, the nuclear-norm solution and the "
        "stability of its selections; each comparison's two sides on the same images (rule vit_probe; "
        "docs/vit.md).",
        caption_blocks=("vit",),
        claims=("vit_w_svm_direction", "vit_w_svm_specific", "vit_w_svm_nuclear"),
    ),
    Table(
        name="vit_w_svm_images",
        family="vit",
        columns=(
            IMAGE_SET,
            described(positive("n_images"), "the first n images of the set the W-ATT-SVM is solved on"),
            described(count("head"), "the head h of the last layer"),
            described(cosine("cosine"), "cos(Wt_h, W_mm,h) at the last snapshot, W_mm,h solved on these n images"),
            described(cosine("null_rank"), "null (a) on the same n images: random rank-d_head matrices (mean)"),
            described(real("null_rank_sd", ge=0, nullable=True), "its standard deviation over the draws"),
            described(unit("ceiling"), "the rank-d_head ceiling of W_mm,h"),
            described(flag("hard_margin"), "whether W_mm,h meets every margin"),
            described(positive("n_constraints"), "the margins: one per image and token other than the selected"),
            described(
                _later(count("null_failed")),
                "the null (a) draws whose solver raised an ArithmeticError (logged with its image count, head and "
                "draw), left out of the null; absent from tables made before it",
            ),
            DATASET,
        ),
        rule="vit_probe_images",
        label="ViT heads against their W-ATT-SVM, by the number of images",
        caption="Beyond the paper: how each last-layer head's cosine with its W-ATT-SVM solution at the last snapshot "
        "depends on the number of images the solution is computed on ({w_svm[curve_images]}), on the held-out probe "
        "images and on the training images; rule vit_probe reads the number it uses from it (docs/vit.md).",
        caption_blocks=("vit",),
    ),
)
