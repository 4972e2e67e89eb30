"""Kafka figures (issue #56), all whole processes, on this home's own KRaft broker:

* the generator as a producer: the 5M dataset's lines (the same seed and files) to a topic
  of 4 partitions, lines per second;
* `logberg ingest --from kafka://... --once` of those 5M messages into an empty warehouse,
  against Kafka's own ConsumerPerformance reading the same topic (the limit: bytes off the
  broker, no parse) and against the file ingest of the same lines in the same run (the cold
  section's, in-process as this one is); messages per second per core beside the reference
  design's ~25,000; the broker's share of the CPU; the batches' steps; the peak memory of
  the ingest's process tree; the counts checked against the generator's manifest;
* one partition (issue #82): the same lines on a topic of 1 partition, ingested with the
  read split off (`--min-partitions 1`: one task, one core) and on (the default: the
  partition's range read in pieces, a task each, on every core); the split's speedup, and
  the one-partition topic against the 4-partition one, on the batch's read_parse_write step
  (the whole process's JVM and session start are the same in both; its wall is reported);
* latency: with a continuous `ingest --from` (1 s trigger) and a producer sending at a
  steady rate, how long from a probe line's send until its row is in access_logs, p50/p99.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench import measure
from bench.config import DATA, GZIP
from bench.datasets import Dataset
from bench.lakehouse import LOGBERG, REPO, Lakehouse
from bench.shared import CorrectnessError, log, median, ratio

TOPIC = "bench-5m"
PARTITIONS = 4
ONE_TOPIC = "bench-5m-p1"  # the same lines, one partition
SPLIT_BAR = 1.6  # issue #82: one partition, split, on 2 cores vs its single-core rate
# The single-core rate: the whole ingest process (driver, task, GC and JIT threads) on one
# CPU (Linux's taskset; the broker is not in it). Its one task on 2 cores is beside it.
ONE_CORE = ("taskset", "-c", "0")
REFERENCE_PER_CORE = 25_000  # the reference streaming design: ~400,000 msg/s on 16 cores
LATENCY_TOPIC = "bench-latency"
LATENCY_RATE = 2_000  # messages per second, steady, while the probes are timed
LATENCY_PROBES = 40
STEPS_RE = re.compile(r"^kafka batch .* steps=(\S+)$", re.M)
PROBE = '10.9.9.9 - - [{ts} +0000] "GET /probe/{n} HTTP/1.1" 200 1 "-" "bench-probe"'


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (and its waited-for children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    return ticks / os.sysconf("SC_CLK_TCK")


def _steps(stdout: str) -> dict[str, float]:
    total: dict[str, float] = {}
    for m in STEPS_RE.finditer(stdout):
        for item in m.group(1).split(","):
            name, _, sec = item.partition(":")
            total[name] = round(total.get(name, 0.0) + float(sec), 2)
    return total


def produce(
    lh: Lakehouse, ds: Dataset, bootstrap: str, topic: str = TOPIC, partitions: int = PARTITIONS
) -> dict[str, Any]:
    """The dataset's lines to `topic` (the same generator arguments: the same lines)."""
    s = ds.spec
    manifests = DATA / "kafka-manifests"
    r = measure.run(
        [sys.executable, "-m", "generator", "--output", f"kafka://{bootstrap}/{topic}",
         "--manifest-to", manifests.as_uri(), "--partitions", str(partitions),
         "--num-files", str(s.num_files), "--lines-per-file", str(s.lines_per_file),
         "--start-date", s.start_date, "--end-date", s.end_date, "--seed", str(s.seed),
         "--malformed-rate", str(s.malformed_rate), "--format", s.fmt, "--quiet",
         "--gzip" if GZIP else "--no-gzip"],  # gzip is one of the arguments that pick the lines
        env=lh.env, cwd=REPO,
    ).check("the generator to Kafka")  # fmt: skip
    rate = round(ds.lines / r.wall_s, 1)
    log(f"kafka: generator -> {topic}: {ds.lines:,} lines in {r.wall_s:.1f}s ({rate:,.0f}/s)")
    return {"wall_s": round(r.wall_s, 2), "lines_per_s": rate}


