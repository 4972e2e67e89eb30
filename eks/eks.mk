# logberg on EKS (eks/README.md): Terraform for the AWS side, then the deploy flow of
# charts/k8s.mk. Included by the root Makefile, which defines the tools (HELM, KUBECTL, DOCKER,
# K8S_PYTHON), the images (IMAGES, EKS_IMAGES, CONTAINERS_CONF), the demo data (DEMO_*) and
# checkov. The logic of the targets is in eks/scripts. Every target runs from the repository root.

EKS_DIR          ?= $(CURDIR)/eks
# Optional tfvars file, relative to the repository root (e.g. EKS_VARS=eks/dev.tfvars).
EKS_VARS         ?=
# Extra arguments for terraform/tofu apply/plan/destroy (e.g. EKS_TF_ARGS=-auto-approve).
EKS_TF_ARGS      ?=
# `make eks-down` destroys only with EKS_CONFIRM=yes.
EKS_CONFIRM      ?=
# terraform or tofu, whichever is on PATH first (override: EKS_TF=/path/to/tofu).
EKS_TF           ?= $(firstword $(shell command -v terraform tofu 2>/dev/null))
# Scheduled jobs `make eks-demo` runs once (empty: all of them, ingest first).
EKS_DEMO_JOBS    ?=
EKS_DEMO_DIR     ?= $(LOGBERG_HOME)/eks-demo-logs
# The kube context `aws eks update-kubeconfig --alias` names and the deploy flow uses.
EKS_CONTEXT      ?= logberg-eks
# `make eks-up EKS_DEPLOY=no` stops after Terraform (e.g. with install_charts = false).
EKS_DEPLOY       ?= yes
# Where `make eks-values` writes the Helm values Terraform computed (values-<release>.yaml).
EKS_VALUES_DIR   ?= $(LOGBERG_HOME)/eks
# The releases of the deploy flow that get a values file from Terraform.
EKS_RELEASES     ?= hive-metastore logberg spark-operator

EKS_TF_CMD   = $(EKS_TF) -chdir=$(EKS_DIR)
# -chdir makes relative paths relative to eks/, so hand terraform an absolute path.
EKS_VAR_ARGS = $(if $(EKS_VARS),-var-file=$(abspath $(EKS_VARS)))
# The K8S_VALUES naming the files eks-values writes.
EKS_K8S_VALUES  = $(foreach r,$(EKS_RELEASES),$(r)=$(EKS_VALUES_DIR)/values-$(r).yaml)
# The namespaces and registry eks-deploy reads from the Terraform outputs, as make
# assignments (K8S_NAMESPACE=...) for the k8s-deploy command line.
EKS_DEPLOY_VARS = $(EKS_VALUES_DIR)/deploy.vars
# What the scripts in eks/scripts read (terraform/tofu runs as "$EKS_TF" -chdir="$EKS_DIR").
EKS_ENV = EKS_TF="$(EKS_TF)" EKS_DIR="$(EKS_DIR)" EKS_CONTEXT="$(EKS_CONTEXT)"

.PHONY: eks-tools
eks-tools: ## check that terraform (or tofu) and the AWS CLI are installed and EKS_VARS exists
	@EKS_TF="$(EKS_TF)" EKS_VARS="$(EKS_VARS)" eks/scripts/tools.sh

.PHONY: eks-init
eks-init: eks-tools ## terraform/tofu init of eks/ (downloads the pinned modules and providers)
	$(EKS_TF_CMD) init -input=false

.PHONY: eks-lock
eks-lock: ## write eks/.terraform.lock.hcl with provider hashes for linux_amd64, linux_arm64, darwin_arm64 (needs registry access)
	@if [ -z "$(EKS_TF)" ]; then \
	  echo "error: neither terraform nor tofu is on PATH (or set EKS_TF)" >&2; exit 1; fi
	$(EKS_TF_CMD) providers lock -platform=linux_amd64 -platform=linux_arm64 -platform=darwin_arm64

.PHONY: eks-plan
eks-plan: eks-init ## show what `make eks-up` would change on the AWS side (EKS_VARS=file.tfvars optional)
	$(EKS_TF_CMD) plan -input=false $(EKS_VAR_ARGS) $(EKS_TF_ARGS)

.PHONY: eks-up
eks-up: eks-init ## create/update VPC, EKS, RDS, S3, ECR, IAM and the AWS-integration releases, then eks-push and eks-deploy (EKS_VARS=file.tfvars optional)
	$(EKS_TF_CMD) apply -input=false $(EKS_VAR_ARGS) $(EKS_TF_ARGS)
	$(if $(filter yes,$(EKS_DEPLOY)),$(MAKE) --no-print-directory eks-push)
	$(if $(filter yes,$(EKS_DEPLOY)),$(MAKE) --no-print-directory eks-deploy)
	@echo
