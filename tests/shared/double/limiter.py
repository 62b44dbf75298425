"""Plans and a small hand-rolled limiter (fixed or sliding windows, per minute and per day).

Hand-rolled rather than `limits` so that the double can be made to miscount in controlled ways
(`slack` shifts the capacity by one either way, or switches enforcement off).
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass

MINUTES_PER_DAY = 1440


@dataclass(frozen=True)
class Plan:
    per_minute: int
    per_day: int


PLANS: dict[str, Plan] = {
    "free": Plan(60, 1_000),
    "pro": Plan(300, 10_000),
    "business": Plan(1_000, 100_000),
}


def parse_key(spec: str) -> tuple[str, Plan]:
    """`KEY:PLAN` (free, pro, business) or `KEY:enterprise:RPM:RPD`."""
    parts = spec.split(":")
    if len(parts) == 2 and parts[1] in PLANS and parts[0]:
        return parts[0], PLANS[parts[1]]
    if len(parts) == 4 and parts[1] == "enterprise" and parts[0]:
        try:
            per_minute, per_day = int(parts[2]), int(parts[3])
        except ValueError:
            pass
        else:
            if per_minute > 0 and per_day > 0:
                return parts[0], Plan(per_minute, per_day)
    raise ValueError(f"bad key {spec!r}: expected KEY:free|pro|business or KEY:enterprise:RPM:RPD")


@dataclass
class Window:
    """One window of one caller as it stands after a request."""

    name: str  # "minute" or "day"
    limit: int
    used: int
    start: float
    end: float  # when this window gives a request back (fixed: its end; sliding: oldest + length)

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


@dataclass
class Decision:
    allowed: bool
    minute: Window
    day: Window
    retry_at: float | None  # when refused: when the caller may be served again
    report: Window  # the window the headers report

    @staticmethod
    def choose(allowed: bool, minute: Window, day: Window) -> Window:
        """The one refusing (the longest refusal), else the one with the fewest left."""
        windows = (minute, day)
        if not allowed:
            refusing = [w for w in windows if w.remaining == 0]
            return max(refusing or windows, key=lambda w: w.end)
        return min(windows, key=lambda w: (w.remaining, -w.end))


class Limiter:
    """Counts requests per identity in a per-minute and a per-day window.

    A refused request consumes nothing. `slack` shifts the capacity (a faulty off-by-one);
    `enforce=False` never refuses but still counts. Fixed windows start at multiples of their
    length, shifted by `phase` seconds (a window that ends at a fraction of a second). The day
    may be faulty on its own: `day_share` of its figure is its capacity (a day refusing early),
    and `enforce_day=False` never refuses for the day (only the minute is enforced).
    `sliding_minute` slides the minute alone (a sliding log, as DRF's throttles keep one) and
    leaves the day fixed. The fixed day starts when the double does: a day of 1,440 shortened
    minutes aligned to the clock would end inside one run in a hundred, and a new day's quota
    would then look like a day served past its figure.
    """

    def __init__(
        self,
        minute_seconds: float,
        *,
        sliding: bool = False,
        slack: int = 0,
        enforce: bool = True,
        phase: float = 0.0,
        day_share: float = 1.0,
        enforce_day: bool = True,
        sliding_minute: bool = False,
    ) -> None:
        self.minute_seconds = minute_seconds
        self.sliding = sliding
        self.slack = slack
        self.enforce = enforce
        self.phase = phase
        self.day_share = day_share
        self.enforce_day = enforce_day
        self.sliding_minute = sliding_minute
        self.day_origin = time.time()
        self._fixed: dict[tuple[str, str], list[int]] = {}
        self._log: dict[tuple[str, str], deque[float]] = {}

    def slides(self, name: str) -> bool:
        return self.sliding or (self.sliding_minute and name == "minute")

    def lengths(self) -> dict[str, float]:
        return {"minute": self.minute_seconds, "day": self.minute_seconds * MINUTES_PER_DAY}

    def hit(self, identity: str, plan: Plan, now: float, *, refuse: bool = False) -> Decision:
        """Count one request of `identity`; `refuse=True` refuses it whatever the counts."""
        limits = {"minute": plan.per_minute, "day": plan.per_day}
        capacities = {
            "minute": plan.per_minute + self.slack,
            "day": math.floor(plan.per_day * self.day_share) + self.slack,
        }
        lengths = self.lengths()
        counts: dict[str, int] = {}
        starts: dict[str, float] = {}
        ends: dict[str, float] = {}
        frees_at: dict[str, float] = {}
        for name in ("minute", "day"):
            length = lengths[name]
            capacity = capacities[name]
            if self.slides(name):
                log = self._log.setdefault((identity, name), deque())
                while log and log[0] <= now - length:
                    log.popleft()
                counts[name] = len(log)
                starts[name] = now - length
                ends[name] = log[0] + length if log else now + length
                if len(log) >= capacity > 0:
                    frees_at[name] = log[len(log) - capacity] + length
            else:
                origin = self.phase if name == "minute" else self.day_origin
                index = math.floor((now - origin) / length)
                slot = self._fixed.setdefault((identity, name), [index, 0])
                if slot[0] != index:
                    slot[:] = [index, 0]
                counts[name] = slot[1]
                starts[name] = index * length + origin
                ends[name] = (index + 1) * length + origin
                frees_at[name] = ends[name]
        exceeded = [name for name in ("minute", "day") if counts[name] >= capacities[name]]
        if not self.enforce_day and "day" in exceeded:
            exceeded.remove("day")
        allowed = not (self.enforce and exceeded) and not refuse
        if allowed:
            for name in ("minute", "day"):
                counts[name] += 1
                if self.slides(name):
                    self._log[(identity, name)].append(now)
                    ends[name] = self._log[(identity, name)][0] + lengths[name]
                else:
                    self._fixed[(identity, name)][1] += 1
        windows = {
            name: Window(name, limits[name], counts[name], starts[name], ends[name])
            for name in ("minute", "day")
        }
        retry_at = None
        if not allowed:
            blocking = exceeded or ["minute"]
            for name in blocking:
                windows[name].used = max(windows[name].used, windows[name].limit)
            retry_at = max(frees_at.get(name, ends[name]) for name in blocking)
        minute, day = windows["minute"], windows["day"]
        return Decision(allowed, minute, day, retry_at, Decision.choose(allowed, minute, day))
