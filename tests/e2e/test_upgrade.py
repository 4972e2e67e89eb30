"""A helm upgrade of the metastore rolls its pods and leaves the schema alone."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO
from tests.e2e.framework import (
    METASTORE_PODS,
    NS,
    Deployed,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_a_helm_upgrade_rolls_the_metastore_and_leaves_the_schema_alone(
    deployed: Deployed,
) -> None:
    def schema_dump() -> str:
        out = deployed.k(
            "exec", "logberg-dev-postgres-0", "--", "/usr/local/lib/postgresql-bin/pg_dump",
            "--host=/tmp", "--username=postgres", "--schema-only", "metastore",
        )  # fmt: skip
        return re.sub(r"(?m)^\\(un)?restrict .*$", "", out)

    before_pods = {p["metadata"]["uid"] for p in deployed.obj("pod", "-l", METASTORE_PODS)["items"]}
    before = schema_dump()
    # A value that differs from the release's (a run on a reused deployment set 600 already).
    values = json.loads(
        deployed.helm("get", "values", "hive-metastore", f"--namespace={NS}", "-o", "json")
    )
    heap = 616 if (values.get("metastore") or {}).get("heapSizeMb") == 600 else 600
    deployed.helm(
        "upgrade", "hive-metastore", str(REPO / "charts" / "hive-metastore"), f"--namespace={NS}",
        "--reuse-values", f"--set=metastore.heapSizeMb={heap}", "--wait", "--timeout=900s",
    )  # fmt: skip
    after_pods = {
        p["metadata"]["uid"]
        for p in deployed.obj("pod", "-l", METASTORE_PODS)["items"]
        if not p["metadata"].get("deletionTimestamp")
    }
    assert after_pods and not after_pods & before_pods  # rolled
    assert schema_dump() == before  # the schema hook ran and changed nothing
    deployed.helm("test", "hive-metastore", f"--namespace={NS}", "--timeout=300s")
