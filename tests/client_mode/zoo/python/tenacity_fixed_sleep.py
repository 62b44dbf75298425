"""Faulty, a fixed 1 s sleep: tenacity with wait_fixed(1) between tries, whatever Retry-After
says and however often the server refused."""

from driver import RETRIED_STATUSES, answer, run, send
from tenacity import retry, retry_if_result, stop_after_attempt, wait_fixed


@retry(
    retry=retry_if_result(lambda answer: answer.status in RETRIED_STATUSES),
    wait=wait_fixed(1),
    stop=stop_after_attempt(4),
    retry_error_callback=lambda retry_state: retry_state.outcome.result(),
)
def perform(call):
    return answer(send(call))


run(perform)
