"""Whether a ViT run learned, whether its Figure 7 trend is large enough to count, whether W's direction settles.

Paper: Section 4, Figures 6-7: the [CLS] attention sparsifies as ||W||_F grows. A model that stayed at chance can
show that picture (Adam at 3e-3 at width 768: test accuracy 0.075, ||W||_F 0.2 -> 513), and a tiny move can show
its direction (SGD: ||W||_F grew 0.002%). The claims ``vit_learns``, ``vit_sparsity`` and ``vit_w_direction`` and
Figures 6-7 read the verdicts from here, with the thresholds of the config's ``vit.guard``. No torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from maxmargin.core.arguments import check_arrays


@dataclass(frozen=True)
class Learned:
    """The final test accuracy against the linear baseline's (the claim ``vit_learns``).

    ``bar`` = chance + ``fraction`` x (baseline - chance): the ViT must recover at least ``fraction`` of what a
    linear model gains over chance on the same images.
    """

    learned: bool
    test_acc: float
    chance: float
    baseline: float
    fraction: float

    @property
    def bar(self) -> float:
        return self.chance + self.fraction * max(self.baseline - self.chance, 0.0)

    @property
    def recovered(self) -> float:
        """(accuracy - chance) / (baseline - chance): the share of the baseline's gain the ViT recovers."""
        gain = self.baseline - self.chance
        return (self.test_acc - self.chance) / gain if gain > 0 else float("nan")

    def describe(self) -> str:
        return (
            f"final test accuracy {self.test_acc:.3f}; linear baseline {self.baseline:.3f}, chance {self.chance:.2f}: "
            f"recovers {self.recovered:.0%} of the baseline's gain over chance"
        )

    def warning(self) -> str:
        """The warning written on the figures when the model did not learn."""
        return (
            f"WARNING: the model did not learn: final test accuracy {self.test_acc:.3f} < {self.bar:.3f} (chance "
            f"{self.chance:.2f} + {self.fraction:g} x the linear baseline's gain); this figure does not show the "
            "paper's effect"
        )


def learned(test_acc: float, num_classes: int, baseline_acc: float, fraction: float) -> Learned:
    """Whether ``test_acc`` recovers at least ``fraction`` of the linear baseline's gain over chance.

    Parameters
    ----------
    test_acc : float
        The ViT's final test accuracy.
    num_classes : int
        Number of classes (chance accuracy is its inverse).
    baseline_acc : float
        Test accuracy of the linear baseline (logistic regression on the same training images' pixels).
    fraction : float
        The share of the baseline's gain over chance that counts as learned (``vit.guard.baseline_fraction``).

    Returns
    -------
    Learned
        The verdict, the accuracy, chance, the baseline and the fraction (its ``bar`` is the accuracy needed).

    Examples
    --------
    Chance 0.1, the baseline 0.4: with a fraction of 0.5 the bar is 0.25.

    >>> from maxmargin.core import learned
    >>> verdict = learned(0.3, 10, 0.4, 0.5)
    >>> verdict.learned, round(verdict.bar, 3), round(verdict.recovered, 3)
    (True, 0.25, 0.667)
    """
    test_acc, num_classes, baseline_acc, fraction = check_arrays(
        test_acc=(test_acc, "()"),
        num_classes=(num_classes, "int ()"),
        baseline_acc=(baseline_acc, "()"),
        fraction=(fraction, "()"),
    )
    if num_classes < 1:
        raise ValueError(f"num_classes must be at least 1: got {num_classes}")
    chance = 1.0 / num_classes
    verdict = Learned(False, test_acc, chance, baseline_acc, fraction)
    return Learned(test_acc >= verdict.bar and test_acc > chance, test_acc, chance, baseline_acc, fraction)


@dataclass(frozen=True)
class SparsityEffect:
    """How far soft-sparsity fell and ||W||_F grew from epoch 0 to the end, and how closely the two move against
    each other over the epochs (Spearman), against the config's minimum effect."""

    w_growth: float  # last ||W||_F / first
    sparsity_ratio: float  # last soft-sparsity / first
    spearman: float  # rank correlation of soft-sparsity and ||W||_F over the epochs
    min_w_growth: float
    max_sparsity_ratio: float
    max_spearman: float

    @property
    def large_enough(self) -> bool:
        return (
            self.w_growth >= self.min_w_growth
            and self.sparsity_ratio <= self.max_sparsity_ratio
            and self.spearman <= self.max_spearman
        )

    def describe(self) -> str:
        return (
            f"||W||_F x{self.w_growth:.3g} (needs >= {self.min_w_growth:g}), soft-sparsity x{self.sparsity_ratio:.3g} "
            f"(needs <= {self.max_sparsity_ratio:g}), Spearman {self.spearman:.2f} (needs <= {self.max_spearman:g})"
        )


