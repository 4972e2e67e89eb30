"""Where a command's Spark, catalog and landing come from.

Two environments answer the same questions:
- the cluster (a SparkApplication, or a pod with LOGBERG_PROFILE=cluster): the LOGBERG_*
  settings and the Spark conf spark-submit set;
- a laptop: the local platform under $LOGBERG_HOME, which the platform tooling
  (logberg-platform, jobs/platform) provides through the entry point group
  `logberg.environments`, name `local`. The runtime never imports the tooling.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol

from logberg.errors import ConfigError
from logberg.lakehouse.connect import MODE_ENV, ConnectServer, SparkMode, spark_mode
from logberg.lakehouse.session import LakehouseConfig, SparkRuntime, build_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ENTRY_POINTS = "logberg.environments"


class Environment(Protocol):
    """What the job commands ask of the place they run in."""

    name: str

    def lakehouse_config(self) -> LakehouseConfig: ...

    def spark_runtime(self, cfg: LakehouseConfig) -> SparkRuntime: ...

    def session(self, app_name: str, in_process: str | None = None) -> SparkSession:
        """The command's session; `in_process` names a command that cannot run on a
        Spark Connect server (an error when LOGBERG_SPARK_MODE=connect)."""
        ...

    def uses_server(self) -> bool:
        """Whether `session` is on a Spark Connect server (LOGBERG_SPARK_MODE)."""
        ...

    def server(self) -> ConnectServer | None:
        """The Spark Connect server `session` would run on, checked (a client that talks
        to it directly: `logberg query`); None: in-process."""
        ...

    def default_landing(self) -> str: ...

    def kafka_bootstrap(self) -> str | None:
        """The Kafka broker a `kafka:///TOPIC` names when LOGBERG_KAFKA_BOOTSTRAP is unset."""
        ...


class ClusterEnvironment:
    """In a cluster: LOGBERG_* settings, Spark as submitted."""

    name = "cluster"

    def lakehouse_config(self) -> LakehouseConfig:
        return LakehouseConfig.from_env()

    def spark_runtime(self, cfg: LakehouseConfig) -> SparkRuntime:
        return SparkRuntime()

    def session(self, app_name: str, in_process: str | None = None) -> SparkSession:
        self.uses_server()  # the setting is checked here too
        return build_session(app_name, self.lakehouse_config())

    def uses_server(self) -> bool:
        """A SparkApplication's driver is the Spark: no server to use."""
        if spark_mode() is SparkMode.CONNECT:
            raise ConfigError(
                f"{MODE_ENV}=connect: a job in a cluster runs in its SparkApplication's "
                "driver; unset it there"
            )
        return False

    def server(self) -> ConnectServer | None:
        self.uses_server()
        return None

    def default_landing(self) -> str:
        landing = os.environ.get("LOGBERG_LANDING")
        if not landing:
            raise ConfigError("--input: not given, and LOGBERG_LANDING is not set")
        return landing

    def kafka_bootstrap(self) -> str | None:
        return None  # LOGBERG_KAFKA_BOOTSTRAP only


def in_cluster() -> bool:
    """Started by spark-submit (a SparkApplication) or in a cluster pod."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or os.environ.get("LOGBERG_PROFILE") == "cluster"


def current() -> Environment:
    """The cluster's when in one, else the local platform's (when the tooling is installed)."""
    if in_cluster():
        return ClusterEnvironment()
    found = entry_points(group=ENTRY_POINTS, name="local")
    if not found:
        raise ConfigError(
            "no local platform: this is the logberg runtime alone. Install the platform tooling "
            "beside it (`make setup`, or `pip install ./jobs/platform`), or run inside a "
            "cluster (LOGBERG_PROFILE=cluster with the LOGBERG_* settings)"
        )
    (entry,) = tuple(found)
    made: Environment = entry.load()()
    return made
