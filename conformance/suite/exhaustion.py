"""Spending a key's quota: the 429, its Retry-After and Reset, and that limits are per key.

`exhaust_and_recover` is the whole scenario. With a spare key it starts with the run, on a
thread of its own (conftest.py), so that its waits (about a minute on a real minute) pass while
the main key's tests proceed on their own quota; without one, the main key is exhausted last.

The burst, its sizing and its per-window reading are `conformance.burst.spender`'s; the judging of
what it showed is here, each check naming its requirement.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import TYPE_CHECKING, NoReturn

import pytest

from conformance import interruption
from conformance.burst.reach import window_length
from conformance.burst.spender import (
    PATH,
    Announce,
    Spender,
    plan_wave,
    round_trip,
    send_wave,
    until_a_quiet_window,
)
from conformance.burst.waves import Burst, Wave
from conformance.burst.window import spend_window
from conformance.httpclient.backoff import LONGEST_WAIT
from conformance.httpclient.client import ConformanceClient, RunOver, TargetThrottled
from conformance.httpclient.service_kind import ServiceKind, front_refusal
from conformance.judging import checks
from conformance.judging.checks import cannot_check, expect
from conformance.judging.ratelimit import (
    SETTLE_MARGIN,
    OwnCount,
    ServerClock,
    Snapshot,
    counting,
    of_the_key,
    own_count,
    refused_after_quota,
    refused_within_quota,
    settled_in_its_window,
    snapshot,
)
from conformance.judging.reset_promise import judge_broken_reset
from conformance.judging.response_checks import retry_after_seconds
from conformance.judging.spent_window import SpentWindow, judge_window
from conformance.settings import Settings
from conformance.spec import all_requirements

if TYPE_CHECKING:
    from conformance.run import Run


class EarlyExhaustion:
    """`exhaust_and_recover` on a thread of its own, its checks recorded under its test."""

    def __init__(self, run: Run, test_id: str):
        self.run = run
        self.test_id = test_id
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="exhaustion", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def result(self) -> None:
        """Wait for the scenario to end; raise what it raised (a skip, a failed requirement,
        a spent budget), as if it had run in the test itself."""
        self.thread.join()
        if self.error is not None:
            raise self.error

    def _work(self) -> None:
        interruption.for_the_main_thread()
        checks.set_current_test(self.test_id)
        try:
            exhaust_and_recover(self.run.client, self.run.settings, self.run.announce)
        except BaseException as error:  # noqa: BLE001 - handed to the test, whatever it is
            self.error = error


def exhaust_and_recover(client: ConformanceClient, settings: Settings, announce: Announce) -> None:
    """The scenario. A key refused on end past the run's bound for one key (TargetThrottled)
    leaves it with no verdict, unless its refusals already prove that its window never reset
    (conformance.judging.reset_promise): that proof does not depend on when they were sent.
    A run that may send nothing more (RunOver: its deadline, an interruption) still stops."""
    try:
        spend_and_recover(client, settings, announce)
    except TargetThrottled as stopped:
        label = settings.exhaustion_key
        clock = ServerClock.of(client.exchanges)
        proven = judge_broken_reset(of_the_key(client.exchanges, label), clock)
        if not proven or isinstance(stopped, RunOver):
            raise
        announce(f"{label} key: refused past each reset it was promised; no more is waited for")


def spend_and_recover(client: ConformanceClient, settings: Settings, announce: Announce) -> None:
    label = settings.exhaustion_key
    per_minute = settings.plan_limits[0]
    other = label != "main"
    if other:
        # The main key's tests go on meanwhile; it keeps two of its window for the check that
        # limits are per key (before and after the burst), else a late burst would find it
        # spent and wait for its reset inside the burst's exclusive hold.
        client.keep("main", MAIN_KEPT)
    go_late = functools.partial(go_late_in_its_window, client, label, per_minute)
    try:
        late = go_late()
        # Nothing else may be sent meanwhile: the main key's room is measured just before the
        # burst and must be its own just after, and no other request may land among the burst's.
        with client.exclusive():
            probe = snapshot(client.get(PATH, key=label))
            main_before = snapshot(client.get(PATH, key="main", kept=True)) if other else None
            spender = Spender(client, label, per_minute, announce, go_late if late else None)
            burst = spender.spend(probe)
            main_after: list[Snapshot] = []
            room = main_before is not None and has_room(main_before, settings, client)
            if main_before is not None and room and is_429(burst):
                main_after = main_key_after(client, main_before, settings)
    finally:
        client.keep("main", 0)
    clock = ServerClock.of(client.exchanges)
    if judge_broken_reset(of_the_key(client.exchanges, label), clock):
        return  # refused past two resets it announced: what the burst showed is beside it
    judge_burst(burst, settings, clock, by_statuses(client, burst), fronted(client, burst))
    if not is_429(burst):
        return
    refused = burst.refused
    assert refused is not None
    check_refusal(refused, per_minute)
    if main_before is not None:
        check_other_key_unaffected(main_before, main_after, refused, settings)
    recovered = check_recovery(client, label, refused)
    if recovered is not None and not fronted(client, burst) and refused.reset is not None:
        spend_second_window(client, settings, recovered, announce)


MAIN_KEPT = 2
"""Requests of its window the main key keeps for the check that limits are per key."""
PER_KEY_GROUP = 12
"""The main key's requests sent together just after the spare key's 429 where no header shows
the main key's own window (`main_key_after`)."""
BOUNDARY_SHARES = (0.25, 0.5)
"""How late in its window the burst begins: with a quarter of the window left; with half where
the wave could not land in a quarter (a busy machine's round trips). A limiter refilled
continuously has given back that share of its quota by the reset, at most: the window after it,
spent at once, still finds it short."""
BOUNDARY_LEAD = SETTLE_MARGIN + 1.0
"""Fewest seconds before its Reset the burst may begin: a second to land in before the
window's last second (where nothing can be told). A window shorter than four of them (8 s)
is spent at once, as before: a late wave there would land unsettled on a busy machine."""


