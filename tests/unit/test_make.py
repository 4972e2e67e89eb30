"""The Makefiles and the scripts their recipes call: one entry Makefile whose includes are
required, `make help` listing every target, one checkov install, every target expanding
under `make -n`, and the fail-fast paths of the scripts (each names the missing tool or
setting). Nothing here reaches a cluster, a registry or AWS."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make")
BASH = shutil.which("bash") or "/bin/bash"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

pytestmark = pytest.mark.skipif(MAKE is None, reason="make not installed")

# `make help` at 3cfab01, before the split (`git show 3cfab01:Makefile`, charts/k8s.mk,
# eks/eks.mk, charts/cluster.mk): the split keeps every one of these targets.
TARGETS_BEFORE = {
    "help", "setup", "tools", "up", "down", "status", "sql", "demo", "report",
    "report-screenshot", "browser", "test", "test-fast", "lint", "bench", "bench-tools",
    "clean", "images", "image-spark", "image-hive-metastore", "image-spark-operator",
    "image-archive", "base-images", "test-images", "k8s-deploy", "k8s-demo", "sql-k8s",
    "k8s-examples", "kind-node-image", "kind-up", "kind-demo", "kind-down", "kind-status",
    "checkov", "k8s-static",
    "eks-tools", "eks-init", "eks-lock", "eks-plan", "eks-up", "eks-values", "eks-push",
    "eks-deploy", "eks-demo", "eks-down", "eks-minio", "eks-checkov-venv", "eks-lint",
    "cluster-build", "cluster-up", "cluster-down", "cluster-status", "cluster-load",
    "cluster-env",
}  # fmt: skip
# Targets added since: `make prometheus` (the metrics tests' Prometheus and Pushgateway),
# `make ui-k8s` (`logberg k8s ui`: the History Server and the drivers' UIs), `make docs`,
# `docs-serve` and `docs-gen` (the manual, docs/), `make history-screenshot` (its picture of
# the History Server).
ADDED_SINCE = {"prometheus", "ui-k8s", "docs", "docs-serve", "docs-gen", "history-screenshot"}
# Targets retired since: the process cluster's (charts/cluster.mk); kind is the local cluster.
RETIRED = {
    "cluster-build", "cluster-up", "cluster-down", "cluster-status", "cluster-load",
    "cluster-env",
}  # fmt: skip

SCRIPTS = sorted(
    p
    for d in ("tests/tools", "images/scripts", "charts/scripts", "eks/scripts")
    for p in (REPO / d).glob("*.sh")
    if p.name != "lib.sh"  # eks/scripts/lib.sh is sourced, not run
)


def make(*args: str, home: Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MAKEFLAGS": "", "CHECKPOINT_DISABLE": "1"}
    assert MAKE
    return subprocess.run(
        [MAKE, "--no-print-directory", *args, f"LOGBERG_HOME={home}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run(
    script: str, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """A script of the repository, with exactly ENV (plus PATH and HOME) as its environment."""
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    return subprocess.run(
        [str(REPO / script), *args],
        env={**base, **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def included() -> list[str]:
    return re.findall(r"^include\s+(\S+)\s*$", (REPO / "Makefile").read_text(), re.M)


def help_targets(home: Path) -> list[str]:
    proc = make("help", home=home)
    assert proc.returncode == 0, proc.stderr
    return [line.split()[0] for line in ANSI.sub("", proc.stdout).splitlines() if line.strip()]


# ------------------------------------------------------------------ the Makefiles
def test_help_is_the_default_goal_and_lists_the_same_targets_as_before(tmp_path: Path) -> None:
    listed = help_targets(tmp_path)
    assert len(listed) == len(set(listed)), "a target is listed twice"
    assert set(listed) == (TARGETS_BEFORE | ADDED_SINCE) - RETIRED
    default = make(home=tmp_path)
    assert default.returncode == 0 and ANSI.sub("", default.stdout).split()[0] == "help"


def test_help_sees_every_included_file(tmp_path: Path) -> None:
    listed = set(help_targets(tmp_path))
    assert included() == [
        "images/images.mk",
        "charts/k8s.mk",
        "eks/eks.mk",
        "bench/bench.mk",
    ]
    for name in ["Makefile", *included()]:
        text = (REPO / name).read_text()
        documented = set(re.findall(r"^([a-zA-Z0-9_-]+):.*## ", text, re.M))
        assert documented, f"{name} has no documented target"
        assert documented <= listed, (name, documented - listed)
        # Every target a file defines is documented (`make help` is the only index).
        defined = set(re.findall(r"^([a-z0-9-]+):(?!=)", text, re.M))
        assert defined == documented, (name, defined - documented)


def test_includes_are_required(tmp_path: Path) -> None:
    """A missing included file stops make, naming it (no `-include`, which skips it)."""
    for name in ["Makefile", *included()]:
        text = (REPO / name).read_text()
        assert not re.search(r"^\s*(-include|sinclude)\b", text, re.M), name
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    assert make("help", home=tmp_path, cwd=tmp_path).returncode == 0
    for name in included():
        (tmp_path / name).rename(tmp_path / f"{name}.away")
        proc = make("help", home=tmp_path, cwd=tmp_path)
        (tmp_path / f"{name}.away").rename(tmp_path / name)
        assert proc.returncode != 0, f"make runs without {name}"
        assert name in proc.stderr and "No such file" in proc.stderr


def test_settings_are_defined_once(tmp_path: Path) -> None:
    """No setting is assigned in two files: the shared ones live in the root Makefile."""
    seen: dict[str, str] = {}
    for name in ["Makefile", *included()]:
        text = (REPO / name).read_text()
        for var in re.findall(r"^([A-Z][A-Z0-9_]*)\s*(?:\?=|:=|=)", text, re.M):
            assert var not in seen, f"{var} is set in {seen[var]} and {name}"
            seen[var] = name
    # The user-facing settings are overridable (?=); checkov has one venv and one version.
    for var in ("EKS_IMAGES", "ALL_IMAGES", "K8S_KUBECONFIG", "CHECKOV_VERSION", "CHECKOV_VENV"):
        assert re.search(rf"^{var}\s*\?=", (REPO / seen[var]).read_text(), re.M), var
    assert not {"EKS_CHECKOV_VENV", "EKS_CHECKOV_PIN", "EKS_WRITE_VALUES"} & set(seen)


@pytest.mark.parametrize(
    "args",
    [
        ("demo",),
        ("test",),
        ("test-fast",),
        ("lint",),
        ("bench",),
        ("setup",),
        ("report",),
        ("report-screenshot",),
        ("history-screenshot",),
        ("images",),
        ("image-archive",),
        ("base-images",),
        ("test-images",),
        ("k8s-deploy",),
        ("k8s-deploy", "K8S_TARGET=kind"),
        ("k8s-deploy", "K8S_TARGET=eks"),
        ("k8s-demo",),
        ("sql-k8s",),
        ("docs",),
        ("docs-serve",),
        ("docs-gen",),
        ("k8s-static",),
        ("kind-up",),
        ("kind-demo",),
        ("kind-down",),
        ("kind-node-image",),
        ("eks-up", "EKS_TF=/bin/true"),
        ("eks-up", "EKS_TF=/bin/true", "EKS_DEPLOY=no"),
        ("eks-plan", "EKS_TF=/bin/true"),
        ("eks-push", "EKS_TF=/bin/true"),
        ("eks-deploy", "EKS_TF=/bin/true"),
        ("eks-demo", "EKS_TF=/bin/true"),
        ("eks-down", "EKS_TF=/bin/true"),
        ("eks-lint", "EKS_TF=/bin/true"),
        ("eks-lock", "EKS_TF=/bin/true"),
    ],
    ids=" ".join,
)
def test_targets_expand(args: tuple[str, ...], tmp_path: Path) -> None:
    proc = make("-n", *args, home=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "warning" not in proc.stderr.lower(), proc.stderr


def test_every_make_command_of_the_readmes_expands(tmp_path: Path) -> None:
    listed = set(help_targets(tmp_path))
    readmes = ["README.md", "charts/README.md", "eks/README.md", "images/README.md"]
    named: set[str] = set()
    pages = [  # the manual's, but the generated reference (help text's prose: "make an ...")
        p.relative_to(REPO).as_posix()
        for p in (REPO / "docs" / "pages").rglob("*.md")
        if p.parent.name != "reference"
    ]
    for readme in [*readmes, "bench/README.md", *pages]:
        # Commands: a code line or an inline `make TARGET ...` (not prose such as "make most").
        text = (REPO / readme).read_text()
        named |= set(re.findall(r"(?:^\s*|`)make ((?:[a-z][a-z0-9-]+ ?)+)", text, re.M))
    named = {target for words in named for target in words.split()}
    assert named <= listed, named - listed
    proc = make("-n", *sorted(named), "EKS_TF=/bin/true", "CLUSTER_IMAGES=a:1", home=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_one_checkov_install_for_charts_images_and_eks(tmp_path: Path) -> None:
    recipes = {
        name: re.findall(r"^\t.*$", (REPO / name).read_text(), re.M)
        for name in ["Makefile", *included()]
    }
    installs = [(n, r) for n, lines in recipes.items() for r in lines if "checkov" in r.lower()]
    assert [n for n, r in installs if "install-checkov.sh" in r] == ["Makefile"]
    assert not [r for _, r in installs if "pip" in r]
    venv = tmp_path / "tools" / "checkov-venv"
    for target in ("checkov", "eks-checkov-venv", "lint", "k8s-static", "eks-lint"):
        out = make("-n", target, f"TOOLS={tmp_path}/tools", "EKS_TF=/bin/true", home=tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stdout.count(f'install-checkov.sh "{venv}" "3.3.30"') == 1, target
    lint = make("-n", "eks-lint", f"TOOLS={tmp_path}/tools", "EKS_TF=/bin/true", home=tmp_path)
    assert f'"{venv}/bin/checkov" -d ' in lint.stdout


def test_python_modules_are_named_in_one_variable_each(tmp_path: Path) -> None:
    out = make(
        "-n",
        "images",
        "test-images",
        "eks-push",
        "report-screenshot",
        "history-screenshot",
        "bench",
        "EKS_TF=/bin/true",
        "BROWSER_MODULE=renamed.browser",
        "BENCH_MODULE=renamed_bench",
        home=tmp_path,
    ).stdout
    assert "logberg_platform" not in out and "tests.helpers" not in out
    # images, test-images, eks-push; make's containers.conf recipe is there only while that
    # file is missing (a checkout whose podman configuration was never written).
    calls = [line for line in out.splitlines() if "bin/logberg images" in line]
    assert len([line for line in calls if " containers-conf " not in line]) == 3
    assert "-m renamed.browser " in out and "-m renamed_bench" in out
    assert "-m renamed.browser --history docs/pages/img/history-server.png" in out


# ------------------------------------------------------------------ the scripts
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_scripts_are_strict_bash(script: Path) -> None:
    assert subprocess.run([BASH, "-n", str(script)], capture_output=True).returncode == 0
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and os.access(script, os.X_OK)
    assert "\nset -euo pipefail\n" in text and "set -x" not in text
    assert subprocess.run([BASH, "-n", str(REPO / "eks/scripts/lib.sh")]).returncode == 0


def _fake_checkov_venv(venv: Path, version: str) -> None:
    """The state a finished install leaves that install-checkov.sh looks at: an executable
    bin/checkov answering --version. Building the real one needs PyPI and minutes."""
    (venv / "bin").mkdir(parents=True)
    checkov = venv / "bin" / "checkov"
    checkov.write_text(f"#!/bin/sh\necho {version}\n")
    checkov.chmod(0o755)


def test_checkov_install_keeps_a_ready_venv(tmp_path: Path) -> None:
    venv = tmp_path / "checkov-venv"
    _fake_checkov_venv(venv, "3.3.30")
    # No pip in that venv and no usable python: anything but "ready" would fail.
    for _ in range(2):
        proc = run(
            "tests/tools/install-checkov.sh", str(venv), "3.3.30", env={"PYTHON": "/nonexistent"}
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == f"checkov 3.3.30 ready in {venv}\n"
    # The same through make, with the pinned version.
    proc = make("checkov", f"CHECKOV_VENV={venv}", "PYTHON=/nonexistent", home=tmp_path)
    assert proc.returncode == 0 and proc.stdout == f"checkov 3.3.30 ready in {venv}\n"


def test_checkov_install_replaces_another_version(tmp_path: Path) -> None:
    venv = tmp_path / "checkov-venv"
    _fake_checkov_venv(venv, "2.0.0")
    python = tmp_path / "no-python"
    proc = run("tests/tools/install-checkov.sh", str(venv), "3.3.30", env={"PYTHON": str(python)})
    assert proc.returncode != 0 and "ready" not in proc.stdout
    assert str(python) in proc.stderr  # it went on to create the venv anew


def test_the_venv_holds_its_packages_bytecode() -> None:
    """The venv's packages come compiled (`--compile-bytecode`): where PYTHONDONTWRITEBYTECODE
    is set, as on the CI machine, nothing else writes a .pyc, and every Python process of
    the tests would compile pyspark again (600 core-s of a `make test`, 32f93bc)."""
    import importlib.util

    import pyspark.sql.dataframe

    source = pyspark.sql.dataframe.__file__
    assert source is not None
    assert Path(importlib.util.cache_from_source(source)).is_file(), source


def test_checkov_install_takes_uv_from_its_cache_first_then_online(tmp_path: Path) -> None:
    """With UV, uv installs the pinned checkov into the venv: --offline first (seconds from a
    warm cache), online when that fails. The uv here is a script that logs its arguments
    and, online only, leaves the bin/checkov a real install would."""
    venv = tmp_path / "checkov-venv"
    calls = tmp_path / "calls"
    uv = tmp_path / "uv"
    uv.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        'case " $* " in *" --offline "*) exit 1 ;; esac\n'
        f"mkdir -p {venv}/bin && printf '#!/bin/sh\\necho 3.3.30\\n' > {venv}/bin/checkov\n"
        f"chmod +x {venv}/bin/checkov\n"
    )
    uv.chmod(0o755)
    proc = run("tests/tools/install-checkov.sh", str(venv), "3.3.30", env={"UV": str(uv)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"checkov 3.3.30 installed in {venv}\n"
    py = f"pip install -q --compile-bytecode --python {venv}/bin/python"
    assert calls.read_text().splitlines() == [
        f"{py} --offline checkov==3.3.30",
        f"{py} checkov==3.3.30",
    ]


def _logging_uv(tmp_path: Path, offline_works: bool) -> tuple[Path, Path]:
    """A uv that logs its arguments and fails --offline unless `offline_works`."""
    calls, uv = tmp_path / "calls", tmp_path / "uv"
    offline = "exit 0" if offline_works else "echo 'no cache' >&2; exit 1"
    uv.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\ncase " $* " in *" --offline "*) {offline} ;; esac\n'
    )
    uv.chmod(0o755)
    return uv, calls


@pytest.mark.parametrize("offline_works", [True, False], ids=["cached", "not-cached"])
def test_uv_install_tries_the_cache_alone_then_online(tmp_path: Path, offline_works: bool) -> None:
    """The Makefile's venv and checkov's share tests/tools/uv-install.sh: one offline try,
    and online only when it fails; the offline failure's message is not shown."""
    uv, calls = _logging_uv(tmp_path, offline_works)
    proc = run("tests/tools/uv-install.sh", str(uv), "/v/bin/python", "-e", ".[dev]", "x==1")
    assert proc.returncode == 0 and "no cache" not in proc.stderr, proc.stderr
    py = "pip install -q --compile-bytecode --python /v/bin/python"
    online = [] if offline_works else [f"{py} -e .[dev] x==1"]
    assert calls.read_text().splitlines() == [f"{py} --offline -e .[dev] x==1", *online]
    # The Makefile's venv recipe goes through it, with the venv's own uv and python.
    out = make("-n", "-B", ".venv/.installed", home=tmp_path).stdout
    uv_install = "tests/tools/uv-install.sh .venv/bin/uv .venv/bin/python"
    assert f"{uv_install} -e '.[dev,platform,connect]' -e ./jobs/platform\n" in out


