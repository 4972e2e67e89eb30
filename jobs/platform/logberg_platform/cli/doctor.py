"""`logberg doctor`: check the lakehouse piece by piece and say what to fix."""

from __future__ import annotations

from logberg.cli.command import Command
from logberg_platform import doctor

# Its options are declared beside its handler, in logberg_platform.doctor (cheap to import:
# psycopg2 and boto3 load on use).
COMMAND = Command(
    "doctor", "check the lakehouse; say what to fix", doctor.run, doctor.add_arguments, order=24
)
