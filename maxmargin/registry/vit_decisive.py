"""The decisive experiment on a finished ViT run's snapshots (beyond the paper; rules vit_decisive_ray and
vit_decisive_gd, :mod:`maxmargin.experiments.vit_decisive`): the ray test, GD on W with the tokens frozen, and the
paper's one-layer model on the head's real tokens."""

from __future__ import annotations

from maxmargin.registry.columns import cosine, count, described, flag, positive, real, text, unit
from maxmargin.registry.types import Panel, Table
from maxmargin.registry.vit import DATASET, METRIC

# The on-demand target of both parts; a run's ``all``, claims and page include those of ``vit.decisive.parts``.
TARGET = "vit_decisive"
RAY_DIRECTIONS = ("trained", "max_margin")
MODELS = ("frozen_vit", "one_layer")
ARMS = ("gd", "normalized_gd")
_EPOCH = described(
    METRIC["epoch"], "the snapshot's epoch (``vit.decisive.at``: the last snapshot at or before each fraction)"
)
_HEAD = described(count("head"), "the head h of the last layer")

TABLES: tuple[Table, ...] = (
    Table(
        name="vit_decisive_ray",
        family="vit",
        columns=(
            _EPOCH,
            described(
                text("direction", RAY_DIRECTIONS),
                "the ray: ``trained``, c W_h, head h's key-query matrix Wt_h with its query-bias row; "
                "``max_margin``, c W_mm,h ||W_h||_F / ||W_mm,h||_F, W_mm,h the W-ATT-SVM of the tokens W_h selects "
                "on every training image",
            ),
            described(
                text("heads", ("one", "all")),
                "``one``: head ``head`` alone is scaled, the others at their trained W; ``all``: every head",
            ),
            described(count("head", nullable=True), "the head scaled (empty where all heads are)"),
            described(real("c", gt=0), "the scale c (``vit.decisive.ray``: a geometric grid, c = 1 included)"),
            described(
                real("loss", ge=0),
                "the training loss: the network's mean cross-entropy on every training image, recomputed with only "
                "the last layer's key-query matrices changed (its inputs as trained)",
            ),
            described(unit("accuracy"), "the network's accuracy on the training images there"),
            described(
                unit("saturation"),
                "the scaled heads' largest [CLS] softmax probability, averaged over them and the images (1: hard "
                "attention)",
            ),
            described(real("w_frobenius", ge=0), "||c D||_F over the scaled heads"),
            described(
                cosine("cosine"),
                "cos(W_h, W_mm,h) of the scaled head (their mean where all), on ``n_images`` training images",
            ),
            described(flag("hard_margin"), "whether every W_mm,h of the row meets every margin"),
            described(positive("n_images"), "the training images the loss and the W-ATT-SVM are on (all of them)"),
            DATASET,
        ),
        rule="vit_decisive_ray",
        target=TARGET,
        label="ViT ray test",
        caption="Beyond the paper: the training loss of the run's network along the ray of each last-layer head's "
        "own key-query matrix and along its max-margin ray (the W-ATT-SVM of its selection at the head's norm), "
        "each head alone and all heads together, at the snapshots of ``vit.decisive.at`` (rule vit_decisive_ray, "
        "target vit_decisive; docs/vit.md). The theory's premise, locally-optimal selections, makes the loss fall "
        "along the max-margin ray.",
        caption_blocks=("vit",),
        claims=("vit_ray_precondition",),
    ),
    Table(
        name="vit_decisive_gd",
        family="vit",
        columns=(
            _EPOCH,
            described(
                text("model", MODELS),
                "``frozen_vit``: the network with every parameter fixed but the last layer's W_h, its tokens "
                "frozen, loss on every training image; ``one_layer``: the paper's f(X) = v^T X^T softmax(X W^T a) "
                "on the head's real last-layer tokens, v fixed, binary labels, logistic loss "
                "(``vit.decisive.one_layer``)",
            ),
            described(
                text("arm", ARMS),
                "``gd``: W - lr grad L; ``normalized_gd``: W - lr grad L / ||grad L||_F (the frozen ViT: the norm "
                "over all heads; the one-layer model: each head's own)",
            ),
            described(count("step"), "the GD step (logged at geometric steps)"),
            _HEAD,
            described(
                real("loss", ge=0),
                "the loss at the step: the frozen network's cross-entropy (the same for every head), or the head's "
                "logistic loss in the one-layer model",
            ),
            described(real("w_frobenius", ge=0), "||W_h||_F"),
            described(unit("saturation"), "the head's largest [CLS] softmax probability, averaged over the images"),
            described(
                cosine("cosine"),
                "cos(W_h, W_mm(o(t))), the W-ATT-SVM of the tokens o(t) W_h selects at the step, on ``n_images`` "
                "images",
            ),
            described(
                cosine("cosine_final"),
                "cos(W_h, W_mm(o(T))), the W-ATT-SVM of its selection at the last logged step, on the same images",
            ),
            described(unit("selection_final"), "the share of the images whose selected token is the final one"),
            described(flag("hard_margin"), "whether W_mm(o(t)) meets every margin"),
            described(
                unit("locally_optimal", nullable=True),
                "the one-layer model: the share of images whose selected token beats the scores gamma_it = Y_i v^T "
                "x_it of its SVM-neighbours (Definition 2); empty for the frozen ViT (no scores)",
            ),
            described(
                unit("top_score", nullable=True),
                "the one-layer model: the share of images whose selected token has the top score (Definition 1's "
                "optimal token); empty for the frozen ViT",
            ),
            described(positive("n_images"), "the images the loss and the W-ATT-SVM are on"),
            DATASET,
        ),
        rule="vit_decisive_gd",
        target=TARGET,
        label="ViT GD on W, tokens frozen",
        caption="Beyond the paper: GD (plain and normalised) on the last layer's key-query matrices alone, the run's "
        "tokens frozen, in the network and in the paper's one-layer model on the head's real tokens, at the "
        "snapshots of ``vit.decisive.at`` (rule vit_decisive_gd, target vit_decisive; docs/vit.md): does W's "
        "direction converge to the W-ATT-SVM of its selections?",
        caption_blocks=("vit",),
        claims=("vit_frozen_converges", "vit_one_layer_converges"),
    ),
)

