"""Section 8's preemption for one replay: the refusals told before a search, then the search itself
(``fair.fair_victims``), over one cohort (section 8 as is) or over section 13's tree. The replay
asks ``refusal`` and ``victims``; the policy's strategies and the values the search reads are
settled here once.
"""

from __future__ import annotations

from scheduling.model import FairStrategy, Policy
from scheduling.replay import fair_tree
from scheduling.replay.fair import FairValues, fair_victims, refusal_before_search
from scheduling.replay.fair_tree import TreeFairValues, TreeValues
from scheduling.replay.state import Job


class FairSearch:
    """The strategies of a policy's ``fair_sharing`` (Kueue's preemption.fairSharing strategies, in
    order) and the values a search reads: one cohort's, or the tree's when ``tree`` is given."""

    def __init__(self, policy: Policy, tree: TreeValues | None) -> None:
        strategies = policy.fair_sharing.preemption_strategies if policy.fair_sharing is not None else ()
        self.final = FairStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE in strategies
        self.initial = FairStrategy.LESS_THAN_INITIAL_SHARE in strategies
        # The first strategy is LessThanOrEqualToFinalShare (else LessThanInitialShare); a second
        # one is LessThanInitialShare over the candidates the first set aside.
        self.final_first = (
            bool(strategies) and strategies[0] is FairStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
        )
        self.initial_second = len(strategies) > 1
        self.tree = tree
        self.values: FairValues = FairValues() if tree is None else TreeFairValues(tree)

    def refusal(self, job: Job, lendable: float) -> int:
        """NO_ROOM_AT_ALL or NO_ROOM_PASSING when the search could not make the job fit, told
        without it (a NO_ROOM refusal holds longer: ``Refusals.holds``); else SEARCH_NEEDED.
        ``lendable``: section 8's L."""
        if self.tree is None:
            return refusal_before_search(job, self.final, self.initial, lendable)
        return fair_tree.refusal_before_search(job, self.tree, self.final, self.initial)

    def victims(self, job: Job, lendable: float, exclude_at: float) -> list[tuple[Job, int]] | None:
        """The search's victims and their causes, or None (``fair.fair_victims``); ``exclude_at``: the
        current instant when the loop rule leaves jobs out, else nan."""
        values = self.values
        values.lendable = lendable
        return fair_victims(job, values, self.final_first, self.initial_second, exclude_at)
