"""A release's Spark Connect server (the chart's `connect.enabled`), from outside the cluster.

The chart deploys it as a Spark Operator `SparkConnect` (sparkoperator.k8s.io/v1alpha1). A
client on this machine reaches it through the API server's port-forward to a port on
localhost: the Python client sends a token in clear only to "localhost" (for any other host
it insists on TLS), and the port-forward enters the server pod's own network namespace, so
the server's NetworkPolicy needs no rule for it. The token is read from the Secret the
server itself reads it from (its SPARK_CONNECT_AUTHENTICATE_TOKEN's secretKeyRef), through
the Kubernetes API; it is never printed or logged.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from logberg.errors import ConfigError, ServiceError
from logberg_platform.k8s.api_client import GROUP, Kube

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Under "logberg": the logger the command line configures (stderr, text or JSON).
log = logging.getLogger("logberg.k8s.connect")

CONNECT_VERSION = "v1alpha1"
PLURAL = "sparkconnects"
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
DEFAULT_PORT = 15002
SERVER_CONTAINER = "spark-kubernetes-driver"


@dataclass(frozen=True)
class Server:
    """What a client needs of a deployed SparkConnect: its pod, port and token's Secret."""

    name: str
    pod: str
    port: int
    secret: str
    key: str
    state: str

    @property
    def setting(self) -> str:
        """The setting that names the token, for messages."""
        return f"the Secret {self.secret} (key {self.key}; chart value connect.auth)"


def find(kube: Kube, release: str) -> Server | None:
    """The release's SparkConnect, or None when it has none (or the CRD is missing: an
    operator too old for SparkConnect, or none at all)."""
    from kubernetes.client.exceptions import ApiException

    try:
        listed = kube.call(
            f"list {PLURAL}.{GROUP}",
            kube.custom.list_namespaced_custom_object,
            GROUP,
            CONNECT_VERSION,
            kube.ns,
            PLURAL,
            label_selector=f"app.kubernetes.io/instance={release}",
        )
    except ApiException as e:
        if e.status == 404:
            return None
        raise
    items = listed.get("items") or []
    if not items:
        return None
    if len(items) > 1:
        names = ", ".join(sorted(i["metadata"]["name"] for i in items))
        raise ConfigError(f"--release {release}: more than one SparkConnect ({names})")
    return server_of(items[0])


def server_of(obj: dict[str, Any]) -> Server:
    name = obj["metadata"]["name"]
    spec = obj.get("spec") or {}
    pod_spec = (((spec.get("server") or {}).get("template") or {}).get("spec")) or {}
    containers = pod_spec.get("containers") or []
    container = next((c for c in containers if c.get("name") == SERVER_CONTAINER), None)
    if container is None:
        raise ConfigError(f"SparkConnect {name}: no {SERVER_CONTAINER} container in its template")
    ref = next(
        (
            (e.get("valueFrom") or {}).get("secretKeyRef")
            for e in container.get("env") or []
            if e.get("name") == TOKEN_ENV
        ),
        None,
    )
    if not ref:
        raise ConfigError(
            f"SparkConnect {name}: its server takes no token from a Secret ({TOKEN_ENV}); "
            "logberg talks only to a server that authenticates its clients"
        )
    port = next(
        (
            p["containerPort"]
            for p in container.get("ports") or []
            if p.get("name") == "spark-connect"
        ),
        DEFAULT_PORT,
    )
    status = obj.get("status") or {}
    return Server(
        name=name,
        pod=(status.get("server") or {}).get("podName") or f"{name}-server",
        port=int(port),
        secret=ref["name"],
        key=ref["key"],
        state=status.get("state") or "New",
    )


def require_ready(kube: Kube, server: Server) -> None:
    """The server pod runs and is ready (its gRPC port answers): fail fast otherwise."""
    from kubernetes.client.exceptions import ApiException

    try:
        pod = kube.call("get pods", kube.core.read_namespaced_pod, server.pod, kube.ns)
    except ApiException as e:
        if e.status != 404:
            raise
        pod = None
    ready = pod is not None and any(
        c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or [])
    )
    if not ready:
        raise ServiceError(
            f"the Spark Connect server {server.name} in namespace {kube.ns} is not ready "
            f"(state {server.state}, pod {server.pod}); wait for it, or see "
            f"`kubectl -n {kube.ns} describe sparkconnect {server.name}` and its pod's log"
        )


def token(kube: Kube, server: Server) -> str:
    from kubernetes.client.exceptions import ApiException

    try:
        value = kube.secret_value(server.secret, server.key)
    except ApiException as e:
        if e.status == 404:
            raise ConfigError(f"{server.setting}: no such Secret in {kube.ns}") from None
        raise
    except KeyError:
        raise ConfigError(f"{server.setting}: the Secret has no such key") from None
    if not value:
        raise ConfigError(f"{server.setting}: the token is empty")
    return value


# -- the port-forward ------------------------------------------------------------------------


