"""What a GPU session is asked to do, checked before any work (docs/gpu.md, "Copy and run").

The wall minutes, the environment's settings (``GPU_SESSION_*``), the config files, OUT_DIR (new or empty), the
data and the config the stages will read: each refused with a message that names the fix (:class:`UsageError`, exit
:data:`EXIT_USAGE`). Standard library only at import: these checks run before the kit's packages are installed.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

MAX_FILES = 8  # what comes back from the node: 8 files of one folder
MAX_FILE_BYTES = 16 * 2**20  # each of at most 16 MiB
SAFETY_SECONDS = 15.0  # kept back from the wall limit: the last copies and session.json
DEFAULT_RESERVE = 30.0  # kept for the page: its stage took 10-11 s in sessions 1-2 (docs/gpu/), a slower node more
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
    figures, :func:`maxmargin.gpu.plan.project_run`)."""
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


def session_command(request: Request) -> str:
    """The command as it was given, with the settings it read from the environment (docs/gpu/index.md shows it)."""
    settings = [f"{name}={value}" for name, value in request.settings.items()]
    return " ".join([*settings, "bash tools/gpu_session.sh OUT_DIR", f"{request.minutes:g}"])


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
