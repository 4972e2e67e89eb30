"""logberg's own metrics, `logberg_*`, pushed to a Prometheus Pushgateway at the end of a run.

A batch job often ends before any scrape, so its figures are pushed, not served: the
Pushgateway keeps the last push of each job (grouping key `job`, and `instance` when
LOGBERG_METRICS_INSTANCE is set) until the next one replaces it, and Prometheus scrapes
the Pushgateway (`honor_labels: true`). Every value is the last run's, as a gauge; the
`*_last_success_timestamp_seconds` gauges give alerts the time since the last good run.

LOGBERG_PUSHGATEWAY (http://host:port) turns pushing on. A value that is not an http(s) URL
is wrong configuration, named before Spark starts. A gateway that does not answer is an
outage, not wrong configuration: metrics are an observation and never decide whether data
lands. So a push that fails (refused, timed out after PUSH_TIMEOUT_S, an HTTP error) is a
warning on stderr that names the gateway and the error, said once per outage, not once per
batch; the job goes on and its exit code does not change. During an outage the pushes of
the next RETRY_AFTER_S are skipped (a hung gateway costs a stream one timeout per
RETRY_AFTER_S, not one per batch); the first push that gets through carries the current
values and `logberg_metrics_failed_pushes`, the group's pushes that failed or were skipped
since the process started, which shows the gap.
"""

from __future__ import annotations

import http.client
import logging
import os
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, urlparse

from logberg.errors import ConfigError
from logberg.lakehouse import sql
from logberg.lakehouse.connect import query
from logberg.lakehouse.schema import LEDGER, REJECTS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from logberg.pipeline.analytics import AnalyticsResult
    from logberg.pipeline.ingest.batch import IngestResult
    from logberg.pipeline.ingest.config import IngestConfig
    from logberg.pipeline.kafka.job import KafkaBatchResult

log = logging.getLogger(__name__)

GATEWAY_ENV = "LOGBERG_PUSHGATEWAY"
INSTANCE_ENV = "LOGBERG_METRICS_INSTANCE"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# A push waits this long for the gateway at most (connecting, and each read of its answer).
PUSH_TIMEOUT_S = 5.0
# After a failed push, the pushes of this many seconds are skipped, not tried.
RETRY_AFTER_S = 30.0


@dataclass(frozen=True)
class Metric:
    """One gauge: its name, help, and samples (labels, value)."""

    name: str
    help: str
    samples: tuple[tuple[Mapping[str, str], float], ...]


def gauge(name: str, help_text: str, *samples: tuple[Mapping[str, str], float]) -> Metric:
    return Metric(name, help_text, tuple(samples))


