"""The test double (tests/shared/double): correct by default, and each sampled fault or variant
shows.

Every test talks HTTP to a real subprocess started with `start_double`.
"""

from __future__ import annotations

import calendar
import email.utils
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import yaml

from conformance.spec import catalogue
from tests.shared.double import FAULTS, HOSTILE, VARIANTS, WARNINGS, running_double, start_double
from tests.shared.double.launcher import PROJECT_ROOT

KEYS = {
    "main-key": "free",
    "pro-key": "pro",
    "tiny-key": "enterprise:3:50",
    "other-tiny-key": "enterprise:3:50",
}
MINUTE = 3.0
RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


def bearer(key: str, scheme: str = "Bearer") -> dict[str, str]:
    return {"Authorization": f"{scheme} {key}"}


def date_of(response: httpx.Response) -> float:
    return calendar.timegm(email.utils.parsedate_to_datetime(response.headers["date"]).timetuple())


def assert_error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body["code"], str)
    assert isinstance(body["message"], str)
    assert body["status"] == status


def assert_rate_headers(response: httpx.Response) -> None:
    values = [int(response.headers[name]) for name in RATE_HEADERS]
    limit, remaining, reset = values
    assert 0 <= remaining <= limit
    assert date_of(response) - 1 <= reset <= date_of(response) + 1440 * MINUTE + 2


def exhaust(client: httpx.Client, key: str, limit: int = 50) -> httpx.Response:
    for _ in range(limit):
        response = client.get("/categories", headers=bearer(key))
        if response.status_code != 200:
            return response
    raise AssertionError(f"{key} was never limited")


# --- the correct default -------------------------------------------------------------------


@pytest.fixture(scope="module")
def default_url() -> Iterator[str]:
    with running_double(KEYS, minute_seconds=MINUTE) as base_url:
        yield base_url


@pytest.fixture
def api(default_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=default_url, timeout=10) as client:
        yield client


def test_base_url_ends_in_v1(default_url: str) -> None:
    assert default_url.startswith("http://127.0.0.1:")
    assert default_url.endswith("/v1")


@pytest.mark.parametrize("path", ["/categories", "/pets/1", "/store/orders"])
@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_bearer_key_is_served_whatever_the_scheme_case(
    api: httpx.Client, path: str, scheme: str
) -> None:
    response = api.get(path, headers=bearer("main-key", scheme))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")


@pytest.mark.parametrize("path", ["/categories", "/pets/1", "/store/orders"])
@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({}, {}),
        ({"Authorization": "Bearer wrong-key"}, {}),
        ({"Authorization": "Bearer"}, {}),
        ({"Authorization": "Basic main-key"}, {}),
        ({"Authorization": "main-key"}, {}),
        ({}, {"api_key": "main-key"}),
    ],
    ids=["missing", "unknown", "empty", "basic", "no-scheme", "query"],
)
def test_missing_or_invalid_key_is_401_with_bearer_challenge(
    api: httpx.Client, path: str, headers: dict[str, str], query: dict[str, str]
) -> None:
    response = api.get(path, headers=headers, params=query)
    assert_error(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer ")
    assert "deprecation" not in response.headers
    assert_rate_headers(response)


def test_created_category_is_echoed_exactly_and_listed(api: httpx.Client) -> None:
    sent = {"name": "Chiens 犬 🐕 Ünïcödé", "description": "  any\ttext — kept  "}
    created = api.post("/categories", json=sent, headers=bearer("pro-key"))
    assert created.status_code == 201
    category = created.json()
    assert isinstance(category["id"], int)
    assert {category["name"], category["description"]} == {sent["name"], sent["description"]}
    listing = api.get("/categories", headers=bearer("pro-key"))
    assert listing.status_code == 200
    assert category in listing.json()


def test_ids_are_unique(api: httpx.Client) -> None:
    ids = [
        api.post("/categories", json={"name": f"unique-{n}"}, headers=bearer("pro-key")).json()[
            "id"
        ]
        for n in range(5)
    ]
    assert len(set(ids)) == 5


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{",
        b"[]",
        b'"name"',
        b"null",
        b"{}",
        b'{"description": "no name"}',
        b'{"name": 123}',
        b'{"name": null}',
        b'{"name": {"en": "x"}}',
        b'{"name": ["x"]}',
        b'{"name": true}',
        b'{"name": "ok", "description": null}',
        b'{"name": "ok", "description": 5}',
        b'{"name": "\\ud800"}',
    ],
)
def test_invalid_bodies_are_400_errors(api: httpx.Client, content: bytes) -> None:
    headers = {**bearer("pro-key"), "Content-Type": "application/json"}
    response = api.post("/categories", content=content, headers=headers)
    assert_error(response, 400)
    assert_rate_headers(response)


