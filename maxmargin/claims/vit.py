"""Claims of the ViT (Section 4, Figures 6-7), read from vit_metrics.csv and vit_baseline.csv."""

from __future__ import annotations

from maxmargin.claims.base import Claim, Config, Measurement, Tables, verdict_of
from maxmargin.core.vit_learning import Learned, learned, sparsity_effect, w_direction


def _vit_learned(t: Tables, cfg: Config) -> Learned:
    """The ViT's final test accuracy against the linear baseline's (claim ``vit_learns``)."""
    acc = float(t["vit_metrics"].sort_values("epoch")["test_acc"].iloc[-1])
    baseline = float(t["vit_baseline"]["test_acc"].iloc[0])
    guard = cfg["vit"]["guard"]
    return learned(acc, cfg["vit"]["model"]["num_classes"], baseline, guard["baseline_fraction"])


def _data_note(t: Tables) -> str:
    dataset = str(t["vit_metrics"]["dataset"].iloc[-1])
    note = f"dataset: {dataset}, {int(t['vit_metrics']['epoch'].max())} epochs"
    if "cifar" not in dataset.lower():
        note += " (a stand-in for the paper's CIFAR-10, which is not available here)"
    return note


def _vit_learns(t: Tables, cfg: Config) -> Measurement:
    verdict = _vit_learned(t, cfg)
    b = t["vit_baseline"].iloc[0]
    return (
        verdict.describe(),
        verdict_of(verdict.learned),
        f"holds when the accuracy is >= chance + vit.guard.baseline_fraction = {verdict.fraction:g} of the linear "
        f"baseline's gain = {verdict.bar:.3f}; baseline: logistic regression on the pixels of the same "
        f"{int(b['n_train'])} training images ({int(b['n_iter'])} iterations); {_data_note(t)}",
    )


def _vit(t: Tables, cfg: Config) -> Measurement:
    """Sparsity falls and ||W||_F grows by at least the configured effect (``vit.guard``), in a model that learned."""
    m = t["vit_metrics"].sort_values("epoch")
    first, last = m.iloc[0], m.iloc[-1]
    effect = sparsity_effect(m["soft_sparsity"], m["w_frobenius"], cfg["vit"]["guard"])
    model_learned = _vit_learned(t, cfg).learned
    note = f"{_data_note(t)}; {effect.describe()} (vit.guard)"
    if not effect.large_enough:
        note += "; the effect is smaller than the configured minimum, so it does not count"
    if effect.large_enough and not model_learned:
        note += "; the trend is there but the model did not learn (claim vit_learns), so it does not count"
    return (
        f"soft-sparsity {first.soft_sparsity:.3f} -> {last.soft_sparsity:.3f}, ||W||_F {first.w_frobenius:.3g} -> "
        f"{last.w_frobenius:.3g}; Spearman(sparsity, ||W||_F) {effect.spearman:.2f}",
        verdict_of(effect.large_enough and model_learned),
        note,
    )


def _w_direction(t: Tables, cfg: Config) -> Measurement:
    """The direction of W settles: the angle between W at ``vit.guard.direction_from`` of training and the final W."""
    m = t["vit_metrics"].sort_values("epoch")
    d = w_direction(m["epoch"], m["w_cosine_final"], cfg["vit"]["guard"])
    return (
        d.describe(),
        verdict_of(d.settled),
        "the theory is about W / ||W||_F; holds when W turns at most vit.guard.max_direction_angle degrees over the "
        f"last {1 - cfg['vit']['guard']['direction_from']:.0%} of the epochs (vit.guard.direction_from); "
        + _data_note(t),
    )


