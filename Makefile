# The two commands of the README:
#   make figures   builds every figure and table (creates .venv and installs the package when missing)
#   make test      runs the test suite in the same environment, but its rehearsals of minutes (make test-fast: its
#                  unit tier; make test-long: the rehearsals; make test-default-run: the one test that trains the
#                  default ViT from scratch; CI runs all three)
# and: make report (HTML report), make gallery (README thumbnails), make lint, make docs (every generated page),
#      make gpu-kit (wheels and Fashion-MNIST for an offline GPU node, in gpu_kit/: docs/gpu.md)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2
# Python's bytecode cache (__pycache__, ignored by git) stays on for every command here, also where the environment
# turns it off (PYTHONDONTWRITEBYTECODE, as some container images set): without it each pytest process compiles every
# test module again (pytest's assertion rewriting), 7 s of a unit-tier run on 2 cores.
unexport PYTHONDONTWRITEBYTECODE
# Extra Snakemake arguments, e.g. make figures SMK_ARGS="fig3 --forceall"
SMK_ARGS ?=

# Every Snakemake run of this Makefile holds RUN_LOCK (util-linux flock) for as long as it runs: a second Makefile run
# is refused at once, with a clear message, instead of Snakemake's. Snakemake's own lock is the inner layer: it is
# pinned below 9.17 (pyproject.toml), because from 9.17 on any snakemake that exits deletes the whole
# .snakemake/locks folder, the locks of runs still going included.
# (snakemake --lint and dry runs neither take nor delete locks, so `make lint` needs no guard.)
RUN_LOCK := .snakemake/make.lock
BUSY_EXIT := 75
# Prefix of a recipe line: take RUN_LOCK on fd 9 (inherited by snakemake and its jobs, released when the last of
# them exits, killed or not) or stop with a clear message. No other Makefile run can be active; a Snakemake run
# started some other way may be (`snakemake`, `python -m snakemake`, from any directory with --directory here):
# tools/live_runs.sh looks for Snakemake processes (an idle python, a Jupyter kernel is none). Its lock then stays
# (Snakemake itself refuses an overlapping run); a lock with no such process is stale (an interrupted run) and
# cleared; where the script cannot tell (Snakemake processes it may not inspect), the recipe stops, naming them, and
# prints the unlock command instead of guessing.
LOCKED = mkdir -p $(dir $(RUN_LOCK)) && exec 9>$(RUN_LOCK) \
	&& { flock -n 9 || { echo "make: another snakemake run is active in this directory (it holds $(RUN_LOCK));" \
	     "wait for it to finish" >&2; exit $(BUSY_EXIT); }; } \
	&& if [ -n "$$(ls -A .snakemake/locks 2>/dev/null)" ]; then \
	     state="$$(bash tools/live_runs.sh)"; \
	     case "$$state" in \
	     none) echo "make: clearing a stale Snakemake lock left by an interrupted run"; \
	           $(BIN)/snakemake --unlock --quiet >/dev/null 2>&1 || true;; \
	     live*) echo "make: keeping the Snakemake lock of the run still going here (pid $${state\#live })";; \
	     *) echo "make: a Snakemake lock is here, and whether its run is still going cannot be told" \
	             "(Snakemake process $${state\#unknown } cannot be inspected). If no run is going, clear it:" \
	             "$(BIN)/snakemake --unlock" >&2; exit $(BUSY_EXIT);; \
	     esac; fi \
	&& set -x &&

.PHONY: all figures test test-fast test-long test-default-run lint report gallery docs clean-results gpu-kit
# One recipe at a time (make -j report gallery): two locked recipes at once would refuse each other.
.NOTPARALLEL:

all: figures

# The package (editable) with the pipeline's extras (`pip install .` alone is the maths: pyproject.toml) and the
# workflow's terminal output (./workflow/logger, a Snakemake logger plugin).
$(STAMP): pyproject.toml workflow/logger/pyproject.toml workflow/logger/snakemake_logger_plugin_maxmargin/__init__.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e ".[workflow,vit,test]" ./workflow/logger
	touch $(STAMP)

