"""Kubernetes, etcd, CoreDNS and kube-network-policies binaries for the kind node image,
built from the Go module proxy.

`go install k8s.io/kubernetes/cmd/...@v1.x` is refused: Kubernetes' go.mod replaces its
staging modules (k8s.io/api, client-go, ...) with `./staging/...` paths. So we build from a
small wrapper module of our own that requires k8s.io/kubernetes at the pin and maps every
staging module to its published `v0.<minor>.<patch>` release. The same module holds a
three-line etcd main (etcd's server at the version Kubernetes itself requires), so one
`go build` compiles the shared dependencies once for all six binaries. kubectl is not among
them: the node image takes the one `make tools` installs from its pinned wheel (the same
minor), which spares a cold build kubectl's own 190-odd packages and a link.

CoreDNS is built from a second wrapper with only the plugins kubeadm's Corefile uses on kind
(no cloud back-ends): smaller and faster to build. kube-network-policies (the NetworkPolicy
enforcer) is built from a third.

Both are built against the Kubernetes build's own module versions (`_align`): every module
they share with it (client-go, api, apimachinery, grpc, protobuf, golang.org/x/...) is
replaced by the version the Kubernetes build uses, so the Go build cache that build filled
already holds those packages and only their own are compiled. Upstream builds them against
other releases (CoreDNS 1.14.2 against client-go 0.35, kube-network-policies 0.8.0 against
0.32): on a cold machine each compiled its own copy of the Kubernetes client, about 450 of
CoreDNS's 534 packages. The kind node image (`make kind-node-image`) carries these builds.

The binaries land in a versioned cache: `$LOGBERG_TOOLS/kubernetes/<version>/bin` and
`$LOGBERG_TOOLS/coredns/<version>/bin`, `$LOGBERG_TOOLS/kube-network-policies/<version>/bin`
(default LOGBERG_TOOLS: `.tools`, git-ignored). A
complete cache (all binaries plus a stamp naming the exact recipe) is reused in seconds.

`logberg setup kubernetes` and `make kind-node-image` (logberg_platform.kind.node_image) run
`ensure_binaries`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from logberg.errors import ConfigError, ServiceError
from logberg.versions import KubePins
from logberg_platform.build import binary_cache, kubernetes_cache
from logberg_platform.build import tools as build_tools
from logberg_platform.build.kubernetes_cache import (
    COREDNS_PLUGINS,
    KUBE_COMMANDS,
    NETPOL,
    Binaries,
    cached_binaries,
    complete,
    coredns_bin_dir,
    coredns_key,
    kube_bin_dir,
    kube_key,
    kube_pins,
    netpol_bin_dir,
    netpol_key,
    tools_dir,
)
from logberg_platform.build.locks import folder_lock
from logberg_platform.build.tools import ensure_helm_kubectl, go_build_env

Log = Callable[[str], None]


def _cached(go: str, kind: str, key: str) -> Path:
    """This build's entry in the machine's binary cache (binary_cache)."""
    recipe = tuple(
        Path(m.__file__ or "") for m in (sys.modules[__name__], kubernetes_cache, build_tools)
    )
    return binary_cache.entry(kind, key, binary_cache.toolchain(go), recipe)


def _restore(go: str, kind: str, bindir: Path, key: str, names: tuple[str, ...], log: Log) -> bool:
    where = _cached(go, kind, key)
    if not binary_cache.restore(where, bindir, key, names):
        return False
    log(f"{kind}: the same build from the machine's binary cache ({where})")
    return True


def ensure_binaries(tools: Path | None = None, log: Log = print) -> Binaries:
    """Build what is missing from the cache; return where the binaries are."""
    tools = tools or tools_dir()
    cached = cached_binaries(tools)
    if cached is not None:
        log(f"kubernetes, coredns and {NETPOL} binaries: cached in {tools}")
        return cached
    pins = kube_pins()
    go = _go()
    return Binaries(
        kube_bin=_ensure_kubernetes(go, tools, pins, log),
        coredns=_ensure_coredns(go, tools, pins, log) / "coredns",
        netpol=_ensure_netpol(go, tools, pins, log) / NETPOL,
        kubectl=ensure_helm_kubectl(tools)[1],
    )


# -- Kubernetes + etcd ------------------------------------------------------------------------


def _ensure_kubernetes(go: str, tools: Path, pins: KubePins, log: Log) -> Path:
    bindir = kube_bin_dir(tools, pins)
    names = (*KUBE_COMMANDS, "etcd")
    key = kube_key(pins)
    if complete(bindir, key, names):
        log(f"kubernetes {pins.tag}: cached in {bindir}")
        return bindir
    with folder_lock(bindir.parent):
        if complete(bindir, key, names) or _restore(go, "kubernetes", bindir, key, names, log):
            return bindir
        src = bindir.parent / "src"
        started = time.monotonic()
        log(f"kubernetes {pins.tag}: reading the staging modules from its go.mod")
        info = _mod_download(go, f"k8s.io/kubernetes@{pins.tag}")
        staging = _staging_modules(Path(info["GoMod"]))
        go_line = _go_directive(Path(info["GoMod"]))
        log(f"kubernetes {pins.tag}: wrapper module in {src} ({len(staging)} staging modules)")
        _write_kube_module(src, pins, staging, go_line)
        log("kubernetes: go mod tidy (downloads the dependencies on a fresh machine)")
        _run([go, "mod", "tidy"], src, log)
        etcd_got = _module_version(go, src, "go.etcd.io/etcd/server/v3")
        if etcd_got != f"v{pins.etcd}":
            raise ConfigError(
                f"[kubernetes].etcd = {pins.etcd} in versions.toml, but Kubernetes {pins.tag} "
                f"builds against etcd {etcd_got}; set the pin to {etcd_got.lstrip('v')}"
            )
        partial = bindir.with_name("bin.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        packages = [f"k8s.io/kubernetes/cmd/{c}" for c in KUBE_COMMANDS] + ["./cmd/etcd"]
        log(
            f"kubernetes: go build {' '.join(names)} in one invocation "
            "(cold: ~15-30 min on 2 cores; with a warm Go cache ~2 min)"
        )
        _run(
            [
                go,
                "build",
                "-trimpath",
                "-o",
                str(partial),
                "-ldflags",
                _ldflags(pins, info),
                *packages,
            ],
            src,
            log,
        )
        _install(partial, bindir, key)
        binary_cache.store(_cached(go, "kubernetes", key), bindir)
        log(f"kubernetes {pins.tag}: built in {time.monotonic() - started:.0f}s -> {bindir}")
        return bindir


def _staging_modules(gomod: Path) -> list[str]:
    """The module paths Kubernetes' go.mod replaces with ./staging directories."""
    mods = []
    for line in gomod.read_text().splitlines():
        left, sep, right = line.partition("=>")
        if sep and right.strip().startswith("./staging/"):
            mods.append(left.split()[-1])
    if not mods:
        raise ServiceError(f"no ./staging replace lines found in {gomod}")
    return sorted(set(mods))


