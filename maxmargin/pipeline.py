"""The registry's names resolved to functions, once and in one place (the pipeline layer, above the library).

:mod:`maxmargin.registry` names every experiment, data set and drawing function by a string, so that it costs
nothing to import and the rule files build the DAG without numpy, scipy or torch. The scripts resolve those names
here, against the modules imported below; tests/test_registry.py resolves every one of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from maxmargin import registry
from maxmargin.experiments import instances
from maxmargin.experiments import synthetic as synthetic_experiments
from maxmargin.figures import basin, census, regpath, style, synthetic, vit

# Family -> the module of its drawing functions (maxmargin.figures.<family>).
FIGURE_MODULES: dict[str, ModuleType] = {
    "synthetic": synthetic,
    "census": census,
    "regpath": regpath,
    "vit": vit,
    "basin": basin,
}


def _resolve(module: ModuleType, name: str, what: str) -> Callable[..., Any]:
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"the registry names {what} {name!r}, which {module.__name__} does not define")
    return function


def drawing_function(panel: str) -> Callable[..., Figure]:
    """The function that draws a registered panel (``maxmargin.figures.<family>.<function>``)."""
    entry = registry.panel(panel)
    return _resolve(FIGURE_MODULES[entry.family], entry.function, "the drawing function")


def experiment_function(name: str) -> Callable[..., synthetic_experiments.ExperimentTables]:
    """The function of a registered synthetic experiment (:mod:`maxmargin.experiments.synthetic`)."""
    return _resolve(synthetic_experiments, registry.experiment(name).function, "the experiment function")


def instance_function(name: str) -> Callable[..., instances.Instance]:
    """The data set function of a registered synthetic experiment (:mod:`maxmargin.experiments.instances`)."""
    return _resolve(instances, registry.experiment(name).instance, "the data set")


def run_experiment(
    name: str, settings: Mapping[str, Any], data: Mapping[str, Any]
) -> synthetic_experiments.ExperimentTables:
    """Run one registered synthetic experiment with its settings (:func:`maxmargin.registry.experiment_settings`)
    and its data set's parameters.

    The data set is the registry's instance function with its fixed arguments and the config's data parameters
    bound; the experiment function calls it (once, or once per score C in Figure 5).
    """
    entry = registry.experiment(name)
    make_instance = functools.partial(instance_function(name), **entry.instance_args, **data)
    return experiment_function(name)(name, make_instance, **settings)


def draw_synthetic_panel(
    panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: Mapping[str, Any]
) -> Figure:
    """Draw one registered panel of Figures 1-5 or 8 from its experiment's three tables, in the shared style."""
    with style.paper_style():
        return drawing_function(panel)(registry.panel(panel).title, traj, tokens, directions, dict(plots))


def draw_table_panel(panel: str, *tables: pd.DataFrame, **options: Any) -> Figure:
    """Draw a registered panel of the other families from its tables (in the order the registry lists them)."""
    return drawing_function(panel)(*tables, **options)
