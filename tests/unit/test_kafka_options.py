"""The Kafka clients' own options (LOGBERG_KAFKA_OPTIONS, `ingest --kafka-option`): checked
before anything connects, handed to the JVM readers as `kafka.KEY`, translated for the
Python clients (Amazon MSK's IAM sign-in as OAUTHBEARER with a SigV4-signed token). No
broker and no Spark here; that MSK accepts the token was not exercised (no AWS)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from logberg.cli import build_parser
from logberg.errors import ConfigError
from logberg.lakehouse import msk
from logberg.lakehouse.kafka import TopicUri
from logberg.lakehouse.kafka_options import (
    MSK_CALLBACK,
    OPTIONS_ENV,
    OPTIONS_FILE_ENV,
    REDACTED,
    ClientOptions,
    is_secret,
    known_secrets,
    mask,
)

MSK_IAM = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "AWS_MSK_IAM",
    "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
    "sasl.client.callback.handler.class": MSK_CALLBACK,
}
BROKERS = (
    "b-1.logberg-kafka.abc123.c2.kafka.eu-west-1.amazonaws.com:9098,"
    "b-2.logberg-kafka.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"
)


def test_none_given_is_no_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OPTIONS_ENV, raising=False)
    options = ClientOptions.from_env()
    assert not options and options.jvm() == {} and options.librdkafka("h:9092") == {}


def test_the_setting_then_the_flags_over_it() -> None:
    extra = {"ssl.endpoint.identification.algorithm": "https"}
    setting = json.dumps({"security.protocol": "SSL", **extra})
    # A flag replaces the setting's value of its key; a value may hold '=' and ';'.
    flags = [f"{k}={v}" for k, v in MSK_IAM.items()]
    options = ClientOptions.parse(setting, flags)
    assert dict(options.items) == {**MSK_IAM, **extra}
    assert options.msk_iam
    # The JVM readers (Spark's Kafka source, KafkaLines) get every option as kafka.KEY.
    assert options.jvm() == {f"kafka.{k}": v for k, v in {**MSK_IAM, **extra}.items()}


@pytest.mark.parametrize(
    ("setting", "flags", "says"),
    [
        ("not json", (), "not JSON"),
        ('["security.protocol"]', (), "JSON object of strings"),
        ('{"retries": 3}', (), "JSON object of strings"),
        (None, ["security.protocol"], "KEY=VALUE"),
        (None, ["=SSL"], "KEY=VALUE"),
        (None, ["Security Protocol=SSL"], "not a Kafka client property name"),
        (None, ["bootstrap.servers=elsewhere:9092"], "logberg sets it itself"),
        (None, ["group.id=mine"], "logberg sets it itself"),
        (None, ["enable.auto.commit=true"], "logberg sets it itself"),
        (None, ["auto.offset.reset=latest"], "logberg sets it itself"),
        (None, ["security.protocol="], "empty value"),
        (None, ["security.protocol=TLS"], "security.protocol"),
        (None, ["sasl.mechanism=AWS_MSK_IAM", "security.protocol=SSL"], "needs SASL_SSL"),
        (
            None,
            ["sasl.mechanism=AWS_MSK_IAM", "security.protocol=SASL_SSL"],
            "IAMLoginModule",
        ),
    ],
)
def test_wrong_options_fail_before_anything_connects(
    setting: str | None, flags: list[str], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        ClientOptions.parse(setting, flags)


def test_msk_iam_needs_the_librarys_callback_handler() -> None:
    flags = [f"{k}={v}" for k, v in MSK_IAM.items() if "callback" not in k]
    with pytest.raises(ConfigError, match="IAMClientCallbackHandler"):
        ClientOptions.parse(None, flags)


def test_msk_iam_for_librdkafka_is_oauthbearer_with_a_signed_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    signed: list[str] = []

    def sign(region: str) -> tuple[str, float]:
        signed.append(region)
        return "token", 1.0

    conf = ClientOptions.parse(json.dumps(MSK_IAM)).librdkafka(BROKERS, token=sign)
    callback = conf.pop("oauth_cb")
    # The Java-only keys (JAAS, callback handler) stay with the JVM.
    assert conf == {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    assert callback("") == ("token", 1.0) and signed == ["eu-west-1"]  # the brokers' region


def test_other_sasl_mechanisms_are_the_jvms_alone() -> None:
    options = ClientOptions.parse(None, ["security.protocol=SASL_SSL", "sasl.mechanism=PLAIN"])
    assert options.jvm()["kafka.sasl.mechanism"] == "PLAIN"
    with pytest.raises(ConfigError, match="AWS_MSK_IAM only"):
        options.librdkafka("h:9092")
    # No SASL: the Python clients take the options as they are.
    assert ClientOptions.parse(None, ["security.protocol=SSL"]).librdkafka("h:9093") == {
        "security.protocol": "SSL"
    }


def test_the_region_of_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    assert msk.region(BROKERS) == "us-east-2"  # the pod's setting first (the chart's s3.region)
    monkeypatch.setenv("AWS_REGION", "Europe")
    with pytest.raises(ConfigError, match="AWS_REGION"):
        msk.region(BROKERS)
    monkeypatch.delenv("AWS_REGION")
    assert msk.region(BROKERS) == "eu-west-1"
    with pytest.raises(ConfigError, match="set AWS_REGION"):
        msk.region("10.0.0.5:9098")


def test_the_token_is_a_presigned_connect_request() -> None:
    from botocore.credentials import Credentials

    creds = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "sess")
    token, expires = msk.token("eu-west-1", creds)
    assert "=" not in token and "+" not in token and "/" not in token  # base64url, no padding
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == (
        "https",
        "kafka.eu-west-1.amazonaws.com",
        "/",
    )
    query: dict[str, Any] = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert query["Action"] == "kafka-cluster:Connect"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    key, _date, region, service, end = query["X-Amz-Credential"].split("/")
    assert (key, region, service, end) == (
        "AKIAIOSFODNN7EXAMPLE",
        "eu-west-1",
        "kafka-cluster",
        "aws4_request",
    )
    assert query["X-Amz-Expires"] == "900" and query["X-Amz-SignedHeaders"] == "host"
    assert query["X-Amz-Security-Token"] == "sess"  # Pod Identity's are session credentials
    assert len(query["X-Amz-Signature"]) == 64
    assert url.endswith("&User-Agent=logberg")  # after the signature: not signed
    assert "wJalrXUtnFEMI" not in url  # the secret signs; it is never in the token
    import time

    assert time.time() + 850 < expires <= time.time() + 900


def test_ingest_takes_the_options_for_a_topic_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from logberg.cli import ingest
    from logberg.cli.kafka_source import kafka_config

    monkeypatch.setenv("LOGBERG_PROFILE", "cluster")
    monkeypatch.setenv(OPTIONS_ENV, json.dumps({"security.protocol": "SSL"}))
    parser = build_parser()
    flags = [x for k, v in MSK_IAM.items() for x in ("--kafka-option", f"{k}={v}")]
    a = parser.parse_args(["ingest", "--from", f"kafka://{BROKERS}/nginx-access-logs", *flags])
    cfg = kafka_config(a)
    assert dict(cfg.source.options.items) == MSK_IAM
    assert cfg.source.bootstrap == BROKERS and cfg.source.topic == "nginx-access-logs"
    a = parser.parse_args(["ingest", "--from", "kafka://h:9092/t", "--kafka-option", "group.id=x"])
    with pytest.raises(ConfigError, match="logberg sets it itself"):
        kafka_config(a)
    a = parser.parse_args(
        ["ingest", "--input", "file:///x", "--kafka-option", "security.protocol=SSL"]
    )
    with pytest.raises(ConfigError, match="--kafka-option"):
        ingest.run(a)


def test_the_python_clients_get_the_translated_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """partitions() and end_offsets() build their confluent-kafka clients with the topic's
    options (MSK IAM: OAUTHBEARER and the token callback, served once before a request)."""
    import confluent_kafka
    import confluent_kafka.admin

    from logberg.lakehouse import kafka

    made: list[tuple[str, dict[str, Any]]] = []

    topic = SimpleNamespace(error=None, partitions={0: object(), 1: object()})
    metadata = SimpleNamespace(topics={"nginx-access-logs": topic})

    class FakeAdmin:
        def __init__(self, conf: dict[str, Any]) -> None:
            made.append(("admin", conf))

        def poll(self, timeout: float) -> int:
            made.append(("admin.poll", {}))
            return 0

        def list_topics(self, topic: str, timeout: float) -> SimpleNamespace:
            return metadata

    class FakeConsumer(FakeAdmin):
        def __init__(self, conf: dict[str, Any]) -> None:
            made.append(("consumer", conf))

        def poll(self, timeout: float) -> None:  # type: ignore[override]
            made.append(("consumer.poll", {}))

        def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
            return (0, 7)

        def close(self) -> None:
            pass

    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", FakeAdmin)
    monkeypatch.setattr(confluent_kafka, "Consumer", FakeConsumer)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    t = kafka.TopicUri(
        BROKERS, "nginx-access-logs", "--from", ClientOptions.parse(json.dumps(MSK_IAM))
    )
    assert kafka.partitions(t) == [0, 1]
    assert kafka.end_offsets(t) == {0: 7, 1: 7}
    kinds = [k for k, _ in made]
    assert kinds == ["admin", "admin.poll", "consumer", "consumer.poll", "admin", "admin.poll"]
    for kind, conf in made:
        if kind in ("admin", "consumer"):
            assert conf["bootstrap.servers"] == BROKERS
            assert conf["security.protocol"] == "SASL_SSL"
            assert conf["sasl.mechanism"] == "OAUTHBEARER" and callable(conf["oauth_cb"])
            assert "sasl.jaas.config" not in conf
    assert made[2][1]["group.id"] == "logberg-offsets"  # the lag probe's group (eks/msk.tf)
    # Without options the clients are as before: nothing added, no poll.
    made.clear()
    assert kafka.partitions(kafka.TopicUri("h:9092", "nginx-access-logs", "--from")) == [0, 1]
    assert made == [("admin", {"bootstrap.servers": "h:9092", "logger": made[0][1]["logger"]})]


# What aws-msk-iam-auth 2.3.9's own OAUTHBEARER login handler (IAMOAuthBearerLoginCallbackHandler,
# the JVM's way to the same listener) made, decoded, for the made-up credentials AKIDEXAMPLE /
# secret / session token "sess" in eu-west-1 at 2026-12-02T02:14:08Z; its User-Agent left off.
LIBRARY_TOKEN = (
    "https://kafka.eu-west-1.amazonaws.com?Action=kafka-cluster%3AConnect"
    "&X-Amz-Security-Token=sess&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261202T021408Z"
    "&X-Amz-SignedHeaders=host&X-Amz-Expires=900"
    "&X-Amz-Credential=AKIDEXAMPLE%2F20261202%2Feu-west-1%2Fkafka-cluster%2Faws4_request"
    "&X-Amz-Signature=d63be299a4848e9d3231466b47f6dafcaf87c0615fa241da0e79834aad93d492"
)


def test_the_token_signs_as_the_msk_library_does() -> None:
    """Same credentials, region and time: the same signed parameters and signature as the
    AWS library's token, so MSK checks both alike (not that MSK was asked: no AWS here)."""
    import datetime as dt
    from unittest import mock

    import botocore.auth
    from botocore.credentials import Credentials

    library = dict(parse_qs(urlsplit(LIBRARY_TOKEN).query))
    when = dt.datetime(2026, 12, 2, 2, 14, 8)
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
        token, _ = msk.token("eu-west-1", Credentials("AKIDEXAMPLE", "secret", "sess"))
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    ours = parse_qs(urlsplit(url).query)
    assert ours.pop("User-Agent") == ["logberg"]  # after the signature, not signed
    assert ours == library


