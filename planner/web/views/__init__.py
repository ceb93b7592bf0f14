"""The pages, one module per subject: overview, traces, studies (the policy pages are in planner.capacity)."""

from planner.web.views.byos import byos
from planner.web.views.docs import semantics
from planner.web.views.find_job import find_job
from planner.web.views.overview import overview
from planner.web.views.studies import study_list, study_new
from planner.web.views.traces import trace_detail, trace_list, trace_upload

__all__ = [
    "byos",
    "find_job",
    "overview",
    "semantics",
    "study_list",
    "study_new",
    "trace_detail",
    "trace_list",
    "trace_upload",
]
