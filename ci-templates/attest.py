"""For ci-templates/attest.sh: `attest.py STATEMENT OUTDIR` writes an in-toto Statement's
predicate to OUTDIR/predicate.json and its subjects to OUTDIR/subjects.sha256 (`sha256  name`,
one a line, as sha256sum writes them), the inputs actions/attest takes
(`predicate-path`, `subject-checksums`).
Standard library only: it runs on whatever python3 the CI image has."""

import json
import re
import sys
from pathlib import Path

SHA256 = re.compile(r"[0-9a-f]{64}")
# A subject's name goes on one line of the checksums file: no line breaks, no leading space.
NAME = re.compile(r"[^\s/][^\n\r/]*")


def split(statement, out):
    lines = []
    for subject in statement["subject"]:
        name, digest = subject["name"], subject["digest"]["sha256"]
        if not NAME.fullmatch(name) or not SHA256.fullmatch(digest):
            raise ValueError(f"a subject this script will not write: {name!r}")
        lines.append(f"{digest}  {name}\n")
    (out / "subjects.sha256").write_text("".join(lines), encoding="utf-8")
    predicate = json.dumps(statement["predicate"], indent=2, ensure_ascii=False)
    (out / "predicate.json").write_text(predicate + "\n", encoding="utf-8")


def main(argv):
    if len(argv) != 3:
        print("usage: attest.py STATEMENT OUTDIR", file=sys.stderr)
        return 2
    try:
        statement = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        split(statement, Path(argv[2]))
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"attest.py: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
