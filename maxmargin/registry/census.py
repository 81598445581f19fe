"""The convergence census (Figures 9-10, Appendix E; workflow/rules/census.smk)."""

from __future__ import annotations

from maxmargin.registry.types import Panel, Table

PANELS: tuple[Panel, ...] = (
    Panel("fig9a", "fig9", "census", "Figure 9(a)", "fig9a", tables=("census_summary",), gallery=True),
    Panel("fig9b", "fig9", "census", "Figure 9(b)", "fig9b", tables=("fig9b",), gallery=True),
    Panel("fig10", "fig10", "census", "Figure 10", "fig10", tables=("fig9b",), gallery=True),
    Panel(
        "census_budget",
        "census_budget",
        "census",
        "Iteration budget",
        "census_budget",
        tables=("census_budget",),
    ),
    Panel("census_grid", "census_grid", "census", "Phase diagram", "census_grid", tables=("census_grid",)),
)

TABLES: tuple[Table, ...] = (
    Table(
        "census_trials",
        "census",
        "census trials",
        "census_trials.rst",
        claims=("census_mean_corr", "census_gap_negative"),
    ),
    Table(
        "census_summary",
        "census",
        "census summary",
        "census_summary.rst",
        claims=(
            "census_mean_corr",
            "census_gap_negative",
            "census_gmm_grows",
            "census_small_d",
            "census_lmm",
        ),
    ),
    Table("fig9b", "census", "Figure 9(b), 10", "census_summary.rst"),
    Table(
        "census_budget",
        "census",
        "census budget",
        "census_summary.rst",
        claims=("census_budget",),
        figure="census_budget",
    ),
    Table("census_grid", "census", "census grid", "census_summary.rst", figure="census_grid"),
)
