# Every target sets up .venv on first use, so `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/haul demo

test: $(STAMP)
	$(BIN)/pytest -q

TYPECHECK := build/typecheck
PACKAGES := connectors state pipelines sandbox

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/haul
	for d in $(PACKAGES); do ln -s ../../../$$d $(TYPECHECK)/haul/$$d; done
	cd $(TYPECHECK) && ../../$(BIN)/mypy --config-file ../../pyproject.toml $(foreach d,$(PACKAGES),-p haul.$(d))

bench: $(STAMP)
	$(BIN)/python bench/sandbox.py
	$(BIN)/python bench/http_overhead.py
	$(BIN)/python bench/tracker.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
