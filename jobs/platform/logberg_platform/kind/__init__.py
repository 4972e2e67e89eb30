"""kind, the local Kubernetes cluster: the offline node image (node_image, with the podman
builds of podman_images) and the cluster's life cycle on Docker or podman (cluster)."""
