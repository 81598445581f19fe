"""Many short Snakemake commands (dry runs, summaries) at the cost of their work, not of Python's start.

A `snakemake` command spends about 0.55 s importing Snakemake and its plugins (pandas among them) before it reads
the Snakefile: half of a summary of the CI run. Here one process imports Snakemake once, then forks a child per
command that runs Snakemake's own command line (``snakemake.cli.main``) in the command's folder: each child starts
from a copy of that process, so no state passes from one command to the next, as between separate `snakemake`
commands. The modules the first command imports late (the config schema's validator, the file-URL helpers, the
workflow's own package) are imported by the parent before it forks the next ones.

Run as a program by :func:`run_many` (never in the pytest process: forking it would copy pytest's and pytest-xdist's
threads and captures): a JSON request on stdin, the JSON results on stdout.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, NoReturn


def run_many(
    calls: list[tuple[Path, list[str]] | tuple[Path, list[str], dict[str, str]]],
    parallel: int = 2,
    timeout: float = 1200,
) -> list[subprocess.CompletedProcess[str]]:
    """Run ``snakemake ARGS`` in ``cwd`` for each ``(cwd, args)`` or ``(cwd, args, env)`` of ``calls`` (``env``: the
    variables set for that command beside this process's), ``parallel`` at a time, as :func:`subprocess.run` would
    (``args`` without the program's name; output captured as text). The output is the program's, but for the order
    of the lines that Snakemake prints from a set (tests/test_config_reads.py compares them)."""
    request = {
        "parallel": parallel,
        "calls": [{"cwd": str(c[0]), "args": list(c[1]), "env": dict(c[2]) if len(c) > 2 else {}} for c in calls],
    }
    # -P: the tests folder stays off sys.path (a workflow imports what it would under the `snakemake` program)
    proc = subprocess.run(
        [sys.executable, "-P", __file__],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(__file__).name} failed ({proc.returncode}):\n{proc.stderr[-6000:]}")
    return [
        subprocess.CompletedProcess(["snakemake", *call["args"]], r["returncode"], r["stdout"], r["stderr"])
        for call, r in zip(request["calls"], json.loads(proc.stdout), strict=True)
    ]


def _child(cwd: str, args: list[str], env: dict[str, str], out: Path, report_modules: bool) -> NoReturn:
    """Run Snakemake's command line with stdout and stderr in ``out``.stdout/.stderr, and exit with its status
    (``report_modules``: also list in ``out``.modules the modules it imported)."""
    status = 1
    try:
        before = set(sys.modules)
        for fd, suffix in ((1, ".stdout"), (2, ".stderr")):
            target = os.open(out.with_suffix(suffix), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(target, fd)
            os.close(target)
        os.chdir(cwd)
        os.environ.update(env)
        sys.argv = ["snakemake", *args]
        from snakemake.cli import main

        try:
            main(args)
            status = 0
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
        if report_modules:
            out.with_suffix(".modules").write_text("\n".join(_imported(before, cwd)))
    except BaseException:  # into the call's stderr: the child ends here, whatever happens
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _imported(before: set[str], cwd: str) -> list[str]:
    """The modules imported since ``before``, but those of the workflow's folder (Snakemake puts it on sys.path: a
    child finds them there, not in the parent's copy)."""
    here = Path(cwd).resolve()
    found = []
    for name in sorted(set(sys.modules) - before):
        file = getattr(sys.modules[name], "__file__", None)
        if not (file and Path(file).resolve().is_relative_to(here)):
            found.append(name)
    return found


def _fork(call: dict[str, Any], out: Path, report_modules: bool = False) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(call["cwd"], call["args"], call.get("env", {}), out, report_modules)
    return pid


def _import_all(names: list[str]) -> None:
    """Import what a first command imported (a module that fails here is left to the children)."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # the child imports it again, and reports its own failure
            continue


def _reap(running: dict[int, int], status: dict[int, int], pid: int = -1) -> None:
    """Wait for the child ``pid`` (any child: -1) and record its exit status under its call's index."""
    pid, wait_status = os.waitpid(pid, 0)
    status[running.pop(pid)] = os.waitstatus_to_exitcode(wait_status)


def serve(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Each call of ``request`` in a forked child, ``request["parallel"]`` at a time; the first alone, and the
    modules it imported then imported here."""
    from snakemake.cli import get_argument_parser

    get_argument_parser()  # imports every installed plugin (executors, storage, loggers), as each command would
    calls = request["calls"]
    running: dict[int, int] = {}  # pid: index of its call
    status: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"{i}.out" for i in range(len(calls))]
        for i, call in enumerate(calls):
            if i == 1:
                _reap(running, status, next(iter(running)))
                os.chdir(calls[0]["cwd"])  # where a module that looks around at import finds what a child does
                modules = outs[0].with_suffix(".modules")
                _import_all(modules.read_text().split() if modules.exists() else [])
            while len(running) >= max(1, request["parallel"]):
                _reap(running, status)
            running[_fork(call, outs[i], report_modules=i == 0)] = i
        while running:
            _reap(running, status)
        return [
            {
                "returncode": status[i],
                "stdout": out.with_suffix(".stdout").read_text(),
                "stderr": out.with_suffix(".stderr").read_text(),
            }
            for i, out in enumerate(outs)
        ]


if __name__ == "__main__":
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what an import prints here goes to stderr, not into the results
    json.dump(serve(json.load(sys.stdin)), results)
    results.close()
