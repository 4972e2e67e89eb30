"""Where `logberg k8s ui` points: a live driver's Spark UI, or the release's History Server.

A SparkApplication's driver serves its UI only while it runs; once the driver is gone the
History Server (charts/logberg `historyServer.enabled`) serves the same pages from the
application's event log, under `/history/<spark application id>/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from logberg.errors import ConfigError

if TYPE_CHECKING:
    from logberg_platform.k8s.api_client import Kube

DRIVER_UI_PORT = 4040  # Spark's spark.ui.port default


@dataclass(frozen=True)
class UiTarget:
    pod: str
    port: int
    path: str
    what: str


def history_server(kube: Kube, release: str) -> UiTarget | None:
    """The release's ready History Server pod, or None when it has none."""
    pods = kube.call(
        "list pods",
        kube.core.list_namespaced_pod,
        kube.ns,
        label_selector=(
            f"app.kubernetes.io/instance={release},app.kubernetes.io/component=history-server"
        ),
    ).items
    for pod in pods:
        if pod.status.phase != "Running" or not _ready(pod):
            continue
        ports = [p for c in pod.spec.containers for p in (c.ports or []) if p.name == "http"]
        if ports:
            return UiTarget(
                str(pod.metadata.name), int(ports[0].container_port), "/", "the History Server"
            )
    return None


def driver_ui_port(app: dict[str, Any]) -> int:
    """The port the operator reports for the driver's UI, else the app's spark.ui.port."""
    info = app.get("status", {}).get("driverInfo", {})
    if info.get("webUIPort"):
        return int(info["webUIPort"])
    return int(app.get("spec", {}).get("sparkConf", {}).get("spark.ui.port", DRIVER_UI_PORT))


def resolve(kube: Kube, release: str, name: str | None) -> UiTarget:
    """The pod and path to show: no name, the History Server; a SparkApplication, its
    driver while it runs, else its pages on the History Server."""
    if name is None:
        found = history_server(kube, release)
        if found is None:
            raise ConfigError(_no_history(kube, release))
        return found
    app = kube.app(name)
    if app is None:
        raise ConfigError(f"no SparkApplication {name!r} in namespace {kube.ns}")
    status = app.get("status", {})
    driver = status.get("driverInfo", {}).get("podName")
    if driver and _running(kube, driver):
        return UiTarget(driver, driver_ui_port(app), "/jobs/", f"the live driver of {name}")
    found = history_server(kube, release)
    if found is None:
        raise ConfigError(f"the driver of {name} is gone; " + _no_history(kube, release))
    app_id = status.get("sparkApplicationId")
    if not app_id:
        state = status.get("applicationState", {}).get("state", "NEW")
        raise ConfigError(f"{name} has no Spark application id yet (state {state})")
    return UiTarget(found.pod, found.port, f"/history/{app_id}/jobs/", f"{name} on " + found.what)


def _no_history(kube: Kube, release: str) -> str:
    return (
        f"release {release!r} in namespace {kube.ns} has no ready History Server "
        "(chart values eventLog.enabled and historyServer.enabled)"
    )


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def _running(kube: Kube, pod: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        p = kube.call("read pods", kube.core.read_namespaced_pod, pod, kube.ns)
    except ApiException as e:
        if e.status == 404:
            return False
        raise
    return bool(p.status.phase == "Running" and _ready(p))
