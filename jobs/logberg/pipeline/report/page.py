"""The report page: `ReportData` in, one self-contained HTML document out.

No script runs and nothing is fetched: styles are inline, fonts are the system's, charts
are inline SVG (`charts`). The data the page was drawn from is embedded as JSON
(<script type="application/json" id="logberg-data">), for anyone who wants the numbers.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from html import escape
from typing import Any

from logberg.pipeline.report import charts
from logberg.pipeline.report.charts import Series
from logberg.pipeline.report.data import ReportData

DEVICES = ("desktop", "mobile", "tablet", "bot", "other")
STATUSES = (
    ("Informational", "informational_count", "st1"),
    ("Success", "success_count", "st2"),
    ("Redirect", "redirect_count", "st3"),
    ("Client Error", "client_error_count", "st4"),
    ("Server Error", "server_error_count", "st5"),
)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
NO_DATA = '<p class="nodata">no data</p>'

STYLE = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1c2330; --muted: #5a6372;
  --card: #f4f6f9; --grid: #dde1e7; --c1: #2f6fde; --c2: #e07b39; --c3: #2a9d8f;
  --c4: #8e5bd6; --c5: #7a8494; --good: #1f8a4c; --bad: #c0392b; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #12161c; --fg: #e4e8ee; --muted: #9aa4b3; --card: #1c222b;
    --grid: #2d3440; --c1: #6ea2ff; --c2: #f3a063; --c3: #4cc7b8; --c4: #b28cf0;
    --c5: #a3acba; --good: #53c788; --bad: #f07463; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
main { max-width: 1000px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 32px 0 8px; }
h3 { font-size: 14px; margin: 16px 0 6px; }
.meta, .nodata, .note { color: var(--muted); } .nodata { font-style: italic; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr));
  gap: 10px; margin-top: 16px; }
.card { background: var(--card); border-radius: 8px; padding: 10px 12px; }
.card .name { color: var(--muted); font-size: 12px; }
.card .value { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .change { font-size: 12px; } .up { color: var(--good); } .down { color: var(--bad); }
.chart-box, .table-box { overflow-x: auto; } svg.chart { display: block; min-width: 960px; }
svg .label { fill: var(--muted); font-size: 12px; } svg .axis-y { text-anchor: end; }
svg .grid { stroke: var(--grid); } svg .tick { stroke: var(--muted); }
.s1, .d1 { fill: var(--c1); } .s2, .d4 { fill: var(--c2); } .d2 { fill: var(--c3); }
.d3 { fill: var(--c4); } .d5 { fill: var(--c5); } svg .cell { fill: var(--c1); }
.st1 { fill: var(--c5); } .st2 { fill: var(--c3); } .st3 { fill: var(--c1); }
.st4 { fill: var(--c2); } .st5 { fill: var(--bad); }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 4px 0 12px; }
th, td { padding: 3px 10px; text-align: right; border-bottom: 1px solid var(--grid);
  white-space: nowrap; }
th:nth-child(2), td:nth-child(2) { text-align: left; } th { color: var(--muted); font-weight: 500; }
.bot { font-size: 11px; border: 1px solid var(--c2); color: var(--c2); border-radius: 4px;
  padding: 0 4px; margin-left: 6px; }
details > summary { cursor: pointer; color: var(--muted); margin: 6px 0; }
"""


def integer(v: Any) -> str:
    return f"{int(v or 0):,}"


def size(v: Any) -> str:
    n = float(v or 0)
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{int(n)} B"


def percent(v: Any) -> str:
    return "–" if v is None else f"{100 * float(v):.1f}%"


def change(new: float | None, old: float | None, higher_is_good: bool, what: str) -> str:
    """`▲ 12.3% vs previous week` (coloured by whether the move is good)."""
    if new is None or not old:
        return '<span class="change">no previous week</span>'
    delta = (new - old) / old
    good = (delta >= 0) == higher_is_good
    arrow = "▲" if delta >= 0 else "▼"
    return (
        f'<span class="change {"up" if good else "down"}">{arrow} {abs(100 * delta):.1f}% '
        f"{what}</span>"
    )


