"""`make test` in two lanes at once: the live cluster and the containers in one pytest, the
tiers that need neither in another, beside it.

Why: the cluster tier waits a lot (pods scheduled and started, an operator's resync, a
Spark application's driver asking for its executor). On the 2-core CI machine a third of
both cores sat idle through it (vmstat, 5 s samples, the deployment and test_faults), while
the integration tier, which needs no cluster, waited its turn behind it. Run side by side,
the second lane fills that idle time.

* The `cluster` lane keeps the CPU when both want it: the other lane runs at `nice`
  NICE, so a test that waits on the cluster is not slowed by much, and each lane's own
  timeouts stay as they were (no test asserts a time).
* The containers tier stays in the cluster lane, after it (and then one integration file,
  MOVED, to even the lanes' ends): its podman networks change the
  host's iptables, which the cluster's own tests compare before and after.
* The lanes share nothing else: each integration service takes a free port
  (tests/conftest.py), the cluster's homes are /tmp/lbk-*, and the leftovers reaper removes
  only what a dead run left.

Each lane's lines are printed as they come, prefixed with the lane's name; each lane ends
with its own tier table and slowest tests, and this prints both lanes' exit and wall time
last. The run fails when either lane fails.

Pytest arguments pass through to both lanes. When they name tests (a path), or with
TEST_LANES=1, one pytest runs them as before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NICE = 5
NO_TESTS = 5  # pytest's exit code when a lane's selection (say -m static) has no tests


@dataclass(frozen=True)
class Lane:
    name: str
    paths: tuple[str, ...]
    nice: int = 0
    ignore: tuple[str, ...] = ()  # files of its paths another lane runs


# The cluster lane also takes the slowest integration file that needs no cluster, after the
# containers, so that the two lanes end near the same time (6a83d5a's run: cluster 2749 s,
# local 3534 s, with test_spark_modes.py 521 s of the local one).
MOVED = ("tests/integration/test_spark_modes.py",)
LANES = (
    Lane("cluster", ("tests/cluster", "tests/containers", *MOVED)),
    Lane("local", ("tests/integration", "tests/static", "tests/unit"), nice=NICE, ignore=MOVED),
)


def names_tests(args: Sequence[str]) -> bool:
    """The arguments select tests by path (then one pytest runs them as asked)."""
    return any(not a.startswith("-") and (REPO / a.split("::", 1)[0]).exists() for a in args)


def lanes_wanted(args: Sequence[str], env: dict[str, str]) -> bool:
    setting = env.get("TEST_LANES", "2")
    if setting not in ("1", "2"):
        raise SystemExit(f"TEST_LANES={setting!r}: 1 (one pytest) or 2 (two lanes at once)")
    return setting == "2" and not names_tests(args)


def command(lane: Lane, args: Sequence[str]) -> list[str]:
    ignored = [f"--ignore={path}" for path in lane.ignore]
    pytest = [sys.executable, "-m", "pytest", *args, *ignored, *lane.paths]
    return ["nice", "-n", str(lane.nice), *pytest] if lane.nice else pytest


def combined(codes: dict[str, int]) -> int:
    """Both lanes' exit codes as one: the first failure; a lane with nothing selected
    counts as passed when the other ran tests."""
    ran = {n: c for n, c in codes.items() if c != NO_TESTS}
    if not ran:
        return NO_TESTS
    return next((c for c in ran.values() if c != 0), 0)


def _relay(name: str, width: int, stream: object, lock: threading.Lock) -> None:
    for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
        line = raw.decode("utf-8", "replace").rstrip("\n")
        with lock:
            sys.stdout.write(f"[{name:<{width}}] {line}\n")
            sys.stdout.flush()


def run_lanes(args: Sequence[str], lanes: Sequence[Lane] = LANES) -> int:
    width = max(len(lane.name) for lane in lanes)
    lock = threading.Lock()
    started = time.monotonic()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    relays: list[threading.Thread] = []
    ended: dict[str, float] = {}
    for lane in lanes:
        proc = subprocess.Popen(
            command(lane, args),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        procs[lane.name] = proc
        t = threading.Thread(target=_relay, args=(lane.name, width, proc.stdout, lock), daemon=True)
        t.start()
        relays.append(t)
    codes: dict[str, int] = {}
    try:
        while len(codes) < len(procs):
            for name, proc in procs.items():
                if name not in codes and proc.poll() is not None:
                    codes[name] = proc.returncode
                    ended[name] = time.monotonic() - started
            time.sleep(1)
    except KeyboardInterrupt:  # pass it on: each pytest tears its fixtures down
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for name, proc in procs.items():
            codes[name] = proc.wait()
            ended.setdefault(name, time.monotonic() - started)
    for t in relays:
        t.join(timeout=10)
    print("\n== make test: lanes (run at once) ==")
    for lane in lanes:
        print(
            f"  {lane.name:<{width}} exit {codes[lane.name]:>3}  {ended[lane.name]:7.0f} s  "
            f"{' '.join(lane.paths)}" + (f"  (nice {lane.nice})" if lane.nice else "")
        )
    print(f"  {'all':<{width}} exit {combined(codes):>3}  {time.monotonic() - started:7.0f} s")
    return combined(codes)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not lanes_wanted(args, dict(os.environ)):
        return subprocess.call([sys.executable, "-m", "pytest", *args], cwd=REPO)
    return run_lanes(args)


if __name__ == "__main__":
    sys.exit(main())
