"""`make test` in two lanes at once: the live cluster and the containers in one pytest, the
tiers that need neither in another, beside it; each lane first makes what only its own tests
need.

Why: the cluster tier waits a lot (pods scheduled and started, an operator's resync, a
Spark application's driver asking for its executor). On the 2-core CI machine a third of
both cores sat idle through it (vmstat, 5 s samples, the deployment and test_faults), while
the integration tier, which needs no cluster, waited its turn behind it. Run side by side,
the second lane fills that idle time.

* Each lane is a few steps, run in order: `make` of what its tests need and the other
  lane's do not, then pytest. A failed make ends its lane; a failing pytest does not (its
  lane's later pytests still run and report) unless the arguments say -x. So the local
  lane's tests start while the cluster lane still builds Kubernetes, the kind node image
  and the images (on a cold machine, a quarter of an hour of Go and image builds), and
  the MinIO build waits until the only test that needs it is next.
* `make setup` (the jars, the S3 server, the JVM class archive: 1.5 min warm, 4 cold) is
  the local lane's first step, beside the cluster lane's builds, which do not need it. The
  cluster lane's pytests wait for it (`Step.after`): the containers tier and MOVED read
  tables back with a local Spark, which needs the jars, and the kind cluster's tests
  (tests/e2e) wait too. They started without waiting at 1fb4e3c (85 s sooner on a warm
  machine) and failed on CI's warm machine, the deployment beside `setup`, in a way the
  end of the log did not show; until that is understood, the deployment starts where it
  passed (eee1827). On a cold machine the builds outlast `setup` anyway.
* The `cluster` lane keeps the CPU when both want it: the other lane runs at `nice`
  NICE, so a test that waits on the cluster is not slowed by much, and each lane's own
  timeouts stay as they were (no test asserts a time).
* The containers tier stays in the cluster lane, after it (and then one integration file,
  MOVED, to even the lanes' ends): its podman networks change the host's iptables, which
  test_kind_down.py compares before and after.
* The lanes share nothing else: each integration service takes a free port
  (tests/conftest.py), the kind cluster has a name of its own, and the leftovers reaper removes
  only what a dead run left.

Each lane's lines are printed as they come, prefixed with the lane's name; each pytest
prints its own tables, and this prints every step's exit and wall time last, then what
failed: each failing pytest's short summary and its failures' `E` lines, each failed
make's last lines (`Failures`), since a long run's log may be read from its end only. The
run fails when either lane fails.

Pytest arguments pass through to every pytest. When they name tests (a path), or with
TEST_LANES=1, one pytest runs them as before, after every lane's `make`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NICE = 5
NO_TESTS = 5  # pytest's exit code when a selection (say -m static) has no tests


@dataclass(frozen=True)
class Step:
    """One command of a lane: `make` of targets (at once, each target's output kept
    together), or pytest over paths."""

    make: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()  # files of its paths another step runs
    after: tuple[str, ...] = ()  # make targets of another lane's steps, made before this starts

    def argv(self, args: Sequence[str]) -> list[str]:
        if self.make:
            jobs = f"-j{len(self.make)}"
            return ["make", "--no-print-directory", jobs, "--output-sync=target", *self.make]
        ignored = [f"--ignore={path}" for path in self.ignore]
        return [sys.executable, "-m", "pytest", *args, *ignored, *self.paths]

    def label(self) -> str:
        return "make " + " ".join(self.make) if self.make else "pytest " + " ".join(self.paths)


@dataclass(frozen=True)
class Lane:
    name: str
    steps: tuple[Step, ...]
    nice: int = 0

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(p for step in self.steps for p in step.paths)

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(t for step in self.steps for t in step.make)


# The cluster lane also takes an integration file that needs no cluster, after the
# containers, so that the two lanes end near the same time. 09d4306's run: cluster lane
# 2782 s with all of test_spark_modes.py (418 s), local 2440 s; that file is now two, the
# same tables in both modes here (test_spark_modes.py) and the server's sessions, output
# and settings (test_connect_server.py) in the local lane. d66c089's cold run (2026-12-02):
# cluster lane 3919 s, local 4156 s; test_log_format_tables.py (163 s) moved too. f9795fd's
# warm run (Kafka in the cluster): cluster lane 2617 s, local 2277 s, and the cluster tier
# grew again (the broker's restart and the lag probe): test_log_format_tables.py (55 s
# warm) is back in the local lane.
MOVED = ("tests/integration/test_spark_modes.py",)
# The only test of the MinIO that `make eks-minio` builds (cold: 5 min of Go).
EKS = "tests/integration/test_eks_s3_policies.py"
LANES = (
    Lane(
        "cluster",
        (
            Step(make=("kind-node-image", "test-images")),
            Step(paths=("tests/e2e",), after=("setup",)),
            Step(paths=("tests/containers", *MOVED)),
        ),
    ),
    Lane(
        "local",
        (
            Step(make=("setup", "checkov", "browser")),
            Step(paths=("tests/integration", "tests/static", "tests/unit"), ignore=(*MOVED, EKS)),
            Step(make=("eks-minio",)),
            Step(paths=(EKS,)),
        ),
        nice=NICE,
    ),
)


def names_tests(args: Sequence[str]) -> bool:
    """The arguments select tests by path (then one pytest runs them as asked)."""
    return any(not a.startswith("-") and (REPO / a.split("::", 1)[0]).exists() for a in args)


def lanes_wanted(args: Sequence[str], env: dict[str, str]) -> bool:
    setting = env.get("TEST_LANES", "2")
    if setting not in ("1", "2"):
        raise SystemExit(f"TEST_LANES={setting!r}: 1 (one pytest) or 2 (two lanes at once)")
    return setting == "2" and not names_tests(args)


def stops_at_a_failure(args: Sequence[str]) -> bool:
    """pytest's -x (--exitfirst): then a failing pytest ends its lane too, not only a failed
    make; otherwise the lane's later pytests still run, so one run reports every failure."""
    return any(a in ("-x", "--exitfirst") or a.startswith("--maxfail") for a in args)


