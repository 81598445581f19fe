"""Regularization paths (eq. (2), Theorems 1, 5, 6) and Lemma 1, checked against independent computations."""

from __future__ import annotations

import mpmath
import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG, snakemake
from scipy.optimize import minimize

from maxmargin.claims import evaluate_claims
from maxmargin.core.ball import ball_kkt_residual, solve_on_balls
from maxmargin.core.gd import cosine, gradient_descent
from maxmargin.core.logspace import log_excess_risk, log_joint_risk
from maxmargin.core.model import Gradient, grad_p, keys, model_output, risk, token_scores
from maxmargin.core.regpath import radius_grid, regularization_path_joint, regularization_path_p
from maxmargin.core.svm import att_svm, p_relax, v_svm
from maxmargin.experiments import instances
from maxmargin.experiments.lemma1 import grad_W, lemma1_check
from maxmargin.experiments.regpath import regpath_table


def solver(**settings):
    """The path solver's settings: the default config's n_iter and tol, with candidates None unless given."""
    config = DEFAULT_CONFIG["regpath"]
    return {"candidates": None, "n_iter": config["n_iter"], "tol": config["tol"], **settings}


GMM_1B = att_svm(instances.fig1b().K, np.array([0])).direction  # (-0.1, 1, 0) / ||.||
LMM_1B = att_svm(instances.fig1b().K, np.array([1])).direction  # (1, 0, 0)


# --- objectives in log space ---------------------------------------------------------------------------------


def mp_excess(K, gamma, p, loss, dps=60):
    """L(p) - L* in arbitrary precision, straight from (ERM)."""
    ell = {"logistic": lambda u: mpmath.log(1 + mpmath.exp(-u)), "exponential": lambda u: mpmath.exp(-u)}[loss]
    with mpmath.workdps(dps):
        n, T, d = K.shape
        total = mpmath.mpf(0)
        for i in range(n):
            z = [mpmath.fsum(mpmath.mpf(K[i, t, j]) * mpmath.mpf(p[j]) for j in range(d)) for t in range(T)]
            e = [mpmath.exp(zt - max(z)) for zt in z]
            u = mpmath.fsum(et * mpmath.mpf(gamma[i, t]) for t, et in enumerate(e)) / mpmath.fsum(e)
            total += ell(u) - ell(mpmath.mpf(gamma[i].max()))
        return float(mpmath.log(total / n))


@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_log_excess_risk_matches_the_risk_and_mpmath(loss):
    inst = instances.fig1c(0)
    K, gamma = inst.K, inst.gamma
    rng = np.random.default_rng(0)
    p = rng.normal(size=(5, 3))
    floor = np.mean([{"logistic": np.logaddexp(0, -c), "exponential": np.exp(-c)}[loss] for c in gamma.max(-1)])
    np.testing.assert_allclose(log_excess_risk(K, gamma, p, loss), np.log(risk(K, gamma, p, loss) - floor), rtol=1e-9)
    # Deep in saturation the risk itself rounds to L*; the log excess stays exact.
    big = 300.0 * np.array([0.1, 0.9, 0.0])
    assert risk(K, gamma, big, loss) == floor
    assert log_excess_risk(K, gamma, big, loss) == pytest.approx(mp_excess(K, gamma, big, loss, dps=200), rel=1e-12)


def test_log_joint_risk_matches_the_risk_and_survives_underflow():
    inst = instances.fig3("b")
    rng = np.random.default_rng(1)
    v, p = rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    L = np.log(np.logaddexp(0, -inst.Y * model_output(inst.X, inst.K, v, p)).mean(-1))
    np.testing.assert_allclose(log_joint_risk(inst.X, inst.Y, inst.K, v, p), L, rtol=1e-12)
    # r = R = 1000 along (v_mm, p_relax): L ~ e^{-1000} underflows, log L does not. Margins 1000, 1000 and
    # 1500 (the non-support input), up to e^{-500} corrections: L = (2 e^{-1000} + e^{-1500}) / 3.
    value = log_joint_risk(inst.X, inst.Y, inst.K, np.array([0.0, 1000.0]), np.array([1000.0, 0.0]))
    assert value == pytest.approx(-1000.0 + np.log(2 / 3), abs=1e-9)


