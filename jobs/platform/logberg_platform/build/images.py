"""logberg's container images: build them, tag them by content, save them for a node.

    python -m logberg_platform.build.images build [NAME ...] [--force] [--no-cache]
    python -m logberg_platform.build.images tag NAME        # the tag NAME has now
    python -m logberg_platform.build.images save NAME ... -o FILE
    python -m logberg_platform.build.images base [--rebuild]
    python -m logberg_platform.build.images report          # sizes and build times (JSON)
    python -m logberg_platform.build.images builder         # docker or podman, or exit 2
    python -m logberg_platform.build.images containers-conf PATH

NAME is `spark`, `hive-metastore`, `spark-operator` (shipped) or `dev-postgres`, `dev-s3`
(the dev backends: the logberg-dev chart on kind and the local cluster, and the container
tests), with or without the `logberg-` prefix.

* One set of Dockerfiles for every builder: `docker buildx` where a Docker daemon answers,
  else podman (buildah underneath). LOGBERG_IMAGE_BUILDER=docker|podman picks one.
  podman's settings for this machine (runtime, rlimits) live in one containers.conf that
  this module writes (CONTAINERS_CONF; `make` exports it).
* Every image builds FROM the Debian base pinned by digest in versions.toml [base]. Where
  that cannot be pulled, the same name is made locally with debootstrap (`base`).
  LOGBERG_BASE_IMAGE names another base.
* A tag is `<name>:<logberg version>-<12 hex digits>`, a hash of everything the build reads:
  the staged context (the Dockerfile's allow-list, `<Dockerfile>.dockerignore`), the
  build arguments (all from versions.toml) and the base image. A changed input gives a
  new tag (a node never keeps a stale image under an old tag); an existing tag is not
  built again. A build keeps an image's two newest tags and removes older ones it made.
* `save` writes one docker-archive for `ctr -n k8s.io images import`, with the images
  named as a pod's `image: logberg-spark:<tag>` resolves on a containerd node.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from logberg.errors import ConfigError, ServiceError

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

BUILDER_ENV = "LOGBERG_IMAGE_BUILDER"
BASE_ENV = "LOGBERG_BASE_IMAGE"
MIRROR_ENV = "LOGBERG_DEBIAN_MIRROR"
SECURITY_MIRROR_ENV = "LOGBERG_DEBIAN_SECURITY_MIRROR"
BASE_LABEL = "dev.logberg.base"
INPUTS_LABEL = "dev.logberg.inputs"
PULL_TIMEOUT = 300.0


# ------------------------------------------------------------------------------ the specs
@dataclass(frozen=True)
class Spec:
    """One image: its name, its Dockerfile (context: the repository root) and extras."""

    key: str
    dockerfile: str
    dev: bool = False  # a dev backend (charts/logberg-dev, the tests), never run in production
    needs: tuple[str, ...] = ()  # images whose tags this one builds on (build args)
    # Files staged into the context from outside the repository: context path -> source.
    extras: Mapping[str, Callable[[], Path]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"logberg-{self.key}"


def _versitygw() -> Path:
    tools = Path(os.environ.get("LOGBERG_TOOLS") or repo_root() / ".tools")
    binary = tools / "bin" / "versitygw"
    if not binary.is_file():
        raise ConfigError(f"no {binary} (LOGBERG_TOOLS): run `make setup` to build versitygw")
    return binary


SPECS: dict[str, Spec] = {
    s.key: s
    for s in (
        Spec("spark", "images/spark/Dockerfile"),
        Spec("hive-metastore", "images/hive-metastore/Dockerfile"),
        Spec("spark-operator", "images/spark-operator/Dockerfile", needs=("spark",)),
        Spec("dev-postgres", "images/dev-postgres/Dockerfile", dev=True),
        Spec(
            "dev-s3",
            "images/dev-s3/Dockerfile",
            dev=True,
            extras={"images/dev-s3/versitygw": _versitygw},
        ),
    )
}
SHIPPED = tuple(k for k, s in SPECS.items() if not s.dev)
DEV = tuple(k for k, s in SPECS.items() if s.dev)


def spec(name: str) -> Spec:
    key = name.removeprefix("logberg-").split(":")[0]
    if key not in SPECS:
        raise ConfigError(f"unknown image {name!r}: expected one of {', '.join(SPECS)}")
    return SPECS[key]


# ------------------------------------------------------------------------- the repository
@cache
def repo_root() -> Path:
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file() and (folder / "images").is_dir():
            return folder
    raise ConfigError(f"{__file__} is not inside a logberg checkout: images build from one")


def raw_pins() -> dict[str, Any]:
    text = resources.files("logberg").joinpath("versions.toml").read_text()
    return dict(tomllib.loads(text))


def logberg_version() -> str:
    project = tomllib.loads((repo_root() / "pyproject.toml").read_text())["project"]
    return str(project["version"])


def state_dir() -> Path:
    """Build logs and build records: $LOGBERG_HOME/images (default .logberg/images)."""
    home = os.environ.get("LOGBERG_HOME") or str(repo_root() / ".logberg")
    return Path(home).resolve() / "images"


def pinned_base(p: Mapping[str, Any]) -> str:
    return f"{p['base']['image']}@{p['base']['digest']}"


def pin_args(p: Mapping[str, Any]) -> dict[str, str]:
    """Every build argument the Dockerfiles take from versions.toml (BASE_IMAGE: the pin)."""
    spark, build, k8s = p["spark"], p["build"], p["kubernetes"]
    return {
        "BASE_IMAGE": pinned_base(p),
        "JAVA_RELEASE": p["base"]["java"],
        "SPARK_VERSION": spark["version"],
        "PYSPARK_SHA256": spark["pyspark_sha256"],
        "SPARK_MINOR": ".".join(spark["version"].split(".")[:2]),
        "SCALA": spark["scala"],
        "ICEBERG": p["iceberg"]["version"],
        "HADOOP": p["hadoop"]["version"],
        "AWS_SDK": p["hadoop"]["aws_sdk"],
        "POSTGRESQL_JDBC": p["postgresql"]["jdbc"],
        "UAP_JAVA": p["agents"]["uap_java"],
        "HIVE": p["hive"]["version"],
        "MAVEN_VERSION": build["maven"],
        "MAVEN_SHA512": build["maven_sha512"],
        "MAVEN_DEPENDENCY_PLUGIN": build["maven_dependency_plugin"],
        "GO_VERSION": build["go"],
        "GO_SHA256_AMD64": build["go_sha256_amd64"],
        "GO_SHA256_ARM64": build["go_sha256_arm64"],
        "SPARK_OPERATOR": k8s["spark_operator"],
        "SPARK_OPERATOR_SUM": k8s["spark_operator_sum"],
    }


# Set by the builder itself, or defaults meant to be overridden by hand (never pinned).
BUILDER_ARGS = frozenset({"TARGETARCH", "GOPROXY"})


def declared_args(dockerfile: Path) -> dict[str, str | None]:
    """The ARGs a Dockerfile declares, with their defaults (None: no default)."""
    found: dict[str, str | None] = {}
    for m in re.finditer(r"^ARG ([A-Z0-9_]+)(?:=(.*))?$", dockerfile.read_text(), re.M):
        found.setdefault(m.group(1), None if m.group(2) is None else m.group(2).strip())
    return found


def context_paths(s: Spec) -> list[str]:
    """The repository files the build context holds: the Dockerfile's allow-list."""
    root = repo_root()
    ignore = (root / f"{s.dockerfile}.dockerignore").read_text().splitlines()
    rules = [r.strip() for r in ignore if r.strip() and not r.lstrip().startswith("#")]
    if not rules or rules[0] != "*":
        raise ConfigError(f"{s.dockerfile}.dockerignore must start with '*' (an allow-list)")
    include = [r[1:].rstrip("/") for r in rules[1:] if r.startswith("!")]
    exclude = [r.removeprefix("**/") for r in rules[1:] if not r.startswith("!")]
    out: list[str] = []
    for top in include:
        path = root / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for f in files:
            rel = f.relative_to(root).as_posix()
            parts = rel.split("/")
            if not any(fnmatch.fnmatch(part, pat) for pat in exclude for part in parts):
                out.append(rel)
    if s.dockerfile not in out:
        raise ConfigError(f"{s.dockerfile}.dockerignore does not let the Dockerfile in")
    return sorted(set(out))


