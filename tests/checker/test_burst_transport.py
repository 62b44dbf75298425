"""The burst's own transport (`conformance.burst.transport`) against a real socket on the
loopback that answers with scripted bytes: keep-alive, both body framings, a server that closes,
responses that cannot be parsed, the budget, the first 429, and no key in what is recorded; the
same of a wave sent from two processes; interim responses skipped, and every part of a response
bounded (its head, its chunk framing and trailers, its body, its interim responses)."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import re
import socket
import socketserver
import threading
from collections.abc import Callable

import pytest

from conformance.burst import processes as burst_processes
from conformance.burst.spender import send_wave
from conformance.burst.waves import Wave
from conformance.httpclient.bounds import (
    FRAMING,
    H11_EVENT_BYTES,
    MAX_BODY_BYTES,
    MAX_FRAMING_BYTES,
    MAX_INTERIM_RESPONSES,
)
from conformance.httpclient.budget import BudgetExhausted
from conformance.httpclient.client import (
    RESPONSE_BODY_LIMIT,
    ConformanceClient,
    TargetUnreachable,
)
from conformance.judging.response_checks import error_object_problem

KEY = "sk-transport-Secret+/=7"
Respond = Callable[[int], tuple[bytes, bool]]
"""The n-th request's (1-based) response bytes, and whether to close the connection after."""


def response(status: int = 200, *, chunked: bool = False, extra: str = "") -> bytes:
    body = b'[{"id":1,"name":"Dogs"}]'
    head = (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        f"X-RateLimit-Limit: 100\r\nX-RateLimit-Remaining: 50\r\nX-RateLimit-Reset: 2000000000\r\n"
    )
    if status == 429:
        head += "Retry-After: 30\r\n"
    if chunked:
        framed = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        return (head + extra + "Transfer-Encoding: chunked\r\n\r\n").encode() + framed
    return (head + extra + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


class ScriptedServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, respond: Respond):
        super().__init__(("127.0.0.1", 0), ScriptedHandler)
        self.respond = respond
        self.requests: list[bytes] = []
        self.connections = 0
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class ScriptedHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: ScriptedServer = self.server  # type: ignore[assignment]
        sock: socket.socket = self.request
        with server.lock:
            server.connections += 1
        pending = b""
        while True:
            while b"\r\n\r\n" not in pending:
                try:
                    data = sock.recv(65536)
                except OSError:  # the client closed on unread bytes (a bound)
                    return
                if not data:
                    return
                pending += data
            request, pending = pending.split(b"\r\n\r\n", 1)
            with server.lock:
                server.requests.append(request)
                number = len(server.requests)
            answer, close = server.respond(number)
            try:
                sock.sendall(answer)
            except OSError:  # the client read no further (a bound), and closed
                return
            if close:
                sock.shutdown(socket.SHUT_RDWR)
                return


@pytest.fixture
def scripted():
    servers: list[ScriptedServer] = []

    def start(respond: Respond) -> ScriptedServer:
        server = ScriptedServer(respond)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def client_for(server: ScriptedServer, **options) -> ConformanceClient:
    return ConformanceClient(server.base_url, {"main": KEY}, response_seconds=5.0, **options)


def test_one_kept_alive_connection_reads_both_body_framings_and_records_no_key(scripted):
    server = scripted(lambda n: (response(chunked=n % 2 == 0), False))
    with client_for(server) as client:
        sent = send_wave(client, "main", Wave(6, 1))
    assert [e.status for e in sent] == [200] * 6
    assert server.connections == 1  # keep-alive: one connection for the whole wave
    assert all(e.json() == [{"id": 1, "name": "Dogs"}] for e in sent)  # chunked too
    assert sent[0].header("x-ratelimit-remaining") == "50"
    assert all(f"Bearer {KEY}".encode() in raw for raw in server.requests)  # sent, and ...
    recorded = json.dumps([e.to_dict() for e in sent])
    assert KEY not in recorded  # ... never recorded, nor in a curl line
    assert sent[0].request_headers["Authorization"] == "Bearer ***"
    assert "$PETSTORE_API_KEY" in sent[0].curl()
    # The same request, recorded thousands of times in a big burst, is stored once.
    assert sent[5].request_headers is sent[0].request_headers


def test_a_wave_stops_at_its_first_429(scripted):
    server = scripted(lambda n: (response(429 if n >= 5 else 200), False))
    with client_for(server) as client:
        sent = send_wave(client, "main", Wave(20, 1))
        assert client.requests_sent == 5
    assert [e.status for e in sent] == [200] * 4 + [429]
    assert len(server.requests) == 5  # nothing on the key after its 429


