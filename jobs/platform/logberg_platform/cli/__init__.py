"""The platform tooling's `logberg` commands, one module per command or group. They join
the runtime's command line through the `logberg.commands` entry points
(jobs/platform/pyproject.toml); logberg.cli assembles them."""
