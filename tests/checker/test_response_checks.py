"""Unit tests of the checks made on every response (`check_every_response`): rate-limit
headers, Reset time, plan figures, Error bodies, WWW-Authenticate and Retry-After. Exchanges
are built by hand."""

from __future__ import annotations

import json
from email.utils import formatdate

import pytest

from conformance.httpclient.client import Exchange
from conformance.judging import checks
from conformance.judging.response_checks import check_every_response
from conformance.settings import Settings

pytestmark = pytest.mark.usefixtures("fresh_ledger")

NOW = 1_740_830_400  # 2025-03-01T12:00:00Z, a whole second as a Date header has
DATE = formatdate(NOW, usegmt=True)
FREE = Settings(base_url="http://petstore.test/v1", api_key="sk-test-key", plan="free")
ERROR_400 = {"code": "invalid", "message": "name is required", "status": 400}
ERROR_401 = {"code": "unauthorized", "message": "missing key", "status": 401}
ERROR_429 = {"code": "rate_limited", "message": "slow down", "status": 429}

NO_HEADER = object()


def exchange(
    status: int = 200,
    body: object = NO_HEADER,
    *,
    limit: object = "60",
    remaining: object = "59",
    reset: object = str(NOW + 30),
    date: object = DATE,
    content_type: object = "application/json",
    extra: list[tuple[str, str]] | None = None,
    key_label: str = "main",
    started_at: float = NOW,
    authorization: str = "Bearer ***",
) -> Exchange:
    """A response with valid rate-limit headers unless told otherwise (NO_HEADER leaves one out)."""
    if body is NO_HEADER:
        body = [] if status < 300 else {"code": "x", "message": "x", "status": status}
    text = body if isinstance(body, str) else json.dumps(body)
    headers = [
        (name, value)
        for name, value in (
            ("Date", date),
            ("Content-Type", content_type),
            ("X-RateLimit-Limit", limit),
            ("X-RateLimit-Remaining", remaining),
            ("X-RateLimit-Reset", reset),
        )
        if value is not NO_HEADER
    ] + list(extra or [])
    return Exchange(
        id=1,
        key_label=key_label,
        method="GET",
        url="http://petstore.test/v1/categories",
        request_headers={"Authorization": authorization},
        request_body=None,
        status=status,
        response_headers=headers,
        response_body=text,
        started_at=started_at,
        elapsed=0.05,
        _full_body=text,
        _curl="curl -i -X GET http://petstore.test/v1/categories",
    )


def outcomes(ex: Exchange, settings: Settings = FREE) -> dict[str, list[bool]]:
    """Run every response check; return each requirement's results, in order."""
    check_every_response(ex, settings)
    outcome: dict[str, list[bool]] = {}
    for result in checks.ledger().results:
        outcome.setdefault(result.requirement_id, []).append(result.passed)
    return outcome


def failed(ex: Exchange, settings: Settings = FREE) -> set[str]:
    return {rid for rid, passes in outcomes(ex, settings).items() if not all(passes)}


def message_of(requirement_id: str) -> str:
    [result] = [r for r in checks.ledger().results if r.requirement_id == requirement_id]
    return result.message


def test_a_good_200_passes_every_check_it_gets():
    outcome = outcomes(exchange())
    assert outcome == {
        "GEN-NO-SERVER-ERROR": [True],
        "LIM-HEADERS-PRESENT": [True],
        "LIM-HEADERS-VALID": [True],
        "LIM-RESET-WHOLE-SECONDS": [True],
        "LIM-LIMIT-PLAN": [True],
        "LIM-RESET-UNIX-TIME": [True],
    }


def test_a_switch_of_protocols_is_not_the_answer_and_gets_no_check():
    """A server that takes the h2c offer answers 101 without rate-limit headers, and then in
    HTTP/2: the 101 is not judged as the response to the request."""
    assert outcomes(exchange(101, "", limit=NO_HEADER, remaining=NO_HEADER, reset=NO_HEADER)) == {}


