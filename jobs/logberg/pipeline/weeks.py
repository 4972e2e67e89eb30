"""ISO-8601 weeks, the one definition: weeks start on Monday, and a week belongs to the
year of its Thursday (so 2024-12-30 is in week 1 of 2025)."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column
from pyspark.sql import functions as F


def week_start(d: dt.date) -> dt.date:
    """The Monday of `d`'s ISO week."""
    return d - dt.timedelta(days=d.weekday())


def week_days(starts: set[dt.date]) -> set[dt.date]:
    """Every day of these weeks (given by their Mondays)."""
    return {w + dt.timedelta(days=i) for w in starts for i in range(7)}


def iso_week(date: Column) -> dict[str, Column]:
    """week_year, week_of_year, week_start_date and week_end_date of a DATE column."""
    monday = F.date_sub(date, F.weekday(date))
    return {
        "week_year": F.year(F.date_add(monday, 3)),
        "week_of_year": F.weekofyear(date),
        "week_start_date": monday,
        "week_end_date": F.date_add(monday, 6),
    }
