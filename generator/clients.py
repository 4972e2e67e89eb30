"""The client pool: each client has a stable IP, user agent, user name and role, and a
Zipf-like activity weight within its device class."""

from __future__ import annotations

import ipaddress
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from generator import model
from generator.agents import DEVICE_TYPES, Agent, by_device_type

# Where the big crawlers really come from (Googlebot, bingbot, ...).
_BOT_NETS = {
    "Googlebot": ("66.249.64.0/19", "2001:4860:4801::/48"),
    "AdsBot-Google": ("66.249.64.0/19",),
    "bingbot": ("40.77.167.0/24", "157.55.39.0/24", "207.46.13.0/24", "2a01:111:f100::/48"),
    "YandexBot": ("5.255.231.0/24", "213.180.203.0/24"),
    "Applebot": ("17.241.0.0/16",),
    "AhrefsBot": ("54.36.148.0/22", "5.39.1.0/24"),
    "SemrushBot": ("185.191.171.0/24",),
    "GPTBot": ("20.171.206.0/24",),
}
# Access-network prefixes for IPv6 clients (mobile carriers, DSL, hosting).
_V6_NETS = (
    "2a02:8108::/32",
    "2600:1700::/28",
    "2607:fb90::/32",
    "2a01:e0a::/32",
    "2003:e6::/32",
    "2a00:23c5::/32",
    "2a01:4f8::/32",
)


@dataclass
class ClientPool:
    agents: list[Agent]
    ips: list[str]
    users: list[str]
    xffs: list[str]
    roles: list[str]
    device: list[int]  # index into DEVICE_TYPES
    weight: list[float]  # share of requests within the client's class
    _alias: dict[int, tuple[list[float], list[int]]] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.ips)

    def _table(self, key: int) -> tuple[list[float], list[int]]:
        """Walker alias table of the request weights of all clients in hour key `key`."""
        table = self._alias.get(key)
        if table is None:
            rate = [model.class_rate(d, key) for d in DEVICE_TYPES]
            w = [x * rate[d] for x, d in zip(self.weight, self.device, strict=True)]
            table = alias_table(w)
            if len(self._alias) * len(w) > 4_000_000:  # bound memory for huge pools
                self._alias.clear()
            self._alias[key] = table
        return table

    def draw(self, rng: random.Random, key: int, k: int) -> list[int]:
        """k client indices, weighted by activity in hour key `key` (one random each)."""
        prob, alias = self._table(key)
        n = len(prob)
        rnd = rng.random
        xs = [rnd() * n for _ in itertools.repeat(None, k)]
        return [i if x - i < prob[i] else alias[i] for x, i in zip(xs, map(int, xs), strict=True)]


def alias_table(weights: list[float]) -> tuple[list[float], list[int]]:
    """Vose's alias method: column i keeps i with probability prob[i], else alias[i]."""
    n = len(weights)
    total = sum(weights)
    scaled = [w * n / total for w in weights]
    prob = [1.0] * n
    alias = list(range(n))
    small = [i for i, p in enumerate(scaled) if p < 1.0]
    large = [i for i, p in enumerate(scaled) if p >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        prob[s], alias[s] = scaled[s], g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    return prob, alias


def _class_counts(n: int) -> dict[str, int]:
    """Clients per device class: shares by largest remainder, every class if n >= 5."""
    if n < len(DEVICE_TYPES):
        order = ("mobile", "desktop", "bot", "tablet", "other")
        return {d: int(d in order[:n]) for d in DEVICE_TYPES}
    base = {d: max(1, int(n * model.CLIENT_SHARE[d])) for d in DEVICE_TYPES}
    rest = sorted(DEVICE_TYPES, key=lambda d: n * model.CLIENT_SHARE[d] % 1, reverse=True)
    for d in itertools.islice(itertools.cycle(rest), max(0, n - sum(base.values()))):
        base[d] += 1
    while sum(base.values()) > n:
        big = max(base, key=lambda d: base[d])
        base[big] -= 1
    return base


def _random_v4(rng: random.Random) -> str:
    while True:
        a = ipaddress.IPv4Address(rng.getrandbits(32))
        if a.is_global and not a.is_multicast:
            return str(a)


def _in_net(rng: random.Random, cidr: str) -> str:
    net = ipaddress.ip_network(cidr)
    host = rng.randrange(1, min(net.num_addresses - 1, 1 << 24))
    if net.version == 6 and rng.random() < 0.5:
        host = rng.randrange(1, 4096)  # a server-like short host part: compresses to "::"
    return ipaddress.ip_address(int(net.network_address) + host).compressed


def _random_v6(rng: random.Random) -> str:
    net = ipaddress.IPv6Network(rng.choice(_V6_NETS))
    # A short host part (2a01:4f8:c17:1234::1b) or a random privacy address.
    iid = rng.randrange(1, 1 << 16) if rng.random() < 0.25 else rng.getrandbits(64)
    subnet = rng.getrandbits(128 - net.prefixlen - 64) << 64
    return ipaddress.IPv6Address(int(net.network_address) | subnet | iid).compressed


def build_clients(rng: random.Random, n: int, user_names: Sequence[str]) -> ClientPool:
    """`n` clients; the rare named ones take a basic-auth user from `user_names`."""
    groups = by_device_type()
    counts = _class_counts(n)
    agents: list[Agent] = []
    device: list[int] = []
    weight: list[float] = []
    for di, d in enumerate(DEVICE_TYPES):
        k = counts[d]
        if not k:
            continue
        pool = groups[d]
        chosen = rng.choices(pool, weights=[a.weight for a in pool], k=k)
        # Spread the pool: the first clients of a class use distinct agents.
        distinct = rng.sample(pool, min(k, len(pool)))
        chosen[: len(distinct)] = distinct
        rng.shuffle(chosen)
        zipf = [1.0 / (r + 1) ** model.ZIPF[d] for r in range(k)]
        total = sum(zipf)
        agents += chosen
        device += [di] * k
        weight += [z / total for z in zipf]

    ips: list[str] = []
    seen: set[str] = set()
    users: list[str] = []
    xffs: list[str] = []
    roles: list[str] = []
    for i, a in enumerate(agents):
        human = a.role == "browser"
        role = a.role
        if a.device_type == "desktop" and rng.random() < model.SCANNER_SHARE:
            role = "scanner"
        roles.append(role)
        if human and ips and rng.random() < model.NAT_SHARE:
            ip = rng.choice(ips)  # several people behind one NAT address
        else:
            while True:
                nets = _BOT_NETS.get(a.browser)
                if nets:
                    ip = _in_net(rng, nets[0] if rng.random() < 0.9 else rng.choice(nets))
                elif human and rng.random() < model.IPV6_SHARE:
                    ip = _random_v6(rng)
                else:
                    ip = _random_v4(rng)
                if ip not in seen:
                    break
            seen.add(ip)
        ips.append(ip)
        named = rng.random() < (0.2 if role == "api" else model.USER_SHARE if human else 0.0)
        users.append(rng.choice(user_names) if named else "-")
        if rng.random() < model.XFF_SHARE:
            xff = _random_v4(rng)
            xffs.append(
                f"{xff}, 10.0.{rng.randrange(256)}.{rng.randrange(1, 255)}" if i % 2 else xff
            )
        else:
            xffs.append("-")
    return ClientPool(agents, ips, users, xffs, roles, device, weight)
