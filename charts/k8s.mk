# logberg on Kubernetes: images, one deploy flow for the local cluster, kind and EKS, the
# demo, chart checks. Included by the root Makefile (`-include charts/k8s.mk`); every target
# has a `## description` for `make help`. Versions come from jobs/logberg/versions.toml only.

TOOLS              ?= $(CURDIR)/.tools
VENV               ?= .venv
PYTHON             ?= python3
# Where to deploy: local (this machine's cluster, `make cluster-up`), kind or eks.
K8S_TARGET         ?= local
K8S_NAMESPACE      ?= logberg
OPERATOR_NAMESPACE ?= spark-operator
# The metastore's namespace (EKS keeps it apart from the jobs').
METASTORE_NAMESPACE ?= $(K8S_NAMESPACE)
KIND_CLUSTER       ?= logberg
# The kube context and kubeconfig: the local cluster's own, kind's `kind-<name>`, or (EKS)
# the current context of ~/.kube/config (`aws eks update-kubeconfig`).
K8S_CONTEXT        ?= $(if $(filter local,$(K8S_TARGET)),$(CLUSTER_CONTEXT),$(if $(filter kind,$(K8S_TARGET)),kind-$(KIND_CLUSTER),))
K8S_KUBECONFIG     ?= $(if $(filter local,$(K8S_TARGET)),$(CLUSTER_HOME)/kubeconfig,)
# Extra values files per release, e.g. K8S_VALUES="logberg=my.yaml hive-metastore=hms.yaml".
K8S_VALUES         ?=
# EKS: the registry the images were pushed to (<account>.dkr.ecr.<region>.amazonaws.com).
IMAGE_REGISTRY     ?=
K8S_WAIT_SECONDS   ?= 1800
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

# Images (images/README.md): logberg_platform.build.images builds them with docker buildx
# where a Docker daemon answers, else with podman, and tags each by a hash of its inputs
# (<name>:<logberg version>-<hash>); `$(IMAGES) tag NAME` prints the tag an image has now.
IMAGES = PYTHONPATH=$(CURDIR)/jobs $(K8S_PYTHON) -m logberg_platform.build.images
# podman/buildah settings for this machine (runtime, rlimits), written by `make` once.
CONTAINERS_CONF ?= $(CURDIR)/.logberg/containers.conf
export CONTAINERS_CONF
# The spark-operator image: `local` (images/spark-operator: the upstream controller built
# on our Spark image, so it submits with our Spark) or `upstream` (the chart's own image).
SPARK_OPERATOR_IMAGE ?= local
IMAGE_ARCHIVE ?= $(CURDIR)/.logberg/images/logberg-images.tar
ALL_IMAGES := spark hive-metastore spark-operator dev-postgres dev-s3
# What k8s-deploy builds: EKS runs only the shipped images (EKS_IMAGES, eks/eks.mk: what
# eks-push pushes), never the dev backends.
DEPLOY_IMAGES = $(if $(filter eks,$(K8S_TARGET)),$(EKS_IMAGES),$(ALL_IMAGES))

KC = $(KUBECTL) $(if $(K8S_KUBECONFIG),--kubeconfig=$(K8S_KUBECONFIG)) $(if $(K8S_CONTEXT),--context=$(K8S_CONTEXT)) -n $(K8S_NAMESPACE)
K8S = LOGBERG_CLUSTER_HOME=$(CLUSTER_HOME) LOGBERG_CLUSTER_CONTEXT=$(CLUSTER_CONTEXT) \
	$(VENV)/bin/logberg k8s $(if $(K8S_KUBECONFIG),--kubeconfig=$(K8S_KUBECONFIG)) $(if $(K8S_CONTEXT),--context=$(K8S_CONTEXT)) --namespace=$(K8S_NAMESPACE)