# -- options from a file, and secrets kept out of sight ---------------------------------------


def planted() -> str:
    """A secret of this test's own (the known secrets are the process's: one per test)."""
    import secrets

    return f"PLANTED-{secrets.token_hex(8)}"


def jaas(password: str) -> str:
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="u" password="{password}";'
    )


def test_the_file_then_the_setting_then_each_flag_in_its_place(tmp_path: Path) -> None:
    file = tmp_path / "options.json"
    file.write_text(json.dumps({"security.protocol": "SSL", "ssl.truststore.type": "PEM"}))
    later = tmp_path / "later.json"
    later.write_text(json.dumps({"ssl.truststore.type": "JKS", "client.dns.lookup": "a"}))
    setting = json.dumps(
        {"ssl.truststore.type": "PKCS12", "ssl.endpoint.identification.algorithm": "https"}
    )
    options = ClientOptions.parse(
        setting,
        ["client.dns.lookup=use_all_dns_ips", f"@{later}", "security.protocol=SASL_SSL"],
        str(file),
    )
    assert dict(options.items) == {
        "security.protocol": "SASL_SSL",  # the last flag over the file
        "ssl.truststore.type": "JKS",  # @later over the setting over the file
        "client.dns.lookup": "a",  # @later over the flag before it
        "ssl.endpoint.identification.algorithm": "https",
    }


