"""The Kubernetes API, through the kubernetes Python client, for logberg's cluster commands.

`Kube` loads a kubeconfig context (or the in-cluster config) and turns what goes wrong into
errors that say what to do: no cluster answering, a missing CRD, RBAC refusing a verb. The
waits poll a condition until a deadline; none of them sleeps in place of a check.
"""

from __future__ import annotations

import base64
import io
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from logberg.errors import ConfigError, ServiceError

log = logging.getLogger(__name__)

GROUP, VERSION = "sparkoperator.k8s.io", "v1beta2"
DONE_STATES = ("COMPLETED",)
FAILED_STATES = ("FAILED", "SUBMISSION_FAILED")


@dataclass(frozen=True)
class Target:
    """Which cluster and namespace: a kubeconfig context, or the pod's own (in-cluster)."""

    namespace: str
    context: str | None = None  # None: the kubeconfig's current context
    kubeconfig: str | None = None  # None: $KUBECONFIG or ~/.kube/config


class Kube:
    def __init__(self, target: Target) -> None:
        from kubernetes import client, config

        self.target = target
        self.client = client
        try:
            if target.context is None and target.kubeconfig is None and _in_pod():
                config.load_incluster_config()
                self.where = "the in-cluster config"
            else:
                config.load_kube_config(config_file=target.kubeconfig, context=target.context)
                self.where = f"context {target.context or '(current)'}"
        except config.ConfigException as e:
            setting = "K8S_CONTEXT (--context)" if target.context else "KUBECONFIG"
            raise ConfigError(f"{setting}: cannot load a kubeconfig: {e}") from None
        self.api = client.ApiClient()
        self.core = client.CoreV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.admission = client.AdmissionregistrationV1Api(self.api)
        self.apiext = client.ApiextensionsV1Api(self.api)

    @property
    def ns(self) -> str:
        return self.target.namespace

    # -- errors ---------------------------------------------------------------------------
    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call the API; refusals and unreachable servers become errors that say why."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, **kwargs)
        except ApiException as e:
            if e.status == 403:
                raise ConfigError(
                    f"RBAC: {self.where} may not {what} in namespace {self.ns} "
                    f"({_reason(e)}); grant it, or use another --context"
                ) from None
            if e.status == 401:
                raise ConfigError(
                    f"{self.where}: the API server refused the credentials (401)"
                ) from None
            raise
        except (HTTPError, OSError) as e:
            host = self.api.configuration.host
            raise ServiceError(
                f"no Kubernetes API answers at {host} ({self.where}): {type(e).__name__}: {e}"
            ) from None

    def ping(self) -> str:
        """The server's version; fails fast when nothing answers."""
        info = self.call("read the version", self.client.VersionApi(self.api).get_code)
        return str(info.git_version)

    def require_crd(self, plural: str = "sparkapplications") -> None:
        """Fail fast when the CRD is missing. A user whose RBAC may not read CRDs (they are
        cluster-wide) is not stopped here: their namespaced call says it itself."""
        from kubernetes.client.exceptions import ApiException

        try:
            self.apiext.read_custom_resource_definition(f"{plural}.{GROUP}")
        except ApiException as e:
            if e.status == 404:
                raise no_crd(plural) from None
            if e.status not in (401, 403):
                raise
        except Exception:  # unreachable: the next call says so, with the address
            return

    def operator_call(self, what: str, fn: Callable[..., Any], *args: Any, plural: str) -> Any:
        """A call on a Spark Operator resource: 404 on the resource type means no CRD."""
        from kubernetes.client.exceptions import ApiException

        try:
            return self.call(f"{what} {plural}.{GROUP}", fn, *args)
        except ApiException as e:
            if e.status != 404:
                raise
            # On a collection, 404 means the type is not served (a plain "404 page not
            # found"), or, on create, that the namespace is missing (a Status naming it).
            if _status_kind(e) == "namespaces":
                raise ConfigError(
                    f"K8S_NAMESPACE: namespace {self.ns} does not exist in {self.where}"
                ) from None
            raise no_crd(plural) from None

    # -- objects --------------------------------------------------------------------------
    def ensure_namespace(self, name: str) -> bool:
        """Create the namespace unless it exists; True if created."""
        from kubernetes.client.exceptions import ApiException

        try:
            self.call("read namespaces", self.core.read_namespace, name)
            return False
        except ApiException as e:
            if e.status != 404:
                raise
        body = self.client.V1Namespace(metadata=self.client.V1ObjectMeta(name=name))
        self.call("create namespaces", self.core.create_namespace, body)
        return True

    def ensure_secret(self, name: str, data: Mapping[str, Callable[[], str]]) -> bool:
        """Create an Opaque Secret with values from the factories, unless it exists (an
        existing one is kept: rotating it is the owner's call). The values are never
        logged. True if created."""
        from kubernetes.client.exceptions import ApiException

        try:
            self.call("read secrets", self.core.read_namespaced_secret, name, self.ns)
            return False
        except ApiException as e:
            if e.status != 404:
                raise
        body = self.client.V1Secret(
            metadata=self.client.V1ObjectMeta(
                name=name, labels={"app.kubernetes.io/part-of": "logberg"}
            ),
            type="Opaque",
            data={k: base64.b64encode(make().encode()).decode() for k, make in data.items()},
        )
        self.call("create secrets", self.core.create_namespaced_secret, self.ns, body)
        return True

    def secret_value(self, name: str, key: str) -> str:
        s = self.call("read secrets", self.core.read_namespaced_secret, name, self.ns)
        return base64.b64decode((s.data or {})[key]).decode()

    def app(self, name: str) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            obj: dict[str, Any] = self.call(
                "get sparkapplications",
                self.custom.get_namespaced_custom_object,
                GROUP,
                VERSION,
                self.ns,
                "sparkapplications",
                name,
            )
            return obj
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def pod_log_response(
        self,
        pod: str,
        tail: int | None = None,
        container: str | None = None,
        follow: bool = False,
    ) -> Any:
        """The raw log response (read `.data`, or `.stream()` it when following): the
        client's own decoding would turn a log into a Python repr."""
        kwargs: dict[str, Any] = {"tail_lines": tail} if tail else {}
        if container:
            kwargs["container"] = container
        if follow:
            kwargs["follow"] = True
        return self.call(
            "get pods/log",
            self.core.read_namespaced_pod_log,
            pod,
            self.ns,
            _preload_content=False,
            **kwargs,
        )

    def pod_log(self, pod: str, tail: int | None = None, container: str | None = None) -> str:
        from kubernetes.client.exceptions import ApiException

        try:
            resp = self.pod_log_response(pod, tail=tail, container=container)
        except ApiException as e:
            return f"(no log of pod {pod}: {_reason(e)})"
        return str(resp.data.decode(errors="replace"))

    # -- waits ----------------------------------------------------------------------------
    def webhooks_have_ca(self, release: str) -> bool:
        """Every webhook of the release's mutating and validating configurations holds a
        CA bundle (the operator patches it in 15-20 s after it starts)."""
        found = 0
        for lister in (
            self.admission.list_mutating_webhook_configuration,
            self.admission.list_validating_webhook_configuration,
        ):
            configs = self.call("list webhook configurations", lister)
            for cfg in configs.items:
                if not cfg.metadata.name.startswith(release):
                    continue
                found += 1
                if not all(w.client_config.ca_bundle for w in cfg.webhooks or []):
                    return False
        return found > 0

    def jobs_done(self, selector: str) -> bool:
        """True when every Job the label selector matches (at least one) succeeded."""
        jobs = self.call(
            "list jobs", self.batch.list_namespaced_job, self.ns, label_selector=selector
        )
        if not jobs.items:
            raise ConfigError(f"no Job in namespace {self.ns} matches {selector!r}")
        return all(self.job_done(j.metadata.name) for j in jobs.items)

    def job_done(self, name: str) -> bool:
        """True when the Job succeeded; raises with its pods' log tails when it failed."""
        job = self.call("get jobs", self.batch.read_namespaced_job, name, self.ns)
        if (job.status.succeeded or 0) >= 1:
            return True
        for cond in job.status.conditions or []:
            if cond.type == "Failed" and cond.status == "True":
                pods = self.call(
                    "list pods",
                    self.core.list_namespaced_pod,
                    self.ns,
                    label_selector=f"job-name={name}",
                )
                tails = "\n".join(
                    f"--- {p.metadata.name} ({c.name})\n{self.pod_log(p.metadata.name, 30, c.name)}"
                    for p in pods.items
                    for c in [*(p.spec.init_containers or []), *p.spec.containers]
                )
                raise ServiceError(f"Job {name} failed: {cond.message}\n{tails}")
        return False

    # -- a Job run again ----------------------------------------------------------------
    def containers_started(self, selector: str) -> float | None:
        """When the newest container of the pods the selector matches started (epoch
        seconds); None while one of them is not running yet, or when none matches."""
        pods = self.call(
            "list pods", self.core.list_namespaced_pod, self.ns, label_selector=selector
        )
        newest: float | None = None
        for pod in pods.items:
            for status in pod.status.container_statuses or []:
                running = status.state.running if status.state else None
                if running is None or running.started_at is None:
                    return None
                t = running.started_at.timestamp()
                newest = t if newest is None else max(newest, t)
        return newest

    def jobs_named(self, name: str | None, selector: str | None) -> list[Any]:
        if name:
            return [self.call("get jobs", self.batch.read_namespaced_job, name, self.ns)]
        return list(
            self.call(
                "list jobs", self.batch.list_namespaced_job, self.ns, label_selector=selector
            ).items
        )

    def rerun_job(self, job: Any, timeout: float = 300.0) -> None:
        """Delete the Job and create it again from its own spec (a Job cannot be restarted
        in place); its owner's labels and annotations (Helm's) stay."""
        from kubernetes.client.exceptions import ApiException

        name = job.metadata.name
        again = job_spec_again(self.api.sanitize_for_serialization(job))
        self.call(
            "delete jobs",
            self.batch.delete_namespaced_job,
            name,
            self.ns,
            propagation_policy="Background",
        )

        def gone() -> bool:
            try:
                self.batch.read_namespaced_job(name, self.ns)
            except ApiException as e:
                if e.status == 404:
                    return True
                raise
            return False

        wait(f"Job {name} to be deleted", gone, timeout, interval=1.0)
        self.call("create jobs", self.batch.create_namespaced_job, self.ns, again)


