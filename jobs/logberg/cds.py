"""A class-data-sharing archive (AppCDS) for local Spark sessions: a faster JVM start.

A local job's JVM loads some 20,000 classes (Spark, Iceberg, Hive client, Parquet) before
it does any work. `make setup` runs `logberg setup-cds`: one small ingest + analytics in
one JVM, on a throw-away home and metastore, with `-XX:ArchiveClassesAtExit`. Local
sessions then map that archive (`-XX:SharedArchiveFile`), which saves seconds per process
(bench/README.md). The archive is named after this JDK, PySpark and jar set; with none
for them, sessions simply start without one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from logberg.errors import ServiceError
from logberg.procs import free_port
from logberg.settings import LocalSettings, java_home

DUMP_ENV = "LOGBERG_CDS_DUMP"  # set by `build` for the one JVM that writes the archive
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # a stale archive is ignored, silently


def archive(settings: LocalSettings) -> Path:
    """Where the archive for this JDK, PySpark and jar set lives (it may not exist)."""
    import pyspark

    from logberg import jars

    release = java_home() / "release"
    parts = [
        str(java_home()),
        release.read_text() if release.is_file() else "",
        pyspark.__version__,
        *(j.name for j in jars.spark_jars(settings.tools)),
    ]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return settings.tools / "cds" / f"spark-{key}.jsa"


def java_options(settings: LocalSettings) -> str:
    """JVM options for a local session: write the archive, use it, or nothing."""
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump} {QUIET}"
    path = archive(settings)
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path.is_file() else ""


def build(settings: LocalSettings, force: bool = False) -> Path:
    """Run a small pipeline in a throw-away home and keep its JVM's class archive."""
    target = archive(settings)
    if target.is_file() and not force:
        return target
    cli = [sys.executable, "-m", "logberg.cli"]
    with tempfile.TemporaryDirectory(prefix="logberg-cds-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOGBERG_")}
        env.update(
            LOGBERG_HOME=tmp,
            LOGBERG_TOOLS=str(settings.tools),
            LOGBERG_METASTORE_PORT=str(free_port()),
        )
        landing = Path(tmp) / "landing"
        generate = [
            *("generate", "--output", landing.as_uri(), "--num-files", "2"),
            *("--lines-per-file", "2000", "--start-date", "2025-01-01"),
            *("--end-date", "2025-01-02", "--seed", "1", "--malformed-rate", "0.01"),
        ]
        dump = Path(tmp) / "spark.jsa"

        def run(*args: str, extra: dict[str, str] | None = None) -> None:
            r = subprocess.run(
                [*cli, *args], env={**env, **(extra or {})}, capture_output=True, text=True
            )
            if r.returncode != 0:
                raise ServiceError(f"setup-cds: `logberg {args[0]}` failed:\n{r.stderr[-3000:]}")

        run("local", "up")
        try:
            run(*generate)
            run("run", "--input", landing.as_uri(), extra={DUMP_ENV: str(dump)})
        finally:
            run("local", "down")
        if not dump.is_file():
            raise ServiceError("setup-cds: the JVM wrote no class archive")
        target.parent.mkdir(parents=True, exist_ok=True)
        for old in target.parent.glob("spark-*.jsa"):
            old.unlink()
        partial = target.with_suffix(".part")
        shutil.copyfile(dump, partial)
        partial.replace(target)
    return target
