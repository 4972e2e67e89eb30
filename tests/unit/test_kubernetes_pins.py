"""One Kubernetes minor for kind's node image, the binaries logberg builds for its own and
kubectl; and the build's cache, found without building anything."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO


def test_one_kubernetes_minor_for_the_build_and_kind() -> None:
    import tomllib

    k8s = tomllib.loads((REPO / "jobs" / "logberg" / "versions.toml").read_text())["kubernetes"]
    minor = ".".join(k8s["version"].split(".")[:2])
    tag = k8s["kind_node_image"].split(":", 1)[1].split("@")[0]
    assert tag.startswith(f"v{minor}."), (tag, minor)
    assert "@sha256:" in k8s["kind_node_image"], "pin the kind node image by digest"
    # The node's kubectl is `make tools`' (its wheel's name carries its minor).
    wheel = tomllib.loads((REPO / "jobs" / "logberg" / "versions.toml").read_text())["tools"]
    assert wheel["kubectl_wheel"].split("==")[0].endswith(f"-v{minor.split('.')[1]}")


def test_the_node_images_kubectl_is_the_one_make_tools_installs(tmp_path: Path) -> None:
    from logberg_platform.build import kubernetes_cache as b

    pins = b.kube_pins()
    built = (
        (b.kube_bin_dir(tmp_path, pins), b.kube_key(pins), (*b.KUBE_COMMANDS, "etcd")),
        (b.coredns_bin_dir(tmp_path, pins), b.coredns_key(pins), ("coredns",)),
        (b.netpol_bin_dir(tmp_path, pins), b.netpol_key(pins), (b.NETPOL,)),
    )
    for bindir, key, names in built:
        bindir.mkdir(parents=True)
        (bindir / ".built").write_text(key)
        for name in names:
            (bindir / name).write_text("#!/bin/sh\n")
            (bindir / name).chmod(0o755)
    assert "kubectl" not in b.KUBE_COMMANDS  # not built again with the server
    assert b.cached_binaries(tmp_path) is None  # no kubectl yet: `make tools` has not run
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.parent.mkdir()
    kubectl.write_text("#!/bin/sh\n")
    kubectl.chmod(0o755)
    found = b.cached_binaries(tmp_path)
    assert found is not None and found["kubectl"] == kubectl
    assert found["kube-apiserver"] == b.kube_bin_dir(tmp_path, pins) / "kube-apiserver"