def consumer_perf(lh: Lakehouse, bootstrap: str, messages: int) -> float:
    """Kafka's ConsumerPerformance reading the whole topic: whole process, seconds."""
    from logberg_platform import setup_artifacts
    from logberg_platform.local_settings import java_home

    cp = ":".join(map(str, setup_artifacts.kafka_broker_classpath(lh.settings.tools)))
    r = measure.run(
        [str(java_home() / "bin" / "java"), "-Xmx512m", "-cp", cp,
         "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap,
         "--topic", TOPIC, "--messages", str(messages), "--timeout", "60000"],
        env=lh.env, cwd=REPO,
    ).check("ConsumerPerformance")  # fmt: skip
    return r.wall_s


def ingest_once(
    lh: Lakehouse,
    bootstrap: str,
    ds: Dataset,
    broker_pid: int,
    topic: str = TOPIC,
    *extra: str,
    launcher: tuple[str, ...] = (),
) -> dict[str, Any]:
    """`logberg ingest --from ... --once` (and `extra`) into an empty warehouse, started by
    `launcher` (`ONE_CORE`); checked and measured."""
    lh.reset()
    checkpoint = DATA / "kafka-checkpoint"
    subprocess.run(["rm", "-rf", str(checkpoint)], check=True)
    cpu0 = _cpu_s(broker_pid)
    r = lh.logberg(
        "ingest", "--from", f"kafka://{bootstrap}/{topic}", "--once", "--analytics-every", "0",
        "--checkpoint", checkpoint.as_uri(), *extra, launcher=launcher,
    ).check("logberg ingest --from kafka --once")  # fmt: skip
    broker_cpu = _cpu_s(broker_pid) - cpu0
    got = lh.table_counts()
    if got != {"access_logs": ds.valid, "rejects": ds.malformed}:
        raise CorrectnessError(
            f"kafka ingest: {got}, the manifest says {ds.valid} + {ds.malformed}"
        )
    return {
        "wall_s": round(r.wall_s, 2),
        "peak_rss_mb": r.peak_tree_rss_mb,
        "broker_cpu_s": round(broker_cpu, 1),
        "steps": _steps(r.stdout),
        "batches": len(STEPS_RE.findall(r.stdout)),
    }


def one_partition(
    lh: Lakehouse, bootstrap: str, ds: Dataset, broker_pid: int, four: dict[str, Any]
) -> dict[str, Any]:
    """The lines on ONE_TOPIC, ingested on one core (ONE_CORE, one task), in one task on
    every core, and split over every core; the figures (`split_figures`) beside `four`, the
    4-partition topic's ingest."""
    made = produce(lh, ds, bootstrap, ONE_TOPIC, 1)
    one_task = ("--min-partitions", "1")
    one_core = ingest_once(lh, bootstrap, ds, broker_pid, ONE_TOPIC, *one_task, launcher=ONE_CORE)
    single = ingest_once(lh, bootstrap, ds, broker_pid, ONE_TOPIC, *one_task)
    split = ingest_once(lh, bootstrap, ds, broker_pid, ONE_TOPIC)
    out = {"producer": made, "one_core": one_core, "single": single, "split": split}
    out.update(split_figures(ds.lines, one_core, single, split, four))
    log(
        f"kafka: one partition, {ds.lines:,} lines: read_parse_write {_rpw(one_core)}s on one "
        f"core, {_rpw(single)}s in one task, {_rpw(split)}s split "
        f"(x{out['kafka_one_partition_split_speedup']} the one core's; bar {SPLIT_BAR}); "
        f"4 partitions {_rpw(four)}s"
    )
    return out


def _rpw(run: dict[str, Any]) -> float | None:
    """A run's read_parse_write step, summed over its batches (None: not printed)."""
    v = run.get("steps", {}).get("read_parse_write")
    return float(v) if v else None


