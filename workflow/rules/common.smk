# Shared constants and input functions of the rule files.
from maxmargin import registry

# Every output lives under one results root chosen by the config (`results`), so a paper-scale run
# (workflow/config/paper.yaml: results/paper) never overwrites the quick-scale results.
RESULTS = config["results"]


def results_path(path):
    """``path`` (wildcards allowed) under the results root of this config."""
    return f"{RESULTS}/{path}"


# Every figure panel and every synthetic experiment is declared once, in the figure registry (maxmargin/registry.py);
# the lists below are derived from it, never kept by hand.
SYNTHETIC_EXPERIMENTS = [experiment.name for experiment in registry.EXPERIMENTS]

# Figure panel -> the experiment whose tables it draws.
SYNTHETIC_PANELS = {
    panel.name: panel.experiment for panel in registry.panels_of("synthetic")
}

# Figure target (one aggregate rule each, synthetic.smk) -> its panels.
FIGURES = registry.figures_of("synthetic")


wildcard_constraints:
    experiment="|".join(SYNTHETIC_EXPERIMENTS),
    panel="|".join(SYNTHETIC_PANELS),


def figure_files(figure):
    return expand(
        results_path("figures/{panel}.{ext}"), panel=FIGURES[figure], ext=["pdf", "png"]
    )


# Every output of every job is a target of `all` (tests/test_workflow_targets.py), so none can go missing unnoticed.
EXPERIMENT_OUTPUTS = [
    "tables/{experiment}.csv",
    "tables/{experiment}_tokens.csv",
    "runs/{experiment}/directions.csv",
]
ALL_TARGETS = [f for figure in FIGURES for f in figure_files(figure)] + [
    results_path("tables/directions.csv")
]
for template in EXPERIMENT_OUTPUTS:
    ALL_TARGETS += expand(results_path(template), experiment=SYNTHETIC_EXPERIMENTS)


def experiment_settings(wildcards):
    """The config block of an experiment: the keyword arguments of its function in maxmargin.experiments."""
    return config["synthetic"][registry.experiment(wildcards.experiment).config]


def experiment_data(wildcards):
    """The parameters of the data set an experiment runs on (Figure 4 runs on the Figure 1(c) tokens)."""
    instance = registry.experiment(wildcards.experiment).instance
    return config["synthetic"]["data"].get(instance, {})


def panel_tables(wildcards):
    exp = SYNTHETIC_PANELS[wildcards.panel]
    return {
        "trajectories": f"{RESULTS}/tables/{exp}.csv",
        "tokens": f"{RESULTS}/tables/{exp}_tokens.csv",
        "directions": f"{RESULTS}/runs/{exp}/directions.csv",
    }
