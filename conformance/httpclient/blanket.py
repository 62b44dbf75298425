"""A front that refuses every caller: recognised within a minute or two, so that the run stops
waiting for it.

Apache's mod_evasive, or an HAProxy stick table that flags an address, refuses every request
from the checker's address once a rate is passed (a 403 to every key and to requests without
one) and renews the block with each request refused. The first such refusal already fails
LIM-429-WHEN-EXCEEDED (conformance.judging.fronts). Backing off from it only finds the block
lapsed now and then, sends a few requests, and is blocked again: a run of many minutes that can
only name that cause again. So once, over the last minute, the front refused every caller that
sent (each key, and requests without one) and the run spent most of that minute waiting out its
refusals, the run stops, saying so: "not conformant" where that front's refusal failed a MUST,
and what was not yet tested "not run" with this reason.
"""

from __future__ import annotations

import threading
from collections import deque

BLANKET_SECONDS = 60.0
"""The stretch of the run a blanket refusal must fill: a minute, the longest window of a plan,
which a limiter's own refusals do not outlast."""
BLANKET_SHARE = 2 / 3
"""The share of that minute the run must have spent waiting out the front's refusals."""


class Blanket:
    """The front's refusals as the run met them, across every key label (thread-safe), kept
    for the last minute."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first: float | None = None  # clock time of the front's first refusal
        self._waits: deque[tuple[float, float]] = deque()  # (from, to) its refusals imposed
        self._refused: dict[str, tuple[float, int]] = {}  # label: its latest (when, status)
        self._answered: dict[str, float] = {}  # label: when it was last let through

    def answered(self, label: str, now: float) -> None:
        """A response that was no refusal: the label is a caller the front let through."""
        with self._lock:
            if self._first is not None:
                self._answered[label] = now

    def refused(self, label: str, status: int, now: float, wait: float) -> None:
        """The front refused `label` with `status`; the label now waits `wait` s from `now`."""
        with self._lock:
            if self._first is None:
                self._first = now
            self._refused[label] = (now, status)
            self._waits.append((now, now + wait))
            while self._waits and self._waits[0][1] < now - BLANKET_SECONDS:
                self._waits.popleft()

    def reason(self, now: float) -> str | None:
        """Why the run stops waiting, once the front refuses every caller; None until then."""
        with self._lock:
            if self._first is None or now - self._first < BLANKET_SECONDS:
                return None
            since = now - BLANKET_SECONDS
            callers = {label for label, at in self._answered.items() if at >= since}
            refused = {label: s for label, (at, s) in self._refused.items() if at >= since}
            waited = covered(self._waits, since, now)
            if not refused or callers - set(refused) or waited < BLANKET_SHARE * BLANKET_SECONDS:
                return None
        statuses = "/".join(map(str, sorted(set(refused.values()))))
        return (
            f"a front refuses every caller of this run: {named(refused)} were refused "
            f"({statuses}) by something in front of the service, and the run spent {waited:.0f} "
            f"of the last {BLANKET_SECONDS:.0f} s waiting them out"
        )


def covered(waits: deque[tuple[float, float]], since: float, now: float) -> float:
    """Seconds of [since, now] that the waits cover (their union)."""
    total, reached = 0.0, since
    for start, end in sorted(waits):
        start, end = max(start, reached), min(end, now)
        if end > start:
            total += end - start
            reached = end
    return total


def named(labels: dict[str, int]) -> str:
    """`key 'main'`, `keys 'main' and 'spare' and requests without a key`."""
    keys = [f"'{label}'" for label in sorted(labels) if label != "none"]
    if not keys:
        return "requests without a key"
    said = f"key {keys[0]}" if len(keys) == 1 else f"keys {', '.join(keys[:-1])} and {keys[-1]}"
    return said + (" and requests without a key" if "none" in labels else "")
