"""Whether a ViT run reached the regime the theory is about (beyond the paper), by the theory's own markers.

Theorems 1-3 describe W / ||W|| as the training loss approaches its infimum: every sample's loss goes to zero while
||W|| grows without bound and the softmax saturates onto the selected token. Two claims ask the two halves apart,
over the window of claim ``vit_w_direction`` (from ``vit.guard.direction_from`` of the epochs to the end):

- ``vit_regime``, the loss condition: the largest per-sample training loss stays below ``vit.guard.regime_loss``
  (where -log p is within 2.5 % of its tail 1 - p: a bound on each sample, not on their mean) and the log-loss does
  not rise;
- ``vit_regime_markers``, the markers: ||W||_F grows, d ln||W||_F / d ln t at least ``vit.guard.min_w_log_growth``
  by its interval, and the saturation (each head's largest [CLS] softmax probability, mean; limit 1) rises, d s / d
  ln t at least ``vit.guard.min_saturation_rise``, or already stands at ``vit.guard.saturated``. Both are judged
  log-t aware (:func:`~maxmargin.claims.base.log_slope_interval`): gradient descent on a separable logistic loss
  grows ||W|| like ln t (Theorems 2-3), which a bar on the growth factor over a late window cannot see.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from maxmargin.claims.base import (
    Claim,
    Config,
    LogSlope,
    Measurement,
    Tables,
    log_slope_interval,
    note_of,
    small,
)
from maxmargin.core.vit_learning import w_direction


def regime_window(m: pd.DataFrame, guard: Config) -> pd.DataFrame:
    """The metrics rows (indexed by epoch) of claim vit_w_direction's window: from ``vit.guard.direction_from`` of
    the epochs on."""
    m = m.sort_values("epoch").set_index("epoch")
    start = w_direction(m.index, m["w_cosine_final"], guard).from_epoch
    return m.loc[max(start, 1) :]  # ln t: from epoch 1 on


def _measured(window: pd.DataFrame, column: str) -> bool:
    return column in window and window[column].notna().all()


def _loss_series(window: pd.DataFrame) -> tuple[pd.Series, str]:
    """The training loss at the rows' weights (one pass in eval mode) where logged, else the epochs' running mean."""
    if _measured(window, "train_loss_full"):
        return window["train_loss_full"], "the training loss at the row's weights"
    return window["train_loss"], "the epoch's running mean training loss (the loss at the weights was not logged)"


def loss_trend(window: pd.DataFrame, confidence: float) -> LogSlope:
    """d ln(loss) / d ln t over the window (:func:`~maxmargin.claims.base.log_slope_interval`)."""
    loss, _ = _loss_series(window)
    return log_slope_interval(window.index.to_numpy(), np.log(loss.to_numpy(dtype=float)), confidence)


def _loss_level(window: pd.DataFrame, bar: float) -> tuple[str, str]:
    """Whether every training sample's loss is under ``bar`` over the window (``met``, ``failed`` or ``unknown``),
    and its words."""
    if _measured(window, "train_loss_max"):
        largest = window["train_loss_max"]
        level = "met" if largest.max() < bar else "failed" if largest.min() >= bar else "mixed"
        return level, (
            f"the largest per-sample training loss {small(largest.iloc[0])} -> {small(largest.iloc[-1])} "
            f"(highest {small(largest.max())} at epoch {largest.idxmax()})"
        )
    loss = window["train_loss"]
    level = "failed" if loss.min() >= bar else "unknown"
    return level, f"the mean training loss {small(loss.iloc[0])} -> {small(loss.iloc[-1])} (per-sample loss not logged)"


def _level_reason(level: str, window: pd.DataFrame, bar: float) -> str:
    """Why the loss level does not hold, in words (``level`` of :func:`_loss_level`)."""
    if level == "failed":
        return f"the largest per-sample loss stays at or above vit.guard.regime_loss = {bar:g} at every row"
    if level == "mixed":
        return (
            f"the largest per-sample loss crosses vit.guard.regime_loss = {bar:g} within the window (highest "
            f"{small(window['train_loss_max'].max())})"
        )
    return (
        "the per-sample loss was not logged by the code this run was made with: a mean under the bar does not put "
        "every sample under it"
    )


def _regime(t: Tables, cfg: Config) -> Measurement:
    """The loss condition of Theorems 1-3 over the window: every sample's loss under ``vit.guard.regime_loss`` and
    the log-loss trend not rising (its interval not above 0)."""
    guard = cfg["vit"]["guard"]
    window, bar = regime_window(t["vit_metrics"], guard), guard["regime_loss"]
    level, level_words = _loss_level(window, bar)
    trend = loss_trend(window, guard["confidence"])
    rising = trend.low > 0
    _, series = _loss_series(window)
    verdict = "differs" if rising or level == "failed" else "holds" if level == "met" else "inconclusive"
    why = (
        f"the loss rises over the window: d ln(loss) / d ln t {trend.text(2)} lies above 0"
        if rising
        else _level_reason(level, window, bar)
    )
    measured = (
        f"epochs {window.index[0]}-{window.index[-1]}: {level_words}; d ln(loss) / d ln t {trend.text(2)} "
        f"({series}; 95 % interval of the slope against ln t, widened for the residuals' autocorrelation); "
        "training accuracy "
        f"{_accuracy(window)}"
    )
    rule = (
        f"holds when, over the last {1 - guard['direction_from']:.0%} of the epochs (the window of vit_w_direction), "
        f"every training sample's loss is below vit.guard.regime_loss = {bar:g} (where -log p is within 2.5 % of its "
        "exponential tail 1 - p, the regime of Theorems 1-3; judged on the largest per-sample loss of each row) and "
        "the log-loss does not rise (the interval of d ln(loss) / d ln t is not above 0)"
    )
    return measured, verdict, note_of(verdict, why, rule)


def _accuracy(window: pd.DataFrame) -> str:
    acc = window["train_acc_full"] if _measured(window, "train_acc_full") else window["train_acc"]
    return f"{acc.min():.3f}-{acc.max():.3f}"


def w_growth(window: pd.DataFrame, confidence: float) -> LogSlope:
    """d ln||W||_F / d ln t over the window: about 1 / ln t for a growth like ln t from the first step, 0 for a W
    that stops."""
    norm = np.log(window["w_frobenius"].to_numpy(dtype=float))
    return log_slope_interval(window.index.to_numpy(), norm, confidence)


def grows(slope: LogSlope, minimum: float) -> str:
    """``holds`` when the interval's low end is above ``minimum``, ``differs`` when its high end is below it."""
    if not np.isfinite(slope.low):
        return "inconclusive"
    return "holds" if slope.low > minimum else "differs" if slope.high < minimum else "inconclusive"


