"""Every Go build logberg runs (the cluster's binaries, versitygw, MinIO, the operator image,
the test webhook) runs the compiler's collector at one setting, which a user's GOGC
overrides, and compiles without DWARF."""

from __future__ import annotations

import re

import pytest

from logberg_platform.build.kubernetes_binaries import aligned, replace_block
from logberg_platform.build.tools import GO_BUILD_GCFLAGS, GO_BUILD_GOGC, go_build_env
from tests.conftest import REPO


def test_a_go_build_is_static_and_collects_at_the_build_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOGC", raising=False)
    env = go_build_env(GOBIN="/x")
    assert (env["GOGC"], env["CGO_ENABLED"], env["GOBIN"]) == (GO_BUILD_GOGC, "0", "/x")
    assert int(GO_BUILD_GOGC) > 100  # Go's default: what the setting is there to raise
    assert env["GOFLAGS"].split() == ["-buildvcs=false", f"-gcflags={GO_BUILD_GCFLAGS}"]


def test_a_users_gogc_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOGC", "150")
    assert go_build_env()["GOGC"] == "150"


def test_the_builds_outside_python_use_the_same_setting() -> None:
    dockerfile = (REPO / "images/spark-operator/Dockerfile").read_text()
    minio = (REPO / "tests/eks_support/build-minio.sh").read_text()
    assert re.findall(r"^ +GOGC=(\d+)$", dockerfile, re.M) == [GO_BUILD_GOGC]
    assert re.findall(r'GOGC="\$\{GOGC:-(\d+)\}"', minio) == [GO_BUILD_GOGC]
    assert re.findall(r"-gcflags=(\S+?)[\"\s]", dockerfile) == [GO_BUILD_GCFLAGS]
    # MinIO (test-only) adds -N -l to the same flags, on the command line of its one build.
    (flags,) = re.findall(r'^gcflags="(.*)"$', minio, re.M)
    assert flags.split() == [GO_BUILD_GCFLAGS, "-N", "-l"]
    assert re.findall(r"go\" build .*-gcflags=\"\$gcflags\"", minio)


def test_a_module_shared_with_the_kubernetes_build_is_replaced_by_its_version() -> None:
    kube = {"k8s.io/client-go": "v0.36.4", "golang.org/x/oauth2": "v0.34.0", "only.kube/x": "v1"}
    own = {"k8s.io/client-go": "v0.35.2", "golang.org/x/oauth2": "v0.35.0", "own.only/y": "v2"}
    own["github.com/same/z"] = kube["github.com/same/z"] = "v3.0.0"
    # Older or newer, each shared module takes the Kubernetes build's version; the others stay.
    assert aligned(own, kube) == {"golang.org/x/oauth2": "v0.34.0", "k8s.io/client-go": "v0.36.4"}
    assert aligned(kube, kube) == {}
    assert aligned(own, kube, keep=("k8s.io/client-go",)) == {"golang.org/x/oauth2": "v0.34.0"}
    block = replace_block(aligned(own, kube))
    assert block.splitlines()[-4:] == [
        "replace (",
        "\tgolang.org/x/oauth2 => golang.org/x/oauth2 v0.34.0",
        "\tk8s.io/client-go => k8s.io/client-go v0.36.4",
        ")",
    ]
