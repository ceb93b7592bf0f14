"""The policy pages: the list, the policy page with its editors (shares, cohorts, pool capacity,
calendar, settings) and its variants."""

from planner.capacity.views.page import policy_detail, policy_list
from planner.capacity.views.variants import policy_duplicate, policy_preset

__all__ = ["policy_detail", "policy_duplicate", "policy_list", "policy_preset"]