def test_uv_install_names_a_missing_argument_or_uv(tmp_path: Path) -> None:
    proc = run("tests/tools/uv-install.sh", str(tmp_path / "uv"), "python")
    assert proc.returncode == 2 and "usage: uv-install.sh UV PYTHON PACKAGE..." in proc.stderr
    proc = run("tests/tools/uv-install.sh", str(tmp_path / "uv"), "python", "x")
    assert proc.returncode == 2 and f"uv is not an executable: '{tmp_path / 'uv'}'" in proc.stderr


def test_checkov_install_fails_fast_on_bad_settings(tmp_path: Path) -> None:
    proc = run("tests/tools/install-checkov.sh", str(tmp_path / "v"), "latest")
    assert proc.returncode == 2 and "CHECKOV_VERSION" in proc.stderr
    proc = run("tests/tools/install-checkov.sh", str(tmp_path / "v"))
    assert proc.returncode != 0 and "usage: install-checkov.sh VENV VERSION" in proc.stderr
    assert not (tmp_path / "v").exists()


def test_apt_install_skips_a_present_command_and_checks_its_arguments() -> None:
    proc = run("tests/tools/apt-install.sh", "--no-install-recommends", "nope", "nope,bash", "x")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    proc = run("tests/tools/apt-install.sh", "goaccess", "goaccess")
    assert proc.returncode == 2 and "usage: apt-install.sh" in proc.stderr


