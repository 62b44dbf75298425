"""Node packages for the tests that run Node: installed from a folder's lock file when its
node_modules is missing (as .ci/run does), one installer at a time among the xdist workers."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

from tests.conftest import _missing


def installed(folder: Path) -> Path:
    """`folder`, its packages installed; skips (fails under CI=true) without node and npm."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        _missing("node and npm are not installed")
    with open(folder / "node_modules.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "node_modules").is_dir():
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=folder,
                check=True,
                timeout=300,
            )
    return folder
