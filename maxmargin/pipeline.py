"""The registry's names resolved to functions, once and in one place (the pipeline layer, above the library), and
how a panel is drawn and saved.

:mod:`maxmargin.registry` names every experiment, data set and drawing function by a string, so that it costs
nothing to import and the rule files build the DAG without numpy, scipy or torch. The scripts resolve those names
here, against the modules imported below; tests/test_registry.py resolves every one of them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from maxmargin import registry
from maxmargin.experiments import instances
from maxmargin.experiments import synthetic as synthetic_experiments
from maxmargin.figures import basin, census, regpath, style, synthetic, vit
from maxmargin.files import atomic_path
from maxmargin.provenance import current_provenance, rebuild_command, verify_file
from maxmargin.registry import derived
from maxmargin.tables import read_table

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
    """The function that draws a registered panel (``maxmargin.figures.<family>.<draw>``)."""
    entry = registry.panel(panel)
    return _resolve(FIGURE_MODULES[entry.family], entry.draw, "the drawing function")


def experiment_function(name: str) -> Callable[..., synthetic_experiments.ExperimentTables]:
    """The function of a registered synthetic experiment (:mod:`maxmargin.experiments.synthetic`)."""
    return _resolve(synthetic_experiments, registry.experiment(name).run, "the experiment function")


def data_function(name: str) -> Callable[..., instances.Instance]:
    """The data set function of a registered synthetic experiment (:mod:`maxmargin.experiments.instances`)."""
    return _resolve(instances, registry.experiment(name).data, "the data set")


def run_experiment(
    name: str, settings: Mapping[str, Any], data: Mapping[str, Any]
) -> synthetic_experiments.ExperimentTables:
    """Run one registered synthetic experiment with its settings
    (:func:`maxmargin.registry.derived.experiment_settings`) and its data set's parameters.

    The data set is the registry's data set function with its fixed arguments (``data_args``) and the config's data
    parameters bound; the experiment function calls it (once, or once per score C in Figure 5).
    """
    entry = registry.experiment(name)
    make_instance = functools.partial(data_function(name), **entry.data_args, **data)
    return experiment_function(name)(name, make_instance, **settings)


def draw_synthetic_panel(
    panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, options: Mapping[str, Any]
) -> Figure:
    """Draw one registered panel of Figures 1-5 or 8 from its experiment's three tables, in the shared style."""
    with style.paper_style():
        return drawing_function(panel)(registry.panel(panel).title, traj, tokens, directions, dict(options))


def _read(name: str, path: str, records: list[dict[str, Any]]) -> Any:
    """One input of a panel: a table checked (:func:`maxmargin.tables.read_table`), a JSON record, or arrays
    checked against the sha256 their run's JSON holds (``File.record``)."""
    if path.endswith(".csv"):
        return read_table(path)
    if path.endswith(".json"):
        records.append(json.loads(Path(path).read_text()))
        return records[-1]
    key = registry.file(name).record
    verify_file(
        path, next((r.get(key) for r in records if key in r), None), rebuild_command(path, registry.file(name).rule)
    )
    with np.load(path) as arrays:
        return {k: arrays[k] for k in arrays.files}


def draw_panel(panel: str, paths: list[str], options: Mapping[str, Any]) -> Figure:
    """Draw a registered panel (not synthetic) from its files (:func:`maxmargin.registry.derived.panel_inputs`) with
    its config options (:func:`maxmargin.registry.derived.options`)."""
    records: list[dict[str, Any]] = []
    names = [name for name, _ in derived.panel_inputs(panel)]
    inputs = [_read(name, path, records) for name, path in zip(names, paths, strict=True)]
    with style.paper_style():
        return drawing_function(panel)(*inputs, **options)


def save_figure(fig: Figure, pdf: str, png: str, metadata: dict[str, str] | None = None) -> None:
    """Save a figure as PDF and PNG (atomically) and close it; inside a rule both carry its provenance.

    Saved under the shared style: its ``savefig.*`` and ``pdf.fonttype`` keys are read when the file is written. The
    PNG records the figure's smallest text in points (``style.SMALLEST_TEXT_KEY``: the gallery's readability test).
    """
    import matplotlib.pyplot as plt

    meta = dict(metadata or {})
    provenance = current_provenance()
    if provenance is not None:
        meta["Provenance"] = json.dumps(provenance, sort_keys=True, default=str)
    # No CreationDate: a forced rerun then writes a byte-identical PDF.
    pdf_meta: dict[str, str | None] = {k: v for k, v in meta.items() if k in ("Title", "Author", "Subject", "Keywords")}
    pdf_meta["CreationDate"] = None
    if "Provenance" in meta:
        pdf_meta["Keywords"] = meta["Provenance"]
    with style.paper_style(), atomic_path(pdf) as tmp:
        fig.savefig(tmp, format="pdf", metadata=pdf_meta)
    meta[style.SMALLEST_TEXT_KEY] = f"{style.smallest_text(fig):g}"  # drawn by now: every tick label has its text
    with style.paper_style(), atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", metadata=meta)
    plt.close(fig)
