"""What a job computes with, hashed: the rerun trigger of every rule that runs package code (its ``code`` param),
which every table's sidecar records with the rest of the job's params.

A job's fingerprint covers, and nothing else:

- its rule's script (``scripts/<name>.py``), whole;
- every module-level definition of the package that the script names, and, by the same rule again, what those name
  (:func:`maxmargin.drawing_code.follow`: imported by name, through a module, or looked up by ``getattr`` with a
  name the source spells out), less what changes no number the job computes: the io and logging layers
  (:data:`NOT_FOLLOWED`: they check, write and record a table), and the registry's declarations (its module-level
  assignments, tuples of every entry: the job's own entries are hashed instead, below);
- for a synthetic experiment, the functions its ``Experiment`` entry names (``run`` in
  :mod:`maxmargin.experiments.synthetic`, ``data`` in :mod:`maxmargin.experiments.instances`), followed the same
  way: the pipeline looks them up by name at run time;
- its declarations in the registry: its ``Experiment`` entry (``name``, ``data``, ``run``, ``data_args``,
  ``block``) and every ``Table`` its rule writes (for a synthetic experiment, its own three), less what only the
  report and the docs read (:data:`REPORT_ONLY`: a caption, a label, the claims reading it, a column's
  description).

So a changed ``Experiment`` entry or column, or an edit of a function the job runs, reruns that job and what
depends on it; an edit of a neighbouring function, of another experiment's entry or of a caption reruns nothing.
The config the job reads is its other param (``reads``). The source is read as text (:mod:`ast`), never imported.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path

from maxmargin import drawing_code, registry
from maxmargin.registry.types import Table

# Modules whose definitions no job's fingerprint follows (package-relative): they read, check, write and record a
# job's tables and its log, and change no number it computes; an edit there would otherwise rerun every job.
NOT_FOLLOWED = ("files.py", "provenance.py", "tables.py", "logs.py")
# Fields of a Table that only the report and the docs read (and, of a Column, its description).
REPORT_ONLY = ("label", "caption", "caption_blocks", "claims", "target")


def _skip(path: Path, name: str) -> bool:
    """Left out of a job's fingerprint: the io and logging layers, and the registry's module-level assignments."""
    not_followed, registry_folder = _left_out(drawing_code.PACKAGE)
    if path in not_followed:
        return True
    return path.parent == registry_folder and name not in drawing_code.functions_of(path)


@functools.cache
def _left_out(package: Path) -> tuple[frozenset[Path], Path]:
    """The modules of :data:`NOT_FOLLOWED` under ``package``, and its registry's folder (plain modules only)."""
    return frozenset(package / module for module in NOT_FOLLOWED), package / "registry"


def declared_fields(entry: Table) -> str:
    """The fields of a Table that reach its job (all but :data:`REPORT_ONLY`, its columns without their
    descriptions), as text."""
    fields = {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry) if f.name not in REPORT_ONLY}
    fields["columns"] = tuple(dataclasses.replace(c, description="") for c in entry.columns)
    return repr(fields)


def job_tables(rule: str, wildcards: Mapping[str, str]) -> list[Table]:
    """The registered tables a job of ``rule`` writes: its rule's (a synthetic experiment's: its own three)."""
    tables = [t for t in registry.TABLES if t.rule == rule]
    if "experiment" in wildcards:
        own = {wildcards["experiment"] + suffix for suffix, _, _ in registry.synthetic.EXPERIMENT_TABLES.values()}
        tables = [t for t in tables if t.name in own]
    return tables


def job_sources(rule: str, script: Path, wildcards: Mapping[str, str]) -> dict[str, str]:
    """Everything a job's fingerprint hashes, by name (see the module's docstring): ``script`` (the rule's script),
    the job's declarations and the package code it runs."""
    declared = {f"table:{t.name}": declared_fields(t) for t in job_tables(rule, wildcards)}
    functions = ()
    if "experiment" in wildcards:
        entry = registry.experiment(wildcards["experiment"])
        declared["experiment"] = repr(entry)
        functions = (("synthetic", entry.run), ("instances", entry.data))
    try:
        code = _code(script, functions)
    except KeyError as err:
        raise ValueError(
            f"rule {rule!r} ({dict(wildcards)}): the registry names {err.args[0]!r}, which its module does not "
            "define (maxmargin/registry/synthetic.py: an Experiment's run and data)"
        ) from None
    return {"script": script.read_text(), **declared, **code}


def _code(script: Path, functions: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The package code a job runs: what ``script`` names and ``functions`` (module of maxmargin.experiments, name:
    an experiment's, looked up by name at run time), followed. Kept while none of the files it was read from (and
    none of the registry's, which decide what is left out) changes: a DAG asks for it for every job, and the jobs
    of a rule share it."""
    package = drawing_code.PACKAGE
    key = (package, script, functions)
    if key in _CODE and _stamp(_CODE[key][0]) == _CODE[key][1]:
        return _CODE[key][2]
    roots = drawing_code.references(script, script.read_text())
    for module, name in functions:
        roots.append((drawing_code.module_file(f"{package.name}.experiments.{module}"), name, "own"))
    code = dict(sorted(drawing_code.follow(roots, _skip).items()))
    read = {package.parent / label.split(":", 1)[0] for label in code if label.startswith(f"{package.name}/")}
    files = (script, *sorted(read | set((package / "registry").glob("*.py"))))
    _CODE[key] = (files, _stamp(files), code)
    return code


# (package, script, functions) -> (the files read, their stamp then, what _code found)
_CODE: dict[tuple[Path, Path, tuple[tuple[str, str], ...]], tuple[tuple[Path, ...], tuple[object, ...], dict]] = {}


def _stamp(files: tuple[Path, ...]) -> tuple[object, ...]:
    """The time and size of each of ``files``."""
    return tuple((s.st_mtime_ns, s.st_size) for s in map(Path.stat, files))


def job_fingerprint(rule: str, script: Path, wildcards: Mapping[str, str]) -> str:
    """A short hash of :func:`job_sources`: the ``code`` param of a job of ``rule`` with ``wildcards``."""
    digest = hashlib.sha256()
    for name, text in job_sources(rule, script, wildcards).items():
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()[:16]
