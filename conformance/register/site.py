"""The register as a static site: `index.html` (the certified implementations, then those
verified but not certified), one page and one badge per certificate, `rejected.html` (kept
apart: the index never names a rejected package), and `register.json`, the same for machines.

Everything a package states is shown as text: escaped, control characters written out, never a
link (a target URL of `javascript:...` stays words). No script at all, a stylesheet of our own,
links only to the site's own files, and a Content-Security-Policy that forbids anything else.
"""

from __future__ import annotations

import datetime
import shutil
from dataclasses import dataclass
from html import escape
from pathlib import Path

from conformance import __version__, strict_json
from conformance.register.entries import TIME_FORMAT, Entry
from conformance.reports import badge

OWN = ("certificates", "badges")  # the folders each register run writes anew
POLICY = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'"
STYLE = """body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 80em;
  padding: 0 1em; color: #222 }
table { border-collapse: collapse; width: 100%; margin: 1em 0 2em }
th, td { border-bottom: 1px solid #ddd; padding: .35em .5em; text-align: left;
  vertical-align: top }
th { background: #f4f4f4 }
.note { color: #555 }
.proves { background: #eef7ee; padding: .5em 1em } .not { background: #fbeeee; padding: .5em 1em }
"""


class Unwritable(Exception):
    """A SITE_DIR the register will not write to; one line."""


@dataclass
class Register:
    current: list[Entry]  # the newest verified entry of each vendor's implementation
    superseded: list[Entry]
    rejected: list[dict]  # package, reason
    now: datetime.datetime
    valid_days: int

    @property
    def certificates(self) -> list[Entry]:
        return [e for e in self.current if e.reason is None]

    @property
    def not_certified(self) -> list[Entry]:
        return [e for e in self.current if e.reason is not None]

    def to_json(self) -> dict:
        return {
            "register": "petstore-conformance",
            "suite_version": __version__,
            "generated": self.now.strftime(TIME_FORMAT),
            "valid_days": self.valid_days,
            "certificates": [e.to_json() for e in self.certificates],
            "not_certified": [e.to_json() for e in self.not_certified],
            "superseded": [e.to_json() for e in self.superseded],
            "rejected": self.rejected,
        }

    def summary(self, out: Path) -> str:
        return (
            f"register {out / 'index.html'}: {len(self.certificates)} certified, "
            f"{len(self.not_certified)} verified but not certified, {len(self.superseded)} "
            f"superseded, {len(self.rejected)} rejected ({out / 'rejected.html'})"
        )


def shown(value: object) -> str:
    """Text as it may be shown: control characters written out, never acted on."""
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in str(value)
    )


def h(value: object) -> str:
    return escape(shown("–" if value is None or value == "" else value))


