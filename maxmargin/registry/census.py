"""The convergence census (Figures 9-10, Appendix E; workflow/rules/census.smk)."""

from __future__ import annotations

from maxmargin.registry.columns import (
    cosine,
    count,
    described,
    flag,
    integer,
    label,
    percent,
    positive,
    real,
    text,
    unit,
)
from maxmargin.registry.types import Column, Panel, Table

CLASSES = ("not_saturated", "lmm", "gmm", "neither")

# The settings a census row restates (its trials', or its group's in a summary).
SETTINGS: dict[str, Column] = {
    "n": described(positive("n"), "inputs per problem, n"),
    "T": described(positive("T"), "tokens per input, T"),
    "d": described(positive("d"), "dimension d of the tokens, of the head v and of the attention weights p"),
    "n_iter": described(positive("n_iter"), "iterations of normalized GD"),
}
_NOT_SATURATED = "empty when the softmax did not saturate"
# The census's label of where GD ended, which the basin study gives its runs too.
CLASS = described(
    text("class", CLASSES),
    "not_saturated, or, for a saturated softmax, the kind of p_mm(alpha) at the selected tokens alpha: gmm (alpha "
    "globally optimal, Definition 1), lmm (locally optimal, Definition 2) or neither (an SVM-neighbour of alpha "
    "scores higher)",
)
UNSATURATION = described(
    real("log10_unsaturation"),
    "log10(1 - 1/n sum_i S(K_i p)_{alpha_i}) at the last iterate, exact far below machine precision: the softmax "
    "saturates when it is at most log10 of ``census.saturation_tol`` (Appendix E's test)",
)
TRIAL_COLUMNS: tuple[Column, ...] = (
    SETTINGS["d"],
    described(count("trial"), "index j of the trial within its d"),
    described(
        integer("seed"), "the base seed: trial j of dimension d draws its data from ``default_rng([seed, d, j])``"
    ),
    SETTINGS["n"],
    SETTINGS["T"],
    SETTINGS["n_iter"],
    described(
        flag("saturated"),
        "whether the softmax saturated: 1/n sum_i S(K_i p)_{alpha_i} >= 1 - ``census.saturation_tol`` (Appendix E)",
    ),
    CLASS,
    described(cosine("corr", nullable=True), f"cos(p, p_mm(alpha)) of the last iterate; {_NOT_SATURATED}"),
    described(
        real("gap", nullable=True),
        "the minimal score gap gamma = min_i min_{t in T_i} (gamma_{i alpha_i} - gamma_it) over the SVM-neighbours "
        f"T_i of alpha (Figure 9(b); inf without SVM-neighbours); {_NOT_SATURATED}",
    ),
    described(real("p_norm", ge=0), "||p|| after the last iteration"),
    UNSATURATION,
    described(
        label("alpha"),
        "the selected tokens alpha_i = argmax_t (K_i p)_t, one per input, comma-separated (one input: a number)",
    ),
    described(
        flag("optimal_alpha"),
        "whether every selected token is optimal, gamma_{i alpha_i} = max_t gamma_it (Definition 1)",
    ),
    described(
        real("svm_norm", ge=0, nullable=True),
        f"||p_mm(alpha)|| of the (ATT-SVM) solution at alpha, the inverse of its margin; {_NOT_SATURATED}",
    ),
    described(
        count("n_neighbors"), "the SVM-neighbours of alpha, counted over every input's T_i (0 when not saturated)"
    ),
    described(count("skipped_steps"), "GD steps skipped because the gradient was exactly zero (underflow)"),
    described(
        text("solver", nullable=True),
        "what solved (ATT-SVM): ldp (least-distance programming), or cvxopt where LDP's KKT check failed; "
        + _NOT_SATURATED,
    ),
)
# Figure 9(a)'s proportions, each with its Wilson interval (maxmargin.experiments.census_tables): column -> (classes
# counted, denominator, scale). "trials" = every trial of the group, "saturated" = its saturated trials; percentages
# of trials are scaled by 100, P(gap < 0) is a fraction of the saturated trials (no class: the sign of the gap).
PROPORTIONS = {
    "pct_not_saturated": (("not_saturated",), "trials", 100.0),
    "pct_lmm": (("lmm", "gmm"), "trials", 100.0),
    "pct_gmm": (("gmm",), "trials", 100.0),
    "pct_neither": (("neither",), "trials", 100.0),
    "p_gap_negative": ((), "saturated", 1.0),
}
# What each proportion counts, in the paper's words.
_PROPORTION_WORDS = {
    "pct_not_saturated": "percentage of the trials whose softmax did not saturate",
    "pct_lmm": "percentage of the trials that converged to a locally-optimal direction (an LMM, the GMM included)",
    "pct_gmm": "percentage of the trials that converged to the GMM",
    "pct_neither": "percentage of the trials saturated at tokens neither globally nor locally optimal",
    "p_gap_negative": "P(gamma < 0): the fraction of the saturated trials whose minimal score gap ``gap`` is negative",
}
_INTERVAL = ("", "_ci_low", "_ci_high")
_INTERVAL_WORDS = {"_ci_low": "lower", "_ci_high": "upper"}


