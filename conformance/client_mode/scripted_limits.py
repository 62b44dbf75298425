"""The limiter a scenario server answers with: the reference's middleware and app stay as they
are (validation, Error bodies, the rate-limit headers on every answer); only the decisions
follow the scenario's `Script` instead of a count per window. The ban is the reference's own
rule (`BanRule`), kept in a `limits` memory storage as the reference keeps it."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from email.utils import formatdate

from limits.aio.storage import Storage
from limits.storage import storage_from_string

from conformance.client_mode.scenarios import Script
from conformance.reference.auth import Caller
from conformance.reference.limiting import BanKeys, Decision, banned

LIMIT = 60  # the free plan's per-minute figure, as the headers of a real free key say
FAR_RESET = 60  # seconds to the Reset of a window with room left
REFUSAL_CODES = {429: "rate_limited", 503: "limits_unavailable"}


@dataclass
class ScriptedDecision(Decision):
    """A decision whose `Retry-After` may be an HTTP-date, or absent on a refusal."""

    retry_after_text: str | None = None

    def headers(self) -> dict[str, str]:
        headers = super().headers()
        headers.pop("Retry-After", None)
        if self.retry_after_text is not None:
            headers["Retry-After"] = self.retry_after_text
        return headers


class ScriptedLimits:
    """`RequestLimits`' interface (`open`, `admit`, `storage_errors`) answering by a script."""

    storage_errors: tuple[type[Exception], ...] = ()  # nothing to lose: it is all in memory

    def __init__(self, script: Script) -> None:
        self.script = script
        self.refused = 0
        self.served = 0
        self.limited_until = 0.0  # wall clock: a request before it is refused again
        self._storage: Storage | None = None

    async def open(self) -> None:
        self._storage = storage_from_string("async+memory://")

    async def admit(self, caller: Caller) -> Decision:
        now = time.time()
        if not caller.authenticated:  # served by the limiter; the app answers 401
            return Decision(True, LIMIT, LIMIT - 1, math.ceil(now) + FAR_RESET)
        script, storage, keys = self.script, self._storage, BanKeys.of(caller.identity)
        if script.ban is not None and storage is not None:
            until = await script.ban.banned_until(storage, keys)
            if until is not None:
                return banned(caller.plan, until, now)
        if now < self.limited_until:  # came back before the wait it was given
            return await self._refuse(caller, keys, now, self.limited_until)
        if script.endless or self.refused < script.refusals:
            self.refused += 1
            until = now + script.wait
            if script.retry_after == "http-date":  # a date names a whole second
                until = math.ceil(now) + script.wait
            self.limited_until = until if script.retry_after else now
            return await self._refuse(caller, keys, now, until)
        self.served += 1
        if script.spend_window:
            reset = math.ceil(now) + script.wait
            self.limited_until = reset
            return Decision(True, LIMIT, 0, reset)
        return Decision(True, LIMIT, max(0, LIMIT - self.served), math.ceil(now) + FAR_RESET)

    async def _refuse(self, caller: Caller, keys: BanKeys, now: float, until: float) -> Decision:
        script = self.script
        seconds = max(1, math.ceil(until - now))
        ban = script.ban
        strikes = ban is not None and self._storage is not None and script.status == 429
        if strikes and await ban.strike(self._storage, keys, seconds):
            return banned(caller.plan, now + ban.seconds, now)
        text = {
            "seconds": str(seconds),
            "http-date": formatdate(until, usegmt=True),
            None: None,
        }[script.retry_after]
        # Without Retry-After, the Reset still names a moment ahead (the wait's end), as a
        # limiter's window does: a client may wait for it instead of backing off on its own.
        reset = until if script.retry_after else math.ceil(now) + script.wait
        return ScriptedDecision(
            False,
            LIMIT,
            0,
            math.ceil(reset),
            code=REFUSAL_CODES[script.status],
            retry_after_text=text,
        )
