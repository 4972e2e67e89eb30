"""`logberg sql` on a Spark Connect server: spark-sql's `-e`, `-f`, `--database` and its
interactive prompt, over a Connect session (spark-sql itself only runs in-process).

Output as spark-sql prints it: each row's values separated by tabs, NULL for null, no
header; errors on stderr. With `-e`/`-f` the first failing statement ends the run (exit 1),
as in spark-sql; at the prompt an error is printed and the prompt returns.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from logberg.errors import ConfigError
from logberg.lakehouse.connect import is_query_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

OPTIONS = "-e, -f, --database and -S"


def parse_args(args: Sequence[str]) -> argparse.Namespace:
    """spark-sql's options this shell takes; any other is an error naming the mode."""
    p = argparse.ArgumentParser(prog="logberg sql", add_help=True)
    p.add_argument("-e", dest="execute")
    p.add_argument("-f", dest="file")
    p.add_argument("--database")
    p.add_argument("-S", "--silent", action="store_true")
    a, unknown = p.parse_known_args(list(args))
    if unknown:
        raise ConfigError(
            f"logberg sql {' '.join(unknown)}: on the Spark Connect server `logberg sql` takes "
            f"{OPTIONS}; for spark-sql's other options set LOGBERG_SPARK_MODE=in-process"
        )
    if a.execute is not None and a.file is not None:
        raise ConfigError("logberg sql: -e and -f cannot go together")
    return a


def statements(text: str) -> Iterator[str]:
    """The statements of a script: split at `;` outside quotes, backticks and comments."""
    current: list[str] = []
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            current.append(c)
            if c == "\\" and quote != "`" and i + 1 < n:
                current.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
            current.append(c)
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        elif c == ";":
            stmt = "".join(current).strip()
            if stmt:
                yield stmt
            current = []
        else:
            current.append(c)
        i += 1
    stmt = "".join(current).strip()
    if stmt:
        yield stmt


def cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, decimal.Decimal | dt.date):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dict | list | tuple):
        from logberg.output import plain

        return json.dumps(
            plain(list(value) if isinstance(value, tuple) else value), separators=(",", ":")
        )
    return str(value)


def execute(spark: SparkSession, statement: str, out: TextIO) -> None:
    for row in spark.sql(statement).collect():
        out.write("\t".join(cell(v) for v in row) + "\n")
    out.flush()


def run(spark: SparkSession, args: Sequence[str]) -> int:
    a = parse_args(args)
    # The client logs every failed statement with its server stack trace; this shell
    # prints the error itself, once.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    if a.database:
        spark.sql(f"USE `{a.database.replace('`', '``')}`")
    if a.execute is None and a.file is None:
        return prompt(spark)
    if a.file is not None:
        try:
            with open(a.file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ConfigError(f"logberg sql -f {a.file}: {e.strerror}") from None
    else:
        text = a.execute
    for statement in statements(text):
        if not run_one(spark, statement):
            return 1
    return 0


def run_one(spark: SparkSession, statement: str) -> bool:
    """Run a statement and print its rows; a statement's error is printed (False), a
    connection's raised."""
    try:
        execute(spark, statement, sys.stdout)
        return True
    except Exception as e:
        if not is_query_error(e):
            raise
        print(f"Error in query: {message(e)}", file=sys.stderr)
        return False


def message(e: Exception) -> str:
    """The error without the server's JVM stack trace."""
    return str(e).split("\n\nJVM stacktrace:", 1)[0].strip()


def prompt(spark: SparkSession) -> int:
    """Read statements until EOF; each ends at a `;`."""
    import contextlib
    import importlib

    with contextlib.suppress(ImportError):
        importlib.import_module("readline")  # line editing and history for input()
    buffer = ""
    while True:
        try:
            line = input("spark-sql (connect)> " if not buffer.strip() else "         > ")
        except EOFError:
            print()
            return 0
        buffer += line + "\n"
        if ";" not in line:
            continue
        head, _, tail = buffer.rpartition(";")
        for statement in statements(head):
            run_one(spark, statement)
        buffer = tail
