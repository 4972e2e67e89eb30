"""A real, throwaway PostgreSQL server for tests (Debian's binaries; run as `postgres` if root)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    on_path = shutil.which(name)
    if on_path:
        return on_path
    raise RuntimeError(f"PostgreSQL server binary {name!r} not found; .ci/run installs postgresql")


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:  # initdb/postgres refuse to run as root
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


@dataclass
class PgServer:
    datadir: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None
    user: str = "postgres"

    def start(self) -> None:
        self.datadir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.datadir, "postgres", "postgres")
            shutil.chown(self.datadir.parent, "postgres", "postgres")
        subprocess.run(
            _as_owner(
                [
                    _bin("initdb"),
                    "-D",
                    str(self.datadir),
                    "-U",
                    self.user,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            check=True,
            capture_output=True,
        )
        self.proc = subprocess.Popen(
            _as_owner(
                [
                    _bin("postgres"),
                    "-D",
                    str(self.datadir),
                    "-p",
                    str(self.port),
                    "-h",
                    "127.0.0.1",
                    "-k",
                    str(self.datadir),
                    "-F",
                ]
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ok = subprocess.run(
                [_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True,
            )
            if ok.returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError("PostgreSQL did not become ready")

    def create_database(self, name: str) -> None:
        subprocess.run(
            [_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, name],
            check=True,
            capture_output=True,
        )

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
