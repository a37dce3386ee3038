"""Early termination: which running trials a sweep stops, from the objective they record epoch by
epoch (Azure ML's three policies, decided by the service).

A policy is evaluated at every epoch ``e`` that is a multiple of ``evaluationInterval`` (0 counts
as 1) and greater than ``delayEvaluation``, against the trials that have recorded epoch ``e``
(finished ones included). "Worse" follows the objective's goal.

- **Bandit**: stopped when its value at ``e`` is outside the slack of the best value at ``e``:
  below ``best / (1 + slackFactor)`` (above ``best * (1 + slackFactor)`` when minimizing), or
  beyond ``slackAmount`` of it.
- **MedianStopping**: stopped when the average of its values up to ``e`` is worse than the median
  of the other trials' averages up to ``e``.
- **TruncationSelection**: the worst ``truncationPercentage`` percent (rounded down) of the trials
  at ``e`` are stopped; of equal values, the later trial goes first.

Pure: ``driver.py`` hands in the recorded values and records the decision.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

__all__ = ["Policy", "BANDIT", "MEDIAN", "TRUNCATION", "POLICIES", "evaluation_epochs", "stop_reason"]

BANDIT, MEDIAN, TRUNCATION = "Bandit", "MedianStopping", "TruncationSelection"
POLICIES = (BANDIT, MEDIAN, TRUNCATION)

#: a trial's objective per epoch: values[0] is epoch 1 (None where it recorded none).
Values = Sequence[Optional[float]]


@dataclass(frozen=True)
class Policy:
    kind: str
    evaluation_interval: int = 0
    delay_evaluation: int = 0
    slack_factor: float = 0.0
    slack_amount: float = 0.0
    truncation_percentage: int = 0

    def evaluated_at(self, epoch: int) -> bool:
        return epoch > self.delay_evaluation and epoch % max(1, self.evaluation_interval) == 0


def evaluation_epochs(policy: Policy, after: int, upto: int) -> list[int]:
    """The epochs in ``(after, upto]`` at which the policy is evaluated."""
    return [e for e in range(after + 1, upto + 1) if policy.evaluated_at(e)]


def _at(values: Values, epoch: int) -> Optional[float]:
    value = values[epoch - 1] if len(values) >= epoch else None
    return value if value is not None and math.isfinite(value) else None


def _better(a: float, b: float, maximize: bool) -> bool:
    return a > b if maximize else a < b


def stop_reason(policy: Policy, *, maximize: bool, trial: int, values: Mapping[int, Values],
                epoch: int) -> Optional[str]:
    """Why trial ``trial`` stops at ``epoch`` (None: it goes on). ``values``: every trial's recorded
    objective by trial index, this one's included."""
    mine = _at(values[trial], epoch)
    if mine is None:
        return None
    at_epoch = {i: v for i, vs in values.items() if (v := _at(vs, epoch)) is not None}
    if policy.kind == BANDIT:
        best = max(at_epoch.values()) if maximize else min(at_epoch.values())
        if policy.slack_factor > 0:
            bound = best / (1 + policy.slack_factor) if maximize else best * (1 + policy.slack_factor)
            limit = f"slackFactor {policy.slack_factor:g}"
        else:
            bound = best - policy.slack_amount if maximize else best + policy.slack_amount
            limit = f"slackAmount {policy.slack_amount:g}"
        if _better(bound, mine, maximize):
            return (f"Bandit policy at epoch {epoch}: {mine:g} is outside the {limit} of the best value "
                    f"{best:g}")
        return None
    if policy.kind == MEDIAN:
        def average(vs: Values) -> Optional[float]:
            got = [v for e in range(1, epoch + 1) if (v := _at(vs, e)) is not None]
            return sum(got) / len(got) if got else None
        others = [a for i, vs in values.items() if i != trial and i in at_epoch and (a := average(vs)) is not None]
        mean = average(values[trial])
        if not others or mean is None:
            return None
        median = statistics.median(others)
        if _better(median, mean, maximize):
            return (f"MedianStopping policy at epoch {epoch}: its running average {mean:g} is worse than the "
                    f"median {median:g} of the other trials' running averages")
        return None
    # TruncationSelection: rank best first; ties keep the earlier trial ahead.
    ranked = sorted(at_epoch, key=lambda i: ((-at_epoch[i]) if maximize else at_epoch[i], i))
    cut = len(ranked) * policy.truncation_percentage // 100
    if cut and trial in ranked[len(ranked) - cut:]:
        return (f"TruncationSelection policy at epoch {epoch}: {mine:g} is among the worst "
                f"{policy.truncation_percentage}% of the {len(ranked)} trials at that epoch")
    return None
