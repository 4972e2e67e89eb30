"""kind, the local Kubernetes cluster: the offline node image (node_image) and the cluster's
life cycle on Docker or podman (cluster)."""
