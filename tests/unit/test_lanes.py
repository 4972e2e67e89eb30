"""`make test`'s lanes (tests/helpers/lanes.py): two real lanes at once, each its steps in
order, their lines prefixed, their exits combined; the settings that pick one run or two;
every lane's make targets exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import lanes
from tests.helpers.lanes import (
    FAILURE_LINES,
    FAILURES_FILE,
    LANES,
    Lane,
    Step,
    combined,
    command,
    lanes_wanted,
    run_lanes,
)


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing lane writes FAILURES_FILE into LOGBERG_HOME: the test's, never the clone's
    .logberg, whose file .ci/run prints at its end."""
    monkeypatch.setenv("LOGBERG_HOME", str(tmp_path / "home"))


def test_every_tier_is_in_exactly_one_lane_and_the_containers_follow_the_cluster() -> None:
    tiers = sorted(p.name for p in (lanes.REPO / "tests").iterdir() if p.is_dir()
                   and any(p.glob("test_*.py")))  # fmt: skip
    steps = [(lane, step) for lane in LANES for step in lane.steps]
    dirs = [p for _, step in steps for p in step.paths if (lanes.REPO / p).is_dir()]
    assert sorted(Path(p).name for p in dirs) == tiers
    # A file another step takes from a step's folder is ignored there: each test runs once.
    for lane, step in steps:
        for path in step.paths:
            if (lanes.REPO / path).is_file():
                assert sum(path in s.ignore for _, s in steps) == 1, path
                home = next(s for _, s in steps if str(Path(path).parent) in s.paths)
                assert f"--ignore={path}" in command(lane, home, [])
    cluster = next(lane for lane in LANES if "tests/e2e" in lane.paths)
    assert cluster.paths.index("tests/containers") > cluster.paths.index("tests/e2e")
    assert cluster.nice == 0 and all(lane.nice > 0 for lane in LANES if lane is not cluster)
    assert command(LANES[1], LANES[1].steps[0], ["-x"])[:3] == ["nice", "-n", str(lanes.NICE)]


