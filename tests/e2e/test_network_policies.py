"""The charts' NetworkPolicies, enforced on the local cluster (logberg_platform.cluster.netpol).

The metastore's thrift port, the dev PostgreSQL, the dev S3 server and the dev Kafka broker
each answer a pod that carries their own client label, and no one else: not a pod without
it, not a pod with another backend's label, and not a pod with every label in another
namespace. The release's
own pods take connections only from the release. On the dev values, the pods that need
nothing outside the cluster (the dev PostgreSQL, S3 and Kafka, the metastore, the toolbox,
the History Server, the generator, every executor) connect only to DNS and what they use,
and only the release's Kafka clients reach the broker.
Every check is made from inside a pod: a TCP connection and a protocol call (thrift
get_all_databases, PostgreSQL's SSLRequest, an S3 GET, Kafka's ApiVersions, a DNS lookup),
never a look at a policy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.framework import NS, Deployed, unique
from tests.e2e.netprobe import delete_probe_pods, listening, probe, start_probe_pods

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

METASTORE = {"logberg.io/metastore-client": "true"}
POSTGRES = {"logberg.io/postgres-client": "true"}
S3 = {"logberg.io/s3-client": "true"}
KAFKA = {"logberg.io/kafka-client": "true"}
RELEASE = {"app.kubernetes.io/name": "logberg", "app.kubernetes.io/instance": "logberg"}
# What the generator Job's pod and a Spark executor carry: short-lived pods, so probe pods
# with their labels stand in for them (a policy selects pods by their labels alone).
GENERATOR = RELEASE | {"app.kubernetes.io/component": "generator"} | S3
EXECUTOR = RELEASE | {"spark-role": "executor"} | METASTORE | S3
# The generator producing to a topic (generator.output=kafka): the release's Kafka client.
KAFKA_GENERATOR = GENERATOR | KAFKA


@pytest.fixture(scope="module")
def pods(deployed: Deployed) -> Iterator[dict[str, tuple[str, str]]]:
    """The probe pods: (namespace, name) by what they carry."""
    other = unique("netpol-other")
    deployed.kubectl("create", "namespace", other)
    made = {
        "nothing": (NS, unique("netpol-plain"), {"logberg.io/test": "netpol"}),
        "metastore": (NS, unique("netpol-hms"), METASTORE),
        "postgres": (NS, unique("netpol-pg"), POSTGRES),
        "s3": (NS, unique("netpol-s3"), S3),
        "kafka": (NS, unique("netpol-kafka"), KAFKA),
        "release": (NS, unique("netpol-rel"), RELEASE),
        "elsewhere": (other, unique("netpol-all"), METASTORE | POSTGRES | S3 | KAFKA | RELEASE),
        "generator": (NS, unique("netpol-gen"), GENERATOR),
        "executor": (NS, unique("netpol-exec"), EXECUTOR),
        "kafka-generator": (NS, unique("netpol-kgen"), KAFKA_GENERATOR),
    }
    start_probe_pods(deployed, made)
    yield {k: (ns, name) for k, (ns, name, _) in made.items()}
    delete_probe_pods(deployed, made)
    deployed.kubectl("delete", "namespace", other, "--wait=false", check=False)


BACKENDS = (
    f"thrift:hive-metastore.{NS}.svc:9083",
    f"postgres:logberg-dev-postgres.{NS}.svc:5432",
    f"s3:logberg-dev-s3.{NS}.svc:7070",
)
DNS = "dns:kubernetes.default.svc.cluster.local:443"
BROKER = f"kafka:logberg-dev-kafka.{NS}.svc:9092"


@pytest.mark.parametrize(
    ("who", "admitted"),
    [
        ("nothing", set()),
        ("metastore", {"thrift"}),
        ("postgres", {"postgres"}),
        ("s3", {"s3"}),
        ("elsewhere", set()),
    ],
)
def test_each_backend_answers_only_its_labelled_clients(
    deployed: Deployed, pods: dict[str, tuple[str, str]], who: str, admitted: set[str]
) -> None:
    got = probe(deployed, *pods[who], *BACKENDS)
    answered = {kind for kind, line in got.items() if line.startswith("answer")}
    assert answered == admitted, got
    for kind in admitted:  # a protocol answer, not only an open port
        line = got[kind]
        if kind == "thrift":
            assert "databases include default" in line, line
        elif kind == "postgres":
            assert line in ("answer sslrequest N", "answer sslrequest S"), line
        else:
            assert line.startswith("answer http 403") and "<Error>" in line, line
    for kind in {"thrift", "postgres", "s3"} - admitted:
        assert "TimeoutError" in got[kind] or "timed out" in got[kind], got[kind]


@pytest.mark.parametrize(
    ("who", "admitted"),
    [("kafka", True), ("nothing", False), ("s3", False), ("elsewhere", False)],
)
def test_the_broker_answers_only_its_labelled_clients(
    deployed: Deployed, pods: dict[str, tuple[str, str]], who: str, admitted: bool
) -> None:
    """The dev Kafka broker: an ApiVersions answer for a pod with the Kafka client label in
    the namespace; nothing for a pod without it, one with another backend's label, or one
    with every label in another namespace."""
    got = probe(deployed, *pods[who], BROKER)["kafka"]
    if admitted:
        assert got.startswith("answer apiversions error 0, ") and not got.endswith(" 0 apis"), got
    else:
        assert "TimeoutError" in got or "timed out" in got, got


def test_release_pods_take_connections_only_from_the_release(
    deployed: Deployed, pods: dict[str, tuple[str, str]]
) -> None:
    """A listener inside the toolbox (a pod of the release): a pod with the release's labels
    reaches it; a pod of the namespace without them, or one with them elsewhere, does not."""
    toolbox = deployed.k(
        "get", "pods", "-l", "app.kubernetes.io/component=toolbox",
        "--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}",
    )  # fmt: skip
    with listening(deployed, NS, toolbox) as target:
        assert probe(deployed, *pods["release"], target) == {"listen": f"answer {toolbox}"}
        for who in ("nothing", "metastore", "elsewhere"):
            got = probe(deployed, *pods[who], target)["listen"]
            assert got.startswith("refused") and "TimeoutError" in got, (who, got)


def test_the_dev_backends_reach_only_the_cluster_dns(
    deployed: Deployed, pods: dict[str, tuple[str, str]]
) -> None:
    """Egress: from inside the dev PostgreSQL, S3 and Kafka pods, a name resolves, but a listener
    that admits everyone (the unlabelled probe pod, which no policy selects) is not reached;
    the release's probe pod reaches it."""
    ns, plain = pods["nothing"]
    with listening(deployed, ns, plain) as target:
        assert probe(deployed, *pods["release"], target) == {"listen": f"answer {plain}"}
        _, ip, port = target.split(":")
        script = (
            "getent hosts kubernetes.default.svc.cluster.local || echo no-dns; "
            f"timeout 5 bash -c 'exec 3<>/dev/tcp/{ip}/{port} && head -1 <&3' || echo refused"
        )
        for component in ("postgres", "s3", "kafka"):
            pod = deployed.k(
                "get", "pods", "-l", f"app.kubernetes.io/component={component}",
                "--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}",
            )  # fmt: skip
            out = deployed.k("exec", pod, "--", "bash", "-c", script).split()
            assert "kubernetes.default.svc.cluster.local" in out, (component, out)
            assert out[-1] == "refused" and plain not in out, (component, out)


