"""`logberg doctor` with the platform: the runtime's checks plus the local metastore
database's and `--k8s` (logberg_platform.doctor). It replaces the runtime's `doctor`."""

from __future__ import annotations

from logberg.cli.command import Command
from logberg_platform import doctor

# Its options are declared beside its handler, in logberg_platform.doctor.diagnose (cheap to
# import: psycopg2 and boto3 load on use).
COMMAND = Command(
    "doctor", "check the lakehouse; say what to fix", doctor.run, doctor.add_arguments, order=24
)
