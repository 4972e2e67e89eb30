"""`python -m logberg_platform.doctor`."""

import sys

from logberg_platform.doctor.diagnose import main

sys.exit(main())