def _saturation_verdict(window: pd.DataFrame, guard: Config) -> tuple[str, str]:
    """Whether the saturation moves toward 1 (or stands at ``vit.guard.saturated``), and its words."""
    if not _measured(window, "cls_max_attention"):
        return "inconclusive", "saturation not measured by the code this run was made with"
    s = window["cls_max_attention"]
    rise = log_slope_interval(window.index.to_numpy(), s.to_numpy(dtype=float), guard["confidence"])
    at_limit = s.min() >= guard["saturated"]
    verdict = "holds" if at_limit else grows(rise, guard["min_saturation_rise"])
    return verdict, f"saturation {s.iloc[0]:.3f} -> {s.iloc[-1]:.3f} (limit 1), d s / d ln t {rise.text()}"


def _markers(t: Tables, cfg: Config) -> Measurement:
    """The theory's markers over the window: ||W||_F grows (log-t aware) and the saturation rises toward 1."""
    guard = cfg["vit"]["guard"]
    window = regime_window(t["vit_metrics"], guard)
    growth = w_growth(window, guard["confidence"])
    parts = {
        "||W||_F growth": (
            grows(growth, guard["min_w_log_growth"]),
            f"d ln||W||_F / d ln t {growth.text()} against vit.guard.min_w_log_growth = {guard['min_w_log_growth']:g}",
        ),
        "saturation": _saturation_verdict(window, guard),
    }
    verdicts = {v for v, _ in parts.values()}
    verdict = "differs" if "differs" in verdicts else "inconclusive" if "inconclusive" in verdicts else "holds"
    why = "; ".join(f"{name} {v}: {words}" for name, (v, words) in parts.items() if v == verdict)
    w = window["w_frobenius"]
    measured = (
        f"epochs {window.index[0]}-{window.index[-1]}: ||W||_F {w.iloc[0]:.3g} -> {w.iloc[-1]:.3g}, "
        f"{parts['||W||_F growth'][1]}; {parts['saturation'][1]} (95 % intervals of the slopes against ln t, "
        "widened for the residuals' autocorrelation)"
    )
    rule = (
        f"holds when, over the last {1 - guard['direction_from']:.0%} of the epochs, ||W||_F grows "
        f"(the interval of d ln||W||_F / d ln t above vit.guard.min_w_log_growth = {guard['min_w_log_growth']:g}; "
        f"gradient descent grows ||W|| like ln t, Theorems 2-3, which gives 1 / ln t{_log_rate(window, cfg)}; under "
        "Adam the theory gives no rate) and the attention saturates (its interval of d s / d ln t above "
        f"vit.guard.min_saturation_rise = {guard['min_saturation_rise']:g}, or s at least vit.guard.saturated = "
        f"{guard['saturated']:g} over the window)"
    )
    return measured, verdict, note_of(verdict, why, rule)


def _log_rate(window: pd.DataFrame, cfg: Config) -> str:
    """1 / ln t at the window's end, t counted in optimiser steps, where the config gives the steps per epoch."""
    n_train, batch = cfg["vit"]["data"]["n_train"], cfg["vit"]["train"]["batch_size"]
    if n_train <= 0:
        return ""
    steps = -(-n_train // batch) * int(window.index[-1])
    return f" = {1 / np.log(steps):.3f} at the window's end ({steps:,} steps)"


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "vit_regime",
        "The training loss reaches the theory's regime: every sample's loss near zero and not rising (beyond the "
        "paper)",
        "Section 4 (400 epochs), Theorems 1-3 (the loss approaches its infimum)",
        "every sample's loss -> 0",
        _regime,
    ),
    Claim(
        "vit_regime_markers",
        "The theory's markers move toward their limits: ||W||_F grows without bound and the attention saturates "
        "onto one token (beyond the paper)",
        "Theorems 1-3 (||W|| -> infinity, softmax -> the selected token)",
        "||W||_F grows like ln t; saturation -> 1",
        _markers,
    ),
)
