"""logberg's user-agent rules (jobs/logberg/java/dev/logberg/agents.rules) in Python.

Ingest classifies on the JVM (`dev.logberg.Agents`: ua-parser's JVM port, then these rules).
This module reads the same file and applies the same procedure to families that any
ua-parser gives, for tools outside Spark: the bench's DuckDB baseline and the tests'
reference (the Python ua-parser package). It imports no ua-parser itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

RULES_FILE = Path(__file__).resolve().parents[1] / "java" / "dev" / "logberg" / "agents.rules"
OTHER = "Other"
MARKER_KINDS = ("bot", "mobile")  # substrings of the agent, in file order
LIST_KINDS = ("tablet-device", "mobile-device", "mobile-os", "desktop-os", "unknown-bot")
KINDS = MARKER_KINDS + LIST_KINDS


@dataclass(frozen=True)
class Rules:
    markers: tuple[tuple[str, str], ...]  # (class, lower-case marker), file order
    lists: dict[str, tuple[str, ...]] = field(default_factory=dict)  # kind -> its texts

    def prefixed(self, kind: str, family: str) -> bool:
        return family.startswith(self.lists.get(kind, ()))


@cache
def rules(path: Path = RULES_FILE) -> Rules:
    markers: list[tuple[str, str]] = []
    lists: dict[str, list[str]] = {k: [] for k in LIST_KINDS}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        t = line.strip()
        if not t or t.startswith("#"):
            continue
        kind, _, text = t.partition(" ")
        text = text.strip()
        if kind not in KINDS or not text:
            raise ValueError(f"{path} line {n}: expected `<kind> <text>`, kinds {KINDS}: {line}")
        if kind in MARKER_KINDS:
            markers.append((kind, text.lower()))
        else:  # unknown-bot texts are matched against the lower-cased agent too
            lists[kind].append(text.lower() if kind == "unknown-bot" else text)
    return Rules(tuple(markers), {k: tuple(v) for k, v in lists.items()})


def device_type(agent: str | None, browser: str, os: str, device: str) -> str:
    """The class of `agent` given ua-parser's user-agent, OS and device families ("Other"
    where it has none); the order of agents.rules' header, as Agents.deviceType."""
    if agent is None:
        return "other"
    r = rules()
    lower = agent.lower()
    for cls, marker in r.markers:
        if marker in lower:
            return cls
    if device == "Spider":
        return "bot"
    if r.prefixed("tablet-device", device):
        return "tablet"
    if os == "Android":
        return "tablet" if agent.startswith("Mozilla/") and "Mobile" not in agent else "mobile"
    if r.prefixed("mobile-device", device) or r.prefixed("mobile-os", os):
        return "mobile"
    unknown = browser == OTHER and not any(m in lower for m in r.lists["unknown-bot"])
    if os == OTHER and device == OTHER and not unknown:
        return "bot"
    if r.prefixed("desktop-os", os):
        return "desktop"
    return "other"
