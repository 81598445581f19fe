# ViT on CIFAR-10 (Section 4 "Real experiments"): [CLS] attention maps (Figure 6), soft-sparsity and ||W||_F (Figure 7).
# The quick scale (default.yaml) runs on a CPU; workflow/config/paper.yaml is the paper scale (one GPU).

# Torch-free (tests/test_layers.py: parsing the rule files imports no heavy library).
from maxmargin.experiments.vit.settings import (
    code_fingerprint,
    recipe_config,
)
from maxmargin.experiments.vit_run_snapshots import probe_fingerprint
from maxmargin.experiments.vit.sources import data_plan
from maxmargin.registry.reads import SOURCE_KEYS

VIT = config["vit"]
RECIPES = [recipe["name"] for recipe in config["vit_recipes"]["recipes"]]
# The run's outputs, from the registry: its metrics table (CSV and JSON) and the Figure 6 maps, one multiext.
VIT_OUTPUTS = {
    "metrics": table_path("vit_run_metrics", "csv"),
    "sidecar": table_path("vit_run_metrics", "json"),
    "maps": results_path(registry.file("vit_maps").path),
    "snapshots": results_path(registry.file("vit_snapshots").path),
}
VIT_PREFIX = os.path.commonprefix(list(VIT_OUTPUTS.values()))


# The data settings of each block that reads images: the run of Figures 6-7 and the recipe study.
VIT_DATA = {
    "vit": VIT["data"],
    "vit_recipes": recipe_config(VIT, config["vit_recipes"], RECIPES[0])["data"],
}
# Where each block's images come from (the data manifest's settings).
VIT_SOURCE = {
    block: {key: data[key] for key in SOURCE_KEYS} for block, data in VIT_DATA.items()
}


rule vit_data:
    """The data manifest: which data set the ViT gets (the configured one, else the first stand-in there), its files
    and their md5s. Rerun when the local files change (the plan), and with it everything trained on them; not when
    this rule's own job changed their form (extracted the archive, decompressed the .gz files, downloaded them).
    """
    output:
        data_manifest("{block}"),
    log:
        results_path("logs/vit_data/{block}.log"),
    benchmark:
        results_path("benchmarks/vit_data/{block}.tsv")
    wildcard_constraints:
        block="|".join(VIT_DATA),
    # On the submitting node: a cluster's login node often reaches the network where its compute nodes do not.
    localrule: True
    conda:
        "../envs/torch.yaml"
    params:
        reads=reads("vit_data"),
        source=lambda wildcards: VIT_SOURCE[wildcards.block],
        # what the local files say (sizes): a data set that appears or changes reruns the manifest; the job gets the
        # plan as Snakemake records it, and the manifest keeps it
        plan=lambda wildcards: data_plan(
            VIT_SOURCE[wildcards.block], data_manifest(wildcards.block)
        ),
    script:
        "../../scripts/vit_data.py"


rule vit_train:
    """Train the ViT, logging test accuracy, soft-sparsity, ||W||_F, W's direction and the Figure 6 maps every
    `vit.train.eval_every` epochs, and keeping the model every `vit.train.snapshot_every` (rule vit_probe reads it).

    The checkpoint (not a declared output, so a failed or killed job keeps it) lets a rerun resume. With
    `vit.cache` (paper.yaml) the run is cacheable between work directories (`--cache` with SNAKEMAKE_OUTPUT_CACHE
    set; docs/vit.md): its outputs form one multiext, as Snakemake's cache requires, and `code` puts the ViT
    package's source into the cache key. No `benchmark:`, which Snakemake forbids on a cacheable rule: the run's
    times are in the sidecar (epoch_times), and its log has a line per epoch.
    """
    input:
        manifest=data_manifest("vit"),
    output:
        multiext(
            VIT_PREFIX,
            **{name: path[len(VIT_PREFIX) :] for name, path in VIT_OUTPUTS.items()},
        ),
    log:
        results_path("logs/vit_train/vit.log"),
    cache: VIT["cache"]
    conda:
        "../envs/torch.yaml"
    threads: VIT["train"]["threads"]
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
        reads=reads("vit_train"),
        checkpoint=run_checkpoint("vit_train"),
        code=code_fingerprint(),
    script:
        "../../scripts/vit_train.py"


rule vit_baseline:
    """The linear baseline of the learning bar: logistic regression on the pixels of the ViT's training images."""
    input:
        unpack(current("vit_baseline")),
        manifest=data_manifest("vit"),
    output:
        table_outputs("vit_baseline"),
    log:
        results_path("logs/vit_baseline/vit_baseline.log"),
    benchmark:
        results_path("benchmarks/vit_baseline/vit_baseline.tsv")
    conda:
        "../envs/torch.yaml"
    threads: VIT["train"]["threads"]
    params:
        reads=reads("vit_baseline"),
        code=job_code("vit_baseline"),
    script:
        "../../scripts/vit_baseline.py"


