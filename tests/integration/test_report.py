"""`logberg report`: the pure parts (hourly grain, charts, page), then a generated
fortnight with known ground truth through ingest, analytics and the report, read back as
data and as a page in headless Chromium with the network off."""

from __future__ import annotations

import datetime as dt
import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from logberg.errors import ConfigError
from logberg.lakehouse.schema import DAILY_TOP_IPS, WEEKLY_ANALYTICS, WEEKLY_TOP_IPS
from logberg.pipeline import analytics as an
from logberg.pipeline.report import charts, output, page
from logberg.pipeline.report.data import ReportConfig, ReportData, hourly, latency
from logberg.pipeline.report.run import report
from logberg_platform import s3server
from logberg_platform.local_settings import LocalSettings
from tests.conftest import reset_namespace, run_logberg
from tests.helpers import browser
from tests.integration.test_analytics import generate, run_ingest

EXTERNAL = re.compile(r"https?://", re.IGNORECASE)


def data_of(html: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="logberg-data">(.*?)</script>', html)
    assert found, "no embedded data"
    return dict(json.loads(found.group(1)))


# ---- pure ---------------------------------------------------------------------------------


def test_hourly_splits_humans_and_bots(spark: SparkSession) -> None:
    d = dt.date(2025, 3, 3)
    logs = spark.createDataFrame(
        [(d, 9, False, 100), (d, 9, True, 10), (d, 9, False, None), (d, 10, None, 5)],
        "date DATE, hour INT, is_bot BOOLEAN, response_size BIGINT",
    )
    expected = spark.createDataFrame(
        [(d, 9, 2, 1, 100, 10), (d, 10, 1, 0, 5, 0)],
        "date DATE, hour INT, humans BIGINT, bots BIGINT, human_bytes BIGINT, bot_bytes BIGINT",
    )
    assertDataFrameEqual(hourly(logs), expected, checkRowOrder=True)


def test_latency_comes_from_daily_latency_over_all_requests(spark: SparkSession) -> None:
    d = dt.date(2025, 3, 3)
    rows = [
        (d, "status", "All", None, 1200, 40, 950, 2100),
        (d, "status", "Success", None, 1000, 35, 900, 2000),
        (d, "path", None, "/slow", 30, 3000, 4000, 5000),
    ]
    daily = spark.createDataFrame(
        rows, "date DATE, scope STRING, status_category STRING, url_path STRING, "
        "requests BIGINT, p50_ms INT, p95_ms INT, p99_ms INT",
    )  # fmt: skip
    got = latency(daily)
    assert got == [{"date": "2025-03-03", "requests": 1200, "p50": 40, "p95": 950, "p99": 2100}]
    assert latency(daily.where("scope = 'path'")) is None
    html = page.latency(got)
    assert "950 ms" in html and "2,100 ms" in html and "1,200" in html


def test_thinned_labels_never_overlap() -> None:
    for n, every in ((24, 1), (24 * 28, 24), (24 * 90, 24), (7, 1)):
        labels = [f"Mon 03-{i:02d}" if i % every == 0 else "" for i in range(n)]
        slot = (charts.WIDTH - 64) / n
        drawn = charts.thin(labels, slot)
        assert drawn, n
        for a, b in itertools.pairwise(drawn):
            assert (b - a) * slot >= len(labels[a]) * charts.CHAR + charts.GAP, (n, a, b)


def test_nice_axis_tops() -> None:
    assert [charts.nice_max(v) for v in (0, 7, 13, 240, 2600)] == [1, 10, 20, 250, 5000]


def test_an_empty_lakehouse_gives_no_data_in_every_section() -> None:
    html = page.render(ReportData("2025-03-01", "2025-03-28", "2025-03-29T00:00:00", {}))
    sections = re.findall(r'<section id="([^"]+)">(.*?)</section>', html)
    assert len(sections) == 9
    for sid, body in sections:
        assert "no data" in body, sid
    assert "$request_time" in html  # why latency has none
    assert not EXTERNAL.search(html)


def test_config_errors_name_the_setting() -> None:
    with pytest.raises(ConfigError, match="--since 2025-03-10 is after --until 2025-03-01"):
        ReportConfig(since=dt.date(2025, 3, 10), until=dt.date(2025, 3, 1))
    with pytest.raises(ConfigError, match=re.escape("--output 'ftp://x/r.html'")):
        output.resolve("ftp://x/r.html")
    assert output.resolve("s3a://b/reports/") == "s3a://b/reports/logberg-report.html"


# ---- a generated fortnight ----------------------------------------------------------------

START, END = "2025-03-03", "2025-03-16"  # ISO weeks 2025-W10 and W11
TOP = 10


@pytest.fixture(scope="module")
def fortnight(
    spark: SparkSession, lakehouse: LocalSettings, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], Path]:
    reset_namespace(spark)
    out = tmp_path_factory.mktemp("report-fortnight")
    truth = generate(out / "landing", 77, START, END, files=6, lines=3000)
    run_ingest(spark, out / "landing")
    an.analytics(spark, an.AnalyticsConfig(top_n=TOP))
    html = out / "report.html"
    result = report(spark, ReportConfig(output=str(html)), lakehouse.warehouse.as_uri())
    assert result.uri == html.as_uri() and result.bytes == html.stat().st_size
    return truth, html


