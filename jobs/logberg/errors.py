"""Errors the CLI turns into a one-line message: exit code 2 for configuration and services,
1 for a statement Spark rejects."""


class ConfigError(Exception):
    """Wrong or missing configuration. The message names the setting."""


class ServiceError(Exception):
    """A local service could not be started, reached or stopped."""


class QueryError(Exception):
    """A SQL statement Spark rejected (Spark's own message: its error class and text)."""
