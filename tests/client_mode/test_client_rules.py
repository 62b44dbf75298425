"""The client judging on recorded timelines: each rule fails the client that breaks it, passes
the one that keeps it, at the edges its catalogue entry states (tolerance, growth, threshold),
and one retry policy is one cause."""

from __future__ import annotations

import hashlib
from email.utils import formatdate

import pytest

from conformance.client_mode import command, rules
from conformance.client_mode.recorder import NOT_JSON, Arrival
from conformance.client_mode.runner import ScenarioRun
from conformance.client_mode.scenarios import BY_NAME, SCENARIOS
from conformance.httpclient.client import Exchange
from conformance.spec import all_requirements

WALL = 1_800_000_000.0  # the wall clock at monotonic 0 in these timelines


def arrival(at, status, answered=0.01, bearer=True, body=NOT_JSON, media=None, **headers):
    """A request arriving at `at` (monotonic), answered `answered` s later with `headers`."""
    names = {
        "retry_after": "Retry-After",
        "remaining": "X-RateLimit-Remaining",
        "reset": "X-RateLimit-Reset",
    }
    exchange = Exchange(
        id=0,
        key_label="main",
        method="POST" if media else "GET",
        url="http://127.0.0.1:1/v1/categories",
        request_headers={},
        request_body=None,
        status=status,
        response_headers=[(names[k], str(v)) for k, v in headers.items()],
        response_body="",
        started_at=WALL + at,
        elapsed=answered,
    )
    return Arrival(
        exchange,
        at,
        WALL + at,
        at + answered,
        WALL + at + answered,
        bearer_key=bearer,
        fingerprint=hashlib.sha256(b"same").hexdigest(),
        media_type=media,
        body=body,
    )


def scenario_run(name, arrivals, exit_status=0, timed_out=False):
    for number, item in enumerate(arrivals, 1):
        item.exchange.id = number
    return ScenarioRun(BY_NAME[name], arrivals, None if timed_out else exit_status, 5.0, 35.0)


def outcomes(results):
    return {(r.requirement_id, r.passed) for r in results}


@pytest.mark.parametrize(
    ("back_after", "passed"),
    [(1.02, True), (1.0 - rules.TOLERANCE + 0.02, True), (0.5, False)],
)
def test_retry_after_in_seconds_is_waited_to_the_tolerance(back_after, passed):
    run = scenario_run(
        "retry-after-seconds", [arrival(0.0, 429, retry_after=1), arrival(0.01 + back_after, 200)]
    )
    results = rules.check_waits_for_retry_after(run)
    assert outcomes(results) == {("CLI-RETRY-AFTER", passed), ("LIM-CLIENT-BACKOFF", passed)}
    if not passed:
        assert "Retry-After: 1" in results[0].message and "came back 0.500 s" in results[0].message


def test_an_http_date_is_a_wall_clock_moment():
    answered_wall = WALL + 0.31
    date = formatdate(WALL + 2.0, usegmt=True)  # 1.69 s after the answer
    early = scenario_run(
        "retry-after-date", [arrival(0.3, 429, retry_after=date), arrival(1.31, 201)]
    )
    late = scenario_run(
        "retry-after-date", [arrival(0.3, 429, retry_after=date), arrival(2.0, 201)]
    )
    assert answered_wall == early.arrivals[0].answered_wall
    assert ("CLI-RETRY-AFTER", False) in outcomes(rules.check_waits_for_retry_after(early))
    assert ("CLI-RETRY-AFTER", True) in outcomes(rules.check_waits_for_retry_after(late))


def test_three_requests_while_limited_are_hammering_and_one_cause():
    run = scenario_run(
        "hammering-ban",
        [
            arrival(0.0, 429, retry_after=2),
            arrival(0.05, 429, retry_after=2),
            arrival(0.1, 429, retry_after=2),
            arrival(0.15, 429, retry_after=5),
        ],
        exit_status=1,
    )
    results = rules.check_scenario(run)
    hammering = [r for r in results if r.requirement_id == "CLI-NO-HAMMERING"]
    assert [r.passed for r in hammering] == [False]
    assert "3 requests sent while limited by one 429" in hammering[0].message
    assert hammering[0].exchange.id == 4  # the request that reached the threshold
    settled = rules.settle_across_run(results)
    failed = {r.requirement_id for r in settled.kept if not r.passed}
    assert failed == {"CLI-NO-HAMMERING"}
    assert settled.displaced["CLI-RETRY-AFTER"] == {"CLI-NO-HAMMERING"}
    assert settled.displaced["CLI-RETRIES"] == {"CLI-NO-HAMMERING"}


