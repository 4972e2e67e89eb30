"""`python -m logberg_platform.build.container_images`: the image commands."""

import sys

from logberg_platform.build.container_images.command import main

sys.exit(main())
