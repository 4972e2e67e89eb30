"""Class-data-sharing archives (AppCDS) for local Spark sessions and the local metastore: a
faster JVM start.

A local job's JVM loads some 20,000 classes (Spark, Iceberg, Hive client, Parquet) before
it does any work. `make setup` runs `logberg setup cds`: one small ingest + analytics in
one JVM, on a throw-away home and metastore, with `-XX:ArchiveClassesAtExit`; the
metastore of that home writes its own archive when it stops. Local sessions then map
theirs (`-XX:SharedArchiveFile`), which saves seconds per process (bench/README.md), and
the metastore and schematool map the metastore's. Each archive is named after this JDK and
its jar set; with none for them, the JVMs simply start without one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from logberg.errors import ServiceError
from logberg_platform.local_settings import LocalSettings
from logberg_platform.setup_artifacts import (
    CDS_DUMP_ENV,
    METASTORE_CDS_DUMP_ENV,
    cds_archive,
    metastore_cds_archive,
)
from logberg_platform.supervisor import free_port

KEEP_ARCHIVES = 3
# C2 compilations of a run of a few thousand lines are CPU the archive does not keep.
DUMP_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def build(settings: LocalSettings, force: bool = False) -> Path:
    """Run a small pipeline in a throw-away home and keep its JVMs' class archives (the
    Spark session's and the metastore's); returns the Spark session's."""
    target = cds_archive(settings)
    metastore_target = metastore_cds_archive(settings)
    if target.is_file() and metastore_target.is_file() and not force:
        return target
    cli = [sys.executable, "-m", "logberg.cli"]
    with tempfile.TemporaryDirectory(prefix="logberg-cds-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOGBERG_")}
        env.update(
            LOGBERG_HOME=tmp,
            LOGBERG_TOOLS=str(settings.tools),
            LOGBERG_METASTORE_PORT=str(free_port()),
            # The archive is of a whole in-process run: JVM start, session, pipeline.
            LOGBERG_SPARK_MODE="in-process",
            # The archive holds classes, not compiled code: the dump's JVMs compile with C1
            # only (DUMP_JAVA_OPTIONS), and every JVM maps it whatever its JIT options.
            LOGBERG_JAVA_OPTIONS=DUMP_JAVA_OPTIONS,
        )
        landing = Path(tmp) / "landing"
        generate = [
            *("generate", "--output", landing.as_uri(), "--num-files", "2"),
            *("--lines-per-file", "2000", "--start-date", "2025-01-01"),
            *("--end-date", "2025-01-02", "--seed", "1", "--malformed-rate", "0.01"),
        ]
        dump = Path(tmp) / "spark.jsa"
        metastore_dump = Path(tmp) / "metastore.jsa"

        def run(*args: str, extra: dict[str, str] | None = None) -> None:
            r = subprocess.run(
                [*cli, *args], env={**env, **(extra or {})}, capture_output=True, text=True
            )
            if r.returncode != 0:
                raise ServiceError(f"setup cds: `logberg {args[0]}` failed:\n{r.stderr[-3000:]}")

        # The metastore writes its archive when `local down` stops it.
        run("local", "up", "--no-connect", extra={METASTORE_CDS_DUMP_ENV: str(metastore_dump)})
        try:
            run(*generate)
            run("run", "--input", landing.as_uri(), extra={CDS_DUMP_ENV: str(dump)})
        finally:
            run("local", "down")
        for written, kept, what in (
            (dump, target, "the Spark session's JVM"),
            (metastore_dump, metastore_target, "the metastore's JVM"),
        ):
            if not written.is_file() or written.stat().st_size == 0:
                raise ServiceError(f"setup cds: {what} wrote no class archive")
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial = kept.with_suffix(".part")
            shutil.copyfile(written, partial)
            partial.replace(kept)
    # ~200 MB each: keep the newest few (other checkouts sharing these tools may use them).
    for pattern in ("spark-*.jsa", "metastore-*.jsa"):
        archives = sorted(target.parent.glob(pattern), key=lambda p: p.stat().st_mtime)
        for old in archives[:-KEEP_ARCHIVES]:
            old.unlink(missing_ok=True)
    return target
