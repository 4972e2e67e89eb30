"""One deploy flow for kind and EKS (`make k8s-deploy`).

In order, each step waiting on what the next one needs, never on a fixed sleep:

1. the images into the node (kind: `kind load`; EKS: a registry);
2. the namespace and, on dev clusters, the generated Secrets and `charts/logberg-dev`
   (PostgreSQL, the S3 server and the Kafka broker; its hook Jobs make the bucket and the
   topic);
3. the upstream spark-operator chart at the pinned version: its CRDs applied first (Helm
   never upgrades `crds/`), then the release; then its webhooks' CA bundles;
4. `charts/hive-metastore`, then `helm test` (a real thrift call);
5. `charts/logberg` (its jobs' init containers also wait for the metastore and the buckets).

The same helm and kubectl commands a person would type; each is printed before it runs.
No secret value is printed or passed on a command line.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from logberg.errors import ConfigError, ServiceError
from logberg_platform.k8s import operator_chart
from logberg_platform.k8s.api_client import Kube, random_secret, wait

Say = Callable[[str], None]
TARGETS = ("kind", "eks")
DEV_TARGETS = ("kind",)
# Images each target runs (keys of logberg_platform.build.container_images).
IMAGES = ("spark", "hive-metastore", "spark-operator", "dev-postgres", "dev-s3", "dev-kafka")
OPERATOR_RELEASE = "spark-operator"
# The Secrets a dev cluster's charts read (values-kind.yaml), made here with random values.
DEV_SECRETS: dict[str, dict[str, Callable[[], str]]] = {
    "logberg-metastore-db": {"username": lambda: "hive", "password": random_secret()},
    "logberg-s3": {
        "AWS_ACCESS_KEY_ID": random_secret("lb", 9),
        "AWS_SECRET_ACCESS_KEY": random_secret(),
    },
}


@dataclass(frozen=True)
class DeploySettings:
    target: str  # kind | eks
    namespace: str
    operator_namespace: str
    repo: Path  # the repository root (charts/)
    chart_cache: Path  # where the upstream chart is kept, per version
    operator_chart_version: str
    images: Mapping[str, str]  # key -> name:tag
    helm: str = "helm"
    kubectl: str = "kubectl"
    context: str | None = None
    kubeconfig: str | None = None
    operator_image: str = "local"  # local: images/spark-operator; upstream: the chart's own
    image_registry: str = ""  # EKS: <account>.dkr.ecr.<region>.amazonaws.com
    values: Mapping[str, Sequence[Path]] = field(default_factory=dict)  # release -> files
    timeout: float = 900.0
    metastore_namespace: str = ""  # empty: `namespace` (EKS keeps the metastore apart)

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ConfigError(f"K8S_TARGET={self.target!r}: expected one of {', '.join(TARGETS)}")
        if self.operator_image not in ("local", "upstream"):
            raise ConfigError(
                f"SPARK_OPERATOR_IMAGE={self.operator_image!r}: expected local or upstream"
            )
        if self.target in DEV_TARGETS and self.hms_namespace != self.namespace:
            raise ConfigError(
                f"METASTORE_NAMESPACE={self.metastore_namespace}: on a dev cluster the "
                f"metastore shares K8S_NAMESPACE ({self.namespace}) with its dev database"
            )
        if self.target == "eks" and not self.image_registry:
            raise ConfigError("IMAGE_REGISTRY: required on EKS (where the images were pushed)")
        for release, files in self.values.items():
            for f in files:
                if not f.is_file():
                    raise ConfigError(f"K8S_VALUES ({release}): no such file {f}")

    @property
    def hms_namespace(self) -> str:
        return self.metastore_namespace or self.namespace

    @property
    def dev(self) -> bool:
        return self.target in DEV_TARGETS

    def repository(self, key: str) -> str:
        name = f"logberg-{key}"
        return f"{self.image_registry.rstrip('/')}/{name}" if self.image_registry else name

    def tag(self, key: str) -> str:
        ref = self.images.get(key)
        if not ref or ":" not in ref:
            raise ConfigError(f"no image tag for {key} (make images)")
        return ref.rsplit(":", 1)[1]


class Flow:
    def __init__(self, s: DeploySettings, kube: Kube, say: Say) -> None:
        self.s, self.kube, self.say = s, kube, say

    # -- commands -------------------------------------------------------------------------
    def _context_args(self, helm: bool) -> list[str]:
        args: list[str] = []
        if self.s.kubeconfig:
            args.append(f"--kubeconfig={self.s.kubeconfig}")
        if self.s.context:
            args.append(
                f"--kube-context={self.s.context}" if helm else f"--context={self.s.context}"
            )
        return args

    def run(self, argv: Sequence[str], timeout: float | None = None, show: bool = True) -> str:
        self.say("$ " + shlex.join(argv))
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout or self.s.timeout + 60
        )
        out = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            raise ServiceError(f"{Path(argv[0]).name} {argv[1]} failed ({proc.returncode}):\n{out}")
        if show and out:
            self.say(out)
        return proc.stdout

    def helm(self, *args: str, show: bool = True) -> str:
        return self.run([self.s.helm, *self._context_args(True), *args], show=show)

    def kubectl(self, *args: str) -> str:
        return self.run([self.s.kubectl, *self._context_args(False), *args])

    def release(self, name: str, chart: Path | str, namespace: str, *args: str) -> None:
        files = [f"--values={f}" for f in self.s.values.get(name, ())]
        self.helm(
            "upgrade", "--install", name, str(chart), f"--namespace={namespace}",
            *args, *files, "--wait", f"--timeout={int(self.s.timeout)}s",
            show=False,
        )  # fmt: skip
        self.say(f"release {name}: deployed in namespace {namespace}")

    # -- the steps ------------------------------------------------------------------------
    def namespace_and_secrets(self) -> None:
        for ns in dict.fromkeys((self.s.namespace, self.s.hms_namespace)):
            if self.kube.ensure_namespace(ns):
                self.say(f"namespace {ns}: created")
        if not self.s.dev:
            return
        for name, data in DEV_SECRETS.items():
            made = self.kube.ensure_secret(name, data)
            self.say(f"secret {name}: {'created (random values)' if made else 'exists (kept)'}")

    def dev_backends(self) -> None:
        self.release(
            "logberg-dev",
            self.s.repo / "charts" / "logberg-dev",
            self.s.namespace,
            f"--set=postgres.image.tag={self.s.tag('dev-postgres')}",
            f"--set=s3.image.tag={self.s.tag('dev-s3')}",
            f"--set=kafka.image.tag={self.s.tag('dev-kafka')}",
            f"--set=bucketJob.image.tag={self.s.tag('spark')}",
        )

    def operator(self, go: Callable[[], str]) -> None:
        chart = operator_chart.ensure(
            self.s.chart_cache, self.s.operator_chart_version, self.s.helm, go
        )
        # Helm installs crds/ only on the first install and never upgrades them.
        self.kubectl(
            "apply", "--server-side", "--force-conflicts", "--field-manager=logberg",
            f"--filename={chart / 'crds'}",
        )  # fmt: skip
        image: list[str] = []
        if self.s.operator_image == "local":
            repo = self.s.repository("spark-operator")
            registry, _, path = repo.partition("/") if self.s.image_registry else ("", "", repo)
            image = [
                f"--set=image.registry={registry or 'docker.io'}",
                f"--set=image.repository={path if registry else 'library/' + repo}",
                f"--set=image.tag={self.s.tag('spark-operator')}",
            ]
        self.release(
            OPERATOR_RELEASE,
            chart,
            self.s.operator_namespace,
            "--create-namespace",
            f"--values={self.s.repo / 'charts' / 'values' / 'spark-operator.yaml'}",
            f"--set=spark.jobNamespaces[0]={self.s.namespace}",
            *image,
        )
        took = wait(
            "the spark-operator webhooks' CA bundles",
            lambda: self.kube.webhooks_have_ca(OPERATOR_RELEASE),
            timeout=300,
        )
        self.say(f"spark-operator webhooks hold their CA bundle (waited {took:.0f}s)")

    def our_chart(self, name: str, namespace: str, image: str) -> None:
        """Install one of our charts with its target's values file and our image."""
        chart = self.s.repo / "charts" / name
        variant = "values-kind.yaml" if self.s.dev else "values-eks.yaml"
        self.release(
            name,
            chart,
            namespace,
            f"--values={chart / variant}",
            f"--set=image.repository={self.s.repository(image)}",
            f"--set=image.tag={self.s.tag(image)}",
        )

    def metastore(self) -> None:
        self.our_chart("hive-metastore", self.s.hms_namespace, "hive-metastore")
        self.helm(
            "test", "hive-metastore", f"--namespace={self.s.hms_namespace}", "--logs",
            f"--timeout={int(self.s.timeout)}s",
        )  # fmt: skip

    def logberg(self) -> None:
        self.our_chart("logberg", self.s.namespace, "spark")


