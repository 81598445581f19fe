"""Claims of the basin study (Theorem 3 on the Figure 1(b) data, beyond the paper), read from basin.csv,
basin_cone.csv and directions.csv; measured by :mod:`maxmargin.experiments.basin_claims`."""

from __future__ import annotations

from maxmargin.claims.base import Claim
from maxmargin.experiments.basin_claims import measure_fig1b_consistent, measure_lmm_cone

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "basin_lmm_cone",
        "Theorem 3's cone exists on the Figure 1(b) data: mu_max(R) > 0 for every R beyond some R0 (measured)",
        "Theorem 3, eq. (7)-(8) (beyond the paper)",
        "some mu > 0, R > 0",
        measure_lmm_cone,
    ),
    Claim(
        "basin_fig1b_consistent",
        "The six Figure 1(b) starts lie in the basins their runs reach",
        "Theorem 3, Fig 1(b) (beyond the paper)",
        "consistent",
        measure_fig1b_consistent,
    ),
)