def _proportion(column: Column, name: str, suffix: str) -> Column:
    """A proportion of the summary, or an end of its Wilson interval, with what it measures."""
    if not suffix:
        return described(column, _PROPORTION_WORDS[name])
    return described(
        column, f"{_INTERVAL_WORDS[suffix]} end of the Wilson interval of ``{name}`` (at ``census.confidence``)"
    )


def summary_columns(*keys: str) -> tuple[Column, ...]:
    """A census summary per ``keys``: the group, its trial count, proportions with Wilson intervals, mean corr."""
    columns = [SETTINGS[key] for key in keys] + [described(count("n_trials"), "trials in the group")]
    shares = [name for name, (_, over, _) in PROPORTIONS.items() if over == "trials"]
    columns += [_proportion(percent(f"{name}{s}", nullable=True), name, s) for name in shares for s in _INTERVAL]
    columns.append(
        described(
            cosine("mean_corr", nullable=True),
            "the mean over the saturated trials of their ``corr``, cos(p, p_mm(alpha))",
        )
    )
    columns += [
        _proportion(unit(f"{name}{s}", nullable=True), name, s)
        for name in PROPORTIONS
        if name not in shares
        for s in _INTERVAL
    ]
    if "n_iter" in keys:  # the budget study counts the labels that move with the budget
        columns.append(
            described(
                count("n_labels_moved"),
                "trials whose ``class`` differs from the same trial's at the study's smallest n_iter",
            )
        )
    return tuple(columns)


_TRIALS = "census.n_trials"
_GRID_TRIALS = "census.grid.n_trials"
_BUDGET = ("len(census.budget.dims)", "len(census.budget.n_iter)")
_GRID = ("len(census.grid.n)", "len(census.grid.T)", "len(census.grid.dims)")
_SETUP = (
    "normalized gradient descent (learning rate {eta:g}, {n_iter} iterations, {loss} loss, ||p(0)|| = "
    "{init_scale:g}) on random problems with n = {n} inputs of T = {T} tokens, tokens and head uniform on the unit "
    "sphere of R^d, random labels and W = I"
)
_GAP = "gamma = min_i min_{{t in T_i}} (gamma_{{i alpha_i}} - gamma_it)"