def test_the_budget_holds_for_the_burst_too(scripted):
    server = scripted(lambda n: (response(), False))
    with client_for(server, max_requests=3) as client, pytest.raises(BudgetExhausted):
        send_wave(client, "main", Wave(5, 1))
    assert len(server.requests) == 3


def test_connection_close_and_a_silent_close_open_a_new_connection(scripted):
    # The 1st response says it closes; after the 2nd the server closes unannounced, so the
    # 3rd request meets a closed connection: resent once, on a new one, and counted twice.
    def respond(n: int) -> tuple[bytes, bool]:
        return response(extra="Connection: close\r\n" if n == 1 else ""), n in (1, 2)

    server = scripted(respond)
    with client_for(server) as client:
        sent = send_wave(client, "main", Wave(3, 1))
        assert client.requests_sent == 4
    assert [e.status for e in sent] == [200] * 3
    assert server.connections == 3


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n[1,2", "not valid HTTP/1.1"),  # cut short
        (b"hello there\r\n\r\n", "not valid HTTP/1.1"),
        (b"", "closed the connection without a response"),
    ],
    ids=["body-cut-short", "not-http", "nothing"],
)
def test_a_response_that_cannot_be_read_is_an_error_not_a_success(scripted, answer, reason):
    server = scripted(lambda n: (answer, True))
    with client_for(server) as client, pytest.raises(TargetUnreachable) as raised:
        send_wave(client, "main", Wave(3, 1))
    assert reason in str(raised.value)
    assert str(raised.value).startswith(f"cannot reach {server.base_url}/categories: ")
    assert KEY not in str(raised.value)


def test_through_a_proxy_the_burst_sends_through_httpx():
    with ConformanceClient("http://x.test/v1", {"main": KEY}, proxy="http://127.0.0.1:9") as c:
        assert c.burst.burst_request("/categories", "main") is None
    with ConformanceClient("http://x.test/v1", {"main": KEY}) as c:
        request = c.burst.burst_request("/categories", "main")
    assert request is not None and request[1].url == "http://x.test/v1/categories"


def test_a_server_that_does_not_answer_is_named_after_the_timeout(scripted):
    server = scripted(lambda n: (b"", False))  # reads the request, says nothing
    client = ConformanceClient(server.base_url, {"main": KEY}, response_seconds=0.3)
    with client, pytest.raises(TargetUnreachable, match=r"no response within 0\.3 s"):
        send_wave(client, "main", Wave(1, 1))


def test_the_burst_records_a_response_as_the_client_does(scripted):
    server = scripted(lambda n: (response(chunked=True, extra="Set-Cookie: a=1\r\n"), False))
    with client_for(server) as client:
        usual = client.get("/categories")
        burst = send_wave(client, "main", Wave(1, 1))[0]
    assert burst.id == usual.id + 1  # numbered in one sequence
    assert (burst.status, burst.response_headers, burst.response_body) == (
        usual.status,
        usual.response_headers,
        usual.response_body,
    )
    assert (burst.method, burst.url, burst.key_label) == (usual.method, usual.url, "main")
    assert burst.request_headers["User-Agent"] == usual.request_headers["User-Agent"]


# A wave from several processes (`conformance.burst.processes`): the same promises.


def test_a_wave_from_two_processes_is_recorded_here_in_full_and_with_no_key(scripted):
    server = scripted(lambda n: (response(chunked=n % 2 == 0), False))
    with client_for(server) as client:
        sent = send_wave(client, "main", Wave(40, 4, 2))
        assert client.requests_sent == 40  # counted exactly: what was reserved and not sent is back
    assert [e.status for e in sent] == [200] * 40
    assert len(server.requests) == 40 and server.connections == 4
    assert len({e.id for e in sent}) == 40
    assert KEY not in json.dumps([e.to_dict() for e in sent])
    assert sent[0].json() == [{"id": 1, "name": "Dogs"}]


def test_two_processes_stop_together_at_the_first_429(scripted):
    server = scripted(lambda n: (response(429 if n >= 11 else 200), False))
    with client_for(server) as client:
        sent = send_wave(client, "main", Wave(400, 4, 2))
        assert client.requests_sent == len(server.requests)
    assert [e.status for e in sent].count(200) == 10
    # after the first 429, only what the four connections already had in flight
    assert len(server.requests) <= 10 + 4


