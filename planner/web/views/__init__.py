"""The site shell's pages, one module per subject: overview, bring your scheduler, the docs reader.
Each app's own pages are in that app (``planner.capacity.views``, ``planner.traces.views``,
``planner.studies.views``, ...); planner/web/urls.py imports the modules it routes to."""
