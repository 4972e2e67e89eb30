"""The generator's words come from a seeded Faker instance of its own, built once per run.

Checked: the pools are what an independently seeded `Faker("en_US")` returns, and a run's
referrers, searches, slugs and user names are drawn from them; another seed gives other
words; neither the global random state nor the process's hash seed changes them; the
number of Faker calls of a run does not grow with its lines.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus, urlsplit

import pytest
from faker import Faker
from faker.providers.lorem.en_US import Provider as Lorem

from generator import words
from generator.site import _SEARCH_ENGINES, _SEARCH_ESCAPED, _SOCIAL, HOST
from generator.words import build_words, faker_for
from tests.unit.test_generator import REQUEST, Run, generate, load

REPO = Path(__file__).resolve().parents[2]
ONE_DAY = ("--start-date", "2025-01-06", "--end-date", "2025-01-06", "--no-gzip")
FIXED_REFERRERS = {e for e, _ in _SEARCH_ENGINES} | set(_SOCIAL)


class Recording:
    """Wraps a Faker instance: counts every method call and keeps what each returned."""

    def __init__(self, fake: Faker) -> None:
        self._fake = fake
        self.calls: Counter[str] = Counter()
        self.returned: dict[str, list[Any]] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._fake, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            value = attr(*args, **kwargs)
            self.calls[name] += 1
            self.returned.setdefault(name, []).append(value)
            return value

        return call


def seeded_faker(seed: int) -> Faker:
    """Independently of generator.words: en_US, seeded per instance as the README says."""
    fake = Faker("en_US")
    fake.seed_instance(f"logberg/{seed}/faker")
    return fake


@dataclass
class Seen:
    """The Faker-made text of a run's valid lines."""

    referrers: Counter[str]  # external referrers that are not a search engine or social site
    fixed_referrers: Counter[str]
    searches: Counter[str]  # q= values
    slugs: set[tuple[str, str]]  # (modifier, noun) of /products/<modifier>-<noun>-<id>
    topics: set[str]  # <topic> of /blog/<year>/<topic>-<n>
    users: Counter[str]


def seen(run: Run) -> Seen:
    s = Seen(Counter(), Counter(), Counter(), set(), set(), Counter())
    for line in run.valid:
        if line.kind == "odd":
            continue
        req = REQUEST.fullmatch(line["req"])
        assert req is not None
        target = req[2]
        ref = line["ref"]
        if ref != "-" and not ref.startswith(HOST):
            (s.fixed_referrers if ref in FIXED_REFERRERS else s.referrers)[ref] += 1
        q = re.fullmatch(r"/(?:api/v1/)?search\?q=([^&]+)(?:&limit=10)?", target)
        if q:
            s.searches[q[1]] += 1
        p = re.fullmatch(r"/products/([a-z]+)-([a-z]+)-(\d+)/?", target)
        if p:
            s.slugs.add((p[1], p[2]))
        b = re.fullmatch(r"/blog/20\d\d/([a-z-]+)-\d+/?", target)
        if b:
            s.topics.add(b[1])
        if line["user"] != "-":
            s.users[line["user"]] += 1
    return s


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Run]:
    out = {}
    for seed in (7, 8):
        root = tmp_path_factory.mktemp(f"faker-{seed}")
        assert generate(root, "--lines-per-file", "20000", *ONE_DAY, "--seed", str(seed)) == 0
        out[seed] = load(root)
    return out


def test_the_pools_are_what_the_seeded_faker_instance_returns() -> None:
    rec = Recording(seeded_faker(7))
    got = build_words(rec)  # type: ignore[arg-type]  # duck-typed: only method calls
    assert got == build_words(faker_for(7))
    returned = {name: set(v) for name, v in rec.returned.items() if name != "words"}
    faker_words = returned["word"] | returned["safe_color_name"]
    assert set(got.modifiers) <= faker_words and set(got.nouns) <= returned["word"]
    assert set(got.sites) <= returned["url"] and set(got.users) <= returned["user_name"]
    topic_words = {w for ws in rec.returned["words"] for w in ws}
    assert {w for t in got.topics for w in t.split("-")} <= topic_words
    phrase_words = returned["random_element"]
    assert {w for q in got.searches for w in unquote_plus(q).split(" ")} <= phrase_words
    # Faker's own en_US vocabulary, not a list of ours.
    assert set(got.nouns) <= set(Lorem.parts_of_speech["noun"])
    assert set(got.modifiers) - set(returned["safe_color_name"]) <= set(
        Lorem.parts_of_speech["adjective"]
    )
    # Sizes and URL-safe shapes.
    assert [len(p) for p in astuple(got)] == [
        words.MODIFIERS,
        words.NOUNS,
        words.TOPICS,
        words.SEARCHES,
        words.SITES,
        words.USERS,
    ]
    assert all(len(set(p)) == len(p) for p in astuple(got))
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", t) for t in got.topics)
    assert all(re.fullmatch(r"[a-z]+(\+[a-z]+)?", q) for q in got.searches)
    for site in got.sites:
        u = urlsplit(site)
        assert u.scheme == "https" and u.path == "/" and not u.query and "." in u.netloc


