"""Claims of the regularization paths (Theorem 1; Theorems 5-6), read from regpath.csv."""

from __future__ import annotations

from collections.abc import Mapping

from maxmargin.claims.base import Claim, Measurement, Tables, note_of, verdict_of

# The normalized path has reached a direction at the largest R: cosine at least this (a negative threshold in a
# claim's kinds means "below it": the path is not aligned with that direction).
ALIGNED_COSINE = 0.99


def _regpath(t: Tables, instance: str, kinds: Mapping[str, float]) -> Measurement:
    """Theorems 1, 5 and 6: at the largest R the normalized path's cosine with each direction of ``kinds`` is at
    least its threshold (a negative threshold: below its absolute value)."""
    r = t["regpath"]
    r = r[r["instance"] == instance]
    top = r[r["R"] == r["R"].max()].set_index("kind")
    parts, why = [], []
    for kind, threshold in kinds.items():
        cos = float(top.loc[kind, "cosine"])
        parts.append(f"cos with {kind} {cos:.4f}")
        if threshold > 0 and cos < threshold:
            why.append(f"the path's cosine with {kind} is only {cos:.4f} at the largest R")
        if threshold < 0 and cos >= -threshold:
            why.append(f"the path is aligned with {kind} too (cosine {cos:.4f}): it does not tell {kind} apart")
    kkt = float(r["kkt_residual"].max())
    verdict = verdict_of(not why)
    return (
        f"at R = {top.index.size and r['R'].max():g}: " + ", ".join(parts),
        verdict,
        note_of(verdict, "; ".join(why), f"max KKT residual along the path {kkt:.1e}"),
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "regpath_gmm",
        "The regularization path converges to the GMM, even where GD reaches an LMM",
        "Theorem 1 (Fig 1(b) data)",
        "p(R)/R -> p_mm*",
        lambda t, _cfg: _regpath(t, "fig1b", {"gmm": ALIGNED_COSINE}),
    ),
    Claim(
        "regpath_joint_a",
        "Joint path: v_r/r -> v_mm and p_R/R -> p_mm",
        "Theorem 5 (Fig 3(a) data)",
        "corr -> 1",
        lambda t, _cfg: _regpath(t, "fig3a", {"p_mm": ALIGNED_COSINE, "v_mm": ALIGNED_COSINE}),
    ),
    Claim(
        "regpath_joint_b",
        "Joint path: p_R/R -> p_relax when an input is not a support vector",
        "Theorem 6 (Fig 3(b) data)",
        "corr -> 1",
        lambda t, _cfg: _regpath(
            t, "fig3b", {"p_relax": ALIGNED_COSINE, "p_mm": -ALIGNED_COSINE, "v_mm": ALIGNED_COSINE}
        ),
    ),
)