def deploy(
    s: DeploySettings,
    kube: Kube,
    load_images: Callable[[list[str]], None],
    go: Callable[[], str],
    say: Say,
) -> None:
    """Deploy, or bring up to date, every part in order (idempotent)."""
    version = kube.ping()
    say(f"== {s.target}: {kube.where}, Kubernetes {version}, namespace {s.namespace}")
    flow = Flow(s, kube, say)
    if s.target != "eks":
        keys = [k for k in IMAGES if s.operator_image == "local" or k != "spark-operator"]
        say("== images into the node")
        load_images([s.images[k] for k in keys])
    say("== namespace" + (", secrets and the dev backends" if s.dev else ""))
    flow.namespace_and_secrets()
    if s.dev:
        flow.dev_backends()
    say(f"== spark-operator {s.operator_chart_version} (CRDs first)")
    flow.operator(go)
    say("== hive-metastore (then helm test: a thrift call)")
    flow.metastore()
    say("== logberg")
    flow.logberg()
    say(
        f"deployed: next `make k8s-demo` (K8S_NAMESPACE={s.namespace}), "
        "or `kubectl apply -f charts/logberg/examples/ingest.yaml`"
    )


# -- putting the images into the node -------------------------------------------------------
def version_alias(ref: str, version: str) -> str:
    """`logberg-spark:0.1.0-<hash>` -> `logberg-spark:0.1.0`: the tag the chart's default and
    the examples name; it always points at the image loaded last."""
    return f"{ref.rsplit(':', 1)[0]}:{version}"


