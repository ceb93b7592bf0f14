"""Entry point for ``python -m scheduling``."""

import sys

from scheduling.cli import main

sys.exit(main())
