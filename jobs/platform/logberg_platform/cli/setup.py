"""`logberg setup`: build what local runs need, cached (`make setup` runs these)."""

from __future__ import annotations

import argparse

from logberg.cli.command import Command, action, actions


def jars(a: argparse.Namespace) -> int:
    from logberg_platform.build import jars as build_jars
    from logberg_platform.local_settings import LocalSettings

    print(f"JVM artifacts ready under {build_jars.resolve(LocalSettings.from_env())}")
    return 0


def cds(a: argparse.Namespace) -> int:
    from logberg_platform.build import cds as build_cds
    from logberg_platform.local_settings import LocalSettings

    print(f"class archive ready: {build_cds.build(LocalSettings.from_env())}")
    return 0


def kubernetes(a: argparse.Namespace) -> int:
    from logberg_platform.build import kubernetes_binaries as kube
    from logberg_platform.local_settings import LocalSettings

    found = kube.ensure_binaries(LocalSettings.from_env().tools, lambda msg: print(msg, flush=True))
    print(f"kubernetes binaries: {found.kube_bin}\ncoredns: {found.coredns}")
    print(f"network policies: {found.netpol}")
    return 0


def tools(a: argparse.Namespace) -> int:
    from logberg.versions import pins
    from logberg_platform.build import tools as build_tools
    from logberg_platform.local_settings import LocalSettings

    s = LocalSettings.from_env()
    names = a.names or ["versitygw", "helm"]
    for line in build_tools.ensure(s.tools, [n for n in names if n != "spark-operator-chart"]):
        print(line)
    if "spark-operator-chart" in names:  # what `k8s deploy` installs, cached by version
        from logberg_platform.k8s import operator_chart

        helm, _ = build_tools.ensure_helm_kubectl(s.tools)
        chart = operator_chart.ensure(
            s.tools / "charts",
            pins().spark_operator_chart,
            str(helm),
            lambda: build_tools.go(s.tools),
        )
        print(f"spark-operator chart: {chart}")
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    sub = actions(p, dest="what")
    action(sub, "jars", jars, "resolve the pinned jars and compile logberg's line parser")
    action(sub, "cds", cds, "record the JVM class archive local Spark starts from")
    action(
        sub,
        "kubernetes",
        kubernetes,
        "build the pinned Kubernetes, etcd, CoreDNS and kube-network-policies (the kind node "
        "image's; make kind-node-image runs it)",
    )
    t = action(sub, "tools", tools, "versitygw, kind, helm and kubectl, the spark-operator chart")
    t.add_argument(
        "names",
        nargs="*",
        help="versitygw, kind, helm, spark-operator-chart (default: versitygw and helm)",
    )


COMMAND = Command(
    "setup", "build what local runs need (make setup runs these)", arguments=arguments, order=63
)