def test_open_prints_where_the_report_is_without_a_desktop(tmp_path: Path) -> None:
    if os.uname().sysname == "Darwin":
        pytest.skip("macOS opens it")
    proc = run("tests/tools/open.sh", str(tmp_path / "report.html"))
    assert proc.returncode == 0 and proc.stdout == f"open {tmp_path}/report.html in a browser\n"


def test_test_images_without_a_builder_says_the_container_tests_are_skipped() -> None:
    # `false` as the builder: `builder` fails, so nothing is built.
    proc = run("images/scripts/test-images.sh", "spark", env={"IMAGES": "false"})
    assert proc.returncode == 0
    assert proc.stdout.startswith("no container builder (docker with buildx, or podman): ")
    assert proc.stdout.endswith(": the container tests will be skipped\n")
    proc = run("images/scripts/test-images.sh", "spark")
    assert proc.returncode != 0 and "IMAGES" in proc.stderr


def test_k8s_scripts_name_what_is_missing() -> None:
    proc = run("charts/scripts/k8s-demo.sh", "1800", env={"K8S": "logberg k8s"})
    assert proc.returncode != 0 and "KC" in proc.stderr
    proc = run("charts/scripts/k8s-demo.sh", "1800", env={"KC": "kubectl"})
    assert proc.returncode != 0 and "K8S" in proc.stderr
    proc = run("charts/scripts/k8s-demo.sh", "soon", env={"KC": "kubectl", "K8S": "logberg"})
    assert proc.returncode == 2 and "WAIT_SECONDS" in proc.stderr
    proc = run("charts/scripts/sql-k8s.sh", stdin="select 1;")
    assert proc.returncode != 0 and "KC" in proc.stderr


