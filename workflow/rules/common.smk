# Shared helpers of the rule files. Everything here is derived from the figure registry (maxmargin/registry/, every
# panel, table, file and synthetic experiment, declared once, and the config keys each rule reads), which is plain
# data: parsing the rule files imports neither numpy nor torch.
import json
import os
import sys

import maxmargin
from maxmargin import registry
from maxmargin.registry import derived
from maxmargin.provenance import RUN_ARGS_ENV, checked_sentences
from maxmargin.registry.reads import read_keys, subset

# Every output lives under one results root chosen by the config (`results`), so a paper-scale run
# (workflow/config/paper.yaml: results/paper) never overwrites the quick-scale results.
RESULTS = config["results"]


def results_path(path):
    """``path`` (wildcards allowed) under the results root of this config."""
    return f"{RESULTS}/{path}"


def user_configfiles():
    """The --configfile files of this run (default.yaml left out), as given: what a rebuild command must repeat."""
    default = (Path(workflow.basedir) / "workflow/config/default.yaml").resolve()
    return [
        os.path.relpath(p) for p in workflow.configfiles if Path(p).resolve() != default
    ]


def run_args():
    """The arguments that select this run's config: the rebuild commands the jobs print repeat them, every config
    file after one --configfile (of several --configfile options Snakemake keeps only the last).
    """
    files = (
        [f"--configfile {' '.join(user_configfiles())}"] if user_configfiles() else []
    )
    pairs = workflow.config_settings.config or {}
    given = (
        [f"--config {' '.join(f'{k}={v}' for k, v in pairs.items())}"] if pairs else []
    )
    return " ".join(files + given)


# Jobs inherit it (a job on a cluster node parses this file again and sets it the same).
os.environ[RUN_ARGS_ENV] = run_args()


def reads(rule):
    """The params of a job of ``rule``: the part of the config it reads (maxmargin/registry/reads.py), nothing else."""

    def job_reads(wildcards):
        return subset(config, read_keys(rule, dict(wildcards.items())))

    return job_reads


def data_manifest(block):
    """The data manifest of a config block that trains on images (vit, vit_recipes): rule vit_data's output."""
    return results_path(registry.vit.DATA_MANIFEST.format(block=block))


def run_checkpoint(rule):
    """The checkpoint of the ViT run of ``rule`` (vit_train, vit_pilot_run, vit_recipe_train; wildcards left in)."""
    return results_path(registry.vit.CHECKPOINTS[rule])


def table_path(name, ext="csv"):
    """results/tables/{name}.{ext} (or the table's own path) of a registered table, wildcards left in."""
    return results_path(registry.table(name).pattern.removesuffix(".csv") + f".{ext}")


def table_outputs(name):
    """Every file of a registered table: its extensions and, for its CSV, the provenance sidecar beside it."""
    entry = registry.table(name)
    files = [table_path(name, ext) for ext in entry.extensions]
    return files + ([f"{files[0]}.provenance.json"] if entry.sidecar else [])


def panel_files(panel):
    """[pdf, png] of a registered panel."""
    return [
        results_path(f"figures/{registry.panel(panel).name}.{ext}")
        for ext in ("pdf", "png")
    ]


def caption_file(name, text):
    """A generated caption file of the report (.snakemake/captions/, rewritten only when it changes)."""
    path = Path(".snakemake/captions") / f"{name}.rst"
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(text)
        tmp.replace(path)
    return str(path.resolve())


def landing_page_file():
    """The report's landing page: workflow/report/workflow.rst with the list of verdicts and the settings it states,
    each block's from the record of the table its jobs made last (derived.landing_page, LANDING_TABLES): `snakemake
    --report` describes the run's figures, not what this invocation's config would make.
    """
    template = (Path(workflow.basedir) / "workflow/report/workflow.rst").read_text()
    recorded = {
        block: made_with(table_path(name))
        for block, name in derived.LANDING_TABLES.items()
    }
    return caption_file("workflow", derived.landing_page(template, config, recorded))


def claims_record():
    """The sidecar of the claims table (its sha256 binds the sentences file to it), or {}."""
    try:
        return json.loads(Path(f"{table_path('claims')}.provenance.json").read_text())
    except (OSError, ValueError):
        return {}


def run_sentences():
    """What the last run measured (its claims table's sentences, registry.RUN_SENTENCES_FILE), for the captions'
    {run[...]} fields: `snakemake --report` reads the workflow after the run, so its captions state the run's
    numbers; before a run, each such field says it is not measured. A damaged file, one not of the claims table
    beside it, or one whose sentences were edited since (provenance.checked_sentences) never stops the parse: it is
    reported, the captions say their claims are not measured, and its time is set back so that the next run's
    claims_table writes it again."""
    path = Path(table_path("claims", "json"))
    if not path.exists():
        return {}
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        problem = f"it cannot be read ({type(err).__name__}: {err})"
    else:
        try:
            return checked_sentences(found, claims_record().get("sha256"))
        except ValueError as err:
            problem = str(err)
    print(
        f"{path}: {problem}; the report's captions say their claims are not measured until rule claims_table "
        "writes it again (set to rerun: `snakemake --cores all` does it)",
        file=sys.stderr,
    )
    os.utime(path, (0, 0))  # older than the tables it is made from: its job reruns
    return {}


