# logberg on EKS: included by the root Makefile (`-include eks/eks.mk`).
# See eks/README.md. Every target runs from the repository root.

EKS_DIR          := $(CURDIR)/eks
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
EKS_CHECKOV_VENV ?= $(TOOLS)/checkov-venv
EKS_CHECKOV_PIN  ?= checkov==3.3.30
# The kube context `aws eks update-kubeconfig --alias` names and the deploy flow uses.
EKS_CONTEXT      ?= logberg-eks
# `make eks-up EKS_DEPLOY=no` stops after Terraform (e.g. with install_charts = false).
EKS_DEPLOY       ?= yes
# Where `make eks-values` writes the Helm values Terraform computed (values-<release>.yaml).
EKS_VALUES_DIR   ?= $(LOGBERG_HOME)/eks

EKS_TF_CMD   = $(EKS_TF) -chdir=$(EKS_DIR)
# -chdir makes relative paths relative to eks/, so hand terraform an absolute path.
EKS_VAR_ARGS = $(if $(EKS_VARS),-var-file=$(abspath $(EKS_VARS)))
# The images eks/ecr.tf has a repository for (logberg-<key>), the releases of the deploy
# flow that get a values file from Terraform, and the K8S_VALUES naming those files.
EKS_IMAGES     := spark hive-metastore spark-operator
EKS_RELEASES   := hive-metastore logberg spark-operator
EKS_K8S_VALUES  = $(foreach r,$(EKS_RELEASES),$(r)=$(EKS_VALUES_DIR)/values-$(r).yaml)
# The namespaces and registry eks-deploy reads from the Terraform outputs, as make
# assignments (K8S_NAMESPACE=...) for the k8s-deploy command line.
EKS_DEPLOY_VARS = $(EKS_VALUES_DIR)/deploy.vars

# Writes each entry of the chart_values output (JSON on stdin) to DIR/values-<release>.yaml.
define EKS_WRITE_VALUES
import json, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
for release, text in sorted(json.load(sys.stdin).items()):
    if not re.fullmatch(r"[a-z0-9-]+", release):
        sys.exit(f"chart_values: unexpected release name {release!r}")
    path = out / f"values-{release}.yaml"
    path.write_text(text)
    print(f"wrote {path}")
endef
export EKS_WRITE_VALUES

.PHONY: eks-tools
eks-tools: ## check that terraform (or tofu) and the AWS CLI are installed and EKS_VARS exists
	@if [ -z "$(EKS_TF)" ]; then \
	  echo "error: neither terraform nor tofu is on PATH. Install Terraform >= 1.5.7 or OpenTofu >= 1.6" >&2; \
	  echo "       (or point EKS_TF at the binary, e.g. make eks-up EKS_TF=\$$HOME/bin/tofu)." >&2; \
	  exit 1; fi
	@command -v aws >/dev/null || { \
	  echo "error: the AWS CLI (aws) is not on PATH; the providers call 'aws eks get-token'." >&2; exit 1; }
	@if [ -n "$(EKS_VARS)" ] && [ ! -f "$(EKS_VARS)" ]; then \
	  echo "error: EKS_VARS=$(EKS_VARS) does not exist (start from eks/terraform.tfvars.example)." >&2; exit 1; fi
	@echo "using $(EKS_TF) ($$($(EKS_TF) version | head -n1)), aws $$(aws --version 2>&1 | cut -d' ' -f1)"

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
	set -o pipefail; $(EKS_TF_CMD) output -json chart_values | $(K8S_PYTHON) -c "$$EKS_WRITE_VALUES" "$(EKS_VALUES_DIR)"

