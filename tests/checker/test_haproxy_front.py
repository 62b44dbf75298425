"""The bundled reference (a correct service) behind Debian's HAProxy with a stick-table rate
limit, as operations teams put one in front of staging: its refusal is one cause on its own
response, named as the front's, whatever its status (issue 23, 3); a 429 inside the quota the
service announced breaks that promise too (LIM-QUOTA-HONOURED), in whichever window it came."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.shared.checker_runs import CheckerRun, assert_no_key_in_outputs, new_keys, run_command
from tests.shared.haproxy import running_haproxy
from tests.shared.servers import reference_args, start_reference

pytestmark = [pytest.mark.haproxy, pytest.mark.slow]

MINUTE_SECONDS = 3
# A stock limit per client address: ten requests a second; a conformance run's own pace passes
# mostly, its exhaustion burst does not.
FRONTEND = """\
frontend api
    bind 127.0.0.1:{port}
    stick-table type ip size 100k expire 10s store http_req_rate(1s)
    http-request track-sc0 src
    http-request {refusal} if {{ sc_http_req_rate(0) gt 10 }}
    default_backend service
backend service
    server reference {upstream}
"""
# HAProxy's three usual refusals: its stock `deny` (403 and its HTML page), the same as a 429,
# and a 429 made to look like the service's (a JSON Error, a Retry-After), without its headers.
DENY = "deny"
DENY_429 = "deny deny_status 429"
JSON_429 = (
    "return status 429 content-type application/json "
    'string \'{"code":"rate_limited","message":"Too many requests","status":429}\' '
    "hdr Retry-After 1"
)


# mod_evasive's way: an address past a rate (five requests in a second) is flagged, and every
# request from it refused with the stock 403 while flagged; the flag lasts 10 s from the
# address's last request, so each request refused renews it (mod_evasive's DOSBlockingPeriod).
FLAGGING_FRONTEND = """\
frontend api
    bind 127.0.0.1:{port}
    stick-table type ip size 100k expire 10s store http_req_rate(1s),gpc0
    http-request track-sc0 src
    http-request sc-inc-gpc0(0) if {{ sc_http_req_rate(0) gt 5 }}
    http-request deny if {{ sc_get_gpc0(0) gt 0 }}
    default_backend service
backend service
    server reference {upstream}
"""
EVASIVE_MINUTE_SECONDS = 10


@contextmanager
def reference_behind_haproxy(
    tmp_path: Path,
    keys: tuple[str, str],
    refusal: str,
    frontend: str = FRONTEND,
    minute_seconds: int = MINUTE_SECONDS,
) -> Iterator[str]:
    reference = start_reference(
        reference_args([f"{key}:free" for key in keys], minute_seconds=minute_seconds)
    )
    upstream = urlsplit(reference.base_url).netloc
    config = lambda port: frontend.format(port=port, refusal=refusal, upstream=upstream)  # noqa: E731
    try:
        with running_haproxy(tmp_path / "haproxy", config) as haproxy:
            yield f"http://127.0.0.1:{haproxy.port}/v1"
    finally:
        reference.stop()


def checked_behind_haproxy(tmp_path: Path, refusal: str) -> CheckerRun:
    keys = new_keys()
    with reference_behind_haproxy(tmp_path, keys, refusal) as base_url:
        run = run_command(base_url, keys, tmp_path / "report")
    assert_no_key_in_outputs(run)
    return run


def outcome(run: CheckerRun, requirement: str) -> dict:
    return next(e for e in run.statement["requirements"] if e["id"] == requirement)


def assert_one_named_cause(run: CheckerRun, cause: str, promise_broken: bool = False) -> None:
    """The front's refusal fails `cause` alone on its responses, its hint names the front and
    when it refused, and what its answers kept from a judgement is blocked by it. A 429 inside
    what the service announced also fails LIM-QUOTA-HONOURED, on the service's promise."""
    assert run.status == 1, run.describe()
    failed = sorted([cause, "LIM-QUOTA-HONOURED"] if promise_broken else [cause])
    assert sorted(run.statement["failed_requirements"]) == failed, run.describe()
    if promise_broken:
        assert_promise_broken_without_headers(run)
    hint = "\n".join(outcome(run, cause).get("hints", []))
    assert "refusal by a limiter in front of the service" in hint, run.describe()
    assert "while the service's own headers still said X-RateLimit-Remaining" in hint, hint
    blocked = [e for e in run.statement["requirements"] if e.get("blocked_by")]
    assert blocked and all(e["blocked_by"] == [cause] for e in blocked), run.describe()


def test_a_stock_deny_403_is_one_failed_429_rule(tmp_path: Path) -> None:
    """HAProxy's `deny`: a 403 and its HTML page. It once passed LIM-429-WHEN-EXCEEDED and
    failed the validation checks it answered; now it is the one cause, the client backs off
    from it, and the checks it answered are blocked by it."""
    run = checked_behind_haproxy(tmp_path, DENY)
    assert_one_named_cause(run, "LIM-429-WHEN-EXCEEDED")
    assert outcome(run, "LIM-429-WHEN-EXCEEDED")["outcome"] == "failed"
    assert "deny_status 429" in "\n".join(outcome(run, "LIM-429-WHEN-EXCEEDED")["hints"])


