"""Static checks of images/ and of the image builder (no container runs here; those are in
tests/containers/test_containers.py): pins against versions.toml, one Debian base, multi-arch by
construction, a checksum on every download, non-root users, content-hash tags, the
metastore entrypoint's logic (against a fake JVM) and checkov."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib

from logberg.errors import ConfigError
from logberg_platform.build import container_images as images
from logberg_platform.kind.podman_images import content_tag
from logberg_platform.local_settings import LocalSettings, java_home
from logberg_platform.setup_artifacts import agent_jars, jar_dir

pytestmark = pytest.mark.static

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "images"
SPARK = IMAGES / "spark" / "Dockerfile"
HMS = IMAGES / "hive-metastore" / "Dockerfile"
OPERATOR = IMAGES / "spark-operator" / "Dockerfile"
ENTRYPOINT = IMAGES / "hive-metastore" / "entrypoint.sh"
CHECKOV = REPO / ".tools" / "checkov-venv" / "bin" / "checkov"
PINS = tomllib.loads((REPO / "jobs" / "logberg" / "versions.toml").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
DOCKERFILES = {key: REPO / s.dockerfile for key, s in images.SPECS.items()}
# The kind node image's own pause image (logberg_platform.kind.podman_images): not shipped,
# but built FROM the same pinned base.
NODE_DOCKERFILES = {"pause": REPO / "images" / "pause" / "Dockerfile"}
USERS = {
    "spark": "185:185",
    "hive-metastore": "1000:1000",
    "spark-operator": "185:185",
    "dev-postgres": "999:999",
    "dev-s3": "10001:10001",
    "dev-kafka": "1000:1000",
}


def instructions(dockerfile: Path) -> list[str]:
    """Dockerfile instructions with continuations joined, comments dropped."""
    kept = [ln for ln in dockerfile.read_text().splitlines() if not ln.lstrip().startswith("#")]
    text = re.sub(r"\\\n", " ", "\n".join(kept))
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def stages(dockerfile: Path) -> list[tuple[str, str | None]]:
    """(FROM image, stage name) for every FROM."""
    out = []
    for i in instructions(dockerfile):
        m = re.fullmatch(r"FROM (\S+)(?: AS (\S+))?", i)
        if i.startswith("FROM "):
            assert m, f"{dockerfile}: unexpected FROM form: {i}"
            out.append((m.group(1), m.group(2)))
    return out


# ------------------------------------------------------------------------------- pins
def test_every_arg_default_equals_versions_toml() -> None:
    pinned = images.pin_args(PINS)
    assert pinned["BASE_IMAGE"] == f"{PINS['base']['image']}@{PINS['base']['digest']}"
    for key, dockerfile in {**DOCKERFILES, **NODE_DOCKERFILES}.items():
        for arg, default in images.declared_args(dockerfile).items():
            if arg in pinned:
                assert default == pinned[arg], f"{key}: ARG {arg}={default}, pin {pinned[arg]}"
            else:
                assert arg in {*images.BUILDER_ARGS, "SPARK_IMAGE", "CONTEXT_HASH"}, (
                    f"{key}: unknown ARG {arg}"
                )


def test_a_run_that_bind_mounts_the_context_names_its_hash() -> None:
    """buildah keys a RUN's cached layer on the command and its ARGs, not on a bind mount's
    content: such a RUN must use CONTEXT_HASH, or a changed package ships the old layer."""
    for key, dockerfile in DOCKERFILES.items():
        for step in instructions(dockerfile):
            if step.startswith("RUN --mount=type=bind") and "from=" not in step:
                assert "${CONTEXT_HASH}" in step, f"{key}: {step[:80]}"


def test_pins_are_what_the_images_need() -> None:
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", PINS["base"]["digest"])
    assert PINS["base"]["image"] == f"debian:{PINS['base']['suite']}-slim"
    assert re.fullmatch(r"[0-9a-f]{64}", PINS["spark"]["pyspark_sha256"])
    assert re.fullmatch(r"[0-9a-f]{128}", PINS["build"]["maven_sha512"])
    assert re.fullmatch(r"v\d+\.\d+\.\d+", PINS["kubernetes"]["spark_operator"])
    assert PINS["kubernetes"]["spark_operator_sum"].startswith("h1:")
    # pyproject's pyspark pin, the image's Spark and the pin are one version.
    assert f"pyspark=={PINS['spark']['version']}" in PYPROJECT["project"]["dependencies"]
    assert PINS["hive"]["version"].startswith("3."), "Hive 4 dropped thrift get_table"
    assert "HIVE-26537" in HMS.read_text()


# ------------------------------------------------------------------ one base, multi-arch
def base_problems(dockerfile: Path, key: str) -> list[str]:
    """FROMs that are neither the pinned base, an earlier stage nor our own Spark image."""
    problems, seen = [], []
    for n, (image, name) in enumerate(stages(dockerfile)):
        own = image in seen or image == "${BASE_IMAGE}"
        own = own or (image == "${SPARK_IMAGE}" and key == "spark-operator")
        if not own or (n == 0 and image != "${BASE_IMAGE}"):
            problems.append(f"FROM {image}")
        if name:
            seen.append(name)
    return problems


def arch_problems(dockerfile: Path) -> list[str]:
    """Anything that would tie an image to one architecture: a forced platform, a written
    architecture (only the case that picks a checksum for ${TARGETARCH} may name them),
    a per-architecture URL that does not follow ${arch}."""
    problems = []
    for i in instructions(dockerfile):
        if "--platform" in i:
            problems.append(i)
        if re.search(r"amd64|arm64|x86_64|aarch64", i) and not (
            "GO_SHA256_" in i and '"$arch"' in i
        ):
            problems.append(i)
        for url in re.findall(r"https?://\S+", i):
            if re.search(r"linux-|amd64|x86", url) and "${arch}" not in url:
                problems.append(url)
    return problems


def test_every_image_starts_from_the_pinned_debian_base() -> None:
    for key, dockerfile in {**DOCKERFILES, **NODE_DOCKERFILES}.items():
        assert base_problems(dockerfile, key) == [], key


def test_nothing_is_amd64_only() -> None:
    """Nothing here runs arm64, so read it: every base is the multi-arch Debian index,
    no platform or architecture is written down, and each per-architecture download has
    an arm64 checksum pinned."""
    for key, dockerfile in DOCKERFILES.items():
        assert arch_problems(dockerfile) == [], key
    assert {"go_sha256_amd64", "go_sha256_arm64"} <= set(PINS["build"])
    op = "\n".join(instructions(OPERATOR))
    assert 'amd64) sum="$GO_SHA256_AMD64"' in op and 'arm64) sum="$GO_SHA256_ARM64"' in op
    # Spark comes from pyspark's sdist, pinned by its hash (no platform tag); JVM code is jars.
    assert "--require-hashes" in SPARK.read_text()


def test_the_checks_catch_the_old_designs(tmp_path: Path) -> None:
    """apache/hive:3.1.3 is published for amd64 only; an amd64 toolchain URL is too."""
    old = tmp_path / "Dockerfile"
    old.write_text("ARG HIVE_IMAGE=apache/hive:3.1.3\nFROM ${HIVE_IMAGE}\nUSER 1000\n")
    assert base_problems(old, "hive-metastore") == ["FROM ${HIVE_IMAGE}"]
    old.write_text(
        "FROM ${BASE_IMAGE}\n"
        "RUN curl -o /tmp/go.zip https://proxy.golang.org/golang.org/toolchain/@v/"
        "v0.0.1-go1.25.4.linux-amd64.zip\n"
    )
    assert arch_problems(old)


# --------------------------------------------------------------------------- downloads
def test_every_download_is_checked() -> None:
    for key, dockerfile in DOCKERFILES.items():
        for i in instructions(dockerfile):
            assert not re.match(r"ADD \S*https?://", i), f"{key}: ADD of a URL: {i[:80]}"
            if i.startswith("RUN ") and re.search(r"\bcurl\s+-", i):
                assert "sha256sum -c" in i or "sha512sum -c" in i, f"{key}: {i[:120]}"
            if re.search(r"\bpip install\b", i) and "/build/src" not in i:
                assert "--require-hashes" in i, f"{key}: {i[:120]}"
            if "go mod download" in i:
                assert "SPARK_OPERATOR_SUM" in i, key
    script = (IMAGES / "common" / "resolve-jars.sh").read_text()
    assert "--strict-checksums" in script and "sha512sum -c" in script
    for dockerfile in (SPARK, HMS):
        assert "/build/resolve-jars.sh /build/pom.xml" in dockerfile.read_text()


def _pom_coordinates(pom: Path, dockerfile: Path) -> set[str]:
    """group:artifact:version of each dependency, with the -D properties the Dockerfile
    passes resolved through the pins (so the wiring is checked too)."""
    text = dockerfile.read_text()
    values = images.pin_args(PINS)
    props = {
        m.group(1): values[m.group(2)] for m in re.finditer(r'"-D([a-z.]+)=\$\{(\w+)\}"', text)
    }
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    out = set()
    for dep in ET.parse(pom).getroot().iterfind("m:dependencies/m:dependency", ns):
        coord = ":".join(
            dep.findtext(f"m:{f}", "", ns) for f in ("groupId", "artifactId", "version")
        )
        out.add(re.sub(r"\$\{([a-z.]+)\}", lambda m: props[m.group(1)], coord))
    return out


def test_image_jars_are_the_local_paths_jars() -> None:
    from logberg.versions import pins
    from logberg_platform.build import jars

    groups = jars.groups(pins())
    spark = _pom_coordinates(IMAGES / "spark" / "pom.xml", SPARK)
    local = groups["spark"] + groups["s3"] + groups["jdbc"] + groups["agents"] + groups["kafka"]
    # ... and, in the image only, MSK's SASL/IAM login (no MSK on a laptop): that jar alone.
    msk = pins().kafka.msk_artifacts()
    assert msk == ["software.amazon.msk:aws-msk-iam-auth:2.3.9"]
    assert spark == set(local) | set(msk)
    assert not set(msk) & {c for g in groups.values() for c in g}
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    [dep] = [
        d
        for d in ET.parse(IMAGES / "spark" / "pom.xml")
        .getroot()
        .iterfind("m:dependencies/m:dependency", ns)
        if d.findtext("m:artifactId", "", ns) == "aws-msk-iam-auth"
    ]
    excluded = [
        (e.findtext("m:groupId", "", ns), e.findtext("m:artifactId", "", ns))
        for e in dep.iterfind("m:exclusions/m:exclusion", ns)
    ]
    assert excluded == [("*", "*")], "the MSK IAM jar alone: its SDK is the bundle's"
    hms = _pom_coordinates(IMAGES / "hive-metastore" / "pom.xml", HMS)
    hive = f"org.apache.hive:hive-standalone-metastore:{PINS['hive']['version']}"
    assert hms == set(groups["hadoop"] + groups["s3"] + groups["jdbc"]) | {hive}


# ------------------------------------------------------------------------- hygiene
def test_final_users_are_not_root_and_nothing_secret_is_baked_in() -> None:
    for key, dockerfile in DOCKERFILES.items():
        ins = instructions(dockerfile)
        users = [i.split(None, 1)[1] for i in ins if i.startswith("USER ")]
        assert users and users[-1] == USERS[key], f"{key}: final USER {users[-1:]}"
        for i in ins:
            if i.startswith(("ENV ", "ARG ", "LABEL ")):
                assert not re.search(r"(?i)(password|secret|token|access_key)", i), i
        assert any(i.startswith("HEALTHCHECK") for i in ins), key


def test_contexts_are_allow_lists_without_local_state() -> None:
    for key, s in images.SPECS.items():
        paths = images.context_paths(s)
        assert s.dockerfile in paths
        for p in paths:
            assert not p.startswith((".venv", ".tools", ".logberg", ".git")), (key, p)
            assert "__pycache__" not in p and not p.endswith(".pyc"), (key, p)
    spark = images.context_paths(images.SPECS["spark"])
    assert "jobs/spark_entry.py" in spark and "README.md" not in spark
    assert "pyproject.toml" in images.SPECS["spark"].extras  # the runtime's tables (below)
    assert any(p.startswith("jobs/logberg/java/") for p in spark)
    assert not any(p.startswith("tests/") for p in spark)
    # Of the platform tooling, only the parser stage's module and what it imports.
    platform = {p for p in spark if p.startswith("jobs/platform/")}
    assert "jobs/platform/logberg_platform/build/jvm.py" in platform
    assert "jobs/platform/logberg_platform/cli/__init__.py" not in platform
    assert "jobs/platform/pyproject.toml" not in platform


def test_spark_image_installs_the_runtime_tables_of_pyproject() -> None:
    """The staged pyproject.toml: what installing the runtime reads, as the checkout has it,
    and nothing a tool or the dev extra reads (a change there makes no new image)."""
    full = tomllib.loads((REPO / "pyproject.toml").read_text())
    staged = tomllib.loads(images.SPECS["spark"].extras["pyproject.toml"]().read_text())
    project = {
        k: v for k, v in full["project"].items() if k not in ("readme", "optional-dependencies")
    }
    assert staged["project"] == project
    assert staged["build-system"] == full["build-system"]
    assert staged["tool"] == {"setuptools": full["tool"]["setuptools"]}
    assert staged["project"]["scripts"] == {"logberg": "logberg.cli:main"}
    text = images.specs.runtime_pyproject_text(
        '[project]\nname = "x"\nreadme = "README.md"\n[tool.ruff] # lint\nline-length = 1\n'
        '[tool.setuptools.packages.find]\nwhere = [\n  "jobs",\n]\n'
    )
    assert (
        text == '[project]\nname = "x"\n[tool.setuptools.packages.find]\nwhere = [\n  "jobs",\n]\n'
    )


def test_spark_image_installs_the_package_with_one_pyspark() -> None:
    text = " ".join(instructions(SPARK))
    assert "pyspark==${SPARK_VERSION} --hash=sha256:${PYSPARK_SHA256}" in text
    assert "pip install --quiet --require-hashes --no-deps -r /tmp/pyspark.txt" in text
    assert "pip install --quiet /build/src" in text  # pyproject.toml's dependencies
    assert "python3 -m venv /opt/logberg/venv" in text  # Debian's python3
    assert "COPY --chmod=0644 jobs/spark_entry.py /opt/logberg/spark_entry.py" in text


def test_spark_image_compiles_the_line_parser_with_a_jdk(tmp_path: Path) -> None:
    """The parser stage's command, here, on the build context's files alone (the allow-list
    holds only the part of the platform tooling it imports)."""
    ins = instructions(SPARK)
    build = next(i for i in ins if "python3 -m logberg_platform.build.jvm /parser" in i)
    assert "JAVA_HOME=/opt/java" in build and "ln -s /opt/spark/jars/* /deps/* /parser/" in build
    # Only the two jars the sources import besides Spark's: ua-parser's and Kafka's clients.
    deps = "COPY --from=jars /jars/uap-java-*.jar /jars/kafka-clients-*.jar /deps/"
    assert deps in ins
    assert any("jdk-headless" in i for i in ins)
    assert "COPY --from=parser /parser/logberg-parser.jar /opt/spark/jars/" in ins
    # The same command, here: Spark's jars and those two in a folder, the parser jar built
    # beside them.
    import pyspark

    tools = LocalSettings.from_env().tools
    for jar in [
        *(Path(pyspark.__file__).parent / "jars").glob("*.jar"),
        *agent_jars(tools),
        *jar_dir(tools, "kafka").glob("kafka-clients-*.jar"),
    ]:
        (tmp_path / jar.name).symlink_to(jar)
    context = tmp_path / "context"
    for rel in images.context_paths(images.SPECS["spark"]):
        (context / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, context / rel)
    jobs = context / "jobs"
    env = dict(os.environ, JAVA_HOME=str(java_home()), PYTHONPATH=f"{jobs}:{jobs / 'platform'}")
    # The modules must come from the context, not from the venv's editable installs.
    run = (
        "import sys, logberg_platform.build.jvm as jvm;"
        "roots = ('logberg', 'logberg_platform');"
        "ours = [m for n, m in sys.modules.items() if n.split('.')[0] in roots];"
        "outside = [m.__name__ for m in ours if not (m.__file__ or '').startswith(sys.argv[1])];"
        "assert not outside, f'imported from outside the build context: {outside}';"
        "sys.exit(jvm.main(sys.argv[2:]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", run, str(context), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "logberg-parser.jar").stat().st_size > 0


def test_poms_parse() -> None:
    for pom in IMAGES.glob("*/pom.xml"):
        ET.parse(pom)


# ---------------------------------------------------------------------- content tags
@pytest.fixture()
def repo_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of what the images read, as the repository images.py sees."""
    for rel in ("pyproject.toml", "README.md", "jobs", "generator", "images"):
        src = REPO / rel
        if src.is_dir():
            shutil.copytree(src, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, tmp_path / rel)
    monkeypatch.setattr(images.specs, "repo_root", lambda: tmp_path)
    yield tmp_path


