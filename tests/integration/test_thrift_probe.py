"""The hive-metastore chart's `helm test` probe is the runtime's thrift client
(charts/hive-metastore/files/thrift_probe.py links to logberg/lakehouse/thrift.py): run
as the chart runs it, against the real local metastore, and kept to the modules Debian's
python3-minimal (the metastore image's Python) holds."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from logberg.lakehouse import thrift
from logberg_platform.local_settings import LocalSettings

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "charts" / "hive-metastore" / "files" / "thrift_probe.py"
# Top-level modules of Debian bookworm's libpython3.11-minimal and python3.11-minimal
# (`dpkg -L`), plus the interpreter's built-ins: what the probe may import.
PYTHON3_MINIMAL = {
    "__future__", "abc", "argparse", "ast", "bisect", "codecs", "collections", "contextlib",
    "copy", "datetime", "enum", "functools", "io", "keyword", "operator", "os", "re",
    "select", "selectors", "signal", "socket", "stat", "string", "struct", "subprocess",
    "sys", "threading", "time", "types", "typing", "urllib", "warnings", "weakref",
}  # fmt: skip


def test_the_chart_probe_is_the_runtime_client() -> None:
    assert PROBE.is_symlink()
    assert PROBE.resolve() == Path(thrift.__file__).resolve()


def test_the_probe_imports_only_what_python3_minimal_holds() -> None:
    tree = ast.parse(PROBE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported <= PYTHON3_MINIMAL, imported - PYTHON3_MINIMAL


def _probe(port: int, *expected: str) -> subprocess.CompletedProcess[str]:
    """As the chart's test pod runs it: the file's text given to `python3 -c`, isolated
    from this checkout's packages."""
    argv = [sys.executable, "-I", "-c", PROBE.read_text(), "127.0.0.1", str(port), *expected]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


@pytest.mark.integration
def test_the_probe_lists_the_databases_of_a_real_metastore(lakehouse: LocalSettings) -> None:
    ok = _probe(lakehouse.metastore_port, "default")
    assert ok.returncode == 0, ok.stderr
    assert f"databases in thrift://127.0.0.1:{lakehouse.metastore_port}: " in ok.stdout
    assert "default" in ok.stdout and "nginx_logs" in ok.stdout
    missing = _probe(lakehouse.metastore_port, "no_such_database")
    assert missing.returncode == 1
    assert "expected database 'no_such_database' is missing" in missing.stderr
