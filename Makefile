# Every target sets up .venv on first use, so `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast test-all lint docs bench clean browser

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/haul demo

test: $(STAMP) browser
	$(BIN)/pytest -q -n auto --dist loadfile

# the tests marked fast (pyproject.toml): no sandbox, no haul process, under a minute on one core;
# a marker, not a list of folders, because most folders hold both kinds
test-fast: $(STAMP)
	$(BIN)/pytest -q -m fast

# the default run leaves out the longest end-to-end runs (marked slow); this runs everything
test-all: $(STAMP) browser
	$(BIN)/pytest -q -n auto --dist loadfile -m "slow or not slow"

# the HTML report's test opens it in headless Chromium; skipped (with the reason) without one
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
	  || echo 'chromium not installed: the report browser test will be skipped'

# the docs site: docs/ (mkdocs.yml) into build/site; --strict makes a broken link or a page
# left out of the nav an error. The configuration and table references are generated from the
# code at build time (docs/hooks.py); `.venv/bin/mkdocs serve` shows the site while you edit.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir build/site

TYPECHECK := build/typecheck
PACKAGES := connectors state pipelines sandbox orchestrate

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/haul
	for d in $(PACKAGES); do ln -s ../../../$$d $(TYPECHECK)/haul/$$d; done
	cd $(TYPECHECK) && ../../$(BIN)/mypy --config-file ../../pyproject.toml $(foreach d,$(PACKAGES),-p haul.$(d))

# each bench records its figures (bench/results.py) in BENCH_RESULTS; the last line prints them
# as one table with their targets. A bench that fails does not stop the others (its figures are
# missing from the table, and make says which line failed).
BENCH_RESULTS := build/bench/results.jsonl
# the org bench/growth.py migrates and exports in one run (large: 100 000 issues, about two hours)
GROWTH_SIZE ?= large

bench: export HAUL_BENCH_RESULTS := $(abspath $(BENCH_RESULTS))
bench: $(STAMP)
	rm -f $(BENCH_RESULTS)
	-$(BIN)/python bench/sandbox.py
	-$(BIN)/python bench/http_overhead.py
	-$(BIN)/python bench/blobs.py
	-$(BIN)/python bench/tracker.py
	-$(BIN)/python bench/request_counts.py
	-$(BIN)/python bench/load_requests.py
	-$(BIN)/python bench/memory.py
	-$(BIN)/python bench/export_memory.py
	-$(BIN)/python bench/growth.py --size $(GROWTH_SIZE)
	-$(BIN)/python bench/wiki.py --size medium
	-$(BIN)/python bench/forms.py --size medium
	-$(BIN)/python bench/plan.py
	-$(BIN)/python bench/status.py
	-$(BIN)/python bench/budget.py
	-$(BIN)/python bench/shared_budget.py
	-$(BIN)/python bench/pacing.py
	$(BIN)/python bench/table.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