PANELS: tuple[Panel, ...] = (
    Panel(
        name="fig9a",
        target="fig9",
        family="census",
        label="Figure 9(a)",
        draw="fig9a",
        tables=("census_summary",),
        caption="Figure 9(a): outcome of " + _SETUP + ", for each dimension d (bars stacked to 100% of the "
        "{n_trials} trials). Red: the softmax is not saturated (mean selected probability below 1 - "
        "{saturation_tol:g}, a finite-norm limit); blue: saturated and the selected tokens alpha are locally optimal "
        "but not globally optimal (p converges to an LMM); green: globally optimal (the GMM); gray: saturated but an "
        "SVM-neighbour of alpha scores higher (neither). Error bars: Wilson intervals at confidence {confidence:g} "
        "of the boundaries (share of GMM, of LMM including GMM, of saturated trials). Appendix E: at small d the "
        "softmax often does not saturate; once d is moderately large, GD almost always saturates and converges to an "
        "LMM (Theorems 3 and 4), and increasingly to the GMM as d grows. This run: {run[census_small_d]}; "
        "{run[census_lmm]}; {run[census_gmm_grows]}. Numbers: ``census_summary.csv``.",
        caption_blocks=("census",),
        subcategory="Figures 9-10",
    ),
    Panel(
        name="fig9b",
        target="fig9",
        family="census",
        label="Figure 9(b)",
        draw="fig9b",
        tables=("fig9b",),
        caption="Figure 9(b): distribution of the minimal score gap " + _GAP + " between each selected token and "
        "its SVM-neighbours (Definition 2), over the saturated trials of the census of Figure 9(a), for d in "
        "{histogram[dims]} (bins of width {histogram[bin_width]:g}). gamma > 0 means the selected tokens are "
        "locally optimal and p converges to an LMM; the bars left of 0 are the trials with an SVM-neighbour that "
        "scores higher. Appendix E: gamma < 0 is rare (below 1%), typically close to zero, and GD is then still "
        "> 0.99 correlated with the max-margin solution on average. This run: {run[census_gap_negative]}; "
        "{run[census_gap_size]}; {run[census_negative_corr]}. Numbers: ``fig9b.csv`` (column ``probability``), "
        "``census_trials.csv``.",
        caption_blocks=("census",),
        subcategory="Figures 9-10",
    ),
    Panel(
        name="fig10",
        target="fig10",
        family="census",
        label="Figure 10",
        draw="fig10",
        tables=("fig9b",),
        caption="Figure 10: cumulative distribution of the minimal score gap gamma of Figure 9(b), with the dashed "
        "line at gamma = 0; the legend gives P(gamma < 0) per d. Appendix E: a sharp transition at zero, with fewer "
        "than 1% of the saturated trials below it. This run: {run[census_gap_negative]}. Numbers: ``fig9b.csv`` "
        "(column ``cumulative``, at each bin's right edge).",
        caption_blocks=("census",),
        subcategory="Figures 9-10",
    ),
    Panel(
        name="census_budget",
        target="census_budget",
        family="census",
        label="Iteration budget",
        draw="census_budget",
        tables=("census_budget",),
        caption="The iteration budget: the census of d in {budget[dims]} rerun with n_iter in {budget[n_iter]}. "
        "Left: P(gamma < 0) among saturated trials, right: the share of trials not saturated, with Wilson intervals "
        "at confidence {confidence:g}; the legend counts the trials whose label differs from the smallest budget's. "
        "Tests the explanation that P(gamma < 0) above 1% at small d comes from runs too short to separate "
        "near-equal scores. This run: {run[census_budget]}. Numbers: ``census_budget.csv``.",
        caption_blocks=("census",),
    ),
    Panel(
        name="census_grid",
        target="census_grid",
        family="census",
        label="Phase diagram",
        draw="census_grid",
        tables=("census_grid",),
        caption="Phase diagram of the census beyond the paper's (n, T) = ({n}, {T}): for every n in {grid[n]}, T in "
        "{grid[T]} and d in {grid[dims]}, {grid[n_trials]} trials of normalized GD ({n_iter} iterations); heat maps "
        "of the share of trials reaching the GMM, of trials not saturated, and P(gamma < 0) among saturated trials. "
        "Numbers, with Wilson intervals at confidence {confidence:g}: ``census_grid.csv``.",
        caption_blocks=("census",),
    ),
)

_SUMMARY = "every proportion with its Wilson interval at confidence {confidence:g}."

