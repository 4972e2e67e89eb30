"""The kind cluster of the end-to-end tests: brought up and taken down through the same
make targets a user runs (`make kind-up`, `make kind-down`), under its own name, so a
user's `logberg` cluster is never touched."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

NAME = os.environ.get("LOGBERG_TEST_KIND_CLUSTER", "logberg-e2e")
# The release's namespace, not the default: every name must follow K8S_NAMESPACE.
NAMESPACE = "lbtest"
OPERATOR_NAMESPACE = "lbtest-operator"
# The session's files: its kubeconfig (kind writes the cluster's context there, not into
# the user's ~/.kube/config), the deploy steps' outputs, the Pushgateway's data.
HOME = Path(f"/tmp/{NAME}-tests")
KEEP = os.environ.get("LOGBERG_TEST_KEEP_CLUSTER", "") not in ("", "0")
TIMEOUT = 3600
# The host as the session's `kind` fixture found it before it made the cluster (None: the
# cluster ran already, or no test asked for it): test_kind_down.py compares against it.
BEFORE: dict[str, dict[str, list[str]]] = {}


@dataclass(frozen=True)
class Kind:
    name: str = NAME

    @property
    def context(self) -> str:
        return f"kind-{self.name}"

    def make_vars(self) -> list[str]:
        return [
            "K8S_TARGET=kind",
            f"KIND_CLUSTER={self.name}",
            f"K8S_NAMESPACE={NAMESPACE}",
            f"OPERATOR_NAMESPACE={OPERATOR_NAMESPACE}",
        ]

    def env(self) -> dict[str, str]:
        """kind, kubectl and helm from the tools directory; the session's kubeconfig."""
        return dict(
            os.environ,
            PATH=f"{REPO / '.tools' / 'bin'}:{os.environ['PATH']}",
            KUBECONFIG=str(HOME / "kubeconfig"),
        )

    def make(self, *targets: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
        """A make target as a user runs it; its output, whatever it exits."""
        return subprocess.run(
            ["make", "--no-print-directory", *targets, *self.make_vars()],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
        )

    def logberg(self, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(REPO / ".venv" / "bin" / "logberg"), *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
        )

    def running(self) -> bool:
        proc = self.logberg("kind", "status", "--name", self.name)
        return "running" in proc.stdout


def kubectl() -> str:
    built = REPO / ".tools" / "bin" / "kubectl"
    return str(built) if built.is_file() else "kubectl"


# What a kind cluster may change on the host, and must give back: firewall rules, network
# links, mounts, listening ports. Lines of other tenants of a shared machine (the process
# cluster's tests run in another lane) are left out by name.
FOREIGN = re.compile(r"lbk|logberg-test|cni-podman|KUBE-|CNI-|cali|flannel")
# The container engine's own storage, which it mounts and unmounts as it likes (podman's
# overlay directory, while any container of the machine runs).
ENGINE_STORAGE = re.compile(
    r"^(/var/lib/containers/storage|/run/containers/storage|/var/lib/docker)/"
)
ENGINE = re.compile(r'"(conmon|podman|netavark|aardvark-dns|docker-proxy|dockerd|rootlessport)"')


def host_picture() -> dict[str, list[str]]:
    def lines(*cmd: str) -> list[str]:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        return sorted(ln for ln in proc.stdout.splitlines() if not FOREIGN.search(ln))

    rules = [
        re.sub(r"\[\d+:\d+\]", "", ln)
        for family in ("iptables-save", "ip6tables-save", "iptables-legacy-save")
        for ln in lines(family)
        if not ln.startswith("#")
    ]
    return {
        "rules": sorted(set(rules)),
        "links": [re.sub(r"^\d+: (\S+?)(@\S+)?:.*", r"\1", ln) for ln in lines("ip", "-o", "link")],
        "mounts": sorted(
            m
            for m in (ln.split()[4] for ln in Path("/proc/self/mountinfo").read_text().splitlines())
            if not ENGINE_STORAGE.match(m)
        ),
        # The container engine's own listeners (a published API server port, the network's
        # DNS): the other lane's tests open and close ports of their own meanwhile.
        "listening": [
            ln.split()[4]
            for ln in lines("ss", "-ltnupH")
            if len(ln.split()) > 4 and ENGINE.search(ln)
        ],
    }