def test_a_fraction_of_a_second_in_reset_is_a_warning_judged_with_its_value():
    # slowapi writes `1795377056.8905156`: still a Unix time, so only the SHOULD fails.
    outcome = outcomes(exchange(reset=f"{NOW + 30}.8905156"))
    assert outcome["LIM-HEADERS-VALID"] == [True]
    assert outcome["LIM-RESET-WHOLE-SECONDS"] == [False]
    assert outcome["LIM-RESET-UNIX-TIME"] == [True]
    assert f"{NOW + 30}.8905156" in message_of("LIM-RESET-WHOLE-SECONDS")
    checks.start_run()
    late = outcomes(exchange(reset=f"{NOW - 3600}.5"))
    assert late["LIM-RESET-UNIX-TIME"] == [False]  # judged with the fraction, like any Reset


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"limit": "59.0"}, "X-RateLimit-Limit must be a whole number (non-negative), got '59.0'"),
        ({"remaining": "-1"}, "X-RateLimit-Remaining must be a whole number"),
        ({"reset": "soon"}, "X-RateLimit-Reset must be a Unix time in seconds"),
        ({"remaining": "61"}, "X-RateLimit-Remaining ('61') must not exceed X-RateLimit-Limit"),
    ],
)
def test_every_header_message_names_the_header_and_its_value(headers, named):
    outcomes(exchange(**headers))
    assert named in message_of("LIM-HEADERS-VALID")


def test_failures_carry_the_exchange_as_evidence():
    ex = exchange(remaining="61")
    check_every_response(ex, FREE)
    [bad] = [r for r in checks.ledger().results if not r.passed]
    assert bad.exchange is ex


def test_a_5xx_fails_no_server_error():
    assert "GEN-NO-SERVER-ERROR" in failed(exchange(503, {"oops": True}))


# -- rate-limit headers ---------------------------------------------------------------------


@pytest.mark.parametrize("left_out", ["limit", "remaining", "reset"])
def test_a_missing_rate_limit_header_fails_present_and_stops_there(left_out):
    outcome = outcomes(exchange(**{left_out: NO_HEADER}))
    assert outcome["LIM-HEADERS-PRESENT"] == [False]
    assert "X-RateLimit-" + left_out.capitalize() in message_of("LIM-HEADERS-PRESENT")
    assert "LIM-HEADERS-VALID" not in outcome
    assert "LIM-RESET-UNIX-TIME" not in outcome


def test_missing_headers_are_checked_on_error_responses_too():
    assert "LIM-HEADERS-PRESENT" in failed(exchange(401, ERROR_401, limit=NO_HEADER))


def test_rate_limit_header_names_are_case_insensitive():
    ex = exchange(limit=NO_HEADER, remaining=NO_HEADER, reset=NO_HEADER)
    ex.response_headers += [
        ("x-ratelimit-limit", "60"),
        ("X-RATELIMIT-REMAINING", "10"),
        ("x-RateLimit-reset", str(NOW + 5)),
    ]
    assert failed(ex) == set()


@pytest.mark.parametrize(
    "headers",
    [
        {"limit": "59.0"},
        {"remaining": "-1"},
        {"reset": "-1"},
        {"remaining": "ten"},
        {"reset": "soon"},
        {"limit": ""},
        {"remaining": "61"},  # Remaining > Limit
    ],
)
def test_invalid_rate_limit_values_fail_valid(headers):
    outcome = outcomes(exchange(**headers))
    assert outcome["LIM-HEADERS-PRESENT"] == [True]
    assert outcome["LIM-HEADERS-VALID"] == [False]
    assert "LIM-RESET-UNIX-TIME" not in outcome


@pytest.mark.parametrize("remaining", ["60", "0", " 7 "])
def test_remaining_from_zero_up_to_the_limit_is_valid(remaining):
    assert outcomes(exchange(remaining=remaining))["LIM-HEADERS-VALID"] == [True]


# -- X-RateLimit-Reset ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reset", "passes"),
    [
        (NOW, True),  # exactly at Date: the window resets now
        (NOW - 1, True),  # within the one-second tolerance
        (NOW + 60, True),  # a whole minute ahead, for the per-minute limit
        (NOW + 65, True),  # a Date up to five seconds stale (cached by the server)
        (NOW * 1000, False),  # milliseconds
        (30, False),  # a delay, not a time
        (NOW - 5, False),  # in the past
        (NOW + 66, False),  # beyond the one-minute window of the per-minute figure
        (NOW + 3600, False),
    ],
)
def test_reset_is_judged_as_a_unix_time_in_the_window(reset, passes):
    assert outcomes(exchange(reset=str(reset)))["LIM-RESET-UNIX-TIME"] == [passes]


def test_reset_in_milliseconds_is_named_as_such():
    outcomes(exchange(reset=str(NOW * 1000)))
    assert "milliseconds" in message_of("LIM-RESET-UNIX-TIME")


