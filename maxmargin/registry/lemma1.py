"""Lemma 1 (workflow/rules/lemma1.smk)."""

from __future__ import annotations

from maxmargin.registry.columns import described, positive, real, text
from maxmargin.registry.types import Table

TABLES: tuple[Table, ...] = (
    Table(
        name="lemma1",
        family="lemma1",
        columns=(
            described(text("instance"), "the data (tokens X, labels Y, head v) of Figure 1(a), 1(b) or 1(c)"),
            described(positive("n"), "inputs, n"),
            described(positive("T"), "tokens per input, T"),
            described(positive("d"), "dimension d of the tokens"),
            described(text("u"), "the query u (a JSON list)"),
            described(
                text("p0"), "p(0), drawn from N(0, I) (a JSON list); GD on W starts at W(0) = u p(0)^T / ||u||^2"
            ),
            described(real("eta", gt=0), "the step of GD on p (GD on W steps eta / ||u||^2)"),
            described(positive("n_iter"), "iterations of both runs"),
            described(text("loss"), "the loss l"),
            described(
                real("max_deviation", ge=0), "max over t of ||W(t) - u p(t)^T / ||u||^2||_F, which Lemma 1 says is 0"
            ),
            described(
                real("relative_max_deviation", ge=0),
                "``max_deviation`` over max_t ||u p(t)^T / ||u||^2||_F = max_t ||p(t)|| / ||u||",
            ),
            described(
                real("max_grad_deviation", ge=0),
                "max over t of ||grad L(W(t)) - u grad L(p)^T||_F at p = W(t)^T u: torch autograd against the proof's "
                "rank-one gradient",
            ),
            described(real("final_p_norm", ge=0), "||p|| after the last iteration"),
            described(real("final_risk_p"), "L(p) after the last iteration of GD on p"),
            described(real("final_risk_W"), "L(W) after the last iteration of GD on W"),
        ),
        rule="lemma1_table",
        rows=("len(lemma1.instances)",),
        restates={"instance": "lemma1.instances", "n_iter": "lemma1.n_iter"},
        label="Lemma 1",
        caption="Lemma 1: gradient descent on the key-query matrix W (query u = {u}, W(0) = u p(0)^T / ||u||^2, step "
        "eta / ||u||^2, gradient by torch autograd) and on the attention weights p (step eta = {eta:g}, exact "
        "closed-form gradient) on the same data, {n_iter} iterations, {loss} loss: the lemma says W(t) = u p(t)^T / "
        "||u||^2 at every t. This run: {run[lemma1]}.",
        caption_blocks=("lemma1",),
        claims=("lemma1",),
        target="lemma1",
    ),
)
