"""What one run of the checker is told: the target, the keys, the plan, the profile, the budget."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import secrets
import time

from conformance.burst.spender import SPENDING_CEILING
from conformance.httpclient.connection import TlsOptions
from conformance.options import BY_NAME, OPTIONS, PLAN_NAMES, PLANS, PROFILES, SettingsError

# The run's tag in category names: no 0/o or 1/l, so that an operator reads it back right.
TAG_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
TAG_LENGTH = 5

# A header value: visible ASCII and spaces, nothing a target could read as a second header.
USER_AGENT = re.compile(r"[\x20-\x7e]{1,256}")
# --vendor and --implementation: one line of printable text (any script), bounded, for a register.
NAMES = {"vendor": 100, "implementation": 200}

SMOKE_BUDGET = 30
SCENARIO_BUDGET = 400
"""Requests a full run keeps for everything but the exhaustion: scenarios and generated tests."""
EXHAUSTION_MARGIN = 10
"""Requests the exhaustion needs beyond its waves: probes, the main key's two, the recovery."""
MIN_KEY_LENGTH = 8
"""Shorter keys cannot be kept out of the reports: redaction would find them in ordinary text
(the base URL's path, category names, bodies) and hide that text too, and checks reading it
would then fail a correct server. Keys as issued are far longer."""


SMOKE_DEADLINE = 300
"""Seconds a smoke run may take: its 30 requests and a limit or two waited out, with a margin."""
FULL_RUN_MINUTES = 10
"""Minutes a full run needs on a real (60 s) minute beside the exhaustion's: the scenarios, the
generated tests and the windows they wait out, with a margin."""
DAY_EXTRA_WINDOWS = 2
"""Windows the day profile spends beyond the day's figure over the minute's, before it takes the
day for never enforced."""
DAY_WINDOW_SECONDS = 70
"""Seconds one window of the day takes on a real minute: the minute, the wait for its reset and
a margin."""
DAY_REQUESTS_PER_WINDOW = 4
"""Requests a window of the day may send beyond its announced quota: its refusal, and requests
a wave had in flight when it met it."""


def default_deadline(profile: str, plan_limits: tuple[int | None, int | None] = (60, 1_000)) -> int:
    """Seconds a run may take when --deadline is not given: the windows its profile needs (a
    full run's exhaustion spends up to SPENDING_CEILING minutes' quotas and waits a reset after
    each; the day profile then spends a day's windows, each a minute and its wait) and a margin."""
    if profile == "smoke":
        return SMOKE_DEADLINE
    full = (FULL_RUN_MINUTES + 2 * SPENDING_CEILING) * 60
    if profile == "day":
        return full + math.ceil(day_windows(*plan_limits) * DAY_WINDOW_SECONDS)
    return full


def exhaustion_reserve(per_minute: int | None) -> int:
    """Requests a full run keeps for exhausting a key: four minutes' quota and a margin."""
    return SPENDING_CEILING * (per_minute or 60) + EXHAUSTION_MARGIN


def day_windows(per_minute: int | None, per_day: int | None) -> int:
    """Windows the day profile may spend: the day's figure over the minute's, rounded up, and
    DAY_EXTRA_WINDOWS more to see a day that is never enforced."""
    return math.ceil((per_day or 1_000) / (per_minute or 60)) + DAY_EXTRA_WINDOWS


def day_reserve(per_minute: int | None, per_day: int | None) -> int:
    """Requests the day profile keeps for spending a day: the day's figure, a minute's quota
    for each extra window, and a few per window (its opening, its refusal)."""
    windows = day_windows(per_minute, per_day)
    extra = DAY_EXTRA_WINDOWS * (per_minute or 60)
    return (per_day or 1_000) + extra + windows * DAY_REQUESTS_PER_WINDOW


def from_environment(name: str) -> str | None:
    value = os.environ.get(BY_NAME[name].environment, "").strip()
    return value or None


def new_run_id() -> str:
    """`<UTC time>-<tag>`: the time for people, the random tag for the run's category names."""
    tag = "".join(secrets.choice(TAG_ALPHABET) for _ in range(TAG_LENGTH))
    return time.strftime("%Y%m%d%H%M%S", time.gmtime()) + "-" + tag