def test_reset_of_the_daily_figure_may_be_hours_ahead():
    outcome = outcomes(exchange(limit="1000", remaining="900", reset=str(NOW + 6 * 3600)))
    assert outcome["LIM-RESET-UNIX-TIME"] == [True]


def test_reset_beyond_a_day_fails_even_for_the_daily_figure():
    outcome = outcomes(exchange(limit="1000", remaining="900", reset=str(NOW + 86_400 + 6)))
    assert outcome["LIM-RESET-UNIX-TIME"] == [False]


def test_reset_is_judged_against_the_servers_date_not_our_clock():
    # Our clock runs an hour ahead of the server's: the server's Date decides.
    ahead = exchange(reset=str(NOW + 30), started_at=NOW + 3600)
    assert outcomes(ahead)["LIM-RESET-UNIX-TIME"] == [True]
    checks.start_run()
    # Right by our clock, but 20 s in the past by the server's Date.
    server_ahead = exchange(reset=str(NOW + 30), date=formatdate(NOW + 50, usegmt=True))
    assert outcomes(server_ahead)["LIM-RESET-UNIX-TIME"] == [False]


@pytest.mark.parametrize(
    ("stale", "ahead", "passes"),
    [
        (11, 60, True),  # seen: a Date 11 s stale on a busy machine, the window's whole minute
        (11, 66, False),  # a second beyond the window and the five for a stale Date, by our clock
        (30, 60, True),  # stale as far as clocks may differ
        (45, 60, False),  # beyond that our clock no longer speaks for the server's
    ],
)
def test_a_reset_ahead_of_a_stale_date_is_judged_by_when_the_response_reached_us(
    stale, ahead, passes
):
    # The response reached us `stale` s after its Date; its Reset lies `ahead` s after that.
    received = NOW + stale
    ex = exchange(reset=str(received + ahead), started_at=received - 0.05)
    assert outcomes(ex)["LIM-RESET-UNIX-TIME"] == [passes]


@pytest.mark.parametrize(("offset", "passes"), [(-20, True), (-40, False), (0, True)])
def test_without_a_date_header_the_tolerance_is_wider(offset, passes):
    ex = exchange(reset=str(NOW + offset), date=NO_HEADER, started_at=NOW)
    assert outcomes(ex)["LIM-RESET-UNIX-TIME"] == [passes]


def test_with_a_date_header_twenty_seconds_in_the_past_fails():
    assert outcomes(exchange(reset=str(NOW - 20)))["LIM-RESET-UNIX-TIME"] == [False]


def test_an_unparseable_date_header_falls_back_to_our_clock():
    ex = exchange(reset=str(NOW + 10), date="yesterday-ish", started_at=NOW)
    assert outcomes(ex)["LIM-RESET-UNIX-TIME"] == [True]


# -- X-RateLimit-Limit against the plan -----------------------------------------------------


@pytest.mark.parametrize(("limit", "passes"), [("60", True), ("1000", True), ("61", False)])
def test_limit_must_be_a_figure_of_the_plan(limit, passes):
    outcome = outcomes(exchange(limit=limit, remaining="0", reset=str(NOW + 10)))
    assert outcome["LIM-LIMIT-PLAN"] == [passes]


def test_limit_plan_is_skipped_for_401s():
    outcome = outcomes(exchange(401, ERROR_401, limit="5", remaining="4", reset=str(NOW + 10)))
    assert "LIM-LIMIT-PLAN" not in outcome
    assert outcome["LIM-HEADERS-VALID"] == [True]


def test_limit_plan_is_skipped_for_a_403_to_the_key():
    # A server answering 403 where 401 is due has refused the credential: an anonymous caller.
    ex = exchange(403, {"code": "x", "message": "x", "status": 403}, limit="100")
    outcome = outcomes(ex)
    assert "LIM-LIMIT-PLAN" not in outcome
    assert outcome["LIM-HEADERS-VALID"] == [True]


@pytest.mark.parametrize("authorization", ["Basic ***", "***", "Token ***"])
def test_limit_plan_is_skipped_for_the_key_sent_the_wrong_way(authorization):
    # A deliberately wrong credential carries the real key (`Basic <key>`): even served, the
    # server did not take it for the key, so the plan is not what its limit answers to.
    outcome = outcomes(exchange(limit="100", authorization=authorization))
    assert "LIM-LIMIT-PLAN" not in outcome