figures: $(STAMP)
	@$(LOCKED) $(BIN)/snakemake --cores $(CORES) $(SMK_ARGS)

# The suite on two workers (pytest-xdist, a test module per worker at a time, the longest first; they share one
# built CI run: tests/conftest.py), with its 20 slowest tests listed at the end, but the tests marked long (test-long)
# and default_run (test-default-run); and the unit tier: every test that starts no program (tests/conftest.py;
# CONTRIBUTING.md, "Test tiers"), on two workers too, a module at a time each, so that a module's fixtures are built
# once (on 2 cores of one machine, 65 s of wall against 112 s in one process: each worker collects every module, but
# the tests' time is shared; docs/results/timings.md).
test: $(STAMP)
	$(BIN)/python -m pytest -n $(CORES) --dist loadfile --no-loadscope-reorder --durations=20 -m "not long and not default_run"

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(CORES) --dist loadfile -m "not slow"

# The rehearsals of minutes each (marked long: GPU sessions rehearsed on the CPU, a Snakemake summary per config key,
# CONTRIBUTING's steps in a copy of the tree, a training cached across work directories), as `make test` runs its
# tests; CI runs them after `make test`.
test-long: $(STAMP)
	$(BIN)/python -m pytest -n $(CORES) --dist loadfile --no-loadscope-reorder --durations=20 -m long

# The default config's ViT trained from scratch in a temporary copy of the workflow and its claims checked (the test
# marked default_run: minutes of two cores, alone; CI runs it after `make test-long`, not beside it).
test-default-run: $(STAMP)
	$(BIN)/python -m pytest -m default_run

# The HTML report: every figure with its caption, the tables, the claims table (needs `make figures` first).
report: figures
	@$(LOCKED) $(BIN)/snakemake --cores $(CORES) --report results/report.html

# Small copies of the default run's figures for the README (docs/gallery/, committed), the README's gallery block,
# and the baseline image of a figure that has none (maxmargin/docs/gallery.py; one panel: python tools/gallery.py
# PANEL), the default run's tables the docs quote (docs/results/default/) and its timings (maxmargin/docs/timings.py);
# then every generated page again (make docs), the docs' numbers of the default run among them.
gallery: figures
	@$(LOCKED) $(BIN)/python -m maxmargin.docs.gallery --cores $(CORES)
	$(BIN)/python -m maxmargin.docs.timings results/benchmarks docs/results/timings.md
	$(MAKE) --no-print-directory docs

# Every generated page, from what it is written from, by the writers of maxmargin/docs/ (tests fail while one is
# stale: tests/test_packaging.py, DOCS_GENERATORS): docs/config.md (the schema, default.yaml and who reads each key),
# the docs' lists of what columns measure (the registry), docs/api.md (maxmargin.core's docstrings), the committed ViT
# runs' claims measured again by today's code (their tables), the docs' numbers of the committed runs (their tables) and the GPU sessions' page and status sentences (their files). Not the gallery
# nor the timings table: they are a full run's (make gallery).
docs: $(STAMP)
	$(BIN)/python -m maxmargin.docs.config_docs docs/config.md
	$(BIN)/python -m maxmargin.docs.column_docs README.md CONTRIBUTING.md docs/*.md
	$(BIN)/python -m maxmargin.docs.api_docs
	$(BIN)/python -m maxmargin.docs.committed_claims
	$(BIN)/python -m maxmargin.docs.run_docs
	$(BIN)/python -m maxmargin.docs.gpu_report

# What an offline GPU node lacks, for tools/gpu_session.sh there: prints the wheels, the travel size and the command.
gpu-kit: $(STAMP)
	$(BIN)/python -m maxmargin.gpu.kit_build

lint: $(STAMP)
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow/rules

# Not while a run is going; RUN_LOCK itself stays, so a run started meanwhile still locks the same file.
clean-results:
	@$(LOCKED) rm -rf results && find .snakemake -mindepth 1 -maxdepth 1 ! -name $(notdir $(RUN_LOCK)) -exec rm -rf {} +
