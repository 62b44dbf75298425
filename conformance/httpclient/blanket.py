"""A front that refuses every caller: recognised within a minute or two, so that the run stops
waiting for it.

Apache's mod_evasive, or an HAProxy stick table that flags an address, refuses every request
from the checker's address once a rate is passed (a 403 to every key and to requests without
one) and renews the block with each request refused. The first such refusal already fails
LIM-429-WHEN-EXCEEDED (conformance.judging.fronts). Backing off from it only finds the block
lapsed now and then, sends a few requests, and is blocked again: a run of many minutes that can
only name that cause again. So once the front has refused every caller of the run (each key
that sent, and requests without one), and the run spent most of a minute since its first
refusal waiting out its refusals, the run stops, saying so: "not conformant" where that front's
refusal failed a MUST, and what was not yet tested "not run" with this reason.
"""

from __future__ import annotations

import threading

BLANKET_SECONDS = 60.0
"""How long since a front's first refusal before its refusals may be taken for a blanket one: a
minute, the longest window of a plan, which a limiter's own refusals do not outlast."""
BLANKET_SHARE = 2 / 3
"""The share of that time the run must have spent waiting out the front's refusals."""


class Blanket:
    """The front's refusals as the run met them, across every key label (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first: float | None = None  # clock time of the front's first refusal
        self._callers: set[str] = set()  # labels that sent since then
        self._refused: dict[str, int] = {}  # labels the front refused, with its status
        self._waits_until = 0.0  # the end of the latest wait a front's refusal imposed
        self._waited = 0.0  # seconds of the clock covered by those waits (their union)

    def answered(self, label: str) -> None:
        """A response that was no refusal: the label is a caller the front let through."""
        with self._lock:
            if self._first is not None:
                self._callers.add(label)

    def refused(self, label: str, status: int, now: float, wait: float) -> None:
        """The front refused `label` with `status`; the label now waits `wait` s from `now`."""
        with self._lock:
            if self._first is None:
                self._first = now
            self._callers.add(label)
            self._refused[label] = status
            end = now + wait
            self._waited += max(0.0, end - max(now, self._waits_until))
            self._waits_until = max(self._waits_until, end)

    def reason(self, now: float) -> str | None:
        """Why the run stops waiting, once the front refuses every caller; None until then."""
        with self._lock:
            if self._first is None or set(self._callers) - set(self._refused):
                return None
            since = now - self._first
            waited = self._waited - max(0.0, self._waits_until - now)  # what has passed of it
            if since < BLANKET_SECONDS or waited < BLANKET_SHARE * since:
                return None
            statuses = "/".join(map(str, sorted(set(self._refused.values()))))
            return (
                f"a front refuses every caller of this run: {callers(self._refused)} were "
                f"refused ({statuses}) by something in front of the service, and the run spent "
                f"{waited:.0f} of the {since:.0f} s since its first refusal waiting them out"
            )


def callers(labels: dict[str, int]) -> str:
    """`key 'main'`, `keys 'main' and 'spare' and requests without a key`."""
    keys = [f"'{label}'" for label in sorted(labels) if label != "none"]
    if not keys:
        return "requests without a key"
    named = f"key {keys[0]}" if len(keys) == 1 else f"keys {', '.join(keys[:-1])} and {keys[-1]}"
    return named + (" and requests without a key" if "none" in labels else "")
