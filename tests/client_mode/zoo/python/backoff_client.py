"""Good: the `backoff` library as its documentation shows it for rate limits: backoff.runtime
with the value of Retry-After where the server gives one, backoff.expo (with random_jitter)
where it does not, max_tries on both."""

import backoff
import httpx
from driver import RETRIED_STATUSES, answer, retry_after_seconds, run, send


def refused(response: httpx.Response) -> bool:
    return response.status_code in RETRIED_STATUSES


@backoff.on_predicate(
    backoff.expo,
    lambda response: refused(response) and "Retry-After" not in response.headers,
    max_tries=5,
    jitter=backoff.random_jitter,
)
@backoff.on_predicate(
    backoff.runtime,
    lambda response: refused(response) and "Retry-After" in response.headers,
    value=lambda response: retry_after_seconds(response.headers["Retry-After"]),
    max_tries=5,
    jitter=None,
)
def send_retrying(call) -> httpx.Response:
    return send(call)


run(lambda call: answer(send_retrying(call)))
