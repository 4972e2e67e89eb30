"""The Kafka clients' own options (security, mostly): LOGBERG_KAFKA_OPTIONS_FILE,
LOGBERG_KAFKA_OPTIONS and `ingest --kafka-option KEY=VALUE | @PATH`, in the Java client's
names, checked before anything connects; the values that are secrets never shown.

One set of options serves every client of a topic:
* the JVM's (Spark's Kafka source and dev.logberg.KafkaLines), as `kafka.KEY` reader
  options, unchanged;
* logberg's own Python calls (confluent-kafka, librdkafka: the topic's partitions, its end
  offsets), translated: librdkafka has no AWS_MSK_IAM mechanism, so `sasl.mechanism =
  AWS_MSK_IAM` becomes OAUTHBEARER with a token signed for the same IAM identity
  (`logberg.lakehouse.msk`); the Java-only keys (JAAS, callback handlers, key and trust
  stores) stay with the JVM.

LOGBERG_KAFKA_OPTIONS is a JSON object of strings, e.g. the Amazon MSK IAM set:
`{"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM", "sasl.jaas.config":
"software.amazon.msk.auth.iam.IAMLoginModule required;", "sasl.client.callback.handler.class":
"software.amazon.msk.auth.iam.IAMClientCallbackHandler"}`. LOGBERG_KAFKA_OPTIONS_FILE names
a file of the same JSON object (a mounted Secret: a password stays out of the environment).
They apply in this order, each later one replacing the value of a key an earlier one set:
the file, then LOGBERG_KAFKA_OPTIONS, then each `--kafka-option` in its place on the command
line (`KEY=VALUE`, or `@PATH`: that file's object). Options logberg sets itself (the
bootstrap servers, groups, offsets, deserializers) are refused: each reader depends on its
own.

Secrets: the value of a key named like a secret (`SECRET_KEY`: a password, a secret, a
token, the JAAS configuration, which holds a SASL password, and the inline private keys) is
`REDACTED` wherever options are shown (`redacted`, repr), and every value this process
parsed as one is remembered (`known_secrets`) so that logberg's log lines and errors can
mask it (`mask`). Errors name the setting, the option's key and the file, never a value of
such a key nor a file's contents. The JVM masks them on its side: Spark's redaction
settings (`lakehouse.session.REDACTION`) and the Kafka client's own password-typed configs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logberg.errors import ConfigError

OPTIONS_ENV = "LOGBERG_KAFKA_OPTIONS"
OPTIONS_FILE_ENV = "LOGBERG_KAFKA_OPTIONS_FILE"
FLAG = "--kafka-option"
REDACTED = "*****"
# Keys whose values are secrets, in either client's names: *password* (sasl.password,
# ssl.key.password, ssl.keystore.password), *secret* (OAuth client secrets), *token*
# (bearer tokens; a token endpoint's URL is masked too, a small loss), *jaas* (a SASL
# password or key inside the JAAS configuration), the inline private keys (Java's
# ssl.keystore.key, librdkafka's ssl.key.pem) and librdkafka's sasl.oauthbearer.config
# (its unsecured tokens' claims and, for OIDC, extensions). A certificate is public: shown.
SECRET_KEY = re.compile(
    r"password|secret|token|jaas|^ssl\.keystore\.key$|^ssl\.key\.pem$|^sasl\.oauthbearer\.config$"
)
# A value that sets a password inside it (a JAAS line under a key not named above).
SECRET_VALUE = re.compile(r"(?i)password\s*=")
# The quoted secrets inside a JAAS line (password="...", clientSecret="..."): masked also
# where they show alone.
JAAS_SECRET = re.compile(r'(?i)\b\w*(?:password|secret|token)\w*\s*=\s*"([^"]*)"')
# Shorter values are not masked in free text (masking "a" would mangle every line); the
# options' own displays mask every secret value whatever its length.
MIN_MASKED = 4
# A Kafka client property name: dotted lowercase words (security.protocol, sasl.jaas.config).
KEY = re.compile(r"^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$")
# What logberg's readers set themselves (or Spark's Kafka source refuses): the topic's
# address, groups and commits (the lakehouse keeps the offsets), where a read starts, the
# (de)serializers, interceptors.
RESERVED = frozenset(
    {
        "bootstrap.servers",
        "group.id",
        "group.instance.id",
        "enable.auto.commit",
        "auto.commit.interval.ms",
        "auto.offset.reset",
        "client.id",
        "key.deserializer",
        "value.deserializer",
        "key.serializer",
        "value.serializer",
        "interceptor.classes",
    }
)
# Java client options with no librdkafka counterpart: the JVM's alone.
JAVA_ONLY = re.compile(
    r"^(sasl\.jaas\.config|sasl\.(client|login)\.callback\.handler\.class|sasl\.login\.class"
    r"|ssl\.(truststore|keystore)\..+|ssl\.key\.password)$"
)
MSK_IAM = "AWS_MSK_IAM"
MSK_LOGIN_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
MSK_CALLBACK = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})


_known: set[str] = set()  # every secret value this process parsed (for `mask`)


def is_secret(key: str, value: str) -> bool:
    """Whether an option's value is a secret, by its key or by what it holds."""
    return bool(SECRET_KEY.search(key) or SECRET_VALUE.search(value))


def known_secrets() -> frozenset[str]:
    """Every secret value of the options this process has parsed, and the quoted secrets
    inside them."""
    return frozenset(_known)


