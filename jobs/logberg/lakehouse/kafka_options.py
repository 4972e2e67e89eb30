"""The Kafka clients' own options (security, mostly): LOGBERG_KAFKA_OPTIONS and
`ingest --kafka-option KEY=VALUE`, in the Java client's names, checked before anything
connects.

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
"software.amazon.msk.auth.iam.IAMClientCallbackHandler"}`. A `--kafka-option` replaces the
setting's value of its key. Options logberg sets itself (the bootstrap servers, groups,
offsets, deserializers) are refused: each reader depends on its own.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from logberg.errors import ConfigError

OPTIONS_ENV = "LOGBERG_KAFKA_OPTIONS"
FLAG = "--kafka-option"
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


@dataclass(frozen=True)
class ClientOptions:
    """Checked client options, in the Java client's names, sorted by key."""

    items: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for key, value in self.items:
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
    def parse(cls, setting: str | None, flags: Sequence[str] = ()) -> ClientOptions:
        """The setting's JSON object, then each `KEY=VALUE` flag over it."""
        options: dict[str, str] = {}
        if setting is not None and setting.strip():
            try:
                raw = json.loads(setting)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{OPTIONS_ENV}: not JSON ({e.msg})") from None
            if not isinstance(raw, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
            ):
                raise ConfigError(f"{OPTIONS_ENV}: expected a JSON object of strings")
            options.update(raw)
        for flag in flags:
            key, sep, value = flag.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"{FLAG} {flag!r}: expected KEY=VALUE")
            options[key.strip()] = value
        return cls(tuple(sorted(options.items())))

    @classmethod
    def from_env(cls, flags: Sequence[str] = ()) -> ClientOptions:
        return cls.parse(os.environ.get(OPTIONS_ENV), flags)

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
