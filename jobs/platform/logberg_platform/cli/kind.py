"""`logberg kind`: the kind cluster (make kind-up, kind-down, kind-node-image)."""

from __future__ import annotations

import argparse
from pathlib import Path

from logberg.cli.command import Command, action, actions

DEFAULT_CONFIG = "charts/kind/kind-config.yaml"


def progress(msg: str) -> None:
    print(msg, flush=True)


def _settings(a: argparse.Namespace):  # type: ignore[no-untyped-def]
    from logberg_platform.kind.cluster import KindSettings

    return KindSettings.from_env(a.name, Path(a.config))


def make_base() -> str:
    """The Debian base in podman, as the images build gets it (a pull by digest where a
    registry answers, else debootstrap); its name."""
    from logberg_platform.build import container_images as images

    return images.resolve_base(images.podman_builder(), images.raw_pins()).ref


def node_image(a: argparse.Namespace) -> int:
    from logberg_platform.kind import node_image as offline

    print(offline.build(progress, make_base))
    return 0


def up(a: argparse.Namespace) -> int:
    from logberg_platform.kind import cluster

    cluster.up(_settings(a), progress, make_base)
    return 0


def down(a: argparse.Namespace) -> int:
    from logberg_platform.kind import cluster

    left = cluster.down(_settings(a), progress)
    if left:
        print(f"error: kind-down left {', '.join(left)}", flush=True)
        return 1
    print(f"kind cluster '{a.name}': nothing of it is left on this host")
    return 0


def status(a: argparse.Namespace) -> int:
    from logberg_platform.kind import cluster

    print(cluster.status(_settings(a)))
    return 0


def _cluster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="logberg", help="the kind cluster's name (KIND_CLUSTER)")
    p.add_argument(
        "--config", default=DEFAULT_CONFIG, help=f"kind's cluster config (default {DEFAULT_CONFIG})"
    )


def arguments(p: argparse.ArgumentParser) -> None:
    sub = actions(p)
    action(sub, "node-image", node_image, "build the offline node image (where missing or stale)")
    u = action(sub, "up", up, "create the cluster where it does not exist (KIND_NODE_IMAGE)")
    _cluster_options(u)
    d = action(sub, "down", down, "delete the cluster and everything of it on this host")
    _cluster_options(d)
    st = action(sub, "status", status, "whether the cluster's node runs")
    _cluster_options(st)


COMMAND = Command(
    "kind",
    "the kind cluster: offline node image, up, down (KIND, KIND_NODE_IMAGE)",
    arguments=arguments,
    order=59,
)