def split_figures(
    messages: int,
    one_core: dict[str, Any],
    single: dict[str, Any],
    split: dict[str, Any],
    four: dict[str, Any],
) -> dict[str, Any]:
    """The one-partition figures of four `ingest_once` runs of the same `messages`: a
    one-partition topic read on one core (its single-core rate), in one task on every core,
    and split over every core, and a 4-partition topic. Rates and ratios on the
    read_parse_write step (the batch's read, parse and write); the whole processes' walls
    beside them."""
    core_s, one, split_s, four_s = _rpw(one_core), _rpw(single), _rpw(split), _rpw(four)

    def rate(s: float | None) -> float | None:
        return round(messages / s, 1) if s else None

    speedup = ratio(core_s, split_s)
    return {
        "kafka_one_partition_msgs_per_s_one_core": rate(core_s),
        "kafka_one_partition_msgs_per_s_single": rate(one),
        "kafka_one_partition_msgs_per_s_split": rate(split_s),
        "kafka_one_partition_split_speedup": speedup,
        "kafka_one_partition_split_speedup_met": None if speedup is None else speedup >= SPLIT_BAR,
        "kafka_one_partition_split_speedup_wall": ratio(one_core["wall_s"], split["wall_s"]),
        "kafka_one_partition_split_vs_one_task": ratio(one, split_s),
        "kafka_one_vs_four_partitions": ratio(four_s, split_s),
        "kafka_one_vs_four_partitions_wall": ratio(four["wall_s"], split["wall_s"]),
    }