def gold(spark: SparkSession, statement: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(statement).collect()]


@pytest.mark.integration
def test_the_embedded_data_is_the_gold_tables(spark: SparkSession, fortnight) -> None:
    truth, html = fortnight
    text = html.read_text()
    data = data_of(text)
    assert (data["since"], data["until"]) == (START, END)  # the analysed days (fewer than 28)
    daily = gold(spark, f"SELECT date, rank, ip_address, request_count FROM {DAILY_TOP_IPS}")
    assert sorted(
        (dt.date.fromisoformat(day), r["rank"], r["ip_address"], r["request_count"])
        for day, rows in data["daily_ips"].items()
        for r in rows
    ) == sorted(daily)
    weekly = gold(spark, f"SELECT week_start_date, ip_address, request_count FROM {WEEKLY_TOP_IPS}")
    assert sorted(
        (dt.date.fromisoformat(w), r["ip_address"], r["request_count"])
        for w, rows in data["weekly_ips"].items()
        for r in rows
    ) == sorted(weekly)
    totals = gold(spark, f"SELECT week_start_date, total_requests FROM {WEEKLY_ANALYTICS}")
    assert sorted((dt.date.fromisoformat(w["week_start_date"]), w["total_requests"])
                  for w in data["weeks"]) == sorted(totals)  # fmt: skip
    # And the gold tables are the ground truth.
    assert sum(r["humans"] + r["bots"] for r in data["hourly"]) == truth["totals"]["valid"]
    assert sum(r["bots"] for r in data["hourly"]) == truth["totals"]["bots"]
    for day, expected in truth["days"].items():
        assert [[r["ip_address"], r["request_count"]] for r in data["daily_ips"][day]] == (
            expected["top_ips"][:TOP]
        ), day
    assert data["latency"] is None
    assert not EXTERNAL.search(text), "an http(s) reference in the report"


