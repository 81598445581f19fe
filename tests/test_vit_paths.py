"""The ViT rules' files come from the registry, and every ViT rule's params carry the config keys it reads:
no path of a ViT run is typed in workflow/rules/vit.smk, and rule vit_data's ``reads`` are its own."""

from __future__ import annotations

import re

from conftest import REPO

from maxmargin import registry

VIT_RULES = REPO / "workflow/rules/vit.smk"


def _rules(text: str) -> dict[str, str]:
    """Each rule of a rule file, by name: its text up to the next rule."""
    blocks = re.split(r"^(?=rule \w+:)", text, flags=re.M)
    return {m.group(1): block for block in blocks if (m := re.match(r"rule (\w+):", block))}


def test_the_vit_rules_type_no_path_of_a_run() -> None:
    text = VIT_RULES.read_text()
    typed = [p for p in re.findall(r'results_path\(\s*f?"([^"]+)"', text) if not p.startswith(("logs/", "benchmarks/"))]
    assert typed == [], f"paths typed in vit.smk instead of the registry (maxmargin/registry/vit.py): {typed}"
    assert not re.search(r"[\"/]runs/", text), "a runs/ path typed in vit.smk"
    common = (REPO / "workflow/rules/common.smk").read_text()
    assert "runs/" not in common


def test_every_vit_rule_passes_the_keys_it_reads() -> None:
    rules = _rules(VIT_RULES.read_text())
    assert {"vit_data", "vit_train", "vit_recipe_train"} <= set(rules)
    missing = [name for name, block in rules.items() if f'reads("{name}")' not in block]
    assert missing == []


def test_the_registry_holds_every_vit_run_path() -> None:
    assert registry.file("vit_data_manifest").path == registry.vit.DATA_MANIFEST.format(block="vit")
    assert set(registry.vit.CHECKPOINTS) <= set(_rules(VIT_RULES.read_text()))
    run = [registry.table("vit_run_metrics").pattern, registry.file("vit_maps").path]
    assert len({path.rsplit("/", 1)[0] for path in [*run, registry.vit.CHECKPOINTS["vit_train"]]}) == 1
