"""`make test`'s lanes (tests/helpers/lanes.py): two real pytest runs at once, their lines
prefixed, their exits combined; the settings that pick one run or two."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import lanes
from tests.helpers.lanes import LANES, Lane, combined, command, lanes_wanted, run_lanes


def test_every_tier_is_in_exactly_one_lane_and_the_containers_follow_the_cluster() -> None:
    tiers = sorted(p.name for p in (lanes.REPO / "tests").iterdir() if p.is_dir()
                   and any(p.glob("test_*.py")))  # fmt: skip
    dirs = [p for lane in LANES for p in lane.paths if (lanes.REPO / p).is_dir()]
    assert sorted(Path(p).name for p in dirs) == tiers
    # A file one lane takes from another's folder is ignored there: each test runs once.
    for lane in LANES:
        for path in lane.paths:
            if (lanes.REPO / path).is_file():
                assert sum(path in other.ignore for other in LANES) == 1, path
                home = next(o for o in LANES if str(Path(path).parent) in o.paths)
                assert path in home.ignore and f"--ignore={path}" in command(home, [])
    cluster = next(lane for lane in LANES if "tests/cluster" in lane.paths)
    assert cluster.paths.index("tests/containers") > cluster.paths.index("tests/cluster")
    assert cluster.nice == 0 and all(lane.nice > 0 for lane in LANES if lane is not cluster)
    assert command(LANES[1], ["-x"])[:3] == ["nice", "-n", str(lanes.NICE)]


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
    two = (Lane("first", (str(tmp_path / "test_a.py"),)),
           Lane("second", (str(tmp_path / "test_b.py"),), nice=3))  # fmt: skip
    code = run_lanes(["-p", "no:cacheprovider", "--rootdir", str(tmp_path)], two)
    out = capsys.readouterr().out
    assert code == 1, out
    assert "[first ] " in out and "1 passed" in out
    assert "[second] " in out and "lane b fails on purpose" in out
    assert "  first  exit   0" in out and "  second exit   1" in out
    assert "  all    exit   1" in out
