"""Fixtures of the live-cluster tests (the framework is tests/cluster/framework.py).

`cluster` is the bare local cluster, `deployed` the cluster with logberg deployed and the
demo run; both are session-wide and reuse a running one. The files run in the order of
ORDER when the whole suite runs (the one that uninstalls, and the one that takes the bare
cluster down, last of their cluster), and each file also runs alone.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import yaml

from logberg_platform.supervisor import free_port
from tests.cluster.framework import (
    DEMO_ARGS,
    DEPLOY_HOME,
    DEPLOY_STEPS,
    KEEP,
    NODE_HOME,
    NS,
    OPERATOR_NS,
    PROBE,
    Cluster,
    Deployed,
    cluster_cli,
    deploy_env,
    deploy_why_not,
    deployment_inputs,
    host_picture,
    is_up,
    kubectl_path,
    node_env,
    node_why_not,
    take_down,
)
from tests.cluster.order import ORDER
from tests.conftest import REPO, TEST_JAVA_OPTIONS
from tests.helpers.prometheus import pushgateway


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The cluster files' tests in ORDER (a file not named there before the two that end
    their cluster); the other tiers' tests keep their places."""
    here = Path(__file__).parent
    slots = [i for i, item in enumerate(items) if item.path.parent == here]

    def rank(item: pytest.Item) -> int:
        name = item.path.stem
        return ORDER.index(name) if name in ORDER else ORDER.index("test_cluster_down") - 1

    mine = sorted((items[i] for i in slots), key=rank)  # stable: file order within a file
    for i, item in zip(slots, mine, strict=True):
        items[i] = item


# -- the bare cluster ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    reason = node_why_not()
    if reason:
        pytest.skip(reason)
    env = node_env()
    started = time.monotonic()
    built = subprocess.run(
        [sys.executable, "-m", "logberg.cli", "setup", "kubernetes"],
        env=env, capture_output=True, text=True, timeout=3600, cwd=REPO,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    take_down(deploy_env(), "the bare cluster's tests need the machine's one cluster")
    home, brought_up = NODE_HOME, False
    if is_up(env) and (home / "host-before.json").exists():
        print(f"\nreusing the running cluster at {home}")
    else:
        take_down(env, "not running: a fresh one")
        home.mkdir(parents=True)
        # The host as it was before `up`: what test_cluster_down compares with.
        (home / "host-before.json").write_text(json.dumps(host_picture()))
        proc = cluster_cli(env, "up")
        (home / "up.out").write_text(proc.stdout)
        print(f"\ncluster up in {time.monotonic() - started:.0f}s\n{proc.stdout[-3000:]}")
        brought_up = True
        if proc.returncode != 0:
            take_down(env, "`up` failed")
            raise AssertionError(proc.stdout[-3000:] + proc.stderr[-5000:])
    c = Cluster(
        env=env,
        home=home,
        kubectl_bin=kubectl_path(),
        before=json.loads((home / "host-before.json").read_text()),
        up_output=(home / "up.out").read_text(),
    )
    try:
        yield c
    finally:
        if brought_up and not KEEP:
            take_down(env, "the session that brought it up ends")


@pytest.fixture(scope="session")
def probe_image(cluster: Cluster) -> str:
    """A locally built image (FROM the local Debian base, plus the cluster's kubectl),
    tagged by its content, loaded into the node."""
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp)
        (ctx / "probe.sh").write_text(PROBE)
        shutil.copy(cluster.kubectl_bin, ctx / "kubectl")
        (ctx / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\nCOPY --chmod=0555 probe.sh /probe.sh\n"
            "COPY --chmod=0555 kubectl /usr/local/bin/kubectl\n"
            'ENTRYPOINT ["/probe.sh"]\n'
        )
        digest = hashlib.sha256()
        for name in ("probe.sh", "kubectl", "Dockerfile"):
            digest.update((ctx / name).read_bytes())
        ref = f"localhost/logberg-cluster-probe:{digest.hexdigest()[:12]}"
        if subprocess.run(["podman", "image", "exists", ref]).returncode != 0:
            subprocess.run(
                ["podman", "--runtime", "runc", "build", "--pull=never", "-t", ref, str(ctx)],
                check=True,
                capture_output=True,
            )
    proc = cluster.cli("load", ref)
    assert proc.returncode == 0, proc.stderr
    return ref


