"""A limiter in front of the double, refilled continuously at the plan's figure (a token bucket
per key, as a gateway, Varnish's vsthrottle or HAProxy's rolling rate keeps one): the
`front-token-bucket` fault. It lets a window's quota through at once, but gives it back only
as time passes, so it refuses inside the next window's announced quota when the two are spent
close together, with its own 429 and none of the service's headers. Its bucket holds a few more
than a minute's quota (SLACK), as a gateway set a little above the plan does: a window's quota
and the request that proves the service's own 429 get through."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.responses import PlainTextResponse, Response

SLACK = 5


@dataclass
class TokenBuckets:
    minute_seconds: float
    levels: dict[str, tuple[float, float]] = field(default_factory=dict)  # tokens, when

    def admit(self, identity: str, per_minute: int, now: float) -> bool:
        """One token of `identity`'s bucket (a minute's quota and SLACK), if it has one."""
        capacity = per_minute + SLACK
        tokens, then = self.levels.get(identity, (float(capacity), now))
        tokens = min(capacity, tokens + (now - then) * per_minute / self.minute_seconds)
        allowed = tokens >= 1.0
        self.levels[identity] = (tokens - 1.0 if allowed else tokens, now)
        return allowed


def refusal() -> Response:
    return PlainTextResponse("Too Many Requests\n", status_code=429)