def test_a_budget_short_of_the_wave_and_its_resends_sends_it_from_one_process(
    scripted, monkeypatch
):
    forks: list[str] = []
    get_context = multiprocessing.get_context
    monkeypatch.setattr(
        burst_processes.multiprocessing,
        "get_context",
        lambda method: forks.append(method) or get_context(method),
    )
    server = scripted(lambda n: (response(), False))
    with client_for(server, max_requests=44) as client:  # 40, and a resend per connection
        assert len(send_wave(client, "main", Wave(40, 4, 2))) == 40
        assert client.requests_sent == 40
    assert forks == ["fork"]
    with client_for(server, max_requests=43) as client:
        assert len(send_wave(client, "main", Wave(40, 4, 2))) == 40
    assert forks == ["fork"]  # no process started: one sent it, up to the budget
    with client_for(server, max_requests=30) as client, pytest.raises(BudgetExhausted):
        send_wave(client, "main", Wave(40, 4, 2))
    assert len(server.requests) == 40 + 40 + 30


def test_a_process_whose_response_cannot_be_read_fails_the_wave_in_one_line(scripted):
    server = scripted(lambda n: (b"hello there\r\n\r\n", True) if n == 7 else (response(), False))
    with client_for(server) as client, pytest.raises(TargetUnreachable) as raised:
        send_wave(client, "main", Wave(40, 4, 2))
    assert "not valid HTTP/1.1" in str(raised.value) and "\n" not in str(raised.value)
    assert KEY not in str(raised.value)
    assert len(client.exchanges) >= 6  # what was answered is recorded all the same


def test_a_429s_error_body_longer_than_what_a_report_shows_is_judged_whole(scripted):
    """An Error object of 8 KB is valid JSON: ERR-429-BODY reads all of it, the report shows
    the first 4,000 characters."""
    error = {"code": "rate_limited", "message": "m" * 8000, "status": 429}
    body = json.dumps(error).encode()
    head = "HTTP/1.1 429 X\r\nContent-Type: application/json\r\nRetry-After: 30\r\n"
    answer = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    server = scripted(lambda n: (answer, False))
    with client_for(server) as client:
        refused = send_wave(client, "main", Wave(1, 1))[0]
    assert refused.json() == error
    assert error_object_problem(refused) is None
    assert len(refused.response_body) == RESPONSE_BODY_LIMIT < len(body)


EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
HEAD_429 = (
    b"HTTP/1.1 429 X\r\nContent-Type: application/json\r\nRetry-After: 30\r\n"
    b"X-RateLimit-Limit: 100\r\nX-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 2000000000\r\n"
)
# The same bounds hold on both paths a response may come by: the burst's own transport, and
# the client's httpx (a burst through a proxy takes httpx too).
PATHS = ["burst", "client"]


def answers(client: ConformanceClient, path: str, requests: int) -> list:
    """The responses to `requests` GETs on `path`; a burst's wave stops at its first 429."""
    if path == "burst":
        return send_wave(client, "main", Wave(requests, 1))
    return [client.get("/categories", retry_on_429=False) for _ in range(requests)]


@pytest.mark.parametrize("path", PATHS)
def test_interim_responses_are_skipped_for_the_final_one(scripted, path):
    """RFC 9110 section 15.2: a 103 (and a 100) before the answer is not the answer."""
    server = scripted(lambda n: (CONTINUE + EARLY_HINTS * n + response(chunked=n == 2), False))
    with client_for(server) as client:
        sent = answers(client, path, 3)
    assert [e.status for e in sent] == [200] * 3
    assert all(e.header("X-RateLimit-Remaining") == "50" for e in sent)
    assert all(e.header("Link") is None for e in sent)  # the hints' headers are not the answer's
    assert server.connections == 1


