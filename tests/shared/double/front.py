"""A limiter in front of the double, refilled continuously at the plan's figure (a token bucket
per key, as a gateway, Varnish's vsthrottle or HAProxy's rolling rate keeps one): the
`front-token-bucket` fault. It lets a window's quota through at once, but gives it back only
as time passes, so it refuses inside the next window's announced quota when the two are spent
close together, with its own 429 and none of the service's headers."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.responses import PlainTextResponse, Response


@dataclass
class TokenBuckets:
    minute_seconds: float
    levels: dict[str, tuple[float, float]] = field(default_factory=dict)  # tokens, when

    def admit(self, identity: str, per_minute: int, now: float) -> bool:
        """One token of `identity`'s bucket (capacity: a minute's quota), if it has one."""
        tokens, then = self.levels.get(identity, (float(per_minute), now))
        tokens = min(per_minute, tokens + (now - then) * per_minute / self.minute_seconds)
        allowed = tokens >= 1.0
        self.levels[identity] = (tokens - 1.0 if allowed else tokens, now)
        return allowed


def refusal() -> Response:
    return PlainTextResponse("Too Many Requests\n", status_code=429)