def test_wrong_content_type_is_400_and_creates_nothing(api: httpx.Client) -> None:
    headers = {**bearer("pro-key"), "Content-Type": "text/plain"}
    response = api.post("/categories", content=b'{"name": "plain-text-cat"}', headers=headers)
    assert_error(response, 400)
    names = [c["name"] for c in api.get("/categories", headers=bearer("pro-key")).json()]
    assert "plain-text-cat" not in names


def test_oversized_body_is_413(api: httpx.Client) -> None:
    body = b'{"name": "' + b"x" * (65 * 1024) + b'"}'
    headers = {**bearer("pro-key"), "Content-Type": "application/json"}
    assert_error(api.post("/categories", content=body, headers=headers), 413)


def test_unknown_path_is_404_and_wrong_method_405_with_allow(api: httpx.Client) -> None:
    assert_error(api.get("/no/such/thing", headers=bearer("pro-key")), 404)
    response = api.delete("/categories", headers=bearer("pro-key"))
    assert_error(response, 405)
    assert "POST" in response.headers["allow"]


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("GET", "/categories", {"headers": bearer("pro-key")}),
        ("POST", "/categories", {"headers": bearer("pro-key"), "json": {"name": "h"}}),
        ("POST", "/categories", {"headers": bearer("pro-key"), "json": {}}),
        ("GET", "/categories", {}),
        ("GET", "/pets/404", {"headers": bearer("pro-key")}),
        ("GET", "/nowhere", {"headers": bearer("pro-key")}),
        ("PUT", "/store/orders", {"headers": bearer("pro-key")}),
    ],
)
def test_rate_limit_headers_on_every_status(
    api: httpx.Client, method: str, path: str, kwargs: dict
) -> None:
    assert_rate_headers(api.request(method, path, **kwargs))


def test_limit_header_is_the_plan_figure(api: httpx.Client) -> None:
    response = api.get("/store/orders", headers=bearer("pro-key"))
    assert int(response.headers["x-ratelimit-limit"]) == 300


@pytest.mark.parametrize("pet_id", ["1", "999", "not-a-number"])
def test_pets_carry_deprecation_and_sunset(api: httpx.Client, pet_id: str) -> None:
    response = api.get(f"/pets/{pet_id}", headers=bearer("pro-key"))
    assert response.status_code == (200 if pet_id == "1" else 404)
    assert response.headers["deprecation"] == "@1767225600"
    assert response.headers["sunset"] == "Sat, 01 Jan 2028 00:00:00 GMT"
    assert 'rel="sunset"' in response.headers["link"]


def test_over_the_limit_is_429_until_retry_after_and_per_key(api: httpx.Client) -> None:
    assert remaining_until_refused(api) == ["200:2", "200:1", "200:0", "429:0"]
    refused = api.get("/categories", headers=bearer("tiny-key"))
    assert_error(refused, 429)
    assert_rate_headers(refused)
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert 1 <= int(refused.headers["retry-after"]) <= math.ceil(MINUTE)
    assert api.get("/categories", headers=bearer("other-tiny-key")).status_code == 200
    time.sleep(int(refused.headers["retry-after"]))
    served = api.get("/categories", headers=bearer("tiny-key"))
    assert served.status_code == 200
    assert served.headers["x-ratelimit-remaining"] == "2"


