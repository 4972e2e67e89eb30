"""Fixtures of the end-to-end tests on kind (the framework is tests/e2e/framework.py).

`deployed` is the kind cluster with logberg deployed and the demo run, as the README says
(`make kind-up`, `make k8s-demo`): session-wide, reused when it runs and is current. The
files run in the order of ORDER when the whole tier runs (the one that uninstalls, and
test_kind_down.py, which takes the cluster down, last), and each file also runs alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import yaml

from logberg_platform.supervisor import free_port
from tests.conftest import TEST_JAVA_OPTIONS
from tests.e2e.framework import (
    DEMO_ARGS,
    DEPLOY_HOME,
    DEPLOY_STEPS,
    KEEP,
    NS,
    OPERATOR_NS,
    Deployed,
    deploy_env,
    deployment_inputs,
    host_address,
    kubectl_path,
)
from tests.e2e.kind import BEFORE, Kind, host_picture
from tests.e2e.order import ORDER
from tests.helpers.prometheus import pushgateway


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """This tier's tests in ORDER (a file not named there before the two that end the
    cluster); the other tiers' tests keep their places."""
    here = Path(__file__).parent
    slots = [i for i, item in enumerate(items) if item.path.parent == here]

    def rank(item: pytest.Item) -> int:
        name = item.path.stem
        return ORDER.index(name) if name in ORDER else ORDER.index("test_uninstall") - 1

    mine = sorted((items[i] for i in slots), key=rank)  # stable: file order within a file
    for i, item in zip(slots, mine, strict=True):
        items[i] = item


@pytest.fixture(scope="session")
def deployed() -> Iterator[Deployed]:
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
        kind = Kind()
        if kind.running():
            print(f"\nno current deployment on kind cluster {kind.name}: a fresh one")
            _down(d)
        BEFORE["host"] = host_picture()  # what test_kind_down.py compares with
        home.mkdir(parents=True, exist_ok=True)
        brought_up = True
        try:
            took = {}
            for step in DEPLOY_STEPS:
                started = time.monotonic()
                if step == "kind-up":  # it deploys too: the values first
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
    on this machine at its own address (the pods reach it through the kind node), for the
    whole session. Its port and what
    was pushed stay in the deployment's home, so a reused deployment pushes to the same URL
    and the demo's figures are still there."""
    where = d.home / "pushgateway"
    where.mkdir(exist_ok=True)
    saved = where / "port"
    port = int(saved.read_text()) if saved.exists() else free_port()
    saved.write_text(str(port))
    with pushgateway(where, host_address(), port, persist=True) as url:
        yield url


def _post_mortem(d: Deployed) -> None:
    for ns in (NS, OPERATOR_NS):  # what the pods said, for a failure's post-mortem
        subprocess.run(
            [d.kubectl_bin, f"--kubeconfig={d.home / 'kubeconfig'}", "-n", ns, "get", "pods",
             "-o", "wide"], timeout=60,
        )  # fmt: skip


def _down(d: Deployed) -> None:
    """`make kind-down`, checked; then the session's home (its kubeconfig, outputs and
    Pushgateway data) goes too."""
    d.make("kind-down", timeout=900)
    shutil.rmtree(d.home, ignore_errors=True)


@pytest.fixture(scope="module")
def settled(deployed: Deployed) -> Deployed:
    """The deployment with every generated file ingested, for a file that counts rows."""
    deployed.settle()
    return deployed