def prepare(out: Path) -> None:
    """SITE_DIR: new, empty, or a register written before (whose own folders are replaced)."""
    if out.exists() and not out.is_dir():
        raise Unwritable(f"--out {out}: not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "register.json").is_file():
        raise Unwritable(f"--out {out}: holds files but no register.json; give an empty folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise Unwritable(f"--out {out}: cannot write ({error.strerror or error})") from None


def page(title: str, body: str, depth: int = 0) -> str:
    up = "../" * depth
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        '<meta name="referrer" content="no-referrer">'
        f'<meta name="viewport" content="width=device-width"><title>{h(title)}</title>'
        f'<link rel="stylesheet" href="{up}style.css"></head>\n<body>\n{body}\n</body></html>\n'
    )


def name_of(entry: Entry) -> str:
    return entry.implementation or "(implementation not stated)"


def index_row(entry: Entry, certified: bool) -> str:
    cells = [
        h(entry.vendor),
        h(name_of(entry)),
        h(entry.result or entry.verdict),
        h(entry.profile),
        h(entry.plan),
        "strict" if entry.strict else "not strict",
        h(entry.suite_version),
        h(entry.interface_version),
        h((entry.time or "")[:10]),
        h(", ".join(entry.warned) or "none"),
        h(entry.expires and entry.expires[:10]) + ", or the next suite version"
        if certified
        else h(entry.reason),
        f'<img src="badges/{entry.slug}.svg" alt="badge">',
        f'<a href="certificates/{entry.slug}.html">details</a>',
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


HEADINGS = (
    "vendor", "implementation", "verdict", "profile", "plan", "strict", "suite", "interface",
    "date", "warned", "expires", "badge", "",
)  # fmt: skip


def table(rows: list[Entry], certified: bool, empty: str) -> str:
    if not rows:
        return f'<p class="note">{empty}</p>'
    headings = HEADINGS if certified else [*HEADINGS[:-3], "why not certified", *HEADINGS[-2:]]
    head = "".join(f"<th>{h}</th>" for h in headings)
    body = "".join(index_row(e, certified) for e in sorted(rows, key=lambda e: e.vendor))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def index(result: Register, title: str) -> str:
    return page(
        title,
        f"<h1>{h(title)}</h1>"
        f'<p class="note">Register of {h(result.now.strftime(TIME_FORMAT))}, by '
        f"petstore-conformance {h(__version__)}. Each entry is a package the vendor signed "
        "with a key it registered, verified by us. A certificate lasts "
        f"{result.valid_days} days from its run, or until the next version of the suite, "
        "whichever comes first; a vendor's newest run of an implementation supersedes older "
        'ones. For machines: <a href="register.json">register.json</a>.</p>'
        f'<h2 id="certified">Certified ({len(result.certificates)})</h2>'
        + table(result.certificates, True, "No certified implementation.")
        + f'<h2 id="not-certified">Verified, not certified ({len(result.not_certified)})</h2>'
        + table(result.not_certified, False, "None."),
    )


def certificate(entry: Entry) -> str:
    facts = [
        ("Vendor", entry.vendor),
        ("Implementation", name_of(entry)),
        ("Status", "certified" if entry.reason is None else f"not certified: {entry.reason}"),
        ("Verdict", entry.result or entry.verdict),
        ("Profile", entry.profile),
        ("Plan", entry.plan),
        ("Strict", "yes" if entry.strict else "no"),
        ("Suite version", entry.suite_version),
        ("Interface version", entry.interface_version),
        ("Run", f"{entry.run_id} of {entry.time}"),
        ("Expires", f"{entry.expires}, or at the next suite version, whichever comes first"),
        ("Warned (SHOULD)", ", ".join(entry.warned) or "none"),
        ("Failed", ", ".join(entry.failed) or "none"),
        ("Target checked", entry.target),
        ("Signed with", entry.key),
        ("Package", Path(entry.package).name),
    ]
    if entry.superseded_by:
        facts.append(("Superseded by", f"the run {entry.superseded_by}"))
    rows = "".join(f"<tr><th>{h(k)}</th><td>{h(v)}</td></tr>" for k, v in facts)
    return page(
        f"{entry.vendor}: {name_of(entry)}",
        f'<p><a href="../index.html">Register</a></p><h1>{h(entry.vendor)}: '
        f"{h(name_of(entry))}</h1>"
        f'<p><img src="../badges/{entry.slug}.svg" alt="badge"></p><table>{rows}</table>'
        '<div class="proves"><h2>What it proves</h2><p>The vendor holding the key it '
        "registered with us signed these reports, and nobody altered them since: the verdict "
        "follows from the requirement outcomes the checker recorded, on the plan, profile and "
        "interface version above.</p></div>"
        '<div class="not"><h2>What it does not prove</h2><p>That the target checked was the '
        "production service, or the implementation it is said to be: the vendor chose what to "
        "check. Nor that the implementation still behaves so today, after the date above. To "
        "know, run petstore-conformance against the service yourself.</p></div>",
        depth=1,
    )


def rejected_page(result: Register) -> str:
    rows = "".join(
        f"<tr><td>{h(r['package'])}</td><td>{h(r['reason'])}</td></tr>" for r in result.rejected
    )
    return page(
        "Rejected packages",
        '<h1>Rejected packages</h1><p class="note">The body\'s own record: not on the public '
        f"index. {len(result.rejected)} package(s) turned away.</p>"
        f"<table><thead><tr><th>package</th><th>reason</th></tr></thead><tbody>{rows}</tbody>"
        "</table>",
    )


def write(out: Path, result: Register, title: str) -> None:
    """The site, the folders of the last register replaced only now that all is known, so that
    an interrupted register leaves the one before it whole for as long as it can."""
    for name in OWN:
        shutil.rmtree(out / name, ignore_errors=True)
        (out / name).mkdir()
    (out / "style.css").write_text(STYLE, encoding="utf-8")
    for entry in [*result.current, *result.superseded]:
        (out / "certificates" / f"{entry.slug}.html").write_text(certificate(entry), "utf-8")
        # Our own badge, never the package's: conformant only where certified.
        said = "conformant" if entry.reason is None else "not certified"
        svg = badge.svg(entry.interface_version or "?", said)
        (out / "badges" / f"{entry.slug}.svg").write_text(svg, encoding="utf-8")
    (out / "index.html").write_text(index(result, title), encoding="utf-8")
    (out / "rejected.html").write_text(rejected_page(result), encoding="utf-8")
    text = strict_json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"
    (out / "register.json").write_text(text, encoding="utf-8")