# ------------------------------------------------------------------------------ builders
def write_containers_conf(path: Path) -> Path:
    """podman/buildah settings for this machine, in one file (CONTAINERS_CONF).

    runc where it is installed (crun fails on hybrid-cgroup hosts), and explicit rlimits
    no higher than this process's hard limits (podman's defaults exceed them on VMs where
    the runtime cannot raise limits, and every container start is then refused)."""
    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 16384)
    lines = [
        "# Written by `python -m logberg_platform.build.images containers-conf` (make writes it):",
        "# podman and buildah settings for this machine. Regenerate rather than edit.",
        "[containers]",
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]',
    ]
    runc = shutil.which("runc") or next(
        (p for p in ("/usr/sbin/runc", "/usr/bin/runc") if Path(p).is_file()), None
    )
    if runc:
        lines += ["", "[engine]", 'runtime = "runc"', "", "[engine.runtimes]", f'runc = ["{runc}"]']
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass(frozen=True)
class Builder:
    kind: str  # "docker" | "podman"
    exe: str
    env: Mapping[str, str]

    def run(
        self, *args: str, check: bool = True, timeout: float | None = 600, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [self.exe, *args],
            env=dict(self.env),
            capture_output=True,
            text=True,
            timeout=timeout,
            **kw,
        )
        if check and proc.returncode != 0:
            raise ServiceError(f"{self.kind} {' '.join(args[:3])} failed: {proc.stderr[-2000:]}")
        return proc

    def qualify(self, ref: str) -> str:
        """podman matches a short name against any local repository ending in it, so the
        base is always named in full there (docker.io/library/debian:...), as docker would."""
        if self.kind == "docker":
            return ref
        first = ref.split("/")[0]
        if "/" in ref and ("." in first or ":" in first or first == "localhost"):
            return ref
        return f"docker.io/{ref}" if "/" in ref else f"docker.io/library/{ref}"

    def exists(self, ref: str) -> bool:
        return self.run("image", "inspect", ref, check=False).returncode == 0

    def inspect(self, ref: str) -> dict[str, Any]:
        data = json.loads(self.run("image", "inspect", ref).stdout)
        return dict(data[0])

    def pull(self, ref: str) -> bool:
        try:
            return self.run("pull", ref, check=False, timeout=PULL_TIMEOUT).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def build_command(
        self,
        dockerfile: Path,
        context: Path,
        tag: str,
        args: Mapping[str, str],
        labels: Mapping[str, str],
        no_cache: bool = False,
    ) -> list[str]:
        flags = [f"--build-arg={k}={v}" for k, v in sorted(args.items())]
        flags += ["--no-cache"] if no_cache else []
        flags += [f"--label={k}={v}" for k, v in sorted(labels.items())]
        if self.kind == "docker":
            head = ["buildx", "build", "--load", "--progress=plain"]
        else:
            head = ["build", "--layers"]
        return [self.exe, *head, "-f", str(dockerfile), "-t", tag, *flags, str(context)]

    def import_command(self, name: str, changes: Sequence[str]) -> list[str]:
        changes_flags = [f"--change={c}" for c in changes]
        return [self.exe, "import", *changes_flags, "-", self.qualify(name)]


