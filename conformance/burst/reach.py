"""The burst's width and reach: how many processes a wave may be sent from, how fast the quota
must land, and whether it is beyond what this machine can send.

The spender (`conformance.burst.spender`) sizes and sends the waves and holds a `Reach`; it asks
it how long the window is, what the next wave may be sent from, whether the latest timed wave
(`Rate`) was too slow for the quota, and whether to stop there.

A quota is beyond this machine only once it has tried at its full width: a wave begun in a
fresh window (the checker saw its Reset pass), on the connections the rate measured per
connection calls for (or the most it opens), from as many processes as its CPU needs. A wave
begun late in a window ran into the next one and proves nothing: it only measures.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from conformance.burst.processes import forkable
from conformance.burst.waves import LANDING_SHARE, Burst, Rate
from conformance.httpclient.backoff import LONGEST_WAIT
from conformance.httpclient.client import ConformanceClient
from conformance.judging.ratelimit import ServerClock, Snapshot, snapshot

CPU_PER_REQUEST = 0.0003
"""Seconds of the checker's own work per request of a burst (sending, recording, checking)
until a wave has measured it: a wave of thousands is bound by it whatever the connections.
`tox -e bench` measured 0.06 to 0.10 ms on an idle 2-core machine; this leaves room for a busy
one."""
HTTPX_CPU_PER_REQUEST = 0.002
"""The same where httpx sends the burst (through a proxy): 1.6 to 2.5 ms measured."""


@dataclass(frozen=True)
class Processes:
    """How many processes a wave may be sent from, and the CPU each request costs them."""

    fewest: int = 1
    most: int = 1
    per_request: float = CPU_PER_REQUEST


def usable_cpus() -> int:
    """The CPUs this process may run on (a container's or a CI runner's share, not the host's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def window_length(history: list[Snapshot], clock: ServerClock) -> float:
    """The window as the run's Resets show it: the most time any response had left before its
    Reset, at most a minute; a minute where no Reset within one can be read (absent, or the
    day's). A window's first request sees nearly all of it, fixed or sliding (later ones of a
    sliding log see only what is left of its oldest entry's), and every run starts with one."""
    spans = [
        s.reset - clock.handled_from(s)
        for s in history
        if s.reset is not None and 0 < s.reset - clock.handled_from(s) <= LONGEST_WAIT
    ]
    return min(60.0, max(spans)) if spans else 60.0


def width(rate: Rate) -> str:
    """How wide a wave went: "64 connections from 2 processes"."""
    text = f"{rate.connections} connection{'s' if rate.connections > 1 else ''}"
    return text + (f" from {rate.processes} processes" if rate.processes > 1 else "")


def tried(rates: list[Rate]) -> str:
    """The timed waves, as the statement tells them."""
    told = [
        f"{width(rate)} at {rate.per_second:,.0f} a second"
        + ("" if rate.fresh else " (begun late in a window: not counted)")
        for rate in rates
    ]
    return f"{len(rates)} wave{'s' if len(rates) > 1 else ''}: " + ", then ".join(told)


@dataclass
class Reach:
    """How wide `label`'s burst may go on this machine, and whether its quota is beyond it.
    `path` is the GET the burst repeats."""

    client: ConformanceClient
    label: str
    path: str
    # the burst's responses read for `window_now`, and the window they showed
    _window_seen: tuple[int, float] = field(default=(0, 0.0), init=False, repr=False)

    @functools.cached_property
    def window(self) -> float:
        """The window's length, from the responses of the run before the burst."""
        seen = [snapshot(e) for e in self.client.exchanges]
        return window_length(seen, self.clock())

    def clock(self) -> ServerClock:
        return ServerClock.of(self.client.exchanges)

    def beyond_reach(self, burst: Burst, figure: int) -> bool:
        """True when this machine cannot land the quota and one more inside one window: the
        latest wave went at full width from the start of a fresh window and was slower than
        that needs, and more processes would not send faster (the senders were not what held
        it back, or there were as many as this process may run on). Nothing more is spent
        then; whether the limit holds stays open, with the figures (never a guess) and the
        waves tried. A wave begun late in a window is not the machine's best: the next one
        goes in a fresh window, as wide as the rate it measured per connection calls for."""
        if burst.refused is not None or not self.too_slow(burst, figure):
            return False
        latest = burst.rates[-1]
        if not (latest.fresh and latest.full_width) or self.more_processes(burst, figure):
            return False
        counted = [rate for rate in burst.rates if rate.fresh and not rate.refused]
        fastest = max(counted, key=lambda rate: rate.per_second)
        burst.out_of_reach = (
            f"{figure + 1:,} requests inside one window of {self.window_now(burst):.0f} s need "
            f"{self.needed(burst, figure):,.0f} requests a second to land within half of it "
            f"(the room the checker leaves a busy machine); this machine reached "
            f"{fastest.per_second:,.0f} at most, on {width(fastest)} from the start of a fresh "
            f"window (over {tried(burst.rates)})"
        )
        return True

    def window_now(self, burst: Burst) -> float:
        """The window's length as the run has shown it so far: the run's first responses may
        have come late in one, and a fresh window's first response shows nearly all of it.
        (Read again only when the burst has more responses: the clock reads every Date.)"""
        seen = len(burst.history)
        if self._window_seen[0] != seen:
            shown = window_length(burst.history, self.clock())
            self._window_seen = (seen, max(self.window, shown))
        return self._window_seen[1]

    def needed(self, burst: Burst, figure: int) -> float:
        """Requests a second that land the quota and one more within `LANDING_SHARE` of one
        window, as the waves are planned: a wave barely fast enough for the whole window
        lands only if it starts at the window's first instant, and on a busy machine it does
        not (an idle 2-core CI runner reached 2,100 a second for 12,001 in 6 s: every wave
        ran into the next window, and four minutes' quota were spent proving nothing)."""
        return (figure + 1) / (self.window_now(burst) * LANDING_SHARE)

    def too_slow(self, burst: Burst, figure: int) -> bool:
        """The latest timed wave met no refusal and was slower than the quota needs."""
        if not burst.rates or burst.rates[-1].refused:
            return False
        return burst.rates[-1].per_second < self.needed(burst, figure)

    def more_processes(self, burst: Burst, figure: int) -> bool:
        """True when the latest wave was too slow, its senders held it back, and this
        process may run on more CPUs than it was sent from."""
        if not self.too_slow(burst, figure):
            return False
        latest = burst.rates[-1]
        return latest.checker_bound and latest.processes < self.cpus

    @functools.cached_property
    def own_transport(self) -> bool:
        """Whether the burst's own transport sends it (not httpx: through a proxy, in tests)."""
        return self.client.burst.burst_request(self.path, self.label) is not None

    @functools.cached_property
    def cpus(self) -> int:
        """The most processes a wave may go from: one where the burst's own transport does
        not go or no process can be forked."""
        if not self.own_transport or not forkable():
            return 1
        return usable_cpus()

    def processes(self, burst: Burst, figure: int) -> Processes:
        """What the next wave may be sent from: from the latest timed wave's CPU per request
        on; from more processes than it where its senders were too slow."""
        if not burst.rates:
            estimate = CPU_PER_REQUEST if self.own_transport else HTTPX_CPU_PER_REQUEST
            return Processes(1, self.cpus, estimate)
        latest = burst.rates[-1]
        fewest = latest.processes + 1 if self.more_processes(burst, figure) else 1
        return Processes(fewest, self.cpus, latest.cpu_per_request)