def test_make_names_a_missing_kubectl_or_kind(tmp_path: Path) -> None:
    proc = make("k8s-demo", "KUBECTL=/nonexistent/kubectl", home=tmp_path)
    assert proc.returncode != 0
    assert "error: '/nonexistent/kubectl' not found. Run 'make tools'" in proc.stderr
    proc = make("kind-down", "KIND=/nonexistent/kind", "KIND_CLUSTER=lb-unit-absent", home=tmp_path)
    assert proc.returncode != 0 and "KIND=/nonexistent/kind: not found" in proc.stdout + proc.stderr


# ------------------------------------------------------------------ eks/scripts
def test_eks_tools_names_the_missing_tool_or_file(tmp_path: Path) -> None:
    proc = make("eks-tools", "EKS_TF=", home=tmp_path)
    assert proc.returncode != 0
    assert "error: neither terraform nor tofu is on PATH" in proc.stderr
    assert "make eks-up EKS_TF=$HOME/bin/tofu" in proc.stderr
    no_aws = run("eks/scripts/tools.sh", env={"EKS_TF": "/bin/true", "PATH": "/usr/bin:/bin"})
    if shutil.which("aws", path="/usr/bin:/bin") is None:
        assert no_aws.returncode == 1 and "the AWS CLI (aws) is not on PATH" in no_aws.stderr
    if shutil.which("aws") is None:
        pytest.skip("the AWS CLI is not installed here: the EKS_VARS check comes after it")
    missing = tmp_path / "dev.tfvars"
    proc = make("eks-tools", "EKS_TF=/bin/true", f"EKS_VARS={missing}", home=tmp_path)
    assert proc.returncode != 0 and f"error: EKS_VARS={missing} does not exist" in proc.stderr
    missing.write_text("")
    proc = make("eks-tools", "EKS_TF=/bin/true", f"EKS_VARS={missing}", home=tmp_path)
    assert proc.returncode == 0 and re.match(r"using /bin/true \(\), aws aws-cli/", proc.stdout)