def _fig6_concentrates(t: Tables, cfg: Config) -> Measurement:
    """The Figure 6 image's attention concentrates as training goes on: its soft-sparsity, at the epochs Figure 6
    draws (``vit.plots.fig6_epochs``), never rises from one drawn epoch to the next."""
    m = t["vit_metrics"].set_index("epoch")
    epochs = [e for e in cfg["vit"]["plots"]["fig6_epochs"] if e in m.index]
    s = m.loc[epochs, "soft_sparsity_image"].to_numpy(dtype=float)
    rises = [f"{a} -> {b}" for a, b, x, y in zip(epochs, epochs[1:], s, s[1:], strict=False) if y > x]
    lowest = epochs[int(s.argmin())]
    return (
        "soft-sparsity of the Figure 6 image at epochs "
        + ", ".join(f"{e}: {x:.3f}" for e, x in zip(epochs, s, strict=True))
        + f"; lowest at epoch {lowest}"
        + (f"; rises at {', '.join(rises)}" if rises else "; never rises"),
        verdict_of(not rises and len(epochs) > 1),
        "holds when the image's soft-sparsity d_nnz(s)/T never rises from one epoch Figure 6 draws (vit.plots."
        f"fig6_epochs) to the next; the paper shows the maps of one CIFAR-10 image only; {_data_note(t)}",
    )


def _w_svm_direction(t: Tables, cfg: Config) -> Measurement:
    """Beyond the paper: the last layer's heads turn toward their W-ATT-SVM solutions (table ``vit_w_svm``): the
    head-mean cosine of the last epoch exceeds the initialisation's by ``vit.guard.min_w_svm_gain`` and rises over
    the measured epochs (Spearman at least ``vit.guard.min_w_svm_spearman``)."""
    from scipy.stats import spearmanr

    table, guard = t["vit_w_svm"], cfg["vit"]["guard"]
    if table.empty:
        return "not measured (vit.probe.w_svm_every is 0)", "inconclusive", "no W-ATT-SVM rows"
    mean = table.groupby("epoch")["cosine"].mean().sort_index()
    last = table[table["epoch"] == mean.index[-1]].sort_values("head")
    gain = float(mean.iloc[-1] - mean.iloc[0])
    rho = float(spearmanr(mean.index, mean.to_numpy()).statistic) if len(mean) > 2 else float("nan")
    ok = gain >= guard["min_w_svm_gain"] and rho >= guard["min_w_svm_spearman"]
    per_head = ", ".join(f"{a:.2f} -> {b:.2f}" for a, b in zip(last["cosine_init"], last["cosine"], strict=True))
    soft = int((~table["hard_margin"].astype(bool)).sum())
    return (
        f"head-mean cos(Wt_h, W_mm,h) {mean.iloc[0]:.3f} at initialisation -> {mean.iloc[-1]:.3f} at epoch "
        f"{int(mean.index[-1])} (per head {per_head}); Spearman(epoch, cosine) {rho:.2f}",
        verdict_of(ok),
        f"holds when the gain is >= vit.guard.min_w_svm_gain = {guard['min_w_svm_gain']:g} and the Spearman >= "
        f"vit.guard.min_w_svm_spearman = {guard['min_w_svm_spearman']:g}; Frobenius W-ATT-SVM of the tokens each "
        f"head selects on {int(table['n_constraints'].iloc[0])} constraints; {soft} of {len(table)} solutions "
        f"soft-margin; dataset: {table['dataset'].iloc[-1]}",
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "vit_sparsity",
        "The [CLS] attention sparsifies as ||W||_F grows during training",
        "Section 4, Fig 6-7",
        "sparsity falls, ||W||_F grows (by the vit.guard minimum, in a model that learned)",
        _vit,
    ),
    Claim(
        "vit_learns",
        "The ViT of Figures 6-7 learns: test accuracy well above chance, against a linear baseline",
        "Section 4 (implicit)",
        "far above chance",
        _vit_learns,
    ),
    Claim(
        "vit_w_direction",
        "The direction of the last layer's key-query matrix W settles during training (beyond the paper)",
        "Section 4, Theorems 1-3 (direction of W)",
        "W / ||W||_F converges",
        _w_direction,
    ),
    Claim(
        "vit_fig6_concentrates",
        "The [CLS] attention of the Figure 6 image concentrates on a few patches as training goes on",
        "Section 4, Fig 6",
        "sparser at every epoch drawn",
        _fig6_concentrates,
    ),
    Claim(
        "vit_w_svm_direction",
        "Each head of the last layer turns toward its W-ATT-SVM (max-margin) solution during training (beyond the "
        "paper)",
        "Lemma 1, Theorems 1-3 (W converges in direction to W_mm)",
        "cos(Wt_h, W_mm,h) rises well above its value at initialisation",
        _w_svm_direction,
    ),
)
