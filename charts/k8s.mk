# logberg on Kubernetes: images, the kind path, chart checks. Included by the root Makefile
# (`-include charts/k8s.mk`); every target has a `## description` for `make help`.
# Versions come from jobs/logberg/versions.toml only.

TOOLS              ?= $(CURDIR)/.tools
VENV               ?= .venv
PYTHON             ?= python3
K8S_NAMESPACE      ?= logberg
OPERATOR_NAMESPACE ?= spark-operator
KIND_CLUSTER       ?= logberg
K8S_CONTEXT        ?= kind-$(KIND_CLUSTER)
SPARK_IMAGE        ?= logberg-spark
HMS_IMAGE          ?= logberg-hive-metastore
SPARK_OPERATOR_REPO ?= https://kubeflow.github.io/spark-operator
K8S_WAIT_SECONDS   ?= 1800
K8S_TOP_ROWS       ?= 10
CHECKOV_VERSION    ?= 3.3.30
CHECKOV_VENV       := $(TOOLS)/checkov-venv
CHECKOV            := $(CHECKOV_VENV)/bin/checkov

# helm/kubectl: .tools/bin (make tools) when present, else PATH. kind/docker: PATH.
HELM    ?= $(if $(wildcard $(TOOLS)/bin/helm),$(TOOLS)/bin/helm,helm)
KUBECTL ?= $(if $(wildcard $(TOOLS)/bin/kubectl),$(TOOLS)/bin/kubectl,kubectl)
KIND    ?= kind
DOCKER  ?= docker
# tomllib needs Python >= 3.11: prefer the project venv's interpreter.
K8S_PYTHON ?= $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,$(PYTHON))