def test_eks_scripts_name_the_missing_setting(tmp_path: Path) -> None:
    tf = {"EKS_TF": "/bin/true", "EKS_DIR": str(REPO / "eks")}
    cases = [
        ("eks/scripts/push.sh", {}, "EKS_TF is not set"),
        ("eks/scripts/push.sh", {"EKS_TF": "/bin/true"}, "EKS_DIR is not set"),
        ("eks/scripts/push.sh", {**tf, "IMAGES": "x"}, "DOCKER is not set"),
        ("eks/scripts/push.sh", {**tf, "DOCKER": "docker"}, "IMAGES is not set"),
        ("eks/scripts/deploy-vars.sh", tf, "EKS_CONTEXT is not set"),
        ("eks/scripts/demo.sh", {**tf, "EKS_CONTEXT": "c"}, "LOGBERG is not set"),
        ("eks/scripts/demo.sh", {**tf, "EKS_CONTEXT": "c", "LOGBERG": "l"}, "EKS_DEMO_DIR"),
        ("eks/scripts/down.sh", {"EKS_CONFIRM": "yes"}, "EKS_TF is not set"),
    ]
    for script, env, message in cases:
        proc = run(script, "spark", env=env)
        assert proc.returncode == 2 and message in proc.stderr, (script, env, proc.stderr)
    proc = run("eks/scripts/push.sh", env={**tf, "DOCKER": "docker", "IMAGES": "x"})
    assert proc.returncode == 2 and "usage: push.sh IMAGE..." in proc.stderr
    proc = run("eks/scripts/deploy-vars.sh", env={**tf, "EKS_CONTEXT": "c"})
    assert proc.returncode != 0 and "usage: deploy-vars.sh VARS_FILE" in proc.stderr


