"""The library's layers: core <- experiments <- pipeline; figures read tables only. Imports point one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import maxmargin

PACKAGE = Path(maxmargin.__file__).parent
# For each layer, the top-level packages and maxmargin sub-packages its modules must not import.
FORBIDDEN = {
    "core": {
        "pandas",
        "torch",
        "torchvision",
        "timm",
        "matplotlib",
        "snakemake",
        "maxmargin.experiments",
        "maxmargin.figures",
        "maxmargin.io",
        "maxmargin.provenance",
        "maxmargin.claims",
        "maxmargin.config",
    },
    "experiments": {"matplotlib", "snakemake", "maxmargin.figures", "maxmargin.claims"},
    "figures": {"torch", "torchvision", "timm", "snakemake", "maxmargin.experiments", "maxmargin.claims"},
}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, relative imports resolved against its package."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


def layer_files(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_point_one_way(layer: str) -> None:
    files = layer_files(layer)
    assert files, f"maxmargin/{layer} is empty"
    wrong = []
    for path in files:
        for name in imported_modules(path):
            hits = [f for f in FORBIDDEN[layer] if name == f or name.startswith(f + ".")]
            wrong += [f"{path.relative_to(PACKAGE)} imports {name}" for _ in hits[:1]]
    assert not wrong, "\n".join(wrong)


def test_public_api_names_exist() -> None:
    assert maxmargin.__all__, "maxmargin.__all__ lists the public API"
    missing = [name for name in maxmargin.__all__ if not hasattr(maxmargin, name)]
    assert not missing, missing
