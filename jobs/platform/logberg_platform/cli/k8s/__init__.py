"""`logberg k8s`: logberg on a Kubernetes cluster (kind or EKS).

The group's options name the cluster and namespace; each action is its own module:
deploy, the jobs of a release (submit, status, logs), query and sql (through the release's
Spark Connect server when deployed, else its toolbox pod) and wait.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from logberg.cli.command import Command, actions

if TYPE_CHECKING:
    from logberg_platform.k8s.api_client import Kube


def say(msg: str) -> None:
    print(msg, flush=True)


def target(a: argparse.Namespace) -> Kube:
    from logberg_platform.k8s.api_client import Kube, Target

    return Kube(Target(namespace=a.namespace, context=a.context, kubeconfig=a.kubeconfig))


def arguments(p: argparse.ArgumentParser) -> None:
    from logberg_platform.cli.k8s import deploy, jobs, query, sql, ui, wait

    p.add_argument(
        "--context",
        default=os.environ.get("K8S_CONTEXT") or None,
        help="kubeconfig context (env K8S_CONTEXT; default: the current one)",
    )
    p.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG") or None,
        help="kubeconfig file (env KUBECONFIG; default ~/.kube/config)",
    )
    p.add_argument(
        "--namespace",
        "-n",
        default=os.environ.get("K8S_NAMESPACE", "logberg"),
        help="namespace of the logberg releases (env K8S_NAMESPACE; default logberg)",
    )
    sub = actions(p)
    deploy.register(sub)
    jobs.register(sub)
    query.register(sub)
    sql.register(sub)
    ui.register(sub)
    wait.register(sub)


COMMAND = Command(
    "k8s",
    "logberg on a Kubernetes cluster: deploy the charts in order, wait for jobs",
    arguments=arguments,
    order=61,
)