# --- the KKT residual and the solver on an objective with a known answer ---------------------------------------


def linear_gradient(c):
    return lambda xs: [Gradient(np.broadcast_to(c, xs[0].shape).copy(), np.zeros(xs[0].shape[0]))]


def test_ball_kkt_residual_on_a_linear_objective():
    c = np.array([3.0, -4.0, 0.0])  # L(x) = c^T x on ||x|| <= 2: x* = -2 c / ||c||
    g = Gradient(np.tile(c, (4, 1)), np.zeros(4))
    theta = 1e-3
    rot = np.array([[np.cos(theta), -np.sin(theta), 0], [np.sin(theta), np.cos(theta), 0], [0, 0, 1]])
    xstar = -2 * c / 5
    x = np.array([xstar, rot @ xstar, 0.5 * xstar, -xstar])
    res, active = ball_kkt_residual(x, g, 2.0)
    np.testing.assert_array_equal(active, [True, True, False, True])
    assert res[0] < 1e-15
    assert res[1] == pytest.approx(np.sin(theta), rel=1e-6)  # the gradient's component orthogonal to x
    assert res[2] == pytest.approx(2.0 * 5.0)  # inside: radius * ||g||
    assert res[3] == pytest.approx(1.0)  # on the sphere with a wrong-signed multiplier


def test_solver_reaches_the_minimiser_of_a_linear_objective_from_any_start():
    c = np.array([1.0, 2.0, -2.0])
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(16, 3)) * rng.uniform(0.1, 5, size=(16, 1))
    sol = solve_on_balls(linear_gradient(c), [project(x0, 5.0)], [5.0], n_iter=3000, tol=1e-12)
    np.testing.assert_allclose(sol.x[0], np.tile(-5 * c / 3, (16, 1)), atol=1e-9)
    assert sol.kkt_residual.max() <= 1e-12


def project(x, R):
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.where(n > R, x * R / n, x)


# --- the constrained optimum against brute force -----------------------------------------------------------


def mp_circle_risk(inst, R):
    """L(R (cos t, sin t, 0)) as a function of t in mpmath's working precision (Fig. 1(b): the softmax sees only
    the key plane)."""
    radius = mpmath.mpf(float(R))

    def risk_at(angle):
        p = [radius * mpmath.cos(angle), radius * mpmath.sin(angle), 0]
        total = mpmath.mpf(0)
        for keys_i, scores_i in zip(inst.K, inst.gamma, strict=True):
            z = [mpmath.fsum(mpmath.mpf(k[j]) * p[j] for j in range(3)) for k in keys_i]
            weights = [mpmath.exp(zt - max(z)) for zt in z]
            u = mpmath.fsum(w * mpmath.mpf(g) for w, g in zip(weights, scores_i, strict=True)) / mpmath.fsum(weights)
            total += mpmath.log1p(mpmath.exp(-u))
        return total / len(inst.K)

    return risk_at


def angle_bound(inst, R, angle, tol):
    """How far from a minimum t* of L on the circle of radius R a point R (cos t, sin t, 0) can lie whose ball KKT
    residual ||g_perp|| / ||g|| is at most ``tol`` (the solver's stopping rule): dL/dt = +-R ||g|| residual and
    dL/dt = L''(t*) (t - t*) to first order, so |t - t*| <= R ||g|| tol / L''(t*) (L'' in 50 digits), plus the
    rounding of an angle in float64."""
    g = np.linalg.norm(grad_p(inst.K, inst.gamma, R * np.array([np.cos(angle), np.sin(angle), 0.0])).value)
    with mpmath.workdps(50):
        curvature = float(mpmath.diff(mp_circle_risk(inst, R), angle, 2))
    return R * g * tol / curvature + 4 * np.finfo(float).eps


