"""Unit tests of the suite's HTTP client: pacing, budget, redaction, recording.

Most tests run against `httpx.MockTransport` with a fake clock whose `sleep` advances `now`, so
hours of back-off take no time and the moment each request reached the "server" is exact.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import shlex
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from conformance.httpclient.backoff import Pacer, exponential_delay, reset_wait, retry_after_seconds
from conformance.httpclient.budget import BudgetExhausted
from conformance.httpclient.client import (
    ConformanceClient,
    Exchange,
    RunOver,
    TargetThrottled,
    TargetUnreachable,
)

MAIN = "sk-main-Secret+/=42"
SPARE = "sk-spare-0123456789"
BASE = "http://petstore.test/v1"
SERVER_DATE = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


class FakeClock:
    """Monotonic time that only moves when the client sleeps."""

    def __init__(self, start: float = 1000.0):
        self.time = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.sleeps.append(seconds)
        self.time += seconds


class Server:
    """A scripted server: answers from a list (the last answer repeats) and logs arrival times."""

    def __init__(self, clock: FakeClock, *answers: httpx.Response | Callable):
        self.clock = clock
        self.answers = list(answers) or [httpx.Response(200, json=[])]
        self.seen: list[tuple[float, httpx.Request]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((self.clock.now(), request))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer(request) if callable(answer) else answer

    @property
    def times(self) -> list[float]:
        return [moment for moment, _ in self.seen]

    def gaps(self) -> list[float]:
        return [later - earlier for earlier, later in zip(self.times, self.times[1:], strict=False)]


def make_client(*answers: httpx.Response | Callable, **options) -> tuple[ConformanceClient, Server]:
    clock = options.pop("clock", None) or FakeClock()
    server = Server(clock, *answers)
    client = ConformanceClient(
        BASE,
        {"main": MAIN, "spare": SPARE},
        clock=clock,
        rng=options.pop("rng", random.Random(1)),
        transport=httpx.MockTransport(server),
        **options,
    )
    return client, server


def too_many(retry_after: str | None = None, date: datetime | None = None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    if date is not None:
        headers["Date"] = format_datetime(date, usegmt=True)
    return httpx.Response(429, headers=headers, json={"code": "rate_limited"})


def assert_no_secret(exchange: Exchange) -> None:
    text = json.dumps(exchange.to_dict()) + repr(exchange) + exchange.summary() + exchange.curl()
    for secret in (MAIN, SPARE, "sk-main", "sk-spare"):
        assert secret not in text


# -- sending and recording ----------------------------------------------------------------------


def test_sends_the_main_key_as_bearer_and_records_it_redacted():
    client, server = make_client(httpx.Response(200, json=[{"id": 1, "name": "dog"}]))
    exchange = client.get("/categories")
    request = server.seen[0][1]
    assert str(request.url) == "http://petstore.test/v1/categories"
    assert request.headers["Authorization"] == f"Bearer {MAIN}"
    assert exchange.request_headers["Authorization"] == "Bearer ***"
    assert exchange.key_label == "main"
    assert exchange.id == 1
    assert exchange.json() == [{"id": 1, "name": "dog"}]
    assert exchange.summary().startswith("GET http://petstore.test/v1/categories -> 200 OK (")
    assert "\n" not in exchange.summary()
    assert_no_secret(exchange)


@pytest.mark.parametrize(
    ("template", "sent", "recorded"),
    [
        ("bearer {main}", f"bearer {MAIN}", "bearer ***"),
        ("Basic {main}", f"Basic {MAIN}", "Basic ***"),
        ("{main}", MAIN, "***"),
        ("Bearer {spare}", f"Bearer {SPARE}", "Bearer ***"),
        ("Bearer not-a-key", "Bearer not-a-key", "Bearer ***"),
        ("Bearer ", "Bearer ", "Bearer "),
    ],
)
def test_authorization_templates_are_expanded_only_when_sent(template, sent, recorded):
    client, server = make_client()
    exchange = client.get("/categories", key=None, authorization=template)
    assert server.seen[0][1].headers["Authorization"] == sent
    assert exchange.request_headers["Authorization"] == recorded
    assert_no_secret(exchange)


def test_key_label_follows_the_placeholder_then_the_key_then_none():
    client, _ = make_client(allow_key_in_url=True)
    assert client.get("/c", key=None, authorization="bearer {spare}").key_label == "spare"
    assert client.get("/c", key="spare").key_label == "spare"
    assert client.get("/c", key=None).key_label == "none"
    assert client.get("/c", key=None, authorization="Bearer nope").key_label == "none"
    assert client.get("/c", key=None, params={"api_key": "{main}"}).key_label == "main"
    assert client.requests_per_key() == {"main": 1, "spare": 2, "none": 2}
    assert client.requests_sent == 5
    assert [exchange.id for exchange in client.exchanges] == [1, 2, 3, 4, 5]


def test_no_authorization_header_without_a_key():
    client, server = make_client()
    exchange = client.get("/categories", key=None)
    assert "Authorization" not in server.seen[0][1].headers
    assert "Authorization" not in exchange.request_headers


def test_a_caller_header_replaces_ours_whatever_its_case():
    client, server = make_client()
    exchange = client.get("/categories", headers={"authorization": "Token {spare}"})
    assert server.seen[0][1].headers.get_list("Authorization") == [f"Token {SPARE}"]
    assert exchange.request_headers["authorization"] == "Token ***"
    assert exchange.key_label == "spare"


def test_unknown_key_label_is_a_clear_error():
    client = ConformanceClient(BASE, {"main": MAIN}, transport=httpx.MockTransport(Server(None)))
    with pytest.raises(ValueError, match="spare"):
        client.get("/categories", key="spare")
    with pytest.raises(ValueError, match="spare"):
        client.get("/categories", authorization="Bearer {spare}")


def test_secrets_are_redacted_everywhere_a_server_might_echo_them():
    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            400,
            headers=[
                ("X-Echo", request.headers["X-Api-Key"]),
                ("Content-Type", "application/json"),
            ],
            json={"message": f"bad key {MAIN}", "query": str(request.url), "spare": SPARE},
        )

    client, server = make_client(echo, allow_key_in_url=True)
    exchange = client.post(
        "/categories",
        params={"api_key": "{main}", "q": "x y"},
        headers={"X-Api-Key": "{main}"},
        json={"name": MAIN, "description": SPARE},
    )
    sent = server.seen[0][1]
    assert sent.url.params["api_key"] == MAIN
    assert MAIN in sent.content.decode()
    assert "api_key=***" in exchange.url
    assert exchange.request_headers["X-Api-Key"] == "***"
    assert exchange.header("X-Echo") == "***"
    assert exchange.json()["message"] == "bad key ***"
    assert "***" in exchange.request_body
    assert_no_secret(exchange)


def test_response_headers_keep_names_and_order_as_received():
    answer = httpx.Response(
        200, headers=[("X-RateLimit-Limit", "60"), ("set-cookie", "a=1"), ("Set-Cookie", "b=2")]
    )
    client, _ = make_client(answer)
    exchange = client.get("/categories")
    assert exchange.response_headers[:3] == [
        ("X-RateLimit-Limit", "60"),
        ("set-cookie", "a=1"),
        ("Set-Cookie", "b=2"),
    ]
    assert exchange.header("x-ratelimit-limit") == "60"
    assert exchange.header_values("SET-COOKIE") == ["a=1", "b=2"]
    assert exchange.header("Missing") is None


def test_media_type_drops_parameters_and_case():
    answer = httpx.Response(200, headers={"Content-Type": "Application/JSON; charset=utf-8"})
    client, _ = make_client(answer, httpx.Response(204))
    assert client.get("/c").media_type() == "application/json"
    assert client.get("/c").media_type() is None


def test_bodies_are_truncated_but_json_parses_the_full_body():
    big = [{"id": index, "name": "x" * 20} for index in range(500)]
    client, _ = make_client(httpx.Response(200, json=big))
    exchange = client.post("/categories", content="y" * 5000)
    assert len(exchange.response_body) == 4000
    assert len(exchange.request_body) == 2000
    assert exchange.json() == big


def test_json_raises_value_error_when_not_json():
    client, _ = make_client(httpx.Response(401, text="<html>nope</html>"))
    with pytest.raises(ValueError):
        client.get("/categories").json()


def test_json_none_sends_the_json_null_literal_and_no_body_is_none():
    client, server = make_client()
    assert client.post("/categories", json=None).request_body == "null"
    assert client.get("/categories").request_body is None
    assert server.seen[0][1].headers["Content-Type"] == "application/json"


def test_params_merge_with_a_query_in_the_path():
    client, server = make_client()
    client.get("/categories?a=1", params={"b": "2"})
    assert server.seen[0][1].url.params == httpx.QueryParams({"a": "1", "b": "2"})


def test_redirects_are_recorded_not_followed():
    client, server = make_client(httpx.Response(302, headers={"Location": "/elsewhere"}))
    assert client.get("/categories").status == 302
    assert len(server.seen) == 1


def test_on_exchange_sees_every_attempt():
    seen: list[int] = []
    client, _ = make_client(
        too_many("1"), httpx.Response(200), on_exchange=lambda e: seen.append(e.id)
    )
    client.get("/categories")
    assert seen == [1, 2]


def test_to_dict_is_json_able():
    client, _ = make_client(httpx.Response(200, json={"a": 1}))
    data = json.loads(json.dumps(client.get("/categories").to_dict()))
    assert data["status"] == 200
    assert data["curl"].startswith("curl ")


# -- curl ---------------------------------------------------------------------------------------


def test_curl_line_names_the_environment_variable_never_the_key():
    client, _ = make_client()
    exchange = client.post("/categories", json={"name": 'it\'s a "$dog"'})
    line = exchange.curl()
    assert '"Authorization: Bearer $PETSTORE_API_KEY"' in line
    assert MAIN not in line
    assert "-X POST" in line
    assert "--data-binary" in line
    spare_line = client.get("/categories", key="spare").curl()
    assert "$PETSTORE_SPARE_API_KEY" in spare_line


def test_curl_line_expands_in_a_shell_to_the_request_sent(tmp_path):
    """Run the line through bash with the variables set, printing the arguments curl would get."""
    client, server = make_client(allow_key_in_url=True)
    exchange = client.post(
        "/categories",
        params={"api_key": "{main}"},
        headers={"X-Note": "quote ' and \" and $HOME and `x`"},
        json={"name": "émoji 🐶 $(rm -rf /)"},
    )
    sent = server.seen[0][1]
    script = "printf '%s\\n' " + exchange.curl().removeprefix("curl ")
    env = {"PETSTORE_API_KEY": MAIN, "PETSTORE_SPARE_API_KEY": SPARE, "PATH": "/usr/bin:/bin"}
    output = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout.splitlines()
    assert output[:3] == ["-i", "-X", "POST"]
    assert f"api_key={MAIN}" in output[3]  # the variable goes in as is, not URL-encoded
    assert f"Authorization: Bearer {MAIN}" in output
    assert "X-Note: quote ' and \" and $HOME and `x`" in output
    assert output[-1] == sent.content.decode()
    assert shlex.split(exchange.curl())[0] == "curl"


# -- pacing after 429 ---------------------------------------------------------------------------


def test_retry_after_seconds_is_honoured_before_the_retry():
    client, server = make_client(too_many("5"), httpx.Response(200))
    exchange = client.get("/categories")
    assert exchange.status == 200
    assert len(client.exchanges) == 2
    assert 5.0 <= server.gaps()[0] <= 5.5


def test_retry_after_http_date_is_judged_against_the_date_header():
    retry_at = format_datetime(SERVER_DATE + timedelta(seconds=30), usegmt=True)
    client, server = make_client(too_many(retry_at, date=SERVER_DATE), httpx.Response(200))
    client.get("/categories")
    assert 30.0 <= server.gaps()[0] <= 33.0


def test_retry_after_http_date_without_date_header_uses_the_wall_clock():
    import time

    retry_at = formatdate(time.time() + 20, usegmt=True)
    client, server = make_client(too_many(retry_at), httpx.Response(200))
    client.get("/categories")
    assert 18.0 <= server.gaps()[0] <= 22.0


@pytest.mark.parametrize("retry_after", [None, "0", "soon", ""])
def test_missing_zero_or_bad_retry_after_uses_the_exponential_floor(retry_after):
    client, server = make_client(too_many(retry_after), httpx.Response(200))
    client.get("/categories")
    assert 1.0 <= server.gaps()[0] <= 1.1


def test_exponential_back_off_grows_is_capped_and_jittered():
    client, server = make_client(too_many(), max_wait=600)
    for _ in range(10):
        assert client.get("/categories", retry_on_429=False).status == 429
    expected = [1, 2, 4, 8, 16, 32, 60, 60, 60]
    for gap, floor in zip(server.gaps(), expected, strict=True):
        assert floor <= gap <= floor * 1.1
    assert len(set(server.gaps())) == len(expected)  # jitter makes equal floors differ


def test_jitter_is_deterministic_under_a_seeded_random():
    runs = []
    for _ in range(2):
        client, server = make_client(too_many(), rng=random.Random(42))
        for _ in range(4):
            client.get("/categories", retry_on_429=False)
        runs.append(server.gaps())
    assert runs[0] == runs[1]


def test_a_success_ends_the_429_streak():
    client, server = make_client(
        too_many(), too_many(), httpx.Response(200), too_many(), httpx.Response(200)
    )
    client.get("/categories")  # 429, 429, 200: waits 1 then 2
    client.get("/categories", retry_on_429=False)  # 429 again: streak restarts
    client.get("/categories", retry_on_429=False)
    floors = [1, 2, 0, 1]
    for gap, floor in zip(server.gaps(), floors, strict=True):
        assert floor <= gap <= max(floor * 1.1, 0.001)


def test_refusals_of_requests_in_flight_with_a_refused_one_do_not_grow_the_back_off():
    # A burst's wave: thirty requests sent at once, all refused. They were sent before the
    # first refusal came back, so the client did not keep sending after it: one refusal's wait.
    import time

    pacer = Pacer(FakeClock(), random.Random(1), max_wait=600)
    sent = time.time()
    waits = [pacer.on_429("spare", None, sent_at=sent) for _ in range(30)]
    assert all(1.0 <= wait <= 1.1 for wait in waits), waits
    # A request sent after those refusals came back, refused again: the streak grows.
    assert 2.0 <= pacer.on_429("spare", None, sent_at=time.time() + 0.001) <= 2.2


def test_a_larger_exponential_floor_wins_over_a_short_retry_after():
    client, server = make_client(too_many("1"), max_wait=600)
    client.get("/categories")
    assert [round(gap) for gap in server.gaps()] == [1, 2, 4]


def test_retries_stop_after_four_attempts_and_return_the_429():
    client, server = make_client(too_many("1"))
    exchange = client.get("/categories")
    assert exchange.status == 429
    assert exchange.id == 4
    assert len(server.seen) == 4
    assert client.requests_per_key() == {"main": 4}


def test_without_retry_the_429_returns_at_once_but_the_next_request_waits():
    client, server = make_client(too_many("7"), httpx.Response(200))
    assert client.get("/categories", retry_on_429=False).status == 429
    assert len(server.seen) == 1
    assert client.get("/categories").status == 200
    assert 7.0 <= server.gaps()[0] <= 7.7


def test_never_sends_on_a_blocked_label_before_the_wait_is_over():
    def answer(request: httpx.Request) -> httpx.Response:
        if request.headers.get("Authorization") == f"Bearer {MAIN}":
            return too_many("30")
        return httpx.Response(200)

    client, server = make_client(answer)
    blocked_at = server.clock.now()
    client.get("/categories", retry_on_429=False)
    client.get("/categories", key="spare")  # other labels are not held up
    client.get("/categories", key=None)
    assert server.times[1] == server.times[2] == blocked_at
    client.get("/categories", retry_on_429=False)
    main_times = [t for t, r in server.seen if r.headers.get("Authorization") == f"Bearer {MAIN}"]
    assert main_times[1] - main_times[0] >= 30.0


def test_unauthenticated_requests_share_one_pacing_state():
    client, server = make_client(too_many("9"), httpx.Response(200))
    client.get("/categories", key=None, retry_on_429=False)
    client.get("/categories", key=None, authorization="Bearer not-a-key")
    assert server.gaps()[0] >= 9.0


def test_wait_until_ready_reports_the_seconds_waited():
    client, _ = make_client(too_many("12"))
    client.get("/categories", retry_on_429=False)
    assert 12.0 <= client.wait_until_ready("main") <= 13.2
    assert client.wait_until_ready("main") == 0.0
    assert client.wait_until_ready("spare") == 0.0


def test_a_wait_longer_than_max_wait_raises_target_throttled():
    client, server = make_client(too_many("3600"), max_wait=120)
    with pytest.raises(
        TargetThrottled, match=r"key 'main' is limited for 3600 s, longer than the 120 s"
    ):
        client.get("/categories")
    assert len(server.seen) == 1
    assert server.clock.sleeps == []


def test_a_wait_that_would_cross_the_run_deadline_is_not_begun():
    client, server = make_client(too_many("30"), deadline=20)
    with pytest.raises(
        RunOver,
        match=r"deadline of 20 s \(--deadline\) would pass while key 'main' waits 3\d s for "
        r"the Retry-After of its 429",
    ):
        client.get("/categories")
    assert len(server.seen) == 1
    assert server.clock.sleeps == []


def test_a_key_refused_on_end_is_waited_for_no_longer_than_max_wait():
    """`Retry-After: 1` on every answer: each wait is short, their sum is not."""
    client, server = make_client(too_many("1"), max_wait=120)
    refused_on_end = r"key 'main' has been refused \(429\) on end for \d+ s, .* make it 1\d\d s"
    with pytest.raises(TargetThrottled, match=refused_on_end):
        for _ in range(20):
            client.get("/categories", retry_on_429=False)
    assert sum(server.clock.sleeps) <= 120


def test_a_wait_the_run_schedules_is_not_cut_off_by_the_bound_on_a_refused_key():
    """The day profile asks a refusal at a window's opening again a whole minute on: on a real
    minute that lands 121 s into the key's refusals, past the 120 s bound, which is for the
    waits refusals impose, not for the confirmations the run schedules itself."""
    client, server = make_client(too_many("60"), too_many("60"), httpx.Response(200), max_wait=120)
    client.get("/categories", retry_on_429=False)  # the window's last request: refused
    client.get("/categories", retry_on_429=False)  # the next window's opening, a minute on
    client.wait("main", 61.0, "the refusal asked again a whole minute on")
    assert client.get("/categories", retry_on_429=False).status == 200
    assert server.times[2] - server.times[0] > 120


def test_the_bound_on_a_refused_key_still_holds_for_the_waits_refusals_impose():
    client, server = make_client(too_many("60"), max_wait=120)
    client.get("/categories", retry_on_429=False)
    client.get("/categories", retry_on_429=False)
    with pytest.raises(TargetThrottled, match="refused \\(429\\) on end"):
        client.get("/categories", retry_on_429=False)
    assert len(server.seen) == 2


def test_a_halted_client_sends_nothing_more():
    client, server = make_client()
    client.get("/categories")
    client.halt("the run was interrupted after 3 s (SIGTERM)")
    with pytest.raises(RunOver, match="interrupted after 3 s"):
        client.get("/categories", key="spare")
    assert len(server.seen) == 1


def test_jitter_never_pushes_an_acceptable_wait_past_max_wait():
    client, server = make_client(too_many("120"), httpx.Response(200), max_wait=120)
    assert client.get("/categories").status == 200
    assert server.gaps()[0] == pytest.approx(120.0)


# -- proactive pacing on X-RateLimit-Remaining: 0 -----------------------------------------------


def spent(reset_in: float, date: datetime = SERVER_DATE, remaining: str = "0") -> httpx.Response:
    return httpx.Response(
        200,
        headers={
            "Date": format_datetime(date, usegmt=True),
            "X-RateLimit-Limit": "60",
            "X-RateLimit-Remaining": remaining,
            "X-RateLimit-Reset": str(int(date.timestamp() + reset_in)),
        },
    )


def test_remaining_zero_holds_the_key_until_the_reset_plus_margin():
    client, server = make_client(spent(10), httpx.Response(200))
    client.get("/categories")
    client.get("/categories")
    assert server.gaps()[0] == pytest.approx(11.0)


def test_a_reset_a_whole_real_minute_away_holds_the_key():
    # A window that has just started on a real minute resets 60 s ahead, and Date may lag.
    client, server = make_client(spent(64), httpx.Response(200))
    client.get("/categories")
    client.get("/categories")
    assert server.gaps()[0] == pytest.approx(65.0)


@pytest.mark.parametrize("reset_in", [3600, -5, -1, 67])
def test_an_implausible_reset_does_not_stall_the_run(reset_in):
    client, server = make_client(spent(reset_in), httpx.Response(200))
    client.get("/categories")
    client.get("/categories")
    assert server.gaps()[0] == 0.0


def test_remaining_above_zero_does_not_pace():
    client, server = make_client(spent(10, remaining="3"), httpx.Response(200))
    client.get("/categories")
    client.get("/categories")
    assert server.gaps()[0] == 0.0


def test_a_kept_reserve_holds_the_others_and_lets_the_kept_requests_through():
    # The exhaustion keeps two of the main key's window: the main key's tests, down to them,
    # wait for its reset; the exhaustion's two requests go at once; keep(0) ends it.
    client, server = make_client(
        spent(10, remaining="2"), httpx.Response(200), httpx.Response(200), httpx.Response(200)
    )
    client.keep("main", 2)
    client.get("/categories")  # Remaining 2: the others are held until the reset
    client.get("/categories", kept=True)
    assert server.gaps()[0] == 0.0
    client.get("/categories")
    assert server.gaps()[1] == pytest.approx(11.0)
    client.keep("main", 0)
    client.get("/categories")
    assert server.gaps()[2] == 0.0


def test_without_a_reserve_remaining_two_does_not_pace():
    client, server = make_client(spent(10, remaining="2"), httpx.Response(200))
    client.keep("spare", 2)  # another key's reserve
    client.get("/categories")
    client.get("/categories")
    assert server.gaps()[0] == 0.0


@pytest.mark.parametrize(
    ("limit", "remaining"), [("60", "-1"), ("60", "1e400"), ("60", " 0.0"), ("sixty", "0")]
)
def test_a_value_that_fails_headers_valid_does_not_hold_the_key(limit: str, remaining: str):
    """A Remaining of -1 or 1e400 (or a Limit that is no number) is no window spent: the key is
    not held for its reset (a run held it 19 times on such a server, ten times its length)."""
    answer = spent(10, remaining=remaining)
    answer.headers["X-RateLimit-Limit"] = limit
    client, server = make_client(answer, httpx.Response(200))
    client.get("/categories")
    client.get("/categories")
    assert server.gaps()[0] == 0.0


def test_reset_wait_takes_only_numbers_headers_valid_accepts():
    now = SERVER_DATE.timestamp()
    reset = str(int(now) + 10)
    assert reset_wait("0", reset, None, now) == pytest.approx(11.0)
    for remaining in ("-1", "1e400", "0.0", "-0"):
        assert reset_wait(remaining, reset, None, now) is None, remaining
    assert reset_wait("0", f"{reset}e0", None, now) is None


def test_a_refusal_with_a_bad_remaining_still_honours_its_retry_after():
    refused = too_many("5")
    refused.headers.update({"X-RateLimit-Remaining": "-1", "X-RateLimit-Limit": "60"})
    client, server = make_client(refused, httpx.Response(200), rng=random.Random(0))
    client.get("/categories")
    assert server.gaps()[0] >= 5.0


def test_reset_is_judged_against_the_servers_date_not_our_clock():
    skewed = SERVER_DATE - timedelta(days=400)  # a server whose clock is far off ours
    assert reset_wait("0", str(int(skewed.timestamp()) + 5), format_datetime(skewed, True), 0) == 6
    assert reset_wait("0", "garbage", None, 0) is None
    assert reset_wait(None, "5", None, 0) is None


# -- budget -------------------------------------------------------------------------------------


def test_budget_raises_before_a_request_would_exceed_it():
    client, server = make_client(max_requests=3)
    for _ in range(3):
        client.get("/categories", key=None)
    with pytest.raises(BudgetExhausted):
        client.get("/categories", key="spare")
    assert len(server.seen) == 3
    assert client.requests_sent == 3


def test_retries_count_against_the_budget():
    client, server = make_client(too_many("1"), max_requests=2)
    with pytest.raises(BudgetExhausted):
        client.get("/categories")
    assert len(server.seen) == 2


# -- unreachable targets ------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_closed_port_raises_target_unreachable_with_one_line():
    client = ConformanceClient(
        f"http://127.0.0.1:{closed_port()}/v1",
        {"main": MAIN},
        response_seconds=2,
        allow_key_in_url=True,
    )
    with pytest.raises(TargetUnreachable) as caught:
        client.get("/categories", params={"k": "{main}"})
    message = str(caught.value)
    assert message.startswith("cannot reach http://127.0.0.1:")
    assert "refused" in message.lower()
    assert "\n" not in message
    assert MAIN not in message
    client.close()


def test_a_timeout_raises_target_unreachable():
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    client, _ = make_client(slow, response_seconds=3)
    with pytest.raises(TargetUnreachable, match=r"no response within 3 s"):
        client.get("/categories")


# -- a real server on loopback ------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        authorized = self.headers.get("Authorization") == f"Bearer {MAIN}"
        body = json.dumps([] if authorized else {"code": "x", "message": "y", "status": 401})
        self.send_response(200 if authorized else 401)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("X-RateLimit-Remaining", "59")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_against_a_real_loopback_server(loopback):
    with ConformanceClient(loopback, {"main": MAIN}, max_requests=5) as client:
        ok = client.get("/categories")
        denied = client.get("/categories", key=None)
    assert (ok.status, ok.json(), ok.media_type()) == (200, [], "application/json")
    assert ok.header("x-ratelimit-remaining") == "59"
    assert ("X-RateLimit-Remaining", "59") in ok.response_headers
    assert denied.status == 401 and denied.json()["status"] == 401
    assert ok.elapsed > 0 and ok.started_at > 0
    assert client.requests_per_key() == {"main": 1, "none": 1}
    assert_no_secret(ok)


# -- back-off arithmetic ------------------------------------------------------------------------


def test_retry_after_parsing():
    date = format_datetime(SERVER_DATE, usegmt=True)
    later = format_datetime(SERVER_DATE + timedelta(seconds=90), usegmt=True)
    assert retry_after_seconds("17", None, 0) == 17
    assert retry_after_seconds(" 3 ", None, 0) == 3
    assert retry_after_seconds(later, date, 0) == 90
    assert retry_after_seconds(date, later, 0) == 0  # a date in the past: no extra wait
    assert retry_after_seconds("-1", None, 0) is None
    assert retry_after_seconds("1.5", None, 0) is None
    assert retry_after_seconds(None, None, 0) is None


def test_exponential_delay_steps_and_cap():
    assert [exponential_delay(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert exponential_delay(1000) == 60


def test_curl_line_leaves_out_a_huge_body_but_says_so():
    client, _ = make_client()
    exchange = client.post("/categories", json={"name": "x", "description": "d" * 20_000})
    line = exchange.curl()
    assert "d" * 100 not in line
    assert "20029-byte body was not kept" in line
    assert len(line) < 1_000


def test_the_summary_shows_a_servers_control_bytes_as_escapes():
    client, _ = make_client(httpx.Response(400, text="bad \x00 byte \x1b[31m"))
    summary = client.get("/categories").summary()
    assert "\x00" not in summary and "\x1b" not in summary
    assert "bad \\x00 byte \\x1b[31m" in summary


def test_no_key_travels_in_a_url_without_the_opt_in():
    client, server = make_client()
    for params in ({"api_key": "{main}"}, {"q": MAIN}):
        with pytest.raises(ValueError, match="--allow-key-in-url"):
            client.get("/categories", key=None, params=params)
    with pytest.raises(ValueError, match="--allow-key-in-url"):
        client.get("/categories/{spare}")
    assert server.seen == []
    client.get("/categories", key="main")  # the Authorization header is where keys belong
    assert len(server.seen) == 1


JSON = {"Content-Type": "application/json"}


def run_curl_arguments(line: str, cwd) -> bytes:
    """The body curl would send for `line`, as bash expands it (from a file for @FILE)."""
    script = "printf '%s\\0' " + line.removeprefix("curl ")
    env = {"PETSTORE_API_KEY": MAIN, "PETSTORE_SPARE_API_KEY": SPARE, "PATH": "/usr/bin:/bin"}
    words = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, check=True, cwd=cwd
    ).stdout.split(b"\0")
    body = words[words.index(b"--data-binary") + 1]
    return Path(cwd, body[1:].decode()).read_bytes() if body.startswith(b"@") else body


@pytest.mark.parametrize(
    "body",
    [
        b'{"name": "tab\there, newline\nthere, bell \x07, DEL \x7f, quote \' \\\\ x"}',
        b'{"name": "\xc3\xa9 \x1b[31m red"}',
    ],
)
def test_a_body_with_control_bytes_pastes_as_one_ansi_c_word(body, tmp_path):
    client, server = make_client()
    line = client.post("/categories", content=body, headers=JSON).curl()
    assert "$'" in line
    assert not re.search(r"[\x00-\x1f\x7f]", line), "a raw control byte in the curl line"
    assert run_curl_arguments(line, tmp_path) == server.seen[0][1].content == body


@pytest.mark.parametrize(
    "body", [b'{"name": "nul \x00 here"}', b"\xff\xfe not UTF-8", b"x" * 9_000], ids=str
)
def test_a_body_a_shell_line_cannot_carry_goes_to_a_file_beside_the_report(body, tmp_path):
    client, server = make_client(body_dir=tmp_path / "reports" / "request-bodies")
    line = client.post("/categories", content=body, headers=JSON).curl()
    assert "\x00" not in line and len(line) < 1_000
    assert "@" in line
    assert run_curl_arguments(line, tmp_path) == server.seen[0][1].content == body


def test_a_body_file_is_written_only_when_its_curl_line_is_shown(tmp_path):
    # A passing run shows no curl line; it must not leave a megabyte of body in the reports.
    body_dir = tmp_path / "request-bodies"
    client, _ = make_client(body_dir=body_dir)
    exchange = client.post("/categories", content=b"x" * 9_000, headers=JSON)
    assert not body_dir.exists()
    line = exchange.curl()
    assert [p.name for p in body_dir.iterdir()] == [f"request-{exchange.id}.bin"]
    assert exchange.curl() == line


def hang_up(request: httpx.Request) -> httpx.Response:
    raise httpx.RemoteProtocolError("Server disconnected without sending a response.")


def test_a_get_on_a_connection_closed_as_it_went_out_is_sent_once_more():
    # A keep-alive connection closed for idleness (by the server or a proxy) at that moment.
    client, server = make_client(hang_up, httpx.Response(200, json=[]))
    assert client.get("/categories").status == 200
    assert len(server.seen) == 2
    assert client.requests_per_key() == {"main": 2}


def test_a_server_that_always_hangs_up_stays_unreachable_and_a_post_is_not_resent():
    client, server = make_client(hang_up)
    with pytest.raises(TargetUnreachable, match="without sending a response"):
        client.get("/categories")
    assert len(server.seen) == 2
    client, server = make_client(hang_up, httpx.Response(201, json={}))
    with pytest.raises(TargetUnreachable):
        client.post("/categories", json={"name": "x"})
    assert len(server.seen) == 1


def test_a_request_that_is_not_valid_http_is_our_error_not_an_unreachable_target():
    # A listening socket is enough: the request fails in our HTTP layer before any answer.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = ConformanceClient(
            f"http://127.0.0.1:{port}/v1", {"main": MAIN}, response_seconds=2
        )
        with pytest.raises(ValueError, match="cannot send this request"):
            client.get("/categories", key=None, authorization="Bearer ")


def test_a_burst_request_on_a_connection_closed_as_it_went_out_is_sent_once_more():
    server = Server(FakeClock(), hang_up, httpx.Response(200, json=[]))
    client = ConformanceClient(BASE, {"main": MAIN}, async_transport=httpx.MockTransport(server))

    async def send() -> Exchange:
        async with client.burst.async_session(1) as session:
            return await client.burst.send_async(session, "GET", "/categories", key="main")

    assert asyncio.run(send()).status == 200
    assert len(server.seen) == 2 and client.requests_per_key() == {"main": 2}


NGINX_503 = "<html><head><title>503 Service Temporarily Unavailable</title></head></html>"


def test_a_proxys_503_is_backed_off_from_and_retried_as_a_429():
    """nginx's limit_req answers 503 without Retry-After: the exponential floor, then a retry."""
    refused = httpx.Response(503, headers={"Content-Type": "text/html"}, text=NGINX_503)
    client, server = make_client(refused, refused, httpx.Response(200))
    assert client.get("/categories").status == 200
    assert [round(gap) for gap in server.gaps()] == [1, 2]


