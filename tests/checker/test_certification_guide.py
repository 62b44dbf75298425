"""docs/certification.md, run as written: its `sh` blocks, in order, in an empty folder, with
nothing but the installed commands, openssl and this clone (for the test double). Then what
the guide says: its `text` blocks appear in what the commands printed, register.json holds what
the guide shows, and the register of night 1 opens in Chromium with Acme certified, that of
night 3 with Acme's first certificate superseded and its second revoked, Bolt verified but not
certified, and neither rejected package anywhere."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checker.test_command import clean_environment
from tests.checker.test_report_browser import screenshots
from tests.shared.browser import Browser

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "certification.md"
TIMEOUT = 600

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```$", GUIDE.read_text(encoding="utf-8"), re.M | re.S)


def run_guide(folder: Path) -> subprocess.CompletedProcess:
    script = "set -euo pipefail\n" + "\n".join(blocks("sh"))
    bin_dir = str(Path(sys.executable).parent)
    environment = clean_environment(CLONE=str(ROOT), PATH=f"{bin_dir}:{os.environ['PATH']}")
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=folder,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the stand-ins it starts are stopped with it, whatever happens
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, output)


def test_the_certification_guide_runs_as_written_and_shows_what_it_says(tmp_path):
    finished = run_guide(tmp_path)
    assert finished.returncode == 0, finished.stdout[-4000:]
    for block in blocks("text"):
        for line in block.splitlines():
            said = line.split("...")[0].rstrip()
            assert said in finished.stdout, (
                f"the guide says {said!r}; it printed:\n" + (finished.stdout[-4000:])
            )
    site = tmp_path / "site"
    assert sorted(p.name for p in site.iterdir()) == [
        "badges", "body.pub.pem", "certificates", "checkpoint.intoto.jsonl", "index.html",
        "keys", "log.jsonl", "packages", "register.json", "style.css", "summaries",
    ]  # fmt: skip
    assert len((tmp_path / "rejections.jsonl").read_text().splitlines()) == 2
    with Browser.start(tmp_path) as browser:
        night1 = browser.open(tmp_path / "night1" / "index.html")
        assert [row[:4] for row in rows(night1, "certified")] == [
            ["Acme Pets", "Acme Store 2.3", "certified", "day"]
        ]
        index = browser.open(site / "index.html")
        assert rows(index, "certified") == []
        assert [row[:4] for row in rows(index, "revoked")] == [
            ["Acme Pets", "Acme Store 2.3", "revoked", "full"]
        ]
        assert [row[:4] for row in rows(index, "superseded")] == [
            ["Acme Pets", "Acme Store 2.3", "superseded", "day"]
        ]
        others = rows(index, "not-certified")
        assert [row[:2] for row in others] == [["Bolt Pets", "Bolt API 1.0"]]
        assert "failed AUTH-WWW-AUTHENTICATE" in " ".join(others[0])
        text = index.evaluate("document.body.innerText")
        assert "forged" not in text and "tampered" not in text and "Acme Store 9" not in text
        assert "Pet Registry Board" in text
        assert not index.errors() and not night1.errors()
        index.screenshot(screenshots(tmp_path) / "certification-guide-index.png")


def rows(index, section: str) -> list[list[str]]:
    """The rows of an index section: each cell's text (the key's left out), the status cell's
    first word."""
    found = index.evaluate(
        f"[...document.querySelectorAll('#{section} + table tbody tr')]"
        ".map(r => [...r.cells].map(c => c.textContent))"
    )
    # Beside each vendor's name, the fingerprint of the key that signed: look-alikes told apart.
    assert all(re.fullmatch(r"[0-9a-f]{16}", row[1]) for row in found), found
    return [[row[0], row[2], row[3].split()[0] if section != "not-certified" else row[3],
             *row[4:]] for row in found]  # fmt: skip
