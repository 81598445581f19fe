"""Publishable PDFs: every figure embeds TrueType (Type 42) fonts, never Type 3 ones."""

from __future__ import annotations

import re
from pathlib import Path

from maxmargin.figures import style
from maxmargin.pipeline import save_figure


def pdf_font_subtypes(pdf: Path) -> set[str]:
    """The ``/Subtype`` of every font dictionary of a matplotlib PDF (its font objects are not compressed)."""
    data = pdf.read_bytes()
    return {m.decode() for m in re.findall(rb"/Type\s*/Font\b[^>]*?/Subtype\s*/(\w+)", data)} | {
        m.decode() for m in re.findall(rb"/Subtype\s*/(\w+)[^>]*?/Type\s*/Font\b", data)
    }


def assert_no_type3(pdf: Path) -> None:
    subtypes = pdf_font_subtypes(pdf)
    assert subtypes, f"{pdf} embeds no font at all"
    assert "Type3" not in subtypes and b"/Type3" not in pdf.read_bytes(), f"{pdf} embeds Type 3 fonts: {subtypes}"
    assert subtypes & {"TrueType", "Type0", "CIDFontType2"}, subtypes


def test_saved_figure_embeds_truetype_fonts(tmp_path: Path) -> None:
    with style.paper_style():
        fig, ax = style.new_axes()
        ax.plot([0, 1], [1, 0], label="GMM")
        ax.set(xlabel=r"iteration $t$", ylabel=r"$\|W\|_F$", title="Figure 9(a)")
        ax.legend()
    save_figure(fig, str(tmp_path / "f.pdf"), str(tmp_path / "f.png"))
    assert_no_type3(tmp_path / "f.pdf")


def test_the_check_sees_a_type3_font(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    with plt.rc_context({"pdf.fonttype": 3}):  # matplotlib's default: what the check must catch
        fig, ax = plt.subplots()
        ax.set_title("Type 3")
        fig.savefig(tmp_path / "t3.pdf")
    plt.close(fig)
    assert "Type3" in pdf_font_subtypes(tmp_path / "t3.pdf")