def test_each_lane_makes_what_its_tests_need_before_them() -> None:
    cluster, local = LANES
    for lane, needs, tests in (
        (cluster, {"kind-node-image", "test-images"}, "tests/e2e"),
        (local, {"setup", "checkov", "browser"}, "tests/static"),
        (local, {"eks-minio"}, lanes.EKS),
    ):
        made = next(i for i, s in enumerate(lane.steps) if needs <= set(s.make))
        runs = next(i for i, s in enumerate(lane.steps) if tests in s.paths)
        assert made < runs, (lane.name, needs)
    # The cluster lane's pytests need `make setup` too (the containers tier and
    # test_spark_modes: the jars, for their local Spark): the first waits for the local
    # lane's, which runs beside the cluster's builds; the second follows it.
    deployed = next(i for i, s in enumerate(cluster.steps) if "tests/e2e" in s.paths)
    assert cluster.steps[deployed].after == ("setup",)
    waits = [i for i, s in enumerate(cluster.steps) if s.after]
    pytests = [i for i, s in enumerate(cluster.steps) if s.paths]
    assert waits == [deployed] and pytests[0] == deployed
    assert "setup" not in cluster.targets
    # Every target exists: make -n expands them (a typo fails here, not an hour into CI).
    targets = sorted({t for lane in LANES for t in lane.targets})
    proc = subprocess.run(
        ["make", "-n", *targets], cwd=lanes.REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Step(make=("a", "b")).argv([])[:4] == ["make", "--no-print-directory", "-j2",
                                                    "--output-sync=target"]  # fmt: skip


def test_a_path_or_one_lane_runs_one_pytest_and_a_bad_setting_is_named() -> None:
    assert lanes_wanted(["--durations=25", "-m", "static"], {})
    assert not lanes_wanted(["tests/unit/test_lanes.py::test_x"], {})
    assert not lanes_wanted([], {"TEST_LANES": "1"})
    with pytest.raises(SystemExit, match="TEST_LANES='3'"):
        lanes_wanted([], {"TEST_LANES": "3"})


def test_exit_codes_combine_and_an_empty_selection_is_not_a_failure() -> None:
    assert combined({"a": 0, "b": 0}) == 0
    assert combined({"a": 0, "b": 1}) == 1
    assert combined({"a": 5, "b": 0}) == 0
    assert combined({"a": 5, "b": 5}) == 5
    assert combined({"a": 2, "b": 5}) == 2


def test_two_real_lanes_run_at_once_print_prefixed_and_one_failure_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each lane's test waits for the other's to have started: they can pass only together.
    for mine, other, ok in (("a", "b", True), ("b", "a", False)):
        (tmp_path / f"test_{mine}.py").write_text(
            "import pathlib, time\n"
            f"def test_{mine}():\n"
            f"    pathlib.Path({str(tmp_path)!r}, 'started-{mine}').touch()\n"
            "    deadline = time.monotonic() + 120\n"
            f"    while not pathlib.Path({str(tmp_path)!r}, 'started-{other}').exists():\n"
            "        assert time.monotonic() < deadline, 'the other lane never started'\n"
            "        time.sleep(0.1)\n"
            f"    assert {ok}, 'lane {mine} fails on purpose'\n"
        )
    # A lane's steps run in order, and a failing pytest does not end its lane (with -x, it
    # does: below).
    for name in ("c", "d"):
        (tmp_path / f"test_{name}.py").write_text(
            f"import pathlib\ndef test_{name}():\n"
            f"    pathlib.Path({str(tmp_path)!r}, 'ran-{name}').touch()\n"
        )
    two = (Lane("first", (Step(paths=(str(tmp_path / "test_a.py"),)),
                          Step(paths=(str(tmp_path / "test_d.py"),)))),
           Lane("second", (Step(paths=(str(tmp_path / "test_b.py"),)),
                           Step(paths=(str(tmp_path / "test_c.py"),))), nice=3))  # fmt: skip
    code = run_lanes(["-p", "no:cacheprovider", "--rootdir", str(tmp_path)], two)
    out = capsys.readouterr().out
    assert code == 1, out
    assert (tmp_path / "ran-d").exists() and (tmp_path / "ran-c").exists(), out
    test_d = re.escape(f"pytest {tmp_path / 'test_d.py'}")
    assert re.search(rf"^ +exit +0 +\d+ s  {test_d}$", out, re.M), out
    assert "[first ] " in out and "1 passed" in out
    assert "[second] " in out and "lane b fails on purpose" in out
    assert "  first  exit   0" in out and "  second exit   1" in out
    assert "  all    exit   1" in out


def test_with_x_a_failing_pytest_ends_its_lane(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "test_fails.py").write_text("def test_fails():\n    assert False, 'on purpose'\n")
    (tmp_path / "test_next.py").write_text(
        f"import pathlib\ndef test_next():\n    pathlib.Path({str(tmp_path)!r}, 'ran').touch()\n"
    )
    lane = Lane(
        "only", tuple(Step(paths=(str(tmp_path / f),)) for f in ("test_fails.py", "test_next.py"))
    )
    args = ["-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    assert run_lanes([*args, "-x"], (lane,)) == 1
    assert "on purpose" in capsys.readouterr().out
    assert not (tmp_path / "ran").exists()
    assert run_lanes(args, (lane,)) == 1
    assert (tmp_path / "ran").exists()


def test_a_failed_make_ends_its_lane_and_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "test_c.py").write_text(
        f"import pathlib\ndef test_c():\n    pathlib.Path({str(tmp_path)!r}, 'ran-c').touch()\n"
    )
    lane = Lane(
        "only", (Step(make=("no-such-target",)), Step(paths=(str(tmp_path / "test_c.py"),)))
    )
    code = run_lanes(["-p", "no:cacheprovider", "--rootdir", str(tmp_path)], (lane,))
    out = capsys.readouterr().out
    assert code == 2, out
    assert "No rule to make target 'no-such-target'" in out
    assert not (tmp_path / "ran-c").exists(), out


def test_a_step_waits_for_the_make_it_needs_from_another_lane(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster lane's pytest needs `make setup`, which the local lane makes: a step
    with `after` starts once that make has passed, and not at all when it failed."""
    made = tmp_path / "made"
    # Extra targets for the repository's make (GNU make reads MAKEFILES first).
    extra = tmp_path / "extra.mk"
    extra.write_text(f"lanes-slow:\n\tsleep 2\n\ttouch {made}\nlanes-broken:\n\tsleep 1\n\tfalse\n")
    monkeypatch.setenv("MAKEFILES", str(extra))
    test = tmp_path / "test_after.py"
    test.write_text(
        f"import pathlib\ndef test_after():\n    assert pathlib.Path({str(made)!r}).exists()\n"
    )
    other = tmp_path / "test_other.py"
    other.write_text("def test_other():\n    pass\n")
    args = ["-p", "no:cacheprovider", "--rootdir", str(tmp_path)]

    def pair(target: str) -> tuple[Lane, Lane]:
        return (
            Lane("maker", (Step(make=(target,)), Step(paths=(str(other),)))),
            Lane("waiter", (Step(paths=(str(test),), after=(target,)),)),
        )

    assert run_lanes(args, pair("lanes-slow")) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "[waiter] == wait for make lanes-slow" in out and "1 passed" in out, out
    assert re.search(r"^ +exit +0 +\d+ s  wait for make lanes-slow$", out, re.M), out

    made.unlink()
    assert run_lanes(args, pair("lanes-broken")) == 2
    out = capsys.readouterr().out
    assert "make lanes-broken failed (exit 2): not running the rest" in out, out
    assert "test_after.py" not in out and "  waiter exit   2" in out, out

    with pytest.raises(SystemExit, match=r"lane waiter: no lane makes \['setup'\]"):
        run_lanes(args, (Lane("waiter", (Step(paths=(str(test),), after=("setup",)),)),))


def test_ci_run_prints_the_file_the_lanes_write() -> None:
    """.ci/run prints, last, the block `run_lanes` writes: the same file name, under
    LOGBERG_HOME or else the clone's .logberg (where .ci/run runs from)."""
    script = (lanes.REPO / ".ci" / "run").read_text()
    assert 'cd "$(dirname "$0")/.."' in script
    assert f"failed=${{LOGBERG_HOME:-$PWD/.logberg}}/{FAILURES_FILE}" in script


def test_the_end_of_the_run_repeats_what_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long run's log may be read from its last lines only: after the table, in a few
    lines a lane, each failing pytest's counts and distinct assertion lines, and a failed
    make's last lines, also written for .ci/run to print last; a passing lane adds nothing
    there, and a passing run leaves no such file."""
    (tmp_path / "test_f.py").write_text(
        "import itertools, pytest\n"
        "calls = itertools.count()\n"
        "@pytest.fixture\ndef deployed():\n"
        "    n = next(calls)\n"
        "    out = '\\n'.join(f'step {i}, call {n}' for i in range(40))\n"
        "    raise AssertionError(f'k8s-deploy failed:\\n{out}\\nhelm: timed out waiting for it')\n"
        + "".join(f"def test_needs_{i}(deployed):\n    pass\n" for i in range(30))
        + "def test_plain():\n    assert 1 == 2, 'numbers differ'\n"
        "def test_fine():\n    pass\n"
    )
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    extra = tmp_path / "extra.mk"
    extra.write_text("lanes-noisy:\n\t@seq 1 40\n\t@echo 'the real reason'\n\t@false\n")
    monkeypatch.setenv("MAKEFILES", str(extra))
    said = tmp_path / "home" / FAILURES_FILE
    three = (
        Lane("tests", (Step(paths=(str(tmp_path / "test_f.py"),)),)),
        Lane("made", (Step(make=("lanes-noisy",)),)),
        Lane("fine", (Step(paths=(str(tmp_path / "test_ok.py"),)),)),
    )
    assert run_lanes(["-p", "no:cacheprovider", "-ra", "--rootdir", str(tmp_path)], three) != 0
    out = capsys.readouterr().out
    end = out[out.index("== what failed") :]
    assert out.index("  all ") < out.index("== what failed"), out
    assert said.read_text().splitlines() == end.splitlines()[1:], end
    mine = [line for line in end.splitlines() if line.startswith("  [tests]")]
    assert len(mine) <= FAILURE_LINES, end
    assert "pytest: 1 FAILED, 30 ERROR; the first: ERROR " in mine[0], end
    assert "test_f.py::test_needs_0" in mine[0], end
    # A long message: its first lines and its last (where a failed command says why),
    # once, however many tests the failed fixture fails.
    assert any(line.endswith("k8s-deploy failed:") for line in mine), end
    assert any("helm: timed out waiting for it" in line for line in mine), end
    assert not any(line.endswith("step 20, call 0") for line in mine), end
    assert sum("timed out waiting" in line for line in mine) == 1, end
    # ... though the lines between differ from test to test (a log's timestamps)
    assert mine[-1].endswith("(29 more with the same first and last E lines)"), end
    assert any(line.endswith("numbers differ") for line in mine), end
    assert not any("test_fine" in line for line in mine), end
    made = [line for line in end.splitlines() if line.startswith("  [made ]")]
    assert "make lanes-noisy: exit 2; its last lines:" in made[0], end
    assert made[-2].endswith("  the real reason"), end
    assert len(made) <= FAILURE_LINES and not any(line.endswith("  30") for line in made), end
    assert "[fine ]" not in end, end
    assert run_lanes(["-p", "no:cacheprovider", "--rootdir", str(tmp_path)], three[2:]) == 0
    assert "== what failed" not in capsys.readouterr().out
    assert not said.exists()
