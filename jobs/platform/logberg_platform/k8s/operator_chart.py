"""The upstream spark-operator chart at the pinned version, as a local directory.

From the chart repository where it answers (`helm pull`), else from the operator's Go module
source at the same version (`go mod download`; the module holds charts/spark-operator-chart
with its crds/). Either way the chart is the upstream one, unmodified, cached under
<tools>/charts/spark-operator-<version> and checked to be that version.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from logberg.errors import ConfigError, ServiceError

log = logging.getLogger(__name__)

REPO_URL = "https://kubeflow.github.io/spark-operator"
MODULE = "github.com/kubeflow/spark-operator/v2"
CHART_IN_MODULE = "charts/spark-operator-chart"


def chart_version(chart: Path) -> str:
    for line in (chart / "Chart.yaml").read_text().splitlines():
        if line.startswith("version:"):
            return line.split(":", 1)[1].strip().strip("\"'")
    raise ServiceError(f"{chart}/Chart.yaml has no version")


def ensure(
    cache: Path,
    version: str,
    helm: str,
    go: Callable[[], str],
    repo: str | None = REPO_URL,
) -> Path:
    """The chart directory (with crds/); fetched once per version."""
    dest = cache / f"spark-operator-{version}"
    if (dest / "Chart.yaml").is_file() and chart_version(dest) == version:
        return dest
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        got = (_from_repo(Path(tmp), version, helm, repo) if repo else None) or _from_module(
            Path(tmp), version, go
        )
        if chart_version(got) != version:
            raise ServiceError(f"{got}: chart version {chart_version(got)}, expected {version}")
        if not (got / "crds").is_dir():
            raise ServiceError(f"{got} has no crds/ directory")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(got, dest)
        for path in (dest, *dest.rglob("*")):  # the module cache is read-only
            path.chmod(path.stat().st_mode | 0o200)
    return dest


def _from_repo(tmp: Path, version: str, helm: str, repo: str) -> Path | None:
    pull = [helm, "pull", "spark-operator", "--repo", repo, "--version", version]
    proc = subprocess.run(
        [*pull, "--untar", "--untardir", str(tmp / "repo")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        log.info(
            "chart repository %s unreachable (%s); using the Go module source",
            repo,
            (proc.stderr.strip().splitlines() or ["no output"])[-1],
        )
        return None
    log.info("spark-operator chart %s from %s", version, repo)
    return tmp / "repo" / "spark-operator"


def _from_module(tmp: Path, version: str, go: Callable[[], str]) -> Path:
    ref = f"{MODULE}@v{version}"
    try:
        exe = go()
    except (ConfigError, ServiceError, OSError) as e:
        raise ConfigError(
            f"the spark-operator chart: the chart repository is unreachable and no Go "
            f"toolchain is available to fetch {ref} ({e})"
        ) from None
    proc = subprocess.run(
        [exe, "mod", "download", "-json", ref],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp,
    )
    info = json.loads(proc.stdout or "{}")
    if proc.returncode != 0 or "Dir" not in info:
        raise ServiceError(f"go mod download {ref} failed: {info.get('Error') or proc.stderr}")
    log.info("spark-operator chart %s from the Go module source %s", version, ref)
    return Path(info["Dir"]) / CHART_IN_MODULE
