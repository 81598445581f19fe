"""Lemma 1 (workflow/rules/lemma1.smk)."""

from __future__ import annotations

from maxmargin.registry.types import Table

TABLES: tuple[Table, ...] = (Table("lemma1", "lemma1", "Lemma 1", "lemma1.rst", claims=("lemma1",), figure="lemma1"),)
