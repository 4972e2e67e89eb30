"""Static checks of images/: pins against versions.toml, build hygiene, the metastore
entrypoint's schema logic (run against a fake schematool) and checkov."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import tomllib
import yaml

from logberg.platform.settings import java_home

pytestmark = pytest.mark.static

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "images"
SPARK = IMAGES / "spark" / "Dockerfile"
HMS = IMAGES / "hive-metastore" / "Dockerfile"
ENTRYPOINT = IMAGES / "hive-metastore" / "entrypoint.sh"
CHECKOV = REPO / ".tools" / "checkov-venv" / "bin" / "checkov"
PINS = tomllib.loads((REPO / "jobs" / "logberg" / "versions.toml").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def arg_defaults(dockerfile: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in re.finditer(r"^ARG ([A-Z0-9_]+)=(.*)$", dockerfile.read_text(), re.M):
        out[m.group(1)] = m.group(2).strip().strip('"')
    return out


def instructions(dockerfile: Path) -> list[str]:
    """Dockerfile instructions with continuations joined, comments dropped."""
    text = re.sub(
        r"\\\n",
        " ",
        "\n".join(
            line
            for line in dockerfile.read_text().splitlines()
            if not line.lstrip().startswith("#")
        ),
    )
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_spark_dockerfile_pins_equal_versions_toml() -> None:
    args = arg_defaults(SPARK)
    spark = PINS["spark"]
    assert args["SPARK_IMAGE_TAG"] == spark["image_tag"]
    assert args["JDK_IMAGE"] == PINS["java"]["jdk_image"]
    assert spark["image_tag"].startswith(f"{spark['version']}-scala{spark['scala']}-")
    assert args["SPARK_MINOR"] == ".".join(spark["version"].split(".")[:2])
    assert args["SCALA"] == spark["scala"]
    assert args["ICEBERG"] == PINS["iceberg"]["version"]
    assert args["HADOOP"] == PINS["hadoop"]["version"]
    assert args["AWS_SDK"] == PINS["hadoop"]["aws_sdk"]
    assert args["POSTGRESQL_JDBC"] == PINS["postgresql"]["jdbc"]
    # Derived pin: the version hadoop-aws's POM manages (make setup resolves the same tree).
    resolved = sorted((REPO / ".tools" / "jars" / "s3").glob("analyticsaccelerator-s3-*.jar"))
    if resolved:
        assert resolved[0].name == f"analyticsaccelerator-s3-{args['ANALYTICS_ACCELERATOR']}.jar"
    extra = PINS["hadoop"].get("analytics_accelerator")
    if extra:
        assert args["ANALYTICS_ACCELERATOR"] == extra


def test_hive_dockerfile_pins_equal_versions_toml() -> None:
    args = arg_defaults(HMS)
    assert args["HIVE_IMAGE"] == PINS["hive"]["image"]
    assert args["POSTGRESQL_JDBC"] == PINS["postgresql"]["jdbc"]
    assert PINS["hive"]["version"].startswith("3."), (
        "Hive 4 dropped thrift get_table (see versions.toml)"
    )
    # Extra pins (not yet in versions.toml): compare once they are added there.
    for arg, key in (("HIVE_HADOOP", "hadoop"), ("AWS_JAVA_SDK_V1", "aws_java_sdk_v1")):
        assert re.fullmatch(r"\d+\.\d+\.\d+", args[arg]), arg
        if key in PINS["hive"]:
            assert args[arg] == PINS["hive"][key], arg
    text = HMS.read_text()
    assert "extra pin" in text and "HIVE-26537" in text


def test_images_agree_with_charts_and_make() -> None:
    hms_chart = yaml.safe_load((REPO / "charts" / "hive-metastore" / "Chart.yaml").read_text())
    lb_chart = yaml.safe_load((REPO / "charts" / "logberg" / "Chart.yaml").read_text())
    hms_values = yaml.safe_load((REPO / "charts" / "hive-metastore" / "values.yaml").read_text())
    lb_values = yaml.safe_load((REPO / "charts" / "logberg" / "values.yaml").read_text())
    proc = subprocess.run(
        ["make", "-n", "images"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert f"-t {hms_values['image']['repository']}:{hms_chart['appVersion']} " in proc.stdout + " "
    assert f"-t {lb_values['image']['repository']}:{lb_chart['appVersion']} " in proc.stdout + " "
    assert hms_chart["appVersion"] == PINS["hive"]["version"]
    assert lb_chart["appVersion"] == PYPROJECT["project"]["version"]


def test_spark_image_installs_logberg_without_a_second_pyspark() -> None:
    args = arg_defaults(SPARK)
    want = sorted(d for d in PYPROJECT["project"]["dependencies"] if not d.startswith("pyspark"))
    assert sorted(args["PY_DEPS"].split()) == want
    text = SPARK.read_text()
    assert "pip install --no-deps /tmp/logberg-src" in text
    assert (
        "COPY --chown=root:root --chmod=0644 jobs/spark_entry.py /opt/logberg/spark_entry.py"
        in text
    )


def test_spark_image_compiles_the_line_parser_with_a_jdk(tmp_path: Path) -> None:
    ins = instructions(SPARK)
    build = next(i for i in ins if "python3 -m logberg.platform.build.jvm /parser" in i)
    assert "JAVA_HOME=/opt/jdk" in build and "ln -s /opt/spark/jars/* /parser/" in build
    assert "COPY --from=jdk /opt/java/openjdk /opt/jdk" in ins
    assert "COPY --from=parser --chown=root:root /parser/logberg-parser.jar /opt/spark/jars/" in ins
    # The same command, here: Spark's jars in a folder, the parser jar built beside them.
    import pyspark

    for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar"):
        (tmp_path / jar.name).symlink_to(jar)
    env = dict(os.environ, JAVA_HOME=str(java_home()))
    proc = subprocess.run(
        [sys.executable, "-m", "logberg.platform.build.jvm", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "logberg-parser.jar").stat().st_size > 0


def test_dockerfiles_are_non_root_and_fetch_verified_jars() -> None:
    for dockerfile, user in ((SPARK, "185:185"), (HMS, "1000")):
        ins = instructions(dockerfile)
        users = [i.split(None, 1)[1] for i in ins if i.startswith("USER ")]
        assert users[-1] == user, f"{dockerfile}: final USER {users[-1]}"
        froms = [i for i in ins if i.startswith("FROM ")]
        assert all(":latest" not in f for f in froms)
        adds = [i for i in ins if i.startswith("ADD ")]
        urls = [u for a in adds for u in a.split()[1:] if u.startswith("$")]
        jars = [u for u in urls if u.endswith(".jar")]
        assert jars and len(urls) == 2 * len(jars), "every jar comes with its .sha1"
        assert all(u.startswith("${CENTRAL}/") for u in urls)
        assert arg_defaults(dockerfile)["CENTRAL"] == "https://repo1.maven.org/maven2"
        run = next(i for i in ins if "sha1sum -c" in i)
        assert f'test "${{count}}" -eq {len(jars)}' in run
        for i in ins:
            if i.startswith(("ENV ", "ARG ")):
                assert not re.search(r"(?i)(password|secret|token|access_key)", i), i
    ignore = (IMAGES / "spark" / "Dockerfile.dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*")] == "*", "allow-list: everything is excluded first"
    allowed = [line for line in ignore if line.startswith("!")]
    assert allowed and not any(x in "".join(allowed) for x in (".venv", ".tools", ".logberg"))


# ----------------------------------------------------------- the metastore entrypoint
def _fake_hive(tmp: Path, info_stdout: str, info_rc: int) -> tuple[Path, Path]:
    home = tmp / "hive"
    (home / "bin").mkdir(parents=True)
    calls = tmp / "calls.log"
    tool = home / "bin" / "schematool"
    tool.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{calls}"\n'
        'case "$*" in *-info*) cat <<"EOF"\n' + info_stdout + "\nEOF\n"
        f"exit {info_rc};; esac\nexit 0\n"
    )
    tool.chmod(0o755)
    return home, calls


def _run(
    tmp: Path, mode: str, home: Path, password: str = "p&<w>'\"d"
) -> subprocess.CompletedProcess[str]:
    template = tmp / "metastore-site.xml"
    template.write_text(
        '<?xml version="1.0"?>\n<configuration>\n'
        "  <property><name>a</name><value>b</value></property>\n</configuration>\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HIVE_HOME": str(home),
        "HIVE_CONF_DIR": str(tmp / "conf"),
        "METASTORE_SITE_TEMPLATE": str(template),
        "METASTORE_DB_TYPE": "postgres",
        "METASTORE_DB_USER": "hive",
        "METASTORE_DB_PASSWORD": password,
    }
    return subprocess.run(
        ["sh", str(ENTRYPOINT), mode], env=env, capture_output=True, text=True, timeout=60
    )


def test_entrypoint_renders_credentials_privately(tmp_path: Path) -> None:
    home, _ = _fake_hive(tmp_path, "", 0)
    password = "p&<w>'\"d"
    proc = _run(tmp_path, "render", home, password)
    assert proc.returncode == 0, proc.stderr
    assert password not in proc.stdout + proc.stderr
    site = tmp_path / "conf" / "hive-site.xml"
    assert stat.S_IMODE(site.stat().st_mode) == 0o600
    props = {p.findtext("name"): p.findtext("value") for p in ET.parse(site).getroot()}
    assert props["javax.jdo.option.ConnectionPassword"] == password
    assert props["javax.jdo.option.ConnectionUserName"] == "hive"
    assert props["a"] == "b"
    assert site.read_text().startswith("<?xml")


def test_entrypoint_refuses_postgres_without_credentials(tmp_path: Path) -> None:
    home, _ = _fake_hive(tmp_path, "", 0)
    proc = _run(tmp_path, "render", home, password="")
    assert proc.returncode == 2 and "METASTORE_DB_PASSWORD" in proc.stderr


@pytest.mark.parametrize(
    ("info", "rc", "action"),
    [
        ("Metastore schema version:\t 3.1.0\nHive distribution version:\t 3.1.0", 0, None),
        (
            "Metastore schema version:\t 3.0.0\nHive distribution version:\t 3.1.0",
            0,
            "-upgradeSchema",
        ),
        (
            "org.apache.hadoop.hive.metastore.HiveMetaException: Failed to get schema version.",
            1,
            "-initSchema",
        ),
    ],
    ids=["current", "upgrade", "init"],
)
def test_entrypoint_schema_is_idempotent(
    tmp_path: Path, info: str, rc: int, action: str | None
) -> None:
    home, calls = _fake_hive(tmp_path, info, rc)
    proc = _run(tmp_path, "schema", home)
    assert proc.returncode == 0, proc.stderr
    lines = calls.read_text().splitlines()
    assert lines[0] == "-dbType postgres -info"
    assert lines[1:] == ([f"-dbType postgres {action}"] if action else [])


def test_entrypoint_shell_syntax() -> None:
    assert subprocess.run(["sh", "-n", str(ENTRYPOINT)], capture_output=True).returncode == 0
    text = ENTRYPOINT.read_text()
    assert "set -x" not in text, "never trace: the password is in the environment"
    assert 'exec "$hive_home/bin/hive"' in text


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
    for dockerfile in (SPARK, HMS):
        for m in re.finditer(r"checkov:skip=(CKV_[A-Z0-9_]+)(.*)", dockerfile.read_text()):
            assert len(m.group(2).strip(": ")) > 20, f"{m.group(1)} needs a reason"
