"""Claims of each last-layer head of the ViT against its W-ATT-SVM solution (beyond the paper; Lemma 1, Theorems
1-3), read from vit_w_svm.csv: it turns toward its solution, above matched nulls (``vit_w_svm_direction``), toward the
solution of its own selection (``vit_w_svm_specific``), and toward the nuclear-norm solution (``vit_w_svm_nuclear``);
judged over heads by :func:`head_interval`."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from maxmargin.claims.base import (
    Claim,
    Config,
    Interval,
    Measurement,
    Tables,
    interval_method,
    interval_verdict,
    mean_interval,
    note_of,
)
from maxmargin.registry.vit_w_svm import JUDGED_IMAGES


def head_interval(values: pd.Series | np.ndarray, guard: Config) -> Interval:
    """The mean over the last layer's heads of ``values`` (one per head) and its interval at
    ``vit.guard.confidence``: Student's t below :data:`.base.MIN_BOOTSTRAP_UNITS` heads, else a percentile bootstrap
    over heads (``vit.guard.bootstrap``; :func:`.base.mean_interval`).

    A head's value against a null is its cosine minus the null's mean over its own draws: that mean is a random draw
    per head, so the heads' spread of the difference already carries the null's sampling spread.
    """
    return mean_interval(np.asarray(values, dtype=float), confidence=guard["confidence"], bootstrap=guard["bootstrap"])


def _interval_words(interval: Interval, guard: Config) -> str:
    return interval_method(interval, guard["confidence"], "heads")


def _not_probed(cfg: Config) -> Measurement:
    """Why table ``vit_w_svm`` has no rows: no snapshots kept, or a page made without the probe."""
    if not cfg["vit"]["docs_w_svm"]:
        why = "the page was made without rule vit_probe (vit.docs_w_svm is false)"
    elif cfg["vit"]["train"]["snapshot_every"] == 0:
        why = "the run kept no snapshots (vit.train.snapshot_every is 0)"
    else:
        why = "rule vit_probe wrote no rows"
    return f"not measured: {why}", "not run", "no W-ATT-SVM rows"


def judged_set(table: pd.DataFrame) -> str:
    """The image set the W-ATT-SVM claims are judged on: the training images where the probe solved on them (the
    theory's problem), else the held-out probe images (tables made before the ``images`` column: those)."""
    present = set(table["images"].dropna()) if "images" in table else set()
    return next((name for name in JUDGED_IMAGES if name in present), "test")


def _w_svm_last(t: Tables) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of the judged image set (:func:`judged_set`) sorted by epoch and head, and its last measured epoch's
    rows."""
    table = t["vit_w_svm"]
    if "images" in table and table["images"].notna().any():
        table = table[table["images"] == judged_set(table)]
    table = table.sort_values(["epoch", "head"])
    return table, table[table["epoch"] == table["epoch"].max()]


MIN_TREND_EPOCHS = 3  # Spearman's rho of two points is +-1 whatever they are: a trend needs at least three


@dataclass(frozen=True)
class Trend:
    """The W-ATT-SVM trend of claim ``vit_w_svm_direction``: each head's Spearman(epoch, cos / ceiling) over the
    measured ``epochs`` of the judged window (from ``vit.guard.w_svm_trend_from`` of the last measured epoch on) and
    the mean over heads with its interval (:func:`head_interval`); NaN where the window holds fewer than
    :data:`MIN_TREND_EPOCHS` epochs."""

    epochs: list[int]
    measured: list[int]
    rhos: np.ndarray
    mean: Interval

    def window(self, guard: Config) -> str:
        """Which epochs the trend is judged over, in words."""
        return (
            f"from epoch {self.epochs[0] if self.epochs else '-'} on (the last {1 - guard['w_svm_trend_from']:.0%} of "
            f"the {self.measured[-1]} epochs: vit.guard.w_svm_trend_from)"
        )


def _ceiling_trend(table: pd.DataFrame, guard: Config) -> Trend:
    """Each head's Spearman(epoch, cos / ceiling) over the measured epochs from ``vit.guard.w_svm_trend_from`` of
    the last one on, and their mean's interval over heads."""
    wide = table.pivot(index="epoch", columns="head", values="ceiling_fraction").sort_index()
    window = wide[wide.index >= guard["w_svm_trend_from"] * wide.index.max()]
    if len(window) >= MIN_TREND_EPOCHS:
        rhos = _spearman_with_epochs(window.to_numpy().T)  # one row per head
    else:
        rhos = np.full(wide.shape[1], np.nan)
    mean = head_interval(rhos, guard)
    mean = replace(mean, low=max(mean.low, -1.0), high=min(mean.high, 1.0))  # a mean of rhos lies in [-1, 1]
    return Trend([int(e) for e in window.index], [int(e) for e in wide.index], rhos, mean)


def _spearman_with_epochs(series: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``series`` (epochs in increasing order along the row) with the epoch: the
    Pearson correlation of its average ranks with 1..E, as scipy.stats.spearmanr (NaN for a constant row)."""
    from scipy.stats import rankdata

    ranks = rankdata(series, axis=1)
    ranks -= ranks.mean(axis=1, keepdims=True)
    epochs = np.arange(series.shape[1]) - (series.shape[1] - 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return ranks @ epochs / np.sqrt((ranks**2).sum(axis=1) * (epochs**2).sum())


def _epochs(epochs: list[int]) -> str:
    return f"{len(epochs)} epoch{'' if len(epochs) == 1 else 's'}"


def _versus(interval: Interval, bar: float) -> tuple[str, str]:
    """The verdict of "the mean is above ``bar``" by ``interval``, and how the interval stands to the bar."""
    verdict = interval_verdict(interval.low, interval.high, bar, below=False)
    where = {"holds": "lies above", "differs": "lies below", "inconclusive": "contains"}[verdict]
    return verdict, f"{interval.text()} {where} {bar:g}"


def _trend_part(trend: Trend, mean: pd.DataFrame, guard: Config) -> tuple[str, str]:
    """The trend's verdict against ``vit.guard.min_w_svm_spearman`` and its reason."""
    if np.isnan(trend.mean.estimate):
        return "inconclusive", (
            f"the trend is not measured: the probe measured {_epochs(trend.epochs)} {trend.window(guard)}, and "
            f"a Spearman needs at least {MIN_TREND_EPOCHS} (measured epochs: {', '.join(map(str, trend.measured))})"
        )
    verdict, stands = _versus(trend.mean, guard["min_w_svm_spearman"])
    kept = mean["selection_kept"].dropna()
    stay = f"; {kept.iloc[-1]:.0%} of the selections stay between the last two measured epochs" if len(kept) else ""
    peak = int(mean["cosine"].idxmax())
    return verdict, (
        f"the cosine's share of its ceiling {'does not rise' if verdict == 'differs' else 'is not shown to rise'} "
        f"steadily {trend.window(guard)}: the heads' mean Spearman "
        f"{stands} (the head-mean cosine peaks at epoch {peak} at {mean['cosine'].max():.3f} and ends at "
        f"{mean['cosine'].iloc[-1]:.3f}{stay})"
    )


def _w_svm_direction(t: Tables, cfg: Config) -> Measurement:
    """Beyond the paper: the last layer's heads turn toward their W-ATT-SVM solutions (table ``vit_w_svm``). At the
    last measured epoch the head-mean cosine exceeds the matched rank-d_head null (a) by at least
    ``vit.guard.min_w_svm_gain``, and over the last epochs (from ``vit.guard.w_svm_trend_from`` of the run on) each
    head's share of its rank ceiling rises (mean Spearman over heads at least ``vit.guard.min_w_svm_spearman``),
    both by their intervals over heads (:func:`head_interval`)."""
    table, last = _w_svm_last(t)
    guard = cfg["vit"]["guard"]
    if table.empty:
        return _not_probed(cfg)
    gain, trend = head_interval(last["cosine"] - last["null_rank"], guard), _ceiling_trend(table, guard)
    mean = table.groupby("epoch")[["cosine", "ceiling", "ceiling_fraction", "selection_kept"]].mean()
    gain_verdict, gain_stands = _versus(gain, guard["min_w_svm_gain"])
    parts = [(gain_verdict, f"the gain over the matched null {gain_stands}"), _trend_part(trend, mean, guard)]
    verdict = next((v for v in ("differs", "inconclusive") if v in {p[0] for p in parts}), "holds")
    rhos = trend.rhos[~np.isnan(trend.rhos)]
    heads = f"each head's from {rhos.min():.2f} to {rhos.max():.2f}, " if len(rhos) > 1 else ""
    rho = f"{heads}mean over heads {trend.mean.text()}" if len(rhos) else f"not measured ({_epochs(trend.epochs)})"
    measured = (
        f"at epoch {int(last['epoch'].iloc[0])}: head-mean cos(Wt_h, W_mm,h) {last['cosine'].mean():.3f} against the "
        f"rank-d_head null {last['null_rank'].mean():.3f} (gain {gain.text()}), the shuffled-selection null "
        f"{last['null_shuffled'].mean():.3f}; {last['ceiling_fraction'].mean():.2f} of the rank ceiling "
        f"{last['ceiling'].mean():.3f}; Spearman(epoch, cos / ceiling) {trend.window(guard)}: {rho}; "
        f"head-mean cosine highest at epoch {int(mean['cosine'].idxmax())} "
        f"({mean['cosine'].max():.3f})"
    )
    rule = (
        f"holds when the gain over null (a) (each head's mean over {cfg['vit']['w_svm']['null_draws']} random "
        f"rank-d_head matrices: vit.w_svm.null_draws) at the last measured epoch is above vit.guard.min_w_svm_gain = "
        f"{guard['min_w_svm_gain']:g} and the heads' mean Spearman(epoch, cos / ceiling) over the last "
        f"{1 - guard['w_svm_trend_from']:.0%} of the epochs above vit.guard.min_w_svm_spearman = "
        f"{guard['min_w_svm_spearman']:g}, both by their {_interval_words(gain, guard)}; the trend is "
        "judged over the last epochs because the theory is about W's limit direction, and the jump from the "
        "initialisation in the first epochs would decide any trend over all of them; Frobenius W-ATT-SVM on "
        f"{int(last['n_constraints'].iloc[0])} constraints; {int((~table['hard_margin'].astype(bool)).sum())} of "
        f"{len(table)} solutions soft-margin; dataset: {table['dataset'].iloc[-1]}"
    )
    why = "; ".join(reason for v, reason in sorted(parts, key=lambda p: p[0] != verdict) if v != "holds")
    return measured, verdict, note_of(verdict, why, rule)


def _w_svm_specific(t: Tables, cfg: Config) -> Measurement:
    """Beyond the paper: a head's alignment is specific to the tokens it selects: at the last measured epoch its
    cosine with its own selection's W-ATT-SVM exceeds that with a shuffled selection's (null (b)), by an interval
    over heads (:func:`head_interval`) above 0."""
    table, last = _w_svm_last(t)
    if table.empty:
        return _not_probed(cfg)
    guard = cfg["vit"]["guard"]
    gap = head_interval(last["cosine"] - last["null_shuffled"], guard)
    verdict, stands = _versus(gap, 0.0)
    first = table[table["epoch"] == table["epoch"].min()]
    shuffled = first["null_shuffled"].dropna()
    then = f"{shuffled.mean():.3f}" if len(shuffled) else "no shuffled selection that some W can select"
    return (
        f"at epoch {int(last['epoch'].iloc[0])}: own selection {last['cosine'].mean():.3f}, shuffled selection "
        f"{last['null_shuffled'].mean():.3f}: difference {gap.text()}; at epoch {int(first['epoch'].iloc[0])}: "
        f"{first['cosine'].mean():.3f} vs {then}",
        verdict,
        note_of(
            verdict,
            f"the head-mean difference {stands}",
            f"holds when the head-mean difference is above 0 by its {_interval_words(gap, guard)}; the "
            f"{cfg['vit']['w_svm']['shuffles']} shuffles (vit.w_svm.shuffles) permute each head's selection over the "
            "probe images",
        ),
    )


def _w_svm_nuclear(t: Tables, cfg: Config) -> Measurement:
    """The follow-up paper's prediction, at one epoch: a head trained as W_Q^T W_K is closer to the nuclear-norm
    W-ATT-SVM than to the Frobenius one. At the last measured epoch, cos(W, W_nuc) - cos(W, W_fro) on the same few
    images exceeds what a random rank-d_head matrix gets by its rank alone (null (a)'s nuclear draws), by an interval
    over heads (:func:`head_interval`) above 0."""
    table, last = _w_svm_last(t)
    last = last.dropna(subset=["cosine_nuclear"])
    if last.empty:
        return (
            _not_probed(cfg)
            if table.empty
            else ("not measured (vit.w_svm.nuclear_images is 0)", "not run", "no nuclear-norm rows")
        )
    guard, images = cfg["vit"]["guard"], int(cfg["vit"]["w_svm"]["nuclear_images"])
    gap = last["cosine_nuclear"] - last["cosine_frobenius_nuclear_images"]
    excess = head_interval(gap - last["null_nuclear_gap"], guard)
    verdict, stands = _versus(excess, 0.0)
    return (
        f"at epoch {int(last['epoch'].iloc[0])} on {images} images: head-mean cos(Wt_h, W_nuc) "
        f"{last['cosine_nuclear'].mean():.3f} vs cos(Wt_h, W_fro) {last['cosine_frobenius_nuclear_images'].mean():.3f} "
        f"(gap {gap.mean():.3f}); a random rank-d_head matrix's gap {last['null_nuclear_gap'].mean():.3f}; excess "
        f"{excess.text()}",
        verdict,
        note_of(
            verdict,
            f"the heads lean to the nuclear-norm solution by {gap.mean():.3f}, and a random matrix of their rank by "
            f"{last['null_nuclear_gap'].mean():.3f}: the excess {stands}",
            f"holds when the excess of the heads' gap over the rank-d_head null's (each head's mean over "
            f"{cfg['vit']['w_svm']['nuclear_draws']} draws: vit.w_svm.nuclear_draws) is "
            f"above 0 by its {_interval_words(excess, guard)}; a gap at one epoch on {images} probe images "
            "(vit.w_svm.nuclear_images), not a path toward W_nuc; Tarzanagh et al., 'Transformers as Support Vector "
            "Machines' (2023)",
        ),
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "vit_w_svm_direction",
        "Each head of the last layer turns toward its W-ATT-SVM (max-margin) solution during training (beyond the "
        "paper)",
        "Lemma 1, Theorems 1-3 (W converges in direction to W_mm)",
        "cos(Wt_h, W_mm,h) rises toward its rank ceiling, well above a matched null",
        _w_svm_direction,
    ),
    Claim(
        "vit_w_svm_specific",
        "Each head's alignment is specific to the tokens it selects: the SVM of a shuffled selection is further "
        "(beyond the paper)",
        "Lemma 1, Theorems 1-3 (W_mm of the selected tokens)",
        "own selection > shuffled selection",
        _w_svm_specific,
    ),
    Claim(
        "vit_w_svm_nuclear",
        "At the last measured epoch a head trained as W_Q^T W_K is closer to the nuclear-norm W-ATT-SVM than to the "
        "Frobenius one, on a few probe images (beyond the paper)",
        "Tarzanagh et al. 2023, Transformers as SVMs (implicit bias of W_Q^T W_K)",
        "closer to W_nuc than W_fro, beyond a random rank-d_head matrix",
        _w_svm_nuclear,
    ),
)
