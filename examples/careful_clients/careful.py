"""A careful Pet Store client in the standard library only, as `petstore-conformance client`
runs it: it honours Retry-After (seconds or HTTP-date), backs off exponentially with jitter,
gives up after five tries, never repeats a 400 or 401, and waits for the Reset when told
Remaining 0 before it repeats the operation."""

import email.utils
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request

BASE, KEY, TRIES = os.environ["PETSTORE_BASE_URL"], os.environ["PETSTORE_API_KEY"], 5


def seconds_to_wait(retry_after: str | None, attempt: int) -> float:
    """RFC 9110 10.2.3: delay-seconds or an HTTP-date; without it, our own exponential back-off
    (1 s, 2 s, 4 s ...) with +-25 % jitter, so that many clients do not come back at once."""
    if retry_after is None:
        return 2**attempt * random.uniform(0.75, 1.25)
    if retry_after.strip().isdigit():
        return int(retry_after) + random.uniform(0, 0.2)
    return email.utils.parsedate_to_datetime(retry_after).timestamp() - time.time() + 0.05


def send(operation: str) -> tuple[int, dict, bytes]:
    create = operation == "createCategory"
    body = json.dumps({"name": os.environ.get("PETSTORE_CATEGORY_NAME", "")}).encode()
    request = urllib.request.Request(
        f"{BASE}/categories",
        data=body if create else None,
        method="POST" if create else "GET",
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def perform(operation: str) -> dict:
    for attempt in range(TRIES):
        status, headers, body = send(operation)
        if status < 400:
            print(status, body.decode())
            return headers
        if status not in (429, 503) or attempt == TRIES - 1:  # a 400 or 401 would come again
            sys.exit(f"gave up after {attempt + 1} tries: {status} {body.decode()[:200]}")
        time.sleep(max(0.0, seconds_to_wait(headers.get("Retry-After"), attempt)))


headers = {}
for _ in range(int(os.environ.get("PETSTORE_REPEAT", "1"))):
    if headers.get("X-RateLimit-Remaining") == "0":  # the window is spent: wait for its Reset
        time.sleep(max(0.0, int(headers["X-RateLimit-Reset"]) - time.time()))
    headers = perform(os.environ["PETSTORE_OPERATION"])
