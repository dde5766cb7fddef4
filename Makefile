# `make up` and `make test` work on a fresh machine: both create .venv and install the project into it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CODE := framework plugins tests tools distributions

.PHONY: install up test lint typecheck unit bench clean schema dist

SDK := distributions/hologram-sdk
MODEL := distributions/hologram-use-model

# Three distributions from this tree (docs/install.md): hologram-sdk (the `hologram` package, editable),
# hologram-use-model (the default embedding model; its wheel is built here, once per venv) and hologram (the
# kernel's dependencies and the built-in plugins, editable, with the dev tools).
# Into a venv of your own, without the dev tools: `make install VENV=~/venvs/agent EXTRAS=` (an existing venv
# is used as it is, never made again).
EXTRAS ?= [dev]
$(STAMP): pyproject.toml $(SDK)/pyproject.toml $(MODEL)/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e $(SDK) ./$(MODEL) -e '.$(EXTRAS)'
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

# The wheels of the three distributions, into dist/: `pipx install --pip-args="--find-links dist" dist/hologram-*.whl`
dist: install
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist . ./$(SDK) ./$(MODEL)

clean:
	rm -rf $(VENV) dist .mypy_cache .pytest_cache .ruff_cache hologram.lock .hologram

schema: install
	$(BIN)/hologram schema manifest > docs/manifest.schema.json
	$(BIN)/hologram schema turn-api > docs/turn-api.schema.json
