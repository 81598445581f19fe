"""Every statement of Appendix E (Implementation Details and Additional Experiments), in the paper's order, and the
other statements of the paper the figures illustrate, each with the claims that measure it or why none does (a setting
the config holds, a deviation from the paper, a definition, a statement without a number).

docs/results/claims.md lists them beside the claims table (scripts/docs_claims.py); tests/test_claim_sentences.py
checks that every claim named here exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from maxmargin.tables import markdown_table


@dataclass(frozen=True)
class Statement:
    """One statement of the paper: where, its words (short), and the claims measuring it or why there is none."""

    source: str
    statement: str
    claims: tuple[str, ...] = ()
    why_none: str = ""


_SETTING = "a setting, not a result: the config holds it"

APPENDIX_E: tuple[Statement, ...] = (
    Statement(
        "Appendix E",
        "One attention layer in PyTorch, SGD with learning rate 0.1 for 1000 iterations, the gradient normalized",
        why_none=_SETTING + " (synthetic.fig1 etc.: eta, n_iter; numpy, not PyTorch)",
    ),
    Statement(
        "Appendix E",
        "Locally-optimal indices are those with the highest softmax scores; cvxopt solves (ATT-SVM) at them",
        why_none="a method (maxmargin.core.svm), checked by tests/test_svm.py, not a result",
    ),
    Statement("Appendix E, Fig 3", "In Figures 3(a) and 3(b), v_mm / ||v_mm|| = [0, 1]", ("fig3_v_mm",)),
    Statement(
        "Appendix E, Fig 3",
        "In Figure 3(a) all optimal tokens are support vectors and p_relax = p_mm; in 3(b) yellow is not a support "
        "vector",
        ("fig3_p_relax_vs_p_mm", "joint_p_mm", "joint_p_relax"),
    ),
    Statement(
        "Appendix E, Fig 8",
        "With n = T = d = 2, two initializations converge to two different SVM solutions (GMM and LMM): n = 1 is "
        "necessary in Theorem 2",
        ("n1_necessary",),
    ),
    Statement(
        "Appendix E, Fig 9(a)",
        "n = 4, T = 6, 1,000 random trials for d in {2, 5, 10, 100, 300, 500}; normalized GD, learning rate 1, 1000 "
        "iterations; tokens and head uniform on the unit sphere, W = I",
        why_none=_SETTING + " (census: n, T, n_trials, dims, eta, n_iter)",
    ),
    Statement(
        "Appendix E, Fig 9(a)",
        "Saturation: the mean softmax probability of the selected tokens is at least 1 - 1e-5",
        why_none="a definition; the config holds it (census.saturation_tol)",
    ),
    Statement(
        "Appendix E, Fig 9(a)",
        "Small d (d = 2): a tall red bar of finite-norm (not saturated) solutions",
        ("census_small_d",),
    ),
    Statement(
        "Appendix E, Fig 9(a)",
        "For larger d the softmax saturates and the selected tokens almost always converge to an LMM",
        ("census_lmm",),
    ),
    Statement("Appendix E, Fig 9(a)", "The probability of GMM convergence increases with d", ("census_gmm_grows",)),
    Statement(
        "Appendix E, Fig 9",
        "The average correlation between p(t) and its LMM/GMM direction is 0.997",
        ("census_mean_corr",),
    ),
    Statement(
        "Appendix E, Fig 9(b)",
        "There exist saturated instances that converge to neither LMM nor GMM",
        ("census_gap_negative",),
    ),
    Statement(
        "Appendix E, Fig 9(b)",
        "Bins of width < 0.01",
        why_none=_SETTING + " (census.histogram.bin_width)",
    ),
    Statement(
        "Appendix E, Fig 9(b), 10",
        "This happens in less than 1% of the problems: P(gamma < 0) < 0.01",
        ("census_gap_negative",),
    ),
    Statement(
        "Appendix E, Fig 9(b)",
        "Even if gamma < 0, it is typically close to zero: an SVM-neighbour scores only slightly higher",
        ("census_gap_size",),
    ),
    Statement(
        "Appendix E, Fig 9(b)",
        "Close token scores need a large number of gradient iterations to be told apart",
        ("census_budget",),
    ),
    Statement(
        "Appendix E, Fig 9(b)",
        "Over the instances with gamma < 0, GD is still > 0.99 correlated with the max-margin solution on average",
        ("census_negative_corr",),
    ),
    Statement(
        "Appendix E, Fig 10",
        "The cumulative distribution of gamma has a sharp transition at zero (< 1% of the instances below it)",
        ("census_gap_negative",),
    ),
    Statement(
        "Appendix E, Fig 10",
        "Negative gaps come from small score differences and the finite number of iterations",
        ("census_budget", "census_gap_size"),
    ),
    Statement(
        "Appendix E, Fig 10",
        "Even with a negative gap, GD is aligned with p_mm(alpha), as Section D predicts",
        ("census_negative_corr",),
    ),
)

# Statements elsewhere in the paper (Sections 2-5), with the claims measuring them or why none does. A ``why_none``
# may quote the paper-scale config (``{train[...]}``: the ``vit.train`` block of workflow/config/paper.yaml).
ELSEWHERE: tuple[Statement, ...] = (
    Statement(
        "Section 2, Fig 1(a)",
        "As t grows, the correlation of p(t) / ||p(t)|| with p_mm / ||p_mm|| consistently increases",
        ("gd_corr_increases",),
    ),
    Statement(
        "Section 4, Fig 5",
        "The asymptotic direction of gradient descent is determined by p_mm, but transient dynamics can be biased "
        "towards the high-score token (correlation loss) or the low-score one (logistic loss)",
        ("loss_gmm_limit", "loss_transient_bias"),
    ),
    Statement(
        "Section 4, Fig 6-7",
        "ViT-base trained from scratch on CIFAR-10 for 400 epochs at a fixed learning rate of 3e-3 (Figures 6-7)",
        why_none="a deviation from the paper, not a result: the paper-scale config (workflow/config/paper.yaml) "
        "trains with {train[optimizer]} at a learning rate of {train[lr]:g} after {train[warmup_epochs]} warm-up "
        "epochs, gradients clipped at norm {train[grad_clip]:g}, then a {train[schedule]} rate, for "
        "{train[epochs]} epochs; docs/vit.md says why, docs/gpu/index.md what has run",
    ),
    Statement(
        "Section 4, Fig 6",
        "The salient patches the attention highlights correspond to the optimal tokens of the theory",
        why_none="an interpretation without a number: an image's patches have no score gamma that names an optimal one",
    ),
    Statement(
        "Sections 2-3, Appendices A-D",
        "Theorems 1-6 and their lemmas",
        why_none="proved, not measured: the claims test them on the instances of the figures (their source column)",
    ),
    Statement(
        "Section 5, Appendix F",
        "Related work and the discussion of future directions",
        why_none="no number",
    ),
)


def statements_markdown(statements: tuple[Statement, ...], paper_train: Mapping[str, Any] | None = None) -> str:
    """The statements as a Markdown table: where, the paper's words, the claims measuring them or why none does
    (its ``{train[...]}`` fields filled from ``paper_train``, the paper-scale config's ``vit.train``)."""
    rows = [
        (s.source, s.statement, ", ".join(s.claims), s.why_none.format(train=paper_train or {})) for s in statements
    ]
    return markdown_table(pd.DataFrame(rows, columns=["source", "statement", "claims", "why no claim"]))


def claims_page(table: str, paper_train: Mapping[str, Any]) -> str:
    """docs/results/claims.md: the claims table of the default run (``table``, Markdown), then every statement of
    Appendix E with its claims or why none, then the paper's other statements (``paper_train``: the ``vit.train``
    block of the paper-scale config, which a deviation from the paper quotes)."""
    return (
        "# Claims of the paper, measured\n\n"
        "Generated by `make gallery` (rule `docs_claims`) from `results/tables/claims.md` of the default run; "
        "do not edit. Verdicts: `holds`, `differs`, `inconclusive` (see docs/census.md); the note of a claim that "
        "does not hold starts with the reason its measurement gives.\n\n"
        + table
        + "\n## Appendix E, statement by statement\n\n"
        "Every statement of Appendix E (Implementation Details and Additional Experiments), with the claims above "
        "that measure it, or why none does (`maxmargin/claims/statements.py`).\n\n"
        + statements_markdown(APPENDIX_E)
        + "\n## Other statements of the paper\n\n"
        "The statements of Sections 2-5 that the figures illustrate, with the claims above that measure them, or why "
        "none does.\n\n" + statements_markdown(ELSEWHERE, paper_train)
    )
