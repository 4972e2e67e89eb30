"""The built manual, served from 127.0.0.1 and opened in headless Chromium with nothing
allowed off the host: its navigation leads to a page."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import browser

pytestmark = pytest.mark.integration


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(docs_site: Path) -> Iterator[str]:
    handler = functools.partial(Quiet, directory=str(docs_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_the_navigation_leads_to_a_page(served: str) -> None:
    if browser.chromium() is None:
        pytest.skip("no Chromium here (`make browser` installs Debian's chromium)")
    with browser.open_local(served) as opened:
        page = opened.page
        page.wait_for_load_state("networkidle")  # the search index too, before leaving
        nav = page.locator(".navbar ul.navbar-nav").first  # the theme's top navigation
        assert nav.is_visible()
        nav.get_by_role("link", name="Run on a laptop").click()
        page.wait_for_url(f"{served}laptop/")
        page.wait_for_load_state("networkidle")
        assert page.locator("h1").first.inner_text() == "Run on a laptop"
        outside = [u for u in opened.requests if not u.startswith(served)]
        assert not outside, f"the site asked beyond the host: {outside}"
        assert not opened.errors, opened.errors
