# ViT on CIFAR-10 (Section 4 "Real experiments"): [CLS] attention maps (Figure 6), soft-sparsity and ||W||_F (Figure 7).
# The quick scale (default.yaml) runs on a CPU; workflow/config/paper.yaml is the paper scale (one GPU).

from maxmargin.experiments.vit_study import recipe_config

VIT = config["vit"]
RECIPES = [recipe["name"] for recipe in config["vit_recipes"]["recipes"]]
VIT_RUN = results_path("runs/vit")
VIT_FIGURES = {
    fig: [f"{RESULTS}/figures/{fig}.{ext}" for ext in ("pdf", "png")]
    for fig in ("fig6", "fig7")
}

if max(VIT["plots"]["fig6_epochs"]) > VIT["train"]["epochs"]:
    raise ValueError(
        f"vit.plots.fig6_epochs {VIT['plots']['fig6_epochs']} goes past vit.train.epochs = {VIT['train']['epochs']}"
    )

ALL_TARGETS += [f for files in VIT_FIGURES.values() for f in files] + [
    results_path("tables/vit_metrics.csv"),
    results_path("tables/vit_metrics.json"),
    f"{VIT_RUN}/attention_maps.npz",
]


rule vit_train:
    """Train the ViT, logging test accuracy, soft-sparsity, ||W||_F and the Figure 6 maps after every epoch.

    The checkpoint (not a declared output, so a failed or killed job keeps it) lets a rerun resume.
    """
    output:
        metrics=results_path("tables/vit_metrics.csv"),
        sidecar=results_path("tables/vit_metrics.json"),
        maps=f"{VIT_RUN}/attention_maps.npz",
    log:
        results_path("logs/vit_train/vit.log"),
    benchmark:
        results_path("benchmarks/vit_train/vit.tsv")
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=VIT["resources"]["gpu"],
        runtime=VIT["resources"]["runtime"],
        mem_mb=VIT["resources"]["mem_mb"],
    params:
        settings={key: VIT[key] for key in ("model", "data", "train", "probe", "guard")},
        checkpoint=f"{VIT_RUN}/checkpoint.pt",
    script:
        "../../scripts/vit_train.py"


rule vit_fig6:
    """Figure 6: the fixed test image and its [CLS] attention map at the configured epochs."""
    input:
        maps=rules.vit_train.output.maps,
        sidecar=rules.vit_train.output.sidecar,
    output:
        pdf=VIT_FIGURES["fig6"][0],
        png=report(
            VIT_FIGURES["fig6"][1],
            caption="../report/fig6.rst",
            category="ViT on CIFAR-10",
        ),
    log:
        results_path("logs/vit_fig6/fig6.log"),
    benchmark:
        results_path("benchmarks/vit_fig6/fig6.tsv")
    conda:
        "../envs/torch.yaml"
    params:
        epochs=VIT["plots"]["fig6_epochs"],
    script:
        "../../scripts/vit_plot.py"


rule vit_fig7:
    """Figure 7: soft-sparsity (left axis) and ||W||_F (right axis) against epoch."""
    input:
        metrics=rules.vit_train.output.metrics,
        sidecar=rules.vit_train.output.sidecar,
    output:
        pdf=VIT_FIGURES["fig7"][0],
        png=report(
            VIT_FIGURES["fig7"][1],
            caption="../report/fig7.rst",
            category="ViT on CIFAR-10",
        ),
    log:
        results_path("logs/vit_fig7/fig7.log"),
    benchmark:
        results_path("benchmarks/vit_fig7/fig7.tsv")
    conda:
        "../envs/torch.yaml"
    script:
        "../../scripts/vit_plot.py"


rule fig6:
    input:
        VIT_FIGURES["fig6"],


rule fig7:
    input:
        VIT_FIGURES["fig7"],


rule vit_pilot:
    """A few epochs of the configured scale: throughput, memory and the projected time of the full run.

    Its own checkpoint (deleted afterwards) keeps the real run's untouched.
    """
    output:
        results_path("tables/vit_pilot.csv"),
    log:
        results_path("logs/vit_pilot/pilot.log"),
    benchmark:
        results_path("benchmarks/vit_pilot/pilot.tsv")
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=VIT["resources"]["gpu"],
        mem_mb=VIT["resources"]["mem_mb"],
    params:
        settings={key: VIT[key] for key in ("model", "data", "train", "probe", "guard")},
        pilot_epochs=VIT["pilot"]["epochs"],
        checkpoint=results_path("runs/vit_pilot/checkpoint.pt"),
    script:
        "../../scripts/vit_pilot.py"


rule vit_recipe_train:
    """One recipe of the study: the ViT (the CPU proxy by default) trained under one optimiser recipe."""
    output:
        results_path("runs/vit_recipes/{recipe}.csv"),
    log:
        results_path("logs/vit_recipe_train/{recipe}.log"),
    benchmark:
        results_path("benchmarks/vit_recipe_train/{recipe}.tsv")
    wildcard_constraints:
        recipe="|".join(RECIPES),
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=VIT["resources"]["gpu"],
        runtime=VIT["resources"]["runtime"],
        mem_mb=VIT["resources"]["mem_mb"],
    params:
        settings=lambda wildcards: recipe_config(
            VIT, config["vit_recipes"], wildcards.recipe
        ),
        checkpoint=lambda wildcards: results_path(
            f"runs/vit_recipes/{wildcards.recipe}.pt"
        ),
    script:
        "../../scripts/vit_recipe_train.py"


rule vit_recipes_table:
    """The recipe study's table: every recipe's metrics per epoch."""
    input:
        expand(results_path("runs/vit_recipes/{recipe}.csv"), recipe=RECIPES),
    output:
        results_path("tables/vit_recipes.csv"),
    log:
        results_path("logs/vit_recipes_table/vit_recipes.log"),
    benchmark:
        results_path("benchmarks/vit_recipes_table/vit_recipes.tsv")
    conda:
        "../envs/torch.yaml"
    script:
        "../../scripts/vit_recipes_table.py"


rule vit_recipes_plot:
    """Test accuracy, soft-sparsity and ||W||_F against epoch, one line per recipe."""
    input:
        rules.vit_recipes_table.output[0],
    output:
        pdf=results_path("figures/vit_recipes.pdf"),
        png=report(
            results_path("figures/vit_recipes.png"),
            caption="../report/vit_recipes.rst",
            category="ViT on CIFAR-10",
        ),
    log:
        results_path("logs/vit_recipes_plot/vit_recipes.log"),
    benchmark:
        results_path("benchmarks/vit_recipes_plot/vit_recipes.tsv")
    conda:
        "../envs/torch.yaml"
    script:
        "../../scripts/vit_recipes_plot.py"


rule vit_recipes:
    input:
        rules.vit_recipes_plot.output,
