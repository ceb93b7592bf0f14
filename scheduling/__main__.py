"""Entry point for ``python -m scheduling``."""

import os
import sys

# One replay is one thread of work: OpenBLAS's threads (numpy makes one per core at import) would
# only spin after the few small products of the metrics, on the core the kernel writes files with.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from scheduling.cli import main  # noqa: E402  (after the setting above, which numpy reads at import)

sys.exit(main())
