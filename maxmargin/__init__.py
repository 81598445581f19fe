"""maxmargin: the maths and experiments of *Max-Margin Token Selection in Attention Mechanism* (NeurIPS 2023).

- :mod:`maxmargin.core`: the model f(X) = v^T X^T softmax(X W^T p), its exact gradients, gradient descent, the
  SVM problems (ATT-SVM, p_relax, v-SVM), SVM-neighbours and the ball solver; numpy/scipy/cvxopt/sklearn only.
- :mod:`maxmargin.registry`: every figure, table (with its columns), file and synthetic experiment, and the config
  keys each rule reads, declared once (plain data).
- :mod:`maxmargin.files`, :mod:`maxmargin.provenance`, :mod:`maxmargin.tables`: atomic writes, sidecars and the
  checks of every read, the tables' contracts.
- :mod:`maxmargin.experiments`: one module per experiment family, returning tables; :mod:`maxmargin.figures`: the
  panels, drawn from tables only.
- :mod:`maxmargin.logs`, :mod:`maxmargin.config`, :mod:`maxmargin.claims`, :mod:`maxmargin.pipeline` (the
  registry's names resolved): the pipeline; :mod:`maxmargin.report`, :mod:`maxmargin.drawing_code`,
  :mod:`maxmargin.job_code` and :mod:`maxmargin.registry_checks`, read at parse time (the report's entries, each
  panel's and each job's rerun trigger, the registry's mistakes named); scripts and rule files on top.
- :mod:`maxmargin.gpu`: a GPU session (``python -m maxmargin.gpu``, run by tools/gpu_session.sh): its checks, the
  kit, its record, the plan, the stages and their watchers, what it brings back, the process trees it stops.
- :mod:`maxmargin.docs`: the generated pages' writers (``make docs``: ``python -m maxmargin.docs.<writer>``), each
  page written from what it states.

Which module may import which: tests/test_layers.py states and checks it.

The names below are the public API. They are imported on first use, so ``import maxmargin`` stays cheap (no torch
unless a ViT function is asked for).
"""

from __future__ import annotations

from maxmargin.lazy import lazy_exports

# Submodule -> the names it exports here.
_HOMES = {
    "core.model": [
        "token_scores",
        "model_output",
        "risk",
        "grad_p",
        "grad_v",
        "Gradient",
    ],
    "core.softmax": ["attention", "selected_tokens"],
    "core.gd": ["gradient_descent", "joint_normalized_gd", "Trajectory", "cosine"],
    "core.svm": ["att_svm", "p_relax", "v_svm", "svm_neighbors", "SVMResult"],
    "core.directions": [
        "is_locally_optimal",
        "is_globally_optimal",
        "optimal_tokens",
        "gmm_direction",
        "classify_direction",
        "max_margin_directions",
    ],
    "pipeline": ["run_experiment"],
    "experiments.census": ["CensusSettings", "run_trials"],
    "core.regpath": ["regularization_path_p", "regularization_path_joint"],
    "experiments.regpath": ["regpath_table"],
    "experiments.lemma1": ["lemma1_check", "lemma1_table"],
    "experiments.vit": ["VitSettings", "train_vit", "soft_sparsity", "key_query_frobenius"],
    "claims": ["evaluate_claims", "CLAIMS"],
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES)