def pod_named(deployed: Deployed, selector: str) -> tuple[str, str]:
    return NS, deployed.k(
        "get", "pods", "-l", selector, "--field-selector=status.phase=Running",
        "-o", "jsonpath={.items[0].metadata.name}",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("who", "targets", "admitted"),
    [
        (
            "app.kubernetes.io/name=hive-metastore,app.kubernetes.io/component=metastore",
            BACKENDS[1:],
            {"postgres", "s3"},
        ),
        ("app.kubernetes.io/component=toolbox", BACKENDS, {"thrift", "s3"}),
        ("app.kubernetes.io/component=history-server", BACKENDS, {"s3"}),
        ("generator", BACKENDS, {"s3"}),
        ("executor", BACKENDS, {"thrift", "s3", "release"}),
        ("kafka-generator", (*BACKENDS, BROKER), {"s3", "kafka"}),
    ],
)
def test_dev_pods_reach_only_dns_and_what_they_need(
    deployed: Deployed,
    pods: dict[str, tuple[str, str]],
    who: str,
    targets: tuple[str, ...],
    admitted: set[str],
) -> None:
    """Egress on the dev values: from inside the metastore, the toolbox and the History
    Server (and probe pods with the generator's and an executor's labels), a name resolves
    and the backends they use answer, but a listener that admits everyone (the unlabelled
    probe pod) is not reached. Only an executor reaches a pod of its release."""
    at = pods[who] if who in pods else pod_named(deployed, who)
    (_, plain), (_, member) = pods["nothing"], pods["release"]
    with listening(deployed, NS, plain) as anyone, listening(deployed, NS, member) as release:
        assert probe(deployed, *pods["release"], anyone) == {"listen": f"answer {plain}"}
        got = probe(deployed, *at, DNS, *targets, anyone)
        assert got["dns"].startswith("answer resolves "), got
        assert got["listen"].startswith("refused") and "TimeoutError" in got["listen"], got
        answered = {kind for kind, line in got.items() if line.startswith("answer")}
        reached = probe(deployed, *at, release)["listen"]
        if reached == f"answer {member}":
            answered.add("release")
        else:
            assert reached.startswith("refused") and "TimeoutError" in reached, reached
        assert answered - {"dns"} == admitted, got
        assert got.get("s3", "").startswith("answer http 403"), got