def _go_directive(gomod: Path) -> str:
    for line in gomod.read_text().splitlines():
        if line.startswith("go "):
            return line.split()[1]
    raise ServiceError(f"no go directive in {gomod}")


def _write_kube_module(src: Path, pins: KubePins, staging: list[str], go_line: str) -> None:
    src.mkdir(parents=True, exist_ok=True)
    replaces = "\n".join(f"\t{m} => {m} {pins.staging_tag}" for m in staging)
    (src / "go.mod").write_text(
        "// Generated by logberg_platform.build.kubernetes_binaries: "
        "builds the pinned Kubernetes release.\n"
        f"module logberg.local/kubebuild\n\ngo {go_line}\n\n"
        f"require k8s.io/kubernetes {pins.tag}\n\nreplace (\n{replaces}\n)\n"
    )
    imports = "\n".join(f'\t_ "k8s.io/kubernetes/cmd/{c}"' for c in KUBE_COMMANDS)
    (src / "tools.go").write_text(
        f"//go:build tools\n\n// The commands we build, for go mod tidy.\npackage tools\n\n"
        f"import (\n{imports}\n)\n"
    )
    etcd = src / "cmd" / "etcd"
    etcd.mkdir(parents=True, exist_ok=True)
    (etcd / "main.go").write_text(
        "// etcd, from the server module Kubernetes itself requires.\npackage main\n\n"
        'import (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
        "func main() { etcdmain.Main(os.Args) }\n"
    )
    (src / "go.sum").unlink(missing_ok=True)


