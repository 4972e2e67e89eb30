"""`logberg cluster`: the local single-node Kubernetes cluster (root; LOGBERG_CLUSTER_*)."""

from __future__ import annotations

import argparse

from logberg.cli.command import Command, action, actions


def progress(msg: str) -> None:
    print(msg, flush=True)


def up(a: argparse.Namespace) -> int:
    from logberg_platform.cluster import lifecycle
    from logberg_platform.cluster.cluster_settings import ClusterSettings

    lifecycle.up(ClusterSettings.from_env(), progress, make_base)
    return 0


def make_base() -> str:
    """The Debian base in podman, as the images build gets it (a pull by digest where a
    registry answers, else debootstrap); its name."""
    from logberg_platform.build import container_images as images

    return images.resolve_base(images.podman_builder(), images.raw_pins()).ref


def down(a: argparse.Namespace) -> int:
    from logberg_platform.cluster import lifecycle
    from logberg_platform.cluster.cluster_settings import ClusterSettings

    return 1 if lifecycle.down(ClusterSettings.from_env(), progress, purge=a.purge) else 0


def status(a: argparse.Namespace) -> int:
    from logberg_platform.cluster import lifecycle
    from logberg_platform.cluster.cluster_settings import ClusterSettings

    print(lifecycle.status(ClusterSettings.from_env()))
    return 0


def load(a: argparse.Namespace) -> int:
    from logberg_platform.cluster import lifecycle
    from logberg_platform.cluster.cluster_settings import ClusterSettings

    lifecycle.load(ClusterSettings.from_env(), a.images, progress)
    return 0


def kubeconfig(a: argparse.Namespace) -> int:
    from logberg_platform.cluster import lifecycle
    from logberg_platform.cluster.cluster_settings import ClusterSettings

    print(lifecycle.env_lines(ClusterSettings.from_env()))
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    sub = actions(p)
    action(sub, "up", up, "build if needed, start, wait until ready (idempotent)")
    d = action(sub, "down", down, "stop and undo every host change")
    d.add_argument("--purge", action="store_true", help="also delete the cluster home")
    action(sub, "status", status, "components (pid, state, log), node and pods")
    ld = action(sub, "load", load, "import podman images into the node")
    ld.add_argument("images", nargs="+", metavar="NAME:TAG")
    action(sub, "kubeconfig", kubeconfig, "print KUBECONFIG and PATH lines for eval")


COMMAND = Command(
    "cluster",
    "the local single-node Kubernetes cluster (root; settings LOGBERG_CLUSTER_*)",
    arguments=arguments,
    order=60,
)
