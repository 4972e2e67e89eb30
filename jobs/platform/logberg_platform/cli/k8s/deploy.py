"""`logberg k8s deploy`: images, dev backends, spark-operator (CRDs first), hive-metastore
(+ helm test), logberg: in order, each waiting on what it needs."""

from __future__ import annotations

import argparse
from pathlib import Path

from logberg.cli.command import action, config_from
from logberg.errors import ConfigError
from logberg_platform.cli.k8s import say, target


def images_given(pairs: list[str]) -> dict[str, str]:
    from logberg_platform.build import container_images as images
    from logberg_platform.k8s import deploy

    given = dict(kv.split("=", 1) for kv in pairs)
    unknown = set(given) - set(deploy.IMAGES)
    if unknown:
        raise ConfigError(f"--image {sorted(unknown)}: expected keys {', '.join(deploy.IMAGES)}")
    return {k: given.get(k) or images.current_tag(k) for k in deploy.IMAGES}


def values_given(pairs: list[str]) -> dict[str, list[Path]]:
    values: dict[str, list[Path]] = {}
    for kv in pairs:
        release, _, path = kv.partition("=")
        values.setdefault(release, []).append(Path(path))
    return values


def run(a: argparse.Namespace) -> int:
    from logberg.versions import pins
    from logberg_platform.build import container_images as images
    from logberg_platform.build import tools
    from logberg_platform.k8s import deploy
    from logberg_platform.local_settings import LocalSettings

    local = LocalSettings.from_env()
    s = config_from(
        deploy.DeploySettings,
        a,
        repo=images.repo_root(),
        chart_cache=local.tools / "charts",
        operator_chart_version=pins().spark_operator_chart,
        images=images_given(a.image),
        values=values_given(a.values),
    )
    version = images.logberg_version()
    if a.target == "kind":
        load = deploy.kind_loader(a.kind_cluster, version, say)
    else:

        def load(refs: list[str]) -> None:
            return None

    deploy.deploy(s, target(a), load, lambda: tools.go(local.tools), say)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub,
        "deploy",
        run,
        "images, dev backends, spark-operator (CRDs first), hive-metastore (+ helm test), "
        "logberg: in order, each waiting on what it needs",
    )
    p.add_argument("--target", choices=["kind", "eks"], default="kind")
    p.add_argument("--operator-namespace", default="spark-operator")
    p.add_argument(
        "--metastore-namespace",
        default="",
        help="the metastore's namespace (default: --namespace; EKS keeps it apart)",
    )
    p.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="KEY=REF",
        help="an image's name:tag (default: the tag `logberg images tag KEY` prints)",
    )
    p.add_argument(
        "--operator-image",
        choices=["local", "upstream"],
        default="local",
        help="images/spark-operator (our Spark; default), or the chart's upstream image",
    )
    p.add_argument("--image-registry", default="", help="EKS: the registry the images are in")
    p.add_argument(
        "--values",
        action="append",
        default=[],
        metavar="RELEASE=FILE",
        help="extra values for a release (logberg, hive-metastore, logberg-dev, spark-operator)",
    )
    p.add_argument("--kind-cluster", default="logberg", help="kind: the cluster's name")
    p.add_argument("--helm", default="helm")
    p.add_argument("--kubectl", default="kubectl")
    p.add_argument("--timeout", type=float, default=900.0, help="per release, seconds")
