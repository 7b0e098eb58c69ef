# The two commands of the README: `make run` (the default study) and `make test`.
# Both set up a virtual environment in .venv first (once; again when pyproject.toml changes).
PYTHON ?= $(shell command -v python3)
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all
# Jobs call `python -m joulebench`: the venv's python must come first on PATH.
export PATH := $(BIN):$(PATH)

.PHONY: setup run test lint format clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: setup
	snakemake --cores $(CORES)

test: setup
	python -m pytest

lint: setup
	ruff check . && ruff format --check . && snakefmt --check . && snakemake --lint

format: setup
	ruff format . && ruff check --fix . && snakefmt .

clean:
	rm -rf results/*/ results/*.parquet results/*.csv logs .snakemake