def go_late_in_its_window(
    client: ConformanceClient, label: str, per_minute: int | None, retry_on_429: bool = True
) -> bool:
    """Wait until late in the key's minute window before its burst, where its wave can still
    land there: the window after the reset is then spent just after this one, across the
    boundary, as fixed windows allow and a limiter refilled continuously at the plan's figure
    does not (it has given back a quarter of its quota at most, half where a busy machine's
    wave needs half the window to land). Begun early, the run would catch such a limiter only
    when it happened to start late in a window. The run waits for the reset after the burst
    all the same; met in its last quarter, the key waits for the next one's. The main key's
    tests go on meanwhile, keeping room for the check after it (`MAIN_KEPT`). True where it
    waited. Asked again after a 429 (`retry_on_429=False`), a key still refused is not
    retried here: the spender's own probe, once its Retry-After has passed, tells why (a window
    that never resets, refused past each reset it announces)."""
    seen = snapshot(client.get(PATH, key=label, retry_on_429=retry_on_429))
    if not seen.served and not retry_on_429:
        return False
    reset = minute_reset(seen, per_minute)
    if reset is None:
        return False
    clock = ServerClock.of(client.exchanges)
    window = window_length(of_the_key(client.exchanges, label), clock)
    if BOUNDARY_SHARES[0] * window < BOUNDARY_LEAD:
        # Too short to begin late in, as the key's responses show it; but a clock-aligned
        # window met partway shows only what is left of it (a 10 s minute met 4 s in looked 6 s
        # long, and a busy machine's run meets it later than an idle one's). The first response
        # after its reset shows it whole.
        client.wait(label, clock.seconds_until(reset), "its window's reset, to see a whole one")
        seen = snapshot(client.get(PATH, key=label))
        reset = minute_reset(seen, per_minute)
        if reset is None:
            return False
        clock = ServerClock.of(client.exchanges)
        window = window_length(of_the_key(client.exchanges, label), clock)
    left = clock.seconds_left(reset)
    if left > LONGEST_WAIT or BOUNDARY_SHARES[0] * window < BOUNDARY_LEAD:
        return False  # a window too short to begin late in and still settle (shortened ones)
    trip = round_trip(client.exchanges, label)
    wave = (seen.remaining or 0) + 1
    leads = [share * window for share in BOUNDARY_SHARES]
    lead = next((lead for lead in leads if plan_wave(wave, trip, lead) is not None), None)
    if lead is None:
        return False  # its wave could not land in half the window: it goes now, as before
    if left <= lead + SETTLE_MARGIN:
        left += window  # too late in this one already: late in the next
    client.wait(label, left - lead, "late in its window, to spend the next one just after")
    return True


