"""The replay: SEMANTICS.md's scheduling pass, event by event, and the state it keeps.

Everything in this package is compiled to native code by mypyc (``scheduling.compiled``) and only
this package: the rest of ``scheduling`` (traces, metrics, advisor, forecasts...) is plain Python
around it. ``engine.replay`` is the entry point; each rule of SEMANTICS.md is one named function
in ``rules`` (or in the module named for it: ``fair``, ``fair_tree``, ``calendar``, ``victims``).
"""

from importlib.util import find_spec

from scheduling.compiled import use_compiled

use_compiled(__path__, __name__)


def engine_kind() -> str:
    """'compiled' or 'python': which engine ``scheduling.replay.engine`` is in this process (where
    the import system finds it, without running it)."""
    spec = find_spec("scheduling.replay.engine")
    return "python" if spec is not None and str(spec.origin).endswith(".py") else "compiled"
