"""A real Prometheus scraping a real Pushgateway, for the metrics tests: Debian's binaries
(`make prometheus` unpacks them; LOGBERG_PROMETHEUS_BIN says where), on free ports of
127.0.0.1, ready when both answer /-/ready, stopped at the end."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logberg_platform.supervisor import free_port
from tests.conftest import REPO

SCRAPE_INTERVAL = "1s"


def binaries() -> Path:
    """Where `make prometheus` put prometheus, promtool and prometheus-pushgateway."""
    env = os.environ.get("LOGBERG_PROMETHEUS_BIN")
    if env:
        found = Path(env)
    else:
        tools = Path(os.environ.get("LOGBERG_TOOLS") or REPO / ".tools")
        dirs = sorted(tools.glob("prometheus/*/bin"))
        found = dirs[-1] if dirs else tools / "prometheus" / "bin"
    missing = [
        b for b in ("prometheus", "promtool", "prometheus-pushgateway") if not (found / b).is_file()
    ]
    assert not missing, f"{missing} not in {found}: run `make prometheus`"
    return found


@dataclass(frozen=True)
class Prometheus:
    url: str  # Prometheus
    gateway: str  # the Pushgateway it scrapes

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result vector."""
        q = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def value(self, promql: str, timeout: float = 60) -> float:
        """The single value of `promql`, once Prometheus has scraped one (its scrape
        interval is 1 s; the timeout only bounds a failure)."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(promql)
            if result:
                assert len(result) == 1, result
                return float(result[0]["value"][1])
            assert time.monotonic() < deadline, f"Prometheus has no value for {promql}"
            time.sleep(0.5)


def _ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        assert proc.poll() is None, f"{url} exited:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{url} not ready:\n{log.read_text()[-3000:]}"
        time.sleep(0.3)


@contextmanager
def running(workdir: Path, gateway_host: str = "127.0.0.1") -> Iterator[Prometheus]:
    """A Pushgateway and a Prometheus that scrapes it (honor_labels: a pushed job label
    stays), both stopped on exit. `gateway_host`: the address the Pushgateway listens on
    (a cluster's pods reach this machine at the node's bridge address)."""
    bins = binaries()
    gw_port, prom_port = free_port(), free_port()
    gateway = f"http://{gateway_host}:{gw_port}"
    config = workdir / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {SCRAPE_INTERVAL}\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
        f"    static_configs:\n      - targets: ['{gateway_host}:{gw_port}']\n"
    )
    procs: list[subprocess.Popen[bytes]] = []
    try:
        gw_log = workdir / "pushgateway.log"
        with open(gw_log, "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        str(bins / "prometheus-pushgateway"),
                        f"--web.listen-address={gateway_host}:{gw_port}",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        _ready(gateway, procs[-1], gw_log)
        prom_log = workdir / "prometheus.log"
        with open(prom_log, "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        str(bins / "prometheus"),
                        f"--config.file={config}",
                        f"--storage.tsdb.path={workdir / 'tsdb'}",
                        f"--web.listen-address=127.0.0.1:{prom_port}",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        url = f"http://127.0.0.1:{prom_port}"
        _ready(url, procs[-1], prom_log)
        yield Prometheus(url, gateway)
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