@pytest.mark.parametrize("R", [1.0, 3.0, 10.0])
def test_path_matches_a_brute_force_search_on_the_circle(R):
    # Fig. 1(b): p(R) = R (cos t, sin t, 0); grid the circle, then the 50-digit root of dL/dt from its best angle.
    # The path's angle is within the KKT tolerance's angle_bound of it (measured: 8e-12, 6e-13, 2e-12; the bounds
    # 1.4e-10, 9.1e-11, 7.9e-11).
    inst = instances.fig1b()
    on_circle = lambda t: R * np.stack([np.cos(t), np.sin(t), np.zeros_like(t)], -1)  # noqa: E731
    grid = np.linspace(-np.pi, np.pi, 200_001)
    t0 = grid[np.argmin(risk(inst.K, inst.gamma, on_circle(grid)))]
    with mpmath.workdps(50):
        exact = float(mpmath.findroot(lambda a: mpmath.diff(mp_circle_risk(inst, R), a), t0))
    settings = solver(n_random=8, seed=1)
    path = regularization_path_p(inst.K, inst.gamma, np.array([R]), "logistic", **settings)
    p = path.p[0]
    bound = angle_bound(inst, R, exact, settings["tol"])

    def check(p: np.ndarray) -> None:
        assert abs(np.arctan2(p[1], p[0]) - exact) <= bound

    assert np.linalg.norm(p) == pytest.approx(R, rel=1e-12) and path.active_p[0]
    assert path.kkt_residual[0] <= settings["tol"]
    check(p)
    with pytest.raises(AssertionError):
        check(on_circle(np.array(exact + 10 * bound)))
    # The optimum is on the sphere: no point inside the ball does better.
    rng = np.random.default_rng(2)
    inside = rng.normal(size=(5000, 3)) * np.array([1, 1, 0])
    inside *= R * rng.uniform(0, 1, size=(5000, 1)) ** 0.5 / np.linalg.norm(inside, axis=-1, keepdims=True)
    assert risk(inst.K, inst.gamma, inside).min() > path.loss[0]


def test_joint_optimum_matches_a_brute_force_search_on_the_torus():
    # Fig. 3(b), r = R = 1.5: grid both circles (the constraints are active), then refine with Nelder-Mead.
    inst = instances.fig3("b")
    R = 1.5

    def L(tv, tp):
        v = R * np.stack([np.cos(tv), np.sin(tv)], -1)
        p = R * np.stack([np.cos(tp), np.sin(tp)], -1)
        return risk(inst.K, token_scores(inst.X, inst.Y, v), p)

    grid = np.linspace(-np.pi, np.pi, 721)
    TV, TP = np.meshgrid(grid, grid, indexing="ij")
    values = L(TV.ravel(), TP.ravel())
    j = int(np.argmin(values))
    fine = minimize(
        lambda t: float(L(np.array(t[0]), np.array(t[1]))),
        [TV.ravel()[j], TP.ravel()[j]],
        method="Nelder-Mead",
        options={"xatol": 1e-11, "fatol": 1e-16, "maxiter": 4000},
    )
    path = regularization_path_joint(
        inst.X, inst.Y, inst.K, np.array([R]), "logistic", **solver(candidates=(), n_random=8, seed=3)
    )
    v, p = path.v[0], path.p[0]
    assert path.active_v[0] and path.active_p[0]
    assert np.arctan2(v[1], v[0]) == pytest.approx(fine.x[0], abs=1e-5)
    assert np.arctan2(p[1], p[0]) == pytest.approx(fine.x[1], abs=1e-5)
    assert path.loss[0] <= fine.fun * (1 + 1e-12)
    assert path.kkt_residual[0] <= 1e-10
    rng = np.random.default_rng(4)
    vin = rng.normal(size=(4000, 2)) * R / 2**0.5 * rng.uniform(0, 1, (4000, 1))
    pin = rng.normal(size=(4000, 2)) * R / 2**0.5 * rng.uniform(0, 1, (4000, 1))
    vin, pin = project(vin, R), project(pin, R)
    assert risk(inst.K, token_scores(inst.X, inst.Y, vin), pin).min() > path.loss[0]


# --- theorem-level behaviour -------------------------------------------------------------------------------

RADII = np.geomspace(0.5, 100.0, 10)


