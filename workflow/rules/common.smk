# Shared constants and input functions of the rule files.

# Every output lives under one results root chosen by the config (`results`), so a paper-scale run
# (workflow/config/paper.yaml: results/paper) never overwrites the quick-scale results.
RESULTS = config["results"]


def results_path(path):
    """``path`` (wildcards allowed) under the results root of this config."""
    return f"{RESULTS}/{path}"


# Each computation ("experiment") writes the tables that one or more figure panels plot.
SYNTHETIC_EXPERIMENTS = [
    "fig1a",
    "fig1b",
    "fig1c",
    "fig2",
    "fig3a",
    "fig3b",
    "fig4",
    "fig5",
    "fig8",
]

# Figure panel -> the experiment whose tables it draws.
SYNTHETIC_PANELS = {
    "fig1a": "fig1a",
    "fig1b": "fig1b",
    "fig1c": "fig1c",
    "fig2": "fig2",
    "fig3a": "fig3a",
    "fig3b": "fig3b",
    "fig3c": "fig3a",
    "fig4a": "fig4",
    "fig4b": "fig4",
    "fig5": "fig5",
    "fig8": "fig8",
}

# Figure target -> its panels.
FIGURES = {
    "fig1": ["fig1a", "fig1b", "fig1c"],
    "fig2": ["fig2"],
    "fig3": ["fig3a", "fig3b", "fig3c"],
    "fig4": ["fig4a", "fig4b"],
    "fig5": ["fig5"],
    "fig8": ["fig8"],
}


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


def experiment_params(wildcards):
    """The config block of an experiment, as keyword arguments of maxmargin.experiments."""
    exp = wildcards.experiment
    synthetic = config["synthetic"]
    if exp.startswith("fig1"):
        return dict(synthetic["fig1"])
    if exp.startswith("fig3"):
        return dict(synthetic["fig3"])
    if exp == "fig4":
        # Figure 4 runs on the Figure 1(c) data, so it shares its seed.
        return dict(synthetic["fig4"], seed=synthetic["fig1"]["seed"])
    return dict(synthetic[exp])


def panel_tables(wildcards):
    exp = SYNTHETIC_PANELS[wildcards.panel]
    return {
        "trajectories": f"{RESULTS}/tables/{exp}.csv",
        "tokens": f"{RESULTS}/tables/{exp}_tokens.csv",
        "directions": f"{RESULTS}/runs/{exp}/directions.csv",
    }
