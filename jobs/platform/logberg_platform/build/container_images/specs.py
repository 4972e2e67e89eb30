"""What each image is and what it reads: the specs, the repository's pins, the Dockerfiles'
declared build arguments and the files of each build context."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from logberg.errors import ConfigError

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
    """The pinned versitygw the dev S3 image copies in, built first where it is missing (a
    fresh clone's `make k8s-deploy` has not run `make setup`)."""
    from logberg_platform.build.tools import ensure_versitygw

    return ensure_versitygw(Path(os.environ.get("LOGBERG_TOOLS") or repo_root() / ".tools"))


# The tables of pyproject.toml that installing the runtime reads (`pip install` of the Spark
# image's context). The rest (the tools' settings, the extras: dev, connect, platform) and the
# README its `readme` names are the checkout's, not the image's: leaving them out of the
# context means a change to them makes no new image.
RUNTIME_TABLES = ("build-system", "project", "project.scripts", "tool.setuptools.")
_TABLE = re.compile(r"^\[([A-Za-z0-9_.-]+)\]\s*(#.*)?$")


def runtime_pyproject_text(text: str) -> str:
    """pyproject.toml as the Spark image installs it: RUNTIME_TABLES only, without `readme`."""
    keep, out = False, []
    for line in text.splitlines(keepends=True):
        m = _TABLE.match(line)
        if m:
            name = m.group(1)
            keep = name in RUNTIME_TABLES or any(
                t.endswith(".") and name.startswith(t) for t in RUNTIME_TABLES
            )
        if keep and not re.match(r"readme\s*=", line):
            out.append(line)
    return "".join(out)


def _runtime_pyproject() -> Path:
    """The staged pyproject.toml, in a file named by its content (two processes planning at
    once never read each other's half-written or other version)."""
    text = runtime_pyproject_text((repo_root() / "pyproject.toml").read_text())
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = state_dir() / "context" / f"pyproject-{digest}.toml"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}")
        part.write_text(text)
        os.replace(part, path)
    return path


SPECS: dict[str, Spec] = {
    s.key: s
    for s in (
        Spec("spark", "images/spark/Dockerfile", extras={"pyproject.toml": _runtime_pyproject}),
        Spec("hive-metastore", "images/hive-metastore/Dockerfile"),
        Spec("spark-operator", "images/spark-operator/Dockerfile", needs=("spark",)),
        Spec("dev-postgres", "images/dev-postgres/Dockerfile", dev=True),
        Spec("dev-kafka", "images/dev-kafka/Dockerfile", dev=True),
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
        "KAFKA": p["kafka"]["version"],
        "KAFKA_LOG4J": p["kafka"]["log4j"],
        "KAFKA_SPARK_CONNECTOR": p["kafka"]["spark_connector"],
        "KAFKA_SPARK_PROVIDER": p["kafka"]["spark_token_provider"],
        "KAFKA_CLIENTS": p["kafka"]["clients"],
        "COMMONS_POOL2": p["kafka"]["commons_pool2"],
        "MSK_IAM_AUTH": p["kafka"]["msk_iam_auth"],
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