# The labels the API server gives a Job it creates (and its selector): a new Job gets new.
JOB_SERVER_LABELS = (
    "controller-uid",
    "job-name",
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
)


def job_spec_again(job: dict[str, Any]) -> dict[str, Any]:
    """A Job's manifest for creating it again: what the API server filled in removed (its
    identity, status, generated selector and the labels that name the old Job)."""
    meta = {
        k: v
        for k, v in job.get("metadata", {}).items()
        if k in ("name", "namespace", "labels", "annotations")
    }
    spec = dict(job.get("spec", {}))
    if not spec.get("manualSelector"):
        spec.pop("selector", None)
    template = dict(spec.get("template", {}))
    tmeta = dict(template.get("metadata", {}))
    for m in (meta, tmeta):
        labels = {k: v for k, v in (m.get("labels") or {}).items() if k not in JOB_SERVER_LABELS}
        if labels:
            m["labels"] = labels
        else:
            m.pop("labels", None)
    tmeta.pop("creationTimestamp", None)
    if tmeta:
        template["metadata"] = tmeta
    spec["template"] = template
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def exec_capture(
    kube: Kube, pod: str, container: str, command: list[str], timeout: float = 300.0
) -> tuple[int, str, str]:
    """Run a command in a container; (exit code, stdout, stderr)."""
    from kubernetes.stream import stream

    ws = kube.call(
        "create pods/exec",
        stream,
        kube.core.connect_get_namespaced_pod_exec,
        pod,
        kube.ns,
        container=container,
        command=command,
        stdin=False,
        stdout=True,
        stderr=True,
        tty=False,
        _preload_content=False,
    )
    out, err = [], []
    deadline = time.monotonic() + timeout
    while ws.is_open() and time.monotonic() < deadline:
        ws.update(timeout=1)
        if ws.peek_stdout():
            out.append(ws.read_stdout())
        if ws.peek_stderr():
            err.append(ws.read_stderr())
    ws.close()
    failure = io.StringIO()
    code = exit_code(ws, failure)
    return code, "".join(out), "".join(err) + failure.getvalue()