def minute_reset(seen: Snapshot, per_minute: int | None) -> float | None:
    """The Reset of the plan's minute, where the response's headers report that window whole
    (its Limit, Remaining and a Reset); None where they report another or none."""
    shown = per_minute is not None and seen.limit == per_minute and seen.remaining is not None
    return seen.reset if shown else None


def is_429(burst: Burst) -> bool:
    return burst.refused is not None and burst.refused.status == 429


def has_room(seen: Snapshot, settings: Settings, client: ConformanceClient) -> bool:
    """The key had requests left: its headers report the per-minute window with some left in
    it; or, whatever its headers say (absent, or another limit's), it was served and has sent
    fewer requests than the plan allows in a minute and in a day: its own quota cannot be
    spent, so a 429 on it is another key's (a limiter keyed by the client's address)."""
    per_minute = settings.plan_limits[0]
    if per_minute is not None and seen.limit == per_minute and seen.remaining is not None:
        return bool(seen.remaining)
    return seen.served and left_by_count(seen, settings, client) > 0


def left_by_count(seen: Snapshot, settings: Settings, client: ConformanceClient) -> int:
    """Requests the key may still send by the plan's figures, counting what it sent within a
    minute of `seen` and in the whole run (0 where the plan has no minute's figure)."""
    per_minute, per_day = settings.plan_limits
    if per_minute is None:
        return 0
    mine = [e.started_at for e in client.exchanges if e.key_label == seen.exchange.key_label]
    last_minute = [at for at in mine if at > seen.exchange.started_at - 60.0]
    left = per_minute - len(last_minute)
    return left if per_day is None else min(left, per_day - len(mine))


def main_key_after(
    client: ConformanceClient, before: Snapshot, settings: Settings
) -> list[Snapshot]:
    """The main key's answers just after the spare key's 429: one request where its headers
    speak of its quota, else a group sent at once (PER_KEY_GROUP, within its own room by
    count). A limiter shared by both keys and refilled continuously (a token bucket per client
    address) gives a request back every second or less at a plan's rate: a single request sent
    after the 429 finds one whenever the machine was slow to send it, a group cannot all,
    unless it came so late that as many were given back (`check_other_key_unaffected`)."""
    if before.limit is not None or before.remaining is not None:
        return [snapshot(client.get(PATH, key="main", retry_on_429=False, kept=True))]
    count = min(PER_KEY_GROUP, left_by_count(before, settings, client))
    return [snapshot(e) for e in send_wave(client, "main", Wave(count, count))]


def by_statuses(client: ConformanceClient, burst: Burst) -> OwnCount | None:
    """Where the burst's 429 has no readable Reset, what the key's own requests tell of it."""
    refused = burst.refused
    if refused is None or refused.status != 429 or refused.reset is not None:
        return None
    return own_count(of_the_key(client.exchanges, refused.exchange.key_label), refused)


def fronted(client: ConformanceClient, burst: Burst) -> bool:
    """Whether the burst's refusal was made in front of the service (conformance.judging.fronts)."""
    refused = burst.refused
    return refused is not None and front_refusal(refused.exchange, ServiceKind(client.exchanges))


def judge_burst(
    burst: Burst,
    settings: Settings,
    clock: ServerClock,
    own: OwnCount | None = None,
    front: bool = False,
) -> None:
    per_minute = settings.plan_limits[0]
    tally = counting(burst.key_history, clock)
    if tally.judged:
        expect(
            "LIM-REMAINING-COUNTS",
            tally.problem is None,
            f"X-RateLimit-Remaining must fall by one per request while a key spends its "
            f"quota: {tally.problem}",
            burst.history[-1].exchange,
        )
    judge_enforcement(burst, clock, own, front)
    if own is not None:
        judge_quota_by_statuses(own, settings)
        return
    judge_quota(burst, per_minute, clock, counting_holds=tally.judged and tally.problem is None)


