"""Claims of each last-layer head of the ViT against its W-ATT-SVM solution (beyond the paper; Lemma 1, Theorems
1-3), read from vit_w_svm.csv: it turns toward its solution, above matched nulls (``vit_w_svm_direction``), toward the
solution of its own selection (``vit_w_svm_specific``), and toward the nuclear-norm solution (``vit_w_svm_nuclear``);
judged over heads by :func:`head_interval`."""

from __future__ import annotations

from dataclasses import dataclass

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


MIN_TREND_EPOCHS = 5  # a slope against ln(epoch) from fewer snapshots has no power at the heads' jitter


@dataclass(frozen=True)
class Power:
    """How often the trend rule says ``holds`` and ``differs`` at a given true rise over the window, simulated with the
    run's own snapshot-to-snapshot jitter (heads alike, independent Gaussian jitter around a rise linear in
    ln(epoch)): ``rates[rise] = (P(holds), P(differs))``."""

    jitter: float
    draws: int
    rates: dict[float, tuple[float, float]]

    def text(self, bar: float) -> str:
        flat, low, high = (self.rates[r] for r in sorted(self.rates))
        rises = sorted(self.rates)
        return (
            f"power, simulated {self.draws} times with this run's jitter {self.jitter:.3f} (the heads' residual sd "
            f"around their own slopes): a rise of {rises[1]:g} is found (holds) {low[0]:.0%} and a rise of "
            f"{rises[2]:g} {high[0]:.0%} of the time; a flat plateau is differs (no rise of {bar:g}) {flat[1]:.0%} "
            f"and holds (a false rise) {flat[0]:.0%} of the time; a rise of {bar:g} is differs (falsely) "
            f"{low[1]:.0%} of the time"
        )


@dataclass(frozen=True)
class Trend:
    """The W-ATT-SVM trend of claim ``vit_w_svm_direction``: each head's rise of cos / ceiling over the measured
    ``epochs`` of the judged window (from ``vit.guard.w_svm_trend_from`` of the last measured epoch on), its slope
    against ln(epoch) times the window's span in ln(epoch), and the mean over heads with its Student t-interval;
    NaN where the window holds fewer than :data:`MIN_TREND_EPOCHS` epochs."""

    epochs: list[int]
    measured: list[int]
    rises: np.ndarray
    mean: Interval
    power: Power | None

    def window(self, guard: Config) -> str:
        """Which epochs the trend is judged over, in words."""
        return (
            f"from epoch {self.epochs[0] if self.epochs else '-'} on (the last {1 - guard['w_svm_trend_from']:.0%} of "
            f"the {self.measured[-1]} epochs: vit.guard.w_svm_trend_from)"
        )


