"""The regularization paths (eq. (2), Theorems 1, 5, 6; workflow/rules/regpath.smk)."""

from __future__ import annotations

from maxmargin.registry.types import Panel, Table

# Instances of the regularization-path study (the wildcard {regpath_instance}): Theorem 1 on the Fig. 1(b) data,
# Theorems 5-6 on the Fig. 3(a)/(b) data; the config's regpath.instances picks among them.
REGPATH_INSTANCES: tuple[str, ...] = ("fig1b", "fig3a", "fig3b")

PANELS: tuple[Panel, ...] = (
    Panel(
        "regpath",
        "regpath",
        "regpath",
        "Regularization paths",
        "draw_regpath",
        tables=("regpath", "regpath_compare"),
        gallery=True,
    ),
)

TABLES: tuple[Table, ...] = (
    Table(
        "regpath",
        "regpath",
        "Regularization paths",
        "regpath.rst",
        claims=("regpath_gmm", "regpath_joint_a", "regpath_joint_b"),
        figure="regpath",
    ),
    Table(
        "regpath_compare",
        "regpath",
        "Regularization paths: GD and local optima",
        "regpath.rst",
        figure="regpath",
    ),
)
