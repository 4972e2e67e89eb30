"""python -m logberg.platform.cluster up|down|status|load IMAGE...|kubeconfig"""

from __future__ import annotations

import argparse
import sys

from logberg.errors import ConfigError, ServiceError
from logberg.platform.cluster import lifecycle
from logberg.platform.cluster.settings import ClusterSettings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m logberg.platform.cluster",
        description="A local single-node Kubernetes cluster (needs root). Settings: "
        "LOGBERG_CLUSTER_HOME, LOGBERG_CLUSTER_CONTEXT, LOGBERG_CLUSTER_API_PORT, "
        "LOGBERG_CLUSTER_ETCD_PORT, LOGBERG_CLUSTER_POD_CIDR, LOGBERG_CLUSTER_SERVICE_CIDR, "
        "LOGBERG_CLUSTER_BRIDGE, LOGBERG_CLUSTER_NODE, LOGBERG_TOOLS.",
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("up", help="build if needed, start and wait for readiness (idempotent)")
    down = sub.add_parser("down", help="stop everything up started and undo its host changes")
    down.add_argument("--purge", action="store_true", help="also delete the cluster home")
    sub.add_parser("status", help="components, pids, logs, nodes and pods")
    load = sub.add_parser("load", help="import podman images into the node's containerd")
    load.add_argument("images", nargs="+")
    sub.add_parser(
        "kubeconfig", help="print `export KUBECONFIG=...` and a PATH with the matching kubectl"
    )
    args = parser.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, flush=True)

    try:
        settings = ClusterSettings.from_env()
        if args.cmd == "up":
            lifecycle.up(settings, log)
        elif args.cmd == "down":
            notes = lifecycle.down(settings, log, purge=args.purge)
            return 1 if notes else 0
        elif args.cmd == "status":
            print(lifecycle.status(settings))
        elif args.cmd == "load":
            lifecycle.load(settings, args.images, log)
        else:
            print(lifecycle.env_lines(settings))
    except (ConfigError, ServiceError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