def test_from_env_reads_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "options.json"
    file.write_text(json.dumps({"security.protocol": "SSL", "ssl.truststore.type": "PEM"}))
    monkeypatch.setenv(OPTIONS_FILE_ENV, str(file))
    monkeypatch.setenv(OPTIONS_ENV, json.dumps({"ssl.truststore.type": "JKS"}))
    options = ClientOptions.from_env(["security.protocol=SASL_SSL"])
    assert dict(options.items) == {"security.protocol": "SASL_SSL", "ssl.truststore.type": "JKS"}


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read it (No such file or directory)"),
        ('{"sasl.jaas.config": "SECRET", ', "not JSON (Expecting"),
        ('["SECRET"]', "expected a JSON object of strings"),
        ('{"sasl.jaas.config": ["SECRET"]}', "expected a JSON object of strings"),
        (b"\xff\xfeSECRET", "not UTF-8 text"),
    ],
)
def test_a_bad_options_file_names_the_setting_and_the_path_never_its_contents(
    tmp_path: Path, content: str | bytes | None, says: str
) -> None:
    secret = planted()
    file = tmp_path / "options.json"
    if isinstance(content, bytes):
        file.write_bytes(content.replace(b"SECRET", secret.encode()))
    elif content is not None:
        file.write_text(content.replace("SECRET", secret))
    for where, call in (
        (f"{OPTIONS_FILE_ENV}={file}", lambda: ClientOptions.parse(None, (), str(file))),
        (f"--kafka-option @{file}", lambda: ClientOptions.parse(None, [f"@{file}"])),
    ):
        with pytest.raises(ConfigError) as e:
            call()
        assert str(e.value).startswith(f"{where}: {says}"), str(e.value)
        assert secret not in str(e.value)
    with pytest.raises(ConfigError, match="expected @PATH"):
        ClientOptions.parse(None, ["@"])
    # A flag without its key is not echoed: it may be the secret alone.
    with pytest.raises(ConfigError, match="#2: expected KEY=VALUE or @PATH") as e:
        ClientOptions.parse(None, ["security.protocol=SSL", secret])
    assert secret not in str(e.value)


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("sasl.jaas.config", True),
        ("sasl.password", True),  # librdkafka's
        ("ssl.key.password", True),
        ("ssl.keystore.password", True),
        ("ssl.truststore.password", True),
        ("ssl.keystore.key", True),  # an inline private key (PEM)
        ("ssl.key.pem", True),  # librdkafka's
        ("sasl.oauthbearer.client.secret", True),
        ("sasl.oauthbearer.config", True),
        ("sasl.oauthbearer.token.endpoint.url", True),  # masked too: a small loss
        ("security.protocol", False),
        ("sasl.mechanism", False),
        ("sasl.username", False),
        ("ssl.truststore.location", False),
        ("ssl.keystore.certificate.chain", False),  # a certificate is public
        ("ssl.endpoint.identification.algorithm", False),
    ],
)
def test_which_keys_hold_secrets(key: str, secret: bool) -> None:
    assert is_secret(key, "SSL") is secret
    assert (ClientOptions.parse(None, [f"{key}=SSL"]).redacted()[key] == REDACTED) is secret


