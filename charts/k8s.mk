# logberg on Kubernetes: one deploy flow for kind and EKS, the demo, the chart checks.
# Included by the root Makefile, which defines the tools (HELM, KUBECTL, KIND, DOCKER,
# K8S_PYTHON) and the images (IMAGES, ALL_IMAGES, EKS_IMAGES, CONTAINERS_CONF); every target
# has a `## description` for `make help`. Versions come from jobs/logberg/versions.toml only.

# Where to deploy: kind (`make kind-up`) or eks.
K8S_TARGET         ?= kind
K8S_NAMESPACE      ?= logberg
OPERATOR_NAMESPACE ?= spark-operator
# The metastore's namespace (EKS keeps it apart from the jobs').
METASTORE_NAMESPACE ?= $(K8S_NAMESPACE)
KIND_CLUSTER       ?= logberg
KIND_CONFIG        ?= charts/kind/kind-config.yaml
# kind's node image: auto (kind's kindest/node, pinned by digest, where the provider has it
# or Docker Hub answers; else logberg's offline image, `make kind-node-image`), kindest,
# offline, or an image reference.
KIND_NODE_IMAGE    ?= auto
KIND_RUN = KIND="$(KIND)" KIND_NODE_IMAGE="$(KIND_NODE_IMAGE)" $(VENV)/bin/logberg kind
# The kube context: kind's `kind-<name>`, or (EKS) the current context of ~/.kube/config
# (`aws eks update-kubeconfig`). The kubeconfig: empty for the usual one (KUBECONFIG, else
# ~/.kube/config), or a file of its own.
K8S_CONTEXT        ?= $(if $(filter kind,$(K8S_TARGET)),kind-$(KIND_CLUSTER),)
K8S_KUBECONFIG     ?=
# Extra values files per release, e.g. K8S_VALUES="logberg=my.yaml hive-metastore=hms.yaml".
K8S_VALUES         ?=
# EKS: the registry the images were pushed to (<account>.dkr.ecr.<region>.amazonaws.com).
IMAGE_REGISTRY     ?=
K8S_WAIT_SECONDS   ?= 1800
# What `make k8s-demo` reads: files (the generator's files in the landing bucket, one
# ingest) or kafka (the generator to the dev broker's topic, and the stream that reads it).
K8S_DEMO_SOURCE    ?= files
# The spark-operator image: `local` (images/spark-operator: the upstream controller built
# on our Spark image, so it submits with our Spark) or `upstream` (the chart's own image).
SPARK_OPERATOR_IMAGE ?= local
# What k8s-deploy builds: EKS runs only the shipped images (EKS_IMAGES), never the dev backends.
DEPLOY_IMAGES = $(if $(filter eks,$(K8S_TARGET)),$(EKS_IMAGES),$(ALL_IMAGES))

VERSIONS_TOML ?= jobs/logberg/versions.toml
# $(call pin,SECTION,KEY): one value of versions.toml (evaluated only where used).
pin = $(shell $(K8S_PYTHON) -c 'import tomllib; print(tomllib.load(open("$(VERSIONS_TOML)", "rb"))["$(1)"]["$(2)"])')

KC = $(KUBECTL) $(if $(K8S_KUBECONFIG),--kubeconfig=$(K8S_KUBECONFIG)) $(if $(K8S_CONTEXT),--context=$(K8S_CONTEXT)) -n $(K8S_NAMESPACE)
K8S = $(VENV)/bin/logberg k8s $(if $(K8S_KUBECONFIG),--kubeconfig=$(K8S_KUBECONFIG)) $(if $(K8S_CONTEXT),--context=$(K8S_CONTEXT)) --namespace=$(K8S_NAMESPACE)

.PHONY: k8s-deploy k8s-demo k8s-examples sql-k8s ui-k8s kind-node-image kind-up kind-demo kind-down kind-status k8s-static

k8s-deploy: tools | $(CONTAINERS_CONF) ## deploy to K8S_TARGET (kind|eks; K8S_CONTEXT): images, dev backends, Spark Operator (CRDs first), metastore (+ helm test), logberg
	$(IMAGES) build $(DEPLOY_IMAGES)
	$(K8S) deploy --target=$(K8S_TARGET) --operator-namespace=$(OPERATOR_NAMESPACE) \
	  --metastore-namespace=$(METASTORE_NAMESPACE) \
	  --operator-image=$(SPARK_OPERATOR_IMAGE) --helm=$(HELM) --kubectl=$(KUBECTL) \
	  --kind-cluster=$(KIND_CLUSTER) $(if $(IMAGE_REGISTRY),--image-registry=$(IMAGE_REGISTRY)) \
	  $(foreach v,$(K8S_VALUES),--values=$(v))

k8s-demo: ## on the deployed cluster: the generator Job, then `kubectl apply` of the ingest and analytics examples, then the top tables through spark-sql (K8S_DEMO_SOURCE=kafka: the generator to the dev broker's topic and the stream from it)
	@$(NEED_KUBECTL)
	@KC="$(KC)" K8S="$(K8S)" charts/scripts/k8s-demo.sh $(K8S_WAIT_SECONDS) $(K8S_DEMO_SOURCE)

sql-k8s: ## spark-sql in the cluster's toolbox pod, through the metastore (interactive; or pipe SQL in: make sql-k8s < file.sql)
	@$(NEED_KUBECTL)
	@KC="$(KC)" charts/scripts/sql-k8s.sh

ui-k8s: ## Spark UIs on a local port until Ctrl-C: the History Server and its applications, or APP=<SparkApplication> (its live driver, else its History Server pages)
	$(K8S) ui $(APP)

k8s-examples: tools ## regenerate charts/logberg/examples/*.yaml from the chart (values-kind.yaml)
	$(K8S_PYTHON) charts/render_examples.py --helm=$(HELM)

kind-node-image: $(VENV)/.installed | $(CONTAINERS_CONF) ## build logberg's offline kind node image from the pinned Kubernetes, built into .tools first (cached by version; no registry needed; rebuilt when an input changed; podman)
	$(KIND_RUN) node-image

kind-up: tools | $(CONTAINERS_CONF) ## create the kind cluster (Docker, else podman; kind from PATH, else built from the Go proxy; KIND_NODE_IMAGE), then k8s-deploy to it (idempotent)
	$(KIND_RUN) up --name $(KIND_CLUSTER) --config $(KIND_CONFIG)
	$(MAKE) --no-print-directory k8s-deploy K8S_TARGET=kind

kind-demo: ## the same demo as k8s-demo, on kind
	$(MAKE) --no-print-directory k8s-demo K8S_TARGET=kind

kind-down: ## delete the kind cluster and everything of it on this host (its node, volume, network; exits 1 only if something remains)
	$(KIND_RUN) down --name $(KIND_CLUSTER) --config $(KIND_CONFIG)

kind-status: ## whether the kind cluster's node runs
	@$(KIND_RUN) status --name $(KIND_CLUSTER) --config $(KIND_CONFIG)

k8s-static: checkov ## static chart/image checks: helm lint, kubernetes-validate, checkov, structure
	$(VENV)/bin/pytest -m static tests/static/test_charts.py tests/static/test_images.py -q
