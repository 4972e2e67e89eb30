"""logberg: nginx access logs into an Apache Iceberg lakehouse."""

__version__ = "0.1.0"
