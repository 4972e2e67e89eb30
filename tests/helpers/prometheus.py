"""A real Prometheus scraping a real Pushgateway, for the metrics tests: Debian's binaries
(`make prometheus` unpacks them; LOGBERG_PROMETHEUS_BIN says where), on free ports (of
127.0.0.1 unless told), ready when they answer /-/ready, stopped at the end."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logberg_platform.supervisor import free_port
from tests.conftest import REPO
from tests.helpers.waiting import eventually

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
        result = eventually(f"a value of {promql}", lambda: self.query(promql), timeout, 0.5)
        assert len(result) == 1, result
        return float(result[0]["value"][1])


def pods_job(targets: Path) -> str:
    """A scrape job (`pods`) over the targets listed in `targets` (file_sd, re-read when the
    file changes). Debian's Prometheus is built without Kubernetes discovery, so the caller
    lists the pods, with `pod_target`, as the annotations say."""
    return f"  - job_name: pods\n    file_sd_configs:\n      - files: ['{targets}']\n"


def pod_target(pod: dict[str, Any]) -> dict[str, Any]:
    """A file_sd entry for a pod object annotated prometheus.io/scrape=true: its IP at
    prometheus.io/port, path prometheus.io/path, labels `namespace` and `pod` (what a
    PodMonitor's target labels are)."""
    ann = pod["metadata"].get("annotations") or {}
    assert ann.get("prometheus.io/scrape") == "true", ann
    return {
        "targets": [f"{pod['status']['podIP']}:{ann['prometheus.io/port']}"],
        "labels": {
            "namespace": pod["metadata"]["namespace"],
            "pod": pod["metadata"]["name"],
            "__metrics_path__": ann.get("prometheus.io/path", "/metrics"),
        },
    }


@contextmanager
def _serving(name: str, url: str, workdir: Path, *args: str) -> Iterator[None]:
    """Binary `name` with its log in `workdir`, once `url`/-/ready answers; terminated on exit."""
    log = workdir / f"{name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binaries() / name), *args], stdout=out, stderr=subprocess.STDOUT
        )

    def ready() -> bool:
        assert proc.poll() is None, f"{name} exited:\n{log.read_text()[-3000:]}"
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        eventually(f"{name} at {url}", ready, 60, 0.3, lambda: log.read_text()[-3000:])
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def pushgateway(
    workdir: Path, host: str = "127.0.0.1", port: int | None = None, persist: bool = False
) -> Iterator[str]:
    """A Pushgateway on host:port (a free port when None); yields its URL. `persist`: what
    was pushed outlives a restart (kept in workdir/metrics.db, written as it stops)."""
    url = f"http://{host}:{port or free_port()}"
    args = [f"--web.listen-address={url.removeprefix('http://')}"]
    if persist:
        args.append(f"--persistence.file={workdir / 'metrics.db'}")
    with _serving("prometheus-pushgateway", url, workdir, *args):
        yield url


@contextmanager
def prometheus(workdir: Path, gateway: str, extra_jobs: str = "") -> Iterator[Prometheus]:
    """A Prometheus that scrapes the Pushgateway at `gateway` (honor_labels: a pushed job
    label stays), every second. `extra_jobs`: more scrape_configs entries (YAML), such as
    `pods_job`'s."""
    url = f"http://127.0.0.1:{free_port()}"
    config = workdir / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {SCRAPE_INTERVAL}\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
        f"    static_configs:\n      - targets: ['{gateway.removeprefix('http://')}']\n"
        + extra_jobs
    )
    with _serving(
        "prometheus", url, workdir,
        f"--config.file={config}",
        f"--storage.tsdb.path={workdir / 'tsdb'}",
        f"--web.listen-address={url.removeprefix('http://')}",
    ):  # fmt: skip
        yield Prometheus(url, gateway)


@contextmanager
def running(workdir: Path) -> Iterator[Prometheus]:
    """A Pushgateway on 127.0.0.1 and a Prometheus that scrapes it, both stopped on exit."""
    with pushgateway(workdir, "127.0.0.1") as gateway, prometheus(workdir, gateway) as prom:
        yield prom
