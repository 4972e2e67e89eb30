"""Traffic model constants: class shares and hour-of-day shapes (local time)."""

from __future__ import annotations

from generator.agents import DEVICE_TYPES

# Share of requests per device class, averaged over a week.
REQUEST_SHARE = {"desktop": 0.30, "mobile": 0.36, "tablet": 0.035, "bot": 0.28, "other": 0.025}
# Share of clients per device class (bots are few but busy).
CLIENT_SHARE = {"desktop": 0.38, "mobile": 0.50, "tablet": 0.05, "bot": 0.05, "other": 0.02}
# Zipf exponent of client activity within a class.
ZIPF = {"desktop": 0.9, "mobile": 0.85, "tablet": 0.8, "bot": 1.1, "other": 1.0}

IPV6_SHARE = 0.04  # of human clients
NAT_SHARE = 0.03  # of human clients that share another client's IP
USER_SHARE = 0.015  # of clients that send a basic-auth user name
XFF_SHARE = 0.08  # of clients behind a proxy that sets X-Forwarded-For
SCANNER_SHARE = 0.015  # of desktop clients that are scanners with a browser UA
ODD_RATE = 0.001  # odd-but-valid lines (TLS on the plain port, "-", HTTP/0.9)

# Hourly shapes, weekday then weekend; each is normalised to a weekly mean of 1.
# fmt: off
_SHAPES = {
    "desktop": (
        [0.20, 0.12, 0.08, 0.06, 0.06, 0.10, 0.25, 0.55, 0.95, 1.25, 1.40, 1.40,
         1.30, 1.35, 1.40, 1.35, 1.20, 1.00, 0.85, 0.80, 0.75, 0.65, 0.48, 0.32],
        [0.14, 0.09, 0.06, 0.04, 0.04, 0.05, 0.08, 0.16, 0.30, 0.45, 0.55, 0.60,
         0.60, 0.58, 0.56, 0.56, 0.58, 0.60, 0.62, 0.65, 0.62, 0.52, 0.38, 0.24],
    ),
    "mobile": (
        [0.45, 0.28, 0.18, 0.13, 0.12, 0.18, 0.38, 0.65, 0.80, 0.80, 0.82, 0.88,
         1.00, 0.92, 0.85, 0.88, 0.95, 1.10, 1.30, 1.50, 1.60, 1.55, 1.25, 0.80],
        [0.60, 0.40, 0.25, 0.16, 0.13, 0.14, 0.22, 0.40, 0.65, 0.90, 1.05, 1.15,
         1.20, 1.15, 1.10, 1.10, 1.15, 1.25, 1.45, 1.65, 1.75, 1.70, 1.40, 0.95],
    ),
    "tablet": (
        [0.35, 0.18, 0.10, 0.08, 0.08, 0.12, 0.30, 0.55, 0.60, 0.60, 0.65, 0.70,
         0.80, 0.75, 0.70, 0.72, 0.85, 1.10, 1.45, 1.80, 2.00, 1.90, 1.40, 0.75],
        [0.45, 0.25, 0.15, 0.10, 0.09, 0.10, 0.20, 0.45, 0.80, 1.10, 1.25, 1.30,
         1.30, 1.25, 1.20, 1.20, 1.30, 1.45, 1.70, 1.95, 2.05, 1.95, 1.50, 0.85],
    ),
    "bot": ([1.0] * 24, [1.0] * 24),
    "other": (
        [0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.95, 1.0, 1.05, 1.1, 1.1,
         1.1, 1.1, 1.1, 1.1, 1.05, 1.0, 1.0, 1.0, 1.0, 0.95, 0.9, 0.9],
        [0.9] * 24,
    ),
}
# fmt: on


def _normalised(weekday: list[float], weekend: list[float]) -> list[float]:
    mean = (5 * sum(weekday) + 2 * sum(weekend)) / (7 * 24)
    return [v / mean for v in weekday + weekend]


# SHAPE[device_type][key] with key = 24 * is_weekend + local hour.
SHAPE: dict[str, list[float]] = {d: _normalised(*_SHAPES[d]) for d in DEVICE_TYPES}
HOUR_KEYS = 48


def class_rate(device_type: str, key: int) -> float:
    """Expected request rate of a device class in an hour (weekly mean of all classes: 1)."""
    return REQUEST_SHARE[device_type] * SHAPE[device_type][key]
