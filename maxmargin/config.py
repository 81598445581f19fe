"""Checks of the pipeline's config that JSON schema cannot express.

JSON schema's ``type: number`` admits YAML's ``.nan`` and ``.inf``; a NaN step size then runs to the end and
overwrites good tables with NaN ones; its ``type: integer`` admits ``1000.0``, which then fails inside a job without
naming the key. The Snakefile validates the config against the schema with :func:`validate_config` (its error
naming the key and the config file that holds it) and calls :func:`check_config_beyond_schema` right after:
duplicate YAML keys, finite numbers, integers where the schema says integer, indices inside the data.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from maxmargin import registry
from maxmargin.config_yaml import (  # the config files' reading, imported from here too
    follow_yaml_merges,
    load_yaml,
)
from maxmargin.registry_checks import check_registry

# Beyond this magnitude every setting of this pipeline (step sizes, radii, counts) overflows float64 arithmetic
# within a few operations; 1e300 validates as "finite" but yields NaN just as surely.
MAX_MAGNITUDE = 1e12


def _numbers(value: Any, key: str) -> Iterator[tuple[str, float]]:
    """Every number inside ``value`` with its dotted key (list items as ``key[i]``)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield key, float(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _numbers(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{key}[{i}]")


def check_config(config: Mapping[str, Any]) -> None:
    """Raise ValueError naming the first key whose number is NaN, infinite or beyond ``MAX_MAGNITUDE``, or a
    block of ``synthetic`` that no registered experiment reads (:mod:`maxmargin.registry`)."""
    used = {experiment.block for experiment in registry.EXPERIMENTS} | {"data"}
    for block in config.get("synthetic", {}):
        if block not in used:
            raise ValueError(
                f"config key 'synthetic.{block}' is read by no registered experiment; registered blocks: "
                + ", ".join(sorted(used))
            )
    for key, number in _numbers(config, ""):
        if not math.isfinite(number):
            raise ValueError(f"config key '{key}' is {number}: every number in the config must be finite")
        if abs(number) > MAX_MAGNITUDE:
            raise ValueError(
                f"config key '{key}' is {number:g}: numbers beyond {MAX_MAGNITUDE:g} overflow float64 arithmetic"
            )


# --- beyond the numbers: integer lists, values that must lie inside the data ----------------------------------

# The test images of each data set the ViT may get: the digits stand-in (maxmargin.experiments.vit.data.load_digits32)
# holds out 20% of the 1797 digits (tests/test_integrity.py checks this against the loader).
TEST_IMAGES = {"cifar10": 10000, "fashion_mnist": 10000, "digits": 360}


# --- a run's config: default.yaml, then each --configfile, then --config, each merged over what comes before -----


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged over ``base``, as Snakemake merges a --configfile over the config before it: a mapping into
    the mapping at its key, key by key; anything else (a number, a list, a mapping over a non-mapping) replaces what
    was there. A new config: neither argument changes, and the result shares no container with them."""
    merged = copy.deepcopy(dict(base))
    _merge_into(merged, over)
    return merged


def _merge_into(target: dict[str, Any], over: Mapping[str, Any]) -> None:
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), Mapping):
            target[key] = dict(target[key])
            _merge_into(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def merged_config(
    files: Sequence[str | os.PathLike[str]],
    default: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The config a run reads: ``default`` (default.yaml), each of ``files`` merged over it in order (``snakemake
    --configfile A B``), then ``overrides`` (``--config``), with the blocks ``default`` builds by YAML merge following
    their source (:func:`follow_yaml_merges`, as the Snakefile does). Each file is read refusing duplicate keys."""
    config = load_yaml(default) or {}
    for path in files:
        config = deep_merge(config, load_yaml(path) or {})
    config = deep_merge(config, overrides or {})
    follow_yaml_merges(config, default, files, overrides)
    return config


def config_source(
    key: Sequence[str | int],
    default: str | os.PathLike[str],
    files: Sequence[str | os.PathLike[str]] = (),
    overrides: Mapping[str, Any] | None = None,
) -> str:
    """Where the run's value at ``key`` (a path of keys and list indices) comes from, as merged_config merges:
    "--config" where ``overrides`` sets it, else the last of the --configfile ``files`` that holds it, else
    ``default``; "no config file" where none does (a default of the schema)."""
    if _holds(overrides or {}, key):
        return "--config"
    default = os.path.abspath(default)
    layers = [default] + [f for f in files if os.path.abspath(f) != default]  # merged in this order
    return next((str(f) for f in reversed(layers) if _holds(load_yaml(f) or {}, key)), "no config file")


def _holds(config: Any, key: Sequence[str | int]) -> bool:
    """Whether ``config`` has a value at the path ``key``."""
    for part in key:
        if isinstance(config, Mapping) and part in config:
            config = config[part]
        elif isinstance(config, list) and isinstance(part, int) and -len(config) <= part < len(config):
            config = config[part]
        else:
            return False
    return True


def validate_config(
    config: dict[str, Any],
    schema: str | os.PathLike[str],
    default: str | os.PathLike[str],
    files: Sequence[str | os.PathLike[str]] = (),
    overrides: Mapping[str, Any] | None = None,
) -> None:
    """The schema's check of the run's config (snakemake.utils.validate, filling in the schema's defaults); a
    failure names the key and the file it comes from (:func:`config_source`): Snakemake's message names neither,
    only the merged config's value, and with layered --configfile files the key may be in any of them."""
    from jsonschema.exceptions import ValidationError
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    try:
        validate(config, str(schema))
    except WorkflowError as err:
        cause = err.__context__  # Snakemake raises its error while handling jsonschema's, whose text it keeps alone
        if not isinstance(cause, ValidationError):
            raise
        key = list(cause.absolute_path)
        if cause.validator == "additionalProperties":  # the error is the mapping's: name the key it refuses
            key += sorted(k for k in cause.instance if k not in cause.schema.get("properties", {}))[:1]
        dotted = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in key).lstrip(".")
        source = config_source(key, default, files, overrides)
        raise WorkflowError(f"config key '{dotted}' (from {source}): {cause.message}") from None


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref", "")
    if ref.startswith("#/"):
        for part in ref[2:].split("/"):
            root = root[part]
        return root
    return node


def _typed_integers(value: Any, node: Mapping[str, Any], root: Mapping[str, Any], key: str) -> Iterator[str]:
    """Every key under ``value`` whose schema type is integer but whose value is a float (JSON schema admits 3.0)."""
    node = _resolve(node, root)
    if node.get("type") == "integer" and isinstance(value, float):
        yield key
    elif isinstance(value, Mapping):
        for k, v in value.items():
            sub = node.get("properties", {}).get(k) or (node.get("additionalProperties") or {})
            if isinstance(sub, Mapping):
                yield from _typed_integers(v, sub, root, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for i, v in enumerate(value):
            yield from _typed_integers(v, node["items"], root, f"{key}[{i}]")


def _test_images(data: Mapping[str, Any], block: str) -> tuple[int, str, str]:
    """How many test images a ViT run can have, why, and the other fix where a stand-in sets the limit: ``n_test``,
    and the smallest test set among the data set and its stand-ins (any of them may be the one the run gets)."""
    n_test = int(data["n_test"])
    names = list(dict.fromkeys([data["dataset"], *data["fallback"]]))
    smallest = min(names, key=TEST_IMAGES.__getitem__)
    limit = TEST_IMAGES[smallest]
    why = f"{smallest} (of {block}.data.dataset and fallback {names}) has {limit}"
    if 0 < n_test < limit:
        return n_test, f"{block}.data.n_test keeps {n_test}, and {why}", ""
    # a stand-in's smaller test set is the limit only while it may be used: dropping it from the fallback lifts it
    drop = f", or drop {smallest} from {block}.data.fallback" if smallest != data["dataset"] else ""
    return limit, why, drop


def check_data_indices(config: Mapping[str, Any]) -> None:
    """``vit.probe.image_index`` must pick one of the test images the run will have (and so must the recipe
    study's, ``vit_recipes.probe.image_index``, which defaults to it): the error names the key to change."""
    vit = config.get("vit")
    if not vit:
        return
    blocks = [("vit", vit["data"], vit["probe"], "vit.probe.image_index")]
    study = config.get("vit_recipes") or {}
    if study.get("proxy"):
        own = "image_index" in study.get("probe", {})
        key = "vit_recipes.probe.image_index" + ("" if own else " (unset: it takes vit.probe.image_index)")
        data, probe = {**vit["data"], **study.get("data", {})}, {**vit["probe"], **study.get("probe", {})}
        blocks.append(("vit_recipes", data, probe, key))
    for name, data, probe, key in blocks:
        n, why, drop = _test_images(data, name if name == "vit" or "n_test" in study.get("data", {}) else "vit")
        if not 0 <= int(probe["image_index"]) < n:
            raise ValueError(
                f"config key '{key}' is {probe['image_index']}, outside the {n} test images of the {name} run "
                f"({why}); pick an index below {n}{drop}"
            )
        if int(probe["n_images"]) > n:
            raise ValueError(
                f"config key '{name}.probe.n_images' is {probe['n_images']}, more than the {n} test images of the "
                f"{name} run ({why}); lower it to at most {n}{drop}"
            )


def check_cross_keys(config: Mapping[str, Any]) -> None:
    """Keys that must agree with each other, named in the error with their values."""
    fig3 = config.get("synthetic", {}).get("fig3")
    if fig3 and len(fig3["v_starts"]) != len(fig3["starts"]):
        raise ValueError(
            f"config keys 'synthetic.fig3.v_starts' ({len(fig3['v_starts'])}) and 'synthetic.fig3.starts' "
            f"({len(fig3['starts'])}) must list as many starts: one v(0) per p(0)"
        )
    census = config.get("census")
    if census and not set(census["histogram"]["dims"]) <= set(census["dims"]):
        raise ValueError(
            f"config key 'census.histogram.dims' {census['histogram']['dims']} must be a subset of 'census.dims' "
            f"{census['dims']}: Figure 9(b) is drawn from the census runs"
        )
    if config.get("vit"):
        _check_vit_cadences(config["vit"])


def _check_vit_cadences(vit: Mapping[str, Any]) -> None:
    """Figure 6's epochs are evaluated epochs of the run; the W-ATT-SVM's images are among the probe images."""
    epochs, every, drawn = vit["train"]["epochs"], vit["train"]["eval_every"], vit["plots"]["fig6_epochs"]
    if max(drawn) > epochs:
        raise ValueError(f"config key 'vit.plots.fig6_epochs' {drawn} goes past 'vit.train.epochs' = {epochs}")
    if off := [e for e in drawn if e % every and e != epochs]:
        raise ValueError(
            f"config key 'vit.plots.fig6_epochs' {drawn} has epochs without a metrics row ({off}): rows are kept "
            f"every 'vit.train.eval_every' = {every} epochs and at the last; draw multiples of it"
        )
    w_svm, n_probe = vit.get("w_svm", {}), vit["probe"]["n_images"]
    if w_svm and w_svm["images"] > n_probe:
        raise ValueError(
            f"config key 'vit.w_svm.images' is {w_svm['images']}, more than the 'vit.probe.n_images' = {n_probe} "
            "probe images it is taken from: lower it, or raise vit.probe.n_images"
        )
    if w_svm and w_svm["nuclear_images"] > w_svm["images"]:
        raise ValueError(
            f"config key 'vit.w_svm.nuclear_images' is {w_svm['nuclear_images']}, more than 'vit.w_svm.images' = "
            f"{w_svm['images']}: the nuclear-norm solve takes the first of those images"
        )
    if w_svm and w_svm.get("whole_train") and "train" not in w_svm["image_sets"]:
        raise ValueError(
            f"config key 'vit.w_svm.whole_train' is true, but 'vit.w_svm.image_sets' {w_svm['image_sets']} has no "
            "train: it solves on every training image only where the probe solves on training images; add train, "
            "or set it false"
        )
    if w_svm and w_svm["nuclear_draws"] > w_svm["null_draws"]:
        raise ValueError(
            f"config key 'vit.w_svm.nuclear_draws' is {w_svm['nuclear_draws']}, more than 'vit.w_svm.null_draws' = "
            f"{w_svm['null_draws']}: the nuclear-norm null reuses the first of those draws"
        )


# Bytes the basin study holds per start of its grid (maxmargin.experiments.basin: its arrays of one row per start
# and GD variant, and the table), measured at about 9 kB per start; the grid must fit in this machine's memory.
BASIN_BYTES_PER_START = 16_000


def physical_memory() -> int:
    """This machine's memory in bytes (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def check_memory(config: Mapping[str, Any], available: int | None = None) -> None:
    """Refuse, before any job, a basin grid whose arrays cannot fit in memory, naming its keys."""
    grid = (config.get("basin") or {}).get("grid")
    available = physical_memory() if available is None else available
    if not grid or not available:
        return
    starts = int(grid["p1"]["num"]) * int(grid["p2"]["num"])
    need = starts * BASIN_BYTES_PER_START
    if need > available:
        raise ValueError(
            f"config keys 'basin.grid.p1.num' x 'basin.grid.p2.num' = {starts:,} starts need about "
            f"{need / 2**30:.1f} GiB (about {BASIN_BYTES_PER_START // 1000} kB per start), more than this machine's "
            f"{available / 2**30:.1f} GiB; choose a coarser grid"
        )


def check_config_files(files: Sequence[str | os.PathLike[str]]) -> None:
    """Every YAML file the run's config came from loads without a duplicate key."""
    for path in files:
        load_yaml(path)


def check_config_beyond_schema(
    config: Mapping[str, Any], schema_path: str | os.PathLike[str], files: Sequence[str | os.PathLike[str]] = ()
) -> None:
    """Everything the Snakefile checks before any job, after schema validation, naming the key at fault."""
    check_config_files(files)
    check_config(config)
    # the registry against this config: every mistake named by its entry, registry module and key (an experiment
    # without its block: the message says what to add)
    check_registry(config)
    schema = load_yaml(schema_path)
    for key in _typed_integers(config, schema, schema, ""):
        value = _get_indexed(config, key)
        raise ValueError(f"config key '{key}' is {value!r}: it must be an integer (write {int(value)})")
    check_data_indices(config)
    check_cross_keys(config)
    check_memory(config)


def _get_indexed(config: Any, key: str) -> Any:
    """The value at a dotted key with ``[i]`` list indices."""
    for part in key.replace("[", ".[").split("."):
        config = config[int(part[1:-1])] if part.startswith("[") else config[part]
    return config
