"""The report job: gather, render, write."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import SparkSession

from logberg.pipeline.report import output, page
from logberg.pipeline.report.data import ReportConfig, gather


@dataclass(frozen=True)
class ReportResult:
    uri: str
    bytes: int
    days: int
    weeks: int
    duration_s: float

    def summary(self) -> str:
        return (
            f"report: wrote {self.uri} ({self.bytes} bytes; days={self.days} "
            f"weeks={self.weeks}) duration={self.duration_s:.1f}s"
        )


def report(spark: SparkSession, cfg: ReportConfig, warehouse: str) -> ReportResult:
    t0 = time.monotonic()
    uri = output.resolve(cfg.output or output.default_output(warehouse))
    data = gather(spark, cfg)
    size = output.write(spark, uri, page.render(data))
    return ReportResult(uri, size, len(data.daily_ips), len(data.weeks), time.monotonic() - t0)
