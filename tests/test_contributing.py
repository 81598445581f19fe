"""CONTRIBUTING.md is executable: its steps, followed block by block in a copy of the repository, add a synthetic
figure and a census panel whose targets build, and a second newcomer's synthetic figure with its own experiment
function and config key (NEWCOMER, written as the page writes its steps), then pass the unit tier and the slow tests
that concern a new figure (the page names them), having changed the files its headings promise (written by hand) and
those tools/gallery.py and the docs writer write, and no other."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, starts_a_program

from maxmargin import registry
from maxmargin.docs import column_docs, timings
from maxmargin.registry import derived

# Block info strings: "LANG append PATH", "LANG insert PATH NAME" (a tuple of a module, or a top-level section of a
# YAML file), "bash run". Sections of the page: "## Add ...".
BLOCK = re.compile(r"^```(\w+) (append|insert|run)([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
# Each example: its panel and the files written by hand, as its heading says ("2 files").
EXAMPLES = {
    "Add a synthetic figure": ("circle", 2),
    "Add a panel": ("census_saturation", 2),
    "Add a newcomer's figure": ("rays", 4),
}
CHECK = "Once the new figure looks right"  # the section whose blocks check the examples' result
# What tools/gallery.py writes for a new panel (its thumbnail, its baseline image, the README's gallery block).
GENERATED = ("docs/gallery/{}.png", "tests/baseline_images/{}.png", "README.md")
# The files a step's tool writes besides GENERATED: a new config key's docs (`make docs`'s config_docs).
WRITTEN = {"rays": ("docs/config.md",)}
# A second newcomer's figure beyond the paper, unlike the guide's synthetic one (which needs no code): an experiment
# function of its own reading a config key no experiment has, so the schema and docs/config.md change too (the cases
# of CONTRIBUTING.md's table). Followed after the guide's examples and before its checks: the tests must hold for
# the next person's figure, not for the guide's alone.
NEWCOMER = """
## Add a newcomer's figure: 4 files

```python append maxmargin/experiments/synthetic.py
def gd_from_a_ray(
    name: str,
    make_instance: Callable[[], Instance],
    *,
    eta: float,
    n_iter: int,
    loss: str,
    radii: Sequence[float],
) -> ExperimentTables:
    \"\"\"Normalized GD on p from the starts r (1, 0.3) of the key plane, one per radius r: where each goes.

    Paper: Theorems 2 and 3 (beyond the paper: starts along one ray).
    \"\"\"
    instance = make_instance()
    points = [[r, 0.3 * r] for r in radii]
    return _gd_on_p(name, instance, instances.starts(points, instance.X.shape[-1]), eta=eta, n_iter=n_iter, loss=loss)
```

```python insert maxmargin/registry/synthetic.py EXPERIMENTS
    Experiment(name="rays", data="fig1b", run="gd_from_a_ray", block="rays"),
```

```python insert maxmargin/registry/synthetic.py PANELS
    Panel(
        name="rays",
        target="rays",
        family="synthetic",
        label="Starts along a ray",
        draw="key_plane_gd",
        title="GD from starts along a ray (Figure 1(b) data)",
        experiment="rays",
        caption="Normalized GD (eta = {eta:g}, {n_iter} iterations, {loss} loss) from starts along the ray through "
        "(1, 0.3), on the Figure 1(b) data: where each start goes.",
    ),
```

```yaml insert workflow/config/default.yaml synthetic
  # Starts along a ray (tests/test_contributing.py's second newcomer).
  rays:
    eta: 0.1
    n_iter: 300
    loss: logistic
    radii: [0.5, 2.0, 8.0]  # starts r (1, 0.3) of the key plane
```

```yaml insert workflow/schemas/config.schema.yaml $defs.experiment.properties
      radii: {type: array, items: {type: number, exclusiveMinimum: 0}, minItems: 1, description: start radii}
```

