"""The bundled reference (a correct service) behind a real nginx with `limit_req`, as operations
teams put one in front of staging: one cause, named, in both of nginx's forms (issue 15, 3)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.shared.checker_runs import CheckerRun, new_keys, run_command
from tests.shared.nginx import running_nginx
from tests.shared.servers import reference_args, start_reference

pytestmark = [pytest.mark.nginx, pytest.mark.slow]

# A stock limit per client address: ten a second, ten more in a burst; a conformance run's own
# pace passes, its exhaustion burst does not. The body-size limit is nginx's stock 1 MiB too.
LIMIT_ZONE = "limit_req_zone $binary_remote_addr zone=api:1m rate=10r/s;"
MINUTE_SECONDS = 3


@contextmanager
def reference_behind_nginx(tmp_path: Path, keys: tuple[str, str], extra: str) -> Iterator[str]:
    reference = start_reference(
        reference_args([f"{key}:free" for key in keys], minute_seconds=MINUTE_SECONDS)
    )
    upstream = urlsplit(reference.base_url).netloc
    limit = f"limit_req zone=api burst=10 nodelay; {extra}"
    location = f"location / {{ {limit} proxy_pass http://{upstream}; }}"
    try:
        config = "{}\nserver {{ listen 127.0.0.1:{}; {} }}".format
        with running_nginx(
            tmp_path / "nginx", lambda ports: config(LIMIT_ZONE, ports[0], location)
        ) as nginx:
            yield f"http://127.0.0.1:{nginx.ports[0]}/v1"
    finally:
        reference.stop()


def checked_behind_nginx(tmp_path: Path, extra: str = "") -> CheckerRun:
    keys = new_keys()
    with reference_behind_nginx(tmp_path, keys, extra) as base_url:
        run = run_command(base_url, keys, tmp_path / "report")
    texts = [run.output, *(p.read_text(errors="replace") for p in run.report_dir.rglob("*.*"))]
    assert not any(key in text for key in keys for text in texts), "an API key in the output"
    return run


def hints_of(run: CheckerRun, requirement: str) -> str:
    entry = next(e for e in run.statement["requirements"] if e["id"] == requirement)
    return "\n".join(entry.get("hints", []))


def blocks_of(run: CheckerRun) -> list[str]:
    """The console's failed-requirement blocks, in the order printed."""
    return run.output.split("failed requirements:", 1)[1].split("\n\n")


def test_a_stock_limit_req_in_front_is_one_cause_named_first(tmp_path: Path) -> None:
    """nginx refuses with 503 and its HTML page: LIM-429-WHEN-EXCEEDED, naming the front and
    when it refused; what those 503s kept from a judgement is blocked by it, not failed."""
    run = checked_behind_nginx(tmp_path)
    failed = run.statement["failed_requirements"]
    assert run.status == 1, run.describe()
    assert "LIM-429-WHEN-EXCEEDED" in failed and len(failed) <= 2, run.describe()
    assert "LIM-429-WHEN-EXCEEDED (MUST)" in blocks_of(run)[0], run.describe()
    hint = hints_of(run, "LIM-429-WHEN-EXCEEDED")
    assert "refusal by a limiter in front of the service" in hint, run.describe()
    assert "the stock error page of nginx" in hint
    assert "while the service's own headers still said X-RateLimit-Remaining" in hint
    assert "limit_req_status 429" in hint
    assert "probably failed on this input" not in run.output
    assert "in front of the service" in blocks_of(run)[0], run.describe()


def test_a_limit_req_answering_429_is_named_refusing_before_the_quota(tmp_path: Path) -> None:
    run = checked_behind_nginx(tmp_path, "limit_req_status 429;")
    assert run.status == 1, run.describe()
    assert "LIM-HEADERS-PRESENT" in run.statement["failed_requirements"], run.describe()
    hint = hints_of(run, "LIM-HEADERS-PRESENT")
    assert "refusal by a limiter in front of the service" in hint, run.describe()
    assert "the front refuses before the plan's quota is spent" in hint