def command(lane: Lane, step: Step, args: Sequence[str]) -> list[str]:
    argv = step.argv(args)
    return ["nice", "-n", str(lane.nice), *argv] if lane.nice else argv


def combined(codes: dict[str, int]) -> int:
    """Exit codes (of lanes, or of one lane's steps) as one: the first failure; nothing
    selected counts as passed when the others ran tests."""
    ran = {n: c for n, c in codes.items() if c != NO_TESTS}
    if not ran:
        return NO_TESTS
    return next((c for c in ran.values() if c != 0), 0)


# What the end of the run repeats of a lane's failures (Failures). CI keeps a log's last
# ~25 lines, and .ci/run prints this block last (from FAILURES_FILE), under its phase table:
# so it stays short.
FAILURE_LINES = 20  # of one lane
E_HEAD, E_TAIL = 2, 6  # of one failure's `E` lines (a failed command's output ends in why)
MAKE_TAIL = 8
FAILURES_FILE = "what-failed.txt"  # in LOGBERG_HOME: the run's block, for .ci/run's end
SECTIONS = re.compile(r"^=+ (ERRORS|FAILURES) =+$")
SUMMARY = re.compile(r"^=+ short test summary info =+$")
HEADER = re.compile(r"^_{3,} .+ _{3,}$")  # one failure's section: "____ test_x ____"