```bash run
python -m maxmargin.docs.config_docs docs/config.md
snakemake --cores 2 rays
python tools/gallery.py rays
```
"""
# The slow tests that concern a new figure are named on the page (a block of CHECK runs them); those reading the
# whole CI run (its report, the baselines' comparison) are left to `make test`.
SLOW_CHECK = "tests/test_workflow_targets.py"


def steps(text: str) -> dict[str, list[tuple[str, list[str], str]]]:
    """Section title -> its blocks (action, arguments, body), in order."""
    found: dict[str, list[tuple[str, list[str], str]]] = {}
    for part in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        title = part.splitlines()[0]
        found[title] = [(m[2], m[3].split(), m[4]) for m in BLOCK.finditer(part)]
    return found


def insert_into_tuple(source: str, name: str, body: str) -> str:
    """``body`` before the closing parenthesis of the tuple assigned to ``name``."""
    node = next(
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.Assign | ast.AnnAssign)
        and name in [t.id for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)]
    )
    lines = source.splitlines(keepends=True)
    closing = node.end_lineno - 1  # the line of the closing parenthesis
    return "".join(lines[:closing]) + body + "".join(lines[closing:])


def insert_into_section(source: str, section: str, body: str) -> str:
    """``body`` at the end of the YAML ``section``, a top-level key or a dotted path of keys ("$defs.experiment"),
    before the comments of the next key."""
    lines = source.splitlines(keepends=True)
    start, end, indent = -1, len(lines), 0
    for key in section.split("."):
        start = next(i for i in range(start + 1, end) if lines[i].startswith(" " * indent + f"{key}:"))
        end = next((i for i in range(start + 1, end) if _key_indent(lines[i]) <= indent), end)
        indent += 2
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return "".join(lines[:end]) + body + "".join(lines[end:])


def _key_indent(line: str) -> float:
    """The indentation of a line of YAML that starts a key; infinite for any other (blank, comment, list item,
    the rest of a value), which ends no block."""
    text = line.lstrip(" ")
    return len(line) - len(text) if re.match(r"[\w$\"'<]", text) else float("inf")


def apply(work: Path, action: str, args: list[str], body: str, env: dict[str, str]) -> set[str]:
    """Carry out one block; the files it touched."""
    if action == "run":
        for command in body.splitlines():
            words = shlex.split(command.split("  #")[0])
            program = {"snakemake": str(SNAKEMAKE), "python": sys.executable}[words[0]]
            proc = subprocess.run(
                [program, *words[1:]], cwd=work, env=env, capture_output=True, text=True, timeout=1200
            )
            assert proc.returncode == 0, f"{command}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return set()
    path = work / args[0]
    text = path.read_text()
    if body.strip() in text:  # followed before: the tree holds it already (the test must not depend on that)
        return {args[0]}
    if action == "append":
        text = text.rstrip("\n") + "\n\n\n" + body
    elif path.suffix == ".py":
        text = insert_into_tuple(text, args[1], body)
    else:
        text = insert_into_section(text, args[1], body)
    path.write_text(text)
    return {args[0]}


def test_blocks_are_found_and_the_inserts_work():
    sections = steps((REPO / "CONTRIBUTING.md").read_text()) | steps(NEWCOMER)
    for prefix, (panel, files) in EXAMPLES.items():
        (title,) = [t for t in sections if t.startswith(prefix)]
        assert f": {files} files" in title, title  # the heading states the count the steps are held to
        assert any(action == "run" and f"tools/gallery.py {panel}" in body for action, _, body in sections[title])
    assert any(action == "run" and "not slow" in body for action, _, body in sections[CHECK])
    assert any(action == "run" and SLOW_CHECK in body for action, _, body in sections[CHECK])
    source = "X = (\n    1,\n)\nY = 2\n"
    assert insert_into_tuple(source, "X", "    3,\n") == "X = (\n    1,\n    3,\n)\nY = 2\n"
    flat = "a:\n  b: 1\n\n# c\nc: 2\n"
    assert insert_into_section(flat, "a", "  d: 3\n") == "a:\n  b: 1\n  d: 3\n\n# c\nc: 2\n"
    nested = "a:\n  b:\n    x: 1\n  # e\n  e:\n    y: 2\nb:\n  x: 3\n"
    assert insert_into_section(nested, "a.b", "    z: 4\n") == nested.replace("x: 1\n", "x: 1\n    z: 4\n")
    assert insert_into_section(nested, "b.x", "") == nested  # a key without a block: nothing after it to keep
    for action, args, body in [block for blocks in sections.values() for block in blocks]:
        if action == "insert" and args[0].endswith(".yaml"):  # each YAML block lands in its section, valid YAML
            source = (REPO / args[0]).read_text()
            node = yaml.safe_load(source if body.strip() in source else insert_into_section(source, args[1], body))
            for key in args[1].split("."):
                node = node[key]
            assert set(yaml.safe_load(textwrap.dedent(body))) <= set(node), (args, body)


@pytest.mark.slow
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
def test_contributing_steps_leave_ci_green(tmp_path):
    listed = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]  # the tree, new files included
    tracked = subprocess.run(listed, cwd=REPO, capture_output=True, text=True, check=True).stdout
    work = tmp_path / "repo"
    for name in tracked.splitlines():
        source, target = REPO / name, work / name
        if not source.exists() and not source.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    env = {**os.environ, "PYTHONPATH": str(work)}
    expected: set[str] = set()
    guide = steps((REPO / "CONTRIBUTING.md").read_text())
    check = guide.pop(CHECK)
    for title, blocks in [*guide.items(), *steps(NEWCOMER).items(), (CHECK, check)]:
        example = next((entry for prefix, entry in EXAMPLES.items() if title.startswith(prefix)), None)
        if example is None and title != CHECK:
            continue
        touched: set[str] = set()
        for action, args, body in blocks:
            touched |= apply(work, action, args, body, env)
        if example is not None:
            panel, files = example
            assert touched and len(touched) <= files, f"{title}: {sorted(touched)}"
            expected |= touched | {path.format(panel) for path in GENERATED} | set(WRITTEN.get(panel, ()))
    for panel in [panel for panel, _ in EXAMPLES.values()]:
        assert (work / "results" / "figures" / f"{panel}.png").stat().st_size > 10_000
        assert (work / "docs" / "gallery" / f"{panel}.png").exists()
    assert changed_files(work, set(tracked.splitlines())) <= expected


def changed_files(work: Path, tracked: set[str]) -> set[str]:
    """The files of the copy ``work`` that differ from, or are not among, the repository's files (its results,
    Snakemake's state and caches left out)."""
    skip = ("results/", ".snakemake/", ".pytest_cache/")
    changed = set()
    for path in work.rglob("*"):
        name = str(path.relative_to(work))
        if path.is_dir() or name.startswith(skip) or "__pycache__" in name:
            continue
        if name not in tracked or path.read_bytes() != (REPO / name).read_bytes():
            changed.add(name)
    return changed


