"""The event-log settings of a home and what `logberg ui` prints, without a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from logberg.errors import ConfigError
from logberg_platform import history
from logberg_platform.cli.ui import lines
from logberg_platform.local_settings import LocalSettings, MetastoreDb


def settings(home: Path) -> LocalSettings:
    return LocalSettings(home, home / "tools", 9083, MetastoreDb("derby"), 9878)


def test_event_logs_are_on_compressed_and_rolled_under_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(history.EVENT_LOG_ENV, raising=False)
    conf = history.event_log_conf(settings(tmp_path))
    assert conf["spark.eventLog.enabled"] == "true"
    assert conf["spark.eventLog.dir"] == (tmp_path / "spark-events").as_uri()
    assert (tmp_path / "spark-events").is_dir()  # Spark fails if it is missing
    assert conf["spark.eventLog.compression.codec"] == "zstd"
    assert conf["spark.eventLog.rolling.enabled"] == "true"


def test_event_logs_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(history.EVENT_LOG_ENV, "false")
    assert history.event_log_conf(settings(tmp_path)) == {"spark.eventLog.enabled": "false"}
    assert not (tmp_path / "spark-events").exists()


def test_a_wrong_value_names_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(history.EVENT_LOG_ENV, "on")
    with pytest.raises(ConfigError, match="LOGBERG_EVENT_LOG='on'"):
        history.event_log_conf(settings(tmp_path))


def app(id_: str, name: str, start: int, completed: bool, duration: int = 0) -> dict[str, Any]:
    attempt = {"startTimeEpoch": start, "completed": completed, "duration": duration}
    return {"id": id_, "name": name, "attempts": [attempt]}


def test_ui_lists_the_applications_newest_first() -> None:
    base = "http://127.0.0.1:18080"
    out = lines(
        base,
        [
            app("local-1", "logberg-ingest", 1_700_000_000_000, True, 12_345),
            app("local-2", "logberg-connect", 1_700_000_100_000, False),
        ],
    )
    assert out == [
        f"history   {base}",
        f"local-2  logberg-connect  running  2023-11-14 22:15:00  -  {base}/history/local-2/jobs/",
        f"local-1  logberg-ingest  completed  2023-11-14 22:13:20  12.3s  "
        f"{base}/history/local-1/jobs/",
    ]


def test_ui_says_when_there_is_nothing_yet() -> None:
    assert lines("http://h", [])[1].startswith("no applications yet")
