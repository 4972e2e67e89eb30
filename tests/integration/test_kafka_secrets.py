"""A SASL password in the Kafka client options, planted, against this home's real broker and
real processes: `logberg ingest --from kafka://... --once` lands every line with the
options from LOGBERG_KAFKA_OPTIONS_FILE, `--dry-run` and failing runs take them from
`--kafka-option @FILE`, and no stdout, stderr, log file or Spark event log of the home holds
the password. The broker listens in PLAINTEXT: with `security.protocol=PLAINTEXT` the Java
consumer keeps the JAAS line unused and librdkafka its `sasl.password`, so the runs succeed
while both clients, Spark and logberg have the secret in hand.

Also the generator's manifest of a topic, without --manifest-to: under the home.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard
from pyspark.sql import SparkSession

from logberg_platform.local_settings import LocalSettings
from tests.conftest import REPO, run_logberg

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]

SECRET = f"PLANTED-{secrets.token_hex(12)}"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="logberg" password="{SECRET}";'
)
OPTIONS = {
    "security.protocol": "PLAINTEXT",
    "sasl.jaas.config": JAAS,  # the JVM's (Spark's Kafka source, KafkaLines)
    "sasl.password": SECRET,  # librdkafka's (logberg's own calls), unknown to the JVM
}
LINES = ("--num-files", "2", "--lines-per-file", "400", "--start-date", "2025-05-01",
         "--end-date", "2025-05-02", "--malformed-rate", "0.01")  # fmt: skip


def generate(broker: str, topic: str, seed: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator", "--output", f"kafka://{broker}/{topic}",
         "--seed", str(seed), *LINES, *extra],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_a_topics_manifest_goes_under_the_home_without_manifest_to(
    broker: str, lakehouse: LocalSettings
) -> None:
    r = generate(broker, "secrets-manifest", 83)
    assert r.returncode == 0, r.stderr
    [manifest_file] = (lakehouse.home / "kafka-manifests" / "secrets-manifest").glob(
        "raw/nginx/_manifests/*.json"
    )
    manifest = json.loads(manifest_file.read_text())
    assert manifest["seed"] == 83 and manifest["totals"]["lines"] == 800
    assert manifest["manifest"]["uri"] == manifest_file.as_uri()
    # The summary line says where it went.
    assert r.stdout.rstrip().endswith(f"manifest {manifest_file.as_uri()}"), r.stdout


def readable(path: Path) -> str:
    """A file's text as a person or a grep would see it; a zstd event log decompressed."""
    data = path.read_bytes()
    if path.name.endswith(".zstd"):
        data = zstandard.ZstdDecompressor().stream_reader(data).read()
    return data.decode("utf-8", "replace")


def event_logs(home: Path) -> dict[Path, str]:
    return {p: readable(p) for p in (home / "spark-events").rglob("*") if p.is_file()}


def leaks(home: Path, outputs: dict[str, str]) -> list[str]:
    """Every output, log file and event log of the home that holds the planted secret."""
    found = [name for name, text in outputs.items() if SECRET in text]
    for folder in ("logs", "spark-events", "run"):
        for p in (home / folder).rglob("*"):
            if p.is_file() and SECRET in readable(p):
                found.append(str(p))
    return found


@pytest.fixture(scope="module")
def options_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kafka-options") / "options.json"
    path.write_text(json.dumps(OPTIONS))
    return path


def test_no_output_log_or_event_log_holds_a_planted_sasl_password(
    spark: SparkSession,
    broker: str,
    lakehouse: LocalSettings,
    options_file: Path,
    tmp_path: Path,
) -> None:
    topic = "secrets-ingest"
    source = f"kafka://{broker}/{topic}"
    from_file = {"LOGBERG_KAFKA_OPTIONS_FILE": str(options_file)}
    before = set(event_logs(lakehouse.home))
    outputs: dict[str, str] = {}

    def run(name: str, args: list[str], env: dict[str, str] | None = None) -> Any:
        # logberg's own lines at DEBUG (a pass-through command, `generate`, takes none).
        r = run_logberg(args if args[0] == "generate" else ["--log-level", "DEBUG", *args], env)
        outputs[f"{name}: stdout"], outputs[f"{name}: stderr"] = r.stdout, r.stderr
        return r

    # The generator's producer takes the same options (`logberg generate`).
    made = run(
        "generate",
        ["generate", "--output", source, "--seed", "84", *LINES, "--manifest-to",
         tmp_path.as_uri()],
        from_file,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    [manifest_file] = tmp_path.glob("raw/nginx/_manifests/*.json")
    manifest = json.loads(manifest_file.read_text())

    # The options from the file the chart mounts from a Secret.
    ingest = run(
        "ingest --once",
        ["ingest", "--from", source, "--once", "--checkpoint", (tmp_path / "cp").as_uri()],
        from_file,
    )
    assert ingest.returncode == 0, ingest.stderr[-3000:]
    landed = spark.table("nginx_logs.access_logs").where(f"source_file LIKE 'kafka://{topic}/%'")
    assert landed.count() == manifest["totals"]["valid"]  # the run itself did its work

    # The options from `--kafka-option @FILE`, and librdkafka asked to log its configuration.
    at = ["--kafka-option", f"@{options_file}"]
    dry = run("--dry-run", ["ingest", "--from", source, "--dry-run", *at, "--kafka-option",
                            "debug=conf,security"])  # fmt: skip
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "0 message(s) of" in dry.stdout, dry.stdout
    assert "sasl.password = [redacted]" in dry.stderr  # librdkafka's, through logberg's log

    # Failing runs with the secret in hand: a SASL mechanism logberg's Python client refuses,
    # TLS to a plain listener, a file that is not JSON (whose text holds the secret).
    bad_file = tmp_path / "bad.json"
    bad_file.write_text(json.dumps(OPTIONS)[:-1])
    failures = {
        "sasl plain": [*at, "--kafka-option", "security.protocol=SASL_PLAINTEXT",
                       "--kafka-option", "sasl.mechanism=PLAIN"],
        "tls": [*at, "--kafka-option", "security.protocol=SSL"],
        "not json": ["--kafka-option", f"@{bad_file}"],
    }  # fmt: skip
    for name, flags in failures.items():
        r = run(name, ["ingest", "--from", source, "--once", *flags])
        assert r.returncode == 2 and "logberg: error: " in r.stderr, (name, r.stderr[-3000:])
    assert f"--kafka-option @{bad_file}: not JSON" in outputs["not json: stderr"]

    # The ingest's event log is among those searched (its plans and conf; Spark redacts the
    # readers' options by session.REDACTION, though none of its events was seen to hold them).
    new = {p: t for p, t in event_logs(lakehouse.home).items() if p not in before}
    assert any("logberg-ingest-kafka" in t and topic in t for t in new.values())
    assert leaks(lakehouse.home, outputs) == []
    # The search finds what it looks for (a control planted in the home's logs, removed).
    control = lakehouse.home / "logs" / "secrets-control.log"
    control.write_text(f"a line that leaks {SECRET}\n")
    try:
        assert leaks(lakehouse.home, {"out": SECRET}) == ["out", str(control)]
    finally:
        control.unlink()
