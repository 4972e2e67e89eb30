"""`logberg k8s wait app NAME | job (NAME | --selector S) | stream NAME`: until it finishes,
or (a stream from a topic) until it has caught up."""

from __future__ import annotations

import argparse
from typing import Any

from logberg.cli.command import action, actions
from logberg.errors import ConfigError
from logberg_platform.cli.k8s import say, target


def app(a: argparse.Namespace) -> int:
    from logberg_platform.k8s.apps import wait_app

    if not a.name:
        raise ConfigError("wait app: name the SparkApplication")
    kube = target(a)
    kube.require_crd()
    st = wait_app(kube, a.name, a.timeout, say)
    say(f"SparkApplication {a.name}: {st.state} (attempts {st.attempts})")
    return 0


def stream(a: argparse.Namespace) -> int:
    from logberg_platform.k8s.apps import wait_stream

    kube = target(a)
    kube.require_crd()
    wait_stream(kube, a.name, a.timeout, say)
    return 0


def job(a: argparse.Namespace) -> int:
    from logberg_platform.k8s.api_client import wait

    if bool(a.name) == bool(a.selector):
        raise ConfigError("wait job: give a NAME or --selector, not both")
    kube = target(a)
    if a.rerun_before_pods:
        rerun_stale(kube, a)
    what = f"Job {a.name}" if a.name else f"the Jobs matching {a.selector}"
    done = (lambda: kube.job_done(a.name)) if a.name else (lambda: kube.jobs_done(a.selector))
    took = wait(what, done, a.timeout)
    say(f"{what}: complete (waited {took:.0f}s)")
    return 0


def rerun_stale(kube: Any, a: argparse.Namespace) -> None:
    """Run again each succeeded Job that completed before the newest container of the
    --rerun-before-pods pods started: what it wrote there may be gone. (Where the dev S3
    server keeps its objects in an emptyDir, s3.persistence.enabled=false, a restarted
    server has lost the generator's files while its Job, kept by the cluster, still says
    complete.)"""
    from logberg_platform.k8s.api_client import wait

    started: list[float] = []

    def running() -> bool:
        t = kube.containers_started(a.rerun_before_pods)
        started[:] = [] if t is None else [t]
        return t is not None

    pods = a.rerun_before_pods
    if not kube.call(
        "list pods", kube.core.list_namespaced_pod, kube.ns, label_selector=pods
    ).items:
        return  # nothing of that kind here (a real object store): nothing can be stale
    wait(f"the pods matching {pods} to run", running, a.timeout)
    for job in kube.jobs_named(a.name, a.selector):
        done = job.status.completion_time
        if (job.status.succeeded or 0) >= 1 and done and done.timestamp() < started[0]:
            say(
                f"Job {job.metadata.name}: completed {done:%Y-%m-%d %H:%M:%S} UTC, before the "
                f"pods matching {pods} last started; what it wrote there may be gone: "
                "running it again"
            )
            kube.rerun_job(job)


def register(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser(
        "wait", help="wait for a SparkApplication or a Job to finish, or a stream to catch up"
    )
    kinds = actions(w, dest="kind")
    a = action(kinds, "app", app, "a SparkApplication, until it completes or fails")
    a.add_argument("name", nargs="?", help="the SparkApplication")
    a.add_argument("--timeout", type=float, default=1800.0)
    s = action(
        kinds,
        "stream",
        stream,
        "a stream from a topic (ingest --from), until its last committed batch ends where "
        "the topic ends",
    )
    s.add_argument("name", help="the SparkApplication")
    s.add_argument("--timeout", type=float, default=1800.0)
    j = action(kinds, "job", job, "a Job, or every Job with these labels, until complete")
    j.add_argument("name", nargs="?", help="the Job")
    j.add_argument("--selector", "-l", help="every Job with these labels")
    j.add_argument(
        "--rerun-before-pods",
        metavar="SELECTOR",
        help="first run again a Job that completed before these pods last started "
        "(the store it wrote to may have lost it)",
    )
    j.add_argument("--timeout", type=float, default=1800.0)
