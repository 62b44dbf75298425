"""Unit tests of conformance.judging.hints: the known patterns are named, only where they fit."""

from __future__ import annotations

from dataclasses import replace
from itertools import count

from conformance.httpclient.client import Exchange
from conformance.httpclient.service_kind import front_refusal
from conformance.judging.checks import CheckResult
from conformance.judging.hints import ServiceKind, hints_for
from conformance.judging.verdict import RequirementOutcome
from conformance.spec import catalogue

NUMBERS = count(1)
RATE = [("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "5"), ("X-RateLimit-Reset", "9")]
NGINX_413 = "<html><head><title>413 Request Entity Too Large</title></head></html>"


def exchange(
    status: int,
    *,
    server: str | None = "uvicorn",
    media: str = "application/json",
    body: str = '{"code": "x", "message": "y", "status": 400}',
    rate: bool = True,
    method: str = "GET",
) -> Exchange:
    headers = [("Content-Type", media), *(RATE if rate else [])]
    if server is not None:
        headers.append(("Server", server))
    url = "http://api.test/v1/categories"
    return Exchange(
        next(NUMBERS), "main", method, url, {}, None, status, headers, body, 0, 0, _full_body=body
    )


def failed(requirement_id: str, *exchanges: Exchange) -> RequirementOutcome:
    failures = [CheckResult(requirement_id, False, "broken", "test_x", e) for e in exchanges]
    return RequirementOutcome(catalogue()[requirement_id], "failed", len(failures), failures)


def service(*extra: Exchange) -> list[Exchange]:
    """A run's usual responses: JSON from uvicorn, every one with the rate-limit headers."""
    return [*(exchange(200) for _ in range(8)), exchange(201, method="POST"), *extra]


def test_a_proxys_html_413_without_headers_is_named_an_intermediary():
    proxy = exchange(413, server="nginx", media="text/html", body=NGINX_413, rate=False)
    [hint] = hints_for(failed("LIM-HEADERS-PRESENT", proxy), service(proxy))
    assert "looks produced by an intermediary" in hint
    assert "`Server: nginx` where the service's other responses say `Server: uvicorn`" in hint
    assert "an HTML body where the service answers JSON" in hint
    assert "no rate-limit headers where every other response had them" in hint
    assert "client_max_body_size" in hint


def test_the_services_own_400s_without_headers_point_at_the_middleware_order():
    bare = [exchange(400, rate=False, method="POST") for _ in range(3)]
    [hint] = hints_for(failed("LIM-HEADERS-PRESENT", *bare), service(*bare))
    assert "on the 200s and 201s but missing on the 400s" in hint
    assert "runs after the body parser or the request validation" in hint
    assert "intermediary" not in hint


def test_the_layers_are_named_after_the_statuses_that_lack_the_headers():
    bare = [exchange(401, rate=False), exchange(404, rate=False)]
    [hint] = hints_for(failed("LIM-HEADERS-PRESENT", *bare), service(*bare))
    assert "missing on the 401s and 404s" in hint
    assert "runs after the auth layer and the router" in hint


def test_headers_missing_on_the_429s_say_the_refusals_lack_them():
    bare = exchange(429, rate=False)
    [hint] = hints_for(failed("LIM-HEADERS-PRESENT", bare), service(bare))
    assert "429s carry no rate-limit headers" in hint


def test_no_middleware_hint_when_no_response_had_the_headers():
    bare = [exchange(200, rate=False) for _ in range(5)] + [exchange(400, rate=False)]
    assert hints_for(failed("LIM-HEADERS-PRESENT", *bare), bare) == []


def test_a_response_like_the_services_own_is_no_intermediary():
    kind = ServiceKind(service(exchange(400)))
    assert not kind.unlike(exchange(400))
    assert kind.differences(exchange(400, rate=False)) == {
        "headers": "no rate-limit headers where every other response had them"
    }
    assert not kind.unlike(exchange(400, rate=False))  # missing headers alone: maybe its own


def test_too_few_responses_tell_nothing_about_the_usual_server():
    few = [exchange(200), exchange(200, server="nginx")]
    assert ServiceKind(few).usual_server(few[1]) is None


def test_a_crash_where_a_4xx_was_due_is_named():
    crashed = exchange(500, media="text/plain", body="Internal Server Error")
    [hint] = hints_for(failed("AUTH-INVALID-KEY-401", crashed), service(crashed))
    assert "failed on this input" in hint
    assert hints_for(failed("GEN-NO-SERVER-ERROR", crashed), service(crashed)) == []


def test_a_per_endpoint_limit_points_at_a_limiter_keyed_by_path():
    outcome = failed("LIM-HEADERS-PRESENT")
    outcome.requirement = type(outcome.requirement)("LIM-PER-CALLER", "MUST", "Limits", "s")
    [hint] = hints_for(outcome, service())
    assert "keyed by the request path" in hint


DJANGO_404 = "<!doctype html><html><head><title>Not Found</title></head><body><h1>Not Found</h1>"
NGINX_503 = "<html><head><title>503 Service Temporarily Unavailable</title></head><body>"


def test_a_framework_page_from_the_services_own_server_is_no_intermediary():
    page = exchange(404, server="gunicorn", media="text/html", body=DJANGO_404, rate=False)
    usual = [exchange(200, server="gunicorn") for _ in range(8)]
    [hint] = hints_for(failed("GEN-DOCUMENTED-STATUS", page), [*usual, page])
    assert "intermediary" not in hint
    assert "the web framework's default error page" in hint
    assert "`Server: gunicorn`" in hint
    assert "handler404" in hint


def test_a_proxys_signed_page_behind_its_own_server_header_is_an_intermediary():
    """nginx replaces the service's Server with its own, so its page shares the Server of
    every answer: the page's signature tells it apart."""
    body = "<html><head><title>502 Bad Gateway</title></head><body><hr><center>nginx/1.22.1"
    page = exchange(502, server="nginx", media="text/html", body=body, rate=False)
    usual = [exchange(200, server="nginx") for _ in range(8)]
    [hint] = hints_for(failed("GEN-DOCUMENTED-STATUS", page), [*usual, page])
    assert "looks produced by an intermediary" in hint
    assert "the stock error page of nginx" in hint


def test_a_front_refusal_says_what_answered_and_when():
    body = NGINX_503 + "<hr><center>nginx/1.22.1</center></body></html>"
    usual = [exchange(200, server="nginx") for _ in range(8)]
    for number, seen in enumerate(usual):
        seen.started_at = float(number)
    refused = exchange(503, server="nginx", media="text/html", body=body, rate=False)
    refused.started_at = 9.5
    [hint] = hints_for(failed("LIM-429-WHEN-EXCEEDED", refused), [*usual, refused])
    assert "is a refusal by a limiter in front of the service" in hint
    assert "the stock error page of nginx" in hint
    assert "after 8 requests of the main key in 9.5 s" in hint
    assert "still said X-RateLimit-Remaining 5" in hint
    assert "limit_req_status 429" in hint
    assert "failed on this input" not in hint


HAPROXY_403 = "<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n"


def test_a_403_page_where_the_service_answers_json_is_a_fronts_refusal():
    """HAProxy's `deny`: no Server, an HTML page, no headers."""
    deny = exchange(403, server=None, media="text/html", body=HAPROXY_403, rate=False)
    assert front_refusal(deny, ServiceKind(service(deny)))
    own = exchange(403)  # the service's own JSON 403 is its answer, not a front's
    assert not front_refusal(own, ServiceKind(service(own)))


def test_a_bare_json_429_while_quota_was_left_is_a_fronts_refusal():
    """A front's 429 dressed as the service's Error: known by its missing headers while the
    service said Remaining 5; a bare 401 or a bare 429 of a service that sends none is not."""
    dressed = replace(exchange(429, server="uvicorn", rate=False), started_at=1.0)
    assert front_refusal(dressed, ServiceKind(service(dressed)))
    unauthorised = exchange(401, rate=False)
    assert not front_refusal(unauthorised, ServiceKind(service(unauthorised)))
    headerless = [exchange(200, rate=False) for _ in range(8)]
    refusal = replace(exchange(429, rate=False), started_at=1.0)
    assert not front_refusal(refusal, ServiceKind([*headerless, refusal]))


def test_a_create_refused_for_its_body_after_an_h2c_offer_names_uvicorn_and_h11():
    dropped = exchange(
        400, method="POST", body='{"code":"missing_body","message":"x","status":400}'
    )
    [hint] = hints_for(failed("CAT-CREATE-H2C-OFFER", dropped), service(dropped))
    assert "`Server: uvicorn`: uvicorn with httptools" in hint
    assert "uvicorn issue 2722" in hint and "httptools issue 124" in hint
    assert "`uvicorn --http h11`" in hint


def test_the_h2c_hint_names_uvicorn_as_a_known_cause_behind_another_server_name():
    dropped = exchange(422, server=None, method="POST")
    run = [exchange(200, server=None), exchange(201, server=None, method="POST"), dropped]
    [hint] = hints_for(failed("CAT-CREATE-H2C-OFFER", dropped), run)
    assert "A known cause: uvicorn with httptools" in hint


def test_a_create_after_an_h2c_offer_that_fails_otherwise_gets_no_upgrade_hint():
    other = exchange(201, method="POST", body='{"id": 1, "name": "other"}')
    assert hints_for(failed("CAT-CREATE-H2C-OFFER", other), service(other)) == []