ifeq ($(EKS_DEPLOY),yes)
	@echo "Done. kubectl reaches the cluster as: kubectl --context $(EKS_CONTEXT) ..."
	@echo "After a change to the images or charts: make eks-push eks-deploy"
	@echo "Next step: make eks-demo   (uploads demo logs and runs the logberg jobs once)"
else
	@echo "Done (AWS side only). Point kubectl at the cluster with:"
	@echo "  $$($(EKS_TF_CMD) output -raw kubeconfig_command)"
	@echo "Then: make eks-push eks-deploy   (the images, then the platform's releases)"
endif

.PHONY: eks-values
eks-values: eks-tools ## write Terraform's Helm values (output chart_values) to .logberg/eks/values-<release>.yaml (LOGBERG_HOME)
	@mkdir -p "$(EKS_VALUES_DIR)"
	set -o pipefail; $(EKS_TF_CMD) output -json chart_values | $(K8S_PYTHON) eks/scripts/write_values.py "$(EKS_VALUES_DIR)"

.PHONY: eks-push
eks-push: eks-tools | $(CONTAINERS_CONF) ## build the Spark, Hive Metastore and spark-operator images (unchanged: skipped) and push them to ECR at their content tags (needs Docker)
	@$(NEED_DOCKER)
	@$(EKS_ENV) DOCKER="$(DOCKER)" IMAGES="$(IMAGES)" eks/scripts/push.sh $(EKS_IMAGES)

.PHONY: eks-deploy
eks-deploy: eks-values ## spark-operator (CRDs first), hive-metastore (+ helm test) and logberg on EKS: `make k8s-deploy K8S_TARGET=eks` with Terraform's values and the ECR images
	@$(EKS_ENV) eks/scripts/deploy-vars.sh "$(EKS_DEPLOY_VARS)"
	@# make runs a recursive make line even under `make -n`: this one only reads that file.
	$(MAKE) --no-print-directory k8s-deploy K8S_TARGET=eks K8S_CONTEXT=$(EKS_CONTEXT) \
	  $$(cat "$(EKS_DEPLOY_VARS)" 2>/dev/null) K8S_VALUES="$(EKS_K8S_VALUES)"

.PHONY: eks-demo
eks-demo: eks-tools tools $(VENV)/.installed ## upload generated demo logs to the raw bucket and run the logberg release's jobs once (after eks-up or eks-deploy)
	@$(EKS_ENV) LOGBERG="$(LOGBERG)" EKS_DEMO_DIR="$(EKS_DEMO_DIR)" DEMO_GENERATE_ARGS="$(DEMO_GENERATE_ARGS)" \
	  eks/scripts/demo.sh $(EKS_DEMO_JOBS)

.PHONY: eks-down
eks-down: eks-tools ## destroy everything eks-up created, the deploy flow's releases first (needs EKS_CONFIRM=yes; see eks/README.md first)
	@$(EKS_ENV) EKS_CONFIRM="$(EKS_CONFIRM)" KUBECTL="$(KUBECTL)" HELM="$(HELM)" \
	  eks/scripts/down.sh $(EKS_VAR_ARGS) $(EKS_TF_ARGS)

.PHONY: eks-minio
eks-minio: ## build the pinned MinIO that enforces eks/'s IAM policies in tests (cached in .tools/minio)
	tests/eks_support/build-minio.sh "$(TOOLS)"

# The one checkov install is the root Makefile's `checkov`; this name stays for eks/README.md's readers.
.PHONY: eks-checkov-venv
eks-checkov-venv: checkov ## install checkov into .tools/checkov-venv (the same install as `make checkov`)

.PHONY: eks-lint
eks-lint: checkov $(VENV)/.installed ## static checks of eks/: fmt (if terraform/tofu exists), checkov, the static tests/static/test_eks.py
	@if [ -n "$(EKS_TF)" ]; then $(EKS_TF) fmt -recursive -check $(EKS_DIR); \
	  else echo "terraform/tofu not on PATH: skipping fmt -check"; fi
	@# eks/charts hold only External Secrets and SecurityGroupPolicy CRs (no checkov check
	@# applies) and their schemas require the values Terraform sets: checkov cannot render them.
	"$(CHECKOV)" -d $(EKS_DIR) --download-external-modules false \
	  --skip-download --skip-path charts/metastore-db-secret --skip-path charts/metastore-pod-sg \
	  --quiet --compact
	@# The MinIO policy test (integration) runs in `make test`, after `make eks-minio`.
	$(BIN)/pytest -m static tests/static/test_eks.py $(PYTEST_ARGS)
