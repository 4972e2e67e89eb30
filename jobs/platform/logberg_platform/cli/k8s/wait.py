"""`logberg k8s wait app NAME | job (NAME | --selector S)`: until it finishes."""

from __future__ import annotations

import argparse

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


def job(a: argparse.Namespace) -> int:
    from logberg_platform.k8s.api_client import wait

    if bool(a.name) == bool(a.selector):
        raise ConfigError("wait job: give a NAME or --selector, not both")
    kube = target(a)
    what = f"Job {a.name}" if a.name else f"the Jobs matching {a.selector}"
    done = (lambda: kube.job_done(a.name)) if a.name else (lambda: kube.jobs_done(a.selector))
    took = wait(what, done, a.timeout)
    say(f"{what}: complete (waited {took:.0f}s)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser("wait", help="wait for a SparkApplication or a Job to finish")
    kinds = actions(w, dest="kind")
    a = action(kinds, "app", app, "a SparkApplication, until it completes or fails")
    a.add_argument("name", nargs="?", help="the SparkApplication")
    a.add_argument("--timeout", type=float, default=1800.0)
    j = action(kinds, "job", job, "a Job, or every Job with these labels, until complete")
    j.add_argument("name", nargs="?", help="the Job")
    j.add_argument("--selector", "-l", help="every Job with these labels")
    j.add_argument("--timeout", type=float, default=1800.0)
