"""Whether a ViT run reached the regime the theory is about: the training loss near zero (beyond the paper).

Theorems 1-3 describe W / ||W|| as the training loss approaches its infimum; Section 4 trains 400 epochs and reads
the attention's sparsity and ||W||_F there. A run that ends before its training loss is near zero says nothing about
where W's direction ends. The loss is judged over the same window as ``vit_w_direction`` (from
``vit.guard.direction_from`` of the epochs to the end), by the t-interval of its mean over the window's metrics rows
at ``vit.guard.confidence``, against ``vit.guard.regime_loss``.
"""

from __future__ import annotations

import numpy as np

from maxmargin.claims.base import Claim, Config, Measurement, Tables, interval_verdict, note_of, small, t_interval
from maxmargin.core.vit_learning import w_direction


def _saturation(window) -> str:
    """The attention's saturation at the window's end, where the run measured it (``cls_max_attention``)."""
    if "cls_max_attention" not in window or window["cls_max_attention"].isna().all():
        return "saturation not measured in this run"
    s = window["cls_max_attention"]
    return f"saturation (mean largest [CLS] softmax probability per head) {s.iloc[0]:.3f} -> {s.iloc[-1]:.3f} (limit 1)"


def _regime(t: Tables, cfg: Config) -> Measurement:
    """The training loss over the last epochs, its mean's t-interval over the window's rows below
    ``vit.guard.regime_loss``: holds when the whole interval is below, differs when it is all above."""
    m = t["vit_metrics"].sort_values("epoch").set_index("epoch")
    guard = cfg["vit"]["guard"]
    start = w_direction(m.index, m["w_cosine_final"], guard).from_epoch
    window = m.loc[start:]
    loss = window["train_loss"].to_numpy(dtype=float)
    low, high = t_interval(loss, guard["confidence"])
    threshold = guard["regime_loss"]
    verdict = interval_verdict(low, high, threshold, below=True) if np.isfinite(low) else "inconclusive"
    measured = (
        f"training loss over epochs {start}-{m.index[-1]}: mean {small(loss.mean())} [{small(low)}, {small(high)}] "
        f"over {len(loss)} metrics rows (needs < {threshold:g}), last {small(loss[-1])}; training accuracy "
        f"{window['train_acc'].min():.3f}-{window['train_acc'].max():.3f}; {_saturation(window)}"
    )
    why = (
        "one metrics row in the window: no interval"
        if len(loss) < 2
        else f"the loss's mean is above vit.guard.regime_loss = {threshold:g} by its interval: the run ends before "
        "the regime"
        if verdict == "differs"
        else f"its interval contains vit.guard.regime_loss = {threshold:g}"
    )
    rule = (
        f"holds when the {guard['confidence']:.0%} t-interval of the mean training loss over the last "
        f"{1 - guard['direction_from']:.0%} of the epochs (the window of vit_w_direction; one value per metrics row) "
        f"lies below vit.guard.regime_loss = {threshold:g}, where cross-entropy -log p is within 2.5 % of its "
        "exponential tail 1 - p, the regime of Theorems 1-3"
    )
    return measured, verdict, note_of(verdict, why, rule)


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "vit_regime",
        "The run reaches the regime the theory is about: the training loss near zero (beyond the paper)",
        "Section 4 (400 epochs), Theorems 1-3 (the loss approaches its infimum)",
        "training loss -> 0",
        _regime,
    ),
)
