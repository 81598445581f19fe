"""Write docs/config.md, one row per config key, from the schema and the default config.

The schema gives each key's type and allowed values, default.yaml its default and its meaning (the comment on or
above its line, unless the schema has a ``description``). Regenerate after any change to either file:
``make docs`` (tests/test_packaging.py fails while docs/config.md is out of date).
Usage: python -m maxmargin.docs.config_docs [OUTPUT]   (default: docs/config.md; "-" prints it; or: python
tools/config_docs.py)
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from maxmargin.config_yaml import StrictLoader, load_yaml
from maxmargin.docs import REPO
from maxmargin.files import atomic_path
from maxmargin.registry.reads import readers

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULTS = REPO / "workflow" / "config" / "default.yaml"
OUTPUT = REPO / "docs" / "config.md"
_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w-]*):(?P<rest>.*)$")
_BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def yaml_comments(text: str) -> dict[str, str]:
    """Dotted key path -> its comment in a YAML file: the comment lines right above the key, then the one on it."""
    comments: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # (indent, key) of the enclosing mappings
    above: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
            continue
        match = _KEY_LINE.match(line)
        if not match:  # blank lines and list items end a comment block
            above = []
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        inline = match["rest"].split(" #", 1)[1].strip() if " #" in match["rest"] else ""
        comments[".".join(key for _, key in stack)] = " ".join(filter(None, [*above, inline]))
        above = []
    return comments


def _resolve(node: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """A schema node with its ``$ref`` (into ``$defs``) merged in; the node's own keys win."""
    ref = node.get("$ref")
    base = _resolve(schema["$defs"][ref.rsplit("/", 1)[1]], schema) if ref else {}
    return {**base, **{key: value for key, value in node.items() if key != "$ref"}}


def allowed(node: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """The type and the allowed values of a schema node, in words."""
    node = _resolve(node, schema)
    if "oneOf" in node:
        return " or ".join(allowed(option, schema) for option in node["oneOf"])
    if "enum" in node:
        return "one of " + ", ".join(f"`{value}`" for value in node["enum"])
    kind = node.get("type", "any")
    if kind == "array":
        items = allowed(node.get("items", {}), schema)
        sizes = [
            f"{word} {node[key]}" for key, word in (("minItems", "at least"), ("maxItems", "at most")) if key in node
        ]
        unique = ["distinct"] if node.get("uniqueItems") else []
        return f"list of ({items})" + (f", {', '.join(sizes + unique)}" if sizes or unique else "")
    bounds = [f"{sign} {node[key]}" for key, sign in _BOUNDS.items() if key in node]
    if "pattern" in node:
        bounds.append(f"matching `{node['pattern']}`")
    return kind + (" " + ", ".join(bounds) if bounds else "")


def rows(
    node: Mapping[str, Any], schema: Mapping[str, Any], prefix: str = "", default: Any = None
) -> Iterator[tuple[str, Mapping]]:
    """(dotted path, schema node) of every leaf key; the entries of a list of mappings appear as ``path[].key``.

    A mapping's keys not listed in the schema but taken by its ``additionalProperties`` (a synthetic experiment's
    block added by CONTRIBUTING.md, checked by the generic experiment's schema) are read from ``default``, the
    default config at ``prefix``: each such block with the keys it sets."""
    node = _resolve(node, schema)
    properties = node.get("properties")
    if properties is None and node.get("type") == "array" and "properties" in _resolve(node.get("items", {}), schema):
        yield from rows(node["items"], schema, prefix + "[]")
        return
    if properties is None:
        yield prefix, node
        return
    for key, child in properties.items():
        yield from rows(child, schema, f"{prefix}.{key}" if prefix else key, _get(default, key))
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping) and isinstance(default, Mapping):
        for key in (k for k in default if k not in properties):
            yield from rows(_keys_set(extra, default[key], schema), schema, f"{prefix}.{key}", default[key])


def _get(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def _keys_set(node: Mapping[str, Any], value: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A schema node with only the properties that ``value`` (a mapping of the config) sets."""
    node = _resolve(node, schema)
    if "properties" not in node or not isinstance(value, Mapping):
        return node
    return {**node, "properties": {key: child for key, child in node["properties"].items() if key in value}}


def _lookup(config: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(config, Mapping) or key not in config:
            raise KeyError(path)
        config = config[key]
    return config


def config_markdown(schema: Mapping[str, Any], defaults_text: str) -> str:
    """docs/config.md: one table per top-level section of the config."""
    defaults = yaml.load(defaults_text, Loader=StrictLoader)  # noqa: S506 (a SafeLoader refusing duplicate keys)
    comments = yaml_comments(defaults_text)
    lines = [
        "# Configuration keys",
        "",
        "Generated by `make docs` (tools/config_docs.py) from `workflow/schemas/config.schema.yaml` (types and",
        "allowed values; a bad value stops the run with the key's name) and `workflow/config/default.yaml` (defaults",
        "and meanings). Override any key with `--configfile my.yaml` (deep-merged over the defaults) or",
        "`--config key=value`; `workflow/config/paper.yaml` is the paper-scale ViT, `ci_slurm.yaml` the small CI run.",
        "Runtime settings (cores, cluster resources) are not config keys: see docs/cluster.md.",
        "",
        "*read by*: the rules whose jobs read the key (`maxmargin/registry/reads.py`; their params hold exactly those",
        "keys), so a change of it reruns exactly those jobs first, and what depends on their outputs after them",
        "(tests/test_config_reads.py checks it against Snakemake's dry runs). A key read by no rule sets where results",
        "go or a resource of a job: changing it reruns nothing.",
    ]
    section, group = None, None
    for path, node in rows(schema, schema, default=defaults):
        top, parent = path.split(".")[0].split("[")[0], path.rpartition(".")[0]
        if top != section:
            section = top
            intro = [comments[top], ""] if comments.get(top) else []
            lines += [
                "",
                f"## `{top}`",
                "",
                *intro,
                "| key | allowed | default | meaning | read by |",
                "| --- | --- | --- | --- | --- |",
            ]
        if parent != group and parent != top and comments.get(parent):
            lines.append(_row([f"`{parent}`", "mapping", "", comments[parent], ""]))
        group = parent
        try:
            default = f"`{json.dumps(_lookup(defaults, path))}`"
        except KeyError:
            default = "(none)"
        # the key's own words first; a shared definition's ($ref) description only when nothing more specific exists
        meaning = (
            node.get("description")
            or comments.get(path.replace("[]", ""))
            or _resolve(node, schema).get("description", "")
        )
        read_by = ", ".join(f"`{rule}`" for rule in readers(path.split("[]")[0])) or "(no job)"
        lines.append(_row([f"`{path}`", allowed(node, schema), default, meaning, read_by]))
    return "\n".join(lines) + "\n"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def main(argv: list[str]) -> None:
    text = config_markdown(load_yaml(SCHEMA), DEFAULTS.read_text())
    target = argv[0] if argv else str(OUTPUT)
    if target == "-":
        sys.stdout.write(text)
    else:
        with atomic_path(Path(target)) as tmp:
            tmp.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
