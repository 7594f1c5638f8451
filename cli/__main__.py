"""``python -m cli ...``: the same as the ``moe-planner`` console script."""

import sys

from cli.main import main

sys.exit(main())
