"""One cause, one requirement: which failures count, and what kept a requirement from a judgement.

The catalogue says, for each requirement, which more specific requirements it yields to on the
same response (`yields_to`: a 400 for a name fails CAT-NAME-RANGE, not CAT-CREATE-201 too) and
which requirements it can only be judged after (`needs`: an unreadable X-RateLimit-Reset keeps
LIM-RESET-HONEST from being judged). This module applies both; the verdict, the plugin and the
console read what it settles.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from conformance.judging.checks import CheckResult
from conformance.spec import all_requirements


@dataclass
class Settled:
    kept: list[CheckResult]
    # requirement id -> the more specific requirements whose failures took the place of its own
    displaced: dict[str, set[str]] = field(default_factory=dict)


def settle(results: Iterable[CheckResult]) -> Settled:
    """`results` without the failures that a more specific failure on the same response explains."""
    results = list(results)
    failed_on: dict[int, set[str]] = {}
    explained_on: dict[int, set[str]] = {}  # failures that explain their whole response
    for result in results:
        if not result.passed and result.exchange is not None:
            failed_on.setdefault(result.exchange.id, set()).add(result.requirement_id)
            if result.whole_response:
                explained_on.setdefault(result.exchange.id, set()).add(result.requirement_id)
    settled = Settled(kept=[])
    for result in results:
        specific = more_specific_failures(result, failed_on, explained_on)
        if specific:
            settled.displaced.setdefault(result.requirement_id, set()).update(specific)
        else:
            settled.kept.append(result)
    return settled


def more_specific_failures(
    result: CheckResult, failed_on: dict[int, set[str]], explained_on: dict[int, set[str]]
) -> list[str]:
    if result.passed or result.exchange is None:
        return []
    whole = explained_on.get(result.exchange.id, set()) - {result.requirement_id}
    if whole:
        return sorted(whole)
    others = failed_on.get(result.exchange.id, set())
    return [
        other for other in all_requirements()[result.requirement_id].yields_to if other in others
    ]


def prerequisites(requirement_id: str) -> list[str]:
    """What `requirement_id` needs, directly or through what that needs, nearest first."""
    order: list[str] = []
    queue = list(all_requirements()[requirement_id].needs)
    while queue:
        needed = queue.pop(0)
        if needed not in order and needed != requirement_id:
            order.append(needed)
            queue.extend(all_requirements()[needed].needs)
    return order


def blocked_by(requirement_id: str, failed: set[str], displaced: Iterable[str] = ()) -> list[str]:
    """The failed (or warned) requirements that kept `requirement_id` from being judged."""
    blockers = [needed for needed in prerequisites(requirement_id) if needed in failed]
    blockers += sorted(other for other in displaced if other not in blockers)
    return blockers
