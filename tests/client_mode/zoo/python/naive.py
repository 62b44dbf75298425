"""Faulty, hand-written: a retry loop of the kind written in a hurry, with one mistake each,
chosen by the first argument:

- ignores-http-date: reads Retry-After with int(), and on a date falls back to its own back-off
- no-limit: honours every wait, but never gives up while the server keeps refusing
- retries-401: retries every error status, 400 and 401 included ("maybe a glitch"), three tries
- hammering: polls every 0.1 s until the limit lifts, whatever Retry-After says

Apart from its mistake it behaves: exponential back-off (1, 2, 4 s) without Retry-After, and
waits for the Reset before repeating an operation."""

import itertools
import sys
import time

from driver import RETRIED_STATUSES, Answer, answer, retry_after_seconds, run, send

FAULT = sys.argv[1]
TRIES = {"no-limit": None, "hammering": 20, "retries-401": 3}.get(FAULT, 5)


def worth_retrying(status: int) -> bool:
    return status >= 400 if FAULT == "retries-401" else status in RETRIED_STATUSES


def seconds_to_wait(retry_after: str | None, attempt: int) -> float:
    if FAULT == "hammering":
        return 0.1
    if retry_after is not None and FAULT == "ignores-http-date":
        try:
            return int(retry_after)
        except ValueError:
            # The mistake: a date is taken for no Retry-After at all, and its back-off (1, 2,
            # 4 s) used instead: against a date 6 s on, two retries come early by seconds
            # however busy the machine, and no third (the hammering threshold) before it.
            return 2.0**attempt
    elif retry_after is not None:
        return max(0.0, retry_after_seconds(retry_after))
    return 2.0**attempt


def perform(call) -> Answer:
    for attempt in itertools.count():
        last = answer(send(call))
        if not worth_retrying(last.status) or attempt + 1 == TRIES:
            return last
        time.sleep(seconds_to_wait(last.headers.get("Retry-After"), attempt))


run(perform, wait_for_reset=True)
