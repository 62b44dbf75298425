"""The HTTP client wing: the one client every request of a run goes through.

`client.py` holds `ConformanceClient`, the request API the suite uses; the pieces it uses each
have a module: the request budget (`budget.py`), requests built from their templates with the
secrets put in at send time (`templates.py`), the sessions they go out on (`sessions.py`), one
attempt of a request (`sending.py`), what every response goes through (`receiving.py`), reading
a response within the bounds (`responses.py`, `bounds.py`), a request that got no response
(`failures.py`), back-off and pacing per key (`backoff.py`), the connection (TLS trust, client
certificates, proxies: `connection.py`), the recording of every exchange (`recording.py`), the
redaction of every secret (`redaction.py`), what the service's own answers are like and a front's
refusal (`service_kind.py`), and the burst's way in (`burst_hooks.py`). Nothing here imports
another wing or the run's shell."""
