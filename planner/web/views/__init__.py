"""The pages, one module per subject: overview, policies (and the shares editor), traces, studies."""

from planner.web.views.byos import byos
from planner.web.views.docs import semantics
from planner.web.views.find_job import find_job
from planner.web.views.overview import overview
from planner.web.views.policies import (
    policy_detail,
    policy_duplicate,
    policy_list,
    policy_preset,
)
from planner.web.views.studies import study_list, study_new
from planner.web.views.traces import trace_detail, trace_list, trace_upload

__all__ = [
    "byos",
    "find_job",
    "overview",
    "policy_detail",
    "policy_duplicate",
    "policy_list",
    "policy_preset",
    "semantics",
    "study_list",
    "study_new",
    "trace_detail",
    "trace_list",
    "trace_upload",
]
