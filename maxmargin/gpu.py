"""What a GPU session (tools/gpu_session.py, docs/gpu.md) checks before it starts, and its record while it runs.

Before any work: the wall minutes, the environment's settings (``GPU_SESSION_*``), the config files, the kit and
OUT_DIR, each refused with a message that names the fix (:class:`UsageError`), and the config the stages will read.
While it runs, :class:`Session`: its wall clock, its log, the files it brings back with what each is, and its stages,
each stopped whole at the wall limit or on a signal (:mod:`maxmargin.processes`). Standard library only at import:
the checks run before the kit's packages are installed. Whether a file is of the planned run: :mod:`maxmargin.gpu_plan`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from maxmargin import processes
from maxmargin.files import atomic_path

MAX_FILES = 8  # what comes back from the node: 8 files of one folder
MAX_FILE_BYTES = 16 * 2**20  # each of at most 16 MiB
SAFETY_SECONDS = 15.0  # kept back from the wall limit: the last copies and session.json
DEFAULT_RESERVE = 30.0  # kept for the page: its stage took 10-11 s in sessions 1-2 (docs/gpu/), a slower node more
WATCH_SECONDS = 2.0  # how often a stage's watch reads its job's log
SETTINGS = ("GPU_SESSION_CONFIG", "GPU_SESSION_EPOCHS", "GPU_SESSION_PILOT", "GPU_SESSION_RESERVE")
# The session's exit statuses (an interrupt: 128 + the signal's number, as a shell reports it).
EXIT_DONE, EXIT_FAILED, EXIT_USAGE, EXIT_CUT = 0, 1, 2, 3


class UsageError(Exception):
    """An argument, setting, config or folder the session refuses before any work; the message names the fix."""


@dataclass
class Request:
    """What the session was asked to do, checked."""

    out: Path
    minutes: float
    epochs: int | None  # GPU_SESSION_EPOCHS: a fixed epoch count (None: the config's, or the pilot's plan)
    pilot: bool | None  # GPU_SESSION_PILOT: 1 a pilot, 0 none, None (unset) a pilot where the config's run does not fit
    reserve: float  # GPU_SESSION_RESERVE: seconds kept for the page
    configs: list[Path]  # GPU_SESSION_CONFIG's files, after paper.yaml and gpu_session.yaml
    kit: Path
    settings: dict[str, str] = field(default_factory=dict)  # the GPU_SESSION_* variables as given


def parse_minutes(text: str) -> float:
    """The wall limit in minutes: a finite number above the time kept back for the last copies."""
    least = SAFETY_SECONDS / 60
    try:
        minutes = float(text)
    except ValueError:
        minutes = math.nan
    if not math.isfinite(minutes) or minutes <= least:
        raise UsageError(
            f"MINUTES is {text!r}: give the allocation's length in minutes, a number above {least:g} "
            "(e.g. `bash tools/gpu_session.sh OUT_DIR 9`)"
        )
    return minutes


def parse_epochs(text: str | None) -> int | None:
    """GPU_SESSION_EPOCHS: unset or empty (the pilot plans the run), else a whole number of at least 1."""
    if text is None or text.strip() == "":
        return None
    try:
        epochs = int(text)
    except ValueError:
        epochs = 0
    if epochs < 1:
        raise UsageError(
            f"GPU_SESSION_EPOCHS={text}: give a whole number of epochs of at least 1, or leave GPU_SESSION_EPOCHS "
            "unset to let the pilot plan the run (0 does not mean unset)"
        )
    return epochs


def parse_pilot(text: str | None) -> bool | None:
    """GPU_SESSION_PILOT: 1 (a pilot), 0 (none: the run's epochs are GPU_SESSION_EPOCHS, else the config's), unset
    (None: a pilot where GPU_SESSION_EPOCHS is given or the config's run does not fit the wall limit by the measured
    figures, :func:`maxmargin.gpu_plan.project_run`)."""
    if text is None or text.strip() == "":
        return None
    if text.strip() not in ("0", "1"):
        raise UsageError(
            f"GPU_SESSION_PILOT={text}: give 0 (no pilot), 1 (a pilot), or leave it unset (a pilot where the config's "
            "run does not fit the wall limit)"
        )
    return text.strip() == "1"


def parse_reserve(text: str | None) -> float:
    """GPU_SESSION_RESERVE: the seconds kept for the page, a finite number of at least 0."""
    if text is None or text.strip() == "":
        return DEFAULT_RESERVE
    try:
        reserve = float(text)
    except ValueError:
        reserve = math.nan
    if not math.isfinite(reserve) or reserve < 0:
        raise UsageError(f"GPU_SESSION_RESERVE={text}: give the seconds kept for the page, a number of at least 0")
    return reserve


def config_files(text: str | None, repo: Path) -> list[Path]:
    """GPU_SESSION_CONFIG's files (colon-separated, relative to the repository), each of which must exist."""
    files = [Path(p) for p in (text or "").split(":") if p]
    paths = [p if p.is_absolute() else repo / p for p in files]
    for given, path in zip(files, paths, strict=True):
        if not path.is_file():
            raise UsageError(f"GPU_SESSION_CONFIG names {given}, which is no file here: give existing config files")
    return [p.resolve() for p in paths]