@pytest.mark.integration
def test_the_cli_writes_the_report_to_s3(lakehouse_env: dict[str, str], fortnight) -> None:
    _, html = fortnight
    settings = LocalSettings.from_env()
    env = {**lakehouse_env, **s3server.client_env(settings)}
    env["LOGBERG_S3_ENDPOINT"] = settings.s3_endpoint
    r = run_logberg(["report", "--output", "s3a://logberg/reports/", "--since", START], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "report: wrote s3a://logberg/reports/logberg-report.html" in r.stdout, r.stdout
    body = (
        s3server.boto3_client(settings)
        .get_object(Bucket="logberg", Key="reports/logberg-report.html")["Body"]
        .read()
        .decode()
    )
    data = data_of(body)
    assert (data["since"], data["until"]) == (START, END)
    assert data["daily_ips"] == data_of(html.read_text())["daily_ips"]

    bad = run_logberg(["report", "--since", END, "--until", START], env)
    assert bad.returncode != 0 and f"--since {END} is after --until {START}" in bad.stderr


# ---- in the browser -----------------------------------------------------------------------


def need_chromium() -> None:
    if browser.chromium() is None:
        pytest.skip("no Chromium here (`make browser` installs Debian's chromium)")


def page_text_rows(pg: Any, kind: str, key: str) -> list[list[str]]:
    rows = pg.locator(f'table[data-kind="{kind}"][data-key="{key}"] tr').all()
    return [[c.text_content().strip() for c in row.locator("td").all()] for row in rows[1:]]


OVERLAPS = """() => {
  const hits = [];
  for (const svg of document.querySelectorAll('svg.chart')) {
    const frame = svg.getBoundingClientRect();
    const boxes = [...svg.querySelectorAll('text')]
      .map(t => [t.textContent, t.getBoundingClientRect()]);
    for (const [a, p] of boxes)
      if (p.left < frame.left - 0.5 || p.right > frame.right + 0.5) hits.push(`${a} clipped`);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, p] = boxes[i], [b, q] = boxes[j];
      const apart = p.right - 0.5 <= q.left || q.right - 0.5 <= p.left
        || p.bottom - 0.5 <= q.top || q.bottom - 0.5 <= p.top;
      if (!apart) hits.push(`${a} / ${b}`);
    }
  }
  return hits;
}"""


@pytest.mark.integration
def test_the_page_in_chromium_shows_the_tables(fortnight) -> None:
    need_chromium()
    truth, html = fortnight
    with browser.open_offline(html) as opened:
        pg = opened.page
        assert opened.errors == []
        assert opened.requests == [html.resolve().as_uri()], "the page asked for more"
        charts_ = pg.locator("svg.chart").all()
        assert len(charts_) == 5  # requests, bytes, heatmap, devices, status
        for chart in charts_:
            assert chart.locator(".mark").count() > 0, chart.get_attribute("class")
        for day, expected in truth["days"].items():
            shown = page_text_rows(pg, "daily", day)
            assert [[r[1].removesuffix("bot"), int(r[2].replace(",", ""))] for r in shown] == (
                expected["top_ips"][:TOP]
            ), day
        for week in truth["weeks"].values():
            shown = page_text_rows(pg, "weekly", week["week_start"])
            assert [[r[1].removesuffix("bot"), int(r[2].replace(",", ""))] for r in shown] == (
                week["top_ips"][:TOP]
            )
        total = f"{truth['totals']['valid']:,} in the period"
        assert total in pg.locator("#requests h2").text_content()
        last = truth["weeks"]["2025-W11"]
        card = pg.locator('#headline .card[data-key="total_requests"]')
        assert card.locator(".value").text_content() == f"{last['valid']:,}"
        assert "vs previous week" in card.text_content()
        assert "no data" in pg.locator("#latency").text_content()
        assert pg.evaluate(OVERLAPS) == []


@pytest.mark.integration
@pytest.mark.parametrize(("width", "dark"), [(390, False), (800, False), (1280, True)])
def test_labels_never_overlap_and_the_theme_follows_the_system(
    fortnight, width: int, dark: bool
) -> None:
    need_chromium()
    _, html = fortnight
    with browser.open_offline(html, width=width, dark=dark) as opened:
        pg = opened.page
        assert pg.evaluate(OVERLAPS) == []
        # The page scrolls a chart sideways rather than shrinking its labels.
        widths = pg.evaluate(
            "[...document.querySelectorAll('svg.chart')].map(s => s.getBoundingClientRect().width)"
        )
        assert min(widths) >= charts.WIDTH
        # ... and so do the tables: the page itself never scrolls sideways.
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        bg = pg.evaluate("getComputedStyle(document.body).backgroundColor")
        assert (bg == "rgb(18, 22, 28)") == dark, bg


@pytest.mark.integration
def test_a_screenshot_at_1280px_is_not_blank(fortnight, tmp_path: Path) -> None:
    need_chromium()
    from PIL import Image

    _, html = fortnight
    shot = tmp_path / "report.png"
    browser.screenshot(html, shot)
    image = Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")
    assert image.width == 1280
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None
    biggest = max(n for n, _ in colours)
    assert len(colours) > 50, "a flat image"
    assert biggest < 0.97 * image.width * image.height, "nearly one colour"