def judge_quota_by_statuses(own: OwnCount, settings: Settings) -> None:
    """LIM-QUOTA-HONOURED from the key's own requests, where its 429 has no headers to read:
    refused inside what the service's own headers last announced was left fails it, as the
    window after the reset is judged against its opening's promise (so a front refilled
    continuously fails it in whichever window it refuses); refused before it can have spent a
    minute's quota (or a day's) fails it; refused once a minute had let a whole quota through
    passes it; anything between proves nothing."""
    per_minute, per_day = settings.plan_limits
    promise = own.broken_promise(per_minute)
    if promise is not None:
        expect(
            "LIM-QUOTA-HONOURED",
            False,
            f"a request within the announced quota must be served: the response answered "
            f"before it was sent said X-RateLimit-Remaining: {promise.remaining} of the "
            f"minute's {per_minute}, at most {own.spent_since_promise} other requests of this "
            f"key can have been counted after it, yet this one got {own.refusal.status}"
            + (" without rate-limit headers" if own.refusal.headerless else ""),
            # The promise is the evidence: the refusal's own response carries its own cause
            # (LIM-HEADERS-PRESENT), which would hide this one there.
            promise.exchange,
        )
    elif own.within(per_minute, per_day):
        expect(
            "LIM-QUOTA-HONOURED",
            False,
            f"a request within the plan's quota must be served: this 429 came after "
            f"{own.sent_in_minute} requests of this key within a minute ({own.sent} in the run), "
            f"no more than the plan's {per_minute} a minute, and no rate-limit header tells of "
            "another limit",
            own.refusal.exchange,
        )
    elif own.after(per_minute):
        expect(
            "LIM-QUOTA-HONOURED",
            True,
            f"refused once {own.counted_in_minute} requests of this key had been let through "
            "within a minute",
            own.refusal.exchange,
        )


def judge_quota(
    burst: Burst, per_minute: int | None, clock: ServerClock, counting_holds: bool
) -> None:
    """LIM-QUOTA-HONOURED: a 429 after its window served the whole quota proves it; otherwise,
    where Remaining is known to count, a settled 429 that no Remaining 0 preceded disproves
    it, and a settled 429 that one did proves it. A 429 in its window's last second (where a
    sliding window may have given a request back unseen) proves nothing either way."""
    honoured = refused_after_quota(burst.key_history, per_minute, clock)
    if honoured is not None:
        expect("LIM-QUOTA-HONOURED", True, "refused once the quota was served", honoured.exchange)
        return
    if not counting_holds:
        return  # a Remaining that does not count cannot tell a refusal early
    early = refused_within_quota(burst.key_history, per_minute, clock)
    if early is not None:
        expect(
            "LIM-QUOTA-HONOURED",
            False,
            "a request within the announced quota must be served: this 429 came while no "
            "response of its window had shown X-RateLimit-Remaining: 0",
            early.exchange,
        )
        return
    refused = burst.refused
    if refused is not None and refused.status == 429 and settled(burst, clock, refused):
        expect("LIM-QUOTA-HONOURED", True, "refused after Remaining 0", refused.exchange)


def judge_enforcement(
    burst: Burst, clock: ServerClock, own: OwnCount | None = None, front: bool = False
) -> None:
    beyond, refused = burst.beyond, burst.refused
    if beyond is not None:
        expect(
            "LIM-429-WHEN-EXCEEDED",
            False,
            f"a request beyond the limit must be answered 429, but it was served: "
            f"{burst.beyond_evidence}",
            beyond.exchange,
        )
    elif refused is not None and refused.status != 429:
        spent = any(
            s.served and s.remaining == 0 and s.reset == refused.reset for s in burst.key_history
        )
        if not spent and not front:
            left_open(
                f"the burst ended on a {refused.status} while quota was left, not known for a "
                "refusal over a limit (a server shedding load may answer 503): whether the "
                "limit is enforced stays open"
            )
        # A front's 403 while the service still had room is a refusal over a limit too.
        expect(
            "LIM-429-WHEN-EXCEEDED",
            False,
            f"a request refused over a limit must be answered 429, got {refused.status}",
            refused.exchange,
        )
    elif refused is not None and settled(burst, clock, refused):
        expect(
            "LIM-429-WHEN-EXCEEDED", True, "a request beyond the limit got 429", refused.exchange
        )
    elif own is not None:
        expect(
            "LIM-429-WHEN-EXCEEDED",
            True,
            "the key's requests were refused with 429 (no rate-limit header tells where in its "
            "window: LIM-QUOTA-HONOURED judges when, from the key's own requests)",
            own.refusal.exchange,
        )
    elif refused is not None and refused.reset is None:
        left_open(
            "the 429's rate-limit headers could not be read: whether it came at the limit or "
            "after it stays open"
        )
    elif refused is not None:
        left_open(
            "every 429 came in its window's last second, where a sliding window may give "
            "requests back unseen: whether the limit is enforced stays open"
        )
    elif burst.out_of_reach:
        left_open(
            f"beyond what this machine can send: {burst.out_of_reach}; after {burst.requests:,} "
            "requests, whether the limit is enforced stays open"
        )
    else:
        left_open(
            f"{burst.requests} requests did not reach the limit in one window (windows rolled "
            "over faster than this run could send): whether it is enforced stays open"
        )


