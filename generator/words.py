"""The site model's words: product and blog slugs, search phrases, referring sites and
basic-auth user names, drawn from Faker once per run.

`faker_for(seed)` is a dedicated `Faker` instance of the one locale `FAKER_LOCALE`, seeded
from the run's seed with `seed_instance` (never Faker's shared, global random state), and
`build_words` makes a few small pools from it. Everything per line is then drawn from
those pools with the generator's own random streams, so Faker is never called per line,
and the same seed gives the same words, provided Faker's version is the same: its word
lists and algorithms change between releases, which is why pyproject.toml pins it exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote_plus, urlsplit

from faker import Faker

FAKER_LOCALE = "en_US"
# Pool sizes: enough variety for a realistic site, small enough to build in milliseconds.
MODIFIERS = 24  # adjectives and colour names of product slugs and search phrases
NOUNS = 30
TOPICS = 24  # blog post slugs
SEARCHES = 48
SITES = 24
USERS = 24

_WORD = re.compile(r"[a-z]+")
_HOST = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*\.[a-z]{2,}")
_MAX_TRIES = 100  # Faker calls per wanted pool entry before giving up (never reached)


@dataclass(frozen=True)
class Words:
    modifiers: tuple[str, ...]  # [a-z]+: the first half of a product slug
    nouns: tuple[str, ...]  # [a-z]+: the second half of a product slug
    topics: tuple[str, ...]  # blog post slugs, "word-word-word"
    searches: tuple[str, ...]  # the q= of a search, URL-encoded ("red+chair")
    sites: tuple[str, ...]  # referring sites as browsers send them: "https://host/"
    users: tuple[str, ...]  # [a-z]+: basic-auth user names


def faker_for(seed: int) -> Faker:
    """A Faker of its own for run `seed`: only `FAKER_LOCALE`, seeded per instance."""
    fake = Faker(FAKER_LOCALE)
    fake.seed_instance(f"logberg/{seed}/faker")
    return fake


def _distinct(n: int, make: Callable[[], str], ok: Callable[[str], bool]) -> tuple[str, ...]:
    """`n` distinct values of `make()` that pass `ok`, in the order Faker gave them."""
    seen: dict[str, None] = {}
    for _ in range(n * _MAX_TRIES):
        value = make()
        if ok(value):
            seen[value] = None
            if len(seen) == n:
                return tuple(seen)
    raise RuntimeError(f"Faker gave only {len(seen)} distinct values of {n}")


def _word(text: str) -> bool:
    return _WORD.fullmatch(text) is not None


def build_words(fake: Faker) -> Words:
    """The run's pools; a few hundred Faker calls, all of them here."""
    adjectives = _distinct(MODIFIERS * 2 // 3, lambda: fake.word(part_of_speech="adjective"), _word)
    colors = _distinct(
        MODIFIERS - len(adjectives),
        lambda: fake.safe_color_name(),
        lambda c: _word(c) and c not in adjectives,
    )
    modifiers = adjectives + colors
    nouns = _distinct(NOUNS, lambda: fake.word(part_of_speech="noun"), _word)
    topics = _distinct(
        TOPICS,
        lambda: "-".join(fake.words(nb=3, unique=True)),
        lambda s: all(map(_word, s.split("-"))),
    )

    def phrase() -> str:
        # What shoppers type: a product noun, or a modifier and a noun.
        noun = fake.random_element(nouns)
        if fake.boolean(chance_of_getting_true=35):
            return noun
        return f"{fake.random_element(modifiers)} {noun}"

    searches = tuple(quote_plus(p) for p in _distinct(SEARCHES, phrase, lambda p: True))
    sites = _distinct(
        SITES,
        lambda: fake.url(schemes=["https"]),
        lambda u: _HOST.fullmatch(urlsplit(u).netloc) is not None and u.endswith("/"),
    )
    users = _distinct(USERS, fake.user_name, _word)
    return Words(modifiers, nouns, topics, searches, sites, users)
