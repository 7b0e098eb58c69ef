# The two commands of the README: `make run` (the default study) and `make test`.
# Both set up a virtual environment in .venv first (once; again when pyproject.toml changes).
PYTHON ?= python3
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
# Jobs call `python -m joulebench`: the venv's python must come first on PATH.
WITH_VENV := PATH="$(BIN):$$PATH"
CORES ?= all

.PHONY: setup run test lint format clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: setup
	$(WITH_VENV) snakemake --cores $(CORES)

test: setup
	$(WITH_VENV) python -m pytest

lint: setup
	$(WITH_VENV) ruff check . && ruff format --check . && snakefmt --check . && snakemake --lint

format: setup
	$(WITH_VENV) ruff format . && ruff check --fix . && snakefmt .

clean:
	rm -rf results/*/ results/*.parquet results/*.csv logs .snakemake