@dataclass
class Failures:
    """What a lane's output says of its failures, to print again at the run's end, in at
    most FAILURE_LINES: of a failed make, its last MAKE_TAIL lines; of a pytest, how many
    tests failed or erred and the first of them, then each distinct failure's section
    header and `E` lines (the assertion and its message: the first E_HEAD and the last
    E_TAIL). A failure whose first and last E lines equal an earlier one's, as a failed
    shared fixture's are for every test that needs it (the lines between may differ: a log's
    timestamps, a re-raised error's frames), is only counted."""

    _where: str = "tests"
    _header: str = ""
    _e_lines: list[str] = field(default_factory=list)
    _distinct: list[tuple[str, list[str]]] = field(default_factory=list)
    _keys: set[tuple[str, str]] = field(default_factory=set)
    _same: int = 0
    _summary: list[str] = field(default_factory=list)
    _makes: list[tuple[str, list[str]]] = field(default_factory=list)
    _tail: list[str] = field(default_factory=list)

    def step(self) -> None:
        self._where, self._tail = "tests", []

    def see(self, line: str) -> None:
        self._tail = [*self._tail[-(MAKE_TAIL - 1) :], line]
        if SECTIONS.match(line):
            self._where = "sections"
        elif SUMMARY.match(line):
            self._section_ends()
            self._where = "summary"
        elif self._where == "sections" and HEADER.match(line):
            self._section_ends()
            self._header = line
        elif self._where == "sections" and line.startswith("E "):
            self._e_lines.append(line)
        elif self._where == "summary" and line.startswith(("FAILED ", "ERROR ")):
            self._summary.append(line)

    def _section_ends(self) -> None:
        if not self._header:
            return
        lines, self._header, header, self._e_lines = self._e_lines, "", self._header, []
        key = (lines[0], lines[-1]) if lines else ("", "")
        if key in self._keys:
            self._same += 1
            return
        self._keys.add(key)
        self._distinct.append((header, lines))

    def make_failed(self, label: str, code: int) -> None:
        self._makes.append((f"{label}: exit {code}; its last lines:", list(self._tail)))

    @property
    def lines(self) -> list[str]:
        out: list[str] = []
        for said, tail in self._makes:
            out += [said, *(f"  {line}" for line in tail)]
        if self._summary:
            kinds = [line.split(" ", 1)[0] for line in self._summary]
            counts = ", ".join(f"{kinds.count(k)} {k}" for k in ("FAILED", "ERROR") if k in kinds)
            out.append(f"pytest: {counts}; the first: {self._summary[0]}")
        for header, e_lines in self._distinct:
            if len(e_lines) > E_HEAD + E_TAIL:
                more = len(e_lines) - E_HEAD - E_TAIL
                e_lines = [*e_lines[:E_HEAD], f"E       ({more} more)", *e_lines[-E_TAIL:]]
            out += [header, *e_lines]
        if self._same:
            out.append(f"({self._same} more with the same first and last E lines)")
        if len(out) > FAILURE_LINES:
            out = [*out[: FAILURE_LINES - 1], "(more: in the lanes' output above)"]
        return [line[:300] for line in out]


@dataclass
class Ran:
    """What a step did (or a wait for another lane's make): its exit code and wall time.
    `prepares`: a make or a wait, whose failure fails the lane (a pytest's code combines)."""

    label: str
    code: int
    seconds: float
    prepares: bool


class Made:
    """Which make targets the lanes' steps have made, for the steps that wait on them."""

    def __init__(self, lanes: Sequence[Lane]):
        made = {t for lane in lanes for t in lane.targets}
        for lane in lanes:
            for step in lane.steps:
                missing = set(step.after) - made
                if missing:  # nothing would ever make it: fail now, not after a wait
                    raise SystemExit(f"lane {lane.name}: no lane makes {sorted(missing)}")
        self.codes: dict[str, int] = {}
        self.changed = threading.Condition()

    def record(self, targets: Sequence[str], code: int) -> None:
        with self.changed:
            self.codes.update(dict.fromkeys(targets, code))
            self.changed.notify_all()

    def record_missing(self, targets: Sequence[str], code: int) -> None:
        """`code` for those of `targets` not recorded yet (their lane ended before them)."""
        with self.changed:
            self.record([t for t in targets if t not in self.codes], code)

    def wait(self, targets: Sequence[str], stopped: threading.Event) -> int:
        """The first failure among `targets` once each is made, else 0; 130 when `stopped`."""
        with self.changed:
            while not set(targets) <= set(self.codes):
                if stopped.is_set():
                    return 130
                self.changed.wait(timeout=1)
        return next((self.codes[t] for t in targets if self.codes[t] != 0), 0)


