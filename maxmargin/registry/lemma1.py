"""Lemma 1 (workflow/rules/lemma1.smk)."""

from __future__ import annotations

from maxmargin.registry.columns import positive, real, text
from maxmargin.registry.types import Table

TABLES: tuple[Table, ...] = (
    Table(
        "lemma1",
        "lemma1",
        (
            text("instance"),
            positive("n"),
            positive("T"),
            positive("d"),
            text("u"),
            text("p0"),
            real("eta", gt=0),
            positive("n_iter"),
            text("loss"),
            real("max_deviation", ge=0),
            real("relative_max_deviation", ge=0),
            real("max_grad_deviation", ge=0),
            real("final_p_norm", ge=0),
            real("final_risk_p"),
            real("final_risk_W"),
        ),
        "lemma1_table",
        rows=("len(lemma1.instances)",),
        restates={"instance": "lemma1.instances", "n_iter": "lemma1.n_iter"},
        label="Lemma 1",
        caption="Lemma 1: gradient descent on the key-query matrix W (query u = {u}, W(0) = u p(0)^T / ||u||^2, step "
        "eta / ||u||^2, gradient by torch autograd) and on the attention weights p (step eta = {eta:g}, exact "
        "closed-form gradient) on the same data, {n_iter} iterations, {loss} loss. ``max_deviation`` = max over t "
        "of ||W(t) - u p(t)^T / ||u||^2||_F, which the lemma says is 0 (this run: {run[lemma1]}); "
        "``max_grad_deviation`` compares autograd's grad L(W) with the proof's rank-one form u grad L(p)^T at "
        "p = W^T u.",
        caption_blocks=("lemma1",),
        claims=("lemma1",),
        figure="lemma1",
    ),
)
