"""The basin study on the Figure 1(b) data (Theorem 3's cone, beyond the paper; workflow/rules/basin.smk)."""

from __future__ import annotations

from maxmargin.registry.types import Panel, Table

PANELS: tuple[Panel, ...] = (Panel("basin", "basin", "basin", "Basins of attraction (Theorem 3)", "draw_basin"),)

TABLES: tuple[Table, ...] = (
    Table(
        "basin",
        "basin",
        "Basins: one row per start",
        "basin.rst",
        claims=("basin_fig1b_consistent",),
        figure="basin",
    ),
    Table(
        "basin_cone", "basin", "Basins: the cone of Theorem 3", "basin.rst", claims=("basin_lmm_cone",), figure="basin"
    ),
    Table("basin_paths", "basin", figure="basin"),
)
