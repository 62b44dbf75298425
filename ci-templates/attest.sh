#!/usr/bin/env bash
# For the GitHub Action's `attest` input: the report folder's in-toto Statement (the checker's
# `intoto` command: the same subjects and test-result predicate `--sign-key` signs), split into
# what actions/attest takes: the predicate as a file and the subjects as a checksums file. GitHub
# then signs that Statement with the workflow's identity. Sets the step outputs `predicate-path`
# and `subject-checksums`; sets none when this job's check wrote no statement (ci-templates/check.sh names
# it only when it is this run's: a folder left by an earlier job must not be attested).
set -uo pipefail
fresh="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/petstore-conformance-statement"
if [ ! -s "$fresh" ]; then
    echo "petstore-conformance: nothing to attest: this job's check wrote no statement"
    exit 0
fi
report_dir="$(dirname "$(cat "$fresh")")"
venv="${PSC_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/petstore-conformance-venv}"
checker=petstore-conformance
if [ -x "$venv/bin/petstore-conformance" ]; then
    checker="$venv/bin/petstore-conformance"
fi
out="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/petstore-conformance-attestation"
mkdir -p "$out"
"$checker" intoto "$report_dir" > "$out/statement.json" || exit 2
python3 "$(dirname "${BASH_SOURCE[0]}")/attest.py" "$out/statement.json" "$out" || exit 2
if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'predicate-path=%s\nsubject-checksums=%s\n' \
        "$out/predicate.json" "$out/subjects.sha256" >> "$GITHUB_OUTPUT"
fi
