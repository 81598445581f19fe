"""Snakemake script: the regularization path of one instance (rule regpath_instance).

Writes the path (``method == "path"``: one row per R and max-margin direction) and, separately, what it is
compared with (GD runs and constrained local optima, ``method`` gd / local).
"""

from maxmargin.core.regpath import radius_grid
from maxmargin.experiments.regpath import regpath_table
from maxmargin.logs import rule_logging
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    instance = snakemake.wildcards.regpath_instance
    settings = {k: v for k, v in snakemake.params.reads["regpath"].items() if k != "instances"}
    settings.setdefault("gd", None)  # the GD runs belong to the Theorem 1 path (Fig. 1(b) data) only
    log.info("regularization path of %s with %s", instance, settings)
    radii = radius_grid(**settings.pop("radii"))
    table = regpath_table(instance, radii=radii, **settings)
    path = table[table["method"] == "path"]
    write_csv(path, snakemake.output.path)
    write_csv(table[table["method"] != "path"], snakemake.output.compare)
    for row in path.itertuples():
        log.info(
            "R %9.4f  %-8s cosine %.9f  KKT residual %.1e  log(L - inf L) %9.3f  %s/%s starts at the optimum",
            row.R,
            row.kind,
            row.cosine,
            row.kkt_residual,
            row.log_excess_loss,
            row.n_at_best,
            row.n_starts,
        )
