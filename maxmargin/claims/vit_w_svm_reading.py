"""The "In words" passage of a committed ViT run's W-ATT-SVM probe (docs/vit.md, passage vit_w_svm_reading): each
W-ATT-SVM claim's verdict in the words of that verdict, with the number of images beside every cosine, written from
the run's ``vit_w_svm`` table and its claims (the other sentences of a run: :mod:`maxmargin.claims.vit_runs`)."""

from __future__ import annotations

import pandas as pd

from maxmargin.claims.vit_runs import _sets, shuffled_null
from maxmargin.registry.vit_w_svm import JUDGED_IMAGES


def failed_conditions(note: str, names: tuple[str, ...]) -> list[str]:
    """The conditions a claim's note names as not holding, in its order (``names``: the claim's condition names, as
    :func:`maxmargin.claims.vit_w_svm.failing_first` writes them: ``trend inconclusive: ...``)."""
    found = [(note.find(f"{name} {v}:"), f"{name} {v}") for name in names for v in ("differs", "inconclusive")]
    return [words for at, words in sorted(found) if at >= 0]


# Below this head-mean rank ceiling a matrix of the head's rank cannot come near its W-ATT-SVM's direction.
CEILING_BINDS_BELOW = 0.95
W_SVM_WORDS = {
    "vit_w_svm_direction": {
        "holds": "the heads approach their W-ATT-SVM (above null (a) by vit.guard.min_w_svm_gain, their share of the "
        "ceiling rising over the last half of the epochs)",
        "differs": "the heads do not approach their W-ATT-SVM",
        "inconclusive": "whether the heads approach their W-ATT-SVM is not shown",
    },
    "vit_w_svm_specific": {
        "holds": "training makes the alignment specific to the head's own selection (own minus shuffled grows from "
        "the first snapshot)",
        "differs": "training does not make the alignment more specific to the head's own selection",
        "inconclusive": "whether training makes the alignment specific to the head's own selection is not shown",
    },
    "vit_w_svm_nuclear": {
        "holds": "the heads lean to the nuclear-norm solution beyond a random matrix of their rank, as the follow-up's "
        "theory predicts for W trained as W_Q^T W_K",
        "differs": "the heads do not lean to the nuclear-norm solution beyond a random matrix of their rank",
        "inconclusive": "whether the heads lean to the nuclear-norm solution beyond a random matrix of their rank is "
        "not shown",
    },
}
W_SVM_CONDITIONS = {"vit_w_svm_direction": ("gain over null (a)", "trend")}


def _claim_words(row: pd.Series, claim: str) -> str:
    """A W-ATT-SVM claim's verdict in words, with the conditions its note names as failing."""
    if row.verdict not in W_SVM_WORDS[claim]:
        return f"`{claim}` **{row.verdict}**"
    failed = failed_conditions(str(row.note), W_SVM_CONDITIONS.get(claim, ()))
    named = f" ({'; '.join(failed)}: the claim's note says why)" if failed else ""
    return f"`{claim}` **{row.verdict}**: {W_SVM_WORDS[claim][row.verdict]}{named}"


def w_svm_reading(w: pd.DataFrame, claims: pd.DataFrame) -> str:
    """A run's heads against their W-ATT-SVM in words, at the last snapshot on the judged set: the head-mean cosine
    against both nulls' head means and the rank ceiling (binding below :data:`CEILING_BINDS_BELOW`), the share of
    selections kept from the previous snapshot, and the verdict of each W-ATT-SVM claim in words."""
    sets = _sets(w)
    judged = next(name for name in JUDGED_IMAGES if name in set(sets))
    rows = w[sets == judged]
    last = rows[rows["epoch"] == rows["epoch"].max()]
    c, nulls = last.cosine.mean(), (last.null_rank.mean(), last.null_shuffled.mean())
    above = "above" if c > max(nulls) else "not above"
    ceiling = last.ceiling.mean()
    binds = (
        "the ceiling does not bind: a matrix of the head's rank can come near the solution's direction"
        if ceiling >= CEILING_BINDS_BELOW
        else "the ceiling binds"
    )
    shuffle = shuffled_null(last, "a shuffled selection's SVM")
    verdicts = claims.set_index("claim_id")
    said = [_claim_words(verdicts.loc[claim], claim) for claim in W_SVM_WORDS if claim in verdicts.index]
    return (
        f"In words (from the table and the claims above): at epoch {int(last.epoch.iloc[0])}, on "
        f"{int(last.n_images.iloc[0]):,} {judged} images, the heads' head-mean cosine with their W-ATT-SVM is "
        f"{c:.3f}, {above} the head means of both matched nulls ({nulls[0]:.3f} for a random matrix of their rank, "
        f"{shuffle}) and "
        f"{c / ceiling:.0%} of a rank ceiling of {ceiling:.3f} "
        f"({binds}); {last.selection_kept.mean():.0%} of the selections are those of the previous snapshot, so the "
        f"SVM they are measured against moves with the selections. {'; '.join(said)}."
    )