def left_open(reason: str) -> NoReturn:
    """Skip the scenario, saying why on every requirement it would have judged: they stay
    unchecked (the run has no verdict), each with the reason, not a bare "not tested"."""
    test = "test_rate_limits.py::test_exhaustion_429_retry_after_and_reset"
    checks.leave_open([r.id for r in all_requirements().values() if test in r.tests], reason)
    pytest.skip(reason)


def settled(burst: Burst, clock: ServerClock, seen: Snapshot) -> bool:
    return settled_in_its_window(burst.key_history, clock, seen)


def check_refusal(refused: Snapshot, per_minute: int | None) -> None:
    if refused.limit is not None and refused.limit == per_minute:
        expect(
            "LIM-REMAINING-COUNTS",
            refused.remaining == 0,
            f"a 429 for the per-minute limit must show X-RateLimit-Remaining: 0, "
            f"got {refused.remaining}",
            refused.exchange,
        )


def check_other_key_unaffected(
    before: Snapshot, after: list[Snapshot], refused: Snapshot, settings: Settings
) -> None:
    """The exhausted key is limited now; the main key must still be served, if its own
    per-minute quota had room just before (otherwise its 429 could be its own, and fair).
    A group served whole proves it only where a limiter shared by both keys could not have
    given that many back since the spare key's 429, at the plan's rate."""
    if not after:
        cannot_check(
            "LIM-PER-KEY",
            "the main key's own per-minute quota was not known to have room just before (the "
            "headers report another window, or it was spent), so a 429 on it could be its own",
        )
        return
    shown = (
        f"its previous response showed X-RateLimit-Remaining: {before.remaining}"
        if before.remaining is not None
        else "it had sent fewer requests than the plan allows"
    )
    refusals = [s for s in after if s.status == 429]
    if len(after) > 1 and not refusals:
        later = max(s.received for s in after) - refused.received
        back = given_back(later, settings.plan_limits[0])
        if back >= len(after):
            cannot_check(
                "LIM-PER-KEY",
                f"the main key's {len(after)} requests were all served, but {later:.1f} s after "
                f"the spare key's 429: time for a limiter shared by both keys to give back "
                f"{back} at the plan's rate, so they do not tell whether limits are per key",
            )
            return
    answer = refusals[0] if refusals else after[-1]
    refused_of = f" ({len(refusals)} of {len(after)} sent together)" if len(after) > 1 else ""
    expect(
        "LIM-PER-KEY",
        not refusals,
        f"with the spare key limited, a request on the main key must still be served ({shown}), "
        f"got {answer.status}{refused_of}",
        answer.exchange,
    )


def given_back(seconds: float, per_minute: int | None) -> int:
    """Most requests a limiter refilled continuously at the plan's rate can have given back in
    `seconds` (one more for the part of a request it may have held already)."""
    return math.floor(seconds * (per_minute or 60) / 60.0) + 1


