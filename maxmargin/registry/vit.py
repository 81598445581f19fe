"""The ViT (Figures 6-7, Section 4; workflow/rules/vit.smk): its run, panels, baseline, pilot and recipe study; its
heads against their W-ATT-SVM solutions: :mod:`.vit_w_svm`."""

from __future__ import annotations

from maxmargin.registry.columns import cosine, count, described, flag, positive, real, text, unit
from maxmargin.registry.types import Column, File, Panel, Table

# The data sets a ViT run can be made from (vit.data.dataset), by the name the run records, as a reader reads them;
# the paper's is CIFAR-10 (Section 4): a figure made from any other says so in red (maxmargin/figures/vit/notes.py).
PAPER_DATASET = "cifar10"
DATASET_NAMES = {PAPER_DATASET: "CIFAR-10", "fashion_mnist": "Fashion-MNIST", "digits": "scikit-learn's digits"}

DATASET = described(text("dataset"), "the data set trained on (a stand-in for CIFAR-10 where it is missing)")
_ABSENT = (
    "Empty on the rows without the full pass (vit.train.full_pass: window); absent from runs made before it was "
    "measured"
)
# The theory's loss at the row's weights: one pass over the whole training set in eval mode (not the epoch's running
# mean over moving weights).
_FULL_PASS: tuple[Column, ...] = (
    described(
        real("train_loss_full", ge=0, nullable=True, required=False),
        f"mean cross-entropy over the training set at the epoch's weights (eval mode). {_ABSENT}",
    ),
    described(
        real("train_loss_max", ge=0, nullable=True, required=False),
        f"the largest per-sample cross-entropy over the training set at the epoch's weights. {_ABSENT}",
    ),
    described(
        real("train_acc_full", ge=0.0, le=1.0, nullable=True, required=False),
        f"accuracy on the training set at the epoch's weights. {_ABSENT}",
    ),
)
_SLICES = {"q": "W_Q", "k": "W_K"}
# Whether W stopped at a finite limit or stalled: its gradient, and Adam's per-element denominator against its eps.
_GRADIENTS: tuple[Column, ...] = tuple(
    column
    for name, matrix in _SLICES.items()
    for column in (
        described(
            real(f"grad_rms_{name}", ge=0, nullable=True, required=False),
            f"per-element RMS of the full training loss's gradient on the {matrix} slice of the last layer's fused "
            f"qkv weight. {_ABSENT}",
        ),
        described(
            real(f"adam_sqrt_v_rms_{name}", ge=0, nullable=True, required=False),
            f"per-element RMS of Adam's sqrt(v_hat) on the {matrix} slice (empty under SGD and before the first "
            f"step). {_ABSENT}",
        ),
        described(
            real(f"adam_below_eps_{name}", ge=0.0, le=1.0, nullable=True, required=False),
            f"share of the {matrix} slice's elements with sqrt(v_hat) below Adam's eps, where a step is about "
            f"lr g / eps (empty under SGD). {_ABSENT}",
        ),
    )
)
METRICS: tuple[Column, ...] = (
    described(count("epoch"), "epochs trained (0: the initialisation)"),
    described(
        real("train_loss", ge=0), "mean cross-entropy of the epoch's mini-batches (epoch 0: of the training set)"
    ),
    described(unit("train_acc"), "accuracy over the epoch's mini-batches (epoch 0: on the training set)"),
    described(unit("test_acc"), "accuracy on the test images after the epoch"),
    described(
        unit("soft_sparsity"),
        "mean over the probe images of (||s||_1^2/||s||_2^2)/T, s = last-layer [CLS] attention averaged over heads, "
        "[CLS] self-entry dropped and renormalised over the T patch tokens",
    ),
    described(unit("soft_sparsity_image"), "the same for the single Figure 6 test image"),
    described(
        real("w_frobenius", ge=0),
        "||sum_h W_Q,h^T W_K,h||_F of the last block's qkv weight (= ||W_Q^T W_K||_F), without the 1/sqrt(d_head) "
        "scale and the biases",
    ),
    described(
        cosine("w_cosine_previous", nullable=True),
        "cosine (Frobenius) between W of this epoch and of the previous one (empty at epoch 0)",
    ),
    described(cosine("w_cosine_final"), "cosine (Frobenius) between W of this epoch and of the last epoch"),
    described(
        unit("cls_self_attention"),
        "mean over the probe images of the last layer's head-averaged [CLS] attention to itself (dropped above)",
    ),
    described(
        real("cls_max_attention", ge=0.0, le=1.0, required=False),
        "the attention's saturation: each last-layer head's largest softmax probability in its [CLS] row (over all "
        "tokens), averaged over heads and probe images; 1 where every head selects one token (the theory's limit). "
        "Absent from runs made before it was measured",
    ),
    *_FULL_PASS,
    *_GRADIENTS,
    described(real("lr", ge=0), "the learning rate of the first parameter group after the epoch"),
    DATASET,
)
METRIC = {c.name: c for c in METRICS}  # the recipe study and the W-ATT-SVM probe measure some of them too
# Epoch 0 (the initialisation), every vit.train.eval_every epochs and the last: the row count follows from the set.
_EVALUATED = "0..vit.train.epochs/vit.train.eval_every"

