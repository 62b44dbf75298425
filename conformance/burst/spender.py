"""The exhaustion burst: spend one key's quota inside one window, and stop at its first 429.

Sent one at a time, 1,001 requests to a server 100 ms away take 100 s: no business-plan quota
could be spent within one minute, and no correct server could be told from one that never
refuses. So the burst is concurrent, and sent in waves. Each wave is what the window has left,
plus one: the Remaining the key's last response showed, or the plan's figure where the headers
report another window. A wave's connections are sized from the round trip measured on the
key's own requests and the time left before the window's Reset, so that the wave lands well
inside the window. Every wave stops sending at its first refusal, so a correct server answers
one 429 (a few at most, from requests already in flight) and the key is never pushed past it.

After each wave the key's responses are judged per window (`conformance.judging.ratelimit`): a
window that served beyond its quota ends the burst (the fault is evident, and more requests would
prove nothing); so does a 429, unless it came in its window's last second, where a sliding
window may give requests back unseen and nothing can be told: then, once its Retry-After has
passed, the next window is spent. Otherwise the next wave spends what the latest window has
left.

Where one core cannot send a wave in time, several processes send it
(`conformance.burst.processes`): the plan says how many, from the checker's CPU per request
measured on the burst's earlier waves, up to the CPUs this process may run on.

How many processes a wave may go from, and when a quota is beyond what this machine can send,
are `conformance.burst.reach`'s (the Spender's `reach`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from conformance.burst.processes import send_from_processes, shares
from conformance.burst.reach import Processes, Reach
from conformance.burst.transport import BurstRequest, sender
from conformance.burst.waves import LANDING_SHARE, Burst, Wave, rate_of
from conformance.httpclient.backoff import LONGEST_WAIT
from conformance.httpclient.client import ConformanceClient, Exchange
from conformance.judging.ratelimit import (
    SETTLE_MARGIN,
    ServerClock,
    Snapshot,
    counting,
    earlier_in_its_window,
    excess,
    of_the_key,
    settled_in_its_window,
    snapshot,
)
from conformance.judging.reset_promise import broken_reset

PATH = "/categories"
SPENDING_CEILING = 4
"""Most minutes' quotas the exhaustion may spend: two where the headers hide the minute's window,
two more where 429s came too late in their windows to tell anything."""
MAX_CONNECTIONS = 64
"""More would not be a client any more but a load test."""
WINDOWS_OF_SLACK = 2
"""Headers that report the day's window hide where a minute ends: a fixed-window limiter may
serve up to twice its per-minute limit across one minute boundary, so that is the ceiling."""
MIN_ROUND_TRIP = 0.001
MAX_REFUSALS = 3
"""Waves ending in a refusal before the burst judges with what it has: the first, and two more
where a 429 came in its window's last second."""
FALLBACK_CONNECTIONS = 8
"""Fewest connections of a wave that cannot be landed as planned: enough to keep the checker
busy; more only add each their own overhead on a machine that is short of CPU, not of round
trips. A wave whose round trips alone need more gets them (see `fallback_wave`)."""
FRESH_WINDOW_TRIES = 3
"""Plans tried in all before a wave goes anyway: the current window, and two fresh ones."""
FRESH_SHARE = 0.75
"""Share of its window the response before a wave must have had left, after the checker waited
for its Reset, for the wave to be a fresh window's: a sliding window's Reset after a wave frees
only its oldest request."""
ONE_PROCESS = Processes()
"""A wave sent from this process alone, at the CPU per request estimated before any was timed."""


def plan_wave(
    requests: int, round_trip: float, seconds_left: float, processes: Processes = ONE_PROCESS
) -> Wave | None:
    """Connections, and processes where one cannot send it in time, enough for `requests` to
    land within `LANDING_SHARE` of `seconds_left`; None when even MAX_CONNECTIONS from the
    most processes cannot (the caller waits for a fresh window).

    A connection opens in one round trip, then sends one request per round trip (the last
    round may be short of requests: one more round trip); on top, each process spends
    `per_request` of CPU on each of its requests, one after the other."""
    landing = (seconds_left - SETTLE_MARGIN) * LANDING_SHARE
    if requests <= 0:
        return None
    for count in range(processes.fewest, processes.most + 1):
        usable = landing - 2 * round_trip - requests * processes.per_request / count
        if usable <= 0:
            continue
        connections = max(count, math.ceil(requests * round_trip / usable))
        if connections <= MAX_CONNECTIONS:
            return Wave(requests, min(connections, requests), count)
    return None


