"""`logberg generate`: the log generator's own command line (also `python -m generator`)."""

from __future__ import annotations

from logberg.cli.command import Command


def run(args: list[str]) -> int:
    from generator.cli import main

    return main(args)


COMMAND = Command(
    "generate", "generate nginx logs with a ground-truth manifest", passthrough=run, order=31
)