def assert_promise_broken_without_headers(run: CheckerRun) -> None:
    """LIM-QUOTA-HONOURED failed on a response of the service's that announced quota left,
    against a refusal without the rate-limit headers."""
    evidence = outcome(run, "LIM-QUOTA-HONOURED")["evidence"]
    broken = [e for e in evidence if "without rate-limit headers" in e["message"]]
    assert broken, evidence
    headers = dict(broken[0]["exchange"]["response_headers"])
    assert broken[0]["exchange"]["status"] == 200, broken[0]
    assert int(headers["x-ratelimit-remaining"]) > 0, headers


@pytest.mark.parametrize("refusal", [DENY_429, JSON_429], ids=["html", "json"])
def test_a_front_429_is_one_cause_and_breaks_the_announced_quota(
    tmp_path: Path, refusal: str
) -> None:
    """A 429 from the front, as its page or dressed as the service's Error with a Retry-After:
    known by its missing headers while the service said quota was left, whatever its body;
    refused inside the announced quota, it broke the service's promise."""
    run = checked_behind_haproxy(tmp_path, refusal)
    assert_one_named_cause(run, "LIM-HEADERS-PRESENT", promise_broken=True)


def test_a_front_refusing_every_caller_ends_the_run_not_conformant(tmp_path: Path) -> None:
    """An address flagged for minutes (mod_evasive's way): a 403 to every key and to requests
    without one, renewed by each. Its first refusal is the cause; the run no longer backs off
    for ten minutes to find it again: once every caller was refused and the run spent most of
    a minute waiting, it stops, not conformant, the rest "not run" with that reason."""
    keys = new_keys()
    flagging = (DENY, FLAGGING_FRONTEND, EVASIVE_MINUTE_SECONDS)
    with reference_behind_haproxy(tmp_path, keys, *flagging) as base_url:
        run = run_command(base_url, keys, tmp_path / "report")
    print(f"a front refusing every caller: {run.seconds:.0f} s, {run.describe()}")
    assert_no_key_in_outputs(run)
    assert run.status == 1, run.describe()
    assert run.statement["failed_requirements"] == ["LIM-429-WHEN-EXCEEDED"], run.describe()
    hint = "\n".join(outcome(run, "LIM-429-WHEN-EXCEEDED").get("hints", []))
    assert "refusal by a limiter in front of the service" in hint, run.describe()
    stopped = "stopped early, the rest not tested: a front refuses every caller of this run"
    assert stopped in run.statement["reason"], run.describe()
    assert "and requests without a key were refused (403)" in run.statement["reason"]
    assert "'main'" in run.statement["reason"], run.statement["reason"]
    not_run = [
        e["id"]
        for e in run.statement["requirements"]
        if e.get("reason", "").startswith("not run: a front refuses every caller")
    ]
    assert not_run, run.describe()


# A limiter in front at the plan's figure, refilled continuously: HAProxy's http_req_rate is a
# rolling count over its period (the current period's count, and the previous one's share of
# the time left), per key (its Authorization header), as a gateway or vsthrottle keeps one. It
# lets a window's quota through, the request that proves the service's own 429, and the one
# that read the window before (the plan's figure, and two); then it refuses inside the next
# window's announced quota, its own 429 without the service's headers.
ROLLING_FRONTEND = """\
frontend api
    bind 127.0.0.1:{port}
    stick-table type string len 128 size 100k expire 60s store http_req_rate({period}s)
    http-request track-sc0 req.hdr(Authorization)
    http-request {refusal} if {{ sc_http_req_rate(0) gt {figure} }}
    default_backend service
backend service
    server reference {upstream}
"""
PLAN_FIGURE = 60  # free: requests per minute
ROLLING_MINUTE_SECONDS = 10
"""A minute long enough for the boundary burst (a quarter of it is 2.5 s): the checker spends
its first window late, and the next just after the reset, where the front has given back a
quarter of its count at most. On a 3 s minute a window is spent at once, and the next one a
whole window later: the front was caught only where the run's first request fell early in the
front's period (it passed a solo CI run, conformant)."""


# Solo: its first burst must land late in its window for the front to be met in the next.
@pytest.mark.solo
def test_a_front_refilled_continuously_fails_the_second_window(tmp_path: Path) -> None:
    """The first window passes untouched; the window after the reset, spent from its start,
    is refused by the front inside the quota the service's headers announced: that fails
    LIM-QUOTA-HONOURED, and the front's headerless 429 LIM-HEADERS-PRESENT, named as the
    front's. On a loaded machine the exhaustion's burst may run across the service's reset
    and meet the front there: the same two causes, from that window."""
    keys = new_keys()
    rolling = ROLLING_FRONTEND.replace("{period}", str(ROLLING_MINUTE_SECONDS)).replace(
        "{figure}", str(PLAN_FIGURE + 2)
    )
    fronted = (DENY_429, rolling, ROLLING_MINUTE_SECONDS)
    with reference_behind_haproxy(tmp_path, keys, *fronted) as base_url:
        run = run_command(base_url, keys, tmp_path / "report")
    assert_no_key_in_outputs(run)
    assert run.status == 1, run.describe()
    failed = run.statement["failed_requirements"]
    assert sorted(failed) == ["LIM-HEADERS-PRESENT", "LIM-QUOTA-HONOURED"], run.describe()
    assert_promise_broken_without_headers(run)
    hint = "\n".join(outcome(run, "LIM-HEADERS-PRESENT").get("hints", []))
    assert "refusal by a limiter in front of the service" in hint, run.describe()
