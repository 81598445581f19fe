"""Snakemake script: gather the per-instance regularization paths into results/tables/regpath{,_compare}.csv."""

import pandas as pd

from maxmargin.logs import rule_logging
from maxmargin.tables import read_table, write_csv

with rule_logging(snakemake) as log:
    path = pd.concat([read_table(f) for f in snakemake.input.path], ignore_index=True)
    compare = pd.concat([read_table(f) for f in snakemake.input.compare], ignore_index=True)
    write_csv(path, snakemake.output.path)
    write_csv(compare, snakemake.output.compare)
    last = path[path["R"] == path.groupby("instance")["R"].transform("max")]
    for row in last.itertuples():
        log.info(
            "%s at R = %g: cosine with %s %.9f (KKT residual %.1e)",
            row.instance,
            row.R,
            row.kind,
            row.cosine,
            row.kkt_residual,
        )
    log.info("largest KKT residual on any path: %.2e", path["kkt_residual"].max())
    for (instance, run, kind), g in compare.groupby(["instance", "run", "kind"]):
        top = g.loc[g["R"].idxmax()]
        log.info("%s %s: at R = %.4g cosine with %s %.6f", instance, run, top.R, kind, top.cosine)