# Headline cards: name, weekly_analytics column, format, higher is good, how it compares
# across weeks with different numbers of days with data ("sum": per day; "distinct": not
# at all; "rate": as it is).
CARDS = (
    ("Requests", "total_requests", integer, True, "sum"),
    ("Unique IPs", "unique_ips", integer, True, "distinct"),
    ("Bytes sent", "total_bytes", size, True, "sum"),
    ("Error rate", "error_rate", percent, False, "rate"),
    ("Bot share", "bot_share", percent, False, "rate"),
)


def headline(weeks: Sequence[dict[str, Any]], week_days: dict[str, int]) -> str:
    """The newest week's figures against the week before. A week with fewer days of data
    (the current one, the first one) is compared per day, never as a whole."""
    if not weeks:
        return NO_DATA
    last = weeks[-1]
    prev = weeks[-2] if len(weeks) > 1 else None
    n_last = week_days.get(last["week_start_date"], 7)
    n_prev = week_days.get(prev["week_start_date"], 7) if prev else 7
    out = [
        f'<p class="meta">ISO week {last["week_year"]}-W{last["week_of_year"]:02d} '
        f"({last['week_start_date']} to {last['week_end_date']}), {n_last} of 7 days with "
        'data</p><div class="cards">'
    ]
    for name, key, fmt, up_good, kind in CARDS:
        if prev is None:
            moved = change(None, None, up_good, "")
        elif kind == "rate" or n_last == n_prev:
            moved = change(last[key], prev[key], up_good, "vs previous week")
        elif kind == "sum":
            moved = change(
                last[key] / n_last, prev[key] / n_prev, up_good, "per day vs previous week"
            )
        else:
            moved = f'<span class="change">{n_last} vs {n_prev} days: not comparable</span>'
        out.append(
            f'<div class="card" data-key="{key}"><div class="name">{name}</div>'
            f'<div class="value">{fmt(last[key])}</div>{moved}</div>'
        )
    out.append("</div>")
    return "".join(out)


def traffic(hourly: Sequence[dict[str, Any]], bytes_: bool) -> str:
    if not hourly:
        return NO_DATA
    first = dt.date.fromisoformat(hourly[0]["date"])
    last = dt.date.fromisoformat(hourly[-1]["date"])
    by_slot = {(r["date"], r["hour"]): r for r in hourly}
    labels, tips, humans, bots = [], [], [], []
    human_key, bot_key = ("human_bytes", "bot_bytes") if bytes_ else ("humans", "bots")
    day = first
    while day <= last:
        d = day.isoformat()
        for hour in range(24):
            r = by_slot.get((d, hour), {})
            labels.append(f"{WEEKDAYS[day.weekday()]} {day:%m-%d}" if hour == 0 else "")
            tips.append(f"{d} {hour:02d}:00")
            humans.append(float(r.get(human_key) or 0))
            bots.append(float(r.get(bot_key) or 0))
        day += dt.timedelta(days=1)
    unit = (lambda v: size(v)) if bytes_ else charts.compact
    series = [Series("humans", "s1", humans), Series("bots", "s2", bots)]
    return box(charts.stacked_columns(labels, series, tips, unit))


def busiest_hours(hourly: Sequence[dict[str, Any]]) -> str:
    """Mean requests per weekday and hour (a weekday that occurs more often in the period
    does not look busier for it)."""
    if not hourly:
        return NO_DATA
    grid = [[0.0] * 24 for _ in WEEKDAYS]
    dates: list[set[str]] = [set() for _ in WEEKDAYS]
    for r in hourly:
        weekday = dt.date.fromisoformat(r["date"]).weekday()
        grid[weekday][r["hour"]] += r["humans"] + r["bots"]
        dates[weekday].add(r["date"])
    mean = [[v / max(len(dates[i]), 1) for v in row] for i, row in enumerate(grid)]
    hours = [f"{h:02d}" for h in range(24)]
    return box(charts.heatmap(WEEKDAYS, hours, mean, "requests on average"))


def device_shares(devices: dict[str, dict[str, float]]) -> str:
    if not devices:
        return NO_DATA
    days = sorted(devices)
    series = [
        Series(name, f"d{i + 1}", [devices[d].get(name, 0.0) for d in days])
        for i, name in enumerate(DEVICES)
    ]
    return box(charts.share_bars(days, series))


def status_mix(weeks: Sequence[dict[str, Any]]) -> str:
    if not weeks:
        return NO_DATA
    labels = [f"{w['week_year']}-W{w['week_of_year']:02d}" for w in weeks]
    series = [Series(name, css, [float(w[key] or 0) for w in weeks]) for name, key, css in STATUSES]
    return box(charts.share_bars(labels, series))