TABLES: tuple[Table, ...] = (
    Table(
        name="census_run",
        family="census",
        columns=TRIAL_COLUMNS,
        rule="census_trials",
        path="runs/census/d{d}.csv",
        values={"d": "census.dims"},
        rows=(_TRIALS,),
        restates={"d": "{d}", "n": "census.n", "T": "census.T", "n_iter": "census.n_iter", "seed": "census.seed"},
        target="fig9",  # the runs Figure 9 is drawn from: `snakemake fig9` restores them and their sidecars
    ),
    Table(
        name="census_budget_run",
        family="census",
        columns=TRIAL_COLUMNS,
        rule="census_budget_trials",
        path="runs/census_budget/d{d}_iter{n_iter}.csv",
        values={"d": "census.budget.dims", "n_iter": "census.budget.n_iter"},
        rows=(_TRIALS,),
        restates={"d": "{d}", "n_iter": "{n_iter}", "n": "census.n", "T": "census.T", "seed": "census.seed"},
        target="census_budget",
    ),
    Table(
        name="census_grid_run",
        family="census",
        columns=TRIAL_COLUMNS,
        rule="census_grid_cell",
        path="runs/census_grid/n{n}_T{T}_d{d}.csv",
        values={"n": "census.grid.n", "T": "census.grid.T", "d": "census.grid.dims"},
        rows=(_GRID_TRIALS,),
        restates={"n": "{n}", "T": "{T}", "d": "{d}", "n_iter": "census.n_iter", "seed": "census.seed"},
        target="census_grid",
    ),
    Table(
        name="census_trials",
        family="census",
        columns=TRIAL_COLUMNS,
        rule="census_gather",
        rows=(_TRIALS, "len(census.dims)"),
        restates={
            "d": "census.dims",
            "n": "census.n",
            "T": "census.T",
            "n_iter": "census.n_iter",
            "seed": "census.seed",
        },
        label="census trials",
        caption="Every trial of the convergence census (Appendix E), one row per trial of each d: " + _SETUP + ".",
        caption_blocks=("census",),
        claims=("census_mean_corr", "census_gap_negative", "census_gap_size", "census_negative_corr"),
        target="fig9",
    ),
    Table(
        name="census_summary",
        family="census",
        columns=summary_columns("d"),
        rule="census_gather",
        rows=("len(census.dims)",),
        restates={"d": "census.dims"},
        label="census summary",
        caption="Convergence census summary (Appendix E, Figure 9(a)), one row per d, " + _SUMMARY,
        caption_blocks=("census",),
        claims=("census_mean_corr", "census_gap_negative", "census_gmm_grows", "census_small_d", "census_lmm"),
    ),
    Table(
        name="fig9b",
        family="census",
        columns=(
            SETTINGS["d"],
            described(real("bin_left"), "the bin's left edge, a multiple of the bin width (so that 0 is an edge)"),
            described(real("bin_right"), "the bin's right edge"),
            described(count("count"), "saturated trials of this d whose minimal score gap gamma falls in the bin"),
            described(
                unit("probability", nullable=True),
                "``count`` / ``n_saturated``, Figure 9(b)'s bar (empty when no trial of this d saturated)",
            ),
            described(
                unit("cumulative", nullable=True),
                "P(gamma < ``bin_right``), Figure 10's curve; at the bin ending at 0, P(gamma < 0) (empty when no "
                "trial of this d saturated)",
            ),
            described(count("n_saturated"), "saturated trials of this d with a finite gap gamma"),
        ),
        rule="census_histogram",
        restates={"d": "census.histogram.dims"},
        label="Figure 9(b), 10",
        caption="The distribution of the minimal score gap gamma over the saturated census trials of each d in "
        "{histogram[dims]}, in bins of width {histogram[bin_width]:g}: Figure 9(b) draws its histogram, Figure 10 its "
        "cumulative distribution.",
        caption_blocks=("census",),
    ),
    Table(
        name="census_budget_trials",
        family="census",
        columns=TRIAL_COLUMNS,
        rule="census_budget_gather",
        path="runs/census_budget/trials.csv",
        rows=(_TRIALS, *_BUDGET),
        restates={"d": "census.budget.dims", "n_iter": "census.budget.n_iter", "seed": "census.seed"},
        target="census_budget",
    ),
    Table(
        name="census_budget",
        family="census",
        columns=summary_columns("d", "n_iter"),
        rule="census_budget_gather",
        rows=_BUDGET,
        restates={"d": "census.budget.dims", "n_iter": "census.budget.n_iter"},
        label="census budget",
        caption="The census at several iteration budgets, one row per (d, n_iter), " + _SUMMARY,
        caption_blocks=("census",),
        claims=("census_budget",),
    ),
    Table(
        name="census_grid_trials",
        family="census",
        columns=TRIAL_COLUMNS,
        rule="census_grid_gather",
        path="runs/census_grid/trials.csv",
        rows=(_GRID_TRIALS, *_GRID),
        restates={"n": "census.grid.n", "T": "census.grid.T", "d": "census.grid.dims", "seed": "census.seed"},
        target="census_grid",
    ),
    Table(
        name="census_grid",
        family="census",
        columns=summary_columns("n", "T", "d"),
        rule="census_grid_gather",
        rows=_GRID,
        restates={"n": "census.grid.n", "T": "census.grid.T", "d": "census.grid.dims"},
        label="census grid",
        caption="The census phase diagram, one row per (n, T, d) cell, " + _SUMMARY,
        caption_blocks=("census",),
    ),
)