def test_following_the_guide_twice_adds_each_block_once(tmp_path):
    """A contributor who applied the examples and then runs the tests: the steps find their blocks in place."""
    sections = steps((REPO / "CONTRIBUTING.md").read_text())
    (title,) = [t for t in sections if t.startswith("Add a panel")]
    work = tmp_path / "repo"
    target = "maxmargin/figures/census.py"
    (work / target).parent.mkdir(parents=True)
    (work / target).write_text((REPO / target).read_text())
    (_, args, body) = next(block for block in sections[title] if block[0] == "append")
    assert apply(work, "append", args, body, {}) == {target}
    once = (work / target).read_text()
    assert apply(work, "append", args, body, {}) == {target} and (work / target).read_text() == once


def rule_names() -> set[str]:
    """Every rule of the workflow, read without Snakemake: the named ones, a target per figure (targets.smk) and
    a drawing rule per family of table-drawn panels (plots.smk)."""
    sources = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    named = {name for path in sources for name in re.findall(r"^rule (\w+):", path.read_text(), re.MULTILINE)}
    plots = {f"plot_{p.family}" for p in registry.PANELS if p.family != "synthetic"}
    return named | set(derived.targets()) | plots


def test_every_path_and_rule_the_page_names_exists():
    """The paths CONTRIBUTING.md names (in `backticks` and its layout block) exist, the targets of its `snakemake`
    commands are rules (its examples' own panels aside), and its tier table states measured times."""
    text = (REPO / "CONTRIBUTING.md").read_text()
    layout = re.search(r"^```\n(.*?)^```", text, re.MULTILINE | re.DOTALL)[1]
    words = re.findall(r"`([^`\n]+)`", text) + [line.split()[0] for line in layout.splitlines() if line[:1].strip()]
    paths = {
        w.rstrip(",")
        for w in words
        if re.fullmatch(r"[\w./-]+", w) and ("/" in w or re.search(r"\.(py|md|yaml|smk|toml|cfg)$", w))
    }
    run_outputs = ("results/", "tables/", "docs/gallery/circle", "docs/gallery/census_saturation")
    missing = sorted(p for p in paths if not p.startswith(run_outputs) and not (REPO / p).exists())
    assert len(paths) > 20 and not missing, missing
    commands = [w for w in words if w.startswith("snakemake ")] + re.findall(r"^snakemake .*$", text, re.MULTILINE)
    targets = {t for c in commands for t in c.split()[1:] if not t.startswith("-") and not t.isdigit()}
    examples = {panel for panel, _ in EXAMPLES.values()}
    assert targets and not targets - rule_names() - examples, sorted(targets - rule_names() - examples)
    for row in ("| unit | `make test-fast`", "| all | `make test`"):
        line = next(line for line in text.splitlines() if line.startswith(row))
        assert re.search(r"\d+ s", line.rsplit("|", 2)[-2]), line  # a measured time, not a promise


