"""Make the examples of docs/failure.md: a real run of the checker against the test double with
two seeded faults, its console, and screenshots of its HTML report in headless Chromium.

    python docs/make_failure_example.py      # from the repository root; about a minute

Writes docs/failure/console.txt, docs/failure/report-top.png and docs/failure/report-evidence.png.
The double answers every rate-limit header as a float (`X-RateLimit-Limit: 60.0`, a MUST
failure) and marks its answers `Deprecation: true` (a SHOULD warning); its minute is 2 s long.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.shared.double, run from the repository root

from tests.shared.double import running_double  # noqa: E402

OUT = REPO / "docs" / "failure"
FAULTS = ["headers-as-floats", "deprecation-true"]
MAIN, SPARE = "sk-example-main-7f3a91", "sk-example-spare-2c64e0"
WINDOW = "1280,1100"
RUN_SECONDS = 600
# The failed requirement's evidence, opened, at the top of the window: the page is moved up
# under it (a headless screenshot of a scrolled page leaves the top of the window blank).
OPEN_THE_EVIDENCE = """<script>addEventListener('load', () => {
  const evidence = document.querySelector('details');
  evidence.open = true;
  const top = evidence.closest('tr').getBoundingClientRect().top;
  document.body.style.marginTop = `${8 - top}px`;
})</script>"""


def run_checker(folder: Path) -> str:
    """The checker's console (stdout), run in `folder` against the faulty double."""
    with running_double([f"{MAIN}:free", f"{SPARE}:free"], faults=FAULTS) as base_url:
        command = [sys.executable, "-m", "conformance.cli", "--base-url", base_url]
        command += ["--api-key", MAIN, "--spare-api-key", SPARE, "--plan", "free"]
        done = subprocess.run(
            command, cwd=folder, capture_output=True, text=True, timeout=RUN_SECONDS
        )
    if done.returncode != 1:
        raise SystemExit(f"expected exit 1 (not conformant), got {done.returncode}:\n{done.stderr}")
    # The double's port and the temporary folder change from run to run.
    return done.stdout.replace(base_url, "http://127.0.0.1:PORT/v1").replace(str(folder), "DIR")


def screenshot(page: Path, png: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Debian's chromium for the screenshots")
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        + ["--virtual-time-budget=5000", f"--window-size={WINDOW}", f"--screenshot={png}"]
        + [page.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        console = run_checker(folder)
        (OUT / "console.txt").write_text(console, encoding="utf-8")
        report = folder / "reports" / "report.html"
        screenshot(report, OUT / "report-top.png")
        scrolled = folder / "reports" / "report-evidence.html"
        scrolled.write_text(report.read_text(encoding="utf-8") + OPEN_THE_EVIDENCE, "utf-8")
        screenshot(scrolled, OUT / "report-evidence.png")
    print(f"wrote {OUT}/console.txt, report-top.png, report-evidence.png")


if __name__ == "__main__":
    main()
