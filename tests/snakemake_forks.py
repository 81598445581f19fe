"""Many short Snakemake commands (dry runs, summaries) at the cost of their work, not of Python's start.

A `snakemake` command spends about 0.55 s importing Snakemake and its plugins (pandas among them) before it reads
the Snakefile: half of a summary of the CI run. Here one process imports Snakemake once, then forks a child per
command that runs Snakemake's own command line (``snakemake.cli.main``) in the command's folder: each child starts
from a copy of that process, so no state passes from one command to the next, as between separate `snakemake`
commands. The modules the first command imports late (the config schema's validator, the file-URL helpers, the
workflow's own package) are imported by the parent before it forks the next ones.

Run as a program (never in the pytest process: forking it would copy pytest's and pytest-xdist's threads and captures):
by :func:`run_many`, a JSON request on stdin and the JSON results on stdout; by :func:`run` (`conftest.snakemake`,
every Snakemake command of a test), as a server that each pytest process starts once and keeps: a JSON line per
command on stdin, a JSON line per result back. A child has its own process group, killed whole at its timeout (its
jobs with it), and runs in the environment of the test at its call (``PYTHONPATH`` reaches the jobs it starts).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
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


class _Server:
    """This process's Snakemake server (``python -P snakemake_forks.py --serve``), started on first use."""

    process: subprocess.Popen[str] | None = None

    @classmethod
    def ask(cls, call: dict[str, Any]) -> dict[str, Any]:
        if cls.process is None or cls.process.poll() is not None:
            cls.process = subprocess.Popen(
                [sys.executable, "-P", __file__, "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=Path(__file__).parent,
            )
            atexit.register(cls.process.kill)
        cls.process.stdin.write(json.dumps(call) + "\n")
        cls.process.stdin.flush()
        line = cls.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{Path(__file__).name} --serve ended ({cls.process.wait()})")
        return json.loads(line)


def run(cwd: Path, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``snakemake ARGS`` in ``cwd``, in this process's environment, as :func:`subprocess.run` with its output
    captured as text would run it; :class:`subprocess.TimeoutExpired` after ``timeout`` seconds (the command and its
    jobs killed)."""
    call = {"cwd": str(cwd), "args": list(args), "env": dict(os.environ), "whole_env": True, "timeout": timeout}
    result = _Server.ask(call)
    command = ["snakemake", *args]
    if result["returncode"] is None:
        raise subprocess.TimeoutExpired(command, timeout, result["stdout"], result["stderr"])
    return subprocess.CompletedProcess(command, result["returncode"], result["stdout"], result["stderr"])


def _child(
    cwd: str, args: list[str], env: dict[str, str], out: Path, report_modules: bool, whole_env: bool = False
) -> NoReturn:
    """Run Snakemake's command line with stdout and stderr in ``out``.stdout/.stderr, and exit with its status
    (``report_modules``: also list in ``out``.modules the modules it imported; ``whole_env``: ``env`` is the whole
    environment, not additions to this process's)."""
    status = 1
    try:
        before = set(sys.modules)
        os.setpgid(0, 0)  # a timeout kills the command and its jobs together
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # not the server's requests
        os.close(null)
        for fd, suffix in ((1, ".stdout"), (2, ".stderr")):
            target = os.open(out.with_suffix(suffix), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(target, fd)
            os.close(target)
        os.chdir(cwd)
        if whole_env:
            os.environ.clear()
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
        _child(call["cwd"], call["args"], call.get("env", {}), out, report_modules, call.get("whole_env", False))
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


def _wait(pid: int, timeout: float) -> int | None:
    """The exit status of the child ``pid``, or None when it outlived ``timeout`` seconds (then killed with its
    process group)."""
    deadline = time.monotonic() + timeout
    while True:
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(wait_status)
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)


def serve_forever(requests: Any, results: Any) -> None:
    """Each JSON line of ``requests`` (a call of :func:`run`) in a forked child, one at a time; its JSON result as a
    line of ``results``. Only Snakemake and its plugins are imported here, never the workflow's package: a command
    finds the package its folder holds, as a `snakemake` program would."""
    from snakemake.cli import get_argument_parser

    get_argument_parser()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # not a test's folder, which goes with its test
        for n, line in enumerate(requests):
            call, out = json.loads(line), Path(tmp) / f"{n}.out"
            code = _wait(_fork(call, out), call["timeout"])
            result: dict[str, Any] = {"returncode": code}
            for key in ("stdout", "stderr"):
                result[key] = out.with_suffix(f".{key}").read_text()
                out.with_suffix(f".{key}").unlink()
            results.write(json.dumps(result) + "\n")
            results.flush()


if __name__ == "__main__":
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what an import prints here goes to stderr, not into the results
    if sys.argv[1:] == ["--serve"]:
        serve_forever(sys.stdin, results)
    else:
        json.dump(serve(json.load(sys.stdin)), results)
    results.close()