def exit_code(ws: Any, err: IO[str] | None) -> int:
    """An exec's exit code. When the container runtime could not run the command at all,
    the error channel holds a message instead of a code: say it, and return 126."""
    try:
        return int(ws.returncode or 0)
    except (ValueError, KeyError, TypeError) as e:
        if err is not None:
            err.write(f"the command did not start in the container: {e}\n")
        return 126


def no_crd(plural: str) -> ConfigError:
    return ConfigError(
        f"the CRD {plural}.{GROUP} is not installed in this cluster: install the Spark "
        "Operator first (make k8s-deploy)"
    )


def wait(what: str, check: Callable[[], bool], timeout: float, interval: float = 2.0) -> float:
    """Poll `check` until it is true; the seconds it took. ServiceError after `timeout`."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise ServiceError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
    return time.monotonic() - started


def random_secret(prefix: str = "", nbytes: int = 24) -> Callable[[], str]:
    return lambda: prefix + secrets.token_urlsafe(nbytes).replace("-", "x").replace("_", "y")


def _status_kind(e: Any) -> str:
    """The kind a Status body names (`details.kind`), or "" for a body that is no Status."""
    import json

    try:
        return str((json.loads(e.body).get("details") or {}).get("kind") or "")
    except (ValueError, TypeError, AttributeError):
        return ""


def _reason(e: Any) -> str:
    import json

    try:
        return str(json.loads(e.body).get("message") or e.reason)
    except (ValueError, TypeError, AttributeError):
        return str(getattr(e, "reason", e))


def _in_pod() -> bool:
    import os

    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and not os.environ.get("KUBECONFIG")