class LaneRun:
    """A lane's steps, one after the other in a thread, each one's lines prefixed."""

    def __init__(
        self, lane: Lane, args: Sequence[str], width: int, lock: threading.Lock, made: Made
    ):
        self.lane, self.args, self.width, self.lock, self.made = lane, args, width, lock, made
        self.ran: list[Ran] = []
        self.failures = Failures()
        self.proc: subprocess.Popen[bytes] | None = None
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _say(self, line: str) -> None:
        with self.lock:
            sys.stdout.write(f"[{self.lane.name:<{self.width}}] {line}\n")
            sys.stdout.flush()

    def _wait(self, step: Step) -> bool:
        """Wait for the make targets `step` needs from another lane; False when one failed."""
        label = "wait for make " + " ".join(step.after)
        self._say(f"== {label}")
        started = time.monotonic()
        code = self.made.wait(step.after, self.stopped)
        self.ran.append(Ran(label, code, time.monotonic() - started, prepares=True))
        if code != 0:
            self._say(f"make {' '.join(step.after)} failed (exit {code}): not running the rest")
        return code == 0

    def _run(self) -> None:
        try:
            self._steps()
        finally:  # a lane that ends early tells the others what it did not make
            self.made.record_missing(self.lane.targets, 1)

    def _steps(self) -> None:
        for step in self.lane.steps:
            if self.stopped.is_set() or (step.after and not self._wait(step)):
                return
            started = time.monotonic()
            self._say(f"== {step.label()}")
            self.proc = subprocess.Popen(
                command(self.lane, step, self.args),
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )
            assert self.proc.stdout is not None
            self.failures.step()
            for raw in iter(self.proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self._say(line)
                self.failures.see(line)
            code = self.proc.wait()
            if step.make and code != 0:
                self.failures.make_failed(step.label(), code)
            self.ran.append(Ran(step.label(), code, time.monotonic() - started, bool(step.make)))
            if step.make:
                self.made.record(step.make, code)
            if code not in (0, NO_TESTS) and (step.make or stops_at_a_failure(self.args)):
                return

    def interrupt(self) -> None:
        self.stopped.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    @property
    def code(self) -> int:
        """A failed `make` (or wait for one) fails the lane; else its pytests' codes, combined."""
        made = [r.code for r in self.ran if r.prepares and r.code != 0]
        tested = {f"{i}": r.code for i, r in enumerate(self.ran) if not r.prepares}
        return made[0] if made else combined(tested) if tested else 1

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.ran)


def run_lanes(args: Sequence[str], lanes: Sequence[Lane] = LANES) -> int:
    width = max(len(lane.name) for lane in lanes)
    lock = threading.Lock()
    started = time.monotonic()
    made = Made(lanes)
    runs = [LaneRun(lane, args, width, lock, made) for lane in lanes]
    for run in runs:
        run.thread.start()
    try:
        while any(run.thread.is_alive() for run in runs):
            time.sleep(1)
    except KeyboardInterrupt:  # pass it on: each pytest tears its fixtures down
        for run in runs:
            run.interrupt()
        for run in runs:
            run.thread.join()
    codes = {run.lane.name: run.code for run in runs}
    print("\n== make test: lanes (run at once; each lane's steps in order) ==")
    for run in runs:
        nice = f"  (nice {run.lane.nice})" if run.lane.nice else ""
        code = codes[run.lane.name]
        print(f"  {run.lane.name:<{width}} exit {code:>3}  {run.seconds:7.0f} s{nice}")
        for r in run.ran:
            print(f"  {'':<{width}}   exit {r.code:>3}  {r.seconds:7.0f} s  {r.label}")
    print(f"  {'all':<{width}} exit {combined(codes):>3}  {time.monotonic() - started:7.0f} s")
    block = [f"  [{run.lane.name:<{width}}] {line}" for run in runs for line in run.failures.lines]
    said = Path(os.environ.get("LOGBERG_HOME", REPO / ".logberg")) / FAILURES_FILE
    said.unlink(missing_ok=True)
    if block:
        print("\n== what failed (repeated from the lanes' output above) ==")
        print("\n".join(block))
        said.parent.mkdir(parents=True, exist_ok=True)
        said.write_text("\n".join(block) + "\n")
    return combined(codes)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not lanes_wanted(args, dict(os.environ)):
        # One pytest, after what every lane would make.
        targets = [t for lane in LANES for t in lane.targets]
        made = subprocess.call(Step(make=tuple(targets)).argv(args), cwd=REPO)
        if made != 0:
            return made
        return subprocess.call([sys.executable, "-m", "pytest", *args], cwd=REPO)
    return run_lanes(args)


if __name__ == "__main__":
    sys.exit(main())
