"""The database password rotates (as RDS rotation and External Secrets do it)."""

from __future__ import annotations

import base64
import json
import secrets
import time

import pytest

from tests.e2e.framework import (
    EXAMPLES,
    METASTORE_PODS,
    NS,
    Deployed,
    wait_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_the_metastore_serves_again_after_the_database_password_rotates(
    deployed: Deployed,
) -> None:
    """What RDS rotation and External Secrets do: the database password changes, then the
    Secret follows. Nothing is restarted by hand; the metastore notices the mounted file."""
    [pod] = [
        p
        for p in deployed.obj("pod", "-l", METASTORE_PODS)["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]
    pod_name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    user = deployed.secret("logberg-metastore-db", "username")
    new = secrets.token_urlsafe(24)
    deployed.k(
        "exec", "-i", "logberg-dev-postgres-0", "--", "/usr/local/lib/postgresql-bin/psql",
        "--host=/tmp", "--username=postgres", "--dbname=postgres", "--set=ON_ERROR_STOP=1",
        stdin=f"ALTER ROLE \"{user}\" PASSWORD '{new}';\n",
    )  # fmt: skip
    started = time.monotonic()
    patch = {"data": {"password": base64.b64encode(new.encode()).decode()}}
    deployed.k("patch", "secret", "logberg-metastore-db", "--type=merge", "-p", json.dumps(patch))

    def restarted_on_new_password() -> bool:
        log = deployed.k("logs", pod_name, check=False)
        return "the database accepts the new credentials: restarting the metastore" in log

    wait_for("the metastore to take the new password", restarted_on_new_password, timeout=300)
    # A real call that needs the database, over new connections only.
    deployed.helm("test", "hive-metastore", f"--namespace={NS}", "--timeout=300s")
    took = time.monotonic() - started
    same = deployed.obj("pod", pod_name)
    assert same["metadata"]["uid"] == uid  # the pod was not replaced...
    assert all(
        c["restartCount"] == 0 for c in same["status"]["containerStatuses"]
    )  # ...nor restarted
    assert took < 300
    # The jobs keep working through it.
    deployed.delete_app("logberg-analytics-example")
    deployed.k("apply", "-f", str(EXAMPLES / "analytics.yaml"))
    deployed.wait_app("logberg-analytics-example")
