"""Whether a ViT run learned, and whether its Figure 7 trend is large enough to count (no torch).

Paper: Section 4, Figures 6-7: the [CLS] attention sparsifies as ||W||_F grows. A model that stayed at chance can
show that picture (Adam at 3e-3 at width 768: test accuracy 0.075, ||W||_F 0.2 -> 513), and a tiny move can show
its direction (SGD: ||W||_F grew 0.002%). The claims ``vit_learns`` / ``vit_sparsity`` and Figures 6-7 read the
verdicts from here, with the thresholds of the config's ``vit.guard``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Learned:
    """The final test accuracy against chance + ``learned_margin`` (the claim ``vit_learns``)."""

    learned: bool
    test_acc: float
    chance: float
    bar: float

    def describe(self) -> str:
        return f"final test accuracy {self.test_acc:.3f} (chance {self.chance:.2f})"

    def warning(self) -> str:
        """The warning written on the figures when the model did not learn."""
        return (
            f"WARNING: the model did not learn: final test accuracy {self.test_acc:.3f} < chance + margin = "
            f"{self.bar:.2f}; this figure does not show the paper's effect"
        )


def learned(test_acc: float, num_classes: int, learned_margin: float) -> Learned:
    """Whether ``test_acc`` is at least chance (1 / ``num_classes``) plus ``learned_margin``.

    Parameters
    ----------
    test_acc : float
        Final test accuracy.
    num_classes : int
        Number of classes (chance accuracy is its inverse).
    learned_margin : float
        How far above chance counts as learned (``vit.guard.learned_margin``).

    Returns
    -------
    Learned
        The verdict, the accuracy, chance and the bar.
    """
    chance = 1.0 / num_classes
    bar = chance + learned_margin
    return Learned(test_acc >= bar, test_acc, chance, bar)


@dataclass(frozen=True)
class SparsityEffect:
    """How far soft-sparsity fell and ||W||_F grew from epoch 0 to the end, against the config's minimum effect."""

    w_growth: float  # last ||W||_F / first
    sparsity_ratio: float  # last soft-sparsity / first
    min_w_growth: float
    max_sparsity_ratio: float

    @property
    def large_enough(self) -> bool:
        return self.w_growth >= self.min_w_growth and self.sparsity_ratio <= self.max_sparsity_ratio

    def describe(self) -> str:
        return (
            f"||W||_F x{self.w_growth:.3g} (needs >= {self.min_w_growth:g}), soft-sparsity x{self.sparsity_ratio:.3g} "
            f"(needs <= {self.max_sparsity_ratio:g})"
        )


def sparsity_effect(
    sparsity: tuple[float, float], w_frobenius: tuple[float, float], min_w_growth: float, max_sparsity_ratio: float
) -> SparsityEffect:
    """The effect of Figure 7 from (first, last) soft-sparsity and (first, last) ||W||_F of a run.

    Parameters
    ----------
    sparsity : tuple of float
        Soft-sparsity at the first and the last epoch.
    w_frobenius : tuple of float
        ||W||_F at the first and the last epoch.
    min_w_growth : float
        Smallest growth factor of ||W||_F that counts (``vit.guard``).
    max_sparsity_ratio : float
        Largest ratio last / first soft-sparsity that counts (``vit.guard``).

    Returns
    -------
    SparsityEffect
        The growth and ratio against their thresholds.
    """
    return SparsityEffect(w_frobenius[1] / w_frobenius[0], sparsity[1] / sparsity[0], min_w_growth, max_sparsity_ratio)
