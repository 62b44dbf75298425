"""Faulty, retries at once: urllib3's `Retry` with Retry-After switched off and no backoff
(someone found the waits slowed the tests down), two retries."""

from driver import RETRIED_STATUSES, run
from urllib3.util import Retry
from urllib3_retry import performer

RETRY = Retry(
    total=2,
    backoff_factor=0,
    status_forcelist=RETRIED_STATUSES,
    allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"POST"},
    respect_retry_after_header=False,
    raise_on_status=False,
)
run(performer(RETRY))