def _tag(key: str, base: images.Base | None = None, pins: dict[str, Any] | None = None) -> str:
    b = images.Builder("podman", "podman", {})
    base = base or images.Base("docker.io/library/debian:bookworm-slim", "sha256:aa", "debootstrap")
    return images.plan(images.SPECS[key], b, pins or PINS, base).tag


def _append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_tags_follow_every_input(repo_copy: Path) -> None:
    first = _tag("spark")
    assert re.fullmatch(rf"logberg-spark:{PYPROJECT['project']['version']}-[0-9a-f]{{12}}", first)
    assert _tag("spark") == first, "the same inputs give the same tag"
    other_base = images.Base("docker.io/library/debian:bookworm-slim", "sha256:bb", "debootstrap")
    assert _tag("spark", other_base) != first, "a remade base is a new input"
    hms = _tag("hive-metastore")
    _append(repo_copy / "jobs" / "logberg" / "ingest.py", "# changed\n")
    assert _tag("spark") != first
    assert _tag("hive-metastore") == hms, "the metastore does not read jobs/"
    operator = _tag("spark-operator")
    _append(repo_copy / "jobs" / "logberg" / "ingest.py", "# changed again\n")
    assert _tag("spark-operator") != operator, "the operator builds on the Spark image"
    (repo_copy / "jobs" / "logberg" / "__pycache__").mkdir(exist_ok=True)
    (repo_copy / "jobs" / "logberg" / "__pycache__" / "x.pyc").write_bytes(b"x")
    spark_now = _tag("spark")
    assert _tag("spark") == spark_now
    entry = repo_copy / "images" / "hive-metastore" / "entrypoint.sh"
    entry.chmod(0o644)
    assert _tag("hive-metastore") != hms, "the executable bit is an input"


