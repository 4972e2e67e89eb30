"""`logberg generate`: the log generator's own command line (also `python -m generator`)."""

from __future__ import annotations

from typing import Any

from logberg.cli.command import Command


def run(args: list[str]) -> int:
    import os

    from generator.cli import main
    from generator.config import KAFKA_BOOTSTRAP_ENV

    # `--output kafka:///TOPIC` names no broker: LOGBERG_KAFKA_BOOTSTRAP, else this
    # environment's broker (the local platform's, when it runs).
    if any(a.startswith("kafka:///") for a in args) and not os.environ.get(KAFKA_BOOTSTRAP_ENV):
        from logberg.errors import ConfigError
        from logberg.lakehouse import environment

        try:
            found = environment.current().kafka_bootstrap()
        except ConfigError:
            found = None
        if found:
            os.environ[KAFKA_BOOTSTRAP_ENV] = found
    return main(args, client)


def client(bootstrap: str) -> dict[str, Any]:
    """A topic's producer takes the ingest's client options (LOGBERG_KAFKA_OPTIONS_FILE,
    LOGBERG_KAFKA_OPTIONS), translated for librdkafka."""
    from logberg.lakehouse.kafka_options import ClientOptions

    return ClientOptions.from_env().librdkafka(bootstrap)


COMMAND = Command(
    "generate", "generate nginx logs with a ground-truth manifest", passthrough=run, order=31
)