PANELS: tuple[Panel, ...] = (
    Panel(
        name="fig6",
        target="fig6",
        family="vit",
        label="Figure 6",
        draw="draw_figure6",
        tables=("vit_metrics", "vit_baseline"),
        files=("vit_maps",),
        options=("vit.plots.fig6_epochs", "vit.guard.baseline_fraction", "vit.plots.settings_footer"),
        caption="Figure 6: a fixed test image (a) and the attention of the [CLS] token of the ViT's last layer, "
        "averaged over its heads, drawn over the patch grid at epochs {plots[fig6_epochs]}. [CLS]'s attention to "
        "itself is left out and the rest renormalised; the maps share one colour scale (one colour bar), and the "
        "number under each is its soft-sparsity d_nnz(s)/T. The paper (Section 4, 'Real experiments'): starting "
        "dense at initialisation, the attention concentrates on a few patches as training goes on. This run: "
        "{run[vit_fig6_concentrates]}. {run[vit_dataset]} On top: the "
        "final test accuracy against the linear baseline, or a red warning when the model did not learn (it must "
        "recover {guard[baseline_fraction]:g} of the baseline's gain over chance); below, in red, a warning when the "
        "data set is a stand-in for CIFAR-10. Numbers: ``runs/vit/vit_attention_maps.npz`` (the label under each "
        "map: ``soft_sparsity_image`` of ``tables/vit_metrics.csv``).",
        caption_blocks=("vit",),
    ),
    Panel(
        name="fig7",
        target="fig7",
        family="vit",
        label="Figure 7",
        draw="draw_figure7",
        tables=("vit_metrics", "vit_baseline"),
        options=("vit.guard.baseline_fraction", "vit.plots.settings_footer"),
        caption="Figure 7: (a) the paper's figure: red, the soft-sparsity d_nnz(s)/T = (||s||_1^2/||s||_2^2)/T of "
        "the last layer's head-averaged [CLS] attention over the T patch tokens, averaged over the probe images (1 = "
        "uniform, 1/T = one token), and in a lighter red the same for the single Figure 6 image; blue, the Frobenius "
        "norm of the last layer's combined key-query matrix W = sum_h W_Q,h^T W_K,h. The attention sparsifies as "
        "||W||_F grows, the behaviour the max-margin theory predicts (Section 4, 'Real experiments'); this run: "
        "{run[vit_sparsity]}. {run[vit_dataset]} Beyond the "
        "paper: (b) test accuracy per epoch against a linear baseline (logistic regression on the same training "
        "images' pixels), the learning bar ({guard[baseline_fraction]:g} of the baseline's gain over chance) and "
        "chance: {run[vit_learns]}; (c) where W is heading: its cosine with the final W and with the previous "
        "epoch's; W's direction counts as settled when it turns at most {guard[max_direction_angle]:g} degrees "
        "after {guard[direction_from]:.0%} of the epochs: {run[vit_w_direction]}. Numbers: "
        "``tables/vit_metrics.csv`` (settings, data, machine and times in ``vit_metrics.json``), "
        "``tables/vit_baseline.csv``.",
        caption_blocks=("vit",),
    ),
    Panel(
        name="vit_recipes",
        target="vit_recipes",
        family="vit",
        label="ViT recipe study",
        draw="draw_recipes",
        tables=("vit_recipes",),
        options=("vit.model.num_classes",),
        caption="The ViT recipe study: the same ViT (the study's model: {vit_recipes[model]}) trained under each "
        "recipe of the config's ``vit_recipes`` block. Left, test accuracy with chance as a dashed line; middle, the "
        "soft-sparsity of the last layer's [CLS] attention; right, ||W||_F of its combined key-query matrix "
        "relative to its initial value, against optimiser steps. A recipe whose accuracy stays at chance can still "
        "sparsify its attention and grow ||W||_F: only a recipe that learns makes Figure 7 mean something. Numbers: "
        "``vit_recipes.csv``; what the study showed and which recipe the paper config uses: ``docs/vit.md``.",
    ),
    Panel(
        name="fig7_w_svm",
        target="fig7",
        family="vit",
        label="Figure 7 (W-ATT-SVM)",
        draw="draw_w_svm",
        tables=("vit_w_svm",),
        options=("vit.guard.min_w_svm_gain",),
        caption="Companion of Figure 7, beyond the paper: does each head of the last layer turn toward its "
        "max-margin solution? For head h, Wt_h = scale [W_Q,h^T W_K,h; b_Q,h^T W_K,h] gives its key-dependent logits "
        "[z; 1]^T Wt_h x_t ([CLS] query input z, key inputs x_t, after the block's norm; the query-bias row "
        "b_Q,h^T W_K,h is kept where vit.w_svm.query_bias is true, here {w_svm[query_bias]}), and W_mm,h solves "
        "the W-ATT-SVM (Lemma 1: min ||W||_F s.t. [z_i; 1]^T W (x_io_i - "
        "x_it) >= 1) for the tokens o_i it selects on the first {w_svm[images]} probe images, at every snapshot of "
        "the run; a series measured at fewer than 3 epochs is drawn as its points, not joined, and the panel says "
        "so. (a) cos(Wt_h, W_mm,h) per head (hollow: a soft-margin solution) and its ceiling, the largest "
        "cosine a matrix of Wt_h's rank d_head can reach (dotted). (b) Head means against the matched nulls on the "
        "same epoch's inputs: random rank-d_head matrices against the SVMs of their own selections (band: +-1 sd "
        "over {w_svm[null_draws]} draws), the head against the SVMs of {w_svm[shuffles]} shuffled selections, and "
        "the head's share in the constraints' span; diamonds, the cosine with the nuclear-norm solution and "
        "squares, with the Frobenius one, both on the first {w_svm[nuclear_images]} images; the red bar, the bar of "
        "claim vit_w_svm_direction (the null + {guard[min_w_svm_gain]:g}). The verdicts: "
        "{run[vit_w_svm_direction]}; {run[vit_w_svm_specific]}; {run[vit_w_svm_nuclear]}. Numbers: "
        "``tables/vit_w_svm.csv``; docs/vit.md.",
        caption_blocks=("vit",),
    ),
    Panel(
        name="fig7_regime",
        target="fig7",
        family="vit",
        label="Figure 7 (regime)",
        draw="draw_regime",
        tables=("vit_metrics",),
        options=("vit.guard.regime_loss", "vit.guard.max_direction_angle", "vit.plots.settings_footer"),
        caption="Companion of Figure 7, beyond the paper: is the run in the regime the theory is about, where the "
        "training loss approaches zero and W / ||W||_F settles? (a) The training loss at each metrics row's weights "
        "(log scale): the largest per-sample loss, which claim vit_regime bounds by {guard[regime_loss]:g} (the "
        "dotted bar), and the mean; and the training accuracy (a run made before the full pass was logged shows the "
        "mean over each epoch's batches and says so). (b) "
        "The attention's saturation: each last-layer head's largest softmax probability in its [CLS] row, averaged "
        "over heads and probe images; 1 where every head selects one token (the limit of the theory's softmax), "
        "1 / (1 + T) for uniform attention. (c) The angle W turns between consecutive metrics rows, and its angle to "
        "the final W, with the {guard[max_direction_angle]:g} degrees of claim vit_w_direction. This run: "
        "{run[vit_regime]}; {run[vit_w_direction]}. {run[vit_dataset]} Numbers: ``tables/vit_metrics.csv`` "
        "(``train_loss_max``, ``train_loss_full``, ``train_acc_full``, ``cls_max_attention``, ``w_cosine_previous``, "
        "``w_cosine_final``).",
        caption_blocks=("vit",),
    ),
)