def test_limit_plan_is_judged_for_a_lower_case_bearer_scheme():
    outcome = outcomes(exchange(limit="100", authorization="bearer ***"))
    assert outcome["LIM-LIMIT-PLAN"] == [False]


def test_limit_plan_is_skipped_for_requests_sent_without_a_key():
    ex = exchange(limit="5", remaining="4", reset=str(NOW + 10), key_label="none")
    outcome = outcomes(ex)
    assert "LIM-LIMIT-PLAN" not in outcome
    assert outcome["LIM-RESET-UNIX-TIME"] == [True]


def test_limit_plan_is_checked_for_the_spare_key():
    settings = Settings(
        base_url=FREE.base_url, api_key="key-main-a", spare_api_key="key-spare-b", plan="free"
    )
    ex = exchange(limit="61", key_label="spare")
    assert outcomes(ex, settings)["LIM-LIMIT-PLAN"] == [False]


def test_limit_plan_is_skipped_for_an_enterprise_plan_without_figures():
    settings = Settings(base_url=FREE.base_url, api_key="key-main-a", plan="enterprise")
    outcome = outcomes(exchange(limit="12345", remaining="1", reset=str(NOW + 10)), settings)
    assert "LIM-LIMIT-PLAN" not in outcome


@pytest.mark.parametrize(("limit", "passes"), [("500", True), ("20000", True), ("60", False)])
def test_limit_plan_uses_the_enterprise_figures_given(limit, passes):
    settings = Settings(
        base_url=FREE.base_url,
        api_key="key-main-a",
        plan="enterprise",
        requests_per_minute=500,
        requests_per_day=20_000,
    )
    outcome = outcomes(exchange(limit=limit, remaining="0", reset=str(NOW + 10)), settings)
    assert outcome["LIM-LIMIT-PLAN"] == [passes]


# -- Error bodies ---------------------------------------------------------------------------


def test_a_good_400_error_passes_schema_status_and_media_type():
    outcome = outcomes(exchange(400, ERROR_400))
    assert outcome["ERR-SCHEMA"] == [True]
    assert outcome["ERR-STATUS-MATCH"] == [True]
    assert outcome["ERR-MEDIA-TYPE"] == [True]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("name is required", "not JSON"),
        ([ERROR_400], "list"),
        ({**ERROR_400, "status": "400"}, "status"),
        ({**ERROR_400, "status": True}, "status"),
        ({**ERROR_400, "status": None}, "status"),
        ({"message": "m", "status": 400}, "code"),
        ({**ERROR_400, "message": 7}, "message"),
    ],
)
def test_a_400_without_an_error_object_fails_schema(body, said):
    outcome = outcomes(exchange(400, body))
    assert outcome["ERR-SCHEMA"] == [False]
    assert said in message_of("ERR-SCHEMA")
    assert "ERR-STATUS-MATCH" not in outcome


def test_extra_fields_in_an_error_are_allowed():
    outcome = outcomes(exchange(400, {**ERROR_400, "details": [{"field": "name"}]}))
    assert outcome["ERR-SCHEMA"] == [True]


def test_error_status_must_match_the_http_status():
    outcome = outcomes(exchange(400, {**ERROR_400, "status": 422}))
    assert outcome["ERR-SCHEMA"] == [True]
    assert outcome["ERR-STATUS-MATCH"] == [False]


def test_a_401_error_body_is_checked_too():
    extra = [("WWW-Authenticate", "Bearer")]
    outcome = outcomes(exchange(401, {**ERROR_401, "status": 400}, extra=extra))
    assert outcome["ERR-STATUS-MATCH"] == [False]


@pytest.mark.parametrize(
    ("content_type", "passes"),
    [
        ("application/json", True),
        ("application/json; charset=utf-8", True),
        ("Application/JSON;charset=UTF-8", True),
        ("text/plain", False),
        ("application/problem+json", False),
        (NO_HEADER, False),
    ],
)
def test_error_media_type(content_type, passes):
    outcome = outcomes(exchange(400, ERROR_400, content_type=content_type))
    assert outcome["ERR-MEDIA-TYPE"] == [passes]


def test_a_plain_text_error_page_fails_the_media_type_only():
    # One cause, one requirement: `Unauthorized` as text/plain is not a JSON Error at all.
    extra = [("WWW-Authenticate", "Bearer")]
    outcome = outcomes(exchange(401, "Unauthorized", content_type="text/plain", extra=extra))
    assert outcome["ERR-MEDIA-TYPE"] == [False]
    assert "ERR-SCHEMA" not in outcome


