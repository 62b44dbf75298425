"""A response as the client reads it: its body read within the bounds
(`conformance.httpclient.bounds`), as a stream, in sync or async code, and turned into the
recorded `Exchange`."""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

from conformance.httpclient.bounds import MAX_BODY_BYTES, BodyReader, BodyTooLarge, read_body
from conformance.httpclient.recording import Exchange, Recorder, Sent


@dataclass(frozen=True)
class Body:
    """A response body as read: all of it, or its first MAX_BODY_BYTES (`too_large`)."""

    content: bytes
    too_large: bool


def read(response: httpx.Response) -> Body:
    """The body of a streamed response (the caller closes it)."""
    try:
        return Body(read_body(*_raw_body(response)), False)
    except BodyTooLarge as error:
        return Body(error.body, True)


async def read_async(response: httpx.Response) -> Body:
    """The body of a response streamed by an async session; the response is closed."""
    consumed = response.is_stream_consumed  # as _raw_body
    reader = BodyReader(None if consumed else response.headers.get("Content-Encoding"))
    try:
        if consumed:
            reader.feed(response.content)
        else:
            async for chunk in response.aiter_raw():
                reader.feed(chunk)
    except BodyTooLarge as error:
        return Body(error.body, True)
    finally:
        await response.aclose()
    return Body(reader.body, False)


def record(
    recorder: Recorder,
    label: str,
    request: httpx.Request,
    response: httpx.Response,
    body: Body,
    started_at: float,
    elapsed: float,
) -> Exchange:
    sent = Sent(
        request.method,
        str(request.url),
        [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw],
        request.content,
    )
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw]
    text = body.content.decode(_charset(response), errors="replace")
    too_large = MAX_BODY_BYTES if body.too_large else 0
    return recorder.record(
        label,
        sent,
        response.status_code,
        headers,
        text,
        started_at,
        elapsed,
        too_large=too_large,
    )


def _raw_body(response: httpx.Response) -> tuple[Iterable[bytes], str | None]:
    """The body's chunks as sent and their coding; a response made whole in memory (a test's
    mock transport) has only its content, already decoded."""
    if response.is_stream_consumed:
        return [response.content], None
    return response.iter_raw(), response.headers.get("Content-Encoding")


def _charset(response: httpx.Response) -> str:
    """The body's charset as httpx reads it (UTF-8 where none, or an unknown one, is named)."""
    name = response.charset_encoding or "utf-8"
    try:
        codecs.lookup(name)
    except LookupError:
        return "utf-8"
    return name
