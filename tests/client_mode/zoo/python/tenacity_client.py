"""Good: tenacity as its documentation recommends for remote services: wait_exponential_jitter
(exponential waits plus a little jitter) combined with a wait that honours Retry-After,
stop_after_attempt, and retry only on 429 and 503 answers."""

import httpx
from driver import RETRIED_STATUSES, answer, retry_after_seconds, run, send
from tenacity import retry, retry_if_result, stop_after_attempt, wait_exponential_jitter
from tenacity.wait import wait_base


class wait_retry_after(wait_base):
    """The Retry-After of the last answer (delay-seconds or HTTP-date), else `fallback`."""

    def __init__(self, fallback: wait_base):
        self.fallback = fallback

    def __call__(self, retry_state) -> float:
        value = retry_state.outcome.result().headers.get("Retry-After")
        return self.fallback(retry_state) if value is None else retry_after_seconds(value)


def last_answer(retry_state) -> httpx.Response:
    return retry_state.outcome.result()  # gave up: the caller sees the last 429 or 503


@retry(
    retry=retry_if_result(lambda response: response.status_code in RETRIED_STATUSES),
    wait=wait_retry_after(wait_exponential_jitter(multiplier=1, max=10, jitter=0.25)),
    stop=stop_after_attempt(5),
    retry_error_callback=last_answer,
)
def send_retrying(call) -> httpx.Response:
    return send(call)


run(lambda call: answer(send_retrying(call)))
