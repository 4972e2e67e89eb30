"""logberg's own log lines on stderr, for people (text) or collectors (json), with every
secret value of the Kafka client options this process parsed masked (`SecretMask`)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys

from logberg.lakehouse import kafka_options

log = logging.getLogger("logberg")
# PySpark logs every error it converts that carries a query context, as JSON with a stack
# trace, when the exception is made: also errors a job expects and handles. An error that
# ends a command is logberg's own one line; these show with --log-level DEBUG.
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


class SecretMask(logging.Filter):
    """Masks the known secrets (`kafka_options.known_secrets`: SASL passwords, the JAAS
    configuration) in a record's message and traceback, whichever logger made it: the
    options' own displays already hide them; this catches a client library or an error
    that quotes one."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not kafka_options.known_secrets():
            return True
        record.msg = kafka_options.mask(record.getMessage())
        record.args = None
        if record.exc_info:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text = kafka_options.mask(text)
            record.exc_info = None
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.timezone.utc).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc"] = record.exc_text
        return json.dumps(out)


def configure_logging(fmt: str, level: str) -> None:
    """logberg's own loggers to stderr, as human lines or JSON (Spark keeps its log4j)."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(SecretMask())
    log.handlers[:] = [handler]
    log.setLevel(level.upper())
    log.propagate = False


def quiet_query_context_logs() -> None:
    """Silence PySpark's query-context error logs unless logberg logs at DEBUG. Called where
    a command starts Spark (importing PySpark costs 0.3 s: not for every command)."""
    from pyspark.logger import PySparkLogger

    show = log.isEnabledFor(logging.DEBUG)
    for name in QUERY_CONTEXT_LOGGERS:
        PySparkLogger.getLogger(name).disabled = not show
