"""`exchanges.har`: every request and response of a run as an HTTP Archive (HAR 1.2), the form a
browser's network panel opens. Built from the client's recorded exchanges, which are already
redacted (`Authorization: Bearer ***`, keys replaced wherever they appeared).

A burst of more than BURST_LISTED_IN_FULL alike responses (a big plan's quota spent) is listed
where it matters: its first and last responses, every one not served, every one a check cited;
the others are counted in the log's comment, by status, rather than listed (60,000 entries made
a HAR of 61 MB). The file is written entry by entry, never held whole in memory.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Collection, Iterable
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from conformance import __version__, strict_json
from conformance.httpclient.client import RESPONSE_BODY_LIMIT

if TYPE_CHECKING:
    from conformance.httpclient.client import Exchange

HTTP_VERSION = "HTTP/1.1"  # httpx speaks HTTP/1.1 unless asked for HTTP/2, which we never do


def started(exchange: Exchange) -> str:
    moment = datetime.datetime.fromtimestamp(exchange.started_at, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def name_values(pairs: Iterable[tuple[str, str]]) -> list[dict]:
    return [{"name": name, "value": value} for name, value in pairs]


def byte_length(text: str | None) -> int:
    return len(text.encode("utf-8")) if text else 0


def request_entry(exchange: Exchange) -> dict:
    body = exchange.request_body
    entry = {
        "method": exchange.method,
        "url": exchange.url,
        "httpVersion": HTTP_VERSION,
        "cookies": [],
        "headers": name_values(exchange.request_headers.items()),
        "queryString": name_values(parse_qsl(urlsplit(exchange.url).query, True)),
        "headersSize": -1,
        "bodySize": byte_length(body),
    }
    if body is not None:
        content_type = exchange.request_header("Content-Type") or ""
        entry["postData"] = {"mimeType": content_type, "params": [], "text": body}
    return entry


def response_entry(exchange: Exchange) -> dict:
    text = exchange.response_body
    declared = exchange.header("Content-Length")
    wire_size = int(declared) if declared and declared.isdigit() else -1
    content = {"size": byte_length(text), "mimeType": exchange.header("Content-Type") or ""}
    content["text"] = text
    if len(text) >= RESPONSE_BODY_LIMIT:
        # The client keeps the first characters of a long body: say so rather than pretend.
        content["comment"] = f"body cut to its first {RESPONSE_BODY_LIMIT} characters"
    try:
        status_text = HTTPStatus(exchange.status).phrase
    except ValueError:
        status_text = ""
    return {
        "status": exchange.status,
        "statusText": status_text,
        "httpVersion": HTTP_VERSION,
        "cookies": [],
        "headers": name_values(exchange.response_headers),
        "content": content,
        "redirectURL": exchange.header("Location") or "",
        "headersSize": -1,
        "bodySize": wire_size,
    }


def entry(exchange: Exchange) -> dict:
    milliseconds = round(exchange.elapsed * 1000, 3)
    return {
        "startedDateTime": started(exchange),
        "time": milliseconds,
        "request": request_entry(exchange),
        "response": response_entry(exchange),
        "cache": {},
        # The whole time as waiting: the client measures request to response, nothing finer.
        "timings": {"send": 0, "wait": milliseconds, "receive": 0},
        "_keyLabel": exchange.key_label,  # which key ("main", "spare", "none"), never the key
        "comment": f"exchange #{exchange.id}, key {exchange.key_label}",
    }


BURST_LISTED_IN_FULL = 1_000
"""A burst of up to this many responses is listed whole; a longer one in part."""


def archive(exchanges: Iterable[Exchange], cited: Collection[int] = ()) -> dict:
    """The HAR document; entries in the order they were sent (a burst may record them out of
    order). `cited`: ids of exchanges a check cited, always listed."""
    listed, comment = selected(exchanges, cited)
    return {"log": {**log_head(comment), "entries": [entry(exchange) for exchange in listed]}}


def log_head(comment: str) -> dict:
    head: dict = {
        "version": "1.2",
        "creator": {"name": "petstore-conformance", "version": __version__},
    }
    if comment:
        head["comment"] = comment
    return head


def selected(exchanges: Iterable[Exchange], cited: Collection[int]) -> tuple[list[Exchange], str]:
    """The exchanges listed, in the order sent, and what the log's comment says of the rest."""
    ordered = sorted(exchanges, key=lambda e: (e.started_at, e.id))
    listed: list[Exchange] = []
    notes: list[str] = []
    for group in bursts_and_the_rest(ordered):
        if len(group) <= BURST_LISTED_IN_FULL or not group[0].burst:
            listed += group
            continue
        kept = [
            e
            for n, e in enumerate(group)
            if n in (0, len(group) - 1) or not 200 <= e.status < 300 or e.id in cited
        ]
        listed += kept
        notes.append(burst_note(group, kept))
    if not notes:
        return listed, ""
    return listed, (
        "Bursts listed in part (their first and last responses, every one not served, every "
        "one a check cited): " + "; ".join(notes)
    )


def bursts_and_the_rest(ordered: list[Exchange]) -> Iterable[list[Exchange]]:
    """Runs of burst exchanges with nothing else sent between them, and runs of the rest."""
    group: list[Exchange] = []
    for exchange in ordered:
        if group and group[-1].burst != exchange.burst:
            yield group
            group = []
        group.append(exchange)
    if group:
        yield group


def burst_note(group: list[Exchange], kept: list[Exchange]) -> str:
    kept_ids = {e.id for e in kept}
    left_out = Counter(e.status for e in group if e.id not in kept_ids)
    statuses = ", ".join(f"{count:,} x {status}" for status, count in sorted(left_out.items()))
    span = group[-1].started_at + group[-1].elapsed - group[0].started_at
    return (
        f"a burst of {len(group):,} responses on key {group[0].key_label} over {span:.1f} s "
        f"from {started(group[0])}: {len(kept):,} listed, {sum(left_out.values()):,} not "
        f"listed ({statuses})"
    )


def write(path: Path, exchanges: Iterable[Exchange], cited: Collection[int] = ()) -> str:
    """Write the HAR entry by entry; returns the log's comment (empty when all is listed)."""
    listed, comment = selected(exchanges, cited)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        head = strict_json.dumps(log_head(comment), ensure_ascii=False, separators=(",", ":"))
        out.write('{"log":' + head[:-1] + ',"entries":[')
        for n, exchange in enumerate(listed):
            out.write("," if n else "")
            out.write(strict_json.dumps(entry(exchange), ensure_ascii=False, separators=(",", ":")))
        out.write("]}}\n")
    return comment