def test_a_json_error_sent_as_text_is_still_judged_for_its_shape():
    outcome = outcomes(exchange(400, {"detail": "x"}, content_type="text/plain"))
    assert outcome["ERR-MEDIA-TYPE"] == [False]
    assert outcome["ERR-SCHEMA"] == [False]


def test_error_checks_are_not_run_on_a_200():
    outcome = outcomes(exchange(200, "not json", content_type="text/plain"))
    assert not {"ERR-SCHEMA", "ERR-MEDIA-TYPE", "ERR-STATUS-MATCH"} & outcome.keys()


# -- WWW-Authenticate -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "challenge",
    [
        "Bearer",
        "bearer",
        "BEARER",
        'Bearer realm="petstore"',
        'Bearer realm="petstore", error="invalid_token"',
        'Basic realm="x", Bearer',
        'Basic realm="x", Bearer realm="y"',
        'Basic realm="x",Bearer',
    ],
)
def test_a_bearer_challenge_passes(challenge):
    outcome = outcomes(exchange(401, ERROR_401, extra=[("WWW-Authenticate", challenge)]))
    assert outcome["AUTH-WWW-AUTHENTICATE"] == [True]


@pytest.mark.parametrize(
    "challenge", ['Basic realm="petstore"', "Bearerish", "Token", "", 'Digest realm="bearer"']
)
def test_no_bearer_challenge_fails(challenge):
    outcome = outcomes(exchange(401, ERROR_401, extra=[("WWW-Authenticate", challenge)]))
    assert outcome["AUTH-WWW-AUTHENTICATE"] == [False]


def test_a_401_without_www_authenticate_fails():
    assert outcomes(exchange(401, ERROR_401))["AUTH-WWW-AUTHENTICATE"] == [False]


def test_www_authenticate_is_checked_on_401s_only():
    assert "AUTH-WWW-AUTHENTICATE" not in outcomes(exchange(400, ERROR_400))


def test_a_bearer_challenge_on_a_second_field_line_passes():
    # RFC 9110 §11.6.1: challenges may come in one field line each.
    extra = [("WWW-Authenticate", 'Basic realm="x"'), ("WWW-Authenticate", "Bearer")]
    assert outcomes(exchange(401, ERROR_401, extra=extra))["AUTH-WWW-AUTHENTICATE"] == [True]


def test_bearer_inside_a_quoted_parameter_is_not_a_challenge():
    extra = [("WWW-Authenticate", 'Basic realm="tokens, bearer or basic"')]
    assert outcomes(exchange(401, ERROR_401, extra=extra))["AUTH-WWW-AUTHENTICATE"] == [False]


# -- 429: Retry-After and body --------------------------------------------------------------


@pytest.mark.parametrize(
    ("retry_after", "passes"),
    [
        ("30", True),
        ("0", True),
        (formatdate(NOW + 30, usegmt=True), True),
        (formatdate(NOW - 30, usegmt=True), True),  # a date already past: retry now
        ("1.5", False),
        ("-1", False),
        ("soon", False),
        ("", False),
    ],
)
def test_retry_after_is_delay_seconds_or_an_http_date(retry_after, passes):
    ex = exchange(429, ERROR_429, remaining="0", extra=[("Retry-After", retry_after)])
    assert outcomes(ex)["LIM-RETRY-AFTER"] == [passes]


def test_a_429_without_retry_after_fails():
    assert outcomes(exchange(429, ERROR_429, remaining="0"))["LIM-RETRY-AFTER"] == [False]


def test_a_429_without_an_error_body_is_only_a_should_warning():
    ex = exchange(429, "Too Many Requests", content_type="text/plain", remaining="0")
    ex.response_headers.append(("Retry-After", "5"))
    outcome = outcomes(ex)
    assert outcome["ERR-429-BODY"] == [False]
    assert outcome["LIM-RETRY-AFTER"] == [True]
    assert "ERR-SCHEMA" not in outcome and "ERR-MEDIA-TYPE" not in outcome


def test_a_429_with_an_error_body_passes_the_body_check():
    ex = exchange(429, ERROR_429, remaining="0", extra=[("Retry-After", "5")])
    assert outcomes(ex)["ERR-429-BODY"] == [True]


def test_retry_after_is_checked_on_429s_only():
    assert "LIM-RETRY-AFTER" not in outcomes(exchange(200))
