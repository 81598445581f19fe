"""The ViT (Figures 6-7, Section 4; workflow/rules/vit.smk)."""

from __future__ import annotations

from maxmargin.registry.types import Panel, Table

PANELS: tuple[Panel, ...] = (
    Panel("fig6", "fig6", "vit", "Figure 6", "draw_figure6", gallery=True),
    Panel("fig7", "fig7", "vit", "Figure 7", "draw_figure7", gallery=True),
    Panel("vit_recipes", "vit_recipes", "vit", "ViT recipe study", "draw_recipes"),
)

TABLES: tuple[Table, ...] = (
    Table("vit_metrics", "vit", claims=("vit_sparsity", "vit_learns", "vit_w_direction"), extensions=("csv", "json")),
    Table("vit_baseline", "vit", claims=("vit_sparsity", "vit_learns")),
    Table("vit_recipes", "vit", figure="vit_recipes"),
)