def _docker_works(exe: str) -> bool:
    try:
        for args in (["buildx", "version"], ["info", "--format", "{{.ServerVersion}}"]):
            if subprocess.run([exe, *args], capture_output=True, timeout=30).returncode != 0:
                return False
    except (OSError, subprocess.TimeoutExpired):
        return False
    return True


@cache
def builder() -> Builder:
    """docker buildx where a Docker daemon answers, else podman (LOGBERG_IMAGE_BUILDER)."""
    wanted = os.environ.get(BUILDER_ENV, "auto")
    if wanted not in ("auto", "docker", "podman"):
        raise ConfigError(f"{BUILDER_ENV}={wanted!r}: expected auto, docker or podman")
    docker, podman = shutil.which("docker"), shutil.which("podman")
    if wanted in ("auto", "docker") and docker and _docker_works(docker):
        return Builder("docker", docker, dict(os.environ))
    if wanted == "docker":
        raise ConfigError(
            f"{BUILDER_ENV}=docker: no docker with buildx and a running daemon on this machine"
        )
    if podman:
        env = dict(os.environ)
        conf = Path(env.get("CONTAINERS_CONF") or repo_root() / ".logberg" / "containers.conf")
        if not conf.is_file():
            write_containers_conf(conf)
        env["CONTAINERS_CONF"] = str(conf)
        return Builder("podman", podman, env)
    raise ConfigError(
        "no container builder: install Docker (with buildx) or podman "
        f"(apt-get install podman buildah runc), or set {BUILDER_ENV}"
    )


