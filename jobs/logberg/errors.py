"""Errors the CLI turns into a one-line message and exit code 2."""


class ConfigError(Exception):
    """Wrong or missing configuration. The message names the setting."""


class ServiceError(Exception):
    """A local service could not be started, reached or stopped."""
