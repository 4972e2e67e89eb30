"""The local platform as the runtime's environment (entry point `logberg.environments`:
`local`): this home's metastore, warehouse and landing, and local-mode Spark with the jars
and class archive `make setup` made."""

from __future__ import annotations

from typing import TYPE_CHECKING

from logberg_platform import local
from logberg_platform.local_settings import LocalSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from logberg.lakehouse.connect import ConnectServer
    from logberg.lakehouse.session import LakehouseConfig, SparkRuntime


class LocalEnvironment:
    name = "local"

    def __init__(self, settings: LocalSettings | None = None) -> None:
        self.settings = settings or LocalSettings.from_env()

    def lakehouse_config(self) -> LakehouseConfig:
        return local.lakehouse_config(self.settings)

    def spark_runtime(self, cfg: LakehouseConfig) -> SparkRuntime:
        return local.spark_runtime(self.settings, cfg)

    def session(self, app_name: str, in_process: str | None = None) -> SparkSession:
        return local.command_session(app_name, self.settings, in_process)

    def uses_server(self) -> bool:
        return local.chosen_server(self.settings) is not None

    def server(self) -> ConnectServer | None:
        found = local.command_server(self.settings)
        if found is not None:
            local.log_server(self.settings, found)
        return found

    def default_landing(self) -> str:
        return self.settings.landing.as_uri()

    def kafka_bootstrap(self) -> str | None:
        """This home's Kafka broker (`logberg local up --kafka`), when it runs."""
        from logberg_platform import kafka_broker

        found = kafka_broker.served(self.settings)
        return found.bootstrap if found else None