def _label_value(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(v: float) -> str:
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


def exposition(metrics: Iterable[Metric]) -> str:
    """The Prometheus text format (0.0.4) of `metrics`."""
    out = []
    for m in metrics:
        out.append(f"# HELP {m.name} {m.help}")
        out.append(f"# TYPE {m.name} gauge")
        for labels, value in m.samples:
            tags = ",".join(f'{k}="{_label_value(str(v))}"' for k, v in sorted(labels.items()))
            series = f"{m.name}{{{tags}}}" if tags else m.name
            out.append(f"{series} {_number(value)}")
    return "\n".join(out) + "\n"


def _maybe(value: float | None) -> tuple[tuple[Mapping[str, str], float], ...]:
    return (({}, value),) if value is not None else ()


def ingest_metrics(
    result: IngestResult,
    rejected_by_reason: Mapping[str, int],
    newest_file: float | None,
    now: float,
    waiting: Sequence[float] = (),
) -> list[Metric]:
    """One ingest run's figures. `newest_file`: the modification time (Unix) of the newest
    file ingested so far (the ledger's), None while there is none. `waiting`: the
    modification times of the files that have landed and wait for an ingest, listed when the
    run ended."""
    t = result.total
    return [
        gauge(
            "logberg_ingest_lines",
            "Lines the last ingest run read, by result (accepted into access_logs, or rejected).",
            ({"result": "accepted"}, t.accepted),
            ({"result": "rejected"}, t.rejected),
        ),
        gauge(
            "logberg_ingest_rejected_lines",
            "Lines the last ingest run rejected, by reason (access_logs_rejects.reason).",
            *(({"reason": r}, n) for r, n in sorted(rejected_by_reason.items())),
        ),
        gauge("logberg_ingest_files", "Files the last ingest run read.", ({}, t.files)),
        gauge("logberg_ingest_bytes", "Bytes the last ingest run read.", ({}, t.bytes)),
        gauge(
            "logberg_ingest_step_seconds",
            "Seconds each step of the last ingest run took.",
            *(({"step": s}, v) for s, v in t.seconds.items()),
        ),
        gauge(
            "logberg_ingest_duration_seconds",
            "Seconds the last ingest run took.",
            ({}, result.duration_s),
        ),
        gauge(
            "logberg_ingest_newest_file_timestamp_seconds",
            "Modification time of the newest file ingested so far (Unix time): how old the "
            "newest ingested data is.",
            *_maybe(newest_file),
        ),
        *pending_metrics(waiting),
        gauge(
            "logberg_ingest_last_success_timestamp_seconds",
            "When the last successful ingest run ended (Unix time).",
            ({}, now),
        ),
    ]


def pending_metrics(waiting: Sequence[float]) -> list[Metric]:
    """What waits for an ingest: `waiting`, the modification times of the files that have
    landed and wait (an ingest run's, listed as it ended, or `ingest --dry-run`'s)."""
    return [
        gauge(
            "logberg_ingest_pending_files",
            "Files under the inputs that wait for an ingest (new, or changed since their last "
            "ingest), listed when the last run (or ingest --dry-run) ended.",
            ({}, len(waiting)),
        ),
        gauge(
            "logberg_ingest_pending_oldest_file_timestamp_seconds",
            "Modification time of the oldest file waiting for an ingest (Unix time), absent "
            "when none waits: the ingest lag is time() minus this.",
            *_maybe(min(waiting, default=None)),
        ),
        gauge(
            "logberg_ingest_pending_newest_file_timestamp_seconds",
            "Modification time of the newest file waiting for an ingest (Unix time), absent "
            "when none waits.",
            *_maybe(max(waiting, default=None)),
        ),
    ]


def analytics_metrics(
    result: AnalyticsResult, rows: Mapping[str, tuple[int, int]], now: float
) -> list[Metric]:
    """One analytics run's figures; `rows`: per table, (rows its last commit wrote, rows it
    holds)."""
    return [
        gauge(
            "logberg_analytics_rows_written",
            "Rows the last analytics run's commit wrote, per table.",
            *(({"table": t}, w) for t, (w, _) in sorted(rows.items())),
        ),
        gauge(
            "logberg_analytics_table_rows",
            "Rows each gold table holds after the last analytics run.",
            *(({"table": t}, h) for t, (_, h) in sorted(rows.items())),
        ),
        gauge(
            "logberg_analytics_step_seconds",
            "Seconds each step of the last analytics run took (a table's name: its write).",
            *(({"step": k}, v) for k, v in result.steps.items()),
        ),
        gauge(
            "logberg_analytics_dates",
            "Dates (days) the last analytics run recomputed.",
            ({}, len(result.days)),
        ),
        gauge(
            "logberg_analytics_duration_seconds",
            "Seconds the last analytics run took.",
            ({}, result.duration_s),
        ),
        gauge(
            "logberg_analytics_last_success_timestamp_seconds",
            "When the last successful analytics run ended (Unix time).",
            ({}, now),
        ),
    ]


# ---- IO at the edges ----------------------------------------------------------------------


def gateway() -> str | None:
    """LOGBERG_PUSHGATEWAY, checked before the job starts: None when unset; a value that is
    not an http(s) URL is an error naming the setting. Whether the gateway answers is not
    checked here: an outage is the first push's warning, never a reason to stop."""
    url = os.environ.get(GATEWAY_ENV, "").strip().rstrip("/")
    if not url:
        return None
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"{GATEWAY_ENV}={url!r}: expected http://host:port")
    try:
        _ = parsed.port  # a port that is not a number raises
    except ValueError as e:
        raise ConfigError(f"{GATEWAY_ENV}={url!r}: expected http://host:port ({e})") from None
    return url


@dataclass
class _Outage:
    """A gateway's pushes failing, in this process: since when, and when to try again."""

    started: float  # time.monotonic()
    retry_at: float


# This process's view of each gateway (by URL) and of each group's failed pushes (by path).
_outages: dict[str, _Outage] = {}
_failed: Counter[str] = Counter()
Metrics = Iterable[Metric] | Callable[[], Iterable[Metric]]


def failed_pushes(job: str, group: Mapping[str, str] | None = None) -> int:
    """The group's pushes that failed or were skipped in this process."""
    return _failed[_group_path(job, group)]


