# The local single-node Kubernetes cluster: the pinned release built from source, run as
# plain processes (containerd, etcd, control plane, kubelet, kube-proxy, the NetworkPolicy
# enforcer, CoreDNS) on this machine, hermetic. Needs root. Included by the root Makefile,
# which defines CLUSTER_HOME and CLUSTER_CONTEXT (charts/k8s.mk deploys to this cluster
# too); settings are LOGBERG_CLUSTER_* environment variables (see charts/README.md).

CLUSTER_IMAGES  ?=
CLUSTER_RUN = LOGBERG_CLUSTER_HOME=$(CLUSTER_HOME) LOGBERG_CLUSTER_CONTEXT=$(CLUSTER_CONTEXT) \
	$(VENV)/bin/logberg cluster

.PHONY: cluster-build cluster-up cluster-down cluster-status cluster-load cluster-env

cluster-build: $(VENV)/.installed ## build the pinned Kubernetes, etcd, CoreDNS and kube-network-policies into .tools (cached by version)
	$(VENV)/bin/logberg setup kubernetes

cluster-up: cluster-build ## start the local cluster (builds on first use; idempotent; root)
	$(CLUSTER_RUN) up

cluster-down: ## stop the local cluster and undo every host change it made
	$(CLUSTER_RUN) down

cluster-status: ## components (pid, state, log), node and pods of the local cluster
	$(CLUSTER_RUN) status

cluster-load: ## import podman images into the local cluster: CLUSTER_IMAGES="name:tag ..."
	@test -n "$(CLUSTER_IMAGES)" || { echo "error: set CLUSTER_IMAGES=\"name:tag ...\"" >&2; exit 2; }
	$(CLUSTER_RUN) load $(CLUSTER_IMAGES)

cluster-env: ## print KUBECONFIG and PATH (with the matching kubectl) lines, for eval
	@$(CLUSTER_RUN) kubeconfig
