#!/usr/bin/env bash
# Install petstore-conformance into its own virtual environment, for the GitHub Action and the
# GitLab CI template. PSC_SOURCE: what to install (default: the checkout this script is in);
# PSC_VENV: where (default: a folder in the runner's temporary space). On GitHub the venv's
# bin folder is added to the PATH of the steps that follow.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${PSC_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/petstore-conformance-venv}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PSC_SOURCE:-$here}"
if [ -n "${GITHUB_PATH:-}" ]; then
    echo "$venv/bin" >> "$GITHUB_PATH"
fi
echo "petstore-conformance installed in $venv"