def ip_table(rows: Sequence[dict[str, Any]], kind: str, key: str) -> str:
    head = "<tr><th>#</th><th>IP</th><th>Requests</th><th>Bytes</th><th>Errors</th></tr>"
    body = "".join(
        f'<tr><td>{r["rank"]}</td><td class="ip">{escape(str(r["ip_address"]))}'
        f"{'<span class=bot>bot</span>' if r['is_bot'] else ''}</td>"
        f'<td class="n">{integer(r["request_count"])}</td><td>{size(r["bytes_sent"])}</td>'
        f"<td>{percent(r['error_rate'])}</td></tr>"
        for r in rows
    )
    return (
        f'<div class="table-box"><table class="top-ips" data-kind="{kind}" data-key="{key}">'
        f"{head}{body}</table></div>"
    )


def top_ips(per: dict[str, list[dict[str, Any]]], kind: str, title: Any) -> str:
    if not per:
        return NO_DATA
    out = []
    keys = sorted(per, reverse=True)  # newest first, open
    for i, key in enumerate(keys):
        out.append(
            f"<details{' open' if i == 0 else ''}><summary>{escape(title(key))}</summary>"
            f"{ip_table(per[key], kind, key)}</details>"
        )
    return "".join(out)


def latency(rows: list[dict[str, Any]] | None) -> str:
    if not rows:
        return (
            '<p class="nodata">no data: no request times in this period (a log format with '
            "nginx's <code>$request_time</code>, see <code>--log-format</code>, adds them)</p>"
        )
    head = "<tr><th>Day</th><th>Requests</th><th>p50</th><th>p95</th><th>p99</th></tr>"
    body = "".join(
        f"<tr><td>{r['date']}</td><td>{r['requests']:,}</td><td>{r['p50']:,} ms</td>"
        f"<td>{r['p95']:,} ms</td><td>{r['p99']:,} ms</td></tr>"
        for r in rows
    )
    return f'<div class="table-box"><table class="latency">{head}{body}</table></div>'


def box(svg: str) -> str:
    return f'<div class="chart-box">{svg}</div>'


def week_title(weeks: Sequence[dict[str, Any]]) -> Any:
    names = {w["week_start_date"]: f"{w['week_year']}-W{w['week_of_year']:02d}" for w in weeks}

    def title(start: str) -> str:
        return f"{names.get(start, 'week')} (from {start})"

    return title


def render(data: ReportData) -> str:
    snaps = ", ".join(f"{t} @ {s}" for t, s in sorted(data.snapshots.items()) if s is not None)
    # "</" can never close the data's <script> early.
    embedded = json.dumps(data.as_json(), sort_keys=True).replace("</", "<\\/")
    total = sum(r["humans"] + r["bots"] for r in data.hourly)
    sections = [
        ("Week over week", "headline", headline(data.weeks, data.week_days)),
        (
            f"Requests per hour ({integer(total)} in the period)",
            "requests",
            traffic(data.hourly, False),
        ),
        ("Bytes per hour", "bytes", traffic(data.hourly, True)),
        (
            "Busiest hours (UTC; mean requests per weekday and hour)",
            "heatmap",
            busiest_hours(data.hourly),
        ),
        ("Device classes by day", "devices", device_shares(data.devices)),
        ("Status classes by week", "status", status_mix(data.weeks)),
        ("Top IPs per day", "daily-ips", top_ips(data.daily_ips, "daily", lambda d: d)),
        (
            "Top IPs per ISO week",
            "weekly-ips",
            top_ips(data.weekly_ips, "weekly", week_title(data.weeks)),
        ),
        ("Latency percentiles", "latency", latency(data.latency)),
    ]
    body = "".join(
        f'<section id="{sid}"><h2>{escape(title)}</h2>{html}</section>'
        for title, sid, html in sections
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>logberg report {data.since} to {data.until}</title>"
        f"<style>{STYLE}</style></head><body><main>"
        f"<h1>nginx traffic, {data.since} to {data.until}</h1>"
        f'<p class="meta">Generated {data.generated_at} by logberg from nginx_logs'
        f"{': ' + escape(snaps) if snaps else ''}. Times are UTC.</p>"
        f"{body}"
        f'<script type="application/json" id="logberg-data">{embedded}</script>'
        "</main></body></html>\n"
    )