# -- the deployed cluster ------------------------------------------------------------------


@pytest.fixture(scope="session")
def deployed() -> Iterator[Deployed]:
    reason = deploy_why_not()
    if reason:
        pytest.skip(reason)
    take_down(node_env(), "the deployed cluster's tests need the machine's one cluster")
    home = DEPLOY_HOME
    d = Deployed(
        home=home,
        env=deploy_env(),
        kubectl_bin=str(kubectl_path()),
        values=home / "logberg-values.yaml",
    )
    brought_up = False
    services = ExitStack()
    if d.current():
        print(f"\nreusing the current deployment at {home}")
        d.gateway = services.enter_context(release_gateway(d))
    else:
        take_down(d.env, "no current deployment there: a fresh cluster")
        home.mkdir(parents=True)
        brought_up = True
        try:
            took = {}
            for step in DEPLOY_STEPS:
                started = time.monotonic()
                if step == "k8s-deploy":  # the node's address is there once the cluster is
                    d.gateway = services.enter_context(release_gateway(d))
                    # The metastore's JVMs too (the chart's METASTORE_EXTRA_JAVA_OPTS).
                    d.metastore_values.write_text(
                        yaml.safe_dump({"metastore": {"extraJavaOpts": TEST_JAVA_OPTIONS}})
                    )
                    d.values.write_text(
                        yaml.safe_dump(
                            {
                                "generator": {"args": DEMO_ARGS},
                                "monitoring": {"pushgatewayUrl": d.gateway},
                                "spark": {
                                    # As tests/conftest.py's TEST_JAVA_OPTIONS: small data.
                                    # -Xshare:on: a JVM the entrypoint hands the image's
                                    # class archive fails to start if it cannot map it, so
                                    # every application here proves it maps on the node.
                                    "javaOptions": f"{TEST_JAVA_OPTIONS} -Xshare:on",
                                    # One retry of a failed run (values-kind.yaml: 3): what
                                    # the fault tests need (a second attempt, or a re-apply),
                                    # and a failing job fails after 2 drivers, not 4.
                                    "restartPolicy": {"onFailureRetries": 1},
                                },
                            }
                        )
                    )
                d.outputs[step] = d.make(step)
                (home / f"{step}.out").write_text(d.outputs[step])
                took[step] = time.monotonic() - started
            print("\n" + ", ".join(f"{step} {s:.0f}s" for step, s in took.items()))
            d.stamp.write_text(json.dumps(deployment_inputs()))
        except BaseException:
            _post_mortem(d)
            services.close()
            if not KEEP:
                _down(d)
            raise
    try:
        yield d
    finally:
        d.close()  # its spark-sql shell in the toolbox
        services.close()
        if brought_up and not KEEP:
            _post_mortem(d)
            _down(d)


@contextmanager
def release_gateway(d: Deployed) -> Iterator[str]:
    """The Pushgateway the release's jobs push to (chart value monitoring.pushgatewayUrl),
    on this machine at the node's bridge address, for the whole session. Its port and what
    was pushed stay in the deployment's home, so a reused deployment pushes to the same URL
    and the demo's figures are still there."""
    where = d.home / "pushgateway"
    where.mkdir(exist_ok=True)
    saved = where / "port"
    port = int(saved.read_text()) if saved.exists() else free_port()
    saved.write_text(str(port))
    with pushgateway(where, d.node_ip(), port, persist=True) as url:
        yield url


def _post_mortem(d: Deployed) -> None:
    for ns in (NS, OPERATOR_NS):  # what the pods said, for a failure's post-mortem
        subprocess.run(
            [d.kubectl_bin, f"--kubeconfig={d.home / 'kubeconfig'}", "-n", ns, "get", "pods",
             "-o", "wide"], timeout=60,
        )  # fmt: skip


def _down(d: Deployed) -> None:
    """`make cluster-down`, checked. The home (the cluster's host record) goes only after a
    `down` that worked: removed after a failed one, it would orphan the cluster's processes
    and host changes, and the next `cluster-up` would refuse its leftovers."""
    d.make("cluster-down", timeout=900)
    shutil.rmtree(d.home, ignore_errors=True)


@pytest.fixture(scope="module")
def settled(deployed: Deployed) -> Deployed:
    """The deployment with every generated file ingested, for a file that counts rows."""
    deployed.settle()
    return deployed
