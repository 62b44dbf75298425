"""A response as the client reads it: its body read within the bounds
(`conformance.httpclient.bounds`), as a stream, in sync or async code, and turned into the
recorded `Exchange`."""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

from conformance.httpclient.bounds import (
    BODY,
    FRAMING,
    MAX_BODY_BYTES,
    BodyReader,
    BodyTooLarge,
    framing_went_past,
)
from conformance.httpclient.recording import Exchange, Recorder, Sent


@dataclass(frozen=True)
class Body:
    """A response body as read: all of it, or what came before a bound (`too_large`, the
    bound; `what` went past it: the body, or its chunked framing)."""

    content: bytes
    too_large: int = 0
    what: str = BODY


def read(response: httpx.Response) -> Body:
    """The body of a streamed response (the caller closes it)."""
    chunks, coding = _raw_body(response)
    reader = BodyReader(coding)
    try:
        for chunk in chunks:
            reader.feed(chunk)
    except BodyTooLarge as error:
        return Body(error.body, MAX_BODY_BYTES)
    except httpx.RemoteProtocolError as error:
        return _cut_framing(reader, error)
    return Body(reader.body)


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
        return Body(error.body, MAX_BODY_BYTES)
    except httpx.RemoteProtocolError as error:
        return _cut_framing(reader, error)
    finally:
        await response.aclose()
    return Body(reader.body)


def _cut_framing(reader: BodyReader, error: httpx.RemoteProtocolError) -> Body:
    """A body whose chunked framing went past its bound: what came of it, judged as cut (its
    status and headers came whole). Any other protocol error is no response."""
    bound = framing_went_past(error)
    if not bound:
        raise error
    return Body(reader.body, bound, FRAMING)


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
    return recorder.record(
        label,
        sent,
        response.status_code,
        headers,
        text,
        started_at,
        elapsed,
        too_large=body.too_large,
        too_large_what=body.what,
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
