"""Benchmark of the convergence census (Appendix E, Figures 9-10): the library against the straightforward way.

Prints, from one run:
  * the wall time of the full paper-scale census (every d, 1000 trials each, GD and classification), the d's
    spread over ``--workers`` processes (the machine's cores), and the peak resident memory of every process;
  * the time of each d (sampling + GD + classification) inside its worker: it barely grows with d;
  * the time per trial of the straightforward implementation, in the style of the authors' notebooks
    (a torch module per trial, torch.optim.SGD fed the normalized autograd gradient, then the cvxopt primal QP
    of (ATT-SVM) with a d x d identity), on the first ``--naive-trials`` trials of every d, its agreement with
    the library on those trials, and the ratio of the two.

Not a test: run it by hand, e.g. ``.venv/bin/python benchmarks/census_benchmark.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from maxmargin.experiments.census import CensusSettings, run_trials, sample_trial

CONFIG = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/config/default.yaml").read_text())["census"]
PAPER_DIMS = tuple(CONFIG["dims"])


def default_settings(**changes: object) -> CensusSettings:
    """The census settings of the default config (the paper's), with ``changes``."""
    return CensusSettings.from_config(CONFIG, **changes)


def _census_one_d(args: tuple[CensusSettings, int]) -> tuple[int, dict[str, float], pd.DataFrame]:
    settings, d = args
    start, cpu = time.perf_counter(), time.process_time()
    rows = run_trials(settings, d)
    return d, {"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}, rows


def full_census(
    settings: CensusSettings, dims: tuple[int, ...], workers: int
) -> tuple[float, dict[int, dict[str, float]], pd.DataFrame]:
    """The whole census: wall time, per-d timings inside the workers (wall, CPU and its parts), and the rows."""
    start = time.perf_counter()
    order = sorted(dims, reverse=True)  # largest d first: better packing over the workers
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(_census_one_d, [(settings, d) for d in order]))
    else:
        results = [_census_one_d((settings, d)) for d in order]
    wall = time.perf_counter() - start
    rows = pd.concat([r for _, _, r in results], ignore_index=True).sort_values(["d", "trial"], ignore_index=True)
    return wall, {d: t for d, t, _ in results}, rows


def naive_trial(settings: CensusSettings, d: int, trial: int) -> dict[str, object]:
    """One trial the straightforward way: torch module + SGD on the normalized autograd gradient + cvxopt QP."""
    import torch
    from cvxopt import matrix, solvers

    X_np, Y_np, v_np, _ = sample_trial(settings.seed, d, trial, settings.n, settings.T)
    X, Y, v = torch.from_numpy(X_np), torch.from_numpy(Y_np), torch.from_numpy(v_np)

    class Attention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p = torch.nn.Parameter(torch.zeros(d, dtype=torch.float64))

        def forward(self, X: torch.Tensor) -> torch.Tensor:
            s = torch.softmax(X @ self.p, dim=-1)  # W = I: keys are the tokens
            return (s.unsqueeze(-1) * X).sum(dim=1) @ v

    model = Attention()
    opt = torch.optim.SGD(model.parameters(), lr=settings.eta)
    for _ in range(settings.n_iter):
        opt.zero_grad()
        loss = torch.nn.functional.softplus(-Y * model(X)).mean()  # logistic loss
        loss.backward()
        norm = model.p.grad.norm()
        if norm > 0:
            model.p.grad /= norm
        opt.step()
    p = model.p.detach().numpy()
    s = torch.softmax(X @ model.p, dim=-1).detach().numpy()
    alpha = s.argmax(axis=-1)
    saturated = bool(s.max(axis=-1).mean() >= 1 - settings.saturation_tol)
    out: dict[str, object] = {"d": d, "trial": trial, "saturated": saturated, "class": "not_saturated", "corr": np.nan}
    if saturated:
        gamma = Y_np[:, None] * (X_np @ v_np)
        rows = [(i, t) for i in range(settings.n) for t in range(settings.T) if t != alpha[i]]
        D = np.array([X_np[i, alpha[i]] - X_np[i, t] for i, t in rows])
        sol = solvers.qp(
            matrix(np.eye(d)),
            matrix(np.zeros(d)),
            matrix(-D),
            matrix(-np.ones(len(rows))),
            options={"show_progress": False},
        )
        pmm = np.array(sol["x"]).ravel()
        neighbours = np.abs(D @ pmm - 1.0) < 1e-6
        gaps = np.array([gamma[i, alpha[i]] - gamma[i, t] for i, t in rows])[neighbours]
        local = bool(np.all(gaps > 0))
        optimal = bool(np.all(gamma[np.arange(settings.n), alpha] >= gamma.max(axis=-1)))
        out["class"] = ("gmm" if optimal else "lmm") if local else "neither"
        out["corr"] = float(p @ pmm / (np.linalg.norm(p) * np.linalg.norm(pmm)))
    return out


def peak_rss_mb() -> float:
    """Peak resident memory (MB) of this process and of its finished children (the census workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes for the census")
    parser.add_argument("--n-trials", type=int, default=CONFIG["n_trials"])
    parser.add_argument("--n-iter", type=int, default=CONFIG["n_iter"])
    parser.add_argument("--naive-trials", type=int, default=5, help="trials per d for the straightforward way")
    parser.add_argument("--repeat", type=int, default=3, help="census runs (the best wall time is reported)")
    return parser.parse_args()


def report_census(settings: CensusSettings, args: argparse.Namespace) -> tuple[float, pd.DataFrame]:
    """Run the full census ``args.repeat`` times, print the best wall time, memory and per-d times."""
    dims, total = PAPER_DIMS, len(PAPER_DIMS) * settings.n_trials
    runs = [full_census(settings, dims, args.workers) for _ in range(args.repeat)]
    walls = [w for w, _, _ in runs]
    wall, per_d, rows = min(runs, key=lambda r: r[0])
    assert all(r.equals(rows) for _, _, r in runs), "census rows differ between repeats"
    print(
        f"full census: {len(dims)} dims x {settings.n_trials} trials x {settings.n_iter} iterations "
        f"(n={settings.n}, T={settings.T}) with {args.workers} worker(s), best of {args.repeat}"
    )
    print(
        f"  wall time            {wall:8.2f} s   ({1e3 * wall / total:.3f} ms per trial; all runs: "
        f"{', '.join(f'{w:.2f}' for w in walls)} s)"
    )
    print(f"  peak memory          {peak_rss_mb():8.0f} MB  (max RSS over the main process and the workers)")
    cpu = sum(t["cpu_s"] for t in per_d.values())
    print(f"  CPU time             {cpu:8.2f} s   (sum over the workers; wall on idle cores ~ CPU / workers)")
    print(f"  load average (1 min) {os.getloadavg()[0]:8.2f}     (other processes on the machine slow the wall time)")
    print("  per d, inside its worker (sampling is O(d); GD and classification do not depend on d):")
    for d in dims:
        print(f"    d = {d:4d}  wall {per_d[d]['wall_s']:5.2f} s  CPU {per_d[d]['cpu_s']:5.2f} s")
    return wall, rows


def report_straightforward(settings: CensusSettings, args: argparse.Namespace, wall: float, rows: pd.DataFrame) -> None:
    """Time the notebook-style implementation on a few trials per d and compare it with the library's census."""
    import torch

    torch.set_num_threads(1)
    total = len(PAPER_DIMS) * settings.n_trials
    start = time.perf_counter()
    naive = [naive_trial(settings, d, trial) for d in PAPER_DIMS for trial in range(args.naive_trials)]
    per_trial = (time.perf_counter() - start) / len(naive)
    table, fast = pd.DataFrame(naive).set_index(["d", "trial"]), rows.set_index(["d", "trial"])
    same = (table["class"] == fast.loc[table.index, "class"]).sum()
    both = table["saturated"] & fast.loc[table.index, "saturated"]
    print(
        f"straightforward (torch module + SGD + cvxopt QP, one process), {len(naive)} trials "
        f"({args.naive_trials} per d):"
    )
    print(f"  per trial            {per_trial:8.3f} s")
    lib_corr = fast.loc[table.index[both], "corr"].mean()
    print(
        f"  same class as the library on {same}/{len(naive)} trials; mean corr over saturated trials "
        f"{table.loc[both, 'corr'].mean():.5f} (library on the same trials: {lib_corr:.5f})"
    )
    projected = per_trial * total / args.workers
    print(f"  projected full census on {args.workers} core(s): {projected:8.0f} s ({projected / 60:.1f} min)")
    print(
        f"ratio (straightforward / library): {projected / wall:8.0f}x  "
        f"(per trial: {per_trial:.3f} s vs {wall / total * args.workers * 1e3:.3f} ms of one core)"
    )


def main() -> None:
    args = parse_args()
    settings = default_settings(n_trials=args.n_trials, n_iter=args.n_iter)
    wall, rows = report_census(settings, args)
    report_straightforward(settings, args, wall, rows)
    print(f"peak memory at exit    {peak_rss_mb():8.0f} MB")


if __name__ == "__main__":
    main()
