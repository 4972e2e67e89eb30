"""On kind: `make sql-k8s` answers SQL through the metastore from the toolbox pod, and `make
ui-k8s` serves the History Server on a local port, listing the applications that ran."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request

import pytest

from tests.conftest import REPO
from tests.e2e.framework import Deployed

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_sql_k8s_answers_through_the_metastore(deployed: Deployed) -> None:
    proc = subprocess.run(
        ["make", "--no-print-directory", "sql-k8s", *deployed.make_vars],
        cwd=REPO,
        env=deployed.env,
        input="SHOW DATABASES;\nSELECT 40 + 2 AS answer;\n",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.split()
    assert "nginx_logs" in lines or "default" in lines, proc.stdout[-2000:]
    assert "42" in lines, proc.stdout[-2000:]


def test_ui_k8s_serves_the_history_server(deployed: Deployed) -> None:
    ui = subprocess.Popen(
        ["make", "--no-print-directory", "ui-k8s", *deployed.make_vars],
        cwd=REPO,
        env=deployed.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # make and the port-forward under it stop together
    )
    try:
        assert ui.stdout is not None
        url = ""
        deadline = time.monotonic() + 300
        while not url and time.monotonic() < deadline:
            line = ui.stdout.readline()
            if not line:
                break
            if found := re.search(r"http://127\.0\.0\.1:\d+", line):
                url = found.group(0)
        assert url, "make ui-k8s printed no local URL"
        with urllib.request.urlopen(f"{url}/api/v1/applications", timeout=30) as r:
            apps = json.load(r)
        assert isinstance(apps, list)
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=60)
