"""`logberg k8s ui`: which port of a driver it forwards to (no cluster needed; the live
paths are tests/e2e/test_history_server.py)."""

from __future__ import annotations

from logberg_platform.k8s.ui import DRIVER_UI_PORT, driver_ui_port


def test_the_operators_reported_ui_port_wins() -> None:
    app = {
        "spec": {"sparkConf": {"spark.ui.port": "4041"}},
        "status": {"driverInfo": {"webUIPort": 4045}},
    }
    assert driver_ui_port(app) == 4045


def test_else_the_apps_spark_ui_port_else_sparks_default() -> None:
    assert driver_ui_port({"spec": {"sparkConf": {"spark.ui.port": "4041"}}}) == 4041
    assert driver_ui_port({"spec": {}, "status": {"driverInfo": {}}}) == DRIVER_UI_PORT == 4040