def test_two_early_requests_are_under_the_ban_threshold():
    run = scenario_run(
        "hammering-ban",
        [
            arrival(0.0, 429, retry_after=2),
            arrival(0.5, 429, retry_after=2),
            arrival(1.0, 429, retry_after=2),
            arrival(3.02, 200),  # after the wait the last answer gave
        ],
    )
    assert ("CLI-NO-HAMMERING", True) in outcomes(rules.check_no_hammering(run))
    assert ("CLI-RETRY-AFTER", False) in outcomes(rules.check_waits_for_retry_after(run))


def waits_run(*waits):
    arrivals, at = [arrival(0.0, 429)], 0.0
    for number, wait in enumerate(waits):
        at += 0.01 + wait
        arrivals.append(arrival(at, 429 if number < len(waits) - 1 else 200))
    return scenario_run("no-retry-after", arrivals)


@pytest.mark.parametrize(
    ("waits", "passed"),
    [
        ((0.5, 1.0, 2.0), True),  # doubling
        ((0.75, 0.5, 1.0), True),  # doubling with the worst +-50 % jitter allowed
        ((0.0, 1.0, 2.0), True),  # urllib3's immediate first retry, then growth
        ((1.0, 1.0, 1.0), False),  # a fixed 1 s sleep
        ((0.0, 0.0, 0.0), False),  # no wait at all
    ],
)
def test_waits_without_retry_after_must_grow(waits, passed):
    results = rules.check_backoff_grows(waits_run(*waits))
    assert ("CLI-BACKOFF-GROWS", passed) in outcomes(results)


def test_a_429_that_never_ends_must_be_given_up():
    arrivals = [arrival(float(n), 429, retry_after=1) for n in range(5)]
    gave_up = scenario_run("endless-429", arrivals, exit_status=1)
    stopped = scenario_run("endless-429", arrivals, timed_out=True)
    assert ("CLI-GIVES-UP", True) in outcomes(rules.check_gives_up(gave_up))
    results = rules.check_gives_up(stopped)
    assert ("CLI-GIVES-UP", False) in outcomes(results)
    assert "was stopped" in results[0].message


def test_a_401_repeated_unchanged_is_warned_not_a_changed_one():
    repeated = scenario_run("unauthorized", [arrival(0.0, 401), arrival(0.5, 401)], 1)
    assert outcomes(rules.check_no_unchanged_retry(repeated)) == {("CLI-NO-RETRY-UNCHANGED", False)}
    changed = [arrival(0.0, 401), arrival(0.5, 401)]
    changed[1].fingerprint = "another"
    assert outcomes(rules.check_no_unchanged_retry(scenario_run("unauthorized", changed))) == {
        ("CLI-NO-RETRY-UNCHANGED", True)
    }


def test_remaining_zero_asks_to_wait_for_the_reset():
    reset = int(WALL) + 2
    early = scenario_run(
        "remaining-zero", [arrival(0.0, 200, remaining=0, reset=reset), arrival(1.0, 429)]
    )
    results = rules.check_waits_for_reset(early)
    assert outcomes(results) == {("CLI-WAITS-FOR-RESET", False)}
    waited = scenario_run(
        "remaining-zero",
        [
            arrival(0.0, 200, remaining=0, reset=reset),
            arrival(2.0, 200, remaining=0, reset=reset + 2),
        ],
    )
    assert outcomes(rules.check_waits_for_reset(waited)) == {("CLI-WAITS-FOR-RESET", True)}


@pytest.mark.parametrize(
    ("media", "body", "passed"),
    [
        ("application/json", {"name": "client-check"}, True),
        ("text/plain", {"name": "client-check"}, False),
        ("application/json", {"title": "client-check"}, False),
        ("application/json", NOT_JSON, False),
    ],
)
def test_create_sends_a_json_new_category(media, body, passed):
    run = scenario_run("create", [arrival(0.0, 201, media=media, body=body)])
    assert outcomes(rules.check_create_body(run)) == {("CLI-CREATE-JSON", passed)}


def listing_at(at):
    return arrival(at, 200)


def test_create_is_judged_on_the_post_wherever_it_comes_and_names_the_rest():
    create = arrival(0.5, 201, media="application/json", body={"name": "client-check"})
    run = scenario_run("create", [listing_at(0.0), create, listing_at(1.0)])
    [checked] = rules.check_create_body(run)
    assert (checked.passed, checked.message) == (
        True,
        "1 POST /categories with a JSON NewCategory; also sent: GET /v1/categories (2 times)",
    )
    bad = arrival(0.5, 400, media="text/plain", body={"name": "client-check"})
    [checked] = rules.check_create_body(scenario_run("create", [bad, listing_at(1.0)]))
    assert not checked.passed and checked.exchange is bad.exchange
    assert checked.message.endswith("not application/json; also sent: GET /v1/categories")


