"""The cluster's certificates and kubeconfigs, made with the openssl command line.

One CA signs every certificate (and, through kube-controller-manager, kubelet CSRs).
The set is regenerated when the addresses or names it encodes change; otherwise `up`
reuses it, so a restarted cluster keeps its identity.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from logberg.errors import ServiceError
from logberg_platform.cluster.cluster_settings import ClusterSettings

DAYS = 3650


@dataclass(frozen=True)
class Cert:
    name: str  # file stem: <name>.crt / <name>.key
    cn: str
    org: str = ""
    ips: tuple[str, ...] = ()
    dns: tuple[str, ...] = ()
    server: bool = False
    client: bool = False


def certs(s: ClusterSettings) -> list[Cert]:
    api_dns = (
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    )
    return [
        Cert(
            "apiserver",
            "kube-apiserver",
            ips=(s.node_ip, s.api_service_ip, "127.0.0.1"),
            dns=api_dns,
            server=True,
        ),
        Cert(
            "apiserver-kubelet-client",
            "kube-apiserver-kubelet-client",
            "system:masters",
            client=True,
        ),
        Cert("apiserver-etcd-client", "kube-apiserver-etcd-client", client=True),
        Cert(
            "etcd-server", "etcd", ips=("127.0.0.1",), dns=("localhost",), server=True, client=True
        ),
        Cert("admin", "logberg-admin", "system:masters", client=True),
        Cert("controller-manager", "system:kube-controller-manager", client=True),
        Cert("scheduler", "system:kube-scheduler", client=True),
        Cert("kube-proxy", "system:kube-proxy", client=True),
        Cert("kubelet", f"system:node:{s.node_name}", "system:nodes", client=True),
        Cert(
            "kubelet-server",
            s.node_name,
            ips=(s.node_ip,),
            dns=(s.node_name,),
            server=True,
        ),
    ]


def ensure_pki(s: ClusterSettings) -> bool:
    """Create what is missing; regenerate everything if its inputs changed. True if made."""
    pki = s.pki
    wanted = [c.__dict__ for c in certs(s)]
    stamp = pki / "inputs.json"
    current = json.dumps({"certs": wanted, "days": DAYS}, sort_keys=True)
    complete = stamp.is_file() and stamp.read_text() == current
    complete = complete and all(
        (pki / f"{c.name}.crt").is_file() and (pki / f"{c.name}.key").is_file() for c in certs(s)
    )
    complete = complete and (pki / "sa.key").is_file() and (pki / "sa.pub").is_file()
    if complete:
        return False
    pki.mkdir(parents=True, exist_ok=True)
    pki.chmod(0o700)
    if not (pki / "ca.crt").is_file() or not (pki / "ca.key").is_file():
        _openssl(
            "req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048", "-sha256",
            "-days", str(DAYS), "-subj", "/CN=logberg-local-cluster-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            "-keyout", str(pki / "ca.key"), "-out", str(pki / "ca.crt"),
        )  # fmt: skip
    for cert in certs(s):
        _issue(pki, cert)
    if not (pki / "sa.key").is_file():
        _openssl("genrsa", "-out", str(pki / "sa.key"), "2048")
    _openssl("rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))
    for key in pki.glob("*.key"):
        key.chmod(0o600)
    stamp.write_text(current)
    return True


def _issue(pki: Path, cert: Cert) -> None:
    subject = f"/CN={cert.cn}" + (f"/O={cert.org}" if cert.org else "")
    usages = [u for u, on in (("serverAuth", cert.server), ("clientAuth", cert.client)) if on]
    ext = [
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        f"extendedKeyUsage={','.join(usages)}",
    ]
    sans = [f"IP:{ip}" for ip in cert.ips] + [f"DNS:{d}" for d in cert.dns]
    if sans:
        ext.append(f"subjectAltName={','.join(sans)}")
    with tempfile.TemporaryDirectory() as tmp:
        csr, extfile = Path(tmp) / "req.csr", Path(tmp) / "ext.cnf"
        extfile.write_text("\n".join(ext) + "\n")
        _openssl(
            "req", "-new", "-nodes", "-newkey", "rsa:2048", "-subj", subject,
            "-keyout", str(pki / f"{cert.name}.key"), "-out", str(csr),
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(pki / "ca.crt"),
            "-CAkey", str(pki / "ca.key"), "-CAcreateserial", "-sha256",
            "-days", str(DAYS), "-extfile", str(extfile), "-out", str(pki / f"{cert.name}.crt"),
        )  # fmt: skip


def _openssl(*args: str) -> None:
    proc = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise ServiceError(f"openssl {args[0]} failed: {proc.stderr[-2000:]}")


def kubeconfig(s: ClusterSettings, user_cert: str) -> str:
    """A kubeconfig for one identity (cert/key files in the pki folder)."""
    pki = s.pki
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": s.context,
                "cluster": {"server": s.server, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": f"{s.context}-{user_cert}",
                "user": {
                    "client-certificate": str(pki / f"{user_cert}.crt"),
                    "client-key": str(pki / f"{user_cert}.key"),
                },
            }
        ],
        "contexts": [
            {
                "name": s.context,
                "context": {"cluster": s.context, "user": f"{s.context}-{user_cert}"},
            }
        ],
        "current-context": s.context,
    }
    return json.dumps(doc, indent=2) + "\n"  # JSON is YAML; no YAML writer needed


def write_kubeconfigs(s: ClusterSettings) -> None:
    s.conf.mkdir(parents=True, exist_ok=True)
    for user in ("controller-manager", "scheduler", "kube-proxy", "kubelet"):
        _write_private(s.conf / f"{user}.kubeconfig", kubeconfig(s, user))
    _write_private(s.kubeconfig, kubeconfig(s, "admin"))


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.read_text() == text:
        return
    path.write_text(text)
    path.chmod(0o600)