@pytest.mark.solves  # seconds of GD or of solves: `make test` and the second-kernel step, not the unit tier
def test_theorem1_path_goes_to_the_gmm_while_gd_from_the_lmm_cone_goes_to_the_lmm():
    inst = instances.fig1b()
    # Random starts only: the solver is not handed the answer.
    path = regularization_path_p(inst.K, inst.gamma, RADII, "logistic", **solver(n_random=8, seed=0))
    assert np.all(path.kkt_residual <= 1e-10) and np.all(path.active_p)
    cos_gmm = cosine(path.p[-1], GMM_1B)
    assert cos_gmm > 1 - 1e-9  # measured: 1 - 1.1e-11 at R = 100
    assert cosine(path.p[-1], LMM_1B) < 0
    np.testing.assert_array_equal(path.selected[-1], [0])
    traj = gradient_descent(inst.K, inst.gamma, np.array([8.0, 0.3, 0.0]), eta=0.1, n_iter=1000)
    assert cosine(traj.p_final, LMM_1B) > 0.999  # measured: 0.99990 at ||p|| = 108
    assert cosine(traj.p_final, GMM_1B) < 0
    # A constrained local optimum near the LMM exists at R = 100, with a higher risk than the path's.
    with_lmm = regularization_path_p(
        inst.K, inst.gamma, RADII[-1:], "logistic", **solver(n_random=0, seed=0, candidates=LMM_1B[None])
    )
    ends = with_lmm.ends_p[0]
    local = int(np.argmax(cosine(ends, LMM_1B)))
    assert cosine(ends[local], LMM_1B) > 1 - 1e-9 and with_lmm.ends_kkt_residual[0, local] <= 1e-10
    assert with_lmm.ends_log_excess[0, local] > path.log_excess[-1] + 90


@pytest.mark.solves  # seconds of GD or of solves: `make test` and the second-kernel step, not the unit tier
@pytest.mark.parametrize("variant", ["a", "b"])
def test_theorems5_and_6_joint_path_goes_to_v_mm_and_p_relax(variant):
    inst = instances.fig3(variant)
    path = regularization_path_joint(
        inst.X, inst.Y, inst.K, RADII, "logistic", **solver(candidates=(), n_random=6, seed=0)
    )
    assert np.all(path.kkt_residual <= 1e-10) and np.all(path.active_p) and np.all(path.active_v)
    alpha = path.selected[-1]
    np.testing.assert_array_equal(alpha, [1, 1, 1])
    vmm = v_svm(inst.X[np.arange(3), alpha], inst.Y)
    relax = p_relax(inst.K, alpha, vmm.active)
    pmm = att_svm(inst.K, alpha)
    assert cosine(path.v[-1], vmm.direction) > 0.99999
    assert cosine(path.p[-1], relax.direction) > 0.9999  # measured at R = 100: 0.999995 (a), 0.999987 (b)
    if variant == "a":
        np.testing.assert_allclose(relax.direction, pmm.direction, atol=1e-12)  # Theorem 5: p_relax = p_mm
    else:
        assert cosine(path.p[-1], pmm.direction) < 0.99  # Theorem 6: not p_mm (measured 0.9816)


def circle_local_minima(inst, R, half_width=0.6, n=1201):
    """Angles t of the local minima of L(R (cos t, sin t, 0)) around the LMM direction (1, 0, 0).

    Strict minima on a float64 grid of step 1e-3, each refined to a root of dL/dt in 50-digit arithmetic (the
    risk is too flat there for a float64 1-D search: it stops 9e-5 rad off).
    """
    t = np.linspace(-half_width, half_width, n)
    values = risk(inst.K, inst.gamma, R * np.stack([np.cos(t), np.sin(t), np.zeros_like(t)], -1))
    grid_minima = t[1:-1][(values[1:-1] < values[:-2]) & (values[1:-1] < values[2:])]
    with mpmath.workdps(50):
        mp_risk = mp_circle_risk(inst, R)
        return np.array([float(mpmath.findroot(lambda a: mpmath.diff(mp_risk, a), t0)) for t0 in grid_minima])