# --- faults and variants -------------------------------------------------------------------


def test_registries_are_large_and_name_catalogued_requirements() -> None:
    catalogue = yaml.safe_load(Path(PROJECT_ROOT, "spec", "requirements.yaml").read_text())
    ids = {entry["id"] for entry in catalogue["requirements"]}
    assert len(FAULTS) >= 45
    assert len(VARIANTS) >= 15
    unknown = {name: f.requirement for name, f in FAULTS.items() if f.requirement not in ids}
    assert not unknown
    assert not set(FAULTS) & set(VARIANTS)
    # A hostile mode is started as a fault: its name must not shadow one.
    assert not set(HOSTILE) & (set(FAULTS) | set(WARNINGS) | set(VARIANTS))


def test_faults_break_musts_and_deviations_shoulds() -> None:
    """A fault makes a run not conformant, a SHOULD deviation only warns: each registry names
    requirements of its level, so a requirement whose level changes moves its doubles too."""
    level_of = {requirement.id: requirement.level for requirement in catalogue().values()}
    for registry, level in ((FAULTS, "MUST"), (WARNINGS, "SHOULD")):
        wrong = [name for name, f in registry.items() if level_of[f.requirement] != level]
        assert wrong == [], f"these name a requirement that is not a {level}"


def test_unknown_fault_exits_2_with_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.shared.double", "--port", "0", "--fault", "no-such-fault"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "no-such-fault" in result.stderr


Probe = Callable[[httpx.Client], None]
JSON = {"Content-Type": "application/json"}


def post(client: httpx.Client, body: object, key: str = "main-key") -> httpx.Response:
    return client.post("/categories", json=body, headers=bearer(key))


def probe_any_token(c: httpx.Client) -> None:
    assert c.get("/categories", headers=bearer("made-up")).status_code == 200


def probe_headerless(c: httpx.Client) -> None:
    served = c.get("/categories", headers=bearer("tiny-key"))
    refused = exhaust(c, "tiny-key")
    assert refused.status_code == 429
    for response in (served, refused):
        assert not {*RATE_HEADERS, "retry-after"} & set(response.headers), response.headers


def probe_case_sensitive(c: httpx.Client) -> None:
    assert c.get("/categories", headers=bearer("main-key", "bearer")).status_code == 401


def probe_empty_bearer(c: httpx.Client) -> None:
    assert c.get("/categories", headers={"Authorization": "Bearer"}).status_code == 500


def probe_no_challenge(c: httpx.Client) -> None:
    response = c.get("/categories")
    assert response.status_code == 401
    assert "www-authenticate" not in response.headers


def probe_orders_without_auth(c: httpx.Client) -> None:
    assert c.get("/store/orders").status_code == 200
    assert c.get("/store/orders", headers=bearer("wrong")).status_code == 401


def probe_422(c: httpx.Client) -> None:
    response = post(c, {})
    assert response.status_code == 422
    assert "detail" in response.json()


def probe_content_type_ignored(c: httpx.Client) -> None:
    headers = {**bearer("main-key"), "Content-Type": "text/plain"}
    assert c.post("/categories", content=b'{"name": "p"}', headers=headers).status_code == 201


def probe_plain_text_name(c: httpx.Client) -> None:
    headers = {**bearer("main-key"), "Content-Type": "text/plain; charset=utf-8"}
    created = c.post("/categories", content=b"Hamsters", headers=headers)
    assert created.status_code == 201 and created.json()["name"] == "Hamsters"


def probe_status_mismatch(c: httpx.Client) -> None:
    response = post(c, {"name": 5})
    assert response.status_code == 400
    assert response.json()["status"] == 422


def probe_ids_repeat(c: httpx.Client) -> None:
    ids = [post(c, {"name": f"n{n}"}).json()["id"] for n in range(6)]
    assert len(set(ids)) < 6


def probe_non_ascii(c: httpx.Client) -> None:
    assert post(c, {"name": "Café 犬"}).json()["name"] == "Caf? ?"