def latency(lh: Lakehouse, bootstrap: str) -> dict[str, Any]:
    """Probe lines sent among a steady stream of others; send -> visible, in seconds."""
    from confluent_kafka import Producer

    from logberg.lakehouse.kafka import TopicUri, create_topic

    create_topic(TopicUri(bootstrap, LATENCY_TOPIC, "bench"), PARTITIONS)
    checkpoint = DATA / "kafka-latency-checkpoint"  # the broker's storage is new each run
    subprocess.run(["rm", "-rf", str(checkpoint)], check=True)
    stream_log = DATA / "kafka-latency-stream.log"
    started = time.monotonic()
    stream = subprocess.Popen(
        [LOGBERG, "ingest", "--from", f"kafka://{bootstrap}/{LATENCY_TOPIC}",
         "--trigger-seconds", "1", "--analytics-every", "0",
         "--checkpoint", checkpoint.as_uri()],
        env={**lh.env, "LOGBERG_SPARK_MODE": "in-process"}, cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=stream_log.open("wb"),
    )  # fmt: skip
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    stop = threading.Event()
    sent: dict[int, float] = {}
    seen: dict[int, float] = {}

    def steady() -> None:
        n = 0
        while not stop.is_set():
            ts = time.strftime("%d/%b/%Y:%H:%M:%S", time.gmtime())
            for _ in range(LATENCY_RATE // 10):
                producer.produce(LATENCY_TOPIC, PROBE.format(ts=ts, n=f"bg{n}").encode())
                n += 1
            producer.poll(0)
            stop.wait(0.1)

    def first_batch_in() -> bool:
        if stream.poll() is not None:
            raise RuntimeError(
                f"kafka latency: the stream exited {stream.returncode}: {stream_log}"
            )
        return lh.spark.catalog.tableExists("nginx_logs.kafka_offsets") and bool(
            lh.spark.sql(
                f"SELECT 1 FROM nginx_logs.kafka_offsets WHERE topic = '{LATENCY_TOPIC}' LIMIT 1"
            ).collect()
        )

    try:
        threading.Thread(target=steady, daemon=True).start()
        # Steady state: the probes start once the stream has stored a batch (its start,
        # the JVM's and the first plans', is reported apart: first_batch_s).
        wait_until(lh, first_batch_in, 300)
        first_batch_s = time.monotonic() - started
        for n in range(LATENCY_PROBES):
            ts = time.strftime("%d/%b/%Y:%H:%M:%S", time.gmtime())
            producer.produce(LATENCY_TOPIC, PROBE.format(ts=ts, n=n).encode())
            producer.flush(10)
            sent[n] = time.monotonic()
            deadline = time.monotonic() + 60
            while n not in seen and time.monotonic() < deadline:
                for row in lh.spark.sql(
                    "SELECT url_path FROM nginx_logs.access_logs "
                    "WHERE url_path LIKE '/probe/%' AND url_path NOT LIKE '/probe/bg%'"
                ).collect():
                    k = int(row.url_path.rsplit("/", 1)[1])
                    seen.setdefault(k, time.monotonic())
                time.sleep(0.2)
    finally:
        stop.set()
        measure.kill_tree(stream.pid)
        stream.wait()
    waits = sorted(seen[n] - sent[n] for n in sent if n in seen)
    if len(waits) < len(sent):
        raise RuntimeError(f"kafka latency: {len(sent) - len(waits)} probe(s) never visible")
    p99 = waits[min(len(waits) - 1, round(0.99 * (len(waits) - 1)))]
    return {
        "probes": len(waits),
        "rate_msgs_per_s": LATENCY_RATE,
        "p50_s": round(median(waits) or 0, 2),
        "p99_s": round(p99, 2),
        "first_batch_s": round(first_batch_s, 1),
    }


def wait_until(lh: Lakehouse, check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("kafka latency: the stream stored no batch")
        time.sleep(1)


def bench_kafka(lh: Lakehouse, ds: Dataset, file_ingest_wall_s: float | None) -> dict[str, Any]:
    from logberg_platform import kafka_broker
    from logberg_platform.supervisor import free_port

    os.environ[kafka_broker.PORT_ENV] = lh.env[kafka_broker.PORT_ENV] = str(free_port())
    subprocess.run(["rm", "-rf", str(kafka_broker.kafka_dir(lh.settings))], check=True)
    bootstrap = kafka_broker.start(lh.settings).bootstrap
    pid = kafka_broker.service(lh.settings).pid()
    assert pid is not None
    if file_ingest_wall_s is None:  # the cold section skipped: the bar's file ingest here
        lh.reset()
        file_ingest_wall_s = lh.ingest(ds.uri)[0].wall_s
        log(f"kafka: the file ingest of the same lines: {file_ingest_wall_s:.1f}s")
    try:
        made = produce(lh, ds, bootstrap)
        cp_s = consumer_perf(lh, bootstrap, ds.lines)
        run = ingest_once(lh, bootstrap, ds, pid)
        one = one_partition(lh, bootstrap, ds, pid, run)
        lat = latency(lh, bootstrap)
    finally:
        kafka_broker.stop(lh.settings)
    cores = os.cpu_count() or 1
    per_core = round(ds.lines / run["wall_s"] / cores, 1)
    out = {
        "messages": ds.lines,
        "partitions": PARTITIONS,
        "producer": made,
        "consumer_perf_wall_s": round(cp_s, 2),
        "ingest": run,
        "one_partition": one,
        "latency": lat,
        "kafka_ingest_vs_consumer_perf": ratio(cp_s, run["wall_s"]),
        "file_ingest_wall_s": round(file_ingest_wall_s, 2),
        "kafka_ingest_vs_file_ingest": ratio(file_ingest_wall_s, run["wall_s"]),
        "kafka_latency_p50_s": lat["p50_s"],
        "kafka_latency_p99_s": lat["p99_s"],
        "kafka_msgs_per_s_per_core": per_core,
        "kafka_msgs_per_s_per_core_vs_reference": round(per_core / REFERENCE_PER_CORE, 3),
        "kafka_broker_cpu_share": round(run["broker_cpu_s"] / (run["wall_s"] * cores), 3),
        "kafka_peak_rss_mb": run["peak_rss_mb"],
        "kafka_generator_lines_per_s": made["lines_per_s"],
        **{k: v for k, v in one.items() if k.startswith("kafka_")},
    }
    log(f"kafka: {json.dumps({k: v for k, v in out.items() if k.startswith('kafka_')})}")
    return out
