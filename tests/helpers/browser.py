"""Headless Chromium (Debian's `chromium`) through Playwright, with the network off: the
report's and the manual's browser tests, and the manual's screenshots:
`make report-screenshot` (`python -m tests.helpers.browser REPORT.html OUT.png`) and
`make history-screenshot` (`python -m tests.helpers.browser --history OUT.png`: the jobs
page of this home's History Server's latest application)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium() -> str | None:
    """The browser binary: $LOGBERG_CHROMIUM, else the first of NAMES on PATH."""
    given = os.environ.get("LOGBERG_CHROMIUM")
    if given:
        return given
    return next((found for name in NAMES if (found := shutil.which(name))), None)


@dataclass
class Opened:
    page: Any  # playwright.sync_api.Page
    errors: list[str] = field(default_factory=list)  # console errors and page exceptions
    requests: list[str] = field(default_factory=list)  # every URL the page asked for


@contextmanager
def open_offline(html: Path, width: int = 1280, dark: bool = False) -> Iterator[Opened]:
    """`html` in a fresh browser context that is offline, where any request but the file
    itself is recorded and aborted."""
    target = html.resolve().as_uri()
    with _browse(target, lambda url: url == target, True, width, dark) as opened:
        yield opened


@contextmanager
def open_local(url: str, width: int = 1280) -> Iterator[Opened]:
    """`url`, served from this machine (http://127.0.0.1:PORT/...), in a fresh browser context
    where any request outside that origin is recorded and aborted, so nothing leaves the host."""
    origin = "/".join(url.split("/")[:3]) + "/"
    if not origin.startswith(("http://127.0.0.1:", "http://localhost:")):
        raise ValueError(f"not a local URL: {url}")
    with _browse(url, lambda u: u.startswith(origin), False, width, False) as opened:
        yield opened


@contextmanager
def _browse(
    target: str, allowed: Callable[[str], bool], offline: bool, width: int, dark: bool
) -> Iterator[Opened]:
    from playwright.sync_api import sync_playwright

    exe = chromium()
    if exe is None:
        raise RuntimeError(f"no Chromium: install Debian's chromium (tried {', '.join(NAMES)})")
    with sync_playwright() as pw:
        # As root, Chromium refuses to start with its sandbox.
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = pw.chromium.launch(executable_path=exe, args=args)
        try:
            ctx = browser.new_context(
                viewport={"width": width, "height": 1000},
                offline=offline,
                color_scheme="dark" if dark else "light",
            )
            page = ctx.new_page()
            opened = Opened(page)

            def route(r: Any) -> None:
                opened.requests.append(r.request.url)
                r.continue_() if allowed(r.request.url) else r.abort()

            def console(message: Any) -> None:
                if message.type == "error":
                    opened.errors.append(message.text)

            ctx.route("**/*", route)
            page.on("console", console)
            page.on("pageerror", lambda e: opened.errors.append(str(e)))
            page.on("requestfailed", lambda r: opened.errors.append(f"request failed: {r.url}"))
            page.goto(target, wait_until="load")
            yield opened
        finally:
            browser.close()


def screenshot(html: Path, out: Path, width: int = 1280, height: int = 1400) -> None:
    """The top of the page at `width` px (light theme), as PNG."""
    with open_offline(html, width) as opened:
        opened.page.set_viewport_size({"width": width, "height": height})
        opened.page.screenshot(path=str(out))
        if opened.errors:
            raise RuntimeError(f"the page logged errors: {opened.errors}")


def latest_jobs_page(timeout: float = 180.0) -> str:
    """The jobs page of the application this home's History Server saw active last (after
    `make demo`: the one that ran it), once the server lists its jobs and their count holds
    for a few seconds (a running application's log is read as it grows)."""
    from logberg.errors import ServiceError
    from logberg_platform import history
    from logberg_platform.local_settings import LocalSettings

    s = LocalSettings.from_env()
    found = history.running(s)
    if found is None:
        raise RuntimeError(f"no History Server runs under {s.home}: `logberg local up --history`")
    deadline = time.monotonic() + timeout
    seen: tuple[str, int] | None = None
    while time.monotonic() < deadline:
        apps = history.applications(found.url, limit=50)
        if apps:
            app = max(apps, key=lambda a: a["attempts"][0].get("lastUpdatedEpoch", 0))["id"]
            try:  # the first read of a large log can outlast one request's timeout
                jobs = history.api(found.url, f"applications/{app}/jobs", timeout=60)
            except ServiceError:
                jobs = []
            if jobs and seen == (app, len(jobs)):
                return f"{found.url}/history/{app}/jobs/"
            seen = (app, len(jobs))
        time.sleep(3)
    raise RuntimeError(f"the History Server at {found.url} lists no application with jobs")


def screenshot_local(url: str, out: Path, width: int = 1280, height: int = 1000) -> None:
    """The top of a page served from this machine at `width` px, as PNG."""
    with open_local(url, width) as opened:
        opened.page.set_viewport_size({"width": width, "height": height})
        opened.page.wait_for_load_state("networkidle")
        opened.page.screenshot(path=str(out))
        if opened.errors:
            raise RuntimeError(f"the page logged errors: {opened.errors}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(
            "usage: python -m tests.helpers.browser REPORT.html OUT.png\n"
            "       python -m tests.helpers.browser --history OUT.png"
        )
    if sys.argv[1] == "--history":
        page = latest_jobs_page()
        screenshot_local(page, Path(sys.argv[2]))
        print(f"wrote {sys.argv[2]} of {page}")
    else:
        screenshot(Path(sys.argv[1]), Path(sys.argv[2]))
        print(f"wrote {sys.argv[2]}")
