"""Reading the pipeline's config files: YAML that refuses a key given twice (:func:`load_yaml`), and the blocks
default.yaml builds by YAML merge followed under every config (:func:`follow_yaml_merges`), as the Snakefile and
:func:`maxmargin.config.merged_config` read them."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

import yaml


class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml where built: 5x faster
    """A safe YAML loader that rejects a key given twice in one mapping (plain YAML keeps the last silently)."""


MERGE_TAG = "tag:yaml.org,2002:merge"


def _no_duplicates(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    """A mapping whose explicit keys are all different; merged keys (``<<: *anchor``), which an explicit key
    overrides, as YAML and Snakemake take them."""
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ValueError(
                f"{node.start_mark.name}: key '{key}' is given twice (lines {seen[key] + 1} and "
                f"{key_node.start_mark.line + 1}); YAML would keep the last silently"
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def load_yaml(path: str | os.PathLike[str]) -> Any:
    """Load a YAML file (config, profile), refusing duplicate keys."""
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=StrictLoader)  # noqa: S506 (a SafeLoader subclass)


# --- blocks built by YAML merge (`fig1c: {<<: *fig1, ...}`) follow their source under every config -----------------

ConfigPath = tuple[str, ...]


def yaml_merges(path: str | os.PathLike[str]) -> dict[ConfigPath, tuple[list[ConfigPath], set[str]]]:
    """The mappings of a YAML file built by a merge key: their path -> (the paths of the mappings merged in, first
    first, and the keys the mapping sets itself)."""
    with open(path, encoding="utf-8") as f:
        root = yaml.compose(f, Loader=StrictLoader)
    where: dict[int, ConfigPath] = {}
    merges: dict[ConfigPath, tuple[list[ConfigPath], set[str]]] = {}

    def walk(node: yaml.Node, at: ConfigPath) -> None:
        where.setdefault(id(node), at)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.tag != MERGE_TAG:
                    walk(value, (*at, key.value))

    def find(node: yaml.Node, at: ConfigPath) -> None:
        if not isinstance(node, yaml.MappingNode):
            return
        own = {key.value for key, _ in node.value if key.tag != MERGE_TAG}
        for key, value in node.value:
            if key.tag == MERGE_TAG:
                sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
                merges[at] = ([where[id(source)] for source in sources], own)
            else:
                find(value, (*at, key.value))

    walk(root, ())
    find(root, ())
    return merges


def _at(config: Any, path: ConfigPath) -> Any:
    for part in path:
        config = config.get(part, {}) if isinstance(config, Mapping) else {}
    return config


def follow_yaml_merges(
    config: dict[str, Any],
    default: str | os.PathLike[str],
    files: Sequence[str | os.PathLike[str]] = (),
    overrides: Mapping[str, Any] | None = None,
) -> None:
    """Rebuild, in place, each block that ``default`` (default.yaml) builds by YAML merge from the config this run
    reads: the block merged in (``synthetic.fig1``) as the run's config ``files`` and ``overrides`` (``--config``) set
    it, with the block's own keys over it (those it sets in ``default`` or in any of them).

    YAML resolves a merge when it reads the one file: a CI config's ``synthetic.fig1.n_iter: 200`` would otherwise
    leave ``synthetic.fig1c``, built by ``<<: *fig1``, at default.yaml's 1000."""
    default = os.path.abspath(default)
    layers = [load_yaml(f) for f in files if os.path.abspath(f) != default] + [overrides or {}]
    for path, (sources, own) in yaml_merges(default).items():
        given = set(own).union(*(_at(layer, path) for layer in layers if isinstance(_at(layer, path), Mapping)))
        block = _at(config, path)
        merged: dict[str, Any] = {}
        for source in reversed(sources):  # the first source wins, as in YAML
            merged |= copy.deepcopy(dict(_at(config, source)))
        merged |= {key: block[key] for key in given if key in block}
        block.clear()
        block.update(merged)
