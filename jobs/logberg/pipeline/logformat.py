"""`--log-format`: an nginx `log_format`, compiled once into literals and typed fields.

A format is a named preset (`PRESETS`) or the format as written in nginx.conf: either the
bare string (`$remote_addr - [$time_local] "$request" ...`) or the whole directive, pasted
as is (`log_format main escape=json '{"ip":"$remote_addr",' '"t":"$time_local"}';`).

The JVM reader (`dev.logberg.LogFormat`) scans each line by the compiled tokens, left to
right, with no regex: a field ends where the literal after it starts. So a format is
refused when it cannot be scanned that way, with the place named:

* two variables with no literal between them;
* a free-text variable (`$request`, `$http_*`, ...), which may hold spaces, followed by a
  literal that does not start with `"` (nginx escapes `"` inside values, so a quoted field
  cannot end early);
* `escape=none`, under which a value may hold a raw `"`.

Known variables become typed columns (`VARIABLES`); any other variable is kept as a STRING
column named after it. `combined` (and `main`, its X-Forwarded-For extension) keep their
hand-written scanner (`dev.logberg.LineScan`), the fastest path.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from logberg.errors import ConfigError
from logberg.lakehouse.schema import FORMAT_COLUMNS, Column

COMBINED = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent"'
)
PRESETS: dict[str, str] = {
    "combined": COMBINED,
    # nginx's own example `main`: combined plus X-Forwarded-For.
    "main": COMBINED + ' "$http_x_forwarded_for"',
    # ingress-nginx's default, `upstreaminfo` (its docs: user-guide/nginx-configuration/
    # log-format).
    "ingress-nginx": (
        '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
        '"$http_referer" "$http_user_agent" $request_length $request_time '
        "[$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr "
        "$upstream_response_length $upstream_response_time $upstream_status $req_id"
    ),
    # A JSON log as commonly configured with `escape=json`; paste your own if it differs.
    "json": (
        "escape=json "
        '{"time_local":"$time_local","remote_addr":"$remote_addr",'
        '"remote_user":"$remote_user","request":"$request","status":"$status",'
        '"body_bytes_sent":"$body_bytes_sent","request_time":"$request_time",'
        '"http_referrer":"$http_referer","http_user_agent":"$http_user_agent",'
        '"http_x_forwarded_for":"$http_x_forwarded_for","host":"$host",'
        '"request_length":"$request_length","upstream_addr":"$upstream_addr",'
        '"upstream_status":"$upstream_status",'
        '"upstream_response_time":"$upstream_response_time","request_id":"$request_id"}'
    ),
}
FAST_PATH = ("combined", "main")  # scanned by LineScan, not by the compiled tokens

# Known variables: nginx name -> the access_logs column it fills (see LogFormat.java for
# each conversion). Several time variables fill `timestamp`.
VARIABLES: dict[str, str] = {
    "remote_addr": "ip_address",
    "remote_user": "remote_user",
    "time_local": "timestamp",
    "time_iso8601": "timestamp",
    "msec": "timestamp",
    "request": "request",
    "status": "status_code",
    "body_bytes_sent": "response_size",
    "http_referer": "referer",
    "http_user_agent": "user_agent",
    "http_x_forwarded_for": "forwarded_for",
    "request_time": "request_time_ms",
    "upstream_response_time": "upstream_response_time_ms",
    "request_length": "request_length",
    "upstream_addr": "upstream_addr",
    "upstream_status": "upstream_status",
    "host": "host",
    "request_id": "request_id",
    "req_id": "request_id",  # ingress-nginx's name for it
}
REQUIRED = {
    "ip_address": "$remote_addr",
    "timestamp": "$time_local, $time_iso8601 or $msec",
    "request": "$request",
    "status_code": "$status",
}
# Values that may hold spaces: they must be quoted unless last.
FREE_TEXT = re.compile(r"^(request|uri|args|query_string|(sent_)?http_\w+|cookie_\w+|arg_\w+)$")
# nginx writes a list for retries and internal redirects ("a, b : c"): scanned across the
# separators.
LISTS = re.compile(r"^upstream_\w+$")
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
# Columns the scanner or the job derives: an unknown variable must not take their names.
DERIVED = {
    "event_id", "date", "hour", "method", "url", "url_path", "query_string", "protocol",
    "status_category", "device_type", "browser", "os", "is_bot", "file_extension", "year",
    "month", "day", "week_year", "week_of_year", "source_file", "line_number",
    "processed_timestamp", "upstream_attempts", "remote_addr", "value", "reject_reason",
}  # fmt: skip


@dataclass(frozen=True)
class Token:
    literal: str | None = None  # a literal, or
    variable: str | None = None  # a variable's name (without $)

    @property
    def column(self) -> str:
        assert self.variable is not None
        return VARIABLES.get(self.variable, self.variable)


@dataclass(frozen=True)
class LogFormat:
    name: str  # the preset, or "custom"
    text: str  # the format as given (preset: its definition)
    escape: str = "default"  # nginx's escape=: default or json
    tokens: tuple[Token, ...] = field(default=())

    @property
    def label(self) -> str:
        """A preset's name, or the custom format as given (for the run table)."""
        return self.name if self.name != "custom" else f"custom: {self.text.strip()}"

    @property
    def fast_path(self) -> bool:
        return self.name in FAST_PATH

    @property
    def extras(self) -> tuple[str, ...]:
        """Columns of the variables logberg does not know: STRING, named after them."""
        return tuple(t.variable for t in self.tokens if t.variable and t.variable not in VARIABLES)

    @property
    def columns(self) -> frozenset[str]:
        """The access_logs columns this format can fill (known variables only)."""
        return frozenset(t.column for t in self.tokens if t.variable in VARIABLES)

    def spec(self) -> str:
        """The compiled format for dev.logberg.LogFormat: `escape` on the first line, then
        one token per line: `L<literal>` or `V<column> <scan> <variable>`."""
        out = [self.escape]
        for t in self.tokens:
            if t.literal is not None:
                out.append("L" + t.literal)
            else:
                assert t.variable is not None
                out.append(f"V{t.column} {scan_kind(t.variable)} {t.variable}")
        return "\n".join(out)


