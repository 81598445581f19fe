"""The files a GPU session reads and brings back, each from where it is declared.

Under the results root: the run's checkpoint (``registry.vit.CHECKPOINTS``: not a declared output of its rule), the
run's metrics table and its JSON sidecar, the baseline's, the pilot's and the probe's tables (registered tables), and
the rule logs the session watches (the rules' ``log:`` paths in workflow/rules/vit.smk, which the registry does not
declare: tests/test_gpu_package.py checks them against the rules). Under the repository: the page rule docs_vit
writes and the files beside it, which the page links. Standard library only (the registry is plain data).
"""

from __future__ import annotations

from maxmargin import registry
from maxmargin.registry.vit import CHECKPOINTS


def table_file(name: str, extension: str = "csv") -> str:
    """A registered table's file of ``extension`` under the results root (a ViT run's table has a JSON beside it)."""
    entry = registry.table(name)
    if extension not in entry.extensions:
        raise ValueError(f"table {name} has no .{extension} file (its files: {', '.join(entry.extensions)})")
    return entry.pattern.removesuffix(".csv") + f".{extension}"


CHECKPOINT = CHECKPOINTS["vit_train"]  # the run's: a cut run's epochs are read back from it
METRICS = table_file("vit_metrics")  # the run's metrics (rule vit_metrics_table), and its sidecar:
SIDECAR = table_file("vit_metrics", "json")  # settings, fingerprint, the table's sha256, the epochs' times
BASELINE = table_file("vit_baseline")
PILOT = table_file("vit_pilot")
W_SVM = table_file("vit_w_svm")
RAY = table_file("vit_decisive_ray")  # the ray test (rule vit_decisive_ray), where vit.decisive.parts has ray
# The rule logs (workflow/rules/vit.smk): the training's epoch lines, the pilot's, the probe's start and heads.
TRAIN_LOG = "logs/vit_train/vit.log"
PILOT_LOG = "logs/vit_pilot/pilot.log"
PROBE_LOG = "logs/vit_probe/vit_w_svm.log"
RAY_LOG = "logs/vit_decisive_ray/vit_decisive_ray.log"

# The run's page (rule docs_vit: docs/results/<vit.docs>.md) and what it writes beside it, which the page links:
# one archive brings them. Of those, W_SVM_FILES are written only with vit.docs_w_svm (the probe's).
PAGES = "docs/results"
PAGE_FILES = (
    ".md",
    "_fig6.png",
    "_fig7.png",
    "_fig7_regime.png",
    "_fig7_w_svm.png",
    "_metrics.csv",
    "_baseline.csv",
    "_w_svm.csv",
    "_claims.csv",
)
W_SVM_FILES = ("_fig7_w_svm.png", "_w_svm.csv")
# Written with the probe's image-count curve alone (vit.w_svm.curve_images): packed where the page links it.
CURVE_FILES = ("_w_svm_images.csv",)
# Written with the decisive experiment's parts of vit.decisive.parts (rule docs_vit's DOCS_DECISIVE): packed where the
# page links them.
DECISIVE_FILES = ("_decisive_ray.csv", "_decisive_gd.csv")