def fallback_wave(
    requests: int, round_trip: float, seconds_left: float, processes: Processes = ONE_PROCESS
) -> Wave:
    """The wave that goes when none could be planned (a busy machine, a slow network): the
    connections its round trips need to land within the window, leaving out the checker's own
    work and the margins, between FALLBACK_CONNECTIONS and MAX_CONNECTIONS, and the processes
    its CPU needs, up to the most. A plan fails on a busy machine because round trips measured
    there are long; eight connections 100 ms away could not land 10,001 requests in any minute."""
    usable = max(seconds_left - SETTLE_MARGIN, 1.0)
    needed = math.ceil(requests * round_trip / usable)
    cpu = math.ceil(requests * processes.per_request / (usable * LANDING_SHARE))
    count = min(processes.most, max(processes.fewest, cpu))
    connections = min(MAX_CONNECTIONS, max(FALLBACK_CONNECTIONS, needed, count))
    return Wave(requests, min(connections, requests), count)


def round_trip(exchanges: list[Exchange], label: str) -> float:
    """The time one request on `label` takes, from its latest few (the median, so one stall
    on a busy machine does not size the whole burst)."""
    recent = [e.elapsed for e in exchanges if e.key_label == label][-5:]
    return max(MIN_ROUND_TRIP, statistics.median(recent)) if recent else 0.1


def send_wave(client: ConformanceClient, label: str, wave: Wave) -> list[Exchange]:
    """Send up to `wave.requests` GETs on `label` over `wave.connections` connections, from
    `wave.processes` processes; stop starting new ones at the first response that is not
    served. One process sends where the burst's own transport does not go (through a proxy,
    in tests) or where the budget cannot cover the wave and a resend per connection."""
    if wave.processes > 1 and (request := client.burst.burst_request(PATH, label)) is not None:
        dealt = shares(wave.requests, wave.connections, wave.processes)
        sent = send_from_processes(client, request[0], BurstRequest(request[1]), dealt)
        if sent is not None:
            return sent
    return asyncio.run(_send_wave(client, label, wave))


async def _send_wave(client: ConformanceClient, label: str, wave: Wave) -> list[Exchange]:
    received: list[Exchange] = []
    left = wave.requests
    refused = asyncio.Event()

    async def connection() -> None:
        nonlocal left
        async with sender(client, PATH, label) as send:
            while left > 0 and not refused.is_set():
                left -= 1
                exchange = await send()
                received.append(exchange)
                if not 200 <= exchange.status < 300:
                    refused.set()

    outcomes = await asyncio.gather(
        *(connection() for _ in range(wave.connections)), return_exceptions=True
    )
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return received


def until_a_quiet_window(last: Snapshot, window: float) -> float:
    """Seconds until a whole `window` has passed, with the settle margin, since `last` was
    answered: without the key's requests meanwhile, a sliding log has forgotten them all."""
    return window + SETTLE_MARGIN - (time.time() - last.received)


def senders_cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its ended children, to tell a wave's senders' CPU."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


Announce = Callable[[str], None]


