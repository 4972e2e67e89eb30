"""The log generator: line format, realism, determinism, layout, manifest and CLI errors.

Generated files are re-read with an independent strict parser and classifier, and the
recount must match the manifest exactly.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import ipaddress
import itertools
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from generator import __version__
from generator.cli import main
from generator.progress import Progress
from tests.unit.test_generator_agents import rule_label as device_of

REPO = Path(__file__).resolve().parents[2]

LINE = re.compile(
    r'(?P<ip>[0-9a-f:.]+) - (?P<user>[^ "\[\]]+) \[(?P<ts>[^\]]*)\] '
    r'"(?P<req>[^"]*)" (?P<status>\d{3}) (?P<bytes>\d+|-) '
    r'"(?P<ref>[^"]*)" "(?P<ua>[^"]*)"(?: "(?P<xff>[^"]*)")?'
)
TS = re.compile(r"(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})")
MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONTHS = {m: i + 1 for i, m in enumerate(MONTH_NAMES)}
REQUEST = re.compile(
    r"(GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH|CONNECT) (\S+) HTTP/(1\.0|1\.1|2\.0)"
)

DEVICES = ("desktop", "mobile", "tablet", "bot", "other")
FORMATS = ("combined", "main")


@dataclass
class Line:
    kind: str  # valid | odd | truncated | bad_timestamp | garbage
    text: str
    m: re.Match[str] | None = None
    utc: datetime | None = None
    local: datetime | None = None

    def __getitem__(self, group: str) -> str:
        assert self.m is not None
        return self.m[group]


def parse_time(text: str) -> tuple[datetime, datetime] | None:
    """(UTC, local) for a $time_local, or None if it names an impossible time."""
    t = TS.fullmatch(text)
    if not t or t[2] not in MONTHS:
        return None
    try:
        local = datetime(int(t[3]), MONTHS[t[2]], int(t[1]), int(t[4]), int(t[5]), int(t[6]))
    except ValueError:
        return None
    offset = timedelta(hours=int(t[8]), minutes=int(t[9])) * (-1 if t[7] == "-" else 1)
    return local - offset, local


def classify(text: str) -> Line:
    m = LINE.fullmatch(text)
    if m is None:
        try:
            ipaddress.ip_address(text.split(" ", 1)[0])
            return Line("truncated", text)
        except ValueError:
            return Line("garbage", text)
    times = parse_time(m["ts"])
    if times is None:
        return Line("bad_timestamp", text, m)
    kind = "valid" if REQUEST.fullmatch(m["req"]) else "odd"
    return Line(kind, text, m, *times)


def read_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    text = data.decode("utf-8")
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    assert all(line and "\r" not in line for line in lines), "empty line or CR in a line"
    return lines


def generate(out: Path, *args: str) -> int:
    return main(["--output", out.as_uri(), "--quiet", *args])


@dataclass
class Run:
    root: Path
    manifest: dict[str, Any]
    files: dict[str, list[Line]]  # manifest path -> parsed lines

    @property
    def lines(self) -> list[Line]:
        return [line for lines in self.files.values() for line in lines]

    @property
    def valid(self) -> list[Line]:
        return [line for line in self.lines if line.kind in ("valid", "odd")]


def load(root: Path) -> Run:
    (path,) = (root / "raw/nginx/_manifests").glob("*.json")
    manifest = json.loads(path.read_text())
    files = {
        f["path"]: [classify(t) for t in read_lines(root / f["path"])] for f in manifest["files"]
    }
    return Run(root, manifest, files)


WEEK = ("--start-date", "2025-01-06", "--end-date", "2025-01-12")
MAIN_ARGS = ("--num-files", "4", "--lines-per-file", "10000", *WEEK, "--seed", "7")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("gen") / "landing"
    assert generate(root, *MAIN_ARGS, "--malformed-rate", "0.01") == 0
    return load(root)


# --- line format --------------------------------------------------------------------


def test_every_line_is_valid_odd_or_a_known_malformed_kind(run: Run) -> None:
    kinds = Counter(line.kind for line in run.lines)
    assert set(kinds) == {"valid", "odd", "truncated", "bad_timestamp", "garbage"}
    for line in run.valid:
        ip = line["ip"]
        assert ipaddress.ip_address(ip).compressed == ip  # canonical, compressed IPv6
        assert line["xff"] is None  # combined format
        assert line.m is not None and line.m["ts"].endswith(" +0000")


def test_malformed_lines_are_what_their_kind_says(run: Run) -> None:
    for line in run.lines:
        if line.kind == "truncated":
            assert len(line.text) > len(line.text.split(" ", 1)[0])  # cut after the IP
        elif line.kind == "garbage":
            assert "[" not in line.text and '"' not in line.text and line.text.strip()
        elif line.kind == "bad_timestamp":
            assert line["ts"].endswith(" +0000")


def test_odd_but_valid_lines_look_like_nginx_writes_them(run: Run) -> None:
    odd = [line for line in run.lines if line.kind == "odd"]
    assert odd
    for line in odd:
        assert line["status"] == "400" and line["ref"] == "-" and line["ua"] == "-"
        assert line["req"] in ("-", "GET /", "GET /index.html") or line["req"].startswith(
            "\\x16\\x03\\x01"
        )
    assert any(line["req"].startswith("\\x16\\x03") for line in odd)


def test_lines_are_sorted_and_inside_their_files_window(run: Run) -> None:
    for f in run.manifest["files"]:
        times = [line.utc for line in run.files[f["path"]] if line.utc is not None]
        assert times == sorted(times)
        lo = datetime.fromisoformat(f["window_start"].rstrip("Z"))
        hi = datetime.fromisoformat(f["window_end"].rstrip("Z"))
        assert lo <= times[0] and times[-1] < hi
    windows = [(f["window_start"], f["window_end"]) for f in run.manifest["files"]]
    assert windows[0][0] == "2025-01-06T00:00:00Z" and windows[-1][1] == "2025-01-13T00:00:00Z"
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))


def test_requests_statuses_and_sizes_correlate_with_paths(run: Run) -> None:
    by_kind: dict[str, Counter[str]] = {"static": Counter(), "probe": Counter(), "api": Counter()}
    for line in run.valid:
        if line.kind == "odd":
            continue
        req = REQUEST.fullmatch(line["req"])
        assert req is not None
        method, path = req[1], req[2]
        status, size = line["status"], line["bytes"]
        if status in ("304", "204") or method == "HEAD":
            assert size in ("0", "-")
        else:
            assert size != "-"
        if method in ("PUT", "DELETE", "OPTIONS"):
            assert path.startswith("/api/v1/")
        if path.startswith("/static/"):
            by_kind["static"][status] += 1
        elif path.startswith("/api/v1/"):
            by_kind["api"][method] += 1
        elif path in ("/.env", "/wp-login.php", "/.git/config", "/phpmyadmin/", "/xmlrpc.php"):
            by_kind["probe"][status] += 1
    static = by_kind["static"]
    assert (static["200"] + static["304"]) / static.total() > 0.95 and static["304"] > 0
    probes = by_kind["probe"]
    assert probes["404"] / probes.total() > 0.6
    api = by_kind["api"]
    assert api["GET"] / api.total() > 0.5 and {"POST", "PUT", "DELETE", "OPTIONS"} <= set(api)
    assert any("?" in line["req"] and "/api/v1/" in line["req"] for line in run.valid)


def test_some_fields_carry_nginx_escapes(run: Run) -> None:
    assert any("\\x22" in line["req"] for line in run.valid)


def test_referrers_depend_on_the_client(run: Run) -> None:
    refs: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
    for line in run.valid:
        ref = line["ref"]
        kind = "-" if ref == "-" else "internal" if "shop.example" in ref else "external"
        refs[device_of(line["ua"]) == "bot"][kind] += 1
    bots, humans = refs[True], refs[False]
    assert bots["-"] / bots.total() > 0.9
    assert humans["internal"] > humans["external"] > 0 and humans["-"] > 0


# --- realism -------------------------------------------------------------------------


def test_ip_popularity_is_heavy_tailed_and_led_by_bots(run: Run) -> None:
    ips = Counter(line["ip"] for line in run.valid)
    ranked = ips.most_common()
    top = ranked[: max(1, len(ranked) // 100)]
    assert sum(n for _, n in top) / ips.total() > 0.10
    top_uas = {line["ua"] for line in run.valid if line["ip"] in dict(ranked[:10])}
    assert any(device_of(ua) == "bot" for ua in top_uas)
    v6 = sum(1 for ip in ips if ":" in ip) / len(ips)
    assert 0.01 < v6 < 0.10


def test_device_class_shares(run: Run) -> None:
    shares = Counter(device_of(line["ua"]) for line in run.valid)
    total = shares.total()
    assert 0.15 < shares["bot"] / total < 0.45
    assert 0.25 < shares["mobile"] / total < 0.50
    assert 0.15 < shares["desktop"] / total < 0.45
    assert 0.01 < shares["tablet"] / total < 0.08
    assert shares["other"] / total < 0.06
    assert len({line["ua"] for line in run.valid}) >= 60


def test_each_client_ip_keeps_its_user_agents(run: Run) -> None:
    uas: dict[str, set[str]] = {}
    for line in run.valid:
        if line.kind == "valid":
            uas.setdefault(line["ip"], set()).add(line["ua"])
    # Stable IP+UA pairs; a few addresses are shared by clients behind one NAT.
    assert sum(len(s) > 1 for s in uas.values()) / len(uas) < 0.05


def test_traffic_has_a_daily_and_weekly_rhythm(run: Run) -> None:
    hours = Counter(line.local.hour for line in run.valid if line.local is not None)
    assert len(hours) == 24
    assert max(hours.values()) / min(hours.values()) > 2
    desktop = {True: Counter[str](), False: Counter[str]()}
    for line in run.valid:
        assert line.local is not None
        desktop[line.local.weekday() >= 5][device_of(line["ua"])] += 1
    weekend, weekday = desktop[True], desktop[False]
    assert weekend["desktop"] / weekend.total() < weekday["desktop"] / weekday.total()


def test_malformed_rate_is_about_what_was_asked(run: Run) -> None:
    lines = run.lines
    malformed = sum(line.kind not in ("valid", "odd") for line in lines)
    assert 0.006 < malformed / len(lines) < 0.014
    odd = sum(line.kind == "odd" for line in lines)
    assert 0 < odd / len(lines) < 0.003


# --- manifest ------------------------------------------------------------------------


def test_manifest_describes_the_run(run: Run) -> None:
    m = run.manifest
    assert m["generator_version"] == __version__
    assert m["seed"] == 7 and m["args"]["seed"] == 7 and m["args"]["lines_per_file"] == 10000
    assert m["manifest"]["path"] == f"raw/nginx/_manifests/{m['run_id']}.json"
    assert len(m["files"]) == 4


def test_manifest_files_exist_with_their_hash_and_layout(run: Run) -> None:
    m = run.manifest
    listed = set()
    for f in m["files"]:
        path = run.root / f["path"]
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["bytes"]
        assert f["uncompressed_bytes"] == len(gzip.decompress(data))
        assert f["path"] == f"raw/nginx/dt={f['dt']}/{path.name}"
        assert m["run_id"] in path.name and path.name.endswith(".log.gz")
        first = next(line for line in run.files[f["path"]] if line.utc is not None)
        assert f["dt"] == f["first_ts"][:10]
        assert first.utc is not None and first.utc.date().isoformat() == f["dt"]
        listed.add(path)
    on_disk = {p for p in (run.root / "raw/nginx").rglob("*") if p.is_file()}
    assert on_disk == listed | {run.root / m["manifest"]["path"]}


def test_manifest_counts_match_an_independent_recount(run: Run) -> None:
    m = run.manifest
    for f in m["files"]:
        kinds = Counter(line.kind for line in run.files[f["path"]])
        assert f["lines"] == len(run.files[f["path"]]) == 10000
        assert f["malformed"] == {k: kinds[k] for k in ("truncated", "bad_timestamp", "garbage")}
        assert f["malformed_total"] == sum(f["malformed"].values())
        assert f["odd_valid"] == kinds["odd"]
        assert f["valid"] == kinds["valid"] + kinds["odd"]

    days: dict[str, dict[str, Any]] = {}
    for line in run.valid:
        assert line.utc is not None
        day = days.setdefault(line.utc.date().isoformat(), {"dev": Counter(), "ips": Counter()})
        day["dev"][device_of(line["ua"])] += 1
        day["ips"][line["ip"]] += 1
    assert set(m["days"]) == {(date(2025, 1, 6) + timedelta(d)).isoformat() for d in range(7)}
    for key, expect in m["days"].items():
        got = days[key]
        assert expect["device_types"] == {d: got["dev"][d] for d in DEVICES}
        assert expect["valid"] == got["dev"].total()
        assert expect["bots"] == got["dev"]["bot"]
        top = sorted(got["ips"].items(), key=lambda kv: (-kv[1], kv[0]))[:25]
        assert expect["top_ips"] == [list(kv) for kv in top]


def test_manifest_totals_days_and_weeks_add_up(run: Run) -> None:
    m = run.manifest
    t = m["totals"]
    assert (
        t["valid"]
        == sum(f["valid"] for f in m["files"])
        == sum(d["valid"] for d in m["days"].values())
    )
    assert t["lines"] == t["valid"] + t["malformed_total"] == 40000
    assert t["odd_valid"] == sum(f["odd_valid"] for f in m["files"])
    assert t["malformed"]["truncated"] == sum(f["malformed"]["truncated"] for f in m["files"])
    # 2025-01-06 is a Monday: one whole ISO week.
    assert list(m["weeks"]) == ["2025-W02"]
    week = m["weeks"]["2025-W02"]
    assert week["week_start"] == "2025-01-06" and week["valid"] == t["valid"]
    for d in DEVICES:
        assert week["device_types"][d] == sum(x["device_types"][d] for x in m["days"].values())
    counts = [n for _, n in week["top_ips"]]
    assert len(counts) == 25 and counts == sorted(counts, reverse=True)


def test_iso_weeks_use_the_iso_year_of_the_thursday(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("--start-date", "2024-12-28", "--end-date", "2025-01-06", "--seed", "1")
    assert generate(out, "--num-files", "2", "--lines-per-file", "2000", *args) == 0
    weeks = load(out).manifest["weeks"]
    assert list(weeks) == ["2024-W52", "2025-W01", "2025-W02"]
    assert [w["week_start"] for w in weeks.values()] == ["2024-12-23", "2024-12-30", "2025-01-06"]
    assert [w["days"] for w in weeks.values()] == [2, 7, 1]


# --- options ---------------------------------------------------------------------------


def test_main_format_and_time_zone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("--format", "main", "--tz", "-0800", "--no-gzip", "--seed", "3", "--clients", "300")
    assert generate(out, "--num-files", "2", "--lines-per-file", "3000", *WEEK, *args) == 0
    r = load(out)
    assert all(p.endswith(".log") for p in r.files)
    assert {line.kind for line in r.lines} <= {"valid", "odd"}  # malformed rate 0
    assert len({line["ip"] for line in r.valid}) <= 300
    for line in r.valid:
        assert line["xff"] is not None and line["ts"].endswith(" -0800")
        assert line.local is not None and line.utc is not None
        assert line.utc - line.local == timedelta(hours=8)
    assert any(line["xff"] != "-" for line in r.valid)
    # The first line of the week is at local 2025-01-05 (Sunday) 16:00 or later.
    first = r.files[r.manifest["files"][0]["path"]][0]
    assert first.local is not None and first.local >= datetime(2025, 1, 5, 16)


def test_same_seed_and_args_give_identical_bytes(run: Run, tmp_path: Path) -> None:
    again = tmp_path / "again"
    assert generate(again, *MAIN_ARGS, "--malformed-rate", "0.01") == 0
    m = load(again).manifest
    assert m["run_id"] == run.manifest["run_id"]
    for a, b in zip(run.manifest["files"], m["files"], strict=True):
        assert a["path"] == b["path"] and a["sha256"] == b["sha256"]
        assert (again / b["path"]).read_bytes() == (run.root / a["path"]).read_bytes()
        header = (again / b["path"]).read_bytes()[:10]
        assert header[4:8] == b"\0\0\0\0" and not header[3] & 0x08  # mtime 0, no name


def test_a_new_seed_adds_a_run_without_touching_the_first(tmp_path: Path) -> None:
    out = tmp_path / "out"
    small = ("--num-files", "2", "--lines-per-file", "2000", *WEEK)
    assert generate(out, *small, "--seed", "1") == 0
    first = load(out)
    before = {p: (out / p).read_bytes() for p in first.files}
    assert generate(out, *small, "--seed", "2") == 0
    manifests = sorted((out / "raw/nginx/_manifests").glob("*.json"))
    assert len(manifests) == 2
    second = json.loads(
        next(p for p in manifests if first.manifest["run_id"] not in p.name).read_text()
    )
    assert not set(before) & {f["path"] for f in second["files"]}
    assert {f["sha256"] for f in first.manifest["files"]}.isdisjoint(
        {f["sha256"] for f in second["files"]}
    )
    assert all((out / p).read_bytes() == data for p, data in before.items())
    # Changing any other argument changes the names too.
    assert generate(out, *small, "--seed", "1", "--malformed-rate", "0.001") == 0
    assert len(list((out / "raw/nginx/_manifests").glob("*.json"))) == 3


def test_a_failed_run_leaves_no_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    # A file where the second file's partition directory must go.
    (out / "raw/nginx").mkdir(parents=True)
    (out / "raw/nginx/dt=2025-01-07").write_text("in the way")
    args = ("--num-files", "2", "--lines-per-file", "500", "--start-date", "2025-01-06")
    assert generate(out, *args, "--end-date", "2025-01-07", "--seed", "1") == 1
    assert "generate: error:" in capsys.readouterr().err
    assert not (out / "raw/nginx/_manifests").exists()
    assert not list((out / "raw/nginx").rglob(".*.tmp"))


# --- command line -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--start-date", "2025-01-07", "--end-date", "2025-01-06"],
        ["--start-date", "2025-02-30"],
        ["--start-date", "07/01/2025"],
        ["--num-files", "0"],
        ["--num-files", "-3"],
        ["--lines-per-file", "0"],
        ["--lines-per-file", "ten"],
        ["--clients", "0"],
        ["--format", "apache"],
        ["--app", "apache"],
        ["--tz", "UTC"],
        ["--tz", "+2500"],
        ["--tz", "+0560"],
        ["--malformed-rate", "1.5"],
        ["--malformed-rate", "-0.1"],
        ["--endpoint-url", "http://127.0.0.1:9"],
        ["--bucket", "logberg"],
        ["--no-such-flag"],
    ],
)
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["--output", out.as_uri(), "--quiet", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("generate: error: ") and captured.err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [[], ["--output", "ftp://host/x"], ["--output", "s3://Bad_Bucket/x"], ["--bucket", "x"]],
)
def test_bad_outputs_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("generate: error: ") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--output", "kafka://h:1/logs", "--manifest-to", "kafka://h:1/m"], "--manifest-to"),
        (
            ["--output", "kafka:///logs", "--manifest-to", "file:///tmp/m"],
            "LOGBERG_KAFKA_BOOTSTRAP",
        ),
        (["--output", "kafka://h:1/bad name", "--manifest-to", "file:///tmp/m"], "kafka://HOST"),
        (["--output", "file:///tmp/x", "--message", "json"], "are for a kafka:// output"),
        (
            ["--output", "kafka://127.0.0.1:1/logs", "--manifest-to", "file:///tmp/m"],
            "the Kafka brokers at 127.0.0.1:1 do not answer",
        ),
    ],
)
def test_a_wrong_kafka_output_exits_2_naming_it(
    args: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LOGBERG_KAFKA_BOOTSTRAP", raising=False)
    assert main(["--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("generate: error: ") and says in err, err


def test_a_topics_manifest_goes_under_the_home_unless_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator.cli import parse_config

    monkeypatch.delenv("LOGBERG_PROFILE", raising=False)
    monkeypatch.setenv("LOGBERG_HOME", str(tmp_path / "home"))
    cfg = parse_config(["--output", "kafka://h:1/nginx"])
    assert cfg.manifest_to is not None
    assert cfg.manifest_to.path == tmp_path / "home" / "kafka-manifests" / "nginx"
    given = parse_config(["--output", "kafka://h:1/nginx", "--manifest-to", "s3://bkt/m"])
    assert given.manifest_to is not None and given.manifest_to.uri == "s3://bkt/m"
    # A file output has no manifest elsewhere: beside the files, as before.
    assert parse_config(["--output", (tmp_path / "o").as_uri()]).manifest_to is None


def test_logbergs_default_home_is_the_platforms(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator does not import the platform; its default home is the same."""
    from generator.config import logberg_home
    from logberg_platform.local_settings import LocalSettings

    monkeypatch.delenv("LOGBERG_HOME", raising=False)
    assert logberg_home() == LocalSettings.from_env().home == REPO / ".logberg"
    monkeypatch.setenv("LOGBERG_HOME", "/srv/lb/../logberg")
    assert logberg_home() == LocalSettings.from_env().home == Path("/srv/logberg")


