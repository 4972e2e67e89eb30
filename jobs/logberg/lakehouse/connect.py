"""Which Spark a command runs on, and a session on a warm Spark Connect server.

A command that needs Spark either starts Spark in its own process (`in-process`: a JVM,
a session, the first metastore call, cold JIT; seconds before the first row) or runs its
DataFrames on a long-lived Spark Connect server that has all of that behind it
(`connect`). `LOGBERG_SPARK_MODE` chooses:

- `auto` (the default): the server when one runs for this environment, else in-process;
- `connect`: the server, and an error naming the setting when none runs;
- `in-process`: never the server.

Once a command has chosen the server it stays on it: a server that does not answer, or
fails during the command, is an error naming the server and its log, never a quiet
second try in-process.
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import gc
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logberg.errors import ConfigError, ServiceError
from logberg.lakehouse import connect_pool

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MODE_ENV = "LOGBERG_SPARK_MODE"
log = logging.getLogger("logberg.spark")


class SparkMode(str, enum.Enum):
    AUTO = "auto"
    CONNECT = "connect"
    IN_PROCESS = "in-process"


def spark_mode() -> SparkMode:
    """LOGBERG_SPARK_MODE, checked."""
    raw = os.environ.get(MODE_ENV, "").strip().lower() or SparkMode.AUTO.value
    try:
        return SparkMode(raw)
    except ValueError:
        choices = ", ".join(m.value for m in SparkMode)
        raise ConfigError(f"{MODE_ENV}={raw!r}: expected one of {choices}") from None


@dataclass(frozen=True)
class ConnectServer:
    """A Spark Connect server a client may use: where it listens, how to authenticate,
    and where to look when it fails (`log`: its log file, or how to read it)."""

    host: str
    port: int
    token: str | None
    log: str
    token_source: str = "the server's token"  # the setting or file a bad token came from
    described: str = "the Spark Connect server"
    # How often an unavailable server is retried (backoff 50 ms x4 each time: about 4 s in
    # all for 4), where the client's default waits up to 10 minutes.
    retries: int = 4
    # The directory of its session slots for job commands (`connect_pool`); None: every
    # client has a session of its own.
    sessions: str | None = None

    @property
    def url(self) -> str:
        """The sc:// URL without the token (for messages)."""
        return f"sc://{self.host}:{self.port}"

    def channel(self) -> str:
        """The client's connection string. The Python client talks TLS to any host but
        `localhost` when a token is set; on localhost it uses local channel credentials."""
        base = f"sc://{self.host}:{self.port}/"
        return f"{base};token={self.token}" if self.token else base

    def where(self) -> str:
        return f"{self.described} at {self.url} (log: {self.log})"


# The server the running command chose, for the CLI's error message.
_active: ConnectServer | None = None


def active() -> ConnectServer | None:
    return _active


def remote_session(
    server: ConnectServer, whole_process: bool = True, reuse: bool = False
) -> SparkSession:
    """A session on the server, checked with one round trip: a server that does not answer
    or refuses the token fails here, before the command does any work.

    `whole_process`: this process is a Spark Connect client from now on. PySpark's column
    functions (`pyspark.sql.functions`) build Connect expressions only when the process is
    marked so (what `SparkSession.builder.remote` does); a process that also holds an
    in-process session (a test, a readiness check) passes False and uses SQL alone.

    `reuse`: a job command's session, taken up from the server's session slots where it
    has them (`connect_pool`: the server's compiled code is reused); else a session of its
    own, released when the process ends."""
    global _active
    if whole_process:
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    held = connect_pool.lease(Path(server.sessions)) if reuse and server.sessions else None
    try:
        try:
            spark = _open(server, held.session_id if held else None)
        except _Closed:  # the server ended the slot's session (idle): a new one
            assert held is not None
            spark = _open(server, held.renew())
    except BaseException:
        if held is not None:
            held.end()  # the session was never used: still clean
        raise
    _active = server
    # The server keeps a session (its temp views, its settings) until it is released or
    # idles out: a command releases its own when it ends, or hands its slot on.
    atexit.register(_at_exit, spark, held)
    session: SparkSession = spark  # the jobs use the API both sessions share
    return session


def _make_current(spark: Any) -> None:
    """Make `spark` the process's default and active Connect session.

    PySpark marks only a process's first Connect session so (`builder.create`), and gives a
    checkpoint's DataFrame to the active session (`localCheckpoint`'s result): in a process
    that opened a session before (a test's helper, a library user), a command's checkpoint
    was read from that other session, where the server has no such DataFrame
    ("No DataFrame with id ... is found in the session")."""
    cls = type(spark)
    with cls._lock:
        cls._default_session = spark
    cls._active_session.session = spark


