# ViT on CIFAR-10 (Section 4 "Real experiments"): [CLS] attention maps (Figure 6), soft-sparsity and ||W||_F (Figure 7).
# The quick scale (default.yaml) runs on a CPU; workflow/config/paper.yaml is the paper scale (one GPU).

# Torch-free (tests/test_layers.py: parsing the rule files imports no heavy library).
from maxmargin.experiments.vit.settings import code_fingerprint, recipe_config

VIT = config["vit"]
RECIPES = [recipe["name"] for recipe in config["vit_recipes"]["recipes"]]
VIT_RUN = results_path("runs/vit")

if max(VIT["plots"]["fig6_epochs"]) > VIT["train"]["epochs"]:
    raise ValueError(
        f"vit.plots.fig6_epochs {VIT['plots']['fig6_epochs']} goes past vit.train.epochs = {VIT['train']['epochs']}"
    )

VIT_SETTINGS = {key: VIT[key] for key in ("model", "data", "train", "probe", "guard")}

# The figures and tables are registered (common.smk puts them in `all`); here the run behind them.
ALL_TARGETS += [
    f"{VIT_RUN}/vit_metrics.csv",
    f"{VIT_RUN}/vit_metrics.json",
    f"{VIT_RUN}/vit_attention_maps.npz",
]


rule vit_train:
    """Train the ViT, logging test accuracy, soft-sparsity, ||W||_F and the Figure 6 maps after every epoch.

    The checkpoint (not a declared output, so a failed or killed job keeps it) lets a rerun resume. With
    `vit.cache` (paper.yaml) the run is cacheable between work directories (`--cache` with SNAKEMAKE_OUTPUT_CACHE
    set; docs/vit.md): its outputs form one multiext, as Snakemake's cache requires, and `code` puts the ViT
    package's source into the cache key. No `benchmark:`, which Snakemake forbids on a cacheable rule: the run's
    times are the metrics' train_seconds / epoch_seconds, and its log has a line per epoch.
    """
    output:
        multiext(
            f"{VIT_RUN}/vit",
            metrics="_metrics.csv",
            sidecar="_metrics.json",
            maps="_attention_maps.npz",
        ),
    log:
        results_path("logs/vit_train/vit.log"),
    cache: VIT["cache"]
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=VIT["resources"]["gpu"],
        runtime=VIT["resources"]["runtime"],
        mem_mb=VIT["resources"]["mem_mb"],
        # 1 under --forcerun vit_train or --forceall: train again. 0: a finished checkpoint of the same settings
        # restores outputs lost after training (scripts/vit_train.py). A resource, not a param: no rerun trigger.
        retrain=lambda wildcards: int(
            workflow.dag_settings.forceall
            or "vit_train" in workflow.dag_settings.forcerun
        ),
    params:
        settings=VIT_SETTINGS,
        checkpoint=f"{VIT_RUN}/checkpoint.pt",
        code=code_fingerprint(),
    script:
        "../../scripts/vit_train.py"


rule vit_metrics_table:
    """The run's metrics table and its JSON sidecar, copied byte for byte into the tables folder."""
    input:
        metrics=rules.vit_train.output.metrics,
        sidecar=rules.vit_train.output.sidecar,
    output:
        metrics=table_path("vit_metrics", "csv"),
        sidecar=table_path("vit_metrics", "json"),
    log:
        results_path("logs/vit_metrics_table/vit_metrics.log"),
    benchmark:
        results_path("benchmarks/vit_metrics_table/vit_metrics.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    script:
        "../../scripts/vit_metrics_table.py"


rule vit_fig6:
    """Figure 6: the fixed test image and its [CLS] attention map at the configured epochs."""
    input:
        maps=rules.vit_train.output.maps,
        metrics=rules.vit_metrics_table.output.metrics,
        sidecar=rules.vit_metrics_table.output.sidecar,
    output:
        pdf=panel_files("fig6")[0],
        png=report(
            panel_files("fig6")[1],
            **panel_report("vit", "../report/fig6.rst", panel="fig6"),
        ),
    log:
        results_path("logs/vit_fig6/fig6.log"),
    benchmark:
        results_path("benchmarks/vit_fig6/fig6.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        epochs=VIT["plots"]["fig6_epochs"],
        learned_margin=VIT["guard"]["learned_margin"],
    script:
        "../../scripts/vit_fig6.py"


rule vit_fig7:
    """Figure 7: soft-sparsity (left axis) and ||W||_F (right axis) against epoch."""
    input:
        metrics=rules.vit_metrics_table.output.metrics,
        sidecar=rules.vit_metrics_table.output.sidecar,
    output:
        pdf=panel_files("fig7")[0],
        png=report(
            panel_files("fig7")[1],
            **panel_report("vit", "../report/fig7.rst", panel="fig7"),
        ),
    log:
        results_path("logs/vit_fig7/fig7.log"),
    benchmark:
        results_path("benchmarks/vit_fig7/fig7.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        learned_margin=VIT["guard"]["learned_margin"],
    script:
        "../../scripts/vit_fig7.py"


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
        settings=VIT_SETTINGS,
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
        table_path("vit_recipes"),
    log:
        results_path("logs/vit_recipes_table/vit_recipes.log"),
    benchmark:
        results_path("benchmarks/vit_recipes_table/vit_recipes.tsv")
    localrule: True
    conda:
        "../envs/torch.yaml"
    script:
        "../../scripts/vit_recipes_table.py"


rule vit_recipes_plot:
    """Test accuracy, soft-sparsity and ||W||_F against epoch, one line per recipe."""
    input:
        rules.vit_recipes_table.output[0],
    output:
        pdf=panel_files("vit_recipes")[0],
        png=report(
            panel_files("vit_recipes")[1],
            **panel_report("vit", "../report/vit_recipes.rst", panel="vit_recipes"),
        ),
    log:
        results_path("logs/vit_recipes_plot/vit_recipes.log"),
    benchmark:
        results_path("benchmarks/vit_recipes_plot/vit_recipes.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        num_classes=VIT["model"]["num_classes"],
    script:
        "../../scripts/vit_recipes_plot.py"


rule docs_vit_recipes:
    """The recipe study's numbers for the docs (docs/results/vit_recipes.md, committed): generated, never typed.

    The torch env: the table's code lives beside the study's (maxmargin.experiments.vit_study, which imports torch).
    """
    input:
        rules.vit_recipes_table.output[0],
    output:
        "docs/results/vit_recipes.md",
    log:
        results_path("logs/docs_vit_recipes/vit_recipes.log"),
    benchmark:
        results_path("benchmarks/docs_vit_recipes/vit_recipes.tsv")
    localrule: True
    conda:
        "../envs/torch.yaml"
    script:
        "../../scripts/docs_vit_recipes.py"
