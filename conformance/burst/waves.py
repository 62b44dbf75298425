"""What a burst is made of: its waves (`Wave`), the rate each reached (`Rate`), and what spending
a key's quota showed (`Burst`). The spender (conformance.burst.spender) plans, sends and judges
them; its reach (conformance.burst.reach) reads them to tell how wide the next wave must go."""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.judging.ratelimit import Snapshot

BUSY = 0.8
"""Share of its time a sending process spent on the CPU above which the checker, not the
target, set the wave's pace: only then would more processes send faster."""
LANDING_SHARE = 0.5
"""A wave is sized to land within half the time its window has left: room for a busy machine."""
MEASURED_WAVE = 200
"""Fewest answers of a wave whose pace tells what this machine can send: in a smaller one,
opening the connections weighs more than sending."""


@dataclass(frozen=True)
class Wave:
    requests: int
    connections: int  # in all, dealt out among the processes
    processes: int = 1
    fresh: bool = False  # begun in a window the checker saw start (or one the headers hide)
    full_width: bool = False  # as wide as a measured rate called for, or MAX_CONNECTIONS


@dataclass(frozen=True)
class Rate:
    """What a wave reached: requests a second, from how many processes, and the CPU its
    senders spent on each request; on how many connections, whether it was begun in a fresh
    window and at full width (`Wave`), and whether it met a refusal."""

    per_second: float
    processes: int
    cpu_per_request: float
    connections: int = 1
    fresh: bool = False
    full_width: bool = False
    refused: bool = False

    @property
    def per_connection(self) -> float:
        """Seconds each connection took per request."""
        return self.connections / self.per_second

    @property
    def checker_bound(self) -> bool:
        """The senders were on the CPU nearly all the time: they, not the target, set the pace."""
        return self.cpu_per_request * self.per_second >= BUSY * self.processes


def rate_of(seen: list[Snapshot], wave: Wave, processes: int, cpu: float) -> Rate | None:
    """The rate `wave` reached, from its first request sent to its last answer, from
    `processes` with `cpu` seconds of its senders; None for a wave too small to tell."""
    if len(seen) < MEASURED_WAVE:
        return None
    span = max(s.received for s in seen) - min(s.exchange.started_at for s in seen)
    if span <= 0:
        return None
    refused = any(not s.served for s in seen)
    return Rate(
        len(seen) / span,
        processes,
        cpu / len(seen),
        wave.connections,
        wave.fresh,
        wave.full_width,
        refused,
    )


@dataclass
class Burst:
    """What spending a key's quota showed: the key's responses, in the order they were sent."""

    history: list[Snapshot]
    # The key's responses that named the probe's window before it: the same quota counted them.
    before: list[Snapshot] = field(default_factory=list)
    refused: Snapshot | None = None  # the first response of the latest wave not served
    beyond: Snapshot | None = None  # a response served beyond its window's quota
    beyond_evidence: str = ""  # what showed it beyond
    waves: list[Wave] = field(default_factory=list)
    refusals: int = 0  # waves that ended in a refusal
    rates: list[Rate] = field(default_factory=list)  # what each timed wave reached
    out_of_reach: str = ""  # why this machine cannot land the quota in one window, with figures

    @property
    def requests(self) -> int:
        return len(self.history) - 1  # the probe it started from was not the burst's

    @property
    def key_history(self) -> list[Snapshot]:
        """What its windows are judged on: the key's earlier responses in the probe's window
        (a request a window served before the burst is one of its quota), then the burst's."""
        return [*self.before, *self.history]

    def add(self, seen: list[Snapshot]) -> None:
        self.history += sorted(seen, key=lambda s: s.exchange.started_at)
        refused = [s for s in seen if not s.served]
        self.refused = min(refused, key=lambda s: s.received) if refused else None
        self.refusals += bool(refused)
