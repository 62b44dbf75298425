"""Good, and never retrying: a client without a retry layer (an SDK generated from the OpenAPI
description, say): one request per operation, the error handed to its caller. It may: no MUST
requires a retry; what it never shows (its waits) is said, not failed."""

from driver import answer, run, send

run(lambda call: answer(send(call)))
