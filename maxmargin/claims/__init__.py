"""The paper's quantitative claims, each measured from the pipeline's own tables.

Every claim has the paper's words (short), where it is made, the value the paper states and a function that reads
the measured value from the tables written by the other rules. The claims are declared per family, next to the
tables they read (:mod:`.synthetic` and :mod:`.joint_and_dynamics`, :mod:`.basin`, :mod:`.census`, :mod:`.regpath`,
:mod:`.lemma1`, :mod:`.vit`, :mod:`.vit_w_svm`, :mod:`.vit_regime`, :mod:`.vit_decisive`); which tables each one
reads is declared in the figure registry (``Table.claims``).
Nothing measured is typed in here: a claim whose table is missing is reported as "not run". Verdicts: :mod:`.base`.
"""

from __future__ import annotations

import html

import pandas as pd

from maxmargin.claims import (
    basin,
    census,
    joint_and_dynamics,
    lemma1,
    regpath,
    synthetic,
    vit,
    vit_decisive,
    vit_regime,
    vit_w_svm,
)
from maxmargin.claims.base import COLUMNS, VERDICTS, Claim, Config, Tables, interval_verdict
from maxmargin.registry import derived
from maxmargin.registry.derived import claims_config
from maxmargin.registry.reads import read_keys
from maxmargin.registry.vit import DATASET_NAMES, PAPER_DATASET
from maxmargin.tables import markdown_table

# The config keys the claims read, as paths: rule claims_table's (maxmargin/registry/reads.py).
CONFIG_KEYS: tuple[tuple[str, ...], ...] = tuple(tuple(key.split(".")) for key in read_keys("claims_table"))

CLAIMS: tuple[Claim, ...] = (
    synthetic.CLAIMS
    + joint_and_dynamics.CLAIMS
    + basin.CLAIMS
    + census.CLAIMS
    + regpath.CLAIMS
    + lemma1.CLAIMS
    + vit.CLAIMS
    + vit_w_svm.CLAIMS
    + vit_regime.CLAIMS
    + vit_decisive.CLAIMS
)

__all__ = [
    "CLAIMS",
    "CONFIG_KEYS",
    "COLUMNS",
    "VERDICTS",
    "Claim",
    "claims_config",
    "claims_html",
    "claims_markdown",
    "evaluate_claims",
    "interval_verdict",
    "run_sentences",
]


def evaluate_claims(tables: Tables, config: Config) -> pd.DataFrame:
    """The claims table: each claim next to the value measured from ``tables`` (name -> DataFrame).

    ``config`` is the config the tables were made with: notes quote its settings, never a typed-in copy.
    """
    rows = []
    needs = derived.claim_tables()
    for c in CLAIMS:
        missing = [name for name in needs[c.claim_id] if name not in tables]
        if missing:
            measured, verdict, note = "", "not run", f"missing table(s): {', '.join(missing)}"
        else:
            try:
                measured, verdict, note = c.measure(tables, config)
            except (KeyError, IndexError, ValueError, StopIteration) as err:
                measured, verdict, note = "", "not run", f"could not measure: {type(err).__name__}: {err}"
        rows.append([c.claim_id, c.claim, c.source, c.paper_value, measured, verdict, note])
    return pd.DataFrame(rows, columns=COLUMNS)


def run_sentences(claims: pd.DataFrame, tables: Tables) -> dict[str, str]:
    """What this run measured, as the sentences of the report's captions (their ``{run[...]}`` fields,
    :func:`maxmargin.registry.derived.caption`): each claim's measurement and verdict by its id, and ``vit_dataset``,
    the data set the ViT figures were made from. Measurements are rST literals: their ``|`` and ``*`` stay as they
    are.
    """
    sentences = {
        row.claim_id: (f"``{row.measured}`` " if row.measured else "")
        + f"(claim ``{row.claim_id}``: **{row.verdict}**{'; ' + row.note if row.verdict == 'not run' else ''})"
        for row in claims.itertuples()
    }
    if "vit_metrics" in tables:
        dataset = str(tables["vit_metrics"]["dataset"].iloc[-1])
        name, paper = DATASET_NAMES.get(dataset, dataset), DATASET_NAMES[PAPER_DATASET]
        sentences["vit_dataset"] = f"Made from {name}" + (
            ", the paper's data set." if dataset == PAPER_DATASET else f", a stand-in for the paper's {paper}."
        )
    return sentences


def claims_markdown(claims: pd.DataFrame) -> str:
    """The claims table as a Markdown table (for the README and the report)."""
    return markdown_table(claims[COLUMNS].astype(str))


# Verdict -> row colour of the HTML table, so that a claim that differs stands out in the report.
_VERDICT_CLASSES = {verdict: verdict.replace(" ", "-") for verdict in VERDICTS}  # one per verdict, none missed
_HTML_STYLE = (
    "body{font-family:sans-serif;font-size:13px} table{border-collapse:collapse;table-layout:fixed;width:100%;"
    "min-width:900px} td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top;"
    "overflow-wrap:anywhere}"
    " tr.holds{background:#e6f4ea} tr.differs{background:#fce8e6} tr.inconclusive{background:#fef7e0}"
    " tr.not-run{background:#f1f3f4}"
)


# Width of each column (%): the claim and what was measured get room to read in two or three lines.
_WIDTHS = {"claim_id": 13, "claim": 19, "source": 8, "paper_value": 8, "measured": 22, "verdict": 7, "note": 23}


def claims_html(claims: pd.DataFrame) -> str:
    """The claims table as a standalone HTML page (the report displays HTML; a CSV is only offered as a download)."""
    widths = "".join(f'<col style="width:{_WIDTHS[col]}%">' for col in COLUMNS)
    head = "".join(f"<th>{html.escape(col)}</th>" for col in COLUMNS)
    body = [
        f'<tr class="{_VERDICT_CLASSES[row.verdict]}">'
        + "".join(f"<td>{html.escape(str(value))}</td>" for value in row)
        + "</tr>"
        for row in claims[COLUMNS].itertuples(index=False)
    ]
    return "\n".join(
        [
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Claims</title><style>{_HTML_STYLE}</style>',
            f'</head><body>\n<table class="claims">\n<colgroup>{widths}</colgroup>',
            f"<thead><tr>{head}</tr></thead>\n<tbody>",
            *body,
            "</tbody></table>\n</body></html>\n",
        ]
    )
