"""What every Python client of the zoo shares: the PETSTORE_* contract of `petstore-conformance
client` read into one request, and the loop that performs it PETSTORE_REPEAT times, prints each
result and exits non-zero when the client gave up. Each client brings only its retry policy."""

from __future__ import annotations

import email.utils
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

RETRIED_STATUSES = (429, 503)  # what a rate-limited or overloaded server answers


def retry_after_seconds(value: str) -> float:
    """Retry-After as delay-seconds or an HTTP-date (RFC 9110 10.2.3), in seconds from now:
    the retry libraries that do not read it themselves are given this."""
    if value.strip().isdigit():
        return float(value)
    return email.utils.parsedate_to_datetime(value).timestamp() - time.time()


@dataclass(frozen=True)
class Answer:
    status: int
    text: str
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Call:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None


def call() -> Call:
    create = os.environ["PETSTORE_OPERATION"] == "createCategory"
    name = os.environ.get("PETSTORE_CATEGORY_NAME", "")
    return Call(
        method="POST" if create else "GET",
        url=os.environ["PETSTORE_BASE_URL"] + "/categories",
        headers={
            "Authorization": f"Bearer {os.environ['PETSTORE_API_KEY']}",
            "Content-Type": "application/json",
        },
        body=json.dumps({"name": name}).encode() if create else None,
    )


_client = httpx.Client(timeout=30)


def send(call: Call) -> httpx.Response:
    """One try, no retry: for the clients whose retry library wraps a function."""
    return _client.request(call.method, call.url, content=call.body, headers=call.headers)


def answer(response: httpx.Response) -> Answer:
    return Answer(response.status_code, response.text, response.headers)


def run(perform: Callable[[Call], Answer], wait_for_reset: bool = False) -> None:
    """`perform` sends the call, retrying as its library does, and returns the last answer.
    `wait_for_reset`: before a repetition, wait for the Reset of a window left at Remaining 0
    (what no retry library does on its own: they act on refusals only)."""
    answer = None
    for _ in range(int(os.environ.get("PETSTORE_REPEAT", "1"))):
        if wait_for_reset and answer and answer.headers.get("X-RateLimit-Remaining") == "0":
            time.sleep(max(0.0, int(answer.headers["X-RateLimit-Reset"]) - time.time()))
        answer = perform(call())
        if answer.status >= 400:
            sys.exit(f"gave up: {answer.status} {answer.text[:200]}")
        print(answer.status, answer.text)