HAPROXY_403 = "<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n"
RATE = {"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "50", "X-RateLimit-Reset": "9"}


def test_a_fronts_403_is_backed_off_from_as_a_429_and_a_services_own_is_not():
    """HAProxy's `deny`: an HTML 403 without the headers the service's JSON answers carry.
    Its Retry-After is honoured and the request tried again; the service's own JSON 403 is an
    answer, given back at once."""
    served = [httpx.Response(200, headers=RATE, json=[]) for _ in range(3)]
    deny = httpx.Response(
        403, headers={"Content-Type": "text/html", "Retry-After": "3"}, text=HAPROXY_403
    )
    own = httpx.Response(403, headers=RATE, json={"code": "x", "message": "y", "status": 403})
    client, server = make_client(*served, deny, httpx.Response(200, headers=RATE), own)
    for _ in served:
        client.get("/categories")
    assert client.get("/categories").status == 200
    assert 3.0 <= server.gaps()[3] <= 3.5
    assert client.get("/categories").status == 403 and len(server.seen) == 6


def test_a_retry_after_is_an_order_on_a_refusal_only():
    """On a 503 it is waited for; on a 200, 201 or 301 (Flask-Limiter and slowapi send it on
    every response: the seconds left in the window) it is information, never waited for."""
    unavailable = httpx.Response(503, headers={"Retry-After": "7"})
    served = httpx.Response(200, headers={"Retry-After": "10"}, json=[])
    created = httpx.Response(201, headers={"Retry-After": "10"}, json={"id": 1, "name": "x"})
    moved = httpx.Response(301, headers={"Retry-After": "5", "Location": "/v1/categories"})
    client, server = make_client(unavailable, served, created, moved, httpx.Response(200))
    assert client.get("/categories").status == 200
    assert 7.0 <= server.gaps()[0] <= 7.7
    client.post("/categories", json={"name": "x"})
    client.get("/categories")
    client.get("/categories")
    assert server.gaps()[1:] == [0.0, 0.0, 0.0]
    assert client.seconds_waited_per_key()["main"] == pytest.approx(server.gaps()[0])