def mask(text: str) -> str:
    """`text` with every known secret value replaced by REDACTED (longest first, so a
    JAAS line goes whole rather than around its password)."""
    for secret in sorted(_known, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _remember(value: str) -> None:
    for secret in (value, *JAAS_SECRET.findall(value)):
        if len(secret) >= MIN_MASKED:
            _known.add(secret)


@dataclass(frozen=True, repr=False)
class ClientOptions:
    """Checked client options, in the Java client's names, sorted by key. Its repr shows
    the secret values as REDACTED."""

    items: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for key, value in self.items:
            if is_secret(key, value):
                _remember(value)
            where = f"Kafka option {key!r}"
            if not KEY.match(key):
                raise ConfigError(f"{where}: not a Kafka client property name")
            if key in RESERVED:
                raise ConfigError(f"{where}: logberg sets it itself; it cannot be given")
            if not value.strip():
                raise ConfigError(f"{where}: empty value")
        options = dict(self.items)
        protocol = options.get("security.protocol")
        if protocol is not None and protocol not in PROTOCOLS:
            raise ConfigError(
                f"Kafka option 'security.protocol' {protocol!r}: one of {sorted(PROTOCOLS)}"
            )
        if options.get("sasl.mechanism") == MSK_IAM:
            # MSK's IAM listener is TLS only, and the Java client needs the library's
            # login module and callback handler (in the Spark image) to sign in.
            if protocol != "SASL_SSL":
                raise ConfigError(f"Kafka option 'sasl.mechanism' {MSK_IAM}: needs SASL_SSL")
            if MSK_LOGIN_MODULE not in options.get("sasl.jaas.config", ""):
                raise ConfigError(
                    f"Kafka option 'sasl.mechanism' {MSK_IAM}: 'sasl.jaas.config' must name "
                    f"{MSK_LOGIN_MODULE}"
                )
            if options.get("sasl.client.callback.handler.class") != MSK_CALLBACK:
                raise ConfigError(
                    f"Kafka option 'sasl.mechanism' {MSK_IAM}: "
                    f"'sasl.client.callback.handler.class' must be {MSK_CALLBACK}"
                )

    @classmethod
    def parse(
        cls, setting: str | None, flags: Sequence[str] = (), file: str | None = None
    ) -> ClientOptions:
        """The file's JSON object (LOGBERG_KAFKA_OPTIONS_FILE), then the setting's
        (LOGBERG_KAFKA_OPTIONS), then each flag: `KEY=VALUE`, or `@PATH` (that file's
        object); a later one replaces the value of a key an earlier one set."""
        options: dict[str, str] = {}
        if file is not None and file.strip():
            options.update(_read(file.strip(), f"{OPTIONS_FILE_ENV}={file.strip()}"))
        if setting is not None and setting.strip():
            options.update(_object(setting, OPTIONS_ENV))
        for n, flag in enumerate(flags, 1):
            if flag.startswith("@"):
                path = flag[1:].strip()
                if not path:
                    raise ConfigError(f"{FLAG} @: expected @PATH (a JSON file of options)")
                options.update(_read(path, f"{FLAG} @{path}"))
                continue
            key, sep, value = flag.partition("=")
            if not sep or not key.strip():
                # It may be a secret without its key: not echoed.
                raise ConfigError(f"{FLAG} #{n}: expected KEY=VALUE or @PATH")
            options[key.strip()] = value
        return cls(tuple(sorted(options.items())))

    @classmethod
    def from_env(cls, flags: Sequence[str] = ()) -> ClientOptions:
        return cls.parse(os.environ.get(OPTIONS_ENV), flags, os.environ.get(OPTIONS_FILE_ENV))

    def redacted(self) -> dict[str, str]:
        """The options as they may be shown: each secret value REDACTED."""
        return {k: REDACTED if is_secret(k, v) else v for k, v in self.items}

    def __repr__(self) -> str:
        return f"ClientOptions({self.redacted()!r})"

    def __bool__(self) -> bool:
        return bool(self.items)

    @property
    def msk_iam(self) -> bool:
        return dict(self.items).get("sasl.mechanism") == MSK_IAM

    def jvm(self) -> dict[str, str]:
        """Reader options of Spark's Kafka source and KafkaLines (`kafka.` + the key)."""
        return {f"kafka.{k}": v for k, v in self.items}

    def librdkafka(
        self,
        bootstrap: str,
        token: Callable[[str], tuple[str, float]] | None = None,
    ) -> dict[str, Any]:
        """The confluent-kafka configuration of the same options. `token` (tests): what
        signs an MSK IAM token for a region, else `logberg.lakehouse.msk.token`."""
        options: dict[str, Any] = {k: v for k, v in self.items if not JAVA_ONLY.match(k)}
        if not self.msk_iam:
            if "sasl.mechanism" in options:
                raise ConfigError(
                    f"Kafka option 'sasl.mechanism' {options['sasl.mechanism']!r}: logberg's "
                    f"Python clients take {MSK_IAM} only (its JAAS settings are the JVM's)"
                )
            return options
        from logberg.lakehouse import msk

        region = msk.region(bootstrap)
        sign = token or msk.token

        def refresh(_config: str) -> tuple[str, float]:
            return sign(region)

        options["sasl.mechanism"] = "OAUTHBEARER"
        options["oauth_cb"] = refresh
        return options


def _object(text: str, where: str) -> dict[str, str]:
    """A JSON object of strings; an error names `where` and never quotes the text."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{where}: not JSON ({e.msg} at line {e.lineno} column {e.colno})"
        ) from None
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise ConfigError(f"{where}: expected a JSON object of strings")
    for key, value in raw.items():  # known before any check of them can fail
        if is_secret(key, value):
            _remember(value)
    return raw


def _read(path: str, where: str) -> dict[str, str]:
    """A file's JSON object of options (`where`: the setting or flag that named it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{where}: cannot read it ({e.strerror or type(e).__name__})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text") from None
    return _object(text, where)