def test_in_a_cluster_a_topics_manifest_needs_manifest_to(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOGBERG_PROFILE", "cluster")
    assert main(["--quiet", "--output", "kafka://h:1/nginx"]) == 2
    err = capsys.readouterr().err
    assert "LOGBERG_PROFILE=cluster" in err and "needs --manifest-to s3://" in err, err


def test_an_unwritable_output_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["--output", (blocker / "sub").as_uri(), "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("generate: error: cannot write")


def test_an_unreachable_s3_endpoint_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    args = ["--output", "s3://logberg/p", "--endpoint-url", f"http://127.0.0.1:{port}"]
    assert main([*args, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("generate: error: cannot reach S3") and err.count("\n") == 1


def test_console_entry_points(tmp_path: Path) -> None:
    def logberg(*args: str) -> subprocess.CompletedProcess[str]:
        exe = Path(sys.executable).parent / "logberg"
        return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=REPO)

    helped = logberg("generate", "--help")
    assert helped.returncode == 0 and "--lines-per-file" in helped.stdout
    bad = logberg("generate", "--num-files", "0", "--output", tmp_path.as_uri())
    assert bad.returncode == 2 and bad.stderr.startswith("generate: error: ")
    assert bad.stderr.count("\n") == 1 and not list(tmp_path.iterdir())
    out = tmp_path / "m"
    args = ["--output", out.as_uri(), "--lines-per-file", "100", "--seed", "5", "--quiet"]
    ran = subprocess.run(
        [sys.executable, "-m", "generator", *args], capture_output=True, text=True, cwd=REPO
    )
    assert ran.returncode == 0 and ran.stdout == "" and ran.stderr == ""
    assert len(list(out.rglob("*.log.gz"))) == 1


def test_the_clock_renders_every_second_of_the_day() -> None:
    from generator.render import Clock

    clock = Clock("-0330", -12_600)
    assert len(clock.hms) == 86_400
    for s, text in enumerate(clock.hms):
        assert text == f":{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d} -0330"
    # 2025-01-06 00:00:00 UTC is 2025-01-05 20:30:00 at -0330.
    assert clock.render([1_736_121_600, 1_736_121_600 + 86_399]) == [
        "05/Jan/2025:20:30:00 -0330",
        "06/Jan/2025:20:29:59 -0330",
    ]


def test_progress_goes_to_the_given_stream_only_when_enabled() -> None:
    shown, hidden = io.StringIO(), io.StringIO()
    for stream, enabled in ((shown, True), (hidden, False)):
        p = Progress(1000, enabled=enabled, stream=stream)
        p.add(500, 2048)
        p.done()
    assert "lines/s" in shown.getvalue() and "2.0 KiB" in shown.getvalue()
    assert hidden.getvalue() == ""


def test_edge_cases_all_malformed_one_client_sparse_lines(tmp_path: Path) -> None:
    for fmt in FORMATS:
        out = tmp_path / f"bad-{fmt}"
        args = ("--lines-per-file", "3000", "--malformed-rate", "1", "--format", fmt)
        assert generate(out, *args, "--seed", "1") == 0
        r = load(out)
        kinds = Counter(line.kind for line in r.lines)
        assert set(kinds) == {"truncated", "bad_timestamp", "garbage"}
        assert r.manifest["totals"]["valid"] == 0 == r.manifest["days"]["2025-01-01"]["valid"]
        assert r.manifest["totals"]["malformed"] == kinds

    out = tmp_path / "one"
    assert generate(out, "--lines-per-file", "300", "--clients", "1", "--seed", "1") == 0
    r = load(out)
    assert len({line["ip"] for line in r.valid}) == 1

    # Far fewer lines than minutes: times stay sorted, spread over the whole range.
    out = tmp_path / "sparse"
    args = ("--lines-per-file", "40", "--start-date", "2025-03-01", "--end-date", "2025-03-30")
    assert generate(out, *args, "--seed", "1") == 0
    r = load(out)
    times = [line.utc for line in r.valid if line.utc is not None]
    assert times == sorted(times) and len(times) == 40
    assert len({t.date() for t in times}) > 15


def test_busy_days_keep_the_rhythm_and_stay_deterministic(tmp_path: Path) -> None:
    # Many lines a minute take the dense sampling path.
    args = ("--lines-per-file", "30000", "--start-date", "2025-01-06", "--seed", "4")
    assert generate(tmp_path / "a", *args) == 0
    assert generate(tmp_path / "b", *args) == 0
    a, b = load(tmp_path / "a"), load(tmp_path / "b")
    assert a.manifest["files"][0]["sha256"] == b.manifest["files"][0]["sha256"]
    times = [line.utc for line in a.valid if line.utc is not None]
    assert times == sorted(times) and len(times) == 30000
    hours = Counter(t.hour for t in times)
    assert len(hours) == 24 and max(hours.values()) / min(hours.values()) > 2


def test_remote_users_are_rare_but_present(run: Run) -> None:
    users = Counter(line["user"] for line in run.valid)
    assert 0 < 1 - users["-"] / users.total() < 0.05
    assert all(re.fullmatch(r"[a-z]+", u) for u in users if u != "-")
