"""The `petstore-reference` command line: usage errors, key sources, the access log, and the
in-process API the checker's demo uses."""

from __future__ import annotations

import httpx
import pytest

from conformance.reference.serve import start_in_thread
from tests.shared.servers import reference_args, run_reference_cli, start_reference


@pytest.mark.parametrize(
    "args,mentions",
    [
        (["--port", "0"], "no API key"),
        (["--port", "0", "--key", "k:gold"], "bad key spec"),
        (["--port", "0", "--key", "k:enterprise:0:5"], "enterprise"),
        (["--port", "0", "--key", "k"], "bad key spec"),
        (["--port", "70000", "--key", "k:free"], "port"),
        (["--port", "abc", "--key", "k:free"], "port"),
        (["--port", "0", "--minute-seconds", "0", "--key", "k:free"], "minute-seconds"),
        (["--port", "0", "--keys-file", "/nonexistent/keys.txt"], "keys-file"),
        (["--port", "0", "--key", "k:free", "--rate-limit-storage", "mongodb://x"], "storage"),
        (["--port", "0", "--key", "k:free", "--database", "/nonexistent/dir/db"], "database"),
        (
            ["--port", "0", "--key", "k:free", "--database", "postgresql://u@127.0.0.1:1/db"],
            "refused",
        ),
        (
            ["--port", "0", "--key", "k:free", "--database", "postgresql://u:pw@[::1/db"],
            "not a Post",
        ),
        (["--port", "0", "--key", "k:free", "--workers", "2"], "--database"),
        (["--port", "0", "--key", "k:free", "--no-such-option"], "unrecognized"),
    ],
)
def test_bad_options_exit_2_with_one_line(args, mentions):
    result = run_reference_cli(args)
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert mentions in lines[0], lines[0]


def test_database_errors_do_not_print_the_password():
    url = "postgresql://user:s3cr3t-pw@127.0.0.1:1/db"
    result = run_reference_cli(["--port", "0", "--key", "k:free", "--database", url])
    assert result.returncode == 2
    assert "s3cr3t-pw" not in result.stderr
    assert "postgresql://user:***@127.0.0.1:1/db" in result.stderr


def test_key_spec_errors_do_not_print_the_key():
    result = run_reference_cli(["--port", "0", "--key", "s3cr3t-value:platinum"])
    assert result.returncode == 2
    assert "s3cr3t-value" not in result.stderr


def test_keys_from_file_and_environment(reference_server, tmp_path):
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text("# operators' keys\nfile-key:pro  # trailing comment\n\n")
    server = start_reference(
        reference_args([], extra=["--keys-file", str(keys_file)]),
        env={"PETSTORE_REFERENCE_KEYS": "env-key-1:free, env-key-2:enterprise:5:50"},
    )
    try:
        with httpx.Client(base_url=server.base_url, timeout=10) as client:
            for key, limit in [("file-key", 300), ("env-key-1", 60), ("env-key-2", 5)]:
                response = client.get("/categories", headers={"Authorization": f"Bearer {key}"})
                assert response.status_code == 200, key
                assert response.headers["X-RateLimit-Limit"] == str(limit)
    finally:
        server.stop()


def test_access_log_never_shows_the_key(reference_server):
    key = "very-secret-key-0123456789"
    server = reference_server([f"{key}:free"])
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        client.get("/categories", headers={"Authorization": f"Bearer {key}"})
        client.get("/categories", params={"api_key": key})
        client.post("/categories", json={"name": key}, headers={"Authorization": f"Bearer {key}"})
        client.get("/categories", headers={"Authorization": f"Basic {key}"})
    server.stop()
    log = server.stderr_text()
    assert key not in log
    lines = [line for line in log.splitlines() if "/v1/categories" in line]
    assert len(lines) == 4, log
    assert "caller=key:" in lines[0] and " 200 " in lines[0]
    assert "api_key" not in log and "Authorization" not in log


def test_start_in_thread_serves_until_stopped():
    running = start_in_thread(["thread-key:enterprise:5:50"], minute_seconds=2)
    try:
        assert running.base_url.endswith("/v1")
        response = httpx.get(
            running.base_url + "/categories", headers={"Authorization": "Bearer thread-key"}
        )
        assert response.status_code == 200
        assert response.headers["X-RateLimit-Limit"] == "5"
    finally:
        running.stop()
    with pytest.raises(httpx.TransportError):
        httpx.get(running.base_url + "/categories", timeout=2)