def test_a_create_never_sent_fails_naming_what_was():
    [checked] = rules.check_create_body(scenario_run("create", [listing_at(0.0)]))
    assert not checked.passed
    assert checked.message == (
        "createCategory (POST .../v1/categories) was never sent; the client sent: "
        "GET /v1/categories"
    )


def test_retries_count_the_scenarios_own_requests():
    """A POST after the 429 to the GET is no retry of it."""
    create = arrival(1.1, 201, media="application/json", body={"name": "x"})
    run = scenario_run("retry-after-seconds", [arrival(0.0, 429, retry_after=1), create])
    [checked] = rules.check_retries(run)
    assert not checked.passed and "also sent: POST /v1/categories" in checked.message


def test_the_key_must_be_a_bearer_token():
    run = scenario_run("success", [arrival(0.0, 200), arrival(0.1, 401, bearer=False)])
    results = rules.check_bearer_key(run)
    assert outcomes(results) == {("CLI-BEARER-KEY", False)}
    assert results[0].exchange.id == 2


def test_early_requests_are_counted_per_limitation_as_the_ban_counts_strikes():
    # A fixed 1 s sleep against 3 s waits: two early in the first limitation, one in the next.
    run = scenario_run(
        "retry-after-date",
        [
            arrival(0.0, 429, retry_after=3),
            arrival(1.0, 429, retry_after=2),
            arrival(2.0, 429, retry_after=1),
            arrival(3.1, 429, retry_after=3),
            arrival(4.2, 429, retry_after=2),
            arrival(6.2, 201),
        ],
    )
    assert ("CLI-NO-HAMMERING", True) in outcomes(rules.check_no_hammering(run))
    assert ("CLI-RETRY-AFTER", False) in outcomes(rules.check_waits_for_retry_after(run))


def test_giving_up_at_once_on_a_get_is_a_retry_not_made():
    gave_up_at_once = scenario_run("retry-after-seconds", [arrival(0.0, 429, retry_after=1)], 1)
    results = rules.check_retries(gave_up_at_once)
    assert outcomes(results) == {("CLI-RETRIES", False)}
    assert "sent nothing more" in results[0].message
    retried_once = scenario_run(
        "retry-after-seconds", [arrival(0.0, 429, retry_after=1), arrival(1.1, 429)], 1
    )
    assert outcomes(rules.check_retries(retried_once)) == {("CLI-RETRIES", True)}


def test_two_retries_without_retry_after_leave_the_growth_unjudged_not_failed():
    run = waits_run(0.5, 1.0)
    run.arrivals[-1].exchange.status = 429  # it gave up after its second retry
    run.exit_status = 1
    assert rules.check_backoff_grows(run) == []
    assert "gave up after 2 retries" in rules.unshown([run])["CLI-BACKOFF-GROWS"]


def test_waiting_for_each_reset_named_is_as_good_as_growing_waits():
    # ky's way without Retry-After: wait for X-RateLimit-Reset (1 to 2 s on, by the second).
    resets = [int(WALL) + 2, int(WALL) + 3, int(WALL) + 5]
    run = scenario_run(
        "no-retry-after",
        [
            arrival(0.3, 429, reset=resets[0]),
            arrival(2.0, 429, reset=resets[1]),
            arrival(3.0, 429, reset=resets[2]),
            arrival(5.0, 200),
        ],
    )
    results = rules.check_backoff_grows(run)
    assert outcomes(results) == {("CLI-BACKOFF-GROWS", True), ("LIM-CLIENT-BACKOFF", True)}
    assert "X-RateLimit-Reset" in results[0].message
    run.arrivals[2].arrived_wall -= 0.5  # one came back before its Reset: growth is judged
    assert ("CLI-BACKOFF-GROWS", False) in outcomes(rules.check_backoff_grows(run))


def first_answer(scenario, at):
    """The answer a scenario server gives a client's first request of `scenario` at `at`."""
    script = scenario.script
    if not scenario.valid_key:
        return arrival(at, 401)
    if scenario.category_name.strip() == "":
        return arrival(at, 400, media="application/json", body={"name": "   "})
    created = {"media": "application/json", "body": {"name": scenario.category_name}}
    post = created if scenario.operation == "createCategory" else {}
    if not (script.refusals or script.endless):
        served = 201 if post else 200
        if script.spend_window:
            return arrival(at, served, remaining=0, reset=int(WALL + at) + script.wait, **post)
        return arrival(at, served, **post)
    given = {
        "seconds": script.wait,
        "http-date": formatdate(WALL + at + script.wait, usegmt=True),
        None: None,
    }[script.retry_after]
    headers = {"retry_after": given} if given is not None else {}
    return arrival(at, script.status, **post, **headers)