@pytest.mark.solves  # seconds of GD or of solves: `make test` and the second-kernel step, not the unit tier
def test_fig1b_local_optimum_near_the_lmm_is_reported_in_the_compare_rows():
    # The local minimiser near the LMM (found independently at R ~ 20, cosine 0.9997) is in the
    # `local` rows, which the workflow writes to regpath_compare.csv, not regpath.csv.
    settings = {k: v for k, v in DEFAULT_CONFIG["regpath"].items() if k not in ("instances", "gd")} | {"gd": None}
    radii = radius_grid(**settings.pop("radii"))
    table = regpath_table("fig1b", radii=radii, **settings)
    local = table[(table["method"] == "local") & (table["kind"] == "lmm")]
    assert set(local["run"]) == {"tokens [1]"} and (local["selected"] == "[1]").all()
    first = local.loc[local["R"].idxmin()]
    # Reported from the first grid radius past ~16 on (measured: R = 19.94, cosine with the LMM 0.99965) and at
    # every larger R, always a KKT point with a higher risk than the path's at the same R.
    assert 19.0 < first["R"] < 20.0
    np.testing.assert_array_equal(np.sort(local["R"].to_numpy()), radii[radii >= first["R"]])
    assert (local["kkt_residual"] <= settings["local_tol"]).all()
    path = table[(table["method"] == "path") & (table["kind"] == "lmm")].set_index("R")
    assert (local["log_excess_loss"].to_numpy() > path.loc[local["R"], "log_excess_loss"].to_numpy()).all()
    # Independently, a scan of the circle: no local minimum near the LMM at the grid radius before (R = 15.84),
    # one at R = 19.94 whose 50-digit angle gives the reported cosine within what a KKT residual of local_tol
    # allows: |sin t| angle_bound (measured: 5.4e-12; the bound 5.7e-10).
    before = radii[radii < first["R"]][-1]
    assert circle_local_minima(instances.fig1b(), before).size == 0
    (angle,) = circle_local_minima(instances.fig1b(), first["R"])
    bound = abs(np.sin(angle)) * angle_bound(instances.fig1b(), first["R"], angle, settings["local_tol"])

    def check(cosine: float) -> None:
        assert abs(np.cos(angle) - cosine) <= bound

    check(first["cosine"])
    with pytest.raises(AssertionError):
        check(first["cosine"] + 10 * bound)


# --- Lemma 1 -----------------------------------------------------------------------------------------------


def test_grad_W_closed_form_matches_autograd():
    import torch  # here: collecting this module imports no torch

    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(3, 4, 3)), np.array([1.0, -1.0, 1.0])
    v, W, u = rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=3)
    Wt = torch.tensor(W, requires_grad=True)
    s = torch.softmax(torch.einsum("ntd,ed,e->nt", torch.tensor(X), Wt, torch.tensor(u)), dim=-1)
    f = torch.einsum("nt,ntd,d->n", s, torch.tensor(X), torch.tensor(v))
    torch.nn.functional.softplus(-torch.tensor(Y) * f).mean().backward()
    np.testing.assert_allclose(grad_W(X, Y, v, W, u), Wt.grad.numpy(), rtol=1e-10, atol=1e-14)
    assert np.linalg.matrix_rank(grad_W(X, Y, v, W, u)) == 1  # rank one, left singular vector u
    np.testing.assert_allclose(keys(X, W) @ u, X @ (W.T @ u))  # the query u sees p = W^T u


def test_lemma1_gd_on_W_stays_on_u_p_transpose():
    inst = instances.fig1c(0)
    u = np.array([1.0, -2.0, 0.5])
    chk = lemma1_check(inst.X, inst.Y, inst.v, u, np.array([0.3, -0.2, 0.5]), eta=0.1, n_iter=300, loss="logistic")
    assert chk.max_deviation < 1e-10  # measured ~2e-15
    assert chk.grad_deviation.max() < 1e-12
    np.testing.assert_allclose(chk.risk_W, chk.risk_p, rtol=1e-12)
    assert np.linalg.norm(chk.p[-1] - chk.p[0]) > 0.1  # p actually moved
    # Control: without the 1/||u||^2 step scaling the two runs separate.
    W = np.outer(u, chk.p[0]) / (u @ u)
    for _ in range(50):
        W = W - 0.1 * grad_W(inst.X, inst.Y, inst.v, W, u)
    assert np.linalg.norm(W - np.outer(u, chk.p[50]) / (u @ u)) > 1e-3


# --- the workflow ------------------------------------------------------------------------------------------


SMALL = {
    "regpath": {
        "radii": {"min": 0.5, "max": 20.0, "num": 5},
        "n_random": 2,
        "gd": {"n_iter": 100},
    },
    "lemma1": {"n_iter": 40, "instances": ["fig1b", "fig1c"]},
}


