"""The request budget of a run (`--max-requests`): what each key label has sent, and no
request beyond the budget, whoever sends it (the client, the burst's connections, a wave's
processes, whose requests are reserved before they go and given back where not sent)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class BudgetExhausted(Exception):
    """The request budget (--max-requests) is spent: sending more would break the user's limit."""


class Budget:
    """Counts requests per key label against `max_requests` (None: no limit); thread-safe.

    `check` is called with the label before anything is counted: it raises where nothing more
    may be sent at all (the client's `Pacer.check`: RunOver once the run is halted or past its
    deadline)."""

    def __init__(self, max_requests: int | None, check: Callable[[str], None]):
        self.max_requests = max_requests
        self._check = check
        self._lock = threading.Lock()
        self._sent_per_label: dict[str, int] = {}

    def count(self, label: str) -> None:
        """One more request on `label`, inside the budget (BudgetExhausted beyond it)."""
        self._check(label)
        with self._lock:
            if not self._has_room(1):
                raise BudgetExhausted(
                    f"the request budget of {self.max_requests} requests is spent "
                    f"(per key: {self._sent_per_label})"
                )
            self._sent_per_label[label] = self._sent_per_label.get(label, 0) + 1

    def reserve(self, label: str, requests: int) -> bool:
        """Count `requests` on `label` at once, before they go from other processes; False,
        counting nothing, where the budget has not that many left."""
        self._check(label)
        with self._lock:
            if not self._has_room(requests):
                return False
            self._sent_per_label[label] = self._sent_per_label.get(label, 0) + requests
            return True

    def give_back(self, label: str, requests: int) -> None:
        """Uncount what was reserved and not sent."""
        with self._lock:
            self._sent_per_label[label] -= requests

    def per_label(self) -> dict[str, int]:
        """Requests sent per key label (a copy)."""
        with self._lock:
            return dict(self._sent_per_label)

    @property
    def sent(self) -> int:
        """Requests sent in all, including attempts that got no response."""
        with self._lock:
            return sum(self._sent_per_label.values())

    def _has_room(self, requests: int) -> bool:
        """Whether `requests` more fit the budget (the caller holds the lock)."""
        sent = sum(self._sent_per_label.values())
        return self.max_requests is None or sent + requests <= self.max_requests
