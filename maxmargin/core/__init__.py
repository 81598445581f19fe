"""The maths of the paper, the public API: numpy/scipy/cvxopt/scikit-learn only, nothing else of the package.

Every function below has numpydoc Parameters and Returns with the shapes of its arrays (tests/test_core_api.py);
leading batch axes are written "...". Every one checks its arguments on entry against those shapes
(:mod:`.arguments`: a ValueError names the argument and the shape expected) and has Examples, each with its imports,
run as doctests by the unit tier (tests/test_library.py); the reference is docs/api.md (tools/api_docs.py).

Modules: :mod:`.loss` (Assumption A), :mod:`.softmax` (the attention map of eq. (5), exact at any logit gap),
:mod:`.model` (eq. (5), the risk and its exact gradients), :mod:`.gd` (gradient descent), :mod:`.svm` ((ATT-SVM),
eq. (10), (SVM)) and :mod:`.min_norm` (their solver), :mod:`.directions` (GMM / LMM, Definitions 1-2),
:mod:`.span_gd` (the census's batched GD), :mod:`.ball` and :mod:`.logspace` (the constrained solver),
:mod:`.regpath` (regularization paths, eq. (2)), :mod:`.w_svm` (the W-parametrised ATT-SVM of an attention head,
Lemma 1; its nuclear norm: :mod:`.w_svm_nuclear`) and :mod:`.arguments` (the argument check).

The names below are imported from their module on first use: a job that needs one module (the progress lines of
every rule's log, say) does not import scipy, scikit-learn and cvxopt for the others."""

from __future__ import annotations

# Eager (re-exported): light (logging and time only), and its function `progress` must not be shadowed by its
# module's name.
from maxmargin.core.progress import PROGRESS_LOGGER as PROGRESS_LOGGER
from maxmargin.core.progress import TERMINAL_GRACE as TERMINAL_GRACE
from maxmargin.core.progress import TERMINAL_INTERVAL as TERMINAL_INTERVAL
from maxmargin.core.progress import Progress as Progress
from maxmargin.core.progress import duration as duration
from maxmargin.core.progress import progress as progress
from maxmargin.lazy import lazy_exports

# module of maxmargin.core -> the public names it defines
_HOMES = {
    "arguments": ("check_arrays",),
    "ball": (
        "ON_SPHERE_RTOL",
        "BallSolve",
        "ball_kkt_residual",
        "key_difference_basis",
        "project_ball",
        "solve_on_balls",
        "span_basis",
    ),
    "directions": (
        "BLOCK_OF_KIND",
        "MAX_ENUMERATED",
        "MaxMarginDirection",
        "classify_direction",
        "gmm_direction",
        "is_globally_optimal",
        "is_locally_optimal",
        "joint_candidates",
        "max_margin_directions",
        "min_score_gap",
        "optimal_tokens",
    ),
    "gd": (
        "Trajectory",
        "cosine",
        "gradient_descent",
        "joint_normalized_gd",
        "record_iterations",
    ),
    "logspace": (
        "log_excess_risk",
        "log_gradient",
        "log_joint_risk",
    ),
    "loss": (
        "LOSSES",
        "LossName",
        "check_loss",
        "log_neg_loss_derivative",
        "loss_value",
    ),
    "model": (
        "Array",
        "Gradient",
        "attention_features",
        "grad_p",
        "grad_v",
        "keys",
        "model_output",
        "risk",
        "token_scores",
    ),
    "min_norm": (
        "SVMResult",
        "kkt_violation",
        "least_distance",
        "lp_feasible",
        "solve_min_norm",
    ),
    "multistart": (
        "SAME_POINT_COSINE",
        "MultistartSolve",
        "multistart_path",
    ),
    "regpath": (
        "RegularizationPath",
        "radius_grid",
        "regularization_path_joint",
        "regularization_path_p",
    ),
    "softmax": (
        "attention",
        "log_non_selected_mass",
        "log_non_selected_mass_of_logits",
        "log_softmax",
        "selected_tokens",
    ),
    "span_gd": (
        "SpanBatch",
        "SpanTrajectory",
        "final_weights",
        "gd_in_span",
        "key_gradient",
        "normalized_gd_in_span",
        "span_coordinates",
    ),
    "svm": (
        "NEIGHBOR_TOL",
        "SVM_TOL",
        "att_svm",
        "att_svm_ldp",
        "p_relax",
        "svm_neighbors",
        "v_svm",
        "v_svm_qp",
    ),
    "vit_learning": (
        "Direction",
        "Learned",
        "SparsityEffect",
        "learned",
        "sparsity_effect",
        "w_direction",
    ),
    "w_svm": (
        "W_SVM_TOL",
        "WSVMResult",
        "frobenius_cosine",
        "query_inputs",
        "w_att_svm",
        "w_logits",
        "w_margins",
    ),
    "w_svm_dual": (
        "NUMPY",
        "LinearAlgebra",
        "Planes",
    ),
    "w_svm_factor": (
        "REFACTOR",
        "CholeskyFactor",
    ),
    "w_svm_active": (
        "BATCH",
        "DEPENDENT",
        "ROUNDING",
        "STEPS_PER_CONSTRAINT",
        "CarriedDual",
        "DenseKernel",
        "FeatureKernel",
        "dual_active_set",
    ),
    "w_svm_hard": (
        "HULL_TOL",
        "REPAIR_GAP",
        "SOLVE_RTOL",
        "margin_slack",
    ),
    "w_svm_nuclear": ("w_att_svm_nuclear",),
    "w_svm_nulls": (
        "random_rank_matrix",
        "rank_ceiling",
        "span_cosine",
    ),
}
_EAGER = ("PROGRESS_LOGGER", "TERMINAL_GRACE", "TERMINAL_INTERVAL", "Progress", "duration", "progress")
__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, eager=_EAGER)
