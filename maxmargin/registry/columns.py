"""The kinds of columns the tables are made of, as plain data (:class:`~maxmargin.registry.types.Column`);
:mod:`maxmargin.tables` turns them into the contracts it checks."""

from __future__ import annotations

import dataclasses

from maxmargin.registry.types import Column

COSINE_SLACK = 1e-9  # a cosine of unit vectors may exceed 1 by rounding


def integer(name: str, *, ge: float | None = None, gt: float | None = None, nullable: bool = False) -> Column:
    """Whole numbers (with NaN allowed: floats holding whole numbers, as CSV reads them back)."""
    return Column(name=name, kind="int", nullable=nullable, ge=ge, gt=gt)


def positive(name: str) -> Column:
    return integer(name, gt=0)


def count(name: str, nullable: bool = False) -> Column:
    return integer(name, ge=0, nullable=nullable)


def real(
    name: str,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    nullable: bool = False,
    required: bool = True,
) -> Column:
    """Real numbers (a column of whole numbers reads back from CSV as integers: coerced)."""
    return Column(name=name, kind="float", nullable=nullable, required=required, ge=ge, gt=gt, le=le)


def unit(name: str, nullable: bool = False) -> Column:
    """A probability or a share: in [0, 1]."""
    return real(name, ge=0.0, le=1.0, nullable=nullable)


def percent(name: str, nullable: bool = False) -> Column:
    return real(name, ge=0.0, le=100.0, nullable=nullable)


def cosine(name: str, nullable: bool = False) -> Column:
    return real(name, ge=-1.0 - COSINE_SLACK, le=1.0 + COSINE_SLACK, nullable=nullable)


def text(name: str, isin: tuple[str, ...] = (), *, nullable: bool = False, required: bool = True) -> Column:
    return Column(name=name, kind="str", nullable=nullable, required=required, isin=isin)


def flag(name: str) -> Column:
    return Column(name=name, kind="bool")


def label(name: str, nullable: bool = False) -> Column:
    """A label whose values may read back as numbers or strings."""
    return Column(name=name, kind="any", nullable=nullable)


def described(column: Column, description: str) -> Column:
    """``column`` with what it measures (:attr:`Column.description`)."""
    return dataclasses.replace(column, description=description)