# ---------------------------------------------------------------------------------- base
@dataclass(frozen=True)
class Base:
    ref: str  # what FROM gets (BASE_IMAGE)
    image_id: str  # "" when the builder pulls it by digest itself
    source: str  # "pinned" | "debootstrap" | "local" | BASE_ENV


def find_base(b: Builder, p: Mapping[str, Any], pull: bool) -> Base | None:
    """The base the images build on, if it is here (or, with pull, can be pulled)."""
    override = os.environ.get(BASE_ENV)
    if override:
        override = b.qualify(override)
        if b.exists(override) or (pull and b.pull(override)):
            return Base(override, str(b.inspect(override)["Id"]), BASE_ENV)
        raise ConfigError(f"{BASE_ENV}={override}: no such image, and it cannot be pulled")
    pinned, name = b.qualify(pinned_base(p)), b.qualify(p["base"]["image"])
    if b.exists(pinned):
        return Base(pinned, "", "pinned")
    local = b.inspect(name) if b.exists(name) else None
    labels = ((local or {}).get("Config") or {}).get("Labels") or {}
    if local and labels.get(BASE_LABEL) == "debootstrap":
        return Base(name, str(local["Id"]), "debootstrap")
    if b.kind == "docker":
        return Base(pinned, "", "pinned")  # BuildKit pulls it by digest
    if pull and b.pull(pinned):
        return Base(pinned, "", "pinned")
    if local:  # made here some other way; no registry to compare it with
        return Base(name, str(local["Id"]), "local")
    return None


def resolve_base(b: Builder, p: Mapping[str, Any]) -> Base:
    found = find_base(b, p, pull=True)
    if found:
        return found
    say(f"no registry answers for {pinned_base(p)}: making the base with debootstrap")
    return make_base(b, p)


def require_base(b: Builder, p: Mapping[str, Any]) -> Base:
    found = find_base(b, p, pull=False)
    if found is None:
        raise ConfigError(
            f"no base image {p['base']['image']} here yet: run `make base-images` or `make images`"
        )
    return found


SLIM_DPKG = """\
# Written by logberg's base image build: keep documentation out, as debian:*-slim does.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
"""
SLIM_APT = """\
// Written by logberg's base image build: no package caches or translations in layers.
APT::Keep-Downloaded-Packages "false";
Acquire::Languages "none";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
"""


