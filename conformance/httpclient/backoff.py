"""Pacing per credential: the part of the client that keeps us a good citizen on a shared server.

The interface document asks clients to honour `Retry-After`, to back off exponentially, and warns
that a key which keeps sending after a 429 may be banned. A conformance run must never get a
user's key banned, so every request first asks the `Pacer` whether its credential may send, and
every response tells the `Pacer` what the server said about limits.

Time is read from a `Clock` so that unit tests can run hours of back-off in microseconds.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Protocol

from conformance.httpclient.blanket import Blanket
from conformance.httpclient.limit_headers import header_number

BASE_DELAY = 1.0
"""First exponential back-off step, in seconds."""
MAX_EXPONENTIAL_DELAY = 60.0
"""Cap of the exponential back-off: a rate-limit window is a minute; longer gains nothing."""
JITTER_FRACTION = 0.10
"""Up to 10 % extra wait, so that several clients limited together do not return together."""
RESET_MARGIN = 1.0
"""`X-RateLimit-Reset` and `Date` have one-second resolution: wait one second more to be safe."""
LONGEST_WAIT = 66.0
"""The longest wait for a reset a run sits out: a minute's window, the five seconds a cached
Date may lag behind, and one of rounding. A Reset further away reports a longer window (the
day's), and is not trusted for pacing: should the server really be limiting, its 429 and
`Retry-After` take over."""


class Clock(Protocol):
    """Monotonic time and sleeping, injectable so tests can use a fake clock."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock: `time.monotonic` is immune to wall-clock jumps while we wait."""

    def __init__(self) -> None:
        self._woken = threading.Event()

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        self._woken.wait(seconds)

    def wake(self) -> None:
        """End every sleep now and for good: the run sends nothing more."""
        self._woken.set()


class TargetThrottled(Exception):
    """A key stays limited longer than this run may wait (`max_wait`)."""


class RunOver(TargetThrottled):
    """The run may send nothing more: its deadline passed, or it was interrupted."""


def http_date_to_unix(value: str | None) -> float | None:
    """Parse an HTTP-date (RFC 9110 §5.6.7) into Unix seconds, or None when it is not one."""
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # an HTTP-date is always GMT; obsolete forms may parse as naive
        return parsed.replace(tzinfo=UTC).timestamp()
    return parsed.timestamp()


def retry_after_seconds(value: str | None, date: str | None, wall_now: float) -> float | None:
    """The delay a `Retry-After` value asks for, or None when it is absent or unparseable.

    `Retry-After` may be delay-seconds or an HTTP-date. A date is judged against the response's
    own `Date` header when there is one, because the server's clock and ours may differ.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    retry_at = http_date_to_unix(text)
    if retry_at is None:
        return None
    server_now = http_date_to_unix(date)
    reference = server_now if server_now is not None else wall_now
    return max(0.0, retry_at - reference)


def exponential_delay(consecutive_429s: int) -> float:
    """1 s, 2 s, 4 s, ... for the 1st, 2nd, 3rd ... consecutive 429 on a key, capped at 60 s."""
    exponent = max(0, consecutive_429s - 1)
    return min(MAX_EXPONENTIAL_DELAY, BASE_DELAY * 2 ** min(exponent, 32))


def reset_wait(
    remaining: str | None, reset: str | None, date: str | None, wall_now: float, kept: int = 0
) -> float | None:
    """How long to hold a key whose quota the server reports as spent (or down to the `kept`
    requests a scenario keeps for itself, `Pacer.keep`), or None to not pace.

    Only a plausible wait (0 < wait <= LONGEST_WAIT + RESET_MARGIN) is returned: a header that
    lies (a reset in the past, or hours ahead because it reports the daily quota) must not stall
    the run; should the server really be limiting, its 429 and `Retry-After` take over. So
    must a value that is not a number LIM-HEADERS-VALID accepts (a Remaining of -1 is no
    window spent).
    """
    left = header_number(remaining)
    reset_at = header_number(reset, fraction=True)
    if left is None or reset_at is None or left > kept:
        return None
    server_now = http_date_to_unix(date)
    reference = server_now if server_now is not None else wall_now
    wait = reset_at - reference + RESET_MARGIN
    if 0 < wait <= LONGEST_WAIT + RESET_MARGIN:
        return wait
    return None


@dataclass
class _LabelState:
    blocked_until: float = 0.0
    consecutive_429s: int = 0
    reason: str = ""  # what the block waits for, for the progress line
    refused_at: float = 0.0  # wall time the latest refusal was received
    refused_since: float = 0.0  # clock time the streak of refusals began
    refused_status: int = 429
    kept: int = 0  # requests of its window kept for a scenario's own (`Pacer.keep`)
    held_until: float = 0.0  # clock time the others may send again, the kept ones left


WaitListener = Callable[[str, float, str], Callable[[], None] | None]
"""Told (label, seconds, reason) before a key sleeps out a block, so that the console says so;
what it returns, if anything, is called once the wait is over."""


@dataclass
class Pacer:
    """Per-label blocks: a label that was told to wait sends nothing until the wait is over.

    Labels are "main", "spare" and "none"; all unauthenticated requests share "none" because a
    server limits those per client address. Thread-safe: a spare key's exhaustion runs on a
    thread of its own beside the main key's tests.
    """

    clock: Clock
    rng: random.Random
    max_wait: float
    on_wait: WaitListener | None = None
    _states: dict[str, _LabelState] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    waited: dict[str, float] = field(default_factory=dict)
    """Seconds each label spent waiting out blocks: what the run cost in time, per key."""
    deadline: float | None = None
    """Clock time past which the run sends nothing (`set_deadline`)."""
    deadline_seconds: float = 0.0
    halted: str | None = None
    """Why the run sends nothing more (an interruption), once it is so."""
    blanket: Blanket = field(default_factory=Blanket)
    """A front's refusals of every caller (conformance.httpclient.blanket)."""

    def halt(self, reason: str) -> None:
        """Send nothing more; a key asleep waking now to say so."""
        self.halted = reason
        wake = getattr(self.clock, "wake", None)
        if wake is not None:
            wake()

    def set_deadline(self, seconds: float) -> None:
        self.deadline, self.deadline_seconds = self.clock.now() + seconds, seconds

    def check(self, label: str, wait: float = 0.0) -> None:
        """RunOver where the run is halted, or past its deadline once `wait` more is waited."""
        if self.halted:
            raise RunOver(self.halted)
        if self.deadline is None or self.clock.now() + wait <= self.deadline:
            return
        deadline = f"the run's deadline of {self.deadline_seconds:.0f} s (--deadline)"
        if wait <= 0:
            raise RunOver(f"{deadline} passed")
        reason = self._state(label).reason or "its limit"
        raise RunOver(f"{deadline} would pass while key {label!r} waits {wait:.0f} s for {reason}")

    def _state(self, label: str) -> _LabelState:
        return self._states.setdefault(label, _LabelState())

    def remaining(self, label: str, kept: bool = False) -> float:
        """Seconds until `label` may send again (0 when it may send now); `kept`: a request
        that may use what the key keeps (`keep`)."""
        with self._lock:
            state = self._state(label)
            until = state.blocked_until if kept else max(state.blocked_until, state.held_until)
            return max(0.0, until - self.clock.now())

    def keep(self, label: str, count: int) -> None:
        """Keep the last `count` requests of the label's window for requests sent with `kept`:
        the others wait for its reset once its Remaining is down to `count`. A scenario that
        must find the key with room later (the exhaustion's check that limits are per key)
        keeps it so; `keep(label, 0)` ends it."""
        with self._lock:
            state = self._state(label)
            state.kept = count
            if not count:
                state.held_until = 0.0

    def kept(self, label: str) -> int:
        with self._lock:
            return self._state(label).kept

    def hold(self, label: str, wait: float) -> None:
        """The label's Remaining is down to what it keeps: the others wait `wait` (its reset)."""
        with self._lock:
            state = self._state(label)
            until = self.clock.now() + wait
            if until > max(state.held_until, state.blocked_until):
                state.reason = f"X-RateLimit-Reset (Remaining down to the {state.kept} kept)"
            state.held_until = max(state.held_until, until)

    def wait_until_ready(self, label: str, kept: bool = False, scheduled: bool = False) -> float:
        """Sleep until `label` may send; raise TargetThrottled rather than wait beyond max_wait.
        `kept`: the request may use what the key keeps (`keep`). `scheduled`: a wait the run
        chose itself (a reset it waits for, a refusal it asks again a minute on), not one a
        refusal imposed: it does not count toward the bound on a key refused on end."""
        waited = 0.0
        while (wait := self.remaining(label, kept)) > 0:
            if wait > self.max_wait:
                raise TargetThrottled(
                    f"key {label!r} is limited for {wait:.0f} s, "
                    f"longer than the {self.max_wait:.0f} s this run may wait"
                )
            if (blanket := self.blanket.reason(self.clock.now())) is not None:
                raise TargetThrottled(blanket)
            self.check(label, wait)
            if not scheduled:
                self._check_refused_for(label, wait)
            over = self.on_wait(label, wait, self._state(label).reason) if self.on_wait else None
            self.clock.sleep(wait)
            if over is not None:
                over()
            waited += wait
        self.check(label)  # an interruption, or the deadline, may have come meanwhile
        with self._lock:
            self.waited[label] = self.waited.get(label, 0.0) + waited
        return waited

    def _check_refused_for(self, label: str, wait: float) -> None:
        """A key refused on end for longer than max_wait (a ban, an outage, a limiter that
        refuses whatever the client does) is waited for no more. Only the waits refusals impose
        count: a confirmation the run schedules itself (the day's refusal asked again a whole
        minute on, 121 s into it on a real minute) is never cut off by this bound."""
        state = self._state(label)
        if not state.consecutive_429s:
            return
        so_far = self.clock.now() - state.refused_since
        if so_far + wait > self.max_wait:
            raise TargetThrottled(
                f"key {label!r} has been refused ({state.refused_status}) on end for "
                f"{so_far:.0f} s, and {wait:.0f} s more of waiting would make it "
                f"{so_far + wait:.0f} s, longer than the {self.max_wait:.0f} s this run waits "
                "for one key"
            )

    def block(self, label: str, wait: float, reason: str = "") -> None:
        """Hold `label` for `wait` seconds from now (never shortening an existing block)."""
        with self._lock:
            state = self._state(label)
            until = self.clock.now() + wait
            if until > state.blocked_until:
                state.blocked_until, state.reason = until, reason

    def on_429(
        self, label: str, retry_after: float | None, status: int = 429, sent_at: float | None = None
    ) -> float:
        """Record a refusal (a 429, or a proxy limiter's 503) and block the label; returns the
        wait chosen.

        The wait is the larger of `Retry-After` and the exponential floor, so a server that keeps
        answering `Retry-After: 1` still sees us slow down; jitter is added on top but never pushes
        an acceptable wait past max_wait. A refusal of a request sent (`sent_at`, wall time)
        before the previous refusal came back was in flight with it, as a burst's are: the same
        refusal, not a client that kept sending, so the streak does not grow.
        """
        with self._lock:
            state = self._state(label)
            in_flight = sent_at is not None and sent_at < state.refused_at
            if not state.consecutive_429s:
                state.refused_since = self.clock.now()
            state.refused_status = status
            state.consecutive_429s += 0 if in_flight and state.consecutive_429s else 1
            state.refused_at = max(state.refused_at, time.time())
            wait = exponential_delay(state.consecutive_429s)
            jitter = self.rng.uniform(0.0, JITTER_FRACTION * max(wait, retry_after or 0.0))
        reason = f"exponential back-off after a {status}"
        if retry_after is not None and retry_after >= wait:
            wait, reason = retry_after, f"the Retry-After of its {status}"
        # Jitter must not make an acceptable wait TargetThrottled, nor blur the wait it reports.
        jitter = 0.0 if wait > self.max_wait else min(jitter, self.max_wait - wait)
        wait += jitter
        self.block(label, wait, reason)
        return wait

    def on_front_refusal(self, label: str, status: int, wait: float) -> None:
        """The refusal `on_429` just took was made in front of the service (`blanket`)."""
        self.blanket.refused(label, status, self.clock.now(), wait)

    def on_response(self, label: str, proactive_wait: float | None) -> None:
        """Record a non-429 response: the 429 streak ends; pace when the quota is reported spent."""
        with self._lock:
            self._state(label).consecutive_429s = 0
        self.blanket.answered(label, self.clock.now())
        if proactive_wait is not None:
            self.block(label, proactive_wait, "X-RateLimit-Reset (Remaining reached 0)")
