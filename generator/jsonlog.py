"""`--format json`: the lines of logberg's `json` preset (nginx `escape=json`), rewritten from
the ingress-nginx lines the generator renders (`Upstream` holds their timing fields).

nginx's escape=json writes `"` and `\\` escaped, control bytes as `\\n` or `\\u00XX`, and an
unset variable as an empty string (not `-`). The generator's `\\xHH` escapes of ASCII bytes
(a quoted search, a TLS handshake) become those characters; a byte above 0x7F stays written
as `\\xHH` text, as the lines would otherwise not be valid UTF-8.
"""

from __future__ import annotations

import json
import re

# ip - user [time] "request" status bytes "referer" "agent"  (what precedes the suffix)
HEAD = re.compile(r'^(\S+) - (\S+) \[([^\]]*)\] "([^"]*)" (\S+) (\S+) "([^"]*)" "([^"]*)" ')
ASCII_ESCAPE = re.compile(r"\\x([0-7][0-9A-Fa-f])")
HOST = "www.shop.example"


def text(value: str, dash_is_unset: bool = True) -> str:
    """A value as nginx writes it under escape=json, from its escape=default form."""
    if dash_is_unset and value == "-":
        return ""
    if "\\x" in value:
        value = ASCII_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), value)
    return json.dumps(value, ensure_ascii=False)[1:-1]


def line(ingress: str, values: tuple[str, ...]) -> str:
    """One JSON line from an ingress-nginx line and its suffix values (`Upstream.values`)."""
    m = HEAD.match(ingress)
    if m is None:
        raise ValueError(f"not a generated ingress-nginx line: {ingress[:120]!r}")
    ip, user, stamp, request, status, size, referer, agent = m.groups()
    length, rt, _name, addr, _rlen, urt, ustatus, rid = values
    fields = (
        ("time_local", stamp),
        ("remote_addr", ip),
        ("remote_user", text(user)),
        ("request", text(request, dash_is_unset=False)),
        ("status", status),
        ("body_bytes_sent", size),
        ("request_time", rt),
        ("http_referrer", text(referer)),
        ("http_user_agent", text(agent)),
        ("http_x_forwarded_for", ""),
        ("host", HOST),
        ("request_length", length),
        ("upstream_addr", text(addr)),
        ("upstream_status", text(ustatus)),
        ("upstream_response_time", text(urt)),
        ("request_id", rid),
    )
    return "{" + ",".join(f'"{k}":"{v}"' for k, v in fields) + "}\n"
