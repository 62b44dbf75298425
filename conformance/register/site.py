"""The register as a static site, rendered from its history (conformance.register.history):
`index.html` (the certified implementations first, then a section each for revoked, superseded
and expired certificates, and, where the body publishes them, the runs it did not certify), one
page per record with its status in words and colour and the commands to check it without us,
one badge per implementation at a URL that never changes, and `register.json`, the same for
machines. Packages, keys and signatures are laid in by conformance.register.command.

Everything a package states is shown as text: escaped, control characters written out, never a
link (a target URL of `javascript:...` stays words). No script at all, a stylesheet of our own,
links only to the site's own files, and a Content-Security-Policy that forbids anything else. So
a page cannot check its own expiry date: it states its status as of the register's date and the
date it is valid until (docs/design.md).
"""

from __future__ import annotations

import datetime
from html import escape

from conformance import __version__
from conformance.register import history
from conformance.register.entries import TIME_FORMAT
from conformance.reports import attestation, badge

POLICY = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'"
STYLE = """body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 80em;
  padding: 0 1em; color: #222 }
table { border-collapse: collapse; width: 100%; margin: 1em 0 2em }
th, td { border-bottom: 1px solid #ddd; padding: .35em .5em; text-align: left;
  vertical-align: top }
th { background: #f4f4f4 }
.note { color: #555 }
.proves { background: #eef7ee; padding: .5em 1em } .not { background: #fbeeee; padding: .5em 1em }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto }
.status { font-weight: bold; padding: .15em .5em; color: #fff; border-radius: 3px }
.certified { background: #2e7d32 } .revoked, .not-certified { background: #c62828 }
.superseded { background: #6d6d6d } .expired { background: #b35900 }
"""
SECTIONS = (
    (history.CERTIFIED, "Certified"),
    (history.REVOKED, "Revoked"),
    (history.SUPERSEDED, "Superseded"),
    (history.EXPIRED, "Expired"),
)


def shown(value: object) -> str:
    """Text as it may be shown: control characters written out, never acted on."""
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in str(value)
    )


def h(value: object) -> str:
    return escape(shown("–" if value is None or value == "" else value))


def page(title: str, body: str, depth: int = 0) -> str:
    up = "../" * depth
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        '<meta name="referrer" content="no-referrer">'
        f'<meta name="viewport" content="width=device-width"><title>{h(title)}</title>'
        f'<link rel="stylesheet" href="{up}style.css"></head>\n<body>\n{body}\n</body></html>\n'
    )


def name_of(record: dict) -> str:
    return record["implementation"] or "(implementation not stated)"


def status_mark(record: dict) -> str:
    status = record["status"]
    return f'<span class="status {status.replace(" ", "-")}">{h(status)}</span>'


def status_words(record: dict) -> str:
    """The status in words, with its dates."""
    status = record["status"]
    if status == history.REVOKED:
        revoked = record["revoked"]
        return f"revoked on {revoked['date']}: {revoked['reason']}"
    if status == history.SUPERSEDED:
        return f"superseded on {record['status_since'][:10]} by a newer certificate"
    if status == history.EXPIRED:
        return f"expired (valid until {(record['expires'] or '?')[:10]})"
    if status == history.NOT_CERTIFIED:
        return f"not certified: {record['reason']}"
    return f"certified, valid until {(record['expires'] or '?')[:10]}"


