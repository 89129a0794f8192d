"""`python -m workload` = the `workload` console script."""

import sys

from workload.cli import main

sys.exit(main())