TABLES: tuple[Table, ...] = (
    Table(
        name="vit_run_metrics",
        family="vit",
        columns=METRICS,
        rule="vit_train",
        path="runs/vit/vit_metrics.csv",
        restates={"epoch": _EVALUATED},
        extensions=("csv", "json"),
        sidecar=False,  # its record is in the run's JSON (vit_metrics.json): Snakemake's cache keeps no other
    ),
    Table(
        name="vit_metrics",
        family="vit",
        columns=METRICS,
        rule="vit_metrics_table",
        restates={"epoch": _EVALUATED},
        label="ViT metrics",
        caption="The ViT run of Figures 6-7 (Section 4), one row per measured epoch (epoch 0, every "
        "{train[eval_every]} and the last of {train[epochs]}): what the figures draw, on the data set it names.",
        caption_blocks=("vit",),
        claims=(
            "vit_sparsity",
            "vit_learns",
            "vit_w_direction",
            "vit_fig6_concentrates",
            "vit_regime",
            "vit_regime_markers",
        ),
        extensions=("csv", "json"),
    ),
    Table(
        name="vit_baseline",
        family="vit",
        columns=(
            DATASET,
            described(positive("n_train"), "training images the logistic regression is fit on (the ViT's)"),
            described(positive("n_test"), "test images it is scored on (the ViT's)"),
            described(positive("n_features"), "pixels per image, standardised (one channel of a grey image)"),
            described(unit("chance"), "1 / the number of classes"),
            described(unit("train_acc"), "its accuracy on the training images"),
            described(
                unit("test_acc"), "its accuracy on the test images, which sets the ViT's learning bar (``vit_learns``)"
            ),
            described(count("n_iter"), "lbfgs iterations taken"),
            described(flag("converged"), "whether lbfgs stopped before ``vit.baseline.max_iter`` iterations"),
        ),
        rule="vit_baseline",
        rows=("1",),
        label="ViT linear baseline",
        caption="The learning bar of claim ``vit_learns``: logistic regression on the pixels of the ViT's own "
        "training images ({baseline[max_iter]} lbfgs iterations at C = {baseline[C]:g}).",
        caption_blocks=("vit",),
        claims=("vit_sparsity", "vit_learns"),
    ),
    Table(
        name="vit_pilot",
        family="vit",
        columns=(
            DATASET,
            described(text("device"), "the GPU's name, or the CPU's model"),
            described(text("dtype"), "bfloat16 (``vit.train.bf16``) or float32"),
            described(flag("compiled"), "whether the model ran compiled (``vit.train.compile``)"),
            described(positive("epochs"), "epochs the pilot trained"),
            described(real("images_per_s", gt=0), "training images per second of the training step alone"),
            described(
                real("epoch_seconds", gt=0),
                "mean seconds of a trained epoch (training, test pass, probe, checkpoint write), the first left out "
                "when there are two or more (it carries the compilation)",
            ),
            described(
                real("projected_total_hours", gt=0),
                "hours the configured run would take: epoch 0's measurement plus ``epoch_seconds`` per epoch",
            ),
            described(
                real("peak_memory_mb", ge=0),
                "peak memory in MiB: the GPU allocator's peak, or the process's resident high-water mark on a CPU",
            ),
            described(real("first_train_loss", ge=0), "``train_loss`` of the first trained epoch"),
            described(real("last_train_loss", ge=0), "``train_loss`` of the last epoch"),
            described(unit("test_acc"), "test accuracy after the last epoch"),
        ),
        rule="vit_pilot_run",
        rows=("1",),
        target="vit_pilot",
    ),
    Table(
        name="vit_recipe_run",
        family="vit",
        columns=(
            RECIPE := (
                described(text("recipe"), "the recipe's name (``vit_recipes.recipes``)"),
                described(
                    text("optimizer", ("sgd", "adam", "adamw")), "the optimiser: sgd (with momentum), adam or adamw"
                ),
                described(real("lr", gt=0), "the base learning rate"),
                described(real("warmup_epochs", ge=0), "epochs of linear warm-up"),
                described(
                    text("schedule", ("constant", "cosine")),
                    "the rate after the warm-up: constant, or cosine decay to 0",
                ),
                described(
                    real("weight_decay", ge=0), "weight decay (none on norms, biases, the position embedding and [CLS])"
                ),
                described(real("grad_clip", ge=0), "the gradient norm clipped to (0: no clipping)"),
                described(
                    count("lr_base_width"),
                    "muP's base width: the hidden matrices learn at lr * lr_base_width / embed_dim (0: off)",
                ),
                described(positive("embed_dim"), "the ViT's width"),
                described(positive("depth"), "its blocks"),
                described(positive("patch_size"), "the side of its patches in pixels"),
                described(positive("batch_size"), "images per optimiser step"),
                described(positive("n_train"), "training images"),
                METRIC["epoch"],
                described(count("step"), "optimiser steps taken by the end of the epoch"),
                METRIC["train_loss"],
                METRIC["test_acc"],
                METRIC["soft_sparsity"],
                METRIC["w_frobenius"],
                METRIC["w_cosine_previous"],
                DATASET,
            )
        ),
        rule="vit_recipe_train",
        path="runs/vit_recipes/{recipe}.csv",
        values={"recipe": "vit_recipes.recipes.name"},
        restates={"recipe": "{recipe}"},
        target="vit_recipes",
    ),
    Table(
        name="vit_recipes",
        family="vit",
        columns=RECIPE,
        rule="vit_recipes_table",
        restates={"recipe": "vit_recipes.recipes.name"},
    ),
)

