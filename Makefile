# The two commands of the README: `make run` (the default study) and `make test`.
# Both set up a virtual environment in .venv first (once; again when pyproject.toml changes).
PYTHON ?= $(shell command -v python3)
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all
# `make test` runs the tests in this many processes, each test file whole in one (its
# module fixtures built once); 2 fits the 2-core machine CI runs on.
TEST_WORKERS ?= 2
# Jobs run with the interpreter that runs snakemake (workflow/rules/common.smk): no PATH needed.

.PHONY: setup run test lint format clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: setup
	$(BIN)/snakemake --cores $(CORES)

test: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/snakefmt --check . \
		&& $(BIN)/snakemake --lint

format: setup
	$(BIN)/ruff format . && $(BIN)/ruff check --fix . && $(BIN)/snakefmt .

clean:
	rm -rf results/*/ results/*.parquet results/*.csv logs .snakemake
