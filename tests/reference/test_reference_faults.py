"""What the reference does when Redis or PostgreSQL goes away mid-run and comes back, and when
it is told to stop with requests in flight.

- Redis away: every request is refused (fail closed) with 503 `limits_unavailable`, an Error
  body, Retry-After and the rate-limit headers; nothing is counted, so no count is lost and no
  request gets through over the limit; service resumes without a restart.
- PostgreSQL away: GET and POST /categories are 503 `storage_unavailable` with the same
  headers; what other endpoints need is still served; no category answered 201 is lost.
- SIGTERM: requests in flight are finished and answered before the process exits.
- A fault of its own (an exception nothing answers): a 500 Error with the same headers, the
  traceback logged, and the connection serves on.

Redis and PostgreSQL "go away" behind a TCP proxy that drops every connection and refuses new
ones until it is restored; the services themselves, shared with others, are never touched. A
Redis crash is a private redis-server, killed and started again.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime

import httpx
import pytest

from conformance.reference.app import Settings, create_app
from conformance.reference.auth import KeyRing, key_digest
from conformance.reference.plans import PLANS
from conformance.reference.serve import start_app_in_thread
from conformance.reference.sqlite_storage import SqliteCategoryStore
from tests.shared.inflight import HalfSentPost, stop_with_request_in_flight, wait_until_admitted
from tests.shared.private_redis import PrivateRedis
from tests.shared.servers import assert_error, rate_limit_headers
from tests.shared.services import (
    POSTGRES_ADDRESS,
    REDIS_ADDRESS,
    forget_redis_keys,
    postgres_url,
    temporary_postgres_database,
)
from tests.shared.tcp_proxy import TcpProxy

RECOVERY_DEADLINE_SECONDS = 30.0


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_refused_with_headers(response: httpx.Response, code: str) -> dict:
    """A 503 the document's rules still hold for: Error body, Retry-After, rate-limit headers
    (Remaining 0 when nothing was admitted), Reset not before the server's own clock."""
    body = assert_error(response, 503)
    assert body["code"] == code, body
    assert 1 <= int(response.headers["Retry-After"]) <= 60, response.headers
    _, _, reset = rate_limit_headers(response)
    assert reset >= parsedate_to_datetime(response.headers["Date"]).timestamp() - 1
    return body


def poll_until_served(send: Callable[[], httpx.Response], code: str) -> httpx.Response:
    """Send until the answer is a 2xx, within the deadline; every answer before is the 503."""
    deadline = time.monotonic() + RECOVERY_DEADLINE_SECONDS
    while True:
        response = send()
        if response.is_success:
            return response
        assert_refused_with_headers(response, code)
        assert time.monotonic() < deadline, "no recovery within the deadline"
        time.sleep(0.1)


@pytest.fixture
def fresh_key() -> Iterator[str]:
    key = f"fault-{secrets.token_hex(8)}"
    yield key
    forget_redis_keys(key_digest(key))  # its counters in the shared Redis, nobody else's


@pytest.mark.redis
def test_redis_away_fails_closed_and_resumes_without_a_restart(reference_server, fresh_key):
    limit = 12
    with TcpProxy(REDIS_ADDRESS) as proxy:
        server = reference_server(
            [f"{fresh_key}:enterprise:{limit}:1000"],
            minute_seconds=600,  # one window for the whole test, however slow the machine
            rate_limit_storage=proxy.url("redis"),
        )
        with httpx.Client(base_url=server.base_url, timeout=10) as client:
            served = 0
            for _ in range(3):
                assert client.get("/categories", headers=auth(fresh_key)).status_code == 200
                served += 1

            proxy.cut()
            refused = [
                client.get("/categories", headers=auth(fresh_key)),
                client.post("/categories", json={"name": "x"}, headers=auth(fresh_key)),
                client.get("/pets/1", headers=auth(fresh_key)),
                client.get("/no/such/path", headers=auth(fresh_key)),
                client.get("/categories"),  # no key: counted per address, in Redis too
            ]
            for response in refused:
                assert_refused_with_headers(response, "limits_unavailable")
                assert rate_limit_headers(response)[1] == 0

            proxy.restore()
            first = poll_until_served(
                lambda: client.get("/categories", headers=auth(fresh_key)), "limits_unavailable"
            )
            served += 1
            # Nothing was counted while Redis was away, and nothing counted before was lost.
            assert rate_limit_headers(first)[1] == limit - served

            while (response := client.get("/categories", headers=auth(fresh_key))).is_success:
                served += 1
            assert assert_error(response, 429)["code"] == "rate_limited"
    assert served == limit
    log = server.stderr_text()
    assert log.count("rate-limit storage unavailable") == 1, log[-3000:]
    assert log.count("rate-limit storage answers again") == 1, log[-3000:]


@pytest.fixture
def private_redis(tmp_path) -> Iterator[PrivateRedis]:
    try:
        redis_server = PrivateRedis(tmp_path)
    except FileNotFoundError as exc:  # like the shared services: required in CI
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{exc}, and CI=true requires it", pytrace=False)
        pytest.skip(str(exc))
    with redis_server:
        yield redis_server


