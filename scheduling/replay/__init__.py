"""The replay: SEMANTICS.md's scheduling pass, event by event, and the state it keeps.

Everything in this package is compiled to native code by mypyc (``scheduling.compiled``) and only
this package: the rest of ``scheduling`` (traces, metrics, advisor, forecasts...) is plain Python
around it. ``engine.replay`` is the entry point; each rule of SEMANTICS.md is one named function
in ``rules`` (or in the module named for it: ``fair``, ``fair_tree``, ``calendar``, ``victims``).
"""

from scheduling.compiled import use_compiled

use_compiled(__path__, __name__)