def test_the_timings_page_has_a_row_for_the_cacheable_vit_run(tmp_path):
    """docs/results/timings.md (tools/timings.py): vit_train, cacheable and so without a benchmark file, is timed
    from its run's JSON (its epochs' wall seconds), beside the rules timed by their benchmark files."""
    (tmp_path / "benchmarks" / "plot_vit").mkdir(parents=True)
    (tmp_path / "benchmarks" / "plot_vit" / "fig7.tsv").write_text("s\th:m:s\tmax_rss\n1.5\t0:00:01\t200.4\n")
    record = tmp_path / registry.table("vit_run_metrics").pattern.replace(".csv", ".json")
    record.parent.mkdir(parents=True)
    epochs = [{"epoch": e, "train_seconds": 2.0 * e, "epoch_seconds": 2.0 * e + 0.25} for e in range(3)]
    record.write_text(json.dumps({"epoch_times": epochs}))
    page = timings.timings_markdown(timings.rule_timings(tmp_path / "benchmarks"))
    assert "| `vit_train` | 1 | 6.8 | 6.8 |  |" in page and "| `plot_vit` | 1 | 1.5 | 1.5 | 200 |" in page
    assert "| **all** | 2 | 8.2 | | |" in page


def test_the_timings_page_keeps_what_was_measured_by_hand(tmp_path):
    """tools/timings.py writes the table of the last run again and keeps the sections measured by hand below it."""
    (tmp_path / "benchmarks" / "plot_vit").mkdir(parents=True)
    (tmp_path / "benchmarks" / "plot_vit" / "fig7.tsv").write_text("s\th:m:s\tmax_rss\n1.5\t0:00:01\t200.4\n")
    page = tmp_path / "timings.md"
    page.write_text(f"# an old table\n\n{timings.BY_HAND}\n\n## The test tiers\n\nmeasured so\n")
    timings.main([str(tmp_path / "benchmarks"), str(page)])
    text = page.read_text()
    assert "an old table" not in text and "| `plot_vit` | 1 | 1.5 |" in text
    assert text.endswith(f"\n{timings.BY_HAND}\n\n## The test tiers\n\nmeasured so\n")
    timings.main([str(tmp_path / "benchmarks"), str(page)])
    assert page.read_text() == text


