"""The replay engine: quota-share scheduling semantics (SEMANTICS.md), in Python.

Policy and trace in, replay result out; nothing here knows about Django, HTTP or Celery. The
replay package (``scheduling.replay``) may run compiled to native code by mypyc from the same
source (scheduling.compiled).
"""

from scheduling.compiled import use_compiled

use_compiled(__path__)
