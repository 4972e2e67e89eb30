"""logberg's own log lines on stderr, for people (text) or collectors (json)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys

log = logging.getLogger("logberg")


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
        return json.dumps(out)


def configure_logging(fmt: str, level: str) -> None:
    """logberg's own loggers to stderr, as human lines or JSON (Spark keeps its log4j)."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level.upper())
    log.propagate = False
