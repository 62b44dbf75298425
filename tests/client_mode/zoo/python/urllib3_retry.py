"""Good: urllib3's own `Retry` as its documentation describes it: status_forcelist with 429 and
503, respect_retry_after_header (seconds and HTTP-date), an exponential backoff_factor with
jitter, a bounded total; POST allowed, since a 429 or 503 means the request was not processed."""

import urllib3
from driver import RETRIED_STATUSES, Answer, run
from urllib3.util import Retry

RETRY = Retry(
    total=5,
    backoff_factor=0.5,
    backoff_jitter=0.25,
    status_forcelist=RETRIED_STATUSES,
    allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"POST"},
    respect_retry_after_header=True,
    raise_on_status=False,
)


def performer(retry: Retry):
    """Sends a call through a pool whose every request retries by `retry`."""
    http = urllib3.PoolManager(retries=retry, timeout=30)

    def perform(call) -> Answer:
        response = http.request(call.method, call.url, body=call.body, headers=call.headers)
        return Answer(response.status, response.data.decode(), response.headers)

    return perform


if __name__ == "__main__":
    run(performer(RETRY))