def probe_list_forgets(c: httpx.Client) -> None:
    assert post(c, {"name": "forgotten"}).status_code == 201
    assert c.get("/categories", headers=bearer("main-key")).json() == []


def probe_reset_ms(c: httpx.Client) -> None:
    response = c.get("/categories", headers=bearer("main-key"))
    assert int(response.headers["x-ratelimit-reset"]) > date_of(response) * 100


def probe_reset_window_start(c: httpx.Client) -> None:
    response = c.get("/categories", headers=bearer("main-key"))
    assert int(response.headers["x-ratelimit-reset"]) <= date_of(response)


def probe_counts_double(c: httpx.Client) -> None:
    time.sleep(MINUTE - time.time() % MINUTE + 0.05)  # both requests in one fresh window
    first, second = (c.get("/categories", headers=bearer("main-key")) for _ in range(2))
    assert first.headers["x-ratelimit-remaining"] == "58"
    assert second.headers["x-ratelimit-remaining"] == "56"


def await_fresh_window() -> None:
    """Sleep until the next window starts (the double's windows are aligned to the epoch), so a
    probe has the whole window even on a busy machine."""
    time.sleep(MINUTE - time.time() % MINUTE + 0.05)


def remaining_until_refused(c: httpx.Client, key: str = "tiny-key") -> list[str]:
    """X-RateLimit-Remaining of each response, in a fresh window, up to the first refusal."""
    await_fresh_window()
    seen = []
    for _ in range(10):
        response = c.get("/categories", headers=bearer(key))
        seen.append(f"{response.status_code}:{response.headers['x-ratelimit-remaining']}")
        if response.status_code != 200:
            break
    return seen


def probe_limit_plus_one(c: httpx.Client) -> None:
    assert remaining_until_refused(c) == ["200:2", "200:1", "200:0", "200:0", "429:0"]


def probe_limit_minus_one(c: httpx.Client) -> None:
    assert remaining_until_refused(c) == ["200:2", "200:1", "429:0"]


def probe_too_short(c: httpx.Client) -> None:
    refused = exhaust(c, "tiny-key")
    assert refused.headers["retry-after"] == "1"
    time.sleep(1.1)
    assert c.get("/categories", headers=bearer("tiny-key")).status_code == 429


def probe_never_resets(c: httpx.Client) -> None:
    refused = exhaust(c, "tiny-key")
    time.sleep(int(refused.headers["retry-after"]) + 0.1)
    assert c.get("/categories", headers=bearer("tiny-key")).status_code == 429


def probe_reset_moves_ahead(c: httpx.Client) -> None:
    refused = exhaust(c, "tiny-key")
    reset = int(refused.headers["x-ratelimit-reset"])
    time.sleep(max(0.0, reset - time.time()) + 0.1)  # past the reset the first 429 announced
    again = c.get("/categories", headers=bearer("tiny-key"))
    assert again.status_code == 429
    assert int(again.headers["x-ratelimit-reset"]) >= reset + MINUTE  # a window ahead of it
    assert (
        int(again.headers["retry-after"]) >= int(again.headers["x-ratelimit-reset"]) - time.time()
    )


def probe_bad_numbers(c: httpx.Client) -> None:
    seen = [c.get("/categories", headers=bearer("main-key")) for _ in range(6)]
    remaining = [r.headers["x-ratelimit-remaining"] for r in seen]
    bad = [value for value in remaining if value in ("-1", "1e400")]
    assert len(bad) == 2 and set(bad) == {"-1", "1e400"}, remaining


def probe_shared(c: httpx.Client) -> None:
    await_fresh_window()
    exhaust(c, "tiny-key")
    assert c.get("/categories", headers=bearer("other-tiny-key")).status_code == 429


def probe_no_headers_on_429(c: httpx.Client) -> None:
    refused = exhaust(c, "tiny-key")
    assert refused.status_code == 429
    assert not set(RATE_HEADERS) & set(refused.headers)


def probe_limit_503(c: httpx.Client) -> None:
    assert exhaust(c, "tiny-key").status_code == 503


