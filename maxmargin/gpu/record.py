"""A GPU session's record and the commands it runs (docs/gpu.md, "What comes back").

:class:`Session`: its wall clock, session.log (also echoed on the terminal), the files it brings back into OUT_DIR
with what each is (session.json's ``files``), how each stage ran (``summary``: session.json), and its stages'
commands, each stopped whole at the wall limit or on a signal (:mod:`maxmargin.gpu.processes`). Standard library
only at import: the session holds its record before the kit's packages are installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from maxmargin.files import atomic_path, file_sha256
from maxmargin.gpu import processes
from maxmargin.gpu.request import MAX_FILE_BYTES, MAX_FILES, SAFETY_SECONDS, Request

WATCH_SECONDS = 2.0  # how often a stage's watch reads its job's log


def _echo_line(line: str) -> None:
    """``line`` on the terminal, where there is one: a closed terminal (SIGHUP) or a killed parent leaves a broken
    pipe, which must not stop the session's last steps (its salvage, session.json): session.log has the line."""
    try:
        sys.stdout.write(line)
        sys.stdout.flush()
    except OSError:
        pass


class Session:
    """A session's wall clock, its log (also echoed), the files it brought back and how it ran (``summary``:
    session.json), and its stages' processes. ``repo``: the repository the stages run in (its workflow, its
    results root)."""

    def __init__(self, request: Request, start: float, log_file: IO[str], repo: Path) -> None:
        self.request, self.out, self.start, self.repo = request, request.out, start, repo
        self.deadline = start + 60.0 * request.minutes - SAFETY_SECONDS
        self.locks = repo / ".snakemake/locks"
        self.log_file = log_file
        self.last: dict[str, Any] = {}
        self.summary: dict[str, Any] = {"minutes": request.minutes, "stages": {}, "files": {}}

    def left(self) -> float:
        return self.deadline - time.time()

    def log(self, text: str) -> None:
        line = f"[gpu-session {time.time() - self.start:6.1f}s] {text}"
        self.log_file.write(line + "\n")  # session.log first: it comes back, the terminal may be gone
        _echo_line(line + "\n")

    def keep(self, source: Path, name: str, record: dict[str, Any]) -> bool:
        """Copy ``source`` into OUT_DIR as ``name``; session.json's ``files`` records what it is. Whether it was
        kept: not where OUT_DIR would hold more than :data:`MAX_FILES` files or the file is over
        :data:`MAX_FILE_BYTES`."""
        if len(self.summary["files"]) + 2 >= MAX_FILES and name not in self.summary["files"]:
            self.log(f"not kept: {name} (OUT_DIR would hold more than {MAX_FILES} files)")
            return False
        if source.stat().st_size > MAX_FILE_BYTES:
            self.log(f"not kept: {name} ({source.stat().st_size / 2**20:.1f} MiB, over {MAX_FILE_BYTES >> 20} MiB)")
            return False
        with atomic_path(self.out / name) as tmp:  # whole or absent, whatever stops the session
            shutil.copyfile(source, tmp)
        self.summary["files"][name] = {**record, "sha256": file_sha256(self.out / name)}
        return True

    def pack(self, sources: list[Path], name: str, record: dict[str, Any]) -> bool:
        """``sources`` as one gzipped tar ``name`` in OUT_DIR, flat (each by its file name), kept as :meth:`keep`
        keeps a file; its record lists each member with its sha256 (tools/gpu_report.py unpacks it, checked)."""
        with tempfile.NamedTemporaryFile(prefix="gpu_session_pack.", suffix=".tar.gz") as tmp:
            with tarfile.open(tmp.name, "w:gz") as tar:
                for path in sources:
                    tar.add(path, arcname=path.name, recursive=False)
            members = {path.name: file_sha256(path) for path in sources}
            return self.keep(Path(tmp.name), name, {**record, "members": members})

    def save(self) -> None:
        with atomic_path(self.out / "session.json") as tmp:
            tmp.write_text(json.dumps(self.summary, indent=2, default=str) + "\n")

    def popen(self, cmd: list[str], **kwargs: Any) -> subprocess.Popen:
        """A process of this session, in a session of its own (a signal to ours reaches it only through us)."""
        return subprocess.Popen(cmd, cwd=self.repo, start_new_session=True, **kwargs)

    def run(self, cmd: list[str], limit: float, watch: Callable[[], None] | None = None) -> dict[str, Any]:
        """Run ``cmd`` for at most ``limit`` seconds, echoed into the log; its exit, whether it was cut, and whether
        it said it had nothing to do. Cut or interrupted, it is stopped with everything it started. ``watch`` is
        called every :data:`WATCH_SECONDS` while it runs (it reads the job's log; what it raises is logged)."""
        self.log(f"$ {' '.join(cmd)}   (at most {limit:.0f} s)")
        self.last = result = {"cut": False, "exit": None, "nothing_to_be_done": False}
        locks = set(self.locks.glob("*")) if self.locks.is_dir() else set()
        proc = self.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        said: list[str] = []
        echo = threading.Thread(target=self._echo, args=(proc, said), daemon=True)
        echo.start()
        try:
            result["exit"] = self._wait(proc, time.time() + max(limit, 1.0), watch)
        except subprocess.TimeoutExpired:
            self.log(f"stopping it at the wall limit ({limit:.0f} s)")
            result.update(cut=True, exit=self.stop(proc, locks))
        except processes.Interrupted as stop:
            processes.ignore_signals()
            result.update(cut=True, interrupted=str(stop), exit=self.stop(proc, locks))
            raise
        finally:
            echo.join(timeout=5)
            result["nothing_to_be_done"] = any("Nothing to be done" in line for line in said)
        return result

    def _wait(self, proc: subprocess.Popen, end: float, watch: Callable[[], None] | None) -> int:
        """``proc``'s exit status, calling ``watch`` while it runs; TimeoutExpired at ``end``."""
        while True:
            try:
                return proc.wait(timeout=max(min(WATCH_SECONDS, end - time.time()), 0.01))
            except subprocess.TimeoutExpired:
                if time.time() >= end:
                    raise
            if watch is not None:
                try:
                    watch()
                except processes.Interrupted:
                    raise
                except Exception as err:  # noqa: BLE001 - a watch that fails must not stop the stage it watches
                    self.log(f"the stage's watch failed ({type(err).__name__}: {err}); the stage goes on")
                    watch = None

    def _echo(self, proc: subprocess.Popen, said: list[str]) -> None:
        for line in proc.stdout:
            self.log_file.write(line)
            _echo_line(line)
            said.append(line)

    def stop(self, proc: subprocess.Popen, locks: set[Path]) -> int:
        """Stop ``proc`` and its tree; a Snakemake killed before it could release its lock leaves it: removed."""
        ended = processes.stop_tree(proc.pid, grace=10.0)
        code = proc.wait()
        if not ended and self.locks.is_dir():
            for lock in set(self.locks.glob("*")) - locks:
                lock.unlink(missing_ok=True)
                self.log(f"removed {lock.relative_to(self.repo)}, left by the stopped Snakemake")
        return code