def never_retrying_runs():
    """Every scenario, as a client without a retry layer (an SDK generated from the OpenAPI
    description, say) goes through it: one request per operation, exit 1 on any error."""
    runs = []
    for scenario in SCENARIOS:
        arrivals = [first_answer(scenario, 0.0)]
        if scenario.repeat > 1 and arrivals[0].status < 400:
            arrivals.append(arrival(0.05, 429, retry_after=scenario.script.wait))
        failed = arrivals[-1].status >= 400
        runs.append(scenario_run(scenario.name, arrivals, exit_status=int(failed)))
    return runs


def test_a_client_that_never_retries_is_conformant_and_told_what_it_did_not_show():
    verdict = command.verdict_of(never_retrying_runs(), strict=False)
    outcomes_by_id = {o.requirement.id: o for o in verdict.outcomes}
    assert (verdict.verdict, verdict.failed_requirements) == ("conformant", [])
    assert "CLI-RETRIES" in verdict.warned_requirements
    for unshown in ("CLI-RETRY-AFTER", "CLI-NO-HAMMERING", "CLI-BACKOFF-GROWS"):
        outcome = outcomes_by_id[unshown]
        assert outcome.outcome == "not-tested", unshown
        assert "no MUST requires a retry" in outcome.reason, outcome.reason


def test_no_must_requires_a_retry():
    requirements = all_requirements()
    assert requirements["CLI-RETRIES"].level == "SHOULD"
    assert all(
        requirements[id_].level != "MUST"
        for id_ in ("CLI-RETRIES", "CLI-GIVES-UP", "CLI-503-RETRY-AFTER")
    )


def test_a_retry_is_judged_on_a_get_and_a_post_may_be_given_up():
    judged_on_retry = [s for s in SCENARIOS if s.expect_success and s.script.refusals]
    assert {s.script.retry_after for s in judged_on_retry} >= {"seconds", "http-date", None}
    assert all(s.operation == "listCategories" for s in judged_on_retry)
    posts = [s for s in SCENARIOS if s.operation == "createCategory" and s.script.refusals]
    assert posts, "a scenario shows what a client does with a refused POST"
    for scenario in posts:
        gave_up = scenario_run(scenario.name, [first_answer(scenario, 0.0)], exit_status=1)
        assert rules.check_retries(gave_up) == []


def test_a_long_floor_of_its_own_is_not_reading_retry_after():
    # tenacity's documented wait_exponential(multiplier=1, min=4, max=10): 4 s, 4 s, 4 s, 8 s
    # whatever the server says. Every 1 or 2 s wait is over when it comes back; a long one is not.
    long = [s for s in SCENARIOS if s.script.refusals and s.script.wait > 4 + 1]
    assert {s.script.retry_after for s in long} == {"seconds", "http-date"}
    for scenario in long:
        assert scenario.operation == "listCategories"
        run = scenario_run(
            scenario.name, [first_answer(scenario, 0.0), arrival(4.01, 429), arrival(8.02, 200)]
        )
        results = rules.check_waits_for_retry_after(run)
        assert ("CLI-RETRY-AFTER", False) in outcomes(results), scenario.name
        assert "came back 4.000 s after a 429" in results[0].message
    short = [s for s in SCENARIOS if s.script.refusals and s.script.wait <= 2]
    for scenario in short:
        run = scenario_run(scenario.name, [first_answer(scenario, 0.0), arrival(4.01, 200)])
        assert ("CLI-RETRY-AFTER", False) not in outcomes(rules.check_scenario(run)), scenario.name


def test_a_client_that_showed_nothing_is_never_certified():
    """With the scenarios chosen, only what they show is judged: yet a client with no request,
    or with only requests the scenario server refused before they were whole (413, 408), has no
    verdict; and such a request is judged by no rule."""
    nothing = [scenario_run("success", [], timed_out=True)]
    verdict = command.verdict_of(nothing, strict=False)
    assert (verdict.verdict, verdict.reason) == (
        "no verdict",
        "the client sent no request in any scenario",
    )
    refused = arrival(0.0, 408, bearer=False)
    refused.complete = False
    verdict = command.verdict_of([scenario_run("success", [refused], exit_status=1)], strict=False)
    assert verdict.verdict == "no verdict" and "(1 refused" in verdict.reason, verdict.reason
    assert all(o.outcome == "not-tested" for o in verdict.outcomes)  # not CLI-BEARER-KEY failed
    served = arrival(1.0, 200)
    runs = [scenario_run("success", [refused, served])]
    verdict = command.verdict_of(runs, strict=False)
    assert (verdict.verdict, verdict.failed_requirements) == ("conformant", [])