def probe_pets_missing(c: httpx.Client) -> None:
    response = c.get("/pets/1", headers=bearer("main-key"))
    assert response.status_code == 404
    assert "deprecation" not in response.headers


def probe_sunset_iso(c: httpx.Client) -> None:
    assert c.get("/pets/1", headers=bearer("main-key")).headers["sunset"] == "2028-01-01T00:00:00Z"


def probe_emoji(c: httpx.Client) -> None:
    assert post(c, {"name": "dogs 🐕"}).status_code == 500
    assert post(c, {"name": "dogs 犬"}).status_code == 201


def probe_short_names(c: httpx.Client) -> None:
    assert post(c, {"name": "x" * 21}).status_code == 400
    assert post(c, {"name": "x" * 20}).status_code == 201


def probe_nginx_in_front(c: httpx.Client) -> None:
    big = c.post(
        "/categories", json={"name": "n", "description": "x" * 2**20}, headers=bearer("main-key")
    )
    assert big.status_code == 413
    assert big.headers.get_list("server") == ["nginx"]
    assert big.headers["content-type"].startswith("text/html")
    assert "x-ratelimit-limit" not in big.headers
    small = post(c, {"name": "n", "description": "x" * 70_000})  # over the service's own 64 KiB
    assert_error(small, 413)
    assert small.headers.get_list("server") == ["uvicorn"]
    assert "x-ratelimit-limit" in small.headers


FAULT_PROBES: dict[str, Probe] = {
    "accept-any-bearer-token": probe_any_token,
    "headerless-no-day": probe_headerless,
    "scheme-case-sensitive": probe_case_sensitive,
    "empty-bearer-crashes": probe_empty_bearer,
    "no-www-authenticate": probe_no_challenge,
    "orders-without-auth": probe_orders_without_auth,
    "validation-422": probe_422,
    "content-type-ignored": probe_content_type_ignored,
    "plain-text-body-as-name": probe_plain_text_name,
    "error-status-mismatch": probe_status_mismatch,
    "ids-repeat": probe_ids_repeat,
    "non-ascii-mangled": probe_non_ascii,
    "list-forgets-new": probe_list_forgets,
    "short-name-limit": probe_short_names,
    "nginx-in-front": probe_nginx_in_front,
    "reset-in-milliseconds": probe_reset_ms,
    "reset-window-start": probe_reset_window_start,
    "remaining-counts-double": probe_counts_double,
    "limit-plus-one": probe_limit_plus_one,
    "limit-minus-one": probe_limit_minus_one,
    "retry-after-too-short": probe_too_short,
    "never-resets": probe_never_resets,
    "reset-moves-ahead": probe_reset_moves_ahead,
    "remaining-bad-numbers": probe_bad_numbers,
    "shared-counter": probe_shared,
    "no-ratelimit-headers-on-429": probe_no_headers_on_429,
    "limit-503": probe_limit_503,
    "pets-missing": probe_pets_missing,
    "sunset-iso-date": probe_sunset_iso,
    "emoji-name-500": probe_emoji,
}


# Faults whose probes cannot disturb one another share a double: startup dominates the time.
FAULT_GROUPS = [
    ("accept-any-bearer-token", "sunset-iso-date", "reset-in-milliseconds", "ids-repeat"),
    ("limit-503", "remaining-bad-numbers"),
    ("scheme-case-sensitive", "error-status-mismatch", "list-forgets-new", "emoji-name-500"),
    ("no-www-authenticate", "validation-422", "non-ascii-mangled", "pets-missing"),
    ("orders-without-auth", "content-type-ignored", "short-name-limit", "nginx-in-front"),
    ("plain-text-body-as-name", "reset-moves-ahead"),
    ("remaining-counts-double",),
    ("empty-bearer-crashes", "reset-window-start", "no-ratelimit-headers-on-429"),
    ("limit-plus-one",),
    ("limit-minus-one",),
    ("retry-after-too-short",),
    ("never-resets",),
    ("shared-counter",),
    ("headerless-no-day",),
]


