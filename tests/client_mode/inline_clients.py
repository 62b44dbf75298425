"""Tiny clients for the client mode's own tests (the zoo of real ones is tests/client_mode/zoo/):
each performs PETSTORE_OPERATION with httpx, the way its name says."""

from __future__ import annotations

import sys
from pathlib import Path

PREAMBLE = """
import email.utils, os, sys, time
import httpx
base, key = os.environ["PETSTORE_BASE_URL"], os.environ["PETSTORE_API_KEY"]
operation, name = os.environ["PETSTORE_OPERATION"], os.environ["PETSTORE_CATEGORY_NAME"]
headers = {"Authorization": f"Bearer {key}"}
client = httpx.Client(timeout=10)

def send():
    if operation == "createCategory":
        return client.post(base + "/categories", json={"name": name}, headers=headers)
    return client.get(base + "/categories", headers=headers)
"""

# Honours Retry-After (seconds or HTTP-date), doubles its own wait without one, waits for the
# Reset after Remaining 0, gives up after five retries.
CAREFUL = (
    PREAMBLE
    + """
def wait(response, attempt):
    given = response.headers.get("Retry-After")
    if given is None:
        return 0.25 * 2 ** attempt
    if given.isdigit():
        return int(given)
    return max(0.0, email.utils.parsedate_to_datetime(given).timestamp() - time.time())

for _ in range(int(os.environ.get("PETSTORE_REPEAT", "1"))):
    for attempt in range(6):
        response = send()
        if response.status_code not in (429, 503) or attempt == 5:
            break
        time.sleep(wait(response, attempt))
    if response.status_code >= 400:
        sys.exit(f"gave up: {response.status_code}")
    if response.headers.get("X-RateLimit-Remaining") == "0":
        time.sleep(max(0.0, int(response.headers["X-RateLimit-Reset"]) - time.time()))
    print(response.status_code)
"""
)

# No retry layer at all (an SDK generated from the OpenAPI description, say): one request per
# operation, exit 1 on any error.
NO_RETRY = (
    PREAMBLE
    + """
for _ in range(int(os.environ.get("PETSTORE_REPEAT", "1"))):
    response = send()
    print(response.status_code)
    if response.status_code >= 400:
        sys.exit(1)
"""
)

# Retries at once, five times.
HAMMERING = (
    PREAMBLE
    + """
for attempt in range(6):
    response = send()
    if response.status_code not in (429, 503):
        break
print(response.status_code)
sys.exit(0 if response.status_code < 400 else 1)
"""
)

# Honours Retry-After but never gives up; writes the pid of a child it starts, which must be
# stopped with it.
FOREVER = (
    PREAMBLE
    + """
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
open(os.environ["CHILD_PID_FILE"], "w").write(str(child.pid))
while True:
    response = send()
    if response.status_code < 400:
        break
    time.sleep(int(response.headers.get("Retry-After", "1")))
"""
)


# Performs its operation, then lists the categories (to show what it made): the scenario is
# about the first request, not the last.
THEN_LISTS = (
    PREAMBLE
    + """
response = send()
print(response.status_code)
listing = client.get(base + "/categories", headers=headers)
print(len(listing.json()))
sys.exit(0 if response.status_code < 400 else 1)
"""
)

# Lists the categories whatever it is asked to do.
LISTS_ONLY = (
    PREAMBLE
    + """
response = client.get(base + "/categories", headers=headers)
print(response.status_code)
"""
)


def command(tmp_path: Path, source: str, name: str) -> str:
    """The command line that runs `source` with this interpreter."""
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return f"{sys.executable} {path}"