def test_a_redis_that_crashes_and_restarts_is_used_again(reference_server, private_redis):
    """A real crash, not a cut: the restarted Redis has lost its loaded scripts and its
    connections, and must be taken up again all the same; with persistence, no count is lost."""
    key, limit = "crash-key", 6
    server = reference_server(
        [f"{key}:enterprise:{limit}:1000"],
        minute_seconds=600,
        rate_limit_storage=private_redis.url,
    )
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        for _ in range(2):
            assert client.get("/categories", headers=auth(key)).status_code == 200
        private_redis.kill()
        refused = client.get("/categories", headers=auth(key))
        assert_refused_with_headers(refused, "limits_unavailable")
        private_redis.start()
        first = poll_until_served(
            lambda: client.get("/categories", headers=auth(key)), "limits_unavailable"
        )
        assert rate_limit_headers(first)[1] == limit - 3
        served = 3
        while (response := client.get("/categories", headers=auth(key))).is_success:
            served += 1
        assert response.status_code == 429
    assert served == limit


@pytest.mark.postgres
def test_postgres_away_is_a_503_and_loses_no_category(reference_server, fresh_key):
    with temporary_postgres_database() as name, TcpProxy(POSTGRES_ADDRESS) as proxy:
        server = reference_server(
            [f"{fresh_key}:pro"], database=postgres_url(name, ("127.0.0.1", proxy.port))
        )
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            created = [
                client.post("/categories", json={"name": f"kept {n}"}, headers=auth(fresh_key))
                for n in range(3)
            ]
            assert [response.status_code for response in created] == [201] * 3

            proxy.cut()
            assert_refused_with_headers(
                client.get("/categories", headers=auth(fresh_key)), "storage_unavailable"
            )
            assert_refused_with_headers(
                client.post("/categories", json={"name": "lost"}, headers=auth(fresh_key)),
                "storage_unavailable",
            )
            # What needs no database is still served.
            assert client.get("/pets/1", headers=auth(fresh_key)).status_code == 200

            proxy.restore()
            listed = poll_until_served(
                lambda: client.get("/categories", headers=auth(fresh_key)), "storage_unavailable"
            )
            # Every category answered 201 is there; the POST answered 503 was not stored.
            assert listed.json() == [response.json() for response in created]
            again = client.post("/categories", json={"name": "after"}, headers=auth(fresh_key))
            assert again.status_code == 201, again.text
            assert client.get("/categories", headers=auth(fresh_key)).json()[-1] == again.json()
    log = server.stderr_text()
    assert log.count("category storage unavailable") == 1, log[-3000:]
    assert log.count("category storage answers again") == 1, log[-3000:]


def test_sigterm_finishes_the_request_in_flight(reference_server, tmp_path):
    database = tmp_path / "drain.sqlite3"
    key = "drain-key"
    server = reference_server([f"{key}:enterprise:1000:10000"], database=database)
    held = HalfSentPost(server.base_url, key, "drained 🛁")
    wait_until_admitted(server.base_url, key)

    status, body = stop_with_request_in_flight(server.process, server.base_url, held)

    assert status == 201, body
    assert body["name"] == "drained 🛁"
    server.process.wait(timeout=15)  # it stops by itself once the request is answered
    restarted = reference_server([f"{key}:enterprise:1000:10000"], database=database)
    with httpx.Client(base_url=restarted.base_url, timeout=10) as client:
        assert client.get("/categories", headers=auth(key)).json() == [body]


class _FaultyStore(SqliteCategoryStore):
    """A store with a fault of the reference's own: listing raises what no handler expects."""

    async def version(self) -> None:
        return None  # read every time, so that every GET meets the fault

    async def list(self) -> list:
        raise RuntimeError("a fault in the listing")


def test_a_fault_of_its_own_is_a_500_error_and_the_connection_serves_on(caplog):
    """An exception nothing answers is a 500 with the Error body and the rate-limit headers, its
    traceback logged; the connection stays usable for the next request."""
    key = "fault-" + secrets.token_urlsafe(12)
    settings = Settings(keys=KeyRing.from_keys([(key, PLANS["pro"])]))
    app = create_app(settings, access_log=False, categories=_FaultyStore(None))
    connections = set()  # each answer's connection, by the client's own address on it
    with start_app_in_thread(app) as server, httpx.Client(base_url=server.base_url) as client:
        for _ in range(2):
            response = client.get(f"{server.base_url}/categories", headers=auth(key))
            body = assert_error(response, 500)
            assert body["code"] == "internal_error", body
            rate_limit_headers(response)
            connections.add(response.extensions["network_stream"].get_extra_info("client_addr"))
        served = client.get(f"{server.base_url}/store/orders", headers=auth(key))
        assert served.status_code == 200, served.text
        connections.add(served.extensions["network_stream"].get_extra_info("client_addr"))
    assert len(connections) == 1, connections  # not closed after a 500
    assert "RuntimeError: a fault in the listing" in caplog.text