def check_recovery(client: ConformanceClient, label: str, refused: Snapshot) -> Snapshot | None:
    """Once Retry-After has passed a request is served; once Reset has passed, too. Returns
    the response served once Reset had passed: the opening of the window after it."""
    retry_after = retry_after_seconds(refused.exchange)
    # The client holds the key until Retry-After (or its own back-off) is over.
    after_wait = client.get(PATH, key=label, retry_on_429=False)
    if retry_after is not None:
        expect(
            "LIM-RETRY-AFTER-HONEST",
            200 <= after_wait.status < 300,
            f"a request sent once Retry-After ({retry_after:.0f} s) had passed should be served, "
            f"got {after_wait.status}",
            after_wait,
        )
    if refused.reset is None:
        return None  # LIM-HEADERS-PRESENT or -VALID has already failed this response
    clock = ServerClock.of(client.exchanges)
    ahead = refused.reset - clock.handled_by(refused)
    if ahead > LONGEST_WAIT:
        cannot_check(
            "LIM-RESET-HONEST",
            f"the 429's X-RateLimit-Reset lies {ahead:.0f} s ahead (the headers report a longer "
            f"window, such as the day's); a run does not wait more than {LONGEST_WAIT:.0f} s",
        )
        return None
    served = snapshot(after_wait)
    if served.served and clock.handled_from(served) >= refused.reset:
        expect("LIM-RESET-HONEST", True, "served once the reset time had passed", after_wait)
        return served
    client.wait(label, clock.seconds_until(refused.reset), "its X-RateLimit-Reset")
    after_reset = client.get(PATH, key=label, retry_on_429=False)
    recovered = expect(
        "LIM-RESET-HONEST",
        200 <= after_reset.status < 300,
        f"a request sent once X-RateLimit-Reset ({refused.reset:.0f}) had passed must be "
        f"served, got {after_reset.status}",
        after_reset,
    )
    return snapshot(after_reset) if recovered else None


SECOND_WINDOW_MOST = 10_000
"""Most requests the window after the reset spends: a business plan's minute, ten times over.
Each response is kept as evidence, and a quota of 60,000 a minute spent twice would double the
run's memory (past the 300 MB a run of it may take)."""


SECOND_WINDOW_TRIES = 3
"""Windows spent from their start in all, where one ran into the next before its refusal."""


def spend_second_window(
    client: ConformanceClient, settings: Settings, opening: Snapshot, announce: Announce
) -> None:
    """The window after the reset, spent from its start: what its opening announced is left,
    and one beyond, on the same key (conformance.judging.spent_window judges it). A limiter in
    front of the service refilled continuously lets the first window through and refuses
    inside the next one's quota; a Remaining one too high breaks its promise at the last
    request. Only what the headers announced is spent, never a whole quota they did not
    promise (a sliding window gives back one request at its Reset).

    A window spent to its end without a refusal ran into the next one (a busy machine held
    its requests back) or gave requests back: its promise tells nothing, and an idle machine
    would have caught a broken one there. Then the next window is spent from its start, after
    a whole window without the key's requests (a sliding log empties); where none of
    SECOND_WINDOW_TRIES shows a refusal, LIM-QUOTA-HONOURED is unproven (no verdict)."""
    per_minute, per_day = settings.plan_limits
    label = opening.exchange.key_label
    name = "the window after the reset"
    for attempt in range(1, SECOND_WINDOW_TRIES + 1):
        if per_minute is None or opening.limit != per_minute or opening.remaining is None:
            return  # the headers do not announce the minute's window: nothing promised to spend
        if opening.remaining + 1 > SECOND_WINDOW_MOST:
            announce(
                f"{name} is not spent: {opening.remaining:,} requests, more than the "
                f"{SECOND_WINDOW_MOST:,} a run spends on it"
            )
            return
        with client.exclusive():
            spent = spend_window(client, label, opening.remaining + 1, opening)
        window = SpentWindow(name, opening, spent)
        clock = ServerClock.of(client.exchanges)
        if judge_window(window, per_minute, per_day or 0, clock) or window.refused is not None:
            return
        if attempt == SECOND_WINDOW_TRIES:
            break
        announce(f"{label} key: {name} ran into the next one before a refusal; once more")
        opening = quiet_opening(client, label)
        name = f"window {attempt + 1} of {SECOND_WINDOW_TRIES} spent from its start"
    checks.unproven(
        "LIM-QUOTA-HONOURED",
        f"{SECOND_WINDOW_TRIES} windows spent from their start each ran into the next before "
        "a refusal (a busy machine held the requests back): whether a window serves the quota "
        "its first response announced, to its last request, could not be told",
    )


def quiet_opening(client: ConformanceClient, label: str) -> Snapshot:
    """A window's first response, after a whole window without the key's requests."""
    history = of_the_key(client.exchanges, label)
    window = window_length(history, ServerClock.of(client.exchanges))
    reason = "a whole window without its requests, to spend the next from its start"
    client.wait(label, until_a_quiet_window(history[-1], window), reason)
    return snapshot(client.get(PATH, key=label, retry_on_429=False, pace=False))
