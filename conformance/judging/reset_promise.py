"""A window that never resets, told from a key's own refusals: a request sent once the Reset a
429 announced had passed, refused, and a request sent once the Reset of that refusal had passed,
refused again (LIM-RESET-HONEST).

The chain proves the broken promise whatever the delay between its refusals: only the key's own
requests count against its quota, none of them was let through from the first refusal to the
last one's answer (a window that came back, fixed or sliding, serves one), and each was handled
after the reset the refusal before it announced, by the server's own clock. A loaded machine
sends late, a whole window after a reset or more; it cannot make a server refuse a request its
announced reset should have served. It reads refusals the run did not time for the purpose (a
burst's, a probe's, a retry's, sent whenever a busy machine got to them), so it asks for two
resets passed and refused where the exhaustion's own check (sent just past the reset it waited
for) asks one: two resets the service itself chose leave no room for a Reset read early.

A refusal whose Reset lies beyond the wait a run sits out (the day's) or cannot be read promises
no window back: the chain starts again after it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from conformance.httpclient.backoff import LONGEST_WAIT
from conformance.judging.checks import expect
from conformance.judging.ratelimit import ServerClock, Snapshot

CHAIN = 3
"""The refusal whose Reset is broken first, and the two sent past a Reset each."""


@dataclass(frozen=True)
class BrokenReset:
    """Three refusals of one key, each sent once the Reset of the one before had passed."""

    refusals: tuple[Snapshot, ...]

    @property
    def last(self) -> Snapshot:
        return self.refusals[-1]

    def describe(self, clock: ServerClock) -> str:
        first = self.refusals[0].exchange.started_at
        steps = [
            f"{clock.handled_from(later) - earlier.reset:.1f} s after the Reset "
            f"({earlier.reset:.0f}) of the {earlier.status} before it, "
            f"{later.exchange.started_at - first:.1f} s after the first"
            for earlier, later in zip(self.refusals, self.refusals[1:], strict=False)
            if earlier.reset is not None
        ]
        return "; ".join(f"refused {step}" for step in steps)


def broken_reset(history: Iterable[Snapshot], clock: ServerClock) -> BrokenReset | None:
    """The first chain of refusals that proves the key's window never reset, or None."""
    ordered = sorted(history, key=lambda s: s.exchange.started_at)
    chain: list[Snapshot] = []
    for seen in ordered:
        if seen.counted:
            chain = []  # let through: the window came back
        elif seen.status != 429 or seen.headerless:
            continue  # a server error, or a refusal made in front: no Reset of the service's
        elif not promises_a_reset(seen, clock):
            chain = []  # nothing to hold the next request to
        elif chain and clock.handled_from(seen) >= chain[-1].reset:  # type: ignore[operator]
            chain.append(seen)
        elif chain:
            chain[-1] = seen  # sent before the reset: its own Reset is the latest promise
        else:
            chain = [seen]
        if len(chain) == CHAIN:
            if nothing_served_meanwhile(ordered, chain):
                return BrokenReset(tuple(chain))
            chain = chain[-1:]
    return None


def promises_a_reset(seen: Snapshot, clock: ServerClock) -> bool:
    """The refusal names a Reset a client waits for: readable, and no further than a run waits."""
    return seen.reset is not None and seen.reset - clock.handled_by(seen) <= LONGEST_WAIT


def nothing_served_meanwhile(ordered: list[Snapshot], chain: list[Snapshot]) -> bool:
    """No request of the key let through from the chain's first refusal until its last was
    answered: one in flight beside a refusal may have taken the request a window gave back."""
    start, end = chain[0].exchange.started_at, chain[-1].received
    return not any(s.counted and start <= s.exchange.started_at <= end for s in ordered)


def judge_broken_reset(history: Iterable[Snapshot], clock: ServerClock) -> bool:
    """Fail LIM-RESET-HONEST where the key's refusals prove its window never reset; True where
    they did (the failure is recorded)."""
    found = broken_reset(history, clock)
    if found is None:
        return False
    expect(
        "LIM-RESET-HONEST",
        False,
        "a request sent once X-RateLimit-Reset had passed must be served, but the key was "
        f"refused past each reset its 429s announced: {found.describe(clock)}; nothing was "
        "served meanwhile, so whatever the delay, its window never reset",
        found.last.exchange,
    )
    return True
