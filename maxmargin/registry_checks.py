"""Every mistake in the figure registry, or in a config block it reads, named by its place before any job runs.

The Snakefile calls :func:`check_registry` with the run's config (through
:func:`maxmargin.config.check_config_beyond_schema`): a name that resolves to nothing (a table, file, experiment,
family, drawing, experiment or data function), a config key that a panel's options or a table's rows and paths name
and the config lacks, a caption field nothing fills, an option its drawing function does not take, a key of an
experiment's block that its function does not take or one it needs and the block lacks. Each message names the
entry, its registry module and the key or name at fault. Functions are found in their source files (:mod:`ast`):
nothing heavy is imported at parse time.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping
from typing import Any

from maxmargin import drawing_code, registry
from maxmargin.registry import derived
from maxmargin.registry.types import Experiment, Panel, Table

# Where a synthetic experiment's function (Experiment.run) and its data set (Experiment.data) are defined.
EXPERIMENT_MODULE = "maxmargin.experiments.synthetic"
DATA_MODULE = "maxmargin.experiments.instances"


class RegistryError(ValueError):
    """A registry entry, or the config block it reads, that the pipeline cannot run; the message names its place."""


def home(entry: Panel | Table | Experiment) -> str:
    """The registry module that declares ``entry`` (:func:`maxmargin.registry.declared_in`)."""
    return registry.declared_in(entry)


def _place(entry: Panel | Table | Experiment) -> str:
    kind = {Panel: "panel", Table: "table", Experiment: "experiment"}[type(entry)]
    return f"{kind} {entry.name!r} ({home(entry)})"


def _function(module: str, name: str) -> ast.FunctionDef | None:
    """The definition of function ``name`` in the package's module ``module`` (followed through its imports), or
    None."""
    path = drawing_code.module_file(module)
    text = drawing_code.definition(path, name) if path is not None else None
    return _parsed_function(text or "", name)


@functools.cache
def _parsed_function(text: str, name: str) -> ast.FunctionDef | None:
    """The definition of function ``name`` in the source ``text`` (parsed once per text: every config check
    reads the same few hundred definitions)."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def keyword_arguments(function: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """A function's keyword-only arguments: (all of them, those without a default)."""
    args = function.args
    names = {a.arg for a in args.kwonlyargs}
    required = {a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default is None}
    return names, required


def _has_key(config: Mapping[str, Any], key: str) -> bool:
    try:
        derived.lookup(config, key)
    except (KeyError, TypeError, IndexError):
        return False
    return True


def check_caption(entry: Panel | Table, config: Mapping[str, Any]) -> None:
    """The entry's caption fills from ``config`` (its ``{run[...]}`` fields need no run)."""
    for block in entry.caption_blocks:
        if not _has_key(config, block):
            raise RegistryError(f"{_place(entry)}: caption_blocks names {block!r}, which the config lacks")
    derived.caption(entry, config)  # a derived.CaptionError names the entry and the field


def check_panel(entry: Panel, config: Mapping[str, Any]) -> None:
    """A panel's names resolve, its options are config keys its function takes, its caption fills."""
    names = {"family": [f.name for f in registry.FAMILIES], "tables": [t.name for t in registry.TABLES]}
    names |= {"files": [f.name for f in registry.FILES], "experiment": [e.name for e in registry.EXPERIMENTS]}
    for field, known in names.items():
        value = getattr(entry, field)
        for name in (value,) if isinstance(value, str) else value:
            if name and name not in known:
                raise RegistryError(f"{_place(entry)}: {field} names {name!r}, which is not registered")
    drawing_code.panel_sources(entry)  # a draw name its module does not define: a ValueError naming the panel
    missing = [key for key in entry.options if not _has_key(config, key)]
    if missing:
        raise RegistryError(f"{_place(entry)}: its options name {', '.join(missing)}, which the config lacks")
    if not entry.experiment:  # a synthetic panel's options reach its function as one mapping (`plots`)
        _check_arguments(entry, {key.rsplit(".", 1)[-1] for key in entry.options})
    check_caption(entry, config)


def _check_arguments(entry: Panel, given: set[str]) -> None:
    """A drawing function's keyword-only arguments are its panel's options, by their last part."""
    function = _function(f"maxmargin.figures.{entry.family}", entry.draw)
    if function is None:
        return
    takes, needs = keyword_arguments(function)
    if given - takes or needs - given:
        raise RegistryError(
            f"{_place(entry)}: its options give {sorted(given)} to {entry.draw}, which takes {sorted(takes)} "
            f"(needs {sorted(needs)}): Panel.options lists the config keys whose last part is each argument"
        )


def check_experiment(entry: Experiment, config: Mapping[str, Any]) -> None:
    """An experiment's functions exist and its config block holds exactly the keywords its function takes."""
    for field, module in (("run", EXPERIMENT_MODULE), ("data", DATA_MODULE)):
        if _function(module, getattr(entry, field)) is None:
            raise RegistryError(
                f"{_place(entry)}: {field} names {getattr(entry, field)!r}, which {module} does not define"
            )
    block = derived.experiment_settings(entry.name, config)  # a missing block: derived.MissingBlock, what to add
    takes, needs = keyword_arguments(_function(EXPERIMENT_MODULE, entry.run))
    where = f"config block 'synthetic.{entry.block}' (read by {_place(entry)}, run by {entry.run})"
    unknown, missing = sorted(set(block) - takes), sorted(needs - set(block))
    if unknown:
        raise RegistryError(f"{where}: key {', '.join(unknown)} is not an argument of {entry.run} ({sorted(takes)})")
    if missing:
        raise RegistryError(f"{where} lacks {', '.join(missing)}, which {entry.run} needs")


def check_table(entry: Table, config: Mapping[str, Any]) -> None:
    """A table's family is registered, the config keys of its paths and rows exist, its caption fills."""
    if entry.family not in {f.name for f in registry.FAMILIES}:
        raise RegistryError(f"{_place(entry)}: family {entry.family!r} is not registered (registry.FAMILIES)")
    for name, source in entry.values.items():
        if not source.startswith("registry:") and not _has_key(config, source):
            raise RegistryError(f"{_place(entry)}: its wildcard {name} takes its values from {source!r}, not a key")
    try:
        derived.row_count(entry, config)
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise RegistryError(
            f"{_place(entry)}: its rows {entry.rows} cannot be counted from the config ({err!r})"
        ) from err
    check_caption(entry, config)


def _check_unique() -> None:
    for kind, entries in (("panel", registry.PANELS), ("table", registry.TABLES), ("experiment", registry.EXPERIMENTS)):
        seen: set[str] = set()
        for entry in entries:
            if entry.name in seen:
                raise RegistryError(f"{kind} {entry.name!r} is declared twice ({home(entry)} and another)")
            seen.add(entry.name)


def check_registry(config: Mapping[str, Any]) -> None:
    """Every registry entry against ``config`` (see the module's docstring); a :class:`RegistryError` (or
    :class:`~maxmargin.registry.derived.MissingBlock`) names the first mistake's place."""
    _check_unique()
    checks: list[tuple[tuple[Any, ...], Callable[[Any, Mapping[str, Any]], None]]] = [
        (registry.EXPERIMENTS, check_experiment),
        (registry.PANELS, check_panel),
        (registry.TABLES, check_table),
    ]
    for entries, check in checks:
        for entry in entries:
            check(entry, config)