def index_row(record: dict) -> str:
    fingerprint = record["key_fingerprint"]
    cells = [
        h(record["vendor"]),
        # Beside the name, what tells look-alike names apart: the key that signed (its page too).
        f'<a href="{h(record["key"])}" title="{h(fingerprint)}">'
        f"<code>{h(fingerprint[:16])}</code></a>",
        h(name_of(record)),
        status_mark(record) + " " + h(status_words(record)),
        h(record["profile"]),
        h(record["plan"]),
        h(record["suite_version"]),
        h((record["time"] or "")[:10]),
        h(record["first_seen"][:10]),
        f'<img src="{h(record["badge"])}" alt="badge">',
        f'<a href="{h(record["page"])}">details</a>',
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


HEADINGS = ("vendor", "vendor's key", "implementation", "status", "profile", "plan", "suite",
            "run", "registered", "badge", "")  # fmt: skip


def table(rows: list[dict], empty: str) -> str:
    if not rows:
        return f'<p class="note">{empty}</p>'
    head = "".join(f"<th>{h}</th>" for h in HEADINGS)
    ordered = sorted(rows, key=lambda r: (r["vendor"], name_of(r), r["first_seen"]))
    body = "".join(index_row(r) for r in ordered)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def about(body: str, generated: datetime.datetime) -> str:
    return (
        f'<p class="note">Register of {h(body)}, as of {h(generated.strftime(TIME_FORMAT))}, '
        f"made with petstore-conformance {h(__version__)}. Each entry is a package the vendor "
        f"signed with a key it registered with {h(body)}, and {h(body)} verified. Statuses are "
        'as of that date: a certificate past its "valid until" date has expired, whatever '
        "a copy of a page says.</p>"
    )


def index(past: history.History, title: str, body: str, now: datetime.datetime, signed: bool):
    sections = ""
    for status, heading in SECTIONS:
        rows = [r for r in past.records if r["status"] == status]
        sections += f'<h2 id="{status}">{heading} ({len(rows)})</h2>' + table(rows, "None.")
    if past.failures:
        sections += (
            f'<h2 id="not-certified">Verified, not certified ({len(past.failures)})</h2>'
            + table(past.failures, "None.")
        )
    checks = (
        ' Signed by the body: <a href="checkpoint.intoto.jsonl">checkpoint.intoto.jsonl</a> '
        '(the log\'s head) with <a href="body.pub.pem">its public key</a>.'
        if signed
        else " This register is not signed."
    )
    return page(
        title,
        f"<h1>{h(title)}</h1>{about(body, now)}"
        '<p class="note">For machines: <a href="register.json">register.json</a>; every event, '
        'in order, each line naming the sha256 of the one before: <a href="log.jsonl">log.jsonl'
        f"</a>.{checks}</p>" + sections,
    )


def facts(record: dict, body: str) -> list[tuple[str, str]]:
    return [
        ("Vendor", record["vendor"]),
        ("Implementation", name_of(record)),
        ("Verdict", record["result"] or record["verdict"]),
        ("Profile", record["profile"]),
        ("Plan", record["plan"]),
        ("Strict", "yes" if record["strict"] else "no"),
        ("Suite version", record["suite_version"]),
        ("Interface version", record["interface_version"]),
        ("Run", f"{record['run_id']} of {record['time']} (the vendor's clock)"),
        ("Registered", f"{record['first_seen']} (the clock of {body})"),
        ("Valid until", f"{record['expires']}, or the next suite version, whichever is first"),
        ("Warned (SHOULD)", ", ".join(record["warned"]) or "none"),
        ("Failed", ", ".join(record["failed"]) or "none"),
        ("Target checked", record["target"]),
        ("Package sha256", record["package_sha256"]),
        ("Vendor's key fingerprint", f"{record['key_fingerprint']} (sha256 of its DER "
                                     "SubjectPublicKeyInfo)"),
    ]  # fmt: skip


def check_yourself(record: dict, signed: bool) -> str:
    """The commands a visitor runs, from the site's root, with the files it links."""
    package, key, sha = record["package"], record["key"], record["package_sha256"]
    summary = (
        f"petstore-conformance verify {record['summary']} --key body.pub.pem\n"
        if signed and record["summary"]
        else ""
    )
    kind = attestation.PAYLOAD_TYPE
    without = (
        f"echo '{sha}  {package}' | sha256sum -c\n"
        f"openssl pkey -pubin -in {key} -outform DER | sha256sum   # {record['key_fingerprint']}\n"
        f"mkdir check && unzip -q {package} -d check && cd check\n"
        "jq -r '.files | to_entries[] | \"\\(.value)  \\(.key)\"' manifest.json | sha256sum -c\n"
        "jq -r .payload conformance.intoto.jsonl | base64 -d > payload.json\n"
        "jq -r '.signatures[0].sig' conformance.intoto.jsonl | base64 -d > signature.bin\n"
        f"printf 'DSSEv1 {len(kind)} {kind} %d ' \"$(wc -c < payload.json)\" > signed.bin\n"
        "cat payload.json >> signed.bin\n"
        f"openssl pkeyutl -verify -pubin -inkey ../{key} -rawin -in signed.bin "
        "-sigfile signature.bin\n"
        "jq -r '.subject[] | \"\\(.digest.sha256)  \\(.name)\"' payload.json | sha256sum -c\n"
    )
    return (
        '<h2 id="check">Check it yourself</h2><p>From a copy of this site (its root), with '
        "petstore-conformance:</p>"
        # escape, not h: these lines are our own (digests and fixed words), newlines and all
        f"<pre>{escape(f'petstore-conformance verify {package} --key {key}')}\n"
        f"{escape(summary)}</pre>"
        "<p>Or with no petstore-conformance at all: the package's sha256, the key's "
        "fingerprint, every file against the manifest, the vendor's DSSE signature over its "
        "pre-authentication encoding (an Ed25519 key; for ECDSA P-256, <code>openssl dgst "
        "-sha256 -verify KEY -signature signature.bin signed.bin</code>), and every file the "
        "signed statement names against its signed sha256:</p>"
        f"<pre>{escape(without)}</pre>"
    )


def certificate(record: dict, body: str, now: datetime.datetime, signed: bool) -> str:
    rows = "".join(f"<tr><th>{h(k)}</th><td>{h(v)}</td></tr>" for k, v in facts(record, body))
    links = [
        f'<a href="../{h(record["package"])}">the package</a>',
        f'<a href="../{h(record["key"])}">the vendor\'s public key</a>',
    ]
    if record["summary"]:
        links.append(f'<a href="../{h(record["summary"])}">{h(body)}\'s signed verification '
                     "summary</a>")  # fmt: skip
    if record["superseded_by"]:
        links.append(f'<a href="../{h(record["superseded_by"])}">the certificate that '
                     "superseded it</a>")  # fmt: skip
    return page(
        f"{record['vendor']}: {name_of(record)}",
        f'<p><a href="../index.html">Register of {h(body)}</a></p><h1>{h(record["vendor"])}: '
        f"{h(name_of(record))}</h1>"
        f"<p>Status on {h(now.strftime('%Y-%m-%d'))}: {status_mark(record)} "
        f"{h(status_words(record))}</p>"
        f'<p><img src="../{h(record["badge"])}" alt="badge"> (this implementation\'s badge: '
        "its status now)</p>"
        f"<p>Verified by {h(body)}. Files: {'; '.join(links)}.</p><table>{rows}</table>"
        + check_yourself(record, signed)
        + '<div class="proves"><h2>What it proves</h2><p>The vendor holding the key it '
        f"registered with {h(body)} signed these reports, and nobody altered them since: the "
        "verdict follows from the requirement outcomes the checker recorded, on the plan, "
        "profile and interface version above.</p></div>"
        '<div class="not"><h2>What it does not prove</h2><p>That the target checked was the '
        "production service, or the implementation it is said to be: the vendor chose what to "
        "check. Nor that the implementation still behaves so today, after the date above. To "
        "know, run petstore-conformance against the service yourself.</p></div>",
        depth=1,
    )


def badge_svg(status: str, interface_version: str) -> str:
    return badge.svg(interface_version, status)