def sparsity_effect(
    sparsity: Sequence[float], w_frobenius: Sequence[float], guard: Mapping[str, float]
) -> SparsityEffect:
    """The effect of Figure 7 from the soft-sparsity and ||W||_F of every epoch of a run.

    Parameters
    ----------
    sparsity : sequence of float
        Soft-sparsity per epoch, from epoch 0.
    w_frobenius : sequence of float
        ||W||_F per epoch, from epoch 0.
    guard : mapping
        The config's ``vit.guard``: ``min_w_growth`` (smallest growth factor of ||W||_F that counts),
        ``max_sparsity_ratio`` (largest ratio last / first soft-sparsity) and ``max_spearman`` (largest rank
        correlation of the two over the epochs).

    Returns
    -------
    SparsityEffect
        The growth, ratio and correlation against their thresholds.

    Examples
    --------
    >>> from maxmargin.core import sparsity_effect
    >>> guard = {"min_w_growth": 2.0, "max_sparsity_ratio": 0.9, "max_spearman": -0.5}
    >>> effect = sparsity_effect([0.8, 0.6, 0.4], [1.0, 2.0, 4.0], guard)
    >>> effect.w_growth, effect.sparsity_ratio, effect.spearman, effect.large_enough
    (4.0, 0.5, -1.0, True)
    """
    _check_guard(guard, ("min_w_growth", "max_sparsity_ratio", "max_spearman"))
    s, w = check_arrays(sparsity=(sparsity, "(epochs,)"), w_frobenius=(w_frobenius, "(epochs,)"))
    from scipy.stats import spearmanr  # imported here: at the top, every job that imports the core would pay for it

    rho = float(spearmanr(s, w).statistic) if len(s) > 2 else float("nan")
    return SparsityEffect(
        float(w[-1] / w[0]),
        float(s[-1] / s[0]),
        rho,
        guard["min_w_growth"],
        guard["max_sparsity_ratio"],
        guard["max_spearman"],
    )


@dataclass(frozen=True)
class Direction:
    """Whether the direction of the last layer's W settles over the end of training: the angle between W at the
    epoch ``from_epoch`` (``vit.guard.direction_from`` of the epochs) and the final W, at most ``max_angle`` degrees.

    One epoch's step is no test: W can turn a few degrees an epoch and still turn tens of degrees over the window.
    """

    from_epoch: int
    last_epoch: int
    window_cosine: float  # cos(W at from_epoch, final W)
    start_cosine: float  # cos(W_0, W_T): how far the direction moved from the initialisation
    max_angle: float  # degrees

    @property
    def angle(self) -> float:
        """The angle (degrees) W turned between ``from_epoch`` and the last epoch."""
        return float(np.degrees(np.arccos(np.clip(self.window_cosine, -1.0, 1.0))))

    @property
    def settled(self) -> bool:
        return self.angle <= self.max_angle

    def describe(self) -> str:
        return (
            f"W turned {self.angle:.1f} deg between epoch {self.from_epoch} and epoch {self.last_epoch} "
            f"(needs <= {self.max_angle:g}); cos(W at epoch 0, final W) {self.start_cosine:.3f}"
        )


def _check_guard(guard: Mapping[str, float], keys: tuple[str, ...]) -> None:
    """``guard`` holds every key of ``keys`` (the config's ``vit.guard``), or a ValueError naming the missing."""
    missing = [key for key in keys if not isinstance(guard, Mapping) or key not in guard]
    if missing:
        raise ValueError(f"guard must be the config's vit.guard, a mapping with {', '.join(keys)}: missing {missing}")


def w_direction(epochs: Sequence[int], cosine_final: Sequence[float], guard: Mapping[str, float]) -> Direction:
    """How far W's direction turned over the last epochs of training (the claim ``vit_w_direction``): from the last
    epoch at or before ``direction_from`` of the run to its end.

    Parameters
    ----------
    epochs : sequence of int
        The epochs of the run (0: the initialisation).
    cosine_final : sequence of float
        cos(W at that epoch, final W), one per epoch.
    guard : mapping
        ``vit.guard``: ``direction_from`` (the fraction of the epochs the window starts at) and
        ``max_direction_angle`` (degrees).

    Returns
    -------
    Direction
        The window's first and last epoch, the cosines and the threshold (its ``angle`` and ``settled``).

    Examples
    --------
    The window starts at the last epoch at or before half of the 10: epoch 4, where cos = 0.99 (8.1 degrees).

    >>> from maxmargin.core import w_direction
    >>> guard = {"direction_from": 0.5, "max_direction_angle": 10}
    >>> d = w_direction([0, 2, 4, 6, 10], [0.5, 0.9, 0.99, 0.999, 1.0], guard)
    >>> d.from_epoch, round(d.angle, 1), d.settled
    (4, 8.1, True)
    """
    _check_guard(guard, ("direction_from", "max_direction_angle"))
    e, cosine_final = check_arrays(epochs=(epochs, "int (epochs,)"), cosine_final=(cosine_final, "(epochs,)"))
    last = int(e.max())
    start = int(e[e <= guard["direction_from"] * last].max())  # before the last epoch: the window is never empty
    cos = dict(zip(e.tolist(), cosine_final.tolist(), strict=True))
    return Direction(start, last, cos[start], cos[int(e.min())], guard["max_direction_angle"])