def _group_path(job: str, group: Mapping[str, str] | None) -> str:
    where = f"/metrics/job/{quote(job, safe='')}"
    instance = os.environ.get(INSTANCE_ENV)
    if instance:
        where += f"/instance/{quote(instance, safe='')}"
    for k, v in (group or {}).items():
        where += f"/{quote(k, safe='')}/{quote(v, safe='')}"
    return where


def push(
    url: str,
    job: str,
    metrics: Metrics,
    whole_group: bool = True,
    group: Mapping[str, str] | None = None,
) -> bool:
    """Replace the group `job` (and LOGBERG_METRICS_INSTANCE, and `group`'s labels) on the
    gateway with `metrics` (`whole_group` False: only the gauges of these names, the rest of
    the group stays); `metrics` may be a function that makes them, called only when the
    push is tried. Best effort: True when the gateway took it; a failure is a warning (the
    first of an outage) and is counted, never raised."""
    path = _group_path(job, group)
    outage = _outages.get(url)
    if outage is not None and time.monotonic() < outage.retry_at:
        _failed[path] += 1
        log.debug("metrics: the push of %s to %s skipped: the gateway is out", job, url)
        return False
    made = list(metrics() if callable(metrics) else metrics)
    made.append(
        gauge(
            "logberg_metrics_failed_pushes",
            "Pushes of this group that failed or were skipped (the Pushgateway out) since "
            "the process that pushes it started: a gap in the other series.",
            ({}, _failed[path]),
        )
    )
    req = urllib.request.Request(
        url + path,
        data=exposition(made).encode(),
        method="PUT" if whole_group else "POST",
        headers={"Content-Type": CONTENT_TYPE},
    )
    try:
        with urllib.request.urlopen(req, timeout=PUSH_TIMEOUT_S) as r:
            r.read()
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        _failed[path] += 1
        now = time.monotonic()
        if outage is None:
            _outages[url] = _Outage(now, now + RETRY_AFTER_S)
            log.warning(
                "metrics: the Pushgateway at %s (%s) did not take the push of %s: %s. The job "
                "goes on; pushes are skipped for %.0f s at a time until one gets through "
                "(said once an outage)",
                url,
                GATEWAY_ENV,
                job,
                _reason(e),
                RETRY_AFTER_S,
            )
        else:
            outage.retry_at = now + RETRY_AFTER_S
            log.debug("metrics: the push of %s to %s failed again: %s", job, url, _reason(e))
        return False
    if outage is not None:
        del _outages[url]
        log.warning(
            "metrics: the Pushgateway at %s takes pushes again, after %.0f s (%s of %s failed "
            "or skipped in this process)",
            url,
            time.monotonic() - outage.started,
            _failed[path],
            job,
        )
    log.info("metrics: pushed %s to %s", job, url)
    return True


def _reason(e: BaseException) -> str:
    """An error's own words: a refusal, a timeout, or the gateway's HTTP status."""
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, urllib.error.URLError):
        return str(e.reason)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def rejected_by_reason(spark: SparkSession, run_id: str) -> dict[str, int]:
    rows = query(
        spark,
        f"SELECT reason, count(*) AS n FROM {REJECTS} WHERE run_id = {sql.literal(run_id)} "
        "GROUP BY reason",
    ).collect()
    return {str(r["reason"]): int(r["n"]) for r in rows}


def newest_file(spark: SparkSession) -> float | None:
    """The ledger's newest modification time (Unix), None while it lists no file."""
    row = query(
        spark, f"SELECT CAST(max(modification_time) AS DOUBLE) AS t FROM {LEDGER}"
    ).collect()[0]
    return None if row["t"] is None else float(row["t"])