def _ldflags(pins: KubePins, info: dict[str, str]) -> str:
    """Version variables, as Kubernetes' own build sets them (else nodes report v0.0.0)."""
    major, minor, _ = pins.version.split(".")
    values = {
        "gitVersion": pins.tag,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": _release_time(info),
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X '{pkg}.{k}={v}'" for k, v in values.items()]
    return " ".join(flags)


def _release_time(info: dict[str, str]) -> str:
    try:
        stamp = json.loads(Path(info["Info"]).read_text())["Time"]
    except (KeyError, OSError, ValueError):
        return "1970-01-01T00:00:00Z"
    return str(stamp)


# -- CoreDNS ----------------------------------------------------------------------------------


def _ensure_coredns(go: str, tools: Path, pins: KubePins, log: Log) -> Path:
    bindir = coredns_bin_dir(tools, pins)
    key = coredns_key(pins)
    if complete(bindir, key, ("coredns",)):
        log(f"coredns v{pins.coredns}: cached in {bindir}")
        return bindir
    with folder_lock(bindir.parent):
        if complete(bindir, key, ("coredns",)) or _restore(
            go, "coredns", bindir, key, ("coredns",), log
        ):
            return bindir
        started = time.monotonic()
        src = bindir.parent / "src"
        src.mkdir(parents=True, exist_ok=True)
        info = _mod_download(go, f"github.com/coredns/coredns@v{pins.coredns}")
        (src / "go.mod").write_text(
            "// Generated by logberg_platform.build.kubernetes_binaries: "
            "CoreDNS with kind's "
            f"plugins only.\nmodule logberg.local/corednsbuild\n\n"
            f"go {_go_directive(Path(info['GoMod']))}\n\n"
            f"require github.com/coredns/coredns v{pins.coredns}\n"
        )
        imports = "\n".join(f'\t_ "github.com/coredns/coredns/plugin/{p}"' for p in COREDNS_PLUGINS)
        (src / "main.go").write_text(
            "// CoreDNS with only the plugins listed here compiled in.\npackage main\n\n"
            f'import (\n\t"github.com/coredns/coredns/coremain"\n\n{imports}\n)\n\n'
            "func main() { coremain.Run() }\n"
        )
        (src / "go.sum").unlink(missing_ok=True)
        log(f"coredns v{pins.coredns}: go mod tidy, aligned with Kubernetes {pins.tag}")
        _align(go, src, _kube_versions(go, tools, pins, log), log)
        partial = bindir.with_name("bin.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        log(f"coredns v{pins.coredns}: go build ({len(COREDNS_PLUGINS)} plugins)")
        _run(
            [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(partial / "coredns"), "."],
            src,
            log,
        )
        _install(partial, bindir, key)
        binary_cache.store(_cached(go, "coredns", key), bindir)
        log(f"coredns v{pins.coredns}: built in {time.monotonic() - started:.0f}s -> {bindir}")
        return bindir


# -- kube-network-policies --------------------------------------------------------------------


def _ensure_netpol(go: str, tools: Path, pins: KubePins, log: Log) -> Path:
    bindir = netpol_bin_dir(tools, pins)
    key = netpol_key(pins)
    if complete(bindir, key, (NETPOL,)):
        log(f"{NETPOL} v{pins.network_policies}: cached in {bindir}")
        return bindir
    with folder_lock(bindir.parent):
        if complete(bindir, key, (NETPOL,)) or _restore(go, NETPOL, bindir, key, (NETPOL,), log):
            return bindir
        started = time.monotonic()
        module = f"sigs.k8s.io/{NETPOL}"
        command = f"{module}/cmd"
        src = bindir.parent / "src"
        src.mkdir(parents=True, exist_ok=True)
        info = _mod_download(go, f"{module}@v{pins.network_policies}")
        (src / "go.mod").write_text(
            f"// Generated by logberg_platform.build.kubernetes_binaries: {NETPOL}.\n"
            f"module logberg.local/netpolbuild\n\ngo {_go_directive(Path(info['GoMod']))}\n\n"
            f"require {module} v{pins.network_policies}\n"
        )
        (src / "tools.go").write_text(
            f"//go:build tools\n\n// The command we build, for go mod tidy.\npackage tools\n\n"
            f'import _ "{command}"\n'
        )
        (src / "go.sum").unlink(missing_ok=True)
        log(f"{NETPOL} v{pins.network_policies}: go mod tidy, aligned with Kubernetes {pins.tag}")
        _align(go, src, _kube_versions(go, tools, pins, log), log, keep=NETPOL_KEEP)
        partial = bindir.with_name("bin.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        log(f"{NETPOL}: go build {command}")
        _run(
            [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(partial / NETPOL), command],
            src,
            log,
        )
        _install(partial, bindir, key)
        binary_cache.store(_cached(go, NETPOL, key), bindir)
        log(f"{NETPOL}: built in {time.monotonic() - started:.0f}s -> {bindir}")
        return bindir


# -- one set of module versions ---------------------------------------------------------------

# kube-network-policies 0.8.0's containerd/nri 0.9.0 does not compile against the OCI
# runtime spec Kubernetes builds with (LinuxPids.Limit became a pointer): nri and the spec
# keep kube-network-policies' own versions.
NETPOL_KEEP = ("github.com/opencontainers/runtime-spec",)

# Rounds of `go mod tidy` that `_align` allows before it gives up: a replaced module at the
# Kubernetes build's version can require others, which the next round aligns in turn.
ALIGN_ROUNDS = 4


def _kube_versions(go: str, tools: Path, pins: KubePins, log: Log) -> dict[str, str]:
    """The version of each module of the Kubernetes build's module graph (its replacements
    applied). Its wrapper module is written again when it is not there (a cache of the
    binaries alone)."""
    src = kube_bin_dir(tools, pins).parent / "src"
    if not (src / "go.sum").is_file():
        info = _mod_download(go, f"k8s.io/kubernetes@{pins.tag}")
        gomod = Path(info["GoMod"])
        _write_kube_module(src, pins, _staging_modules(gomod), _go_directive(gomod))
        _run([go, "mod", "tidy"], src, log)
    return _module_graph(go, src)


def _module_graph(go: str, src: Path) -> dict[str, str]:
    """Module path -> the version the build in `src` uses (a replacement's, if replaced)."""
    fmt = "{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}"
    proc = subprocess.run(
        [go, "list", "-m", "-f", fmt, "all"],
        cwd=src,
        env=go_build_env(),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise ServiceError(f"go list -m all failed in {src}: {proc.stderr[-2000:]}")
    graph = {}
    for line in proc.stdout.splitlines():
        path, _, version = line.partition(" ")
        if version.strip():  # the main module has none
            graph[path] = version.strip()
    return graph


def aligned(
    own: dict[str, str], kube: dict[str, str], keep: tuple[str, ...] = ()
) -> dict[str, str]:
    """The modules of `own` that the Kubernetes build (`kube`) has at another version, with
    the version it has: the replacements that make the two builds share them. `keep`: the
    modules left at their own version (a module of `own` does not build against the
    Kubernetes build's)."""
    return {
        m: kube[m] for m, v in sorted(own.items()) if m in kube and kube[m] != v and m not in keep
    }


def replace_block(versions: dict[str, str]) -> str:
    lines = "".join(f"\t{m} => {m} {v}\n" for m, v in sorted(versions.items()))
    note = "// Aligned with the Kubernetes build (kubernetes_binaries._align)."
    return f"\n{note}\nreplace (\n{lines})\n"


def _align(go: str, src: Path, kube: dict[str, str], log: Log, keep: tuple[str, ...] = ()) -> None:
    """Tidy the module in `src`, replacing each module it shares with the Kubernetes build
    by that build's version (but those of `keep`), until none differs."""
    gomod = src / "go.mod"
    base = gomod.read_text()
    replaced: dict[str, str] = {}
    for _ in range(ALIGN_ROUNDS):
        _run([go, "mod", "tidy"], src, log)
        more = aligned(_module_graph(go, src), kube, keep)
        if not more:
            return
        replaced.update(more)
        gomod.write_text(base + replace_block(replaced))
    raise ServiceError(
        f"{src}: its modules still differ from the Kubernetes build's after "
        f"{ALIGN_ROUNDS} rounds of go mod tidy"
    )


# -- helpers ----------------------------------------------------------------------------------


def _go() -> str:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).is_file():
        raise ConfigError("Go not found: put `go` on the PATH (Kubernetes needs Go >= 1.26)")
    return go


def _run(argv: list[str], cwd: Path, log: Log, **env: str) -> None:
    proc = subprocess.run(argv, cwd=cwd, env=go_build_env(**env), capture_output=True, text=True)
    if proc.returncode != 0:
        raise ServiceError(
            f"{' '.join(argv[:3])} failed in {cwd} (exit {proc.returncode}):\n"
            f"{(proc.stderr or proc.stdout)[-4000:]}"
        )


def _mod_download(go: str, module: str) -> dict[str, str]:
    proc = subprocess.run(
        [go, "mod", "download", "-json", module], env=go_build_env(), capture_output=True, text=True
    )
    try:
        info: dict[str, str] = json.loads(proc.stdout)
    except ValueError:
        info = {"Error": proc.stderr}
    if proc.returncode != 0 or "Error" in info:
        raise ServiceError(f"go mod download {module} failed: {info.get('Error', proc.stderr)}")
    return info


def _module_version(go: str, src: Path, module: str) -> str:
    proc = subprocess.run(
        [go, "list", "-m", "-f", "{{.Version}}", module],
        cwd=src,
        env=go_build_env(),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise ServiceError(f"go list -m {module} failed: {proc.stderr}")
    return proc.stdout.strip()


def _install(partial: Path, bindir: Path, key: str) -> None:
    (partial / ".built").write_text(key)
    shutil.rmtree(bindir, ignore_errors=True)
    partial.rename(bindir)