# The data manifest of each config block that trains on images (vit, vit_recipes; rule vit_data), and each run's
# checkpoint by the rule that trains it: not a declared output, so that a killed job keeps it (a checkpoint of other
# code is kept aside beside it, maxmargin/experiments/vit/checkpoint.py). Paths under the results root.
DATA_MANIFEST = "runs/data/{block}.json"
CHECKPOINTS = {
    "vit_train": "runs/vit/checkpoint.pt",
    "vit_pilot_run": "runs/vit_pilot/checkpoint.pt",
    "vit_recipe_train": "runs/vit_recipes/{recipe}.pt",
}


FILES: tuple[File, ...] = (
    File(name="vit_data_manifest", family="vit", path=DATA_MANIFEST.format(block="vit"), rule="vit_data"),
    # its sha256 travels in the run's JSON (vit_metrics.json, "maps_sha256"): Snakemake's cache keeps no sidecar
    File(name="vit_maps", family="vit", path="runs/vit/vit_attention_maps.npz", rule="vit_train", record="maps_sha256"),
    # the model at every snapshot epoch (vit.train.snapshot_every), which rule vit_probe reads
    File(
        name="vit_snapshots",
        family="vit",
        path="runs/vit/vit_snapshots.pt",
        rule="vit_train",
        record="snapshots_sha256",
    ),
)