def table_rows(spark: SparkSession, tables: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Per table: (rows its current snapshot added, rows it holds), from the snapshots'
    summaries (no scan of the data)."""
    parts = [
        f"SELECT '{t}' AS t, s.summary['added-records'] AS added, "
        f"s.summary['total-records'] AS total FROM {t}.snapshots s "
        f"JOIN {t}.refs r ON s.snapshot_id = r.snapshot_id WHERE r.name = 'main'"
        for t in tables
    ]
    if not parts:
        return {}
    out = {}
    for r in query(spark, " UNION ALL ".join(parts)).collect():
        out[str(r["t"]).rsplit(".", 1)[-1]] = (int(r["added"] or 0), int(r["total"] or 0))
    return out


def waiting_files(spark: SparkSession, cfg: IngestConfig) -> list[float]:
    """The modification times (Unix) of the files under the run's inputs that wait for an
    ingest now: a fresh listing against the ledger, so files that landed during the run
    count."""
    from logberg.pipeline.ingest.plan import pending

    return [f.modified.timestamp() for f in pending(spark, cfg.inputs, cfg.since).files]


def push_ingest(
    url: str | None, spark: SparkSession, result: IngestResult, cfg: IngestConfig
) -> None:
    """The run's figures, and what waits under its inputs (one more listing, only when
    pushing)."""
    if url is None:
        return

    def made() -> list[Metric]:
        reasons = rejected_by_reason(spark, result.run_id) if result.total.rejected else {}
        return ingest_metrics(
            result, reasons, newest_file(spark), time.time(), waiting_files(spark, cfg)
        )

    push(url, "logberg_ingest", made)


def push_pending(url: str | None, waiting: Sequence[float]) -> None:
    """`ingest --dry-run`'s listing: the pending gauges of the ingest's group, the rest of
    the last run's figures kept."""
    if url is not None:
        push(url, "logberg_ingest", pending_metrics(waiting), whole_group=False)


def kafka_lag_metrics(behind: Mapping[int, int]) -> list[Metric]:
    """How far the lakehouse is behind a topic: per partition, the messages after the last
    committed batch's (the stream's, or `ingest --from ... --dry-run`'s listing)."""
    return [
        gauge(
            "logberg_kafka_consumer_lag",
            "Messages of the topic's partition not yet in the lakehouse (the partition's end "
            "offset minus the last committed batch's end).",
            *(({"partition": str(p)}, n) for p, n in sorted(behind.items())),
        ),
        gauge(
            "logberg_kafka_lag_timestamp_seconds",
            "When the consumer lag was measured (Unix time).",
            ({}, time.time()),
        ),
    ]


def kafka_metrics(result: KafkaBatchResult, now: float) -> list[Metric]:
    """One Kafka micro-batch's figures, and the lag after it."""
    return [
        gauge(
            "logberg_kafka_batch_messages",
            "Messages of the last micro-batch, by result (accepted: stored now; duplicate: "
            "its source identity was stored already; rejected: in access_logs_rejects).",
            ({"result": "accepted"}, result.accepted),
            ({"result": "duplicate"}, result.duplicates),
            ({"result": "rejected"}, result.rejected),
        ),
        gauge("logberg_kafka_batch_bytes", "Bytes of the last micro-batch.", ({}, result.bytes)),
        gauge(
            "logberg_kafka_batch_step_seconds",
            "Seconds each step of the last micro-batch took.",
            *(({"step": s}, v) for s, v in result.seconds.items()),
        ),
        gauge(
            "logberg_kafka_committed_offset",
            "Per partition, the offset the next micro-batch starts at (the lakehouse's end).",
            *(({"partition": str(p)}, u) for p, (_, u) in sorted(result.offsets.items())),
        ),
        *(kafka_lag_metrics(result.lag) if result.lag else ()),
        gauge(
            "logberg_kafka_last_batch_timestamp_seconds",
            "When the last micro-batch committed (Unix time).",
            ({}, now),
        ),
    ]


def push_kafka(url: str | None, topic: str, result: KafkaBatchResult) -> None:
    """A micro-batch's figures, in a group of the topic's own. A batch whose lag could not
    be measured (the broker away for a moment) keeps the last measured lag and its time in
    the group: replacing the whole group would drop the lag series the alert reads."""
    if url is not None:
        push(
            url,
            "logberg_kafka_ingest",
            kafka_metrics(result, time.time()),
            whole_group=bool(result.lag),
            group={"topic": topic},
        )


def push_kafka_lag(url: str | None, topic: str, behind: Mapping[int, int]) -> None:
    """`ingest --from ... --dry-run`'s lag: the lag gauges of the topic's group, the rest
    of the last batch's figures kept."""
    if url is not None:
        push(
            url,
            "logberg_kafka_ingest",
            kafka_lag_metrics(behind),
            whole_group=False,
            group={"topic": topic},
        )


def push_analytics(url: str | None, spark: SparkSession, result: AnalyticsResult) -> None:
    """The run's figures; rows for each table it wrote."""
    if url is None:
        return
    from logberg.lakehouse.schema import DATABASE

    def made() -> list[Metric]:
        rows = table_rows(spark, [f"{DATABASE}.{t}" for t in result.tables])
        return analytics_metrics(result, rows, time.time())

    push(url, "logberg_analytics", made)
