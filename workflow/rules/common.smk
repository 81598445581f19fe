# Shared constants and input functions of the rule files. Everything here is derived from the figure registry
# (maxmargin/registry/: every panel, table and synthetic experiment, declared once), which is plain data:
# parsing the rule files imports neither numpy nor torch.
from maxmargin import registry

# Every output lives under one results root chosen by the config (`results`), so a paper-scale run
# (workflow/config/paper.yaml: results/paper) never overwrites the quick-scale results.
RESULTS = config["results"]


def user_configfiles():
    """The --configfile files of this run (default.yaml left out), as given: what a rebuild command must repeat."""
    default = (Path(workflow.basedir) / "workflow/config/default.yaml").resolve()
    return [str(p) for p in workflow.configfiles if Path(p).resolve() != default]


def results_path(path):
    """``path`` (wildcards allowed) under the results root of this config."""
    return f"{RESULTS}/{path}"


def data_manifest(block):
    """The data manifest of a config block that trains on images (vit, vit_recipes): rule vit_data's output."""
    return results_path(f"runs/data/{block}.json")


def table_path(name, ext="csv"):
    """results/tables/{name}.{ext} of a registered table."""
    return results_path(f"tables/{registry.table(name).name}.{ext}")


def table_files(name):
    return [table_path(name, ext) for ext in registry.table(name).extensions]


def panel_files(panel):
    """[pdf, png] of a registered panel."""
    return [
        results_path(f"figures/{registry.panel(panel).name}.{ext}")
        for ext in ("pdf", "png")
    ]


def table_report(name):
    """The report() keywords of a registered table: its caption, its family's category, its label."""
    entry = registry.table(name)
    return dict(
        caption=f"../report/{entry.caption}",
        category=registry.category(entry.family),
        subcategory="Tables",
        labels={"figure": entry.label, "type": "table"},
    )


def panel_report(family, caption, panel=None, wildcard=None):
    """The report() keywords of a registered panel, or of the panel a rule's ``wildcard`` names."""

    def entry(wildcards):
        return registry.panel(panel or getattr(wildcards, wildcard))

    return dict(
        caption=caption,
        category=registry.category(family),
        subcategory=lambda wildcards: entry(wildcards).figure_label,
        labels=lambda wildcards: {"figure": entry(wildcards).label, "type": "figure"},
    )


# Figure target (one aggregate rule each, below) -> its panels' and tables' files.
TARGETS = {
    figure: [f for p in panels for f in panel_files(p)]
    + [f for t in tables for f in table_files(t)]
    for figure, (panels, tables) in registry.targets().items()
}

# Every output of every job is a target of `all` (tests/test_workflow_targets.py), so none can go missing
# unnoticed: every registered figure and table (less the on-demand targets), and what each rule file adds (runs).
ALL_TARGETS = [
    f
    for figure, files in TARGETS.items()
    if figure not in registry.ON_DEMAND
    for f in files
] + [
    f
    for t in registry.TABLES
    if not t.figure and t.family not in registry.ON_DEMAND
    for f in table_files(t.name)
]


for figure, files in TARGETS.items():

    rule:
        name:
            figure
        input:
            files,
        localrule: True


# The three tables of an experiment, named once: the rule's outputs, the panels' inputs and `all` read them here.
EXPERIMENT_TABLES = {
    "trajectories": "tables/{experiment}.csv",
    "tokens": "tables/{experiment}_tokens.csv",
    "directions": "runs/{experiment}/directions.csv",
}


def panel_tables(wildcards):
    """The three tables of the experiment a synthetic panel draws (rule plot_synthetic)."""
    experiment = registry.panel(wildcards.panel).experiment
    return {
        name: results_path(path.format(experiment=experiment))
        for name, path in EXPERIMENT_TABLES.items()
    }


def regpath_settings(wildcards):
    """The ``regpath`` block as keyword arguments of maxmargin.experiments.regpath.regpath_table for one instance:
    the GD runs belong to the Theorem 1 path (Fig. 1(b) data) only."""
    settings = {
        k: v for k, v in config["regpath"].items() if k not in ("instances", "gd")
    }
    gd = config["regpath"]["gd"] if wildcards.regpath_instance == "fig1b" else None
    return {**settings, "gd": gd}