# $(call need,COMMAND,HINT): fail with a clear message when COMMAND is missing.
need = command -v $(1) >/dev/null 2>&1 || { echo "error: '$(1)' not found. $(2)" >&2; exit 1; }
NEED_KIND    = $(call need,$(KIND),Install kind (https://kind.sigs.k8s.io/docs/user/quick-start/) or set KIND=/path/to/kind.)
NEED_DOCKER  = $(call need,$(DOCKER),Install Docker with BuildKit or set DOCKER=/path/to/docker.)
NEED_KUBECTL = $(call need,$(KUBECTL),Run 'make tools' or set KUBECTL=/path/to/kubectl.)

.PHONY: images image-spark image-hive-metastore image-spark-operator image-archive base-images \
	test-images k8s-deploy k8s-demo k8s-examples sql-k8s kind-up kind-demo kind-down checkov k8s-static

$(CONTAINERS_CONF):
	$(IMAGES) containers-conf $@

images: | $(CONTAINERS_CONF) ## build the Spark, Hive Metastore, spark-operator and dev backend images (skips unchanged ones)
	$(IMAGES) build $(ALL_IMAGES)

image-spark: | $(CONTAINERS_CONF) ## build images/spark (logberg-spark:<logberg version>-<input hash>)
	$(IMAGES) build spark

image-hive-metastore: | $(CONTAINERS_CONF) ## build images/hive-metastore
	$(IMAGES) build hive-metastore

image-spark-operator: | $(CONTAINERS_CONF) ## build images/spark-operator (the controller from its Go module, on the Spark image)
	$(IMAGES) build spark-operator

image-archive: images ## one archive of the images for a containerd node (IMAGE_ARCHIVE; `ctr -n k8s.io images import`)
	$(IMAGES) save $(ALL_IMAGES) -o $(IMAGE_ARCHIVE)

base-images: | $(CONTAINERS_CONF) ## make the Debian base with debootstrap, for machines without a registry (root; BASE_REBUILD=1 remakes it)
	$(IMAGES) base $(if $(BASE_REBUILD),--rebuild,)

test-images: | $(CONTAINERS_CONF) ## the images the container and cluster tests run (nothing without docker or podman)
	@if $(IMAGES) builder >/dev/null 2>&1; then \
	  $(IMAGES) build $(ALL_IMAGES); \
	else \
	  echo "no container builder (docker with buildx, or podman): the container tests will be skipped"; \
	fi

k8s-deploy: tools | $(CONTAINERS_CONF) ## deploy to K8S_TARGET (local|kind|eks; K8S_CONTEXT): images, dev backends, Spark Operator (CRDs first), metastore (+ helm test), logberg
	$(IMAGES) build $(DEPLOY_IMAGES)
	$(K8S) deploy --target=$(K8S_TARGET) --operator-namespace=$(OPERATOR_NAMESPACE) \
	  --metastore-namespace=$(METASTORE_NAMESPACE) \
	  --operator-image=$(SPARK_OPERATOR_IMAGE) --helm=$(HELM) --kubectl=$(KUBECTL) \
	  --kind-cluster=$(KIND_CLUSTER) $(if $(IMAGE_REGISTRY),--image-registry=$(IMAGE_REGISTRY)) \
	  $(foreach v,$(K8S_VALUES),--values=$(v))

k8s-demo: ## on the deployed cluster: the generator Job, then `kubectl apply` of the ingest and analytics examples, then the top tables through spark-sql
	@$(NEED_KUBECTL)
	$(K8S) wait job --selector=app.kubernetes.io/instance=logberg,app.kubernetes.io/component=generator \
	  --timeout=$(K8S_WAIT_SECONDS)
	@set -e; for app in ingest analytics; do \
	  echo "$$ kubectl apply -f charts/logberg/examples/$$app.yaml"; \
	  $(KC) delete -f charts/logberg/examples/$$app.yaml --ignore-not-found --cascade=foreground --wait >/dev/null; \
	  $(KC) apply -f charts/logberg/examples/$$app.yaml; \
	  $(K8S) wait app logberg-$$app-example --timeout=$(K8S_WAIT_SECONDS); \
	done
	@echo "$$ make sql-k8s < charts/logberg/examples/top.sql"
	@$(MAKE) --no-print-directory -s sql-k8s < charts/logberg/examples/top.sql

sql-k8s: ## spark-sql in the cluster's toolbox pod, through the metastore (interactive; or pipe SQL in: make sql-k8s < file.sql)
	@$(NEED_KUBECTL)
	@if [ -t 0 ]; then \
	  $(KC) exec -it deploy/logberg-toolbox -- spark-sql; \
	else \
	  $(KC) exec -i deploy/logberg-toolbox -- spark-sql -S --hiveconf hive.cli.print.header=true -f /dev/stdin; \
	fi

k8s-examples: tools ## regenerate charts/logberg/examples/*.yaml from the chart (values-kind.yaml)
	$(K8S_PYTHON) charts/render_examples.py --helm=$(HELM)

kind-up: ## a kind cluster (pinned node image), then the same flow as k8s-deploy with K8S_TARGET=kind (idempotent)
	@$(NEED_KIND); $(NEED_DOCKER)
	@if $(KIND) get clusters 2>/dev/null | grep -qx '$(KIND_CLUSTER)'; then \
	  echo "kind cluster '$(KIND_CLUSTER)' exists"; \
	else \
	  $(KIND) create cluster --name $(KIND_CLUSTER) --config charts/kind/kind-config.yaml \
	    --image $(call pin,kubernetes,kind_node_image) --wait 180s; \
	fi
	$(MAKE) --no-print-directory k8s-deploy K8S_TARGET=kind

kind-demo: ## the same demo as k8s-demo, on kind
	$(MAKE) --no-print-directory k8s-demo K8S_TARGET=kind

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
	$(VENV)/bin/pytest -m static tests/static/test_charts.py tests/static/test_images.py -q
