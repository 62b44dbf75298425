"""`petstore-reference`: serve the bundled reference implementation of the Pet Store interface.

On start it prints exactly one line to stdout, `petstore-reference listening on
http://HOST:PORT/v1`, with the real port (useful with `--port 0`). Errors in the options are
reported in one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from conformance import __version__
from conformance.reference.app import Settings
from conformance.reference.auth import KeyRing
from conformance.reference.limiting import BanRule, RequestLimits, StorageUnavailable, storage_uri
from conformance.reference.plans import KeySpecError, parse_key_spec
from conformance.reference.serve import bind_socket, serve, serve_workers, write_line
from conformance.reference.storage import DatabaseUnavailable, category_store

PROG = "petstore-reference"
KEYS_ENVIRONMENT_VARIABLE = "PETSTORE_REFERENCE_KEYS"


class UsageError(Exception):
    """A problem with the options; reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Serve the reference implementation of the Pet Store interface v1.0.0 "
        "under /v1.",
        epilog=f"Keys may also come from the environment variable {KEYS_ENVIRONMENT_VARIABLE} "
        "(KEY:PLAN specs separated by blanks or commas), which keeps them out of the process "
        "list. At least one key is required.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=_port, default=8000, help="port to bind; 0 picks a free one (default 8000)"
    )
    parser.add_argument(
        "--database",
        metavar="PATH_OR_URL",
        help="where categories are kept: a SQLite file (also sqlite:///PATH), or "
        "postgresql://USER@HOST:PORT/DB to share them between instances; in memory when absent",
    )
    parser.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="KEY:PLAN",
        help="an API key and its plan: KEY:free, KEY:pro, KEY:business or "
        "KEY:enterprise:RPM:RPD; repeat for more keys",
    )
    parser.add_argument(
        "--keys-file",
        metavar="FILE",
        help="a file with one KEY:PLAN per line; blank lines and # comments are ignored",
    )
    parser.add_argument(
        "--minute-seconds",
        type=_positive_int,
        default=60,
        metavar="N",
        help="length of the rate-limit minute in whole seconds (the day is 1440 of them); "
        "60 in production, shorter for tests and demos",
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="uvicorn worker processes (default 1). With more than one, each worker keeps its "
        "own memory:// rate-limit counters, so limits are exact across workers only with "
        "--rate-limit-storage redis://HOST:PORT; --database is then required too",
    )
    parser.add_argument(
        "--rate-limit-storage",
        default="memory://",
        metavar="URI",
        help="where rate-limit counters live: memory:// (default) or redis://HOST:PORT",
    )
    parser.add_argument(
        "--ban-after",
        type=_positive_int,
        metavar="N",
        help="rule 5: ban a key that sends N requests while it is limited (before the "
        "Retry-After it was given has passed); off unless given, with --ban-seconds",
    )
    parser.add_argument(
        "--ban-seconds",
        type=_positive_int,
        metavar="S",
        help="how long a ban lasts; during it every request of the key is a 429 key_banned",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _read_keys_file(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise UsageError(f"cannot read --keys-file {path!r}: {reason}") from None
    specs = []
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if text:
            specs.append(text)
    return specs


def _key_specs(options: argparse.Namespace) -> list[str]:
    specs = list(options.key)
    if options.keys_file:
        specs += _read_keys_file(options.keys_file)
    specs += [spec for spec in re.split(r"[\s,]+", os.environ.get(KEYS_ENVIRONMENT_VARIABLE, ""))]
    return [spec for spec in specs if spec]


async def _check_storage(uri: str, minute_seconds: int) -> None:
    await RequestLimits(uri, minute_seconds).open()


async def _check_database(database: str | None) -> None:
    """Open the database once before serving: a bad one is a usage error, and its schema is
    created here, before any worker needs it."""
    store = category_store(database)
    await store.open()
    await store.close()


def settings_from(options: argparse.Namespace) -> Settings:
    specs = _key_specs(options)
    if not specs:
        raise UsageError(
            f"no API key: give --key KEY:PLAN, --keys-file FILE or {KEYS_ENVIRONMENT_VARIABLE}"
        )
    try:
        keys = KeyRing.from_keys(parse_key_spec(spec) for spec in specs)
    except KeySpecError as exc:
        raise UsageError(str(exc)) from None
    try:
        storage_uri(options.rate_limit_storage)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if options.workers > 1 and not options.database:
        raise UsageError(
            "--workers above 1 needs --database FILE or postgresql://… (memory is per worker)"
        )
    if (options.ban_after is None) != (options.ban_seconds is None):
        raise UsageError("--ban-after and --ban-seconds go together")
    ban = BanRule(options.ban_after, options.ban_seconds) if options.ban_after else None
    return Settings(
        keys=keys,
        minute_seconds=options.minute_seconds,
        database=options.database,
        rate_limit_storage=options.rate_limit_storage,
        ban=ban,
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        options = build_parser().parse_args(argv)
        settings = settings_from(options)
        try:
            asyncio.run(_check_storage(settings.rate_limit_storage, settings.minute_seconds))
        except StorageUnavailable as exc:
            raise UsageError(f"rate-limit storage unavailable: {exc}") from None
        try:
            asyncio.run(_check_database(settings.database))
        except DatabaseUnavailable as exc:
            raise UsageError(f"cannot open --database: {exc}") from None
        try:
            sock = bind_socket(options.host, options.port)
        except OSError as exc:
            raise UsageError(
                f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}"
            ) from None
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2

    if options.workers > 1 and settings.rate_limit_storage.startswith("memory"):
        print(
            f"{PROG}: warning: memory:// rate limits are counted per worker; "
            "use --rate-limit-storage redis://HOST:PORT for exact limits",
            file=sys.stderr,
        )
    try:
        if options.workers > 1:
            serve_workers(settings, sock, options.workers, write_line)
            return 0
        if not serve(settings, sock, write_line):
            print(f"{PROG}: error: the server failed to start", file=sys.stderr)
            return 1
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