def test_the_spark_tag_follows_only_what_the_image_installs(repo_copy: Path) -> None:
    first = _tag("spark")
    _append(repo_copy / "README.md", "\nchanged\n")
    _append(repo_copy / "jobs" / "platform" / "logberg_platform" / "cli" / "local.py", "# x\n")
    pyproject = repo_copy / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace('"ruff>=0.6",', '"ruff>=0.7",'))
    assert pyproject.read_text() != text
    assert _tag("spark") == first, "the README, the tooling and the dev extra are not installed"
    _append(repo_copy / "jobs" / "platform" / "logberg_platform" / "setup_artifacts.py", "# x\n")
    assert _tag("spark") != first, "the parser stage runs it"
    second = _tag("spark")
    pyproject.write_text(text.replace('"boto3>=1.34",', '"boto3>=1.35",'))
    assert _tag("spark") != second, "a runtime dependency is installed"


def test_tags_follow_the_pins(repo_copy: Path) -> None:
    first = _tag("hive-metastore")
    assert _tag("hive-metastore", pins={**PINS, "postgresql": {"jdbc": "42.7.99"}}) != first
    assert _tag("dev-postgres", pins={**PINS, "postgresql": {"jdbc": "42.7.99"}}) == _tag(
        "dev-postgres"
    ), "only the pins an image declares count"