@pytest.fixture(scope="module")
def sampled_doubles() -> Iterator[dict[str, str]]:
    """Base URL per sampled fault and variant; the doubles start in parallel."""
    groups = [(faults, ()) for faults in FAULT_GROUPS]
    groups += [((), variants) for variants in VARIANT_GROUPS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [
            pool.submit(start_double, KEYS, faults, variants, MINUTE) for faults, variants in groups
        ]
        started = [future.result() for future in futures]
        urls = {
            name: base_url
            for (faults, variants), (base_url, _) in zip(groups, started, strict=True)
            for name in (*faults, *variants)
        }
        try:
            yield urls
        finally:
            list(pool.map(lambda double: double[1](), started))


def test_fault_groups_cover_the_probes() -> None:
    grouped = [name for group in FAULT_GROUPS for name in group]
    assert sorted(grouped) == sorted(FAULT_PROBES)
    grouped = [name for group in VARIANT_GROUPS for name in group]
    assert sorted(grouped) == sorted(VARIANT_PROBES)


@pytest.mark.parametrize("fault", sorted(FAULT_PROBES))
def test_fault_shows_over_http(sampled_doubles: dict[str, str], fault: str) -> None:
    with httpx.Client(base_url=sampled_doubles[fault], timeout=10) as client:
        FAULT_PROBES[fault](client)


def probe_http_date(c: httpx.Client) -> None:
    refused = exhaust(c, "tiny-key")
    when = email.utils.parsedate_to_datetime(refused.headers["retry-after"]).timestamp()
    assert 1 <= when - date_of(refused) <= MINUTE + 2


def probe_charset(c: httpx.Client) -> None:
    for response in (c.get("/categories", headers=bearer("main-key")), c.get("/categories")):
        assert response.headers["content-type"] == "application/json; charset=utf-8"


def probe_gzip(c: httpx.Client) -> None:
    response = c.get("/store/orders", headers={**bearer("main-key"), "Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert isinstance(response.json(), list)  # httpx decoded it


def probe_sliding(c: httpx.Client) -> None:
    exhaust(c, "tiny-key")
    refused = c.get("/categories", headers=bearer("tiny-key"))
    time.sleep(max(0.0, int(refused.headers["x-ratelimit-reset"]) - time.time()) + 0.1)
    assert c.get("/categories", headers=bearer("tiny-key")).status_code == 200


def probe_sliding_minute(c: httpx.Client) -> None:
    """A sliding log: the refusal's Reset is the oldest request's time plus the minute, and
    waiting for it brings back one request, not the minute's three."""
    # Our clock, not the response's Date: the double is on this machine, and uvicorn's cached
    # Date lags by seconds on a busy one. The last request proves the log only when it was
    # answered before the exhaustion's requests left the minute: on a machine too busy for
    # that, the minute is let pass and the probe made again.
    for _ in range(3):
        before = time.time()
        c.get("/categories", headers=bearer("tiny-key"))
        after = time.time()
        time.sleep(1.0)
        spent_from = time.time()
        refused = exhaust(c, "tiny-key")
        reset = int(refused.headers["x-ratelimit-reset"])
        assert before + MINUTE - 1 <= reset <= after + MINUTE + 1, (before, after, reset)
        time.sleep(max(0.0, reset - time.time()) + 0.1)
        assert c.get("/categories", headers=bearer("tiny-key")).status_code == 200
        status = c.get("/categories", headers=bearer("tiny-key")).status_code
        if time.time() < spent_from + MINUTE:
            assert status == 429
            return
        time.sleep(MINUTE + 0.5)  # every request of this try out of the log
    raise AssertionError("three tries, each too slow to ask within the exhaustion's minute")


def probe_day_headers(c: httpx.Client) -> None:
    response = c.get("/categories", headers=bearer("main-key"))
    assert response.headers["x-ratelimit-limit"] == "1000"
    assert exhaust(c, "tiny-key").headers["x-ratelimit-limit"] == "50"


def probe_415(c: httpx.Client) -> None:
    headers = {**bearer("main-key"), "Content-Type": "text/plain"}
    assert_error(c.post("/categories", content=b'{"name": "p"}', headers=headers), 415)


def probe_challenge_params(c: httpx.Client) -> None:
    challenge = c.get("/categories", headers=bearer("nope")).headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert "Basic" in challenge


def probe_seeded(c: httpx.Client) -> None:
    names = [item["name"] for item in c.get("/categories", headers=bearer("main-key")).json()]
    assert names[:3] == ["Dogs", "Cats", "Rabbits"]


def probe_large_ids(c: httpx.Client) -> None:
    assert 2**62 < post(c, {"name": "big"}).json()["id"] < 2**63


def probe_ban(c: httpx.Client) -> None:
    # The ban needs the three early requests before the announced retry time: the whole window.
    await_fresh_window()
    exhaust(c, "tiny-key")
    for _ in range(3):
        response = c.get("/categories", headers=bearer("tiny-key"))
    assert response.status_code == 429
    assert int(response.headers["retry-after"]) >= 10 * MINUTE - 1


def probe_extra_fields(c: httpx.Client) -> None:
    assert "createdAt" in post(c, {"name": "extra"}).json()
    assert "requestId" in c.get("/categories").json()


def probe_json_whatever_content_type(c: httpx.Client) -> None:
    for media in ("text/plain; charset=utf-8", "application/x-www-form-urlencoded"):
        headers = {**bearer("main-key"), "Content-Type": media}
        assert c.post("/categories", content=b'{"name": "p"}', headers=headers).status_code == 201
        refused = c.post("/categories", content=b"name=p", headers=headers)
        assert_error(refused, 400)
        assert refused.json()["code"] == "parse_error"


VARIANT_PROBES: dict[str, Probe] = {
    "retry-after-http-date": probe_http_date,
    "charset-parameter": probe_charset,
    "gzip": probe_gzip,
    "sliding-window": probe_sliding,
    "sliding-minute-with-day": probe_sliding_minute,
    "day-limit-headers": probe_day_headers,
    "content-type-415": probe_415,
    "www-authenticate-params": probe_challenge_params,
    "seeded-categories": probe_seeded,
    "large-int64-ids": probe_large_ids,
    "ban-while-limited": probe_ban,
    "extra-fields": probe_extra_fields,
    "json-whatever-content-type": probe_json_whatever_content_type,
}


VARIANT_GROUPS = [
    ("retry-after-http-date", "charset-parameter", "seeded-categories", "content-type-415"),
    ("www-authenticate-params", "extra-fields", "gzip", "day-limit-headers", "large-int64-ids"),
    ("sliding-window", "json-whatever-content-type"),
    ("ban-while-limited",),
    ("sliding-minute-with-day",),
]


@pytest.mark.parametrize("variant", sorted(VARIANT_PROBES))
def test_variant_shows_over_http(sampled_doubles: dict[str, str], variant: str) -> None:
    with httpx.Client(base_url=sampled_doubles[variant], timeout=10) as client:
        VARIANT_PROBES[variant](client)


def test_the_url_log_records_every_request_target_with_its_query(tmp_path: Path) -> None:
    log = tmp_path / "urls.log"
    with (
        running_double(KEYS, minute_seconds=MINUTE, url_log=log) as base_url,
        httpx.Client(base_url=base_url, timeout=10) as client,
    ):
        client.get("/categories", params={"api_key": "main-key"})
        client.get("/pets/1", headers=bearer("main-key"))
    assert log.read_text().splitlines() == ["/v1/categories?api_key=main-key", "/v1/pets/1?"]


def test_the_double_names_itself_once(api: httpx.Client) -> None:
    assert api.get("/categories").headers.get_list("server") == ["uvicorn"]


def test_faults_and_variants_from_the_environment() -> None:
    env_double = [sys.executable, "-m", "tests.shared.double", "--port", "0", "--key", "k:free"]
    result = subprocess.run(
        env_double,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=20,
        env={"PATH": "", "PETSTORE_DOUBLE_VARIANTS": "gzip,bogus-variant"},
    )
    assert result.returncode == 2
    assert "bogus-variant" in result.stderr