def scan_kind(variable: str) -> str:
    if variable == "time_local":
        return "time_local"  # 26 characters, one of them a space
    if LISTS.match(variable):
        return "list"
    return "free" if FREE_TEXT.match(variable) else "token"


def directive_body(text: str) -> tuple[str, str]:
    """(escape, format string) of a pasted `log_format name [escape=..] 'a' 'b';` or of
    a bare format string, which may start with `escape=...`."""
    s = text.strip()
    m = re.match(r"^log_format\s+\S+\s*", s)
    if m:
        s = s[m.end() :].rstrip().removesuffix(";").rstrip()
    escape = "default"
    m = re.match(r"^escape=(\S+)\s+", s)
    if m:
        escape, s = m.group(1), s[m.end() :]
    if m or text.strip().startswith("log_format"):
        s = unquote_pieces(s)
    return escape, s


def unquote_pieces(s: str) -> str:
    """nginx's string syntax: quoted pieces ('..' or "..", with backslash escapes), joined;
    an unquoted piece runs to the next blank."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c.isspace():
            i += 1
            continue
        if c in "'\"":
            j, piece = i + 1, []
            while j < len(s) and s[j] != c:
                if s[j] == "\\" and j + 1 < len(s):
                    j += 1
                piece.append(s[j])
                j += 1
            if j >= len(s):
                where = s[i : i + 20]
                raise ConfigError(f"--log-format: unterminated {c}...{c} starting at {where!r}")
            out.append("".join(piece))
            i = j + 1
        else:
            j = i
            while j < len(s) and not s[j].isspace():
                j += 1
            out.append(s[i:j])
            i = j
    return "".join(out)


def tokenize(fmt: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    for m in VARIABLE.finditer(fmt):
        if m.start() > pos:
            tokens.append(Token(literal=fmt[pos : m.start()]))
        tokens.append(Token(variable=(m.group(1) or m.group(2)).lower()))
        pos = m.end()
    if pos < len(fmt):
        tokens.append(Token(literal=fmt[pos:]))
    return tokens


def check(tokens: list[Token], fmt: str) -> None:
    """Refuse what cannot be scanned left to right, naming the place."""
    if any(t.literal and ("\n" in t.literal or "\r" in t.literal) for t in tokens):
        raise ConfigError("--log-format: a line break in the format would split log lines")
    seen: dict[str, str] = {}
    for k, t in enumerate(tokens):
        if t.variable is None:
            continue
        var, nxt = t.variable, tokens[k + 1] if k + 1 < len(tokens) else None
        if not NAME.match(var):
            raise ConfigError(f"--log-format: ${var} is not a variable name logberg can store")
        if nxt is not None and nxt.variable is not None:
            raise ConfigError(
                f"--log-format: ${var} and ${nxt.variable} have no literal between them, so "
                f"a line cannot be split between the two (at {place(tokens, k)})"
            )
        if nxt is not None and FREE_TEXT.match(var) and not (nxt.literal or "").startswith('"'):
            raise ConfigError(
                f'--log-format: ${var} may hold spaces, so it must be quoted ("${var}") '
                f"or come last (at {place(tokens, k)})"
            )
        column = t.column
        if var not in VARIABLES and var in DERIVED:
            raise ConfigError(
                f"--log-format: ${var} would be stored as column {var!r}, which logberg "
                "derives itself; rename it in a copy of the format (e.g. $http_...)"
            )
        if column in seen:
            raise ConfigError(
                f"--log-format: ${var} and ${seen[column]} both fill {column!r}; keep one"
            )
        seen[column] = var
    missing = [what for column, what in REQUIRED.items() if column not in seen]
    if missing:
        raise ConfigError(
            f"--log-format: the format has no {', no '.join(missing)}; logberg's tables need "
            f"them (format: {fmt[:80]!r})"
        )


def place(tokens: list[Token], k: int) -> str:
    """The format up to token k, ending with it: where a problem is."""
    text = "".join(f"${t.variable}" if t.variable else (t.literal or "") for t in tokens[: k + 1])
    return f"...{text[-40:]!r}" if len(text) > 40 else repr(text)


def compile_format(value: str) -> LogFormat:
    """A preset name or an nginx log_format -> LogFormat; ConfigError names the problem."""
    name = value.strip()
    text = PRESETS.get(name)
    if text is None:
        if "$" not in value:
            raise ConfigError(
                f"--log-format {value!r}: not a preset ({', '.join(PRESETS)}) and has no "
                "$variable, so it is not a log_format either"
            )
        name, text = "custom", value
    escape, fmt = directive_body(text)
    if escape not in ("default", "json"):
        raise ConfigError(
            f"--log-format: escape={escape} is not supported: with it a value may hold a raw "
            '" and a line cannot be split reliably; use escape=default or escape=json'
        )
    tokens = tokenize(fmt)
    check(tokens, fmt)
    if name == "custom" and tokenize(directive_body(PRESETS["combined"])[1]) == tokens:
        name = "combined"  # the same format: take the fast path
    return LogFormat(name, text, escape, tuple(tokens))


DEFAULT_FORMAT = "combined"


@dataclass(frozen=True)
class ClientRule:
    """Which address is the client's: nginx's $remote_addr, or the right-most address in
    X-Forwarded-For that is not a trusted proxy (nginx realip's recursive rule)."""

    source: str = "remote_addr"  # or "x-forwarded-for"
    trusted: tuple[str, ...] = ()  # CIDRs, normalised

    def __post_init__(self) -> None:
        if self.source not in ("remote_addr", "x-forwarded-for"):
            raise ConfigError(
                f"--client-ip {self.source!r}: expected remote_addr or x-forwarded-for"
            )
        if self.source == "x-forwarded-for" and not self.trusted:
            raise ConfigError(
                "--client-ip x-forwarded-for needs --trusted-proxies (the CIDRs of your load "
                "balancers): without them any client could name itself in the header"
            )
        if self.source == "remote_addr" and self.trusted:
            raise ConfigError("--trusted-proxies needs --client-ip x-forwarded-for")

    @classmethod
    def parse(cls, source: str, proxies: str | None) -> ClientRule:
        trusted = []
        for part in (proxies or "").split(","):
            if not part.strip():
                continue
            try:
                trusted.append(str(ipaddress.ip_network(part.strip(), strict=False)))
            except ValueError as e:
                raise ConfigError(f"--trusted-proxies {part.strip()!r}: {e}") from None
        return cls(source, tuple(trusted))

    def describe(self) -> str:
        """The rule as the run table keeps it."""
        if self.source == "remote_addr":
            return "remote_addr"
        return f"x-forwarded-for; trusted {','.join(self.trusted)}"

    def spec(self) -> str:
        """For dev.logberg.ClientAddress: empty (remote_addr) or the trusted CIDRs."""
        return ",".join(self.trusted)


@dataclass(frozen=True)
class Reading:
    """How ingest reads lines: the format and the client rule."""

    log_format: LogFormat = field(default_factory=lambda: compile_format(DEFAULT_FORMAT))
    client: ClientRule = field(default_factory=ClientRule)

    def columns(self) -> list[Column]:
        """The access_logs columns beyond the base ones that this reading fills: the format
        columns of its variables (and the peer, with the client from X-Forwarded-For), then
        its unknown variables as STRING."""
        fills = set(self.log_format.columns)
        if "upstream_response_time_ms" in fills:
            fills.add("upstream_attempts")
        if self.client.source != "remote_addr":
            fills.add("remote_addr")
        known = [c for c in FORMAT_COLUMNS if c.name in fills]
        return [*known, *(Column(name, "STRING") for name in self.log_format.extras)]

    def options(self) -> dict[str, str]:
        """The options of dev.logberg.LogLines for this reading."""
        out = {}
        if not self.log_format.fast_path:
            out["format"] = self.log_format.spec()
        if self.client.source != "remote_addr":
            out["client"] = self.client.spec()
        return out