def marked(mark: str) -> list[str]:
    """The tests of tests/ that carry ``@pytest.mark.<mark>`` (module::function), or whose module does (pytestmark)."""
    found = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        text = path.read_text()
        if f"pytest.mark.{mark}" not in text:
            continue
        tree = ast.parse(text)
        whole = any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
            and f"pytest.mark.{mark}" in ast.unparse(node.value)
            for node in tree.body
        )
        found += [
            f"{path.name}::{node.name}"
            for node in tree.body
            if isinstance(node, ast.FunctionDef)
            and node.name.startswith("test_")
            and (whole or f"pytest.mark.{mark}" in map(ast.unparse, node.decorator_list))
        ]
    return found


def test_the_long_tests_and_the_default_run_are_left_to_their_own_targets_which_ci_runs():
    """`make test` deselects the tests marked long and default_run, `make test-long` and `make test-default-run` run
    exactly them, .ci/run calls both after `make test`; every long test is a slow one (never in the unit tier), and
    the one test marked default_run is the fresh default run's (a second would leave `make test` unnoticed)."""
    recipes = dict(re.findall(r"^([\w-]+): \$\(STAMP\)\n\t(.+)$", (REPO / "Makefile").read_text(), re.MULTILINE))
    assert recipes["test"].endswith('-m "not long and not default_run"')
    assert recipes["test-long"].endswith("-m long") and recipes["test-default-run"].endswith("-m default_run")
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert ci.index("make test") < ci.index("make test-long") < ci.index("make test-default-run")
    assert marked("default_run") == ["test_vit_claims.py::test_the_vit_claims_hold_on_a_fresh_default_run"]
    assert marked("long"), "the rehearsals of minutes are marked long"


def test_a_test_that_starts_a_program_is_put_in_the_slow_tier(tmp_path):
    """The tier of a test (tests/conftest.py): from its body, the functions of its module it calls and the fixtures it
    uses, whatever their depth; a name in a decorator or a docstring does not count."""
    module = tmp_path / "test_example.py"
    module.write_text(
        "import subprocess\n"
        "def helper():\n    return subprocess.run(['true'])\n"
        "def indirect():\n    return helper()\n"
        "def project(tmp_path):\n    return snakemake(tmp_path, '-n')\n"
        "def test_calls(): indirect()\n"
        "def test_fixture(project): pass\n"
        "def test_shared(ci_run): pass\n"
        "@decorated(subprocess)\ndef test_pure():\n    '''not subprocess'''\n    return 1 + 1\n"
    )
    starts = {
        name: starts_a_program(module, name, fixtures)
        for name, fixtures in [
            ("test_calls", []),
            ("test_fixture", ["project"]),
            ("test_shared", ["ci_run"]),
            ("test_pure", ["tmp_path"]),
        ]
    }
    assert starts == {"test_calls": True, "test_fixture": True, "test_shared": True, "test_pure": False}


def test_the_docs_column_lists_are_written_from_the_registry():
    """What a column measures is declared once (``Column.description``): every list of columns in the docs is the
    one tools/column_docs.py writes (`make docs`), and the ViT run's JSON records the same descriptions."""
    pages = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
    blocks = {page.name: column_docs.BLOCK.findall(page.read_text()) for page in pages}
    assert blocks["vit.md"], "docs/vit.md lists the ViT metrics from the registry"
    stale = [page.name for page in pages if column_docs.rewritten(page.read_text()) != page.read_text()]
    assert not stale, f"run `make docs`: {stale}"
    assert "- `w_frobenius`: ||sum_h W_Q,h^T W_K,h||_F" in column_docs.column_list("vit_run_metrics")
    from maxmargin.experiments.vit.results import CONVENTIONS

    assert CONVENTIONS["soft_sparsity"] == registry.table("vit_run_metrics").columns[4].description