def test_secret_values_are_redacted_wherever_options_show(tmp_path: Path) -> None:
    secret = planted()
    file = tmp_path / "options.json"
    file.write_text(json.dumps({"sasl.jaas.config": jaas(secret), "sasl.password": secret}))
    # A JAAS line under a key of another name: its `password=` marks it.
    options = ClientOptions.parse(
        None, [f"@{file}", "security.protocol=PLAINTEXT", f"x.login.config={jaas(secret)}"]
    )
    assert options.jvm()["kafka.sasl.jaas.config"] == jaas(secret)  # given to the clients whole
    shown = options.redacted()
    assert shown == {
        "sasl.jaas.config": REDACTED,
        "sasl.password": REDACTED,
        "security.protocol": "PLAINTEXT",
        "x.login.config": REDACTED,
    }
    topic = TopicUri("h:9092", "t", "--from", options)
    for text in (repr(options), str(options), repr(topic), f"{topic}"):
        assert secret not in text and REDACTED in text, text
    # The values this process parsed are known: free text that quotes them is masked, the
    # JAAS line whole and its password alone.
    assert {jaas(secret), secret} <= known_secrets()
    said = f"connect failed ({jaas(secret)}); then password {secret} refused"
    assert mask(said) == f"connect failed ({REDACTED}); then password {REDACTED} refused"