def test_more_interim_responses_than_the_bound_are_no_response_in_a_burst(scripted):
    server = scripted(lambda n: (EARLY_HINTS * (MAX_INTERIM_RESPONSES + 1) + response(), False))
    with client_for(server) as client, pytest.raises(TargetUnreachable) as raised:
        send_wave(client, "main", Wave(1, 1))
    assert f"more than {MAX_INTERIM_RESPONSES} interim responses" in str(raised.value)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nX-Filler: " + b"a" * (2 * MAX_FRAMING_BYTES),
        b"HTTP/1.1 200 OK\r\n" + b"X-Filler: aaaaaaaaaa\r\n" * (2 * MAX_FRAMING_BYTES // 22),
        EARLY_HINTS * (2 * MAX_FRAMING_BYTES // len(EARLY_HINTS)),
    ],
    ids=["one-line", "many-fields", "endless-interim"],
)
def test_a_head_past_its_bound_is_no_response(scripted, path, head):
    server = scripted(lambda n: (head, True))
    with client_for(server) as client, pytest.raises(TargetUnreachable) as raised:
        answers(client, path, 1)
    # The burst counts interim responses; httpx's path, their bytes, and the deadline on one
    # response where a busy machine parses them slower than it (a second test run beside this).
    bounded = (
        rf"a response head.* of more than \d+ bytes|more than {MAX_INTERIM_RESPONSES} interim"
        r"|no whole response within [\d.]+ s"
    )
    assert re.search(bounded, str(raised.value)), raised.value


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "framing",
    [
        b"1;" + b"x" * (3 * MAX_FRAMING_BYTES),  # one chunk-size line, its extension endless
        b"1;e=" + b"x" * 90_000 + b"\r\n{\r\n",  # chunks, each line under h11's own bound
        b"1\r\n{\r\n0\r\n" + b"X-Trailer: aaaaaaaa\r\n" * (3 * MAX_FRAMING_BYTES // 21),
    ],
    ids=["endless-extension", "long-extensions", "endless-trailers"],
)
def test_a_429_whose_chunk_framing_never_ends_is_judged_cut_not_unreachable(
    scripted, path, framing
):
    if framing.startswith(b"1;e="):
        framing *= 3 * MAX_FRAMING_BYTES // len(framing)
    answer = HEAD_429 + b"Transfer-Encoding: chunked\r\n\r\n" + framing
    server = scripted(lambda n: (answer, False))
    with client_for(server) as client:
        [refused] = answers(client, path, 1)
    assert refused.status == 429 and refused.too_large_what == FRAMING, refused.summary()
    assert refused.too_large in (MAX_FRAMING_BYTES, H11_EVENT_BYTES)
    assert refused.header("Retry-After") == "30"
    assert refused.header("X-Trailer") is None  # trailers are read and bounded, never kept
    assert error_object_problem(refused) == refused.too_large_text()
    assert "chunked framing" in refused.too_large_text()


@pytest.mark.parametrize("path", PATHS)
def test_a_429_body_past_the_bound_is_judged_cut_not_unreachable(scripted, path):
    answer = HEAD_429 + f"Content-Length: {2 * MAX_BODY_BYTES}\r\n\r\n".encode()
    answer += b"x" * (2 * MAX_BODY_BYTES)
    server = scripted(lambda n: (answer, False))
    with client_for(server) as client:
        [refused] = answers(client, path, 1)
    assert refused.status == 429 and refused.too_large == MAX_BODY_BYTES
    assert f"a body of more than {MAX_BODY_BYTES} bytes" in error_object_problem(refused)


@pytest.mark.parametrize("path", PATHS)
def test_a_gzip_body_is_decoded_as_the_client_decodes_it(scripted, path):
    """The burst asks for gzip, as every request of the run does: a refusal's Error object
    sent gzipped is judged as the JSON it is, a success's shown decoded."""
    error = {"code": "rate_limited", "message": "m" * 8000, "status": 429}
    coded = gzip.compress(json.dumps(error).encode())
    head = HEAD_429 + b"Content-Encoding: gzip\r\n"
    refusal = head + f"Content-Length: {len(coded)}\r\n\r\n".encode() + coded
    listing = gzip.compress(b"[" + b'{"id":1,"name":"Dogs"},' * 1000 + b'{"id":2,"name":"x"}]')
    success = response(extra="Content-Encoding: gzip\r\n").split(b"Content-Length")[0]
    success += f"Content-Length: {len(listing)}\r\n\r\n".encode() + listing
    server = scripted(lambda n: (success if n == 1 else refusal, False))
    with client_for(server) as client:
        sent = answers(client, path, 2)
    assert [e.status for e in sent] == [200, 429]
    assert sent[0].response_body.startswith('[{"id":1,"name":"Dogs"}')
    assert sent[1].json() == error and error_object_problem(sent[1]) is None


def answered(body: bytes, extra: str = "") -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}"
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


LISTING = b'[{"id":1,"name":"Dogs"}]'
LONG = b"[" + b" " * RESPONSE_BODY_LIMIT + b"]"
GZIP = "Content-Encoding: gzip\r\n"


@pytest.mark.parametrize(
    ("body", "extra", "cut"),
    [
        (LISTING, "", False),
        (LONG, "", True),  # only its start is kept
        (gzip.compress(LISTING), GZIP, False),  # decoded whole
        (gzip.compress(LONG), GZIP, True),  # decoded, and only its start kept
        (b"not decoded here", "Content-Encoding: br\r\n", True),
    ],
    ids=["whole", "longer-than-kept", "gzip", "gzip-longer-than-kept", "brotli"],
)
def test_a_success_whose_body_is_not_kept_whole_says_so(scripted, body, extra, cut):
    """A burst keeps a success's body up to what a report shows, decoded where it is gzip or
    deflate: the exchange says when that is not the body (no check reads it as the listing)."""
    server = scripted(lambda n: (answered(body, extra), False))
    with client_for(server) as client:
        [sent] = send_wave(client, "main", Wave(1, 1))
    assert sent.body_cut is cut