def session_request(out: str, minutes: str, environ: Mapping[str, str], repo: Path) -> Request:
    """Every argument and setting of a session, checked (:class:`UsageError` on the first wrong one)."""
    epochs = parse_epochs(environ.get("GPU_SESSION_EPOCHS"))
    return Request(
        out=Path(out).resolve(),
        minutes=parse_minutes(minutes),
        epochs=epochs,
        pilot=parse_pilot(environ.get("GPU_SESSION_PILOT")),
        reserve=parse_reserve(environ.get("GPU_SESSION_RESERVE")),
        configs=config_files(environ.get("GPU_SESSION_CONFIG"), repo),
        kit=Path(environ.get("GPU_KIT") or repo / "gpu_kit").resolve(),
        settings={name: environ[name] for name in SETTINGS if environ.get(name)},
    )


def kit_wheels(kit: Path, have_snakemake: bool | None = None) -> list[Path]:
    """The kit's wheels to install; none where the kit is absent but this interpreter has Snakemake (a rehearsal).
    Neither: refused, naming the kit and how to build it."""
    wheels = sorted(kit.glob("wheels/*.whl"))
    if wheels:
        return wheels
    if have_snakemake is None:
        have_snakemake = importlib.util.find_spec("snakemake") is not None
    if not have_snakemake:
        raise UsageError(
            f"no kit at {kit} (no wheels in {kit / 'wheels'}) and this Python has no Snakemake: build the kit where "
            "pip reaches an index (`make gpu-kit`), copy gpu_kit/ beside tools/ with the repository, or name its "
            "folder with GPU_KIT=..."
        )
    return []


def check_data(config: Mapping[str, Any], repo: Path) -> None:
    """A session on Fashion-MNIST with downloads off needs its four .gz files where the config says."""
    data = config["vit"]["data"]
    if data["dataset"] != "fashion_mnist" or data.get("download"):
        return
    folder = Path(data["fashion_mnist_files"])
    folder = folder if folder.is_absolute() else repo / folder
    if not list(folder.glob("*-ubyte.gz")):
        raise UsageError(
            f"no Fashion-MNIST files in {folder}: the kit carries them (`make gpu-kit` writes gpu_kit/fashion-mnist); "
            "copy the kit with the repository or name its folder with GPU_KIT=..."
        )


def claim_out_dir(out: Path) -> IO[str]:
    """Create OUT_DIR's session.log for this session alone (O_EXCL: of two sessions started into one folder, one
    gets it): OUT_DIR must be new or empty, so that what comes back is this session's files only."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"OUT_DIR {out} is a file: give a new or empty folder")
    log = out / "session.log"
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise UsageError(_not_empty(out, "another session writes into it or wrote into it")) from None
    except OSError as err:  # not writable, a path through a file, a full or read-only disk
        raise UsageError(
            f"OUT_DIR {out} cannot be written ({err.strerror or err}): give a folder this user can create and write "
            "into (the node's output folder, e.g. $OUT)"
        ) from None
    handle = os.fdopen(fd, "w", buffering=1)
    others = sorted(p.name for p in out.iterdir() if p.name != "session.log")
    if others:
        handle.close()
        log.unlink()
        raise UsageError(_not_empty(out, f"it holds {others[:MAX_FILES]}"))
    return handle


def _not_empty(out: Path, why: str) -> str:
    return (
        f"OUT_DIR {out} is not empty ({why}): a session brings back only the files it made; give a new or empty "
        f"folder (e.g. {out}/$(date +%Y%m%dT%H%M%S)), or empty it first (rm -r {out})"
    )


def merged_config(paths: list[Path], default: Path) -> dict[str, Any]:
    """``default`` with ``paths`` merged over it in order, as one --configfile with several files does
    (:func:`maxmargin.config.merged_config`, imported here once the kit is on the path)."""
    from maxmargin.config import merged_config as merged

    return merged(paths, default)


def check_config(config: dict[str, Any], paths: list[Path], schema: Path) -> None:
    """The Snakefile's checks (the schema, then what it cannot say), before any stage: a refused config stops the
    session naming the key, instead of each stage failing on it."""
    from snakemake.utils import validate

    from maxmargin.config import check_config_beyond_schema

    try:
        validate(config, str(schema))
        check_config_beyond_schema(config, schema, paths)
    except Exception as err:  # noqa: BLE001 - Snakemake's WorkflowError and the checks' ValueError alike
        lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
        what = next((line for line in lines if "Error:" in line), lines[0] if lines else type(err).__name__)
        at = [_dotted(line) for line in lines if line.startswith("On instance")][:1]
        raise UsageError(
            f"the config is refused ({' '.join([what, *at])}): correct GPU_SESSION_CONFIG's files "
            f"({', '.join(p.name for p in paths)})"
        ) from None


def _dotted(line: str) -> str:
    """jsonschema's ``On instance['vit']['train']['batch_size']:`` as ``at vit.train.batch_size``."""
    return "at " + ".".join(re.findall(r"\['([^']*)'\]", line))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    session.json), and its stages' processes."""

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
        self.summary["files"][name] = {**record, "sha256": sha256(self.out / name)}
        return True

    def pack(self, sources: list[Path], name: str, record: dict[str, Any]) -> bool:
        """``sources`` as one gzipped tar ``name`` in OUT_DIR, flat (each by its file name), kept as :meth:`keep`
        keeps a file; its record lists each member with its sha256 (tools/gpu_report.py unpacks it, checked)."""
        with tempfile.NamedTemporaryFile(prefix="gpu_session_pack.", suffix=".tar.gz") as tmp:
            with tarfile.open(tmp.name, "w:gz") as tar:
                for path in sources:
                    tar.add(path, arcname=path.name, recursive=False)
            members = {path.name: sha256(path) for path in sources}
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
