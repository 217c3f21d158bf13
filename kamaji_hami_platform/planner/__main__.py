"""`python -m kamaji_hami_platform.planner`: the planner without installing the package."""

import sys

from kamaji_hami_platform.planner.cli import main

sys.exit(main())