@dataclass
class Spender:
    """Spends `label`'s quota in waves, judging each window as it goes."""

    client: ConformanceClient
    label: str
    per_minute: int | None
    announce: Announce = lambda message: None
    # Waits until late in the key's window (the boundary burst), where its first wave began;
    # None where it began at once.
    go_late: Callable[..., bool] | None = None
    reach: Reach = field(init=False, repr=False)  # how wide it may go, and whether it is beyond

    def __post_init__(self) -> None:
        self.reach = Reach(self.client, self.label, PATH)

    def spend(self, probe: Snapshot) -> Burst:
        """Spend the key's quota from `probe` on. The key's earlier responses that named the
        probe's window count against the same quota (`Burst.key_history`)."""
        mine = of_the_key(self.client.exchanges, self.label)
        burst = Burst([probe], before=earlier_in_its_window(mine, probe))
        self.reach.window  # noqa: B018 - read before the burst's own responses add to the run
        figure = self.per_minute or probe.limit or 60
        ceiling = SPENDING_CEILING * figure + 4
        while burst.requests < ceiling:
            if burst.refused is not None:
                self.start_again(burst)  # its 429 came too late in its window to tell
            elif (wave := self.next_wave(burst, figure, ceiling)) is not None:
                burst.waves.append(wave)
                self.send(burst, wave)
            if (
                self.served_beyond_quota(burst, figure)
                or self.decided(burst)
                or self.reach.beyond_reach(burst, figure)
            ):
                break
        return burst

    def decided(self, burst: Burst) -> bool:
        """A refusal tells whether the limit held, unless it came in its window's last second:
        a sliding window may give requests back there unseen. Then, once, the next window."""
        refused = burst.refused
        if refused is None:
            return False
        if broken_reset(of_the_key(self.client.exchanges, self.label), self.clock()):
            return True  # refused past two resets it announced: no later window would tell more
        # A wave begun late on purpose may meet a busy machine there: one more try for it.
        most = MAX_REFUSALS + (1 if self.go_late else 0)
        if refused.status != 429 or refused.reset is None or burst.refusals >= most:
            return True  # (without a readable Reset, no later window would tell more)
        return settled_in_its_window(burst.history, self.clock(), refused)

    def start_again(self, burst: Burst) -> None:
        """Wait a whole window without the key's requests, then probe: a sliding window whose
        oldest entry is about to leave refuses every wave in its last second (its Reset is the
        oldest entry's), and only an emptied one answers a wave with a 429 that can be judged.
        The client holds the key until its Retry-After meanwhile, as ever. A burst begun late
        in its window begins late again (a busy machine had landed its 429 in the last second):
        begun at once, the window after its reset would be spent a whole window on."""
        self.announce(f"{self.label} key: its 429 came in its window's last second; once more")
        reason = "a whole window without its requests (a sliding window forgets them one by one)"
        quiet = until_a_quiet_window(burst.history[-1], self.reach.window_now(burst))
        self.client.wait(self.label, quiet, reason)
        if self.go_late is not None:
            self.go_late(retry_on_429=False)
        fresh = self.client.get(PATH, key=self.label, retry_on_429=False, pace=False)
        burst.add([snapshot(fresh)])

    def clock(self) -> ServerClock:
        return ServerClock.of(self.client.exchanges)

    def next_wave(self, burst: Burst, figure: int, ceiling: int) -> Wave | None:
        """The next wave; where too little of the window is left to land it in (early in the
        settled part, where it can be judged), or where the latest wave was too slow (the
        next must be sent at full width in a whole window), first wait for a fresh one. After
        a fixed window's Reset one is fresh; a sliding window frees one request at each
        Reset, so the wait is repeated once, until the key's own earlier requests have left
        it. None when the fresh window's first request was refused: nothing to spend."""
        waited = False
        for tries in range(1, FRESH_WINDOW_TRIES + 1):
            latest = burst.history[-1]
            wanted = min(self.wave_size(latest, figure), ceiling - burst.requests)
            clock = self.clock()
            left = self.seconds_left(latest, clock)
            trip = self.trip(burst)
            processes = self.reach.processes(burst, figure)
            wave = plan_wave(wanted, trip, left, processes)
            hidden = self.hidden(latest, clock)
            fresh = hidden or (waited and self.at_its_start(burst, latest, clock))
            # Before the first wave, and after a 429 in a window's last second (its back-off may
            # have ended late in the next window): a wave sent late would land late again.
            first_or_again = not burst.waves or burst.refusals > 0
            too_slow = self.reach.too_slow(burst, figure)
            waiting_helps = (wave is None and first_or_again) or too_slow
            if fresh or not waiting_helps or tries == FRESH_WINDOW_TRIES:
                break
            until = clock.seconds_until(latest.reset)  # type: ignore[arg-type]
            if waited and too_slow:  # a sliding log: the wave's requests leave one by one
                until = max(until, until_a_quiet_window(latest, self.reach.window_now(burst)))
            self.client.wait(self.label, until, "a fresh window to spend its quota in")
            probe = self.client.get(PATH, key=self.label, retry_on_429=False, pace=False)
            burst.add([snapshot(probe)])
            waited = True
            if burst.refused is not None:
                return None
        if wave is None:
            wave = fallback_wave(wanted, trip, left, processes)
            if self.reach.too_slow(burst, figure):  # the wave that tells: as wide as it goes
                wave = dataclasses.replace(wave, connections=min(MAX_CONNECTIONS, wanted))
        full_width = bool(burst.rates) or wave.connections >= MAX_CONNECTIONS
        return dataclasses.replace(wave, fresh=fresh, full_width=full_width)

    def trip(self, burst: Burst) -> float:
        """Seconds a connection takes per request: the key's round trip, or what the latest
        timed wave reached per connection where that was slower (a server that handles a few
        requests at a time, a busy machine): the next wave goes as wide as that calls for."""
        measured = round_trip(self.client.exchanges, self.label)
        return max([measured] + [rate.per_connection for rate in burst.rates[-1:]])

    def at_its_start(self, burst: Burst, latest: Snapshot, clock: ServerClock) -> bool:
        """The response had nearly all of its window before it, as its Reset shows: a fixed
        window's first, not a sliding window's that is about to free its oldest request."""
        shown = latest.reset - clock.handled_from(latest)  # type: ignore[operator]
        return shown >= FRESH_SHARE * self.reach.window_now(burst)

    @staticmethod
    def hidden(latest: Snapshot, clock: ServerClock) -> bool:
        """The response shows no plausible Reset of the minute's window (none, or the day's)."""
        return latest.reset is None or clock.seconds_left(latest.reset) > LONGEST_WAIT

    def wave_size(self, latest: Snapshot, figure: int) -> int:
        if latest.limit == figure and latest.remaining is not None:
            return latest.remaining + 1  # what the window has left, and the one beyond it
        return figure + 1  # the headers hide the minute's window: a whole minute's quota

    def seconds_left(self, latest: Snapshot, clock: ServerClock) -> float:
        """Time left in the latest response's window; a minute where its Reset is not
        plausible (absent, or a day away because the headers report the daily window)."""
        if self.hidden(latest, clock):
            return 60.0
        return max(0.0, clock.seconds_left(latest.reset))  # type: ignore[arg-type]

    def send(self, burst: Burst, wave: Wave) -> None:
        processes = f" from {wave.processes} processes" if wave.processes > 1 else ""
        self.announce(
            f"{self.label} key: {wave.requests:,} requests on {wave.connections} "
            f"connection{'s' if wave.connections > 1 else ''}{processes} to spend its quota"
        )
        own, children = senders_cpu()
        sent = send_wave(self.client, self.label, wave)
        own_after, children_after = senders_cpu()
        # From other processes, theirs is the senders' CPU; this one's then went on recording.
        # (A wave the budget could not cover went from this one alone.)
        forked = children_after - children
        from_processes = wave.processes > 1 and forked > 0
        cpu = forked if from_processes else own_after - own
        seen = [snapshot(e) for e in sent]
        burst.add(seen)
        rate = rate_of(seen, wave, wave.processes if from_processes else 1, cpu)
        if rate is not None:
            burst.rates.append(rate)
            self.announce(
                f"{self.label} key: {len(seen):,} answered, {rate.per_second:,.0f} requests a "
                f"second ({rate.cpu_per_request * 1e3:.2f} ms of the checker's CPU each)"
            )

    def served_beyond_quota(self, burst: Burst, figure: int) -> bool:
        """True when a window served beyond its quota (the fault is evident: stop)."""
        clock = self.clock()
        holds = counting(burst.key_history, clock).problem is None
        found = excess(burst.key_history, holds, clock)
        if found is not None:
            burst.beyond, burst.beyond_evidence = found.seen, found.evidence
            return True
        served = [s for s in burst.history[1:] if s.served]
        # Only where the headers hide the minute: where they show it, its windows are judged
        # above, and a minute shorter than 60 s (a test server's) may serve this much legitimately.
        hidden = not any(s.limit == figure for s in served)
        quick = served and served[-1].received - served[0].exchange.started_at < 60
        if hidden and len(served) > WINDOWS_OF_SLACK * figure and quick:
            # More than two minutes' quota served, quicker than a minute, is beyond any fixed
            # or sliding window of the plan.
            burst.beyond = served[-1]
            burst.beyond_evidence = (
                f"{len(served)} requests of this key were served within a minute, more than "
                f"{WINDOWS_OF_SLACK} minutes' quota of the plan"
            )
        return burst.beyond is not None
