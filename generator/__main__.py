"""`python -m generator [flags]`."""

import sys

from generator.cli import main

sys.exit(main(sys.argv[1:]))
