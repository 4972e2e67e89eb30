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

EKS_TF_CMD   = $(EKS_TF) -chdir=$(EKS_DIR)
# -chdir makes relative paths relative to eks/, so hand terraform an absolute path.
EKS_VAR_ARGS = $(if $(EKS_VARS),-var-file=$(abspath $(EKS_VARS)))

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
eks-plan: eks-init ## show what `make eks-up` would change (EKS_VARS=file.tfvars optional)
	$(EKS_TF_CMD) plan -input=false $(EKS_VAR_ARGS) $(EKS_TF_ARGS)

.PHONY: eks-up
eks-up: eks-init ## create/update VPC, EKS, RDS, S3, IAM and the charts (EKS_VARS=file.tfvars optional)
	$(EKS_TF_CMD) apply -input=false $(EKS_VAR_ARGS) $(EKS_TF_ARGS)
	@echo
	@echo "Done. Point kubectl at the cluster with:"
	@echo "  $$($(EKS_TF_CMD) output -raw kubeconfig_command)"
	@echo
	@echo "Next step: make eks-demo   (uploads demo logs and runs the logberg jobs once)"

.PHONY: eks-demo
eks-demo: eks-tools tools $(VENV)/.installed ## upload generated demo logs to the raw bucket and run the logberg jobs once
	@set -euo pipefail; \
	region=$$($(EKS_TF_CMD) output -raw region); \
	cluster=$$($(EKS_TF_CMD) output -raw cluster_name); \
	raw=$$($(EKS_TF_CMD) output -raw raw_bucket_name); \
	ns=$$($(EKS_TF_CMD) output -raw spark_namespace); \
	aws eks update-kubeconfig --region "$$region" --name "$$cluster" >/dev/null; \
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
	echo "Done. Inspect with: kubectl get sparkapplications -n $$ns"

.PHONY: eks-down
eks-down: eks-tools ## destroy everything eks-up created (needs EKS_CONFIRM=yes; see eks/README.md first)
	@if [ "$(EKS_CONFIRM)" != "yes" ]; then \
	  echo "Refusing to destroy: this deletes the cluster, the database and (if empty or" >&2; \
	  echo "force_destroy_buckets = true) the buckets. Re-run as: make eks-down EKS_CONFIRM=yes" >&2; \
	  echo "With db_deletion_protection = true (the default), first apply with it set to false." >&2; \
	  exit 1; fi
	$(EKS_TF_CMD) init -input=false
	@# Best effort: remove Spark applications first so their finalizers and pods do not
	@# hold up the namespace deletion. Fails harmlessly if the cluster is already gone.
	-@set -e; \
	region=$$($(EKS_TF_CMD) output -raw region 2>/dev/null); \
	cluster=$$($(EKS_TF_CMD) output -raw cluster_name 2>/dev/null); \
	ns=$$($(EKS_TF_CMD) output -raw spark_namespace 2>/dev/null); \
	aws eks update-kubeconfig --region "$$region" --name "$$cluster" >/dev/null 2>&1 && \
	kubectl delete scheduledsparkapplications.sparkoperator.k8s.io,sparkapplications.sparkoperator.k8s.io \
	  --all -n "$$ns" --ignore-not-found --timeout=5m
	$(EKS_TF_CMD) destroy -input=false -auto-approve $(EKS_VAR_ARGS) $(EKS_TF_ARGS)

.PHONY: eks-minio
eks-minio: ## build the pinned MinIO that enforces eks/'s IAM policies in tests (cached in .tools/minio)
	tests/eks_support/build-minio.sh "$(TOOLS)"

# tests/test_eks_s3_policies.py (part of `make test`) runs logberg against that MinIO.
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
eks-lint: eks-checkov-venv $(VENV)/.installed ## static checks of eks/: fmt (if terraform/tofu exists), checkov, the static tests/test_eks*.py
	@if [ -n "$(EKS_TF)" ]; then $(EKS_TF) fmt -recursive -check $(EKS_DIR); \
	  else echo "terraform/tofu not on PATH: skipping fmt -check"; fi
	@# eks/charts hold only External Secrets and SecurityGroupPolicy CRs (no checkov check
	@# applies) and their schemas require the values Terraform sets: checkov cannot render them.
	"$(EKS_CHECKOV_VENV)/bin/checkov" -d $(EKS_DIR) --download-external-modules false \
	  --skip-download --skip-path charts/metastore-db-secret --skip-path charts/metastore-pod-sg \
	  --quiet --compact
	@# The MinIO policy test (integration) runs in `make test`, after `make eks-minio`.
	$(BIN)/pytest -m static tests/test_eks*.py $(PYTEST_ARGS)
