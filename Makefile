# The two commands of the README:
#   make figures   builds every figure and table (creates .venv and installs the package when missing)
#   make test      runs the test suite in the same environment
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2
# Extra Snakemake arguments, e.g. make figures SMK_ARGS="fig3 --forceall"
SMK_ARGS ?=

.PHONY: all figures test lint report gallery clean-results

all: figures

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

figures: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) $(SMK_ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest

# The HTML report: every figure with its caption, the tables, the claims table (needs `make figures` first).
report: figures
	$(BIN)/snakemake --cores $(CORES) --report results/report.html

# Small copies of the default run's figures for the README (docs/gallery/, committed).
gallery: figures
	$(BIN)/snakemake --cores $(CORES) gallery

lint: $(STAMP)
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow/rules

clean-results:
	rm -rf results .snakemake