def _slim(rootfs: Path) -> None:
    (rootfs / "etc/dpkg/dpkg.cfg.d/logberg-slim").write_text(SLIM_DPKG)
    (rootfs / "etc/apt/apt.conf.d/logberg-slim").write_text(SLIM_APT)
    for sub in ("man", "info", "locale", "groff", "lintian", "linda"):
        folder = rootfs / "usr/share" / sub
        if folder.is_dir():
            shutil.rmtree(folder)
            folder.mkdir()
    for doc in (rootfs / "usr/share/doc").glob("*"):
        if doc.is_dir() and not doc.is_symlink():
            for item in doc.iterdir():
                if item.name == "copyright":
                    continue
                if item.is_dir() and not item.is_symlink():
                    shutil.rmtree(item)
                else:
                    item.unlink()
    for pattern in ("var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb"):
        for f in rootfs.glob(pattern):
            if f.is_file():
                f.unlink()
    for log in rootfs.glob("var/log/**/*"):
        if log.is_file():
            log.unlink()
    for name in ("etc/resolv.conf", "etc/hostname"):
        (rootfs / name).write_text("")  # the runtime provides both


def make_base(b: Builder, p: Mapping[str, Any], rebuild: bool = False) -> Base:
    """Make the pinned base's name here: debootstrap --variant=minbase, slimmed like the
    official image, with this host's local CA certificates, imported under the same name."""
    base = p["base"]
    name, suite = b.qualify(base["image"]), base["suite"]
    if not rebuild and b.exists(name):
        info = b.inspect(name)
        say(f"base {name} exists (image {str(info['Id'])[:19]}); `base --rebuild` remakes it")
        return Base(name, str(info["Id"]), "debootstrap")
    debootstrap = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").is_file() else None
    )
    if debootstrap is None:
        raise ConfigError("making the base needs debootstrap: apt-get install debootstrap")
    if os.geteuid() != 0:
        raise ConfigError("making the base runs debootstrap, which needs root")
    mirror = os.environ.get(MIRROR_ENV, "http://deb.debian.org/debian")
    security = os.environ.get(SECURITY_MIRROR_ENV, "http://deb.debian.org/debian-security")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="logberg-base-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        say(f"base: debootstrap --variant=minbase {suite} from {mirror} ({MIRROR_ENV})")
        _checked([debootstrap, "--variant=minbase", suite, str(rootfs), mirror], "debootstrap")
        (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
        (rootfs / "etc/apt/sources.list.d/debian.sources").write_text(
            f"Types: deb\nURIs: {mirror}\nSuites: {suite} {suite}-updates\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
            f"Types: deb\nURIs: {security}\nSuites: {suite}-security\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        )
        # A proxy that intercepts TLS is trusted through the host's local CAs; the images'
        # ca-certificates package picks them up from here.
        cas = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
        (rootfs / "usr/local/share/ca-certificates").mkdir(parents=True, exist_ok=True)
        for ca in cas:
            shutil.copy2(ca, rootfs / "usr/local/share/ca-certificates" / ca.name)
        say(f"base: {len(cas)} local CA certificate(s) from /usr/local/share/ca-certificates")
        say(f"base: apt-get upgrade ({suite}-updates, {suite}-security)")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive"}
        _checked(["chroot", str(rootfs), "apt-get", "update", "-qq"], "apt-get update", env)
        _checked(["chroot", str(rootfs), "apt-get", "-qq", "-y", "upgrade"], "apt-get upgrade", env)
        _checked(["chroot", str(rootfs), "apt-get", "clean"], "apt-get clean", env)
        _slim(rootfs)
        changes = [
            'CMD ["bash"]',
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            f"LABEL {BASE_LABEL}=debootstrap",
            f"LABEL dev.logberg.base.suite={suite}",
        ]
        say(f"base: importing as {name}")
        tar = subprocess.Popen(
            ["tar", "--numeric-owner", "-C", str(rootfs), "--exclude=./dev/*", "-c", "."],
            stdout=subprocess.PIPE,
        )
        imported = subprocess.run(
            b.import_command(name, changes),
            stdin=tar.stdout,
            env=dict(b.env),
            capture_output=True,
            text=True,
        )
        if tar.stdout:
            tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise ServiceError(f"importing the base failed: {imported.stderr[-2000:]}")
    info = b.inspect(name)
    say(f"base: {name} made in {time.monotonic() - started:.0f}s (image {str(info['Id'])[:19]})")
    return Base(name, str(info["Id"]), "debootstrap")


def _checked(cmd: list[str], what: str, env: Mapping[str, str] | None = None) -> None:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=None if env is None else dict(env)
    )
    if proc.returncode != 0:
        raise ServiceError(f"{what} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")


# ---------------------------------------------------------------------------------- tags
@dataclass(frozen=True)
class Plan:
    spec: Spec
    tag: str
    args: dict[str, str]
    files: list[str]
    inputs: str  # the full input hash


def build_args(
    s: Spec, p: Mapping[str, Any], base: Base, tags: Mapping[str, str], context_hash: str = ""
) -> dict[str, str]:
    """The build arguments of one image: its declared ARGs, valued from versions.toml, and
    CONTEXT_HASH, the hash of the staged files. A RUN that bind-mounts the context names
    it, because buildah keys its layer cache on the command, not on what a mount holds:
    without it, a changed package would reuse the old layer under a new tag."""
    values = {**pin_args(p), "BASE_IMAGE": base.ref, "CONTEXT_HASH": context_hash}
    if "spark" in tags:
        values["SPARK_IMAGE"] = tags["spark"]
    out: dict[str, str] = {}
    for arg, default in declared_args(repo_root() / s.dockerfile).items():
        if arg in values:
            out[arg] = str(values[arg])
        elif arg not in BUILDER_ARGS and default is None:
            raise ConfigError(f"{s.dockerfile}: ARG {arg} has no default and no value")
    return out


def plan(s: Spec, b: Builder, p: Mapping[str, Any], base: Base) -> Plan:
    """The tag of an image for the inputs as they are now (nothing is built)."""
    tags = {need: plan(SPECS[need], b, p, base).tag for need in s.needs}
    files = context_paths(s)
    root = repo_root()
    sources = {rel: root / rel for rel in files} | {rel: fn() for rel, fn in s.extras.items()}
    content = hashlib.sha256()
    for rel, path in sorted(sources.items()):
        data = path.read_bytes()
        executable = os.access(path, os.X_OK)
        content.update(f"file\0{rel}\0{int(executable)}\0{len(data)}\0".encode())
        content.update(data)
    args = build_args(s, p, base, tags, content.hexdigest())
    h = hashlib.sha256(f"{s.name}\0{base.image_id}\0".encode())
    for key, value in sorted(args.items()):
        h.update(f"arg\0{key}\0{value}\0".encode())
    h.update(content.digest())
    digest = h.hexdigest()
    return Plan(s, f"{s.name}:{logberg_version()}-{digest[:12]}", args, sorted(sources), digest)


def current_tag(name: str) -> str:
    b = builder()
    p = raw_pins()
    return plan(spec(name), b, p, require_base(b, p)).tag


# --------------------------------------------------------------------------------- build
def say(message: str) -> None:
    print(f"images: {message}", flush=True)


@contextmanager
def staged(pl: Plan) -> Iterator[Path]:
    """The build context: exactly the planned files, in a private folder."""
    root = repo_root()
    with tempfile.TemporaryDirectory(prefix="logberg-context-") as tmp:
        ctx = Path(tmp)
        for rel in pl.files:
            src = pl.spec.extras[rel]() if rel in pl.spec.extras else root / rel
            dst = ctx / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        yield ctx


# The steps that do work (podman: "[2/5] STEP 3/9: RUN ...", docker: "#7 [jars 2/4] RUN ...").
STEP_LINE = re.compile(
    r"^(\[\d+/\d+\] )?STEP \d+/\d+: (FROM|RUN|COPY|ADD) |^#\d+ \[[^\]]+\] (FROM|RUN|COPY|ADD) "
)


def build_one(pl: Plan, b: Builder, force: bool = False, no_cache: bool = False) -> dict[str, Any]:
    """Build one planned image unless its tag exists. Returns its build record."""
    if b.exists(pl.tag) and not force:
        say(f"{pl.tag}: up to date")
        return {"image": pl.spec.name, "tag": pl.tag, "built": False}
    logs = state_dir()
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{pl.spec.name}.log"
    say(f"{pl.tag}: building with {b.kind} (full log: {log_path})")
    labels = {
        INPUTS_LABEL: pl.inputs,
        "org.opencontainers.image.version": logberg_version(),
        "org.opencontainers.image.title": pl.spec.name,
    }
    started = time.monotonic()
    steps = cached = 0
    seen: set[str] = set()
    with staged(pl) as ctx, open(log_path, "w") as log:
        cmd = b.build_command(ctx / pl.spec.dockerfile, ctx, pl.tag, pl.args, labels, no_cache)
        proc = subprocess.Popen(
            cmd, env=dict(b.env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            text = line.rstrip()
            if "Using cache" in text or text.endswith(" CACHED"):
                cached += 1
            if STEP_LINE.match(text) and text not in seen:
                seen.add(text)
                steps += 1
                print(f"  [{time.monotonic() - started:5.0f}s] {text[:110]}", flush=True)
        code = proc.wait()
    seconds = round(time.monotonic() - started, 1)
    if code != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-40:])
        raise ServiceError(f"building {pl.tag} failed (exit {code}); {log_path} ends:\n{tail}")
    size = int(b.inspect(pl.tag).get("Size") or 0)
    say(f"{pl.tag}: built in {seconds:.0f}s, {size / 1e9:.2f} GB")
    record = {
        "image": pl.spec.name,
        "tag": pl.tag,
        "built": True,
        "builder": b.kind,
        "seconds": seconds,
        "size_bytes": size,
        "steps": steps,
        "cached_steps": cached,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with open(logs / "builds.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    return record


def prune(b: Builder, s: Spec, keep: int = 2) -> None:
    """Remove this image's older tags beyond the newest `keep` (a rebuild never reuses a
    tag, so they pile up). Only images this module built (its label), never one in use."""
    listed = b.run(
        "images", "--filter", f"reference={s.name}", "--filter", f"label={INPUTS_LABEL}",
        "--format", "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}", check=False,
    ).stdout.splitlines()  # fmt: skip
    refs = sorted(
        (line.split("\t") for line in listed if "\t" in line and ":<none>" not in line),
        key=lambda ref_created: ref_created[1],
        reverse=True,
    )
    for ref, _ in refs[keep:]:
        if b.run("rmi", ref, check=False).returncode == 0:
            say(f"removed the older {ref}")


def build(names: Sequence[str], force: bool = False, no_cache: bool = False) -> dict[str, str]:
    """Build the named images (and what they build on) unless their tags exist."""
    b = builder()
    p = raw_pins()
    base = resolve_base(b, p)
    say(f"builder {b.kind}; base {base.ref} ({base.source})")
    order: list[Spec] = []
    for name in names:
        s = spec(name)
        for need in (*s.needs, s.key):
            if SPECS[need] not in order:
                order.append(SPECS[need])
    tags: dict[str, str] = {}
    for s in order:
        pl = plan(s, b, p, base)
        wanted = s.key in {spec(n).key for n in names}
        record = build_one(
            pl, b, force=(force or no_cache) and wanted, no_cache=no_cache and wanted
        )
        if record["built"]:
            prune(b, s)
        tags[s.key] = pl.tag
    return tags


# ---------------------------------------------------------------------------------- save
def save(names: Sequence[str], out: Path) -> list[str]:
    """One archive (docker-archive) of the images' current tags, for `ctr images import`
    or `docker load`. Inside it the images are named docker.io/library/<name>:<tag>,
    which is what a pod's `image: logberg-spark:<tag>` resolves to on a containerd node."""
    b = builder()
    tags = [current_tag(n) for n in names]
    missing = [t for t in tags if not b.exists(t)]
    if missing:
        raise ConfigError(f"not built yet: {', '.join(missing)} (make images)")
    out.parent.mkdir(parents=True, exist_ok=True)
    if b.kind == "docker":
        b.run("save", "-o", str(out), *tags, timeout=None)
        return tags
    qualified = [f"docker.io/library/{t}" for t in tags]
    for tag, name in zip(tags, qualified, strict=True):
        b.run("tag", tag, name)
    try:
        out.unlink(missing_ok=True)
        b.run("save", "--format", "docker-archive", "-m", "-o", str(out), *qualified, timeout=None)
    finally:
        for name in qualified:
            b.run("untag", name, name, check=False)
    return qualified


# -------------------------------------------------------------------------------- report
def report() -> dict[str, Any]:
    """Each image's current tag, whether it is built, its size, and its build times (the
    last build and the last one with nothing cached) from the build records."""
    b = builder()
    p = raw_pins()
    base = require_base(b, p)
    records: list[dict[str, Any]] = []
    path = state_dir() / "builds.jsonl"
    if path.is_file():
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    images = []
    for s in SPECS.values():
        tag = plan(s, b, p, base).tag
        built = [r for r in records if r.get("image") == s.name and r.get("built")]
        cold = [r for r in built if r.get("cached_steps") == 0]
        images.append(
            {
                "image": s.name,
                "tag": tag,
                "present": b.exists(tag),
                "size_bytes": int(b.inspect(tag).get("Size") or 0) if b.exists(tag) else None,
                "last_build_seconds": built[-1]["seconds"] if built else None,
                "last_cold_build_seconds": cold[-1]["seconds"] if cold else None,
            }
        )
    return {"builder": b.kind, "base": base.ref, "base_source": base.source, "images": images}


# ----------------------------------------------------------------------------------- CLI
def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The image commands, for `logberg images` and `python -m logberg_platform.build.images`."""
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build images whose tags do not exist yet")
    b.add_argument("names", nargs="*", help=f"default: {' '.join(SHIPPED)}")
    b.add_argument("--force", action="store_true", help="build even if the tag exists")
    b.add_argument("--no-cache", action="store_true", help="and reuse no cached layer (timing)")
    t = sub.add_parser("tag", help="print the tag an image has for the inputs as they are")
    t.add_argument("name")
    s = sub.add_parser("save", help="write the images into one archive for a node")
    s.add_argument("names", nargs="+")
    s.add_argument("-o", "--output", required=True, type=Path)
    base = sub.add_parser("base", help="make the base image with debootstrap")
    base.add_argument("--rebuild", action="store_true", help="remake it even if it exists")
    sub.add_parser("report", help="sizes and build times, as JSON")
    sub.add_parser("builder", help="print the builder `build` uses (exit 2: none)")
    c = sub.add_parser("containers-conf", help="write podman's settings for this machine")
    c.add_argument("path", type=Path)


def run(a: argparse.Namespace) -> int:
    """Carry out one parsed image command; errors as one line and exit 2 (setting) or 1."""
    try:
        if a.command == "build":
            build(a.names or SHIPPED, force=a.force, no_cache=a.no_cache)
        elif a.command == "tag":
            print(current_tag(a.name))
        elif a.command == "save":
            names = save(a.names, a.output)
            say(f"wrote {a.output} ({', '.join(names)})")
        elif a.command == "base":
            make_base(builder(), raw_pins(), rebuild=a.rebuild)
        elif a.command == "report":
            print(json.dumps(report(), indent=2))
        elif a.command == "builder":
            found = builder()
            print(f"{found.kind} {found.exe}")
        else:
            print(write_containers_conf(a.path))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ServiceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logberg_platform.build.images")
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
