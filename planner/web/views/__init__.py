"""The site shell's pages, one module per subject: overview, policies (and the shares editor), bring
your scheduler, the docs reader. Each app's own pages are in that app (``planner.traces.views``,
``planner.studies.views``, ...); planner/web/urls.py imports the modules it routes to."""