.PHONY: eks-push
eks-push: eks-tools | $(CONTAINERS_CONF) ## build the Spark, Hive Metastore and spark-operator images (unchanged: skipped) and push them to ECR at their content tags (needs Docker)
	@$(NEED_DOCKER)
	@$(DOCKER) info >/dev/null 2>&1 || { \
	  echo "error: no Docker daemon answers ('$(DOCKER) info' failed): eks-push builds, tags and pushes" >&2; \
	  echo "       the images with Docker. Start Docker, or set DOCKER=/path/to/docker." >&2; exit 1; }
	$(IMAGES) build $(EKS_IMAGES)
	@set -euo pipefail; \
	region=$$($(EKS_TF_CMD) output -raw region); \
	registry=$$($(EKS_TF_CMD) output -raw image_registry); \
	host=$${registry%%/*}; namespace=$${registry#"$$host"}; namespace=$${namespace#/}; \
	echo "$$ aws ecr get-login-password --region $$region | $(DOCKER) login --username AWS --password-stdin $$host"; \
	aws ecr get-login-password --region "$$region" | $(DOCKER) login --username AWS --password-stdin "$$host"; \
	for key in $(EKS_IMAGES); do \
	  ref=$$($(IMAGES) tag "$$key"); \
	  if aws ecr describe-images --region "$$region" --repository-name "$${namespace:+$$namespace/}$${ref%:*}" \
	       --image-ids imageTag="$${ref##*:}" >/dev/null 2>&1; then \
	    echo "$$registry/$$ref: in the registry already (tags are immutable)"; continue; \
	  fi; \
	  echo "$$ $(DOCKER) tag $$ref $$registry/$$ref && $(DOCKER) push $$registry/$$ref"; \
	  $(DOCKER) tag "$$ref" "$$registry/$$ref"; \
	  $(DOCKER) push "$$registry/$$ref"; \
	done

.PHONY: eks-deploy
eks-deploy: eks-values ## spark-operator (CRDs first), hive-metastore (+ helm test) and logberg on EKS: `make k8s-deploy K8S_TARGET=eks` with Terraform's values and the ECR images
	@set -euo pipefail; \
	region=$$($(EKS_TF_CMD) output -raw region); \
	cluster=$$($(EKS_TF_CMD) output -raw cluster_name); \
	ns=$$($(EKS_TF_CMD) output -raw spark_namespace); \
	metastore_ns=$$($(EKS_TF_CMD) output -raw metastore_namespace); \
	operator_ns=$$($(EKS_TF_CMD) output -raw spark_operator_namespace); \
	registry=$$($(EKS_TF_CMD) output -raw image_registry); \
	echo "$$ aws eks update-kubeconfig --region $$region --name $$cluster --alias $(EKS_CONTEXT)"; \
	aws eks update-kubeconfig --region "$$region" --name "$$cluster" --alias "$(EKS_CONTEXT)"; \
	printf '%s\n' "K8S_NAMESPACE=$$ns" "METASTORE_NAMESPACE=$$metastore_ns" \
	  "OPERATOR_NAMESPACE=$$operator_ns" "IMAGE_REGISTRY=$$registry" >"$(EKS_DEPLOY_VARS)"
	@# make runs a recursive make line even under `make -n`: this one only reads that file.
	$(MAKE) --no-print-directory k8s-deploy K8S_TARGET=eks K8S_CONTEXT=$(EKS_CONTEXT) \
	  $$(cat "$(EKS_DEPLOY_VARS)" 2>/dev/null) K8S_VALUES="$(EKS_K8S_VALUES)"

.PHONY: eks-demo
eks-demo: eks-tools tools $(VENV)/.installed ## upload generated demo logs to the raw bucket and run the logberg release's jobs once (after eks-up or eks-deploy)
	@set -euo pipefail; \
	region=$$($(EKS_TF_CMD) output -raw region); \
	cluster=$$($(EKS_TF_CMD) output -raw cluster_name); \
	raw=$$($(EKS_TF_CMD) output -raw raw_bucket_name); \
	ns=$$($(EKS_TF_CMD) output -raw spark_namespace); \
	aws eks update-kubeconfig --region "$$region" --name "$$cluster" --alias "$(EKS_CONTEXT)" >/dev/null; \
	echo "==> generating demo logs into $(EKS_DEMO_DIR)"; \
	rm -rf "$(EKS_DEMO_DIR)"; \
	$(LOGBERG) generate --output "file://$(EKS_DEMO_DIR)" --num-files $(DEMO_FILES) \
	  --lines-per-file $(DEMO_LINES) --start-date $(DEMO_START) --end-date $(DEMO_END) \
	  --seed 42 --malformed-rate 0.002; \
	echo "==> uploading to s3://$$raw/raw/"; \
	aws s3 cp --recursive --only-show-errors --region "$$region" "$(EKS_DEMO_DIR)" "s3://$$raw/raw/"; \
	echo "==> running the scheduled jobs once in namespace $$ns"; \
	$(EKS_DIR)/scripts/run-scheduled.sh "$$ns" $(EKS_DEMO_JOBS); \
	echo; \
	echo "Done. Inspect with: kubectl --context $(EKS_CONTEXT) get sparkapplications -n $$ns"

.PHONY: eks-down
eks-down: eks-tools ## destroy everything eks-up created, the deploy flow's releases first (needs EKS_CONFIRM=yes; see eks/README.md first)
	@if [ "$(EKS_CONFIRM)" != "yes" ]; then \
	  echo "Refusing to destroy: this deletes the cluster, the database, the ECR repositories and" >&2; \
	  echo "(if empty or force_destroy_buckets = true) the buckets. Re-run as: make eks-down EKS_CONFIRM=yes" >&2; \
	  echo "With db_deletion_protection = true (the default), first apply with it set to false;" >&2; \
	  echo "repositories holding images need ecr_force_delete = true applied first as well." >&2; \
	  exit 1; fi
	$(EKS_TF_CMD) init -input=false
	@# Best effort: remove Spark applications first so their finalizers and pods do not
	@# hold up the namespace deletion, then the releases `make eks-deploy` installed (not in
	@# Terraform's state), so the metastore pods let go of their security group before
	@# Terraform deletes it. Fails harmlessly if the cluster is already gone.
	-@set -e; \
	region=$$($(EKS_TF_CMD) output -raw region 2>/dev/null); \
	cluster=$$($(EKS_TF_CMD) output -raw cluster_name 2>/dev/null); \
	ns=$$($(EKS_TF_CMD) output -raw spark_namespace 2>/dev/null); \
	metastore_ns=$$($(EKS_TF_CMD) output -raw metastore_namespace 2>/dev/null); \
	operator_ns=$$($(EKS_TF_CMD) output -raw spark_operator_namespace 2>/dev/null); \
	aws eks update-kubeconfig --region "$$region" --name "$$cluster" --alias "$(EKS_CONTEXT)" >/dev/null 2>&1; \
	$(KUBECTL) --context "$(EKS_CONTEXT)" delete \
	  scheduledsparkapplications.sparkoperator.k8s.io,sparkapplications.sparkoperator.k8s.io \
	  --all -n "$$ns" --ignore-not-found --timeout=5m || true; \
	for release in "logberg $$ns" "hive-metastore $$metastore_ns" "spark-operator $$operator_ns"; do \
	  set -- $$release; \
	  $(HELM) --kube-context "$(EKS_CONTEXT)" uninstall "$$1" -n "$$2" \
	    --ignore-not-found --wait --timeout 10m || true; \
	done
	$(EKS_TF_CMD) destroy -input=false -auto-approve $(EKS_VAR_ARGS) $(EKS_TF_ARGS)

.PHONY: eks-minio
eks-minio: ## build the pinned MinIO that enforces eks/'s IAM policies in tests (cached in .tools/minio)
	tests/eks_support/build-minio.sh "$(TOOLS)"

# tests/integration/test_eks_s3_policies.py (part of `make test`) runs logberg against that MinIO.
test: eks-minio

.PHONY: eks-checkov-venv
eks-checkov-venv: ## install checkov into .tools/checkov-venv (idempotent; reuses an existing venv)
	@if [ -x "$(EKS_CHECKOV_VENV)/bin/checkov" ]; then \
	  echo "checkov present: $(EKS_CHECKOV_VENV)/bin/checkov"; \
	else \
	  $(PYTHON) -m venv "$(EKS_CHECKOV_VENV)" && \
	  "$(EKS_CHECKOV_VENV)/bin/pip" install -q --upgrade pip && \
	  "$(EKS_CHECKOV_VENV)/bin/pip" install -q "$(EKS_CHECKOV_PIN)"; \
	fi

.PHONY: eks-lint
eks-lint: eks-checkov-venv $(VENV)/.installed ## static checks of eks/: fmt (if terraform/tofu exists), checkov, the static tests/static/test_eks.py
	@if [ -n "$(EKS_TF)" ]; then $(EKS_TF) fmt -recursive -check $(EKS_DIR); \
	  else echo "terraform/tofu not on PATH: skipping fmt -check"; fi
	@# eks/charts hold only External Secrets and SecurityGroupPolicy CRs (no checkov check
	@# applies) and their schemas require the values Terraform sets: checkov cannot render them.
	"$(EKS_CHECKOV_VENV)/bin/checkov" -d $(EKS_DIR) --download-external-modules false \
	  --skip-download --skip-path charts/metastore-db-secret --skip-path charts/metastore-pod-sg \
	  --quiet --compact
	@# The MinIO policy test (integration) runs in `make test`, after `make eks-minio`.
	$(BIN)/pytest -m static tests/static/test_eks.py $(PYTEST_ARGS)
