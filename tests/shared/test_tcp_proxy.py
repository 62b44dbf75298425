"""The test proxy itself: it adds the latency it promises, and cuts and restores a connection."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.shared.servers import reference_args, start_reference
from tests.shared.tcp_proxy import TcpProxy


@pytest.fixture(scope="module")
def upstream():
    server = start_reference(reference_args(["proxy-test-key:free"]))
    yield server
    server.stop()


def upstream_address(base_url: str) -> tuple[str, int]:
    url = httpx.URL(base_url)
    return url.host, url.port


def round_trip(client: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url, headers={"Authorization": "Bearer proxy-test-key"})
    assert response.status_code == 200
    return time.perf_counter() - started


def test_delay_is_added_each_way(upstream):
    with TcpProxy(upstream_address(upstream.base_url), delay=0.05) as proxy:
        url = proxy.url(path="/v1/categories")
        with httpx.Client() as client:
            round_trip(client, url)  # opens the connection
            kept_alive = min(round_trip(client, url) for _ in range(3))
    assert 0.1 <= kept_alive < 0.5, kept_alive


def test_cut_drops_connections_until_restored(upstream):
    with TcpProxy(upstream_address(upstream.base_url)) as proxy:
        url = proxy.url(path="/v1/categories")
        with httpx.Client() as client:
            round_trip(client, url)
            proxy.cut()
            with pytest.raises(httpx.TransportError):
                client.get(url, headers={"Authorization": "Bearer proxy-test-key"})
            proxy.restore()
            round_trip(client, url)
