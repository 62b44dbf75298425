"""Faulty, a long floor taken for Retry-After: tenacity with the wait of its documentation's
example, wait_exponential(multiplier=1, min=4, max=10) (4 s, 4 s, 4 s, 8 s ... whatever the
server says), stop_after_attempt(3), retrying 429 and 503 answers. Every wait of 1 or 2 s is
over when it comes back; a Retry-After of 6 s is not."""

from driver import RETRIED_STATUSES, answer, run, send
from tenacity import retry, retry_if_result, stop_after_attempt, wait_exponential


@retry(
    retry=retry_if_result(lambda answer: answer.status in RETRIED_STATUSES),
    wait=wait_exponential(multiplier=1, min=4, max=10),
    stop=stop_after_attempt(3),
    retry_error_callback=lambda retry_state: retry_state.outcome.result(),
)
def perform(call):
    return answer(send(call))


run(perform)