RUN_SENTENCES = run_sentences()


def png_provenance(path):
    """The provenance record a panel's PNG carries (maxmargin.pipeline.save_figure: a text chunk before the image
    data), or None."""
    with open(path, "rb") as f:
        f.read(8)
        while header := f.read(8):
            size, kind = int.from_bytes(header[:4], "big"), header[4:]
            if kind in (b"IDAT", b"IEND"):
                return None
            chunk = f.read(size + 4)[:size]
            if kind == b"tEXt" and chunk.startswith(b"Provenance\0"):
                return json.loads(chunk.split(b"\0", 1)[1].decode("latin-1"))
    return None


def made_with(path):
    """The config of the job that made ``path`` (a table: its sidecar; a panel: its PNG), or None (none yet)."""
    try:
        if path.endswith(".png"):
            record = png_provenance(path)
        else:
            record = json.loads(Path(f"{path}.provenance.json").read_text())
    except (OSError, ValueError):
        return None
    return (record or {}).get("config")


def report_caption(entry, made):
    """A report caption filled from the config that made the file ``made`` (so that a report built without a rerun
    after a config change describes its data, not the new config), else from this config.
    """
    recorded = made_with(made) if made else None
    if recorded is None:
        return derived.caption(entry, config, RUN_SENTENCES)
    try:
        text = derived.caption(entry, recorded, RUN_SENTENCES)
    except (KeyError, IndexError, TypeError, ValueError):
        return (
            f"**Made by another configuration, whose settings this caption cannot show: run the workflow "
            f"again.** {derived.caption(entry, config, RUN_SENTENCES)}"
        )
    if derived.caption(entry, config, RUN_SENTENCES) != text:
        text = f"**Made by other settings than this config's (as this caption says): run the workflow.** {text}"
    return text


def table_report(name):
    """The report() keywords of a registered table: its caption (from the registry, filled from the config that
    made it), category and label."""
    entry = registry.table(name)
    paths = [results_path(p) for p in derived.table_paths(entry, config)]
    made = (
        next((p for p in paths if p.endswith(".csv")), None) if entry.sidecar else None
    )
    return dict(
        caption=caption_file(f"table-{name}", report_caption(entry, made)),
        category=derived.category(entry.family),
        subcategory="Tables",
        labels={"figure": entry.label, "type": "table"},
    )


def panel_report(rule, panels):
    """The report() keywords of the rule drawing ``panels`` (wildcard ``panel``), each panel's caption from the
    registry (filled from the config that drew it), looked up by the wildcard in one generated caption file;
    category, subcategory and labels.
    """
    captions = json.dumps(
        {p: report_caption(registry.panel(p), panel_files(p)[1]) for p in panels},
        ensure_ascii=False,
    )
    lookup = "{{ captions[snakemake.wildcards.panel] }}"
    family = registry.panel(panels[0]).family
    return dict(
        caption=caption_file(
            f"rule-{rule}", f"{{% set captions = {captions} %}}{lookup}\n"
        ),
        category=derived.category(family),
        subcategory=lambda wildcards: registry.panel(wildcards.panel).figure_label,
        labels=lambda wildcards: {
            "figure": registry.panel(wildcards.panel).label,
            "type": "figure",
        },
    )


def target_files(target):
    """The files of a target: its panels, the tables they draw and the tables and files that name it."""
    panels, tables, files = derived.targets()[target]
    found = [f for p in panels for f in panel_files(p)]
    for name in tables:
        entry = registry.table(name)
        for path in derived.table_paths(entry, config):
            found.append(results_path(path))
            if entry.sidecar and path.endswith(".csv"):
                found.append(results_path(f"{path}.provenance.json"))
    return found + [results_path(registry.file(f).path) for f in files]


def all_targets():
    """Every output of the default run (every job's, tests/test_workflow_targets.py): every target but the
    on-demand ones, and every table and file outside them."""
    found = [
        f
        for target in derived.targets()
        if target not in registry.ON_DEMAND
        for f in target_files(target)
    ]
    skip = derived.on_demand_only()
    for entry in registry.TABLES:
        if entry.name not in skip:
            for path in derived.table_paths(entry, config):
                found.append(results_path(path))
                if entry.sidecar and path.endswith(".csv"):
                    found.append(results_path(f"{path}.provenance.json"))
    found += [results_path(f.path) for f in registry.FILES if f.name not in skip]
    return list(dict.fromkeys(found))


def panel_tables(wildcards):
    """The three tables of the experiment a synthetic panel draws (rule plot_synthetic)."""
    experiment = registry.panel(wildcards.panel).experiment
    return {
        kind: results_path(pattern.format(experiment=experiment))
        for kind, (_, pattern, _) in registry.synthetic.EXPERIMENT_TABLES.items()
    }


def table_files(name):
    """Every file of a registered table under this config (one per value of its wildcards), for a gathering rule."""
    return [results_path(p) for p in derived.table_paths(registry.table(name), config)]


def panel_input(wildcards):
    """The files a panel draws, in the order its drawing function takes them (derived.panel_inputs)."""
    return [results_path(path) for _, path in derived.panel_inputs(wildcards.panel)]