VERSIONS_TOML := jobs/logberg/versions.toml
# $(call pin,SECTION,KEY): one value of versions.toml (evaluated only where used).
pin = $(shell $(K8S_PYTHON) -c 'import tomllib; print(tomllib.load(open("$(VERSIONS_TOML)", "rb"))["$(1)"]["$(2)"])')
SPARK_MINOR_PIN = $(shell $(K8S_PYTHON) -c 'import tomllib; v = tomllib.load(open("$(VERSIONS_TOML)", "rb"))["spark"]["version"]; print(".".join(v.split(".")[:2]))')
LOGBERG_VERSION = $(shell $(K8S_PYTHON) -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')

# Images (images/README.md): logberg.platform.build.images builds them with docker buildx
# where a Docker daemon answers, else with podman, and tags each by a hash of its inputs
# (<name>:<logberg version>-<hash>); `$(IMAGES) tag NAME` prints the tag an image has now.
IMAGES = PYTHONPATH=$(CURDIR)/jobs $(K8S_PYTHON) -m logberg.platform.build.images
# podman/buildah settings for this machine (runtime, rlimits), written by `make` once.
CONTAINERS_CONF ?= $(CURDIR)/.logberg/containers.conf
export CONTAINERS_CONF
# The spark-operator image the cluster runs: `upstream` (the chart's own, from ghcr.io) or
# `local` (images/spark-operator, for clusters that cannot reach a registry).
SPARK_OPERATOR_IMAGE ?= upstream
IMAGE_ARCHIVE ?= $(CURDIR)/.logberg/images/logberg-images.tar
image_tag = $(shell $(IMAGES) tag $(1))
SPARK_TAG = $(call image_tag,spark)
HMS_TAG   = $(call image_tag,hive-metastore)
OPERATOR_TAG = $(call image_tag,spark-operator)
# The tag part alone (after the colon), for the charts' image.tag values.
tag_of = $(word 2,$(subst :, ,$(1)))
# SPARK_OPERATOR_IMAGE=local: the upstream chart runs images/spark-operator instead of its own.
OPERATOR_IMAGE_VALUES = $(if $(filter local,$(SPARK_OPERATOR_IMAGE)),--set image.registry=docker.io \
	--set image.repository=library/$(firstword $(subst :, ,$(OPERATOR_TAG))) \
	--set image.tag=$(call tag_of,$(OPERATOR_TAG)),)

KC = $(KUBECTL) --context $(K8S_CONTEXT)
HC = $(HELM) --kube-context $(K8S_CONTEXT)

# $(call need,COMMAND,HINT): fail with a clear message when COMMAND is missing.
need = command -v $(1) >/dev/null 2>&1 || { echo "error: '$(1)' not found. $(2)" >&2; exit 1; }
NEED_KIND    = $(call need,$(KIND),Install kind (https://kind.sigs.k8s.io/docs/user/quick-start/) or set KIND=/path/to/kind.)
NEED_DOCKER  = $(call need,$(DOCKER),Install Docker with BuildKit or set DOCKER=/path/to/docker.)
NEED_HELM    = $(call need,$(HELM),Run 'make tools' or set HELM=/path/to/helm.)
NEED_KUBECTL = $(call need,$(KUBECTL),Run 'make tools' or set KUBECTL=/path/to/kubectl.)

# $(call wait_app,NAME): wait (kubectl wait) until a SparkApplication is COMPLETED; fail
# fast, with the driver's log tail, when it FAILED.
define wait_app
	@echo "waiting for SparkApplication $(1) (up to $(K8S_WAIT_SECONDS)s)"; \
	deadline=$$(( $$(date +%s) + $(K8S_WAIT_SECONDS) )); \
	until $(KC) -n $(K8S_NAMESPACE) wait sparkapplication/$(1) \
	    --for=jsonpath='{.status.applicationState.state}'=COMPLETED --timeout=20s >/dev/null 2>&1; do \
	  state=$$($(KC) -n $(K8S_NAMESPACE) get sparkapplication/$(1) -o jsonpath='{.status.applicationState.state}' 2>/dev/null); \
	  case "$$state" in FAILED|SUBMISSION_FAILED) \
	    echo "SparkApplication $(1): $$state" >&2; \
	    $(KC) -n $(K8S_NAMESPACE) logs $(1)-driver --tail=60 >&2 || true; exit 1;; esac; \
	  if [ $$(date +%s) -ge $$deadline ]; then echo "SparkApplication $(1): timed out in state '$$state'" >&2; exit 1; fi; \
	  echo "  $(1): $${state:-PENDING}"; \
	done; echo "SparkApplication $(1): COMPLETED"
endef

# The logberg chart on kind; the stage flags are added per step by kind-demo.
LOGBERG_KIND_RELEASE = $(HC) upgrade --install logberg charts/logberg -n $(K8S_NAMESPACE) \
	-f charts/logberg/values-kind.yaml --set image.tag=$(call tag_of,$(SPARK_TAG)) --wait --timeout 10m

.PHONY: images image-spark image-hive-metastore image-spark-operator image-archive base-images \
	test-images kind-load kind-up kind-secrets kind-demo kind-down sql-k8s checkov k8s-static

$(CONTAINERS_CONF):
	$(IMAGES) containers-conf $@

images: | $(CONTAINERS_CONF) ## build the Spark, Hive Metastore and spark-operator images (skips unchanged ones)
	$(IMAGES) build spark hive-metastore spark-operator

image-spark: | $(CONTAINERS_CONF) ## build images/spark (logberg-spark:<logberg version>-<input hash>)
	$(IMAGES) build spark

image-hive-metastore: | $(CONTAINERS_CONF) ## build images/hive-metastore
	$(IMAGES) build hive-metastore

image-spark-operator: | $(CONTAINERS_CONF) ## build images/spark-operator (the controller from its Go module, on the Spark image)
	$(IMAGES) build spark-operator

image-archive: images ## one archive of the three images for a containerd node (IMAGE_ARCHIVE; `ctr -n k8s.io images import`)
	$(IMAGES) save spark hive-metastore spark-operator -o $(IMAGE_ARCHIVE)

base-images: | $(CONTAINERS_CONF) ## make the Debian base with debootstrap, for machines without a registry (root; BASE_REBUILD=1 remakes it)
	$(IMAGES) base $(if $(BASE_REBUILD),--rebuild,)

test-images: | $(CONTAINERS_CONF) ## the images and test fixtures tests/test_containers*.py run (nothing without docker or podman)
	@if $(IMAGES) builder >/dev/null 2>&1; then \
	  $(IMAGES) build spark hive-metastore spark-operator dev-postgres dev-s3; \
	else \
	  echo "no container builder (docker with buildx, or podman): the container tests will be skipped"; \
	fi

kind-load: ## load the images into the kind cluster (KIND_CLUSTER=logberg; docker)
	@$(NEED_KIND)
	$(KIND) load docker-image --name $(KIND_CLUSTER) $(SPARK_TAG) $(HMS_TAG) \
	  $(if $(filter local,$(SPARK_OPERATOR_IMAGE)),$(OPERATOR_TAG),)

kind-up: ## kind cluster, images, dev PostgreSQL + S3, Spark Operator, Hive Metastore (idempotent)
	@$(NEED_KIND); $(NEED_DOCKER); $(NEED_HELM); $(NEED_KUBECTL)
	@if $(KIND) get clusters 2>/dev/null | grep -qx '$(KIND_CLUSTER)'; then \
	  echo "kind cluster '$(KIND_CLUSTER)' exists"; \
	else \
	  $(KIND) create cluster --name $(KIND_CLUSTER) --config charts/kind/kind-config.yaml \
	    --image $(call pin,kubernetes,kind_node_image) --wait 180s; \
	fi
	$(MAKE) --no-print-directory images kind-load
	$(KC) create namespace $(K8S_NAMESPACE) --dry-run=client -o yaml | $(KC) apply -f -
	$(MAKE) --no-print-directory kind-secrets
	$(HC) upgrade --install logberg-dev charts/logberg-dev -n $(K8S_NAMESPACE) \
	  --set bucketJob.image.repository=$(SPARK_IMAGE) --set bucketJob.image.tag=$(call tag_of,$(SPARK_TAG)) \
	  --wait --timeout 10m
	$(HC) upgrade --install spark-operator spark-operator --repo $(SPARK_OPERATOR_REPO) \
	  --version $(call pin,kubernetes,spark_operator_chart) -n $(OPERATOR_NAMESPACE) --create-namespace \
	  -f charts/values/spark-operator.yaml $(OPERATOR_IMAGE_VALUES) --wait --timeout 10m
	$(HC) upgrade --install hive-metastore charts/hive-metastore -n $(K8S_NAMESPACE) \
	  -f charts/hive-metastore/values-kind.yaml --set image.repository=$(HMS_IMAGE) \
	  --set image.tag=$(call tag_of,$(HMS_TAG)) --wait --timeout 15m
	$(HC) test hive-metastore -n $(K8S_NAMESPACE) --timeout 5m --logs
	@echo "kind is up: next 'make kind-demo', then 'make sql-k8s'"

kind-secrets: ## create the dev database and S3 Secrets with random values, unless they exist
	@$(NEED_KUBECTL)
	@$(KC) -n $(K8S_NAMESPACE) get secret logberg-metastore-db >/dev/null 2>&1 \
	  && echo "secret logberg-metastore-db exists (kept)" \
	  || $(K8S_PYTHON) charts/kind/gen-secret.py logberg-metastore-db $(K8S_NAMESPACE) \
	       username=literal:hive password=random | $(KC) create -f -
	@$(KC) -n $(K8S_NAMESPACE) get secret logberg-s3 >/dev/null 2>&1 \
	  && echo "secret logberg-s3 exists (kept)" \
	  || $(K8S_PYTHON) charts/kind/gen-secret.py logberg-s3 $(K8S_NAMESPACE) \
	       AWS_ACCESS_KEY_ID=random:lb AWS_SECRET_ACCESS_KEY=random | $(KC) create -f -

kind-demo: ## on kind: generator Job, ingest, analytics (waits for each), then print the top tables
	@$(NEED_HELM); $(NEED_KUBECTL)
	-$(KC) -n $(K8S_NAMESPACE) delete sparkapplication,job -l app.kubernetes.io/instance=logberg \
	  --ignore-not-found --wait
	$(LOGBERG_KIND_RELEASE) --set generator.enabled=true --set ingest.enabled=false --set analytics.enabled=false
	$(KC) -n $(K8S_NAMESPACE) wait job/logberg-generator --for=condition=complete --timeout=$(K8S_WAIT_SECONDS)s
	$(LOGBERG_KIND_RELEASE) --set generator.enabled=true --set ingest.enabled=true --set analytics.enabled=false
	$(call wait_app,logberg-ingest)
	$(LOGBERG_KIND_RELEASE) --set generator.enabled=true --set ingest.enabled=true --set analytics.enabled=true
	$(call wait_app,logberg-analytics)
	@echo "== tables in nginx_logs"
	@tables=$$($(KC) -n $(K8S_NAMESPACE) exec deploy/logberg-toolbox -- \
	    spark-sql -S -e 'SHOW TABLES IN nginx_logs' 2>/dev/null | awk '{print $$2}'); \
	echo "$$tables"; \
	sql=""; for t in $$tables; do case "$$t" in *top*) \
	  sql="$$sql SELECT '$$t' AS top_table, * FROM nginx_logs.$$t LIMIT $(K8S_TOP_ROWS);";; esac; done; \
	if [ -z "$$sql" ]; then echo "no top tables found in nginx_logs" >&2; exit 1; fi; \
	$(KC) -n $(K8S_NAMESPACE) exec deploy/logberg-toolbox -- spark-sql -S -e "$$sql"

sql-k8s: ## spark-sql in the toolbox pod on the cluster (the same catalog as the jobs)
	@$(NEED_KUBECTL)
	$(KC) -n $(K8S_NAMESPACE) exec -it deploy/logberg-toolbox -- spark-sql

kind-down: ## delete the kind cluster (and everything in it)
	@$(NEED_KIND)
	$(KIND) delete cluster --name $(KIND_CLUSTER)

checkov: ## install the pinned checkov into .tools/checkov-venv (its own venv; idempotent)
	@if [ -x "$(CHECKOV)" ] && [ "$$("$(CHECKOV)" --version 2>/dev/null)" = "$(CHECKOV_VERSION)" ]; then \
	  echo "checkov $(CHECKOV_VERSION) ready in $(CHECKOV_VENV)"; \
	else \
	  $(PYTHON) -m venv "$(CHECKOV_VENV)" && \
	  "$(CHECKOV_VENV)/bin/pip" install -q --upgrade pip && \
	  "$(CHECKOV_VENV)/bin/pip" install -q "checkov==$(CHECKOV_VERSION)" && \
	  echo "checkov $$("$(CHECKOV)" --version) installed in $(CHECKOV_VENV)"; \
	fi

k8s-static: checkov ## static chart/image checks: helm lint, kubernetes-validate, checkov, structure
	$(VENV)/bin/pytest -m static tests/test_charts*.py tests/test_images*.py -q
