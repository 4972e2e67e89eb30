"""`python -m logberg.cli`: the `logberg` command."""

import sys

from logberg.cli import main

sys.exit(main())