def log_epoch_rises(series: np.ndarray, epochs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's least-squares slope against ln(epoch) times ln(last / first epoch): the rise over the window a trend
    linear in ln(epoch) makes (the theory's rates are in ln t); and each row's residual standard deviation."""
    x = np.log(np.asarray(epochs, dtype=float))
    xc = x - x.mean()
    y = np.asarray(series, dtype=float)
    yc = y - y.mean(axis=-1, keepdims=True)
    slopes = yc @ xc / (xc @ xc)
    residuals = yc - slopes[..., None] * xc
    sd = np.sqrt((residuals**2).sum(axis=-1) / max(x.size - 2, 1))
    return slopes * (x[-1] - x[0]), sd


def trend_verdict(low: float, high: float, bar: float) -> str:
    """``differs`` when the interval of the rise excludes a rise of ``bar`` (its high end below it), ``holds`` when it
    lies above 0, else ``inconclusive``."""
    if not np.isfinite(low):
        return "inconclusive"
    return "differs" if high < bar else "holds" if low > 0 else "inconclusive"


def trend_power(jitter: float, heads: int, epochs: np.ndarray, guard: Config) -> Power:
    """:class:`Power` of the trend rule at rises 0, ``vit.guard.min_w_svm_rise`` and twice it, ``heads`` heads at
    ``epochs``, Gaussian jitter of sd ``jitter`` (``vit.guard.bootstrap``: draws and seed; ``vit.guard.confidence``)."""
    from scipy.stats import t as student

    bar, draws = guard["min_w_svm_rise"], guard["bootstrap"]["resamples"]
    rng = np.random.default_rng(guard["bootstrap"]["seed"])
    x = np.log(np.asarray(epochs, dtype=float))
    shape = (x - x[0]) / (x[-1] - x[0])
    quantile = student.ppf((1 + guard["confidence"]) / 2, heads - 1) if heads > 1 else np.nan
    rates = {}
    for rise in (0.0, bar, 2 * bar):
        series = rise * shape + rng.normal(0.0, jitter, size=(draws, heads, x.size))
        rises, _ = log_epoch_rises(series, epochs)
        half = quantile * rises.std(axis=1, ddof=1) / np.sqrt(heads)
        mean = rises.mean(axis=1)
        verdicts = [trend_verdict(lo, hi, bar) for lo, hi in zip(mean - half, mean + half, strict=True)]
        rates[rise] = (verdicts.count("holds") / draws, verdicts.count("differs") / draws)
    return Power(jitter, draws, rates)


def _ceiling_trend(table: pd.DataFrame, guard: Config) -> Trend:
    """Each head's rise of cos / ceiling over the measured epochs from ``vit.guard.w_svm_trend_from`` of the last one
    on (:func:`log_epoch_rises`), their mean's t-interval over heads and the rule's simulated power."""
    wide = table.pivot(index="epoch", columns="head", values="ceiling_fraction").sort_index()
    window = wide[(wide.index >= guard["w_svm_trend_from"] * wide.index.max()) & (wide.index > 0)]
    epochs = window.index.to_numpy()
    if len(window) < MIN_TREND_EPOCHS:
        rises, power = np.full(wide.shape[1], np.nan), None
    else:
        rises, sd = log_epoch_rises(window.to_numpy().T, epochs)
        power = trend_power(float(np.sqrt(np.mean(sd**2))), len(rises), epochs, guard)
    return Trend([int(e) for e in epochs], [int(e) for e in wide.index], rises, head_interval(rises, guard), power)


def _epochs(epochs: list[int]) -> str:
    return f"{len(epochs)} epoch{'' if len(epochs) == 1 else 's'}"


def _versus(interval: Interval, bar: float) -> tuple[str, str]:
    """The verdict of "the mean is above ``bar``" by ``interval``, and how the interval stands to the bar."""
    verdict = interval_verdict(interval.low, interval.high, bar, below=False)
    where = {"holds": "lies above", "differs": "lies below", "inconclusive": "contains"}[verdict]
    return verdict, f"{interval.text()} {where} {bar:g}"


def _trend_part(trend: Trend, guard: Config) -> tuple[str, str]:
    """The trend's verdict against ``vit.guard.min_w_svm_rise`` (:func:`trend_verdict`) and its reason."""
    if np.isnan(trend.mean.estimate):
        return "inconclusive", (
            f"the trend is not measured: the probe measured {_epochs(trend.epochs)} {trend.window(guard)}, and "
            f"the test needs at least {MIN_TREND_EPOCHS} (measured epochs: {', '.join(map(str, trend.measured))})"
        )
    bar = guard["min_w_svm_rise"]
    verdict = trend_verdict(trend.mean.low, trend.mean.high, bar)
    words = {
        "differs": f"excludes a rise of vit.guard.min_w_svm_rise = {bar:g}",
        "holds": "lies above 0",
        "inconclusive": f"contains 0 and a rise of {bar:g}",
    }[verdict]
    return verdict, f"the rise of cos / ceiling {trend.window(guard)}, {trend.mean.text()}, {words}"


def failing_first(parts: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """The verdict of a claim of several conditions (``parts``: name -> (verdict, reason)): ``differs`` when one
    differs, else ``inconclusive`` when one is, else ``holds``; and the reason, the failing conditions by name and
    number, the one that decides first."""
    verdicts = [v for v, _ in parts.values()]
    verdict = next((v for v in ("differs", "inconclusive") if v in verdicts), "holds")
    order = sorted((name for name, (v, _) in parts.items() if v != "holds"), key=lambda n: parts[n][0] != verdict)
    return verdict, "; ".join(f"{name} {parts[name][0]}: {parts[name][1]}" for name in order)


def _images(rows: pd.DataFrame) -> str:
    """The number of images the rows' W-ATT-SVM was solved on: ``on 1,920 train images``."""
    n = sorted({int(v) for v in rows["n_images"].dropna()})
    name = rows["images"].dropna().iloc[0] if "images" in rows and rows["images"].notna().any() else "test"
    return f"on {'/'.join(f'{v:,}' for v in n)} {name} images"


def _w_svm_direction(t: Tables, cfg: Config) -> Measurement:
    """Beyond the paper: the last layer's heads turn toward their W-ATT-SVM solutions (table ``vit_w_svm``). At the
    last measured epoch the head-mean cosine exceeds the matched rank-d_head null (a) by at least
    ``vit.guard.min_w_svm_gain``, and over the last epochs (from ``vit.guard.w_svm_trend_from`` of the run on) the
    heads' share of their rank ceiling rises (:func:`trend_verdict` against ``vit.guard.min_w_svm_rise``), both by
    their intervals over heads (:func:`head_interval`)."""
    table, last = _w_svm_last(t)
    guard = cfg["vit"]["guard"]
    if table.empty:
        return _not_probed(cfg)
    gain, trend = head_interval(last["cosine"] - last["null_rank"], guard), _ceiling_trend(table, guard)
    gain_verdict, gain_stands = _versus(gain, guard["min_w_svm_gain"])
    verdict, why = failing_first(
        {"gain over null (a)": (gain_verdict, gain_stands), "trend": _trend_part(trend, guard)}
    )
    rises = trend.rises[~np.isnan(trend.rises)]
    heads = f"each head's from {rises.min():+.3f} to {rises.max():+.3f}, " if len(rises) > 1 else ""
    rise = f"{heads}mean {trend.mean.text()}" if len(rises) else f"not measured ({_epochs(trend.epochs)})"
    measured = (
        f"at epoch {int(last['epoch'].iloc[0])} {_images(last)}: head-mean cos(Wt_h, W_mm,h) "
        f"{last['cosine'].mean():.3f} against the rank-d_head null {last['null_rank'].mean():.3f} (gain "
        f"{gain.text()}); {last['ceiling_fraction'].mean():.2f} of the rank ceiling {last['ceiling'].mean():.3f}; "
        f"rise of cos / ceiling {trend.window(guard)}: {rise}"
    )
    rule = (
        f"holds when the gain over null (a) (each head's mean over {cfg['vit']['w_svm']['null_draws']} random "
        f"rank-d_head matrices: vit.w_svm.null_draws) at the last measured epoch is above vit.guard.min_w_svm_gain = "
        f"{guard['min_w_svm_gain']:g} and the heads' rise of cos / ceiling over the last "
        f"{1 - guard['w_svm_trend_from']:.0%} of the epochs (each head's slope against ln(epoch) over at least "
        f"{MIN_TREND_EPOCHS} snapshots times the window's span) lies above 0, both by their "
        f"{_interval_words(gain, guard)}; differs when the gain's interval lies below its bar or the rise's excludes "
        f"a rise of vit.guard.min_w_svm_rise = {guard['min_w_svm_rise']:g}; "
        + (trend.power.text(guard["min_w_svm_rise"]) + "; " if trend.power else "")
        + "the trend is judged over the last epochs because the theory is about W's limit direction; Frobenius "
        f"W-ATT-SVM {_images(last)} ({int(last['n_constraints'].iloc[0]):,} constraints); "
        f"{int((~table['hard_margin'].astype(bool)).sum())} of {len(table)} solutions soft-margin; dataset: "
        f"{table['dataset'].iloc[-1]}"
    )
    return measured, verdict, note_of(verdict, why, rule)


def _shuffled_cosine(rows: pd.DataFrame) -> pd.Series:
    """The head's own cosine on the shuffled null's images (``cosine_null_images`` where the probe solved the two on
    different counts, else ``cosine``): the two sides of the difference on the same number of images."""
    if "cosine_null_images" in rows and rows["cosine_null_images"].notna().any():
        return rows["cosine_null_images"]
    return rows["cosine"]


def _shuffles(rows: pd.DataFrame, asked: int) -> str:
    """How many shuffled selections were drawn, and how many kept (some W selects them) or skipped."""
    drawn = int(rows["null_shuffled_drawn"].sum()) if "null_shuffled_drawn" in rows else 0
    kept = int(rows["null_shuffled_kept"].sum()) if "null_shuffled_kept" in rows else asked * len(rows)
    return f"{drawn} shuffles drawn, {kept} kept, {drawn - kept} skipped (no W selects them)"


def _first_shuffled(table: pd.DataFrame, last: pd.DataFrame) -> pd.DataFrame | None:
    """The rows of the first snapshot before the last at which every head has a shuffled-selection null (null (b):
    a permutation some W selects); None where none has."""
    heads = set(last["head"])
    for _, rows in table[table["epoch"] < last["epoch"].iloc[0]].groupby("epoch"):
        if set(rows.dropna(subset=["null_shuffled"])["head"]) >= heads:
            return rows
    return None


def _w_svm_specific(t: Tables, cfg: Config) -> Measurement:
    """Beyond the paper: training makes a head's alignment specific to the tokens it selects: the difference between
    its cosine with its own selection's W-ATT-SVM and with a shuffled selection's (null (b)) grows from the first
    measured epoch to the last, by an interval over heads (:func:`head_interval`) above 0. An untrained head already
    leans to its own selection's solution (its W made that selection), so the difference alone cannot fail."""
    table, last = _w_svm_last(t)
    if table.empty:
        return _not_probed(cfg)
    guard, shuffles = cfg["vit"]["guard"], cfg["vit"]["w_svm"]["shuffles"]
    first = _first_shuffled(table, last)
    if first is None:
        why = (
            f"no snapshot before epoch {int(last['epoch'].iloc[0])} has, for every head, a shuffled selection that "
            "some W selects (null (b) is drawn at the first and the last snapshot): no baseline to gain from"
        )
        return f"not measured: {why}; {_shuffles(table, shuffles)}", "inconclusive", note_of("inconclusive", why, "")
    differences = [
        _shuffled_cosine(rows) - rows["null_shuffled"] for rows in (first.set_index("head"), last.set_index("head"))
    ]
    gain = head_interval((differences[1] - differences[0]).to_numpy(), guard)
    verdict, stands = _versus(gain, 0.0)
    epochs = int(first["epoch"].iloc[0]), int(last["epoch"].iloc[0])
    n_null = sorted({int(v) for v in table.get("n_images_null", table["n_images"]).dropna()})
    return (
        f"own minus shuffled selection {differences[0].mean():+.3f} at epoch {epochs[0]} and "
        f"{differences[1].mean():+.3f} at epoch {epochs[1]}: gain {gain.text()}, both sides on "
        f"{'/'.join(f'{n:,}' for n in n_null)} images; {_shuffles(pd.concat([first, last]), shuffles)}",
        verdict,
        note_of(
            verdict,
            f"the gain of own minus shuffled from epoch {epochs[0]} to {epochs[1]} {stands}",
            f"holds when the head-mean gain is above 0 by its {_interval_words(gain, guard)}; "
            f"{shuffles} shuffles (vit.w_svm.shuffles) permute each head's selection over the images, at the first "
            "and the last snapshot; judged against the first snapshot because an untrained head's own selection is "
            "already its W's",
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