# --------------------------------------------------------------------------- Makefile
def test_make_targets_use_the_builder() -> None:
    proc = subprocess.run(
        ["make", "-n", "images", "base-images", "image-archive"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "logberg images build spark hive-metastore spark-operator" in out
    assert "logberg images base" in out
    assert "save spark hive-metastore spark-operator dev-postgres dev-s3 dev-kafka -o" in out
    makefiles = (REPO / "images" / "images.mk", REPO / "charts" / "k8s.mk", REPO / "Makefile")
    mk = "".join(path.read_text() for path in makefiles)
    for target in ("images", "image-spark", "image-hive-metastore", "image-spark-operator"):
        assert re.search(rf"^{target}:.*## ", mk, re.M), target
    assert "SPARK_OPERATOR_IMAGE ?= local" in mk and "CONTAINERS_CONF ?=" in mk


def test_containers_conf_is_written_for_this_machine(tmp_path: Path) -> None:
    conf = images.write_containers_conf(tmp_path / "containers.conf")
    parsed = tomllib.loads(conf.read_text())
    limits = parsed["containers"]["default_ulimits"]
    assert any(x.startswith("nofile=") for x in limits) and any(
        x.startswith("nproc=") for x in limits
    )
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert all(int(x.split(":")[1]) <= hard for x in limits if x.startswith("nofile="))
    if shutil.which("runc") or Path("/usr/sbin/runc").is_file():
        assert parsed["engine"]["runtime"] == "runc"
    assert parsed["containers"]["pids_limit"] == 0  # a kind node holds a whole cluster


def test_builder_setting_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    images.builder.cache_clear()
    monkeypatch.setenv(images.BUILDER_ENV, "kaniko")
    try:
        with pytest.raises(ConfigError, match="LOGBERG_IMAGE_BUILDER='kaniko'"):
            images.builder()
    finally:
        images.builder.cache_clear()


# ----------------------------------------------------------- the metastore entrypoint
CANNED = {
    "current": ("Metastore schema version:\t 3.1.0\nHive distribution version:\t 3.1.0", 0),
    "old": ("Metastore schema version:\t 3.0.0\nHive distribution version:\t 3.1.0", 0),
    "missing": (
        "org.apache.hadoop.hive.metastore.HiveMetaException: Failed to get schema version.\n"
        'Underlying cause: org.postgresql.util.PSQLException : ERROR: relation "VERSION" '
        "does not exist",
        1,
    ),
    "auth": (
        "org.apache.hadoop.hive.metastore.HiveMetaException: Failed to get schema version.\n"
        "Underlying cause: org.postgresql.util.PSQLException : FATAL: password "
        'authentication failed for user "hive"',
        1,
    ),
    "down": (
        "Underlying cause: org.postgresql.util.PSQLException : Connection to db:5432 "
        "refused. Check that the hostname and port are correct",
        1,
    ),
}


def _fake_java(tmp: Path, state: str) -> tuple[Path, Path]:
    """A JAVA_HOME whose java records its arguments and answers schematool -info."""
    home = tmp / "jdk"
    (home / "bin").mkdir(parents=True)
    calls = tmp / "calls.log"
    out, rc = CANNED[state]
    java = home / "bin" / "java"
    java.write_text(
        "#!/bin/sh\n"
        # the main class and its arguments (not the JVM options before it)
        f'echo "$*" | sed "s/.* org\\.apache/org.apache/" >> "{calls}"\n'
        'case "$*" in *" -info"*) cat <<"EOF"\n' + out + f"\nEOF\nexit {rc};; esac\nexit 0\n"
    )
    java.chmod(0o755)
    return home, calls


def _entry(
    tmp: Path, mode: str, state: str, **env: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    home, calls = _fake_java(tmp, state)
    template = tmp / "metastore-site.xml"
    template.write_text(
        '<?xml version="1.0"?>\n<configuration>\n'
        "  <property><name>javax.jdo.option.ConnectionURL</name>"
        "<value>jdbc:postgresql://db:5432/metastore</value></property>\n</configuration>\n"
    )
    base = {
        "PATH": os.environ["PATH"],
        "JAVA_HOME": str(home),
        "METASTORE_HOME": str(tmp / "hive"),
        "HIVE_CONF_DIR": str(tmp / "conf"),
        "METASTORE_SITE_TEMPLATE": str(template),
        "METASTORE_CREDENTIALS_POLL_SECONDS": "0",
    }
    proc = subprocess.run(
        ["bash", str(ENTRYPOINT), mode],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc, calls


PASSWORD = "p&<w>'\"d s3cr3t"


def _secret_files(tmp: Path, user: str = "hive", password: str = PASSWORD) -> dict[str, str]:
    (tmp / "secret").mkdir(exist_ok=True)
    (tmp / "secret" / "username").write_text(user)
    (tmp / "secret" / "password").write_text(password)
    return {
        "METASTORE_DB_USER_FILE": str(tmp / "secret" / "username"),
        "METASTORE_DB_PASSWORD_FILE": str(tmp / "secret" / "password"),
    }


def test_entrypoint_renders_credentials_from_files_privately(tmp_path: Path) -> None:
    proc, _ = _entry(tmp_path, "render", "current", **_secret_files(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr
    site = tmp_path / "conf" / "metastore-site.xml"
    assert stat.S_IMODE(site.stat().st_mode) == 0o600
    props = {p.findtext("name"): p.findtext("value") for p in ET.parse(site).getroot()}
    assert props["javax.jdo.option.ConnectionPassword"] == PASSWORD
    assert props["javax.jdo.option.ConnectionUserName"] == "hive"
    assert props["javax.jdo.option.ConnectionURL"] == "jdbc:postgresql://db:5432/metastore"


def test_entrypoint_takes_variables_for_docker_run(tmp_path: Path) -> None:
    env = {"METASTORE_DB_USER": "hive", "METASTORE_DB_PASSWORD": PASSWORD}
    proc, _ = _entry(tmp_path, "render", "current", **env)
    assert proc.returncode == 0, proc.stderr
    site = (tmp_path / "conf" / "metastore-site.xml").read_text()
    assert "p&amp;&lt;w&gt;&apos;&quot;d s3cr3t" in site


@pytest.mark.parametrize(
    ("change", "setting"),
    [
        ({"METASTORE_DB_PASSWORD_FILE": "/nonexistent/password"}, "METASTORE_DB_PASSWORD_FILE"),
        (
            {"METASTORE_DB_PASSWORD": "x"},
            "both METASTORE_DB_PASSWORD_FILE and METASTORE_DB_PASSWORD",
        ),
        ({"METASTORE_DB_USER_FILE": ""}, "METASTORE_DB_USER_FILE"),
        ({"METASTORE_CREDENTIALS_POLL_SECONDS": "soon"}, "METASTORE_CREDENTIALS_POLL_SECONDS"),
        ({"METASTORE_DB_TYPE": "mysql"}, "METASTORE_DB_TYPE"),
        ({"METASTORE_SITE_TEMPLATE": "/nonexistent.xml"}, "METASTORE_SITE_TEMPLATE"),
    ],
    ids=["missing-file", "both", "no-user", "poll", "db-type", "template"],
)
def test_entrypoint_names_the_wrong_setting(
    tmp_path: Path, change: dict[str, str], setting: str
) -> None:
    env = {**_secret_files(tmp_path), **change}
    proc, calls = _entry(tmp_path, "all", "current", **env)
    assert proc.returncode == 2, proc.stderr
    assert setting in proc.stderr
    assert not calls.exists(), "nothing ran before the settings were checked"


def test_entrypoint_refuses_an_empty_password_file(tmp_path: Path) -> None:
    env = _secret_files(tmp_path, password="")
    proc, _ = _entry(tmp_path, "all", "current", **env)
    assert proc.returncode == 2 and "METASTORE_DB_PASSWORD_FILE" in proc.stderr
    assert "is empty" in proc.stderr


@pytest.mark.parametrize(
    ("state", "mode", "rc", "then"),
    [
        ("current", "schema", 0, []),
        ("old", "schema", 0, ["-upgradeSchema"]),
        ("missing", "schema", 0, ["-initSchema"]),
        ("missing", "metastore", 2, []),
        ("old", "metastore", 2, []),
        ("auth", "all", 2, []),
        ("down", "all", 2, []),
    ],
)
def test_entrypoint_schema_steps(
    tmp_path: Path, state: str, mode: str, rc: int, then: list[str]
) -> None:
    proc, calls = _entry(tmp_path, mode, state, **_secret_files(tmp_path))
    assert proc.returncode == rc, proc.stderr
    tool = "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool -dbType postgres"
    lines = [ln.strip() for ln in calls.read_text().splitlines()]
    assert lines[0] == f"{tool} -info"
    assert lines[1:] == [f"{tool} {t}" for t in then]
    assert PASSWORD not in proc.stderr
    if state == "auth":
        assert "METASTORE_DB_PASSWORD_FILE" in proc.stderr
        assert "password authentication failed" in proc.stderr
    if state == "down":
        assert "javax.jdo.option.ConnectionURL" in proc.stderr


def test_entrypoints_are_bash_without_tracing() -> None:
    for script in (ENTRYPOINT, IMAGES / "spark" / "entrypoint.sh"):
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
        text = script.read_text()
        assert "set -x" not in text, "never trace: the environment holds credentials"
    assert subprocess.run(["sh", "-n", str(IMAGES / "common" / "resolve-jars.sh")]).returncode == 0


def test_the_kind_node_scripts_parse_and_never_trace() -> None:
    """The kind node's entrypoint, units' helpers and network daemon (a quoting slip in
    logberg-kind-net once crash-looped the node's network)."""
    scripts = [
        *sorted((IMAGES / "kind-node" / "rootfs" / "usr" / "local" / "bin").iterdir()),
        IMAGES / "kind-components" / "logberg-kind-net",
    ]
    assert len(scripts) == 4
    for script in scripts:
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{script.name}: {proc.stderr}"
        assert script.read_text().startswith("#!/bin/bash\n"), script.name
        assert "set -x" not in script.read_text(), script.name
        assert os.access(script, os.X_OK), f"{script.name} is not executable"


def test_checkov_images() -> None:
    if not CHECKOV.is_file():
        pytest.skip("checkov not installed: run `make checkov`")
    # Skips are inline `# checkov:skip=` comments in the Dockerfiles, each with its reason.
    proc = subprocess.run(
        [
            str(CHECKOV),
            "-d",
            str(IMAGES),
            "--framework",
            "dockerfile",
            "secrets",
            "--compact",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, BC_SKIP_MAPPING="TRUE"),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    for dockerfile in DOCKERFILES.values():
        for m in re.finditer(r"checkov:skip=(CKV_[A-Z0-9_]+)(.*)", dockerfile.read_text()):
            assert len(m.group(2).strip(": ")) > 20, f"{m.group(1)} needs a reason"


def test_a_node_image_tag_changes_with_its_base(tmp_path: Path) -> None:
    """The pause and kind components' tags hash the base's image id too: a remade base is a
    new tag, so the node's containerd never keeps serving an image built on the old one."""
    (tmp_path / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
    (tmp_path / "pause").write_bytes(b"\x7fELF")
    old, new = content_tag(tmp_path, "sha256:aa"), content_tag(tmp_path, "sha256:bb")
    assert old != new and old == content_tag(tmp_path, "sha256:aa")
    (tmp_path / "pause").write_bytes(b"\x7fELF2")
    assert content_tag(tmp_path, "sha256:aa") != old