class PortForward:
    """A port on 127.0.0.1 relayed to a pod's port through the API server's port-forward:
    each accepted connection gets its own port-forward stream."""

    def __init__(self, kube: Kube, pod: str, port: int, local_port: int = 0) -> None:
        self.kube, self.pod, self.remote_port = kube, pod, port
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind(("127.0.0.1", local_port))
        except OSError as e:
            self.listener.close()
            raise ConfigError(f"--port {local_port}: cannot listen on it ({e.strerror})") from None
        self.listener.listen(8)
        self.port = int(self.listener.getsockname()[1])
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._accept, name="port-forward", daemon=True)

    def __enter__(self) -> PortForward:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn: socket.socket) -> None:
        from kubernetes.stream import portforward

        try:
            pf = self.kube.call(
                "create pods/portforward",
                portforward,
                self.kube.core.connect_get_namespaced_pod_portforward,
                self.pod,
                self.kube.ns,
                ports=str(self.remote_port),
            )
            remote = pf.socket(self.remote_port)
        except Exception as e:  # the client sees its connection close; say why here
            log.error("port-forward to pod %s failed: %s", self.pod, e)
            conn.close()
            return
        remote.setblocking(True)
        pair = [conn, remote]
        try:
            while not self.closed.is_set():
                readable, _, _ = select.select(pair, [], [], 1.0)
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    (remote if s is conn else conn).sendall(data)
        except OSError:
            return
        finally:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.close()
            with contextlib.suppress(Exception):
                pf.close()


# -- the session -----------------------------------------------------------------------------


def refused(e: BaseException) -> bool:
    """The server refused the client's token (gRPC UNAUTHENTICATED)."""
    text = f"{type(e).__name__}: {e}"
    return "UNAUTHENTICATED" in text or "Invalid authentication token" in text


@contextlib.contextmanager
def session(kube: Kube, server: Server, app: str) -> Iterator[SparkSession]:
    """A Spark Connect session on the server, through a port-forward; the token comes from
    its Secret. A refused token fails fast, naming the Secret."""
    from pyspark.sql import SparkSession

    secret = token(kube, server)
    require_ready(kube, server)
    with PortForward(kube, server.pod, server.port) as pf:
        url = f"sc://localhost:{pf.port}/;token={secret};user_agent={app}"
        log.info(
            "Spark Connect server %s (pod %s) through a port-forward on localhost:%d",
            server.name,
            server.pod,
            pf.port,
        )
        spark: SparkSession | None = None
        try:
            try:
                spark = SparkSession.builder.remote(url).getOrCreate()
                spark.version  # noqa: B018 - a first call: the token is checked by now
            except Exception as e:
                if refused(e):
                    raise ConfigError(
                        f"{server.setting}: the Spark Connect server {server.name} refused "
                        "the token"
                    ) from None
                raise ServiceError(
                    f"the Spark Connect server {server.name} (pod {server.pod}) did not "
                    f"answer: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                ) from None
            yield spark
        finally:
            if spark is not None:
                with contextlib.suppress(Exception):
                    spark.stop()


# -- SQL through the session -------------------------------------------------------------------


def statements(text: str) -> list[str]:
    """SQL text split at the semicolons outside quotes and comments (as spark-sql splits
    `-e`); empty statements dropped. The local `logberg sql` splits the same way."""
    from logberg.lakehouse.connect_shell import statements as split

    return list(split(text))


def complete(text: str) -> bool:
    """The text ends with a `;` outside quotes and comments (a statement is typed in)."""
    if not text.rstrip().endswith(";"):
        return False
    return statements(text + "\x00")[-1] == "\x00"


def _cell(value: Any) -> str:
    from logberg.lakehouse.connect_shell import cell

    return cell(value)


def sql_piped(spark: SparkSession, text: str, out: Any) -> int:
    """Each statement in turn, printed as `spark-sql -S` with headers prints it: the column
    names, then the rows, tab-separated. The first failing statement ends the run (1)."""
    for statement in statements(text):
        try:
            df = spark.sql(statement)
            rows = df.collect()
        except Exception as e:
            if refused(e):
                raise
            log.error("%s\n  in: %s", str(e).strip().splitlines()[0], statement[:200])
            return 1
        if df.columns:
            out.write("\t".join(df.columns) + "\n")
            for row in rows:
                out.write("\t".join(_cell(v) for v in row) + "\n")
        out.flush()
    return 0


def sql_terminal(spark: SparkSession) -> int:
    """A line-based SQL prompt: statements end with `;`, rows print as a table."""
    from logberg.output import write_rows

    buffer: list[str] = []
    print("Spark Connect SQL: statements end with ';', Ctrl-D leaves.", file=sys.stderr)
    while True:
        try:
            line = input("logberg> " if not buffer else "       > ")
        except EOFError:
            print(file=sys.stderr)
            return 0
        except KeyboardInterrupt:
            buffer = []
            print(file=sys.stderr)
            continue
        buffer.append(line)
        text = "\n".join(buffer)
        if not text.strip():
            buffer = []
            continue
        if not complete(text):
            continue
        buffer = []
        for statement in statements(text):
            try:
                df = spark.sql(statement)
                write_rows(df.columns, [tuple(r) for r in df.collect()], "table", sys.stdout)
            except Exception as e:
                if refused(e):
                    raise
                print(f"error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