def test_a_run_draws_its_text_from_the_faker_pools(runs: dict[int, Run]) -> None:
    w = build_words(seeded_faker(7))
    s = seen(runs[7])
    assert s.referrers and set(s.referrers) <= set(w.sites)
    assert len(s.referrers) >= 5 and s.fixed_referrers  # Faker's sites beside the real ones
    # Searches: Faker's phrases, and the escaped ones kept as they were.
    assert set(s.searches) <= set(w.searches) | set(_SEARCH_ESCAPED)
    assert set(s.searches) & set(w.searches) and set(s.searches) & set(_SEARCH_ESCAPED)
    assert s.slugs and all(m in w.modifiers and n in w.nouns for m, n in s.slugs)
    assert s.topics and s.topics <= set(w.topics)
    assert s.users and set(s.users) <= set(w.users)
    # Remote users stay rare.
    valid = len(runs[7].valid)
    assert 0 < s.users.total() / valid < 0.05


def test_another_seed_draws_other_referrers_and_searches(runs: dict[int, Run]) -> None:
    a, b = seen(runs[7]), seen(runs[8])
    assert a.referrers and b.referrers and set(a.referrers) != set(b.referrers)
    faker_a = set(a.searches) - set(_SEARCH_ESCAPED)
    faker_b = set(b.searches) - set(_SEARCH_ESCAPED)
    assert faker_a and faker_b and faker_a != faker_b
    wa, wb = build_words(faker_for(7)), build_words(faker_for(8))
    assert set(wa.sites) != set(wb.sites) and set(wa.searches) != set(wb.searches)
    assert set(wa.users) != set(wb.users)


def test_the_global_random_state_does_not_change_the_words(monkeypatch: pytest.MonkeyPatch) -> None:
    from faker.generator import Generator

    # Faker.seed() seeds the state all unseeded instances share; restore its flags after.
    monkeypatch.setattr(Generator, "_is_seeded", Generator._is_seeded)
    monkeypatch.setattr(Generator, "_global_seed", Generator._global_seed)
    got = []
    for seed in (1, 2):
        random.seed(seed)
        Faker.seed(seed)
        got.append(build_words(faker_for(7)))
    assert got[0] == got[1] == build_words(faker_for(7))


def test_same_seed_gives_the_same_bytes_in_another_process(
    runs: dict[int, Run], tmp_path: Path
) -> None:
    """The in-process twin run is in test_generator.py; here a fresh interpreter with
    another hash seed, so nothing hangs on set order or on state of this process."""
    out = tmp_path / "again"
    args = ["--output", out.as_uri(), "--quiet", "--lines-per-file", "20000", *ONE_DAY]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    ran = subprocess.run(
        [sys.executable, "-m", "generator", *args, "--seed", "7"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    first = runs[7]
    again = load(out)
    assert again.manifest["run_id"] == first.manifest["run_id"]
    for a, b in zip(first.manifest["files"], again.manifest["files"], strict=True):
        assert (out / b["path"]).read_bytes() == (first.root / a["path"]).read_bytes()


def test_faker_is_called_per_run_not_per_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made: list[Recording] = []

    def counting_faker(locale: str) -> Recording:
        made.append(Recording(Faker(locale)))
        return made[-1]

    monkeypatch.setattr(words, "Faker", counting_faker)
    counts = []
    for files, lines in ((1, 200), (3, 20000)):
        out = tmp_path / f"n{files}x{lines}"
        args = ("--num-files", str(files), "--lines-per-file", str(lines), "--seed", "5")
        assert generate(out, *args) == 0
        assert load(out).manifest["totals"]["lines"] == files * lines
        counts.append(sum(made[-1].calls.values()))
    assert len(made) == 2  # one Faker instance per run
    assert made[0].calls["seed_instance"] == 1 and made[0].calls["word"] > 0
    assert counts[0] == counts[1] > 0  # 300 times the lines, the same Faker calls