def kind_loader(cluster: str, version: str, say: Say) -> Callable[[list[str]], None]:
    """Into every node of a kind cluster, under the names a pod's `image:` resolves to
    (docker.io/library/<ref>) and the version tag. Docker: `kind load docker-image`. podman
    (kind's `load docker-image` always asks the docker CLI): one `podman save` archive of
    the images the nodes lack, then `kind load image-archive`; present ones are skipped
    (their tags are content hashes), and the version tag is moved in each node."""
    from logberg_platform.kind.cluster import kind_command, kind_env, provider

    tool = provider()
    env = kind_env(tool)
    kind = kind_command(os.environ.get("KIND", ""), say)

    def run(argv: list[str]) -> str:
        say("$ " + shlex.join(argv))
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise ServiceError(f"{argv[0]} failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def full(ref: str) -> str:
        return f"docker.io/library/{ref}"

    def load(refs: list[str]) -> None:
        if tool == "docker":
            aliases = [version_alias(r, version) for r in refs]
            for ref, alias in zip(refs, aliases, strict=True):
                run(["docker", "tag", ref, alias])
            run([kind, "load", "docker-image", "--name", cluster, *refs, *aliases])
            return
        nodes = run([kind, "get", "nodes", "--name", cluster]).split()
        if not nodes:
            raise ServiceError(f"kind cluster {cluster!r} has no nodes (make kind-up)")
        for ref in refs:
            run(["podman", "tag", ref, full(ref)])
        try:
            load_tagged(nodes, refs)
        finally:  # the docker.io names were for the archive only: podman keeps its own
            for ref in refs:
                subprocess.run(["podman", "untag", full(ref), full(ref)], capture_output=True)

    def load_tagged(nodes: list[str], refs: list[str]) -> None:
        present = set.intersection(
            *(set(run([tool, "exec", n, "ctr", "-n", "k8s.io", "images", "ls", "-q"]).split())
              for n in nodes)
        )  # fmt: skip
        missing = [full(r) for r in refs if full(r) not in present]
        if missing:
            with tempfile.TemporaryDirectory(prefix="logberg-kind-load-") as tmp:
                archive = str(Path(tmp) / "images.tar")
                run(["podman", "save", "--multi-image-archive", "-o", archive, *missing])
                run([kind, "load", "image-archive", "--name", cluster, archive])
        for ref in refs:
            if full(ref) not in missing:
                say(f"image {full(ref)}: already in the node")
            for n in nodes:
                run([tool, "exec", n, "ctr", "-n", "k8s.io", "images", "tag", "--force",
                     full(ref), full(version_alias(ref, version))])  # fmt: skip

    return load
