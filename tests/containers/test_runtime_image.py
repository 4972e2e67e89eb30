"""The Spark image holds the runtime alone: the pipeline, the lakehouse and the job commands,
and none of the platform tooling (the local platform and cluster, image builds, the deploy
flow), which is only ever installed beside it on a workstation."""

from __future__ import annotations

import json

from tests.containers.conftest import PREFIX, Engine

INSTALLED = r"""
import importlib.util, json, pathlib, sysconfig
from importlib.metadata import distributions, entry_points
site = pathlib.Path(sysconfig.get_paths()["purelib"])
print(json.dumps({
    "dists": sorted(d.metadata["Name"].lower().replace("_", "-") for d in distributions()),
    "platform_importable": importlib.util.find_spec("logberg_platform") is not None,
    "files": sorted(str(p.relative_to(site)) for p in site.rglob("*.py")),
    "commands": sorted(e.name for e in entry_points(group="logberg.commands")),
    "environments": sorted(e.name for e in entry_points(group="logberg.environments")),
}))
"""
TOOLING = ("logberg_platform", "container_images", "kubernetes_binaries", "/kind/", "/k8s/")
RUNTIME = ("ingest", "analytics", "run", "maintain", "rollback", "query", "sql", "doctor")
TOOLING_COMMANDS = ("local", "kind", "k8s", "images", "setup")


def test_the_spark_image_holds_the_runtime_and_no_tooling(
    engine: Engine, tags: dict[str, str]
) -> None:
    proc = engine.once(tags["spark"], "python3", "-c", INSTALLED, name=f"{PREFIX}-runtime")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert "logberg" in found["dists"] and "logberg-platform" not in found["dists"]
    assert not found["platform_importable"]
    assert found["commands"] == [] and found["environments"] == []
    ours = [f for f in found["files"] if f.startswith(("logberg", "generator"))]
    assert "logberg/cli/ingest.py" in ours and "logberg/pipeline/analytics/job.py" in ours
    assert [f for f in ours if any(t in f"/{f}" for t in TOOLING)] == []
    # Nowhere else in the image either (the build stage that compiles the parser had it).
    proc = engine.once(
        tags["spark"],
        "find",
        "/opt",
        "/usr/lib/python3",
        "/home",
        "-name",
        "logberg_platform*",
        name=f"{PREFIX}-runtime-find",
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr


def test_the_images_command_line_is_the_runtimes_and_says_what_is_missing(
    engine: Engine, tags: dict[str, str]
) -> None:
    proc = engine.once(tags["spark"], "logberg", "--help", name=f"{PREFIX}-runtime-help")
    assert proc.returncode == 0, proc.stderr
    listed = proc.stdout.split("positional arguments:")[1].split("options:")[0]
    for command in RUNTIME:
        assert f"\n    {command} " in listed, command
    for command in TOOLING_COMMANDS:
        assert f"\n    {command} " not in listed, command
    # Outside a cluster profile a job needs the local platform, which is not here: one clear
    # line naming what to install or set, exit 2, before any Spark starts.
    proc = engine.once(
        tags["spark"],
        "env",
        "LOGBERG_PROFILE=",
        "logberg",
        "ingest",
        "--input",
        "file:///tmp/none",
        name=f"{PREFIX}-runtime-local",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no local platform" in proc.stderr and "LOGBERG_PROFILE=cluster" in proc.stderr
