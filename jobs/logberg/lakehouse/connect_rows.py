"""One SQL statement's rows from a Spark Connect server, with nothing but gRPC and Arrow.

`logberg query` on a warm server spends little time on the server; most of a whole
process went on importing PySpark's full Connect client, which loads pandas (and
numpy's pandas half) before it sends anything. This client sends the statement as
the plan Spark Connect's protocol defines (`ExecutePlan` of a `SQL` relation, in a
session of its own, released at the end), reads the Arrow batches the server streams,
and turns them into rows with PySpark's own Arrow-to-rows conversion: the rows are the
ones `DataFrame.collect()` gives (timestamps as local naive datetimes, structs as `Row`s,
maps as dicts).

Errors are the ones `remote_session` raises: a refused token names where it came from,
a server that does not answer (or stops answering) names the server and its log, and a
statement Spark rejects is a `QueryError` with Spark's own message.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import time
import uuid
from typing import TYPE_CHECKING, Any

from logberg.errors import ConfigError, QueryError, ServiceError
from logberg.lakehouse.connect import ConnectServer, first_line

if TYPE_CHECKING:
    import grpc

CLIENT_TYPE = "logberg-query"


def channel(server: ConnectServer) -> grpc.Channel:
    """The channel PySpark's client opens for an `sc://localhost` URL: local channel
    credentials (loopback, no TLS), the token as a bearer token on every call."""
    import grpc

    if server.host != "localhost":
        raise ConfigError(
            f"{server.url}: this client only talks to a server on localhost (local channel "
            "credentials); reach a remote one through a port-forward"
        )
    creds = grpc.local_channel_credentials()
    if server.token:
        creds = grpc.composite_channel_credentials(
            creds, grpc.access_token_call_credentials(server.token)
        )
    return grpc.secure_channel(f"{server.host}:{server.port}", creds)


def user_id() -> str:
    """Who the session is for (PySpark's default: SPARK_USER, else the login name)."""
    return os.environ.get("SPARK_USER") or os.environ.get("USER") or getpass.getuser()


def fetch(server: ConnectServer, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(column names, rows) of one statement, run on the server in a fresh session."""
    import pyspark.sql.connect.proto as pb

    session_id = str(uuid.uuid4())
    user = pb.UserContext(user_id=user_id())
    request = pb.ExecutePlanRequest(
        session_id=session_id,
        user_context=user,
        client_type=CLIENT_TYPE,
        operation_id=str(uuid.uuid4()),
        plan=pb.Plan(root=pb.Relation(sql=pb.SQL(query=statement))),
    )
    with channel(server) as ch:
        stub = pb.SparkConnectServiceStub(ch)
        try:
            batches, names = _execute(server, stub, request)
        finally:
            release(stub, session_id, user)
    return _rows(batches, names)


def _execute(
    server: ConnectServer, stub: Any, request: Any
) -> tuple[list[bytes], list[str] | None]:
    """The Arrow IPC streams and the column names of the schema the server sends.

    A server that is not there yet (UNAVAILABLE before any answer: nothing reached it) is
    tried `server.retries` more times, 50 ms, 200 ms, 800 ms... apart, as the full
    client's retry policy does; any other failure is final."""
    import grpc

    attempt = 0
    while True:
        batches: list[bytes] = []
        names: list[str] | None = None
        answered = False
        try:
            for response in stub.ExecutePlan(request):
                answered = True
                kind = response.WhichOneof("response_type")
                if kind == "arrow_batch":
                    batches.append(response.arrow_batch.data)
                if response.HasField("schema") and response.schema.HasField("struct"):
                    names = [f.name for f in response.schema.struct.fields]
            return batches, names
        except grpc.RpcError as e:
            code = e.code()
            if code is grpc.StatusCode.UNAUTHENTICATED:
                raise ConfigError(
                    f"{server.token_source}: {server.described} at {server.url} refused the token"
                ) from None
            if code is grpc.StatusCode.UNAVAILABLE:
                if not answered and attempt < server.retries:
                    time.sleep(min(0.05 * 4**attempt, 5.0))
                    attempt += 1
                    continue
                what = "failed during the command" if answered else "does not answer"
                detail = first_line(e.details() or "")
                raise ServiceError(f"{server.where()} {what}: {detail}") from None
            raise QueryError(first_line(e.details() or str(code))) from None


def release(stub: Any, session_id: str, user: Any) -> None:
    """End the session on the server; a server that is gone has nothing to release."""
    import grpc
    import pyspark.sql.connect.proto as pb

    with contextlib.suppress(grpc.RpcError):
        stub.ReleaseSession(
            pb.ReleaseSessionRequest(
                session_id=session_id, user_context=user, client_type=CLIENT_TYPE
            ),
            timeout=10,
        )


def _rows(batches: list[bytes], names: list[str] | None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Arrow IPC streams -> the rows `collect()` gives, through PySpark's conversion."""
    if not batches:
        return names or [], []
    import pyarrow as pa
    from pyspark.sql.conversion import ArrowTableToRowsConversion
    from pyspark.sql.pandas.types import from_arrow_schema

    tables = [pa.ipc.open_stream(b).read_all() for b in batches]
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    columns = names if names is not None else list(table.column_names)
    # Spark may send duplicate column names (`SELECT a.x, b.x`); the conversion wants them
    # unique, the output keeps Spark's.
    table = table.rename_columns([f"_{i}" for i in range(table.num_columns)])
    schema = from_arrow_schema(table.schema, prefer_timestamp_ntz=True)
    rows = ArrowTableToRowsConversion.convert(table, schema, return_as_tuples=True)
    return columns, [tuple(r) for r in rows]