PANELS: tuple[Panel, ...] = (
    Panel(
        name="vit_decisive",
        target=TARGET,
        family="vit",
        label="The decisive experiment",
        draw="draw_decisive",
        tables=("vit_decisive_ray", "vit_decisive_gd"),
        caption="Beyond the paper, from the run's last snapshot of ``vit.decisive.at``, never retraining: do the "
        "trained heads meet the theory's premise, and does W converge in direction to the W-ATT-SVM of its "
        "selections once the tokens cannot move? (a) The training loss (cross-entropy on every training image, only "
        "the last layer's key-query matrices changed) along c W_h (solid) and along c W_mm,h at the norm of W_h "
        "(dashed), all heads scaled together (red) and each head alone (grey), c from {decisive[ray][low]:g} to "
        "{decisive[ray][high]:g}: {run[vit_ray_precondition]}. (b) GD on the last layer's W_h alone, every other "
        "parameter fixed, {decisive[frozen][steps]} steps of plain GD (step {decisive[frozen][lr]:g}) and of "
        "normalised GD (step {decisive[frozen][normalized_lr]:g}): the head-mean cosine with the W-ATT-SVM of the "
        "current selection (solid) and of the final one (dotted) against the head-mean Frobenius norm of W_h: "
        "{run[vit_frozen_converges]}. (c) The same in the paper's one-layer model on the head's real tokens "
        "({decisive[one_layer][images]} training images, Y = +1 for the classes "
        "{decisive[one_layer][positive_classes]}, v fixed: each head's logistic separator of its attention "
        "features at the trained W), {decisive[one_layer][steps]} steps: {run[vit_one_layer_converges]}. Numbers: "
        "``tables/vit_decisive_ray.csv``, ``tables/vit_decisive_gd.csv``; docs/vit.md.",
        caption_blocks=("vit",),
    ),
)
