"""What a `logberg` command is: its name, its options and its handler, declared together.

Every module of logberg.cli (and of the platform tooling's logberg_platform.cli) declares
one `COMMAND`; `logberg.cli` only assembles them. A group (`local`, `k8s`, `cluster`, ...)
declares its actions as subcommands whose handlers replace the group's.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

Handler = Callable[[argparse.Namespace], int]
Arguments = Callable[[argparse.ArgumentParser], None]
T = TypeVar("T")


def no_arguments(p: argparse.ArgumentParser) -> None:
    return None


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    handler: Handler | None = None
    arguments: Arguments = no_arguments
    # Commands whose arguments another program parses (spark-sql, the generator's own CLI):
    # they get the rest of the line as it is.
    passthrough: Callable[[list[str]], int] | None = None
    # Place in `logberg --help`: the local platform first, the jobs, then the tooling.
    order: int = 50


def config_from(cls: type[T], a: argparse.Namespace, **given: Any) -> T:
    """A typed config from parsed options: each field takes the option of the same `dest`
    (or a value in `given`); a field with neither keeps its default."""
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name in given:
            values[f.name] = given[f.name]
        elif hasattr(a, f.name):
            values[f.name] = getattr(a, f.name)
    return cls(**values)


def actions(p: argparse.ArgumentParser, dest: str = "action") -> argparse._SubParsersAction:
    """Subcommands of a group (`logberg local up`), each with its own handler."""
    return p.add_subparsers(dest=dest, required=True, metavar=dest.upper())


def action(
    sub: argparse._SubParsersAction, name: str, handler: Handler, help_text: str
) -> argparse.ArgumentParser:
    sp: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    sp.set_defaults(handler=handler)
    return sp