rule vit_metrics_table:
    """The run's metrics table and its JSON sidecar, copied byte for byte into the tables folder."""
    input:
        unpack(current("vit_metrics_table")),
        metrics=rules.vit_train.output.metrics,
        sidecar=rules.vit_train.output.sidecar,
    output:
        metrics=table_path("vit_metrics", "csv"),
        sidecar=table_path("vit_metrics", "json"),
        provenance=table_outputs("vit_metrics")[-1],
    log:
        results_path("logs/vit_metrics_table/vit_metrics.log"),
    benchmark:
        results_path("benchmarks/vit_metrics_table/vit_metrics.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("vit_metrics_table"),
        code=job_code("vit_metrics_table"),
    script:
        "../../scripts/vit_metrics_table.py"


rule vit_pilot_run:
    """A few epochs of the configured scale: throughput, memory and the projected time of the full run (target
    vit_pilot).

    Its own checkpoint (deleted afterwards) keeps the real run's untouched.
    """
    input:
        unpack(current("vit_pilot_run")),
        manifest=data_manifest("vit"),
    output:
        table_outputs("vit_pilot"),
    log:
        results_path("logs/vit_pilot/pilot.log"),
    benchmark:
        results_path("benchmarks/vit_pilot/pilot.tsv")
    conda:
        "../envs/torch.yaml"
    threads: VIT["train"]["threads"]
    resources:
        gpu=VIT["resources"]["gpu"],
        mem_mb=VIT["resources"]["mem_mb"],
    params:
        reads=reads("vit_pilot_run"),
        checkpoint=run_checkpoint("vit_pilot_run"),
        code=job_code("vit_pilot_run"),
    script:
        "../../scripts/vit_pilot.py"


rule vit_recipe_train:
    """One recipe of the study: the ViT (the CPU proxy by default) trained under one optimiser recipe."""
    input:
        unpack(current("vit_recipe_train", lambda wildcards: code_fingerprint())),
        manifest=data_manifest("vit_recipes"),
    output:
        table_outputs("vit_recipe_run"),
    log:
        results_path("logs/vit_recipe_train/{recipe}.log"),
    benchmark:
        results_path("benchmarks/vit_recipe_train/{recipe}.tsv")
    wildcard_constraints:
        recipe="|".join(RECIPES),
    conda:
        "../envs/torch.yaml"
    threads: VIT["train"]["threads"]
    resources:
        gpu=VIT["resources"]["gpu"],
        runtime=VIT["resources"]["runtime"],
        mem_mb=VIT["resources"]["mem_mb"],
        retrain=lambda wildcards: int(
            workflow.dag_settings.forceall
            or "vit_recipe_train" in workflow.dag_settings.forcerun
        ),
    params:
        reads=reads("vit_recipe_train"),
        checkpoint=lambda wildcards: run_checkpoint("vit_recipe_train").format(
            recipe=wildcards.recipe
        ),
        code=code_fingerprint(),
    script:
        "../../scripts/vit_recipe_train.py"


rule vit_recipes_table:
    """The recipe study's table: every recipe's metrics per epoch."""
    input:
        unpack(current("vit_recipes_table")),
        [
            results_path(p)
            for p in derived.table_paths(registry.table("vit_recipe_run"), config)
        ],
    output:
        table_outputs("vit_recipes"),
    log:
        results_path("logs/vit_recipes_table/vit_recipes.log"),
    benchmark:
        results_path("benchmarks/vit_recipes_table/vit_recipes.tsv")
    localrule: True
    conda:
        "../envs/torch.yaml"
    params:
        reads=reads("vit_recipes_table"),
        code=job_code("vit_recipes_table"),
    script:
        "../../scripts/vit_recipes_table.py"


rule docs_vit_recipes:
    """The recipe study's numbers and figure for the docs (docs/results/<vit_recipes.docs>.{md,png,csv}, committed):
    generated, never typed; the CSV holds every epoch, so that the figure can be redrawn without training.

    The torch env: the table's code lives beside the study's (maxmargin.experiments.vit_study, which imports torch).
    """
    input:
        table=table_path("vit_recipes"),
        png=panel_files("vit_recipes")[1],
    output:
        md=f"docs/results/{config['vit_recipes']['docs']}.md",
        png=f"docs/results/{config['vit_recipes']['docs']}.png",
        csv=f"docs/results/{config['vit_recipes']['docs']}.csv",
    log:
        results_path("logs/docs_vit_recipes/vit_recipes.log"),
    benchmark:
        results_path("benchmarks/docs_vit_recipes/vit_recipes.tsv")
    localrule: True
    conda:
        "../envs/torch.yaml"
    params:
        reads=reads("docs_vit_recipes"),
        code=job_code("docs_vit_recipes"),
    script:
        "../../scripts/docs_vit_recipes.py"


# The page's W-ATT-SVM parts (the probe's table and panel), where vit.docs_w_svm asks for them: a GPU session whose
# probe did not finish still makes the page, without them.
DOCS_W_SVM_INPUTS = (
    {"w_svm_table": table_path("vit_w_svm"), "fig7_w_svm": panel_files("fig7_w_svm")[1]}
    | (
        {"w_svm_images": table_path("vit_w_svm_images")}
        if VIT["w_svm"]["curve_images"]
        else {}
    )
    if VIT["docs_w_svm"]
    else {}
)
DOCS_W_SVM_OUTPUTS = (
    {
        "fig7_w_svm": f"docs/results/{VIT['docs']}_fig7_w_svm.png",
        "w_svm": f"docs/results/{VIT['docs']}_w_svm.csv",
    }
    | (
        {"w_svm_images": f"docs/results/{VIT['docs']}_w_svm_images.csv"}
        if VIT["w_svm"]["curve_images"]
        else {}
    )
    if VIT["docs_w_svm"]
    else {}
)

# The decisive experiment's tables of the run's page and claims: its parts of vit.decisive.parts (the others are made
# on demand, target vit_decisive).
DOCS_DECISIVE = (
    tuple(f"vit_decisive_{part}" for part in VIT["decisive"]["parts"])
    if VIT["decisive"]["at"]
    else ()
)


rule docs_vit:
    """This run's page for the docs (docs/results/<vit.docs>.md, with its Figures 6-7 and the W-ATT-SVM panel as PNG,
    its metrics table and its ViT claims as CSV; committed for workflow/config/cpu_depth12.yaml): generated, never
    typed.
    """
    input:
        **DOCS_W_SVM_INPUTS,
        **{name: table_path(name) for name in DOCS_DECISIVE},
        metrics=table_path("vit_metrics"),
        baseline=table_path("vit_baseline"),
        sidecar=rules.vit_train.output.sidecar,
        fig6=panel_files("fig6")[1],
        fig7=panel_files("fig7")[1],
        fig7_regime=panel_files("fig7_regime")[1],
    output:
        **DOCS_W_SVM_OUTPUTS,
        **{
            name: f"docs/results/{VIT['docs']}_{name.removeprefix('vit_')}.csv"
            for name in DOCS_DECISIVE
        },
        md=f"docs/results/{VIT['docs']}.md",
        fig6=f"docs/results/{VIT['docs']}_fig6.png",
        fig7=f"docs/results/{VIT['docs']}_fig7.png",
        fig7_regime=f"docs/results/{VIT['docs']}_fig7_regime.png",
        metrics=f"docs/results/{VIT['docs']}_metrics.csv",
        baseline=f"docs/results/{VIT['docs']}_baseline.csv",
        claims=f"docs/results/{VIT['docs']}_claims.csv",
    log:
        results_path("logs/docs_vit/vit.log"),
    benchmark:
        results_path("benchmarks/docs_vit/vit.tsv")
    localrule: True
    conda:
        "../envs/core.yaml"
    params:
        reads=reads("docs_vit"),
        code=job_code("docs_vit"),
    script:
        "../../scripts/docs_vit.py"


rule vit_probe_images:
    """Beyond the paper: each last-layer head at the last snapshot against its W-ATT-SVM solved on the first n images
    of each image set, for every n of `vit.w_svm.curve_images`: how the cosine depends on the number of images, from
    which rule vit_probe takes the number it uses (docs/vit.md).
    """
    input:
        unpack(current("vit_probe_images", lambda wildcards: probe_fingerprint())),
        snapshots=results_path(registry.file("vit_snapshots").path),
        sidecar=rules.vit_train.output.sidecar,
        manifest=data_manifest("vit"),
    output:
        table_outputs("vit_w_svm_images"),
    log:
        results_path("logs/vit_probe_images/vit_w_svm_images.log"),
    benchmark:
        results_path("benchmarks/vit_probe_images/vit_w_svm_images.tsv")
    conda:
        "../envs/torch.yaml"
    threads: VIT["train"]["threads"]
    resources:
        gpu=VIT["resources"]["gpu"] if VIT["w_svm"]["device"] == "cuda" else 0,
        runtime=VIT["w_svm"]["runtime"],
        mem_mb=VIT["resources"]["mem_mb"],
    params:
        reads=reads("vit_probe_images"),
        code=probe_fingerprint(),
    script:
        "../../scripts/vit_probe_images.py"


# Where vit.w_svm.curve_images is set, rule vit_probe reads its number of images from the measured curve.
VIT_PROBE_CURVE = (
    {"curve": table_path("vit_w_svm_images")} if VIT["w_svm"]["curve_images"] else {}
)


rule vit_probe:
    """Beyond the paper: each last-layer head against its W-ATT-SVM solution, its matched nulls, its rank ceiling
    and the nuclear-norm solution, at every snapshot of the run (docs/vit.md). Reads the snapshots: a change to the
    analysis reruns this rule, never the training. The run's sidecar says which snapshot file is the run's: one of
    another run in its place is refused, naming both (maxmargin/experiments/vit_run_snapshots.py).
    """
    input:
        unpack(current("vit_probe", lambda wildcards: probe_fingerprint())),
        **VIT_PROBE_CURVE,
        snapshots=results_path(registry.file("vit_snapshots").path),
        sidecar=rules.vit_train.output.sidecar,
        manifest=data_manifest("vit"),
    output:
        table_outputs("vit_w_svm"),
    log:
        results_path("logs/vit_probe/vit_w_svm.log"),
    benchmark:
        results_path("benchmarks/vit_probe/vit_w_svm.tsv")
    conda:
        "../envs/torch.yaml"
    threads: VIT["train"]["threads"]
    resources:
        gpu=VIT["resources"]["gpu"] if VIT["w_svm"]["device"] == "cuda" else 0,
        runtime=VIT["w_svm"]["runtime"],
        mem_mb=VIT["resources"]["mem_mb"],
    params:
        reads=reads("vit_probe"),
        code=probe_fingerprint(),
    script:
        "../../scripts/vit_probe.py"


rule vit_decisive_ray:
    """Beyond the paper: the ray test at the snapshots of `vit.decisive.at`: the training loss along c W_h and along
    c W_mm,h (the W-ATT-SVM of the head's selection, at ||W_h||_F) of each last-layer head alone and of all together,
    the network recomputed with only the last layer's key-query matrices changed (docs/vit.md). Reads the snapshots,
    trains nothing; its times are in the table's sidecar.
    """
    input:
        unpack(current("vit_decisive_ray")),
        snapshots=results_path(registry.file("vit_snapshots").path),
        sidecar=rules.vit_train.output.sidecar,
        manifest=data_manifest("vit"),
    output:
        table_outputs("vit_decisive_ray"),
    log:
        results_path("logs/vit_decisive_ray/vit_decisive_ray.log"),
    benchmark:
        results_path("benchmarks/vit_decisive_ray/vit_decisive_ray.tsv")
    conda:
        "../envs/torch.yaml"
    threads: VIT["train"]["threads"]
    resources:
        gpu=VIT["resources"]["gpu"] if VIT["w_svm"]["device"] == "cuda" else 0,
        runtime=VIT["decisive"]["runtime"],
        mem_mb=VIT["resources"]["mem_mb"],
    params:
        reads=reads("vit_decisive_ray"),
        code=job_code("vit_decisive_ray"),
    script:
        "../../scripts/vit_decisive.py"


rule vit_decisive_gd:
    """Beyond the paper: GD on the last layer's W alone at the snapshots of `vit.decisive.at`, the tokens frozen, in
    the network (every training image) and in the paper's one-layer model on the head's real tokens, plain and
    normalised (target vit_decisive, minutes a snapshot; docs/vit.md). Reads the snapshots, trains nothing; its
    times are in the table's sidecar.
    """
    input:
        unpack(current("vit_decisive_gd")),
        snapshots=results_path(registry.file("vit_snapshots").path),
        sidecar=rules.vit_train.output.sidecar,
        manifest=data_manifest("vit"),
    output:
        table_outputs("vit_decisive_gd"),
    log:
        results_path("logs/vit_decisive_gd/vit_decisive_gd.log"),
    benchmark:
        results_path("benchmarks/vit_decisive_gd/vit_decisive_gd.tsv")
    conda:
        "../envs/torch.yaml"
    threads: VIT["train"]["threads"]
    resources:
        gpu=VIT["resources"]["gpu"] if VIT["w_svm"]["device"] == "cuda" else 0,
        runtime=VIT["decisive"]["runtime"],
        mem_mb=VIT["resources"]["mem_mb"],
    params:
        reads=reads("vit_decisive_gd"),
        code=job_code("vit_decisive_gd"),
    script:
        "../../scripts/vit_decisive.py"
