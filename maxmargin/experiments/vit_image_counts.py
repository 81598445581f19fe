"""How many images the W-ATT-SVM probe solves on (rules vit_probe and vit_probe_images, claim vit_w_svm): the counts
of the image-count curve, the number read from that curve, and the images a head's own solve takes. Plain numbers and
tables, no torch: the claims and the docs read them without importing the network (the probe itself:
:mod:`maxmargin.experiments.vit.w_svm_probe`)."""

from __future__ import annotations

from typing import Protocol

import pandas as pd


class CountSettings(Protocol):
    """What the counts read of the probe's settings (:class:`maxmargin.experiments.vit.w_svm_probe.WSvmSettings`)."""

    whole_train: bool
    curve_images: tuple[int, ...]


def solved_images(s: CountSettings, name: str, available: int, n: int) -> int:
    """The images the head's own W-ATT-SVM and null (a) are solved on in image set ``name``: every training image
    with ``s.whole_train``, else the probe's ``n``."""
    return available if s.whole_train and name == "train" else n


def curve_counts(s: CountSettings, name: str, available: int) -> list[int]:
    """The image counts of the curve in image set ``name`` of ``available`` images: those of ``s.curve_images`` it
    holds, and with ``s.whole_train`` on the training images all of them last."""
    counts = sorted(n for n in s.curve_images if n <= available)
    if s.whole_train and name == "train" and available not in counts:
        counts.append(available)
    return counts


def chosen_image_count(curve: pd.DataFrame, images: str, tol: float, cap: int) -> int:
    """The number of images the probe's W-ATT-SVM is solved on, read from the measured curve (table
    ``vit_w_svm_images`` of set ``images``): the smallest n from which every larger n measured changes the head-mean
    cos(Wt_h, W_mm,h) by less than ``tol``, else (the cosine has not levelled off) the largest n measured; at most
    ``cap`` (``vit.w_svm.images``: a solve's cost grows fast with n, and the probe makes hundreds)."""
    means = curve[curve["images"] == images].groupby("n_images")["cosine"].mean().sort_index()
    if means.empty:
        raise ValueError(f"the image-count curve has no {images!r} rows (vit.w_svm.curve_images)")
    levelled = next((n for n in means.index if (means.loc[n:] - means.loc[n]).abs().max() < tol), means.index[-1])
    return int(min(levelled, cap))
