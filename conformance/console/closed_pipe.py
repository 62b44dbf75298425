"""The output of a command whose reader may leave before it ends (`petstore-conformance | head`,
`verify --help | head -1`).

Once the reader has gone, every write to the pipe raises BrokenPipeError, pytest's own among
them: a run would stop with nothing checked and its reports would say "no verdict", a help
would end in a traceback. The reports and the exit status, not the console, are what a command
is for, so it goes on and what it would have shown is dropped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO


class SurvivingStream:
    """A text stream that drops its writes once the reader of `stream` has left."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.reader_left = False

    def write(self, text: str) -> int:
        self._attempt(self.stream.write, text)
        return len(text)

    def flush(self) -> None:
        self._attempt(self.stream.flush)

    def _attempt(self, action: Any, *args: Any) -> None:
        if self.reader_left:
            return
        try:
            action(*args)
        except BrokenPipeError:
            self.reader_left = True

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ... as the stream's
        return getattr(self.stream, name)


@contextmanager
def survived() -> Iterator[None]:
    """stdout and stderr as SurvivingStreams while the block runs (SystemExit included).
    Afterwards, a stream whose reader left points at /dev/null: the text still buffered in it
    would otherwise meet the closed pipe again at the interpreter's last flush, and print a
    traceback there."""
    streams = sys.stdout, sys.stderr
    survivors = SurvivingStream(streams[0]), SurvivingStream(streams[1])
    sys.stdout, sys.stderr = survivors
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams
        for survivor in survivors:
            survivor.flush()  # a buffered rest meets a reader that left here, not at exit
            if survivor.reader_left:
                silence(survivor.stream)


def silence(stream: TextIO) -> None:
    """Point `stream`'s file descriptor at /dev/null (Python's own recipe for a reader that
    left): what is still buffered in it then goes nowhere, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)