@pytest.mark.slow
def test_regpath_and_lemma1_targets_end_to_end(workflow_dir):
    wd = workflow_dir
    snakemake(wd, "regpath", "lemma1", config=SMALL)
    results = wd / "results"
    for ext in ("pdf", "png"):
        assert (results / "figures" / f"regpath.{ext}").stat().st_size > 10_000
    for rule, name in [
        ("regpath_instance", "fig1b"),
        ("regpath_instance", "fig3b"),
        ("regpath_table", "regpath"),
        ("plot_regpath", "regpath"),
        ("lemma1_table", "lemma1"),
    ]:
        assert (results / "logs" / rule / f"{name}.log").exists()
        assert (results / "benchmarks" / rule / f"{name}.tsv").exists()
    table = pd.read_csv(results / "tables" / "regpath.csv")
    assert {"instance", "R", "kind", "cosine", "kkt_residual", "loss"} <= set(table.columns)
    assert set(table["method"]) == {"path"}
    assert table.groupby(["instance", "kind"]).size().eq(5).all()  # one row per R, instance and direction
    assert table["kkt_residual"].max() <= 1e-9
    top = table[table["R"] == 20.0].set_index(["instance", "kind"])["cosine"]
    assert top["fig1b", "gmm"] > 0.999 and top["fig3b", "p_relax"] > top["fig3b", "p_mm"]
    compare = pd.read_csv(results / "tables" / "regpath_compare.csv")
    assert "gd" in set(compare["method"]) and set(compare["method"]) <= {"gd", "local"}
    lemma1 = pd.read_csv(results / "tables" / "lemma1.csv")
    assert list(lemma1["instance"]) == ["fig1b", "fig1c"] and lemma1["max_deviation"].max() < 1e-10
    assert "Nothing to be done" in snakemake(wd, "regpath", "lemma1", "-n", config=SMALL).stdout


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"regpath": {"loss": "correlation"}}, "'correlation' is not one of ['logistic', 'exponential']"),
        ({"regpath": {"radius": {}}}, "'radius' was unexpected"),
    ],
)
def test_bad_regpath_config_stops_with_the_key_named(workflow_dir, config, expected):
    proc = snakemake(workflow_dir, "-n", "regpath", config=config, check=False)
    assert proc.returncode != 0
    assert expected in proc.stdout + proc.stderr


def test_lemma1_claim_reads_the_max_deviation_column_by_name():
    # Three columns hold "deviation" or "max" in their names: the claim reads max_deviation by its name.
    table = pd.DataFrame(
        {"instance": ["fig1a"], "max_grad_deviation": [0.5], "relative_max_deviation": [0.5], "max_deviation": [2e-15]}
    )
    claim = evaluate_claims({"lemma1": table}, DEFAULT_CONFIG).set_index("claim_id").loc["lemma1"]
    assert claim["verdict"] == "holds" and "2.0e-15" in claim["measured"]
    broken = evaluate_claims({"lemma1": table.assign(max_deviation=[1e-3])}, DEFAULT_CONFIG)
    assert broken.set_index("claim_id").loc["lemma1", "verdict"] == "differs"


def test_the_regpath_caption_names_only_what_the_figure_draws() -> None:
    """The figure has two axes per instance (cosine, 1 - cosine) and prints the path's largest KKT residual under
    each column, on no axis of its own: the caption says so."""
    import matplotlib.pyplot as plt

    from maxmargin import registry
    from maxmargin.figures.regpath import draw_regpath

    rows = [
        {"instance": i, "method": "path", "run": "path", "kind": "gmm", "R": r, "cosine": c, "kkt_residual": 1e-9}
        for i in ("fig1b", "fig3a")
        for r, c in ((1.0, 0.9), (10.0, 0.99))
    ]
    fig = draw_regpath(pd.DataFrame(rows), pd.DataFrame(columns=list(rows[0])))
    assert len(fig.axes) == 4 and all("KKT residual" in ax.get_xlabel() for ax in fig.axes[2:])
    plt.close(fig)
    caption = registry.panel("regpath").caption
    assert "on its own axis" not in caption and "under each column, the path's largest KKT residual" in caption
