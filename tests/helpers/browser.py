"""Headless Chromium (Debian's `chromium`) through Playwright, with the network off: the
report's browser tests, and `make report-screenshot` (`python -m tests.helpers.browser
REPORT.html OUT.png`)."""

from __future__ import annotations

import os
import shutil
import sys
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


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m tests.helpers.browser REPORT.html OUT.png")
    screenshot(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"wrote {sys.argv[2]}")
