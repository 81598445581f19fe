"""Checks of the pipeline's config that JSON schema cannot express.

JSON schema's ``type: number`` admits YAML's ``.nan`` and ``.inf``; a NaN step size then runs to the end and
overwrites good tables with NaN ones. The Snakefile calls :func:`check_config` right after schema validation.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from maxmargin import registry

# Beyond this magnitude every setting of this pipeline (step sizes, radii, counts) overflows float64 arithmetic
# within a few operations; 1e300 validates as "finite" but yields NaN just as surely.
MAX_MAGNITUDE = 1e12


def _numbers(value: Any, key: str) -> Iterator[tuple[str, float]]:
    """Every number inside ``value`` with its dotted key (list items as ``key[i]``)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield key, float(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _numbers(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{key}[{i}]")


def check_config(config: Mapping[str, Any]) -> None:
    """Raise ValueError naming the first key whose number is NaN, infinite or beyond ``MAX_MAGNITUDE``, or a
    block of ``synthetic`` that no registered experiment reads (:mod:`maxmargin.registry`)."""
    used = {experiment.config for experiment in registry.EXPERIMENTS} | {"data"}
    for block in config.get("synthetic", {}):
        if block not in used:
            raise ValueError(
                f"config key 'synthetic.{block}' is read by no registered experiment; registered blocks: "
                + ", ".join(sorted(used))
            )
    for key, number in _numbers(config, ""):
        if not math.isfinite(number):
            raise ValueError(f"config key '{key}' is {number}: every number in the config must be finite")
        if abs(number) > MAX_MAGNITUDE:
            raise ValueError(
                f"config key '{key}' is {number:g}: numbers beyond {MAX_MAGNITUDE:g} overflow float64 arithmetic"
            )
