"""Typed settings from the environment, validated up front (fail fast)."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from logberg.errors import ConfigError

DEFAULT_METASTORE_PORT = 9083
DEFAULT_S3_PORT = 9878


def repo_root() -> Path | None:
    """The source checkout this package runs from, if any (editable install)."""
    here = Path(__file__).resolve().parents[3]  # jobs/platform/logberg_platform/local_settings.py
    return here if (here / "pyproject.toml").is_file() and (here / "jobs").is_dir() else None


def int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise ConfigError(f"{name}={value} is outside 1..65535")
    return value


@dataclass(frozen=True)
class MetastoreDb:
    """Where the metastore keeps its schema: embedded Derby or PostgreSQL."""

    kind: str  # "derby" | "postgres"
    host: str = ""
    port: int = 5432
    database: str = ""
    user: str = ""

    @classmethod
    def parse(cls, url: str | None) -> MetastoreDb:
        if not url or url == "derby":
            return cls(kind="derby")
        parsed = urlparse(url)
        if parsed.scheme not in ("postgresql", "postgres"):
            raise ConfigError(
                f"LOGBERG_METASTORE_DB={url!r}: expected 'derby' or postgresql://user@host:port/db"
            )
        if parsed.password:
            raise ConfigError(
                "LOGBERG_METASTORE_DB must not contain a password; "
                "set LOGBERG_METASTORE_DB_PASSWORD instead"
            )
        database = parsed.path.lstrip("/")
        if not (parsed.hostname and parsed.username and database):
            raise ConfigError(
                f"LOGBERG_METASTORE_DB={url!r}: needs user, host and database "
                "(postgresql://user@host:port/db)"
            )
        return cls(
            kind="postgres",
            host=parsed.hostname,
            port=parsed.port or 5432,
            database=database,
            user=parsed.username,
        )

    @property
    def label(self) -> str:
        if self.kind == "derby":
            return "derby (embedded)"
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"


@dataclass(frozen=True)
class LocalSettings:
    """Everything the local (embedded) profile needs, from LOGBERG_* variables."""

    home: Path
    tools: Path
    metastore_port: int
    metastore_db: MetastoreDb
    s3_port: int

    @classmethod
    def from_env(cls) -> LocalSettings:
        root = repo_root() or Path.cwd()
        home = Path(os.environ.get("LOGBERG_HOME") or root / ".logberg").resolve()
        tools = Path(os.environ.get("LOGBERG_TOOLS") or root / ".tools").resolve()
        return cls(
            home=home,
            tools=tools,
            metastore_port=int_env("LOGBERG_METASTORE_PORT", DEFAULT_METASTORE_PORT),
            metastore_db=MetastoreDb.parse(os.environ.get("LOGBERG_METASTORE_DB")),
            s3_port=int_env("LOGBERG_S3_PORT", DEFAULT_S3_PORT),
        )

    # Layout of $LOGBERG_HOME: every piece of local state lives below it.
    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse"

    @property
    def landing(self) -> Path:
        return self.home / "landing"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def run(self) -> Path:
        return self.home / "run"

    @property
    def metastore_dir(self) -> Path:
        return self.home / "metastore"

    @property
    def s3_dir(self) -> Path:
        return self.home / "s3"

    @property
    def metastore_uri(self) -> str:
        return f"thrift://localhost:{self.metastore_port}"

    @property
    def s3_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"


def java_home() -> Path:
    """The JDK to run the metastore and Spark with; fails fast if there is none."""
    env = os.environ.get("JAVA_HOME")
    if env:
        java = Path(env) / "bin" / "java"
        if not java.is_file():
            raise ConfigError(f"JAVA_HOME={env} has no bin/java; point JAVA_HOME at a Java 17 JDK")
        return Path(env)
    found = shutil.which("java")
    if not found:
        raise ConfigError("Java not found: install Java 17 and set JAVA_HOME (or put java on PATH)")
    return Path(found).resolve().parents[1]


JAVA_OPTIONS_ENV = "LOGBERG_JAVA_OPTIONS"


def java_options() -> list[str]:
    """LOGBERG_JAVA_OPTIONS (shell-quoted): options for every JVM of this home (Spark
    in-process, the Spark Connect server, the metastore, the Kafka broker, the History
    Server), after logberg's own, so that they win. Checked once per process by the JDK
    itself (`java OPTIONS -version`): an option it refuses is an error naming the setting,
    not a service that fails to start."""
    return list(_checked_java_options(os.environ.get(JAVA_OPTIONS_ENV, "")))


@functools.lru_cache(maxsize=4)
def _checked_java_options(raw: str) -> tuple[str, ...]:
    try:
        options = tuple(shlex.split(raw))
    except ValueError as e:
        raise ConfigError(f"{JAVA_OPTIONS_ENV}={raw!r}: {e}") from None
    if not options:
        return ()
    stray = [o for o in options if not o.startswith("-")]
    if stray:
        raise ConfigError(
            f"{JAVA_OPTIONS_ENV}: {stray[0]!r} is not a JVM option (they start with -)"
        )
    java = java_home() / "bin" / "java"
    done = subprocess.run(
        [str(java), *options, "-version"], capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        why = said[0] if said else f"exit {done.returncode}"
        raise ConfigError(f"{JAVA_OPTIONS_ENV}={raw!r}: the JVM refuses it: {why}")
    return options


def joined_java_options() -> str:
    """`java_options()` as one string (Spark's extraJavaOptions splits it as a shell would)."""
    return shlex.join(java_options())