def test_eks_push_stops_before_building_without_docker(tmp_path: Path) -> None:
    # A docker that does not answer (`false`): nothing is built, the message says why.
    env = {"EKS_TF": "/bin/true", "EKS_DIR": str(REPO / "eks"), "DOCKER": "false"}
    proc = run("eks/scripts/push.sh", "spark", env={**env, "IMAGES": "false"})
    assert proc.returncode == 1
    assert "error: no Docker daemon answers ('false info' failed)" in proc.stderr
    assert "build" not in proc.stdout
    if shutil.which("aws") is None:
        pytest.skip("the AWS CLI is not installed here: eks-tools stops first")
    conf = tmp_path / "containers.conf"
    proc = make(
        "eks-push",
        "EKS_TF=/bin/true",
        "DOCKER=/nonexistent/docker",
        f"CONTAINERS_CONF={conf}",
        home=tmp_path,
    )
    assert proc.returncode != 0
    assert "error: '/nonexistent/docker' not found. Install Docker with BuildKit" in proc.stderr


def test_eks_deploy_writes_no_vars_when_terraform_fails(tmp_path: Path) -> None:
    env = {"EKS_TF": "false", "EKS_DIR": str(REPO / "eks"), "EKS_CONTEXT": "c"}
    proc = run("eks/scripts/deploy-vars.sh", str(tmp_path / "deploy.vars"), env=env)
    assert proc.returncode != 0 and not (tmp_path / "deploy.vars").exists()
    assert "update-kubeconfig" not in proc.stdout


