"""The ViT's figures, drawn only from the files that rules vit_train, vit_baseline, vit_probe and the decisive
experiment's write (no torch): Figures 6 and 7 of the paper (:mod:`.paper`), their companions beyond the paper, the
W-ATT-SVM and regime panels (:mod:`.companions`), the decisive experiment (:mod:`.decisive`) and the recipe study
(:mod:`.recipes`); what each says besides its axes (:mod:`.notes`).

Paper: Section 4 ("Real experiments"). Each panel's drawing function is named here (``Panel.draw``).
"""

from maxmargin.figures.vit.companions import NO_W_SVM, draw_regime, draw_w_svm
from maxmargin.figures.vit.decisive import draw_decisive
from maxmargin.figures.vit.notes import WARNING_COLOR, learned_verdict, source_note, stand_in_warning
from maxmargin.figures.vit.paper import draw_figure6, draw_figure7
from maxmargin.figures.vit.recipes import draw_recipes

__all__ = [
    "NO_W_SVM",
    "WARNING_COLOR",
    "draw_decisive",
    "draw_figure6",
    "draw_figure7",
    "draw_recipes",
    "draw_regime",
    "draw_w_svm",
    "learned_verdict",
    "source_note",
    "stand_in_warning",
]
