"""Go programs for the tests that run them (the zoo's Go client, the Pet Store app on gin): built
once per session, offline, in GOPATH mode on Debian's packages of their libraries (.ci/run
installs them); no module is downloaded."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import _missing

GOPATH = Path("/usr/share/gocode")


def built(
    source: Path, binary: Path, packages: dict[str, str], extra_gopath: Path | None = None
) -> Path:
    """`source` built into `binary`; `packages` maps each import path it needs to the Debian
    package that ships it (`extra_gopath`: a GOPATH of the tests' own, searched first, for a
    library Debian does not package). Skips (fails under CI=true) where go or a package is
    missing."""
    missing = [deb for path, deb in packages.items() if not (GOPATH / "src" / path).is_dir()]
    if shutil.which("go") is None or missing:
        _missing(
            f"go and its packages are not installed (apt-get install golang-go {' '.join(missing)})"
        )
    gopath = f"{extra_gopath}:{GOPATH}" if extra_gopath else str(GOPATH)
    offline = {"GOPATH": gopath, "GO111MODULE": "off", "GOFLAGS": "", "GOPROXY": "off"}
    subprocess.run(
        ["go", "build", "-o", str(binary), "."],
        cwd=source,
        env={**os.environ, **offline, "GOCACHE": str(binary.parent / "cache")},
        check=True,
        capture_output=True,
        timeout=300,
    )
    return binary
