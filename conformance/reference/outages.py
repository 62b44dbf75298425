"""One log line when a service the reference needs (Redis, the database) stops answering, and
one when it answers again: an outage under load would otherwise write a line per request."""

from __future__ import annotations

import logging

logger = logging.getLogger("petstore.reference")


class OutageLog:
    def __init__(self, service: str) -> None:
        self.service = service
        self.down = False

    def failed(self, reason: str) -> None:
        if not self.down:
            self.down = True
            logger.warning("%s unavailable: %s", self.service, reason)

    def answered(self) -> None:
        if self.down:
            self.down = False
            logger.warning("%s answers again", self.service)