def test_logbergs_log_lines_mask_the_known_secrets(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from logberg.cli.logs import configure_logging

    secret = planted()
    ClientOptions.parse(None, [f"sasl.jaas.config={jaas(secret)}"])
    for fmt in ("text", "json"):
        configure_logging(fmt, "INFO")
        logging.getLogger("logberg.kafka.client").warning("librdkafka says %s", jaas(secret))
        try:
            raise RuntimeError(f"the consumer quoted {secret}")
        except RuntimeError:
            logging.getLogger("logberg").exception("failed")
        err = capsys.readouterr().err
        assert "librdkafka says" in err and "the consumer quoted" in err, err
        assert secret not in err and REDACTED in err, err


def test_an_error_nobody_handled_is_reported_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import logberg.cli as cli
    from logberg.cli.command import Command

    secret = planted()
    ClientOptions.parse(None, [f"sasl.password={secret}"])

    def boom(_a: Any) -> int:
        raise RuntimeError(f"unexpected: {secret}")

    command = Command("boom", "fails", handler=boom)
    monkeypatch.setattr(cli, "commands", lambda: [command])
    assert cli.main(["boom"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: unexpected: *****" in err and secret not in err


def test_spark_redacts_the_options_that_hold_secrets() -> None:
    """What Spark redacts (`spark.sql.redaction.options.regex`, or `spark.redaction.regex`,
    on a data source option's key or value, as Spark's Utils.redact does): every key
    SECRET_KEY names, as the readers get it (`kafka.KEY`), and no other."""
    import re

    from logberg.lakehouse.session import REDACTION

    regexes = [re.compile(REDACTION[k]) for k in REDACTION]

    def redacted(key: str, value: str) -> bool:
        return any(r.search(key) or r.search(value) for r in regexes)

    secret_keys = (
        "sasl.jaas.config",
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.key",
        "ssl.key.pem",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.client.secret",
    )
    for key in secret_keys:
        assert is_secret(key, "v") and redacted(f"kafka.{key}", "v"), key
    for key in ("security.protocol", "sasl.mechanism", "ssl.truststore.location"):
        assert not redacted(f"kafka.{key}", "v"), key
    # A JAAS line under any key: its password= (Spark matches values too).
    assert redacted("kafka.x.login.config", jaas("p"))
