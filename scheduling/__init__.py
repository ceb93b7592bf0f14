"""The replay engine: quota-share scheduling semantics (SEMANTICS.md), pure Python.

Policy and trace in, replay result out; nothing here knows about Django, HTTP or Celery.
"""