def test_eks_down_refuses_without_confirmation(tmp_path: Path) -> None:
    env = {"EKS_TF": "/bin/true", "EKS_DIR": str(REPO / "eks"), "EKS_CONTEXT": "c"}
    for confirm in ({}, {"EKS_CONFIRM": "y"}):
        proc = run("eks/scripts/down.sh", env={**env, **confirm})
        assert proc.returncode == 1 and "Refusing to destroy" in proc.stderr
        assert "make eks-down EKS_CONFIRM=yes" in proc.stderr and proc.stdout == ""
    # Confirmed, but init fails: it stops there, before destroy.
    proc = run("eks/scripts/down.sh", env={**env, "EKS_TF": "false", "EKS_CONFIRM": "yes"})
    assert proc.returncode != 0 and "init -input=false" in proc.stdout
    assert "destroy" not in proc.stdout
    if shutil.which("aws") is not None:
        proc = make("eks-down", "EKS_TF=/bin/true", home=tmp_path)
        assert proc.returncode != 0 and "Refusing to destroy" in proc.stderr


def test_eks_values_writer(tmp_path: Path) -> None:
    script = REPO / "eks" / "scripts" / "write_values.py"
    python = REPO / ".venv" / "bin" / "python"
    exe = str(python) if python.exists() else shutil.which("python3") or "python3"

    def write(payload: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [exe, str(script), *args], input=payload, text=True, capture_output=True, timeout=60
        )

    values = {"spark-operator": "a: 1\n", "logberg": "b: 2\n", "hive-metastore": "c: 3\n"}
    proc = write(json.dumps(values), str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"wrote {tmp_path}/values-{r}.yaml" for r in ("hive-metastore", "logberg", "spark-operator")
    ]
    for release, text in values.items():
        assert (tmp_path / f"values-{release}.yaml").read_text() == text
    # A name that could leave DIR: nothing at all is written.
    out = tmp_path / "bad"
    out.mkdir()
    proc = write(json.dumps({"logberg": "x", "../escape": "y"}), str(out))
    assert proc.returncode == 1 and "unexpected release name '../escape'" in proc.stderr
    assert list(out.iterdir()) == [] and not (tmp_path / "escape.yaml").exists()
    proc = write("{}")
    assert proc.returncode == 2 and "usage: write_values.py DIR" in proc.stderr
