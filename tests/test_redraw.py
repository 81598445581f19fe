"""A changed drawing redraws its panels: the plot rules' rerun trigger is the hash of the drawing code."""

from __future__ import annotations

import re
from pathlib import Path

from maxmargin.files import source_fingerprint

REPO = Path(__file__).resolve().parents[1]
DRAWING_SCRIPTS = ("plot_panel.py", "plot_synthetic.py", "docs_vit.py")


def test_source_fingerprint_follows_bytes_and_names(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    before = source_fingerprint([a, b])
    assert before == source_fingerprint([a, b]) and len(before) == 16
    a.write_text("x = 2\n")
    assert source_fingerprint([a, b]) != before
    a.write_text("x = 1\n")
    assert source_fingerprint([a, b]) == before
    assert source_fingerprint([b, a]) != before  # the order is part of what is hashed: callers sort


def _rule_blocks(text: str) -> list[str]:
    return re.split(r"\n(?=\s*rule\b)", text)


def test_every_rule_that_draws_reruns_when_the_drawing_code_changes():
    drawing = []
    for path in sorted((REPO / "workflow/rules").glob("*.smk")):
        for block in _rule_blocks(path.read_text()):
            script = re.search(r"scripts/(\w+\.py)", block)
            if script and script.group(1) in DRAWING_SCRIPTS:
                drawing.append((path.name, script.group(1)))
                assert "code=drawing_code()" in block, (
                    f"{path.name}: a rule running {script.group(1)} has no code param"
                )
    assert {s for _, s in drawing} == set(DRAWING_SCRIPTS)