class RunSettings:
    """What `Settings` can tell beside its fields: the plan's figures, the budget, the deadline."""

    def __post_init__(self) -> None:
        if not USER_AGENT.fullmatch(self.user_agent) or not self.user_agent.strip():
            raise SettingsError(
                "--user-agent must be 1 to 256 printable ASCII characters (no line breaks)"
            )
        for name, longest in NAMES.items():
            check_name(name, getattr(self, name), longest)
        if self.plan not in PLAN_NAMES:
            raise SettingsError(f"unknown plan {self.plan!r}: use one of {', '.join(PLAN_NAMES)}")
        if self.profile not in PROFILES:
            raise SettingsError(
                f"unknown profile {self.profile!r}: use one of {', '.join(PROFILES)}"
            )
        for option in OPTIONS:
            value = getattr(self, option.name)
            if option.kind == "count" and value is not None and value < 1:
                raise SettingsError(f"{option.flag} must be a positive whole number")
        if not self.base_url:
            raise SettingsError("no base URL: pass --base-url or set PETSTORE_BASE_URL")
        if not self.api_key:
            raise SettingsError("no API key: pass --api-key or set PETSTORE_API_KEY")
        check_keys(self.api_key, self.spare_api_key, self.base_url)

    @property
    def run_deadline(self) -> int:
        """Seconds the run may take: past them it sends nothing more and has no verdict."""
        if self.deadline is not None:
            return self.deadline
        return default_deadline(self.profile, self.plan_limits)

    @property
    def plan_limits(self) -> tuple[int | None, int | None]:
        """(per minute, per day) of the plan; None where an enterprise figure is not given."""
        if self.plan in PLANS:
            return PLANS[self.plan]
        return self.requests_per_minute, self.requests_per_day

    @property
    def tls(self) -> TlsOptions:
        return TlsOptions(self.ca_bundle, self.client_cert, self.client_key, self.insecure)

    @property
    def keys(self) -> dict[str, str]:
        keys = {"main": self.api_key}
        if self.spare_api_key:
            keys["spare"] = self.spare_api_key
        return keys

    @property
    def exhaustion_key(self) -> str:
        """The key the suite exhausts to prove 429 and reset: the spare, else the main key, last."""
        return "spare" if self.spare_api_key else "main"

    @property
    def name_prefix(self) -> str:
        """Categories the run creates carry this prefix, so operators can find and remove them.

        Short (`psc-` and the run's five-character tag: 10 characters), so that a name with a
        counter and a text after it still fits the 32 characters every server must accept."""
        return f"psc-{self.run_id.rsplit('-', 1)[-1]}-"

    @property
    def budget(self) -> int:
        """The request budget: the given one, or what the profile needs on this plan."""
        if self.max_requests is not None:
            return self.max_requests
        if self.profile == "smoke":
            return SMOKE_BUDGET
        full = SCENARIO_BUDGET + exhaustion_reserve(self.plan_limits[0])
        return full + (day_reserve(*self.plan_limits) if self.profile == "day" else 0)


Settings = dataclasses.make_dataclass(
    "Settings",
    [
        *(option.settings_field() for option in OPTIONS),
        ("run_id", str, dataclasses.field(default_factory=new_run_id)),
    ],
    bases=(RunSettings,),
    frozen=True,
)
"""A run's settings: a field for each option of OPTIONS (its default when not given), and the
run's id."""


def check_name(name: str, value: str | None, longest: int) -> None:
    if value is None:
        return
    if not value.strip() or len(value) > longest or not value.isprintable():
        raise SettingsError(
            f"--{name} must be 1 to {longest} printable characters (no control characters)"
        )


def check_keys(main: str, spare: str | None, base_url: str) -> None:
    """Keys the run can use and keep secret: long enough to be told from ordinary text, not
    part of the target's address, and two different keys (exhausting the spare must not spend
    the main key's quota)."""
    for option, key in (("--api-key", main), ("--spare-api-key", spare)):
        if not key:
            continue
        if len(key) < MIN_KEY_LENGTH:
            raise SettingsError(
                f"{option} is {len(key)} characters long: a key shorter than {MIN_KEY_LENGTH} "
                "cannot be kept out of the reports (ordinary text holding it would be hidden "
                "too); use the key as issued"
            )
        if key in base_url:
            raise SettingsError(f"{option}: the key appears in --base-url; keep keys out of URLs")
    if spare and spare == main:
        raise SettingsError(
            "--spare-api-key is the same key as --api-key: the spare is exhausted, so it must "
            "be a second key of the same plan"
        )


def resolve(given: dict[str, str | bool | None]) -> dict:
    """Each option as given, else from its environment variable, parsed; None where absent.
    Files are read now, so that a bad one is refused before the run sends a request."""
    options: dict = {}
    for option in OPTIONS:
        value = given.get(option.name)
        if value is None:
            value = from_environment(option.name)
        options[option.name] = option.parse(value)
    return options


def describe_day_plan(settings: Settings) -> str:
    """The day profile's cost, said before the run spends it."""
    per_minute, per_day = settings.plan_limits
    if per_minute is None or per_day is None:
        return "day profile: the plan's figures are not known, so its day cannot be spent"
    windows = math.ceil(per_day / per_minute)
    key = "the spare key" if settings.spare_api_key else "the main key, last,"
    return (
        f"day profile: after the full run, {key} spends its day: {windows} windows of "
        f"{per_minute:,}, {per_day:,} requests, about {windows} minutes on a real minute "
        f"(seconds on a shortened one); the key stays refused for the rest of its day"
    )
