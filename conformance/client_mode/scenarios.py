"""The scenarios a client is run through: what it is asked to do (the PETSTORE_* variables) and
how the scenario server answers it (a `Script` for its limiter). Most waits are 1 or 2 s; the two
long ones (`LONG_WAIT`) tell a client that reads `Retry-After` apart from one whose own first
wait happens to be long enough. Scenarios run side by side: a good client passes the whole
default set in about ten seconds.

What must be judged on a retry is asked of listCategories, a GET, which careful libraries retry
by default; a POST that a client declines to repeat (RFC 9110 section 9.2.2) is no fault."""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.reference.limiting import BanRule

LIST = "listCategories"
CREATE = "createCategory"
# The ban of the hammering scenario: the reference's own rule 5 (`--ban-after 3`).
HAMMERING_THRESHOLD = 3
HAMMERING_BAN = BanRule(after=HAMMERING_THRESHOLD, seconds=5)
# How long a client may keep trying on a 429 that never ends (CLI-GIVES-UP).
GIVE_UP_SECONDS = 30
# Longer than the first waits measured of common retry libraries that do not read Retry-After
# (tenacity's documented wait_exponential(multiplier=1, min=4, max=10): 4 s; p-retry 1 s;
# backoff's full jitter 0 to 1 s; a fixed-sleep loop 1 s), with a margin that load cannot close.
LONG_WAIT = 6


@dataclass(frozen=True)
class Script:
    """How the scenario server's limiter answers the key, request after request.

    `refusals` answers are refusals (`status`, with a `Retry-After` of `wait` seconds as
    delay-seconds, as an HTTP-date, or none) before the first served one; a request that comes
    back before the wait it was given is refused again, as a real limiter does, and counts
    towards the ban where there is one. `endless` refuses for ever. `spend_window` serves every
    request with `X-RateLimit-Remaining: 0` and a Reset `wait` seconds on.
    """

    refusals: int = 0
    status: int = 429
    retry_after: str | None = "seconds"  # "seconds", "http-date" or None
    wait: int = 1
    endless: bool = False
    spend_window: bool = False
    ban: BanRule | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    purpose: str
    operation: str = LIST
    script: Script = field(default_factory=Script)
    repeat: int = 1
    valid_key: bool = True
    category_name: str = "client-check"
    # A good client is served and exits 0. A scenario where it may as well give up says False.
    expect_success: bool = True
    time_limit: float | None = None  # seconds; else the command's --timeout


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("success", "a plain success: one listCategories"),
    Scenario("create", "a plain success: one createCategory", operation=CREATE),
    Scenario(
        "retry-after-seconds",
        "two 429s with Retry-After in seconds (1 s), then served",
        script=Script(refusals=2, retry_after="seconds", wait=1),
    ),
    Scenario(
        "retry-after-date",
        "two 429s with Retry-After as an HTTP-date (2 s on), then served",
        script=Script(refusals=2, retry_after="http-date", wait=2),
    ),
    Scenario(
        "long-retry-after-seconds",
        f"one 429 with Retry-After: {LONG_WAIT}, longer than common libraries' first waits",
        script=Script(refusals=1, retry_after="seconds", wait=LONG_WAIT),
    ),
    Scenario(
        "long-retry-after-date",
        f"one 429 with Retry-After as an HTTP-date {LONG_WAIT} s on, then served",
        script=Script(refusals=1, retry_after="http-date", wait=LONG_WAIT),
    ),
    Scenario(
        "create-429",
        "createCategory answered by two 429s with Retry-After: 1: the client may retry after "
        "the wait or give up (not repeating a POST is a common default, RFC 9110 section 9.2.2)",
        operation=CREATE,
        script=Script(refusals=2, retry_after="seconds", wait=1),
        expect_success=False,
    ),
    Scenario(
        "no-retry-after",
        "three 429s without Retry-After: the client's own back-off is judged",
        # Each 429 names a Reset 3 to 4 s on: a client that waits for it is told apart from one
        # whose fixed 1 s sleep happens to land after a Reset only 1 to 2 s on.
        script=Script(refusals=3, retry_after=None, wait=3),
    ),
    Scenario(
        "remaining-zero",
        "asked to repeat twice; every answer says X-RateLimit-Remaining: 0, Reset 2 s on",
        repeat=2,
        script=Script(spend_window=True, wait=2),
    ),
    Scenario(
        "endless-429",
        "a 429 with Retry-After: 1 on every request: the client must give up",
        script=Script(endless=True, wait=1),
        expect_success=False,
        time_limit=GIVE_UP_SECONDS + 5,
    ),
    Scenario(
        "unauthorized",
        "an invalid key: 401 with an Error body, never worth repeating unchanged",
        valid_key=False,
        expect_success=False,
    ),
    Scenario(
        "bad-request",
        "createCategory with a blank name, which the server refuses: 400 with an Error body",
        operation=CREATE,
        category_name="   ",
        expect_success=False,
    ),
    Scenario(
        "unavailable-503",
        "two 503s with Retry-After: 1, then served",
        script=Script(refusals=2, status=503, wait=1),
    ),
    Scenario(
        "hammering-ban",
        f"a 429 with Retry-After: 2; {HAMMERING_THRESHOLD} requests before it has passed ban "
        f"the key for {HAMMERING_BAN.seconds} s",
        script=Script(refusals=1, wait=2, ban=HAMMERING_BAN),
    ),
)
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
