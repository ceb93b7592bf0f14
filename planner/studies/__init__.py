"""Studies and runs: what-if replays of one trace under several policies, on Celery workers."""
