"""The command line as assembled: the runtime's commands and the platform's, one module each."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import subprocess
import sys
from importlib import import_module
from importlib.metadata import entry_points

import pytest

from logberg import cli
from logberg.cli.command import Command, config_from

PLATFORM = {"local", "ui", "doctor", "kind", "k8s", "images", "setup"}


def test_every_runtime_module_declares_its_command_and_the_platform_joins_by_entry_point() -> None:
    runtime = {import_module(f"logberg.cli.{m}").COMMAND.name for m in cli.RUNTIME}
    joined = {e.name: e.load() for e in entry_points(group=cli.PLUGINS)}
    assert set(joined) == PLATFORM
    assert all(isinstance(c, Command) and c.name == n for n, c in joined.items())
    assert runtime & PLATFORM == {"doctor"}  # the platform's doctor extends the runtime's
    assert cli.commands()[[c.name for c in cli.commands()].index("doctor")] is joined["doctor"]
    names = [c.name for c in cli.commands()]
    assert set(names) == runtime | PLATFORM and len(names) == len(set(names))
    for c in cli.commands():  # a command is parsed by argparse, or passes its line through
        assert (c.handler is None) != (c.passthrough is None) or c.handler is None, c.name
        assert c.help


def test_every_action_of_a_group_has_its_own_handler() -> None:
    parser = cli.build_parser()
    for argv in (
        ["local", "up", "--s3"],
        ["local", "status"],
        ["kind", "up", "--name", "x", "--config", "c.yaml"],
        ["kind", "down"],
        ["kind", "node-image"],
        ["k8s", "-n", "x", "deploy", "--target", "kind"],
        ["k8s", "wait", "job", "--selector", "a=b", "--timeout", "5"],
        ["k8s", "wait", "app", "logberg-ingest"],
        ["k8s", "submit", "ingest", "--wait"],
        ["k8s", "query", "SELECT 1", "--format", "jsonl", "--as-of", "1"],
        ["k8s", "sql", "--release", "other"],
        ["images", "build", "spark", "--force"],
        ["setup", "tools", "helm", "spark-operator-chart"],
    ):
        a = parser.parse_args(argv)
        assert callable(a.handler), argv
        assert a.handler.__module__.startswith("logberg_platform.cli."), argv
    with pytest.raises(SystemExit):
        parser.parse_args(["k8s", "deploy", "--target", "local"])  # kind or eks only
    with pytest.raises(SystemExit):
        parser.parse_args(["local", "restart"])


@dataclasses.dataclass(frozen=True)
class Example:
    first: int
    second: str = "b"
    third: tuple[str, ...] = ()


def test_config_from_takes_each_field_from_its_option_once() -> None:
    a = argparse.Namespace(first=1, second="x", unrelated=True, handler=print)
    assert config_from(Example, a) == Example(1, "x")
    assert config_from(Example, a, third=("t",)) == Example(1, "x", ("t",))
    assert config_from(Example, argparse.Namespace(first=2)) == Example(2)
    with pytest.raises(TypeError):
        config_from(Example, argparse.Namespace(second="only"))


def test_the_typed_configs_follow_the_options() -> None:
    from logberg.cli.analytics import analytics_config
    from logberg.cli.ingest import ingest_config
    from logberg.pipeline.maintenance import MaintainConfig

    parser = cli.build_parser()
    a = parser.parse_args(
        ["run", "--input", "file:///x", "--since", "2025-01-02", "--full", "--top-n", "3"]
    )
    ing, ana = ingest_config(a), analytics_config(a)
    assert (ing.inputs, ing.since, ing.full) == (("file:///x",), dt.date(2025, 1, 2), True)
    # `run`'s --since and --full are ingest's: analytics keeps its own defaults.
    assert (ana.top_n, ana.since, ana.full, ana.dates) == (3, None, False, ())
    a = parser.parse_args(["analytics", "--dates", "2025-01-01", "2025-01-03", "--exclude-bots"])
    ana = analytics_config(a)
    assert ana.dates == (dt.date(2025, 1, 1), dt.date(2025, 1, 3)) and ana.exclude_bots
    a = parser.parse_args(["maintain", "--table", "access_logs", "--retain-last", "9"])
    got = config_from(MaintainConfig, a, tables=("nginx_logs.access_logs",))
    assert (got.tables, got.retain_last, got.strategy) == (
        ("nginx_logs.access_logs",),
        9,
        "binpack",
    )


def test_a_wrong_setting_exits_2_naming_it() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "logberg.cli",
            "report",
            "--since",
            "2025-02-02",
            "--until",
            "2025-01-01",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "--since 2025-02-02 is after --until 2025-01-01" in out.stderr


def test_a_dry_run_is_of_a_batch_ingest() -> None:
    """`ingest --dry-run` lists what a batch ingest would read: with --follow it is an
    error naming both, before any Spark starts."""
    out = subprocess.run(
        [sys.executable, "-m", "logberg.cli", "ingest", "--dry-run", "--follow", "--once"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "--dry-run lists what a batch ingest would read: not with --follow" in out.stderr