def _at_exit(spark: Any, held: connect_pool.Lease | None) -> None:
    """Release what the command holds on the server while the interpreter still runs.

    PySpark releases a checkpointed DataFrame from its finalizer, with a gRPC call. A
    command that ends with an uncaught error keeps its frames (the checkpoints in them) in
    `sys.last_traceback` until the interpreter tears down, where that call starts a thread
    that never runs: the process hung instead of exiting with the error. Here, the frames
    are let go and collected first (their checkpoints released on the server), then the
    session is handed on or released, and the client closed: a finalizer after this sends
    nothing."""
    for name in ("last_traceback", "last_value", "last_type", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    with contextlib.suppress(Exception):
        gc.collect()
    if held is None:
        release(spark)  # PySpark's stop closes the client too
        return
    held.end()
    with contextlib.suppress(Exception):
        spark.client.close()


class _Closed(Exception):
    """The server closed the session of this id: it takes no new work."""


def _open(server: ConnectServer, session_id: str | None) -> Any:
    try:
        from pyspark.sql.connect.client.core import DefaultChannelBuilder
        from pyspark.sql.connect.client.retries import DefaultPolicy
        from pyspark.sql.connect.session import SparkSession as RemoteSession
    except ImportError as e:  # the runtime alone, without the `connect` extra
        raise ConfigError(
            f"{MODE_ENV}: Spark Connect's client is not installed ({e.name}); install "
            "logberg[connect], or set LOGBERG_SPARK_MODE=in-process"
        ) from None
    url = server.channel() + (f";session_id={session_id}" if session_id else "")
    spark: Any = RemoteSession.builder.channelBuilder(DefaultChannelBuilder(url)).create()
    _make_current(spark)
    spark.client.set_retry_policies([DefaultPolicy(max_retries=server.retries, max_backoff=5000)])
    try:
        spark.conf.get("spark.app.id")
    except Exception as e:  # gRPC and Spark errors differ by version
        text = str(e)
        if session_id and "SESSION_CLOSED" in text:
            # This client is PySpark's active session now: stop it (the server has
            # released its session already), or PySpark's own calls would go to it.
            spark.release_session_on_close = False
            with contextlib.suppress(Exception):
                spark.stop()
            raise _Closed(text) from None
        if "UNAUTHENTICATED" in text or "authentication" in text.lower():
            raise ConfigError(
                f"{server.token_source}: {server.described} at {server.url} refused the token"
            ) from None
        raise ServiceError(f"{server.where()} does not answer: {first_line(text)}") from None
    return spark


def query(spark: SparkSession, statement: str) -> DataFrame:
    """A query's DataFrame, not yet run, on either kind of session.

    On Spark Connect, `spark.sql` first sends the statement as a command, which the server
    parses and analyses, and collecting the DataFrame it returns sends it again: two round
    trips and two analyses for one result. Sent as a SQL relation, a query is parsed,
    analysed and run once, when it is collected (the plan PySpark itself sends when the
    server gives no command result). In-process, `spark.sql` of a query runs nothing yet.
    For statements that change something (DDL, DML, CALL), use `spark.sql`: it runs them
    at once."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return spark.sql(statement)
    from pyspark.sql.connect.dataframe import DataFrame as RemoteFrame
    from pyspark.sql.connect.plan import SQL

    frame: DataFrame = RemoteFrame(SQL(statement), spark)  # type: ignore[arg-type]
    return frame


def release(spark: Any) -> None:
    """End the session on the server (quietly: the process is exiting)."""
    with contextlib.suppress(Exception):
        spark.stop()


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text


def is_query_error(e: BaseException) -> bool:
    """An error of the statement (Spark's), not of the connection to a server."""
    from pyspark.errors import PySparkException

    return isinstance(e, PySparkException) and not type(e).__name__.startswith("SparkConnectGrpc")


def server_failure(e: BaseException) -> str | None:
    """When the command ran on a server and `e` is the server failing (not a query error:
    the connection, the server's process), a message naming the server and its log."""
    server = _active
    if server is None:
        return None
    try:
        from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    except ImportError:
        return None
    if not isinstance(e, SparkConnectGrpcException):
        return None
    text = str(e)
    gone = ("UNAVAILABLE", "Connection refused", "Socket closed", "failed to connect")
    if not any(g in text for g in gone):
        return None
    return f"{server.where()} failed during the command: {first_line(text)}"
