"""Keeping API keys out of everything the checker writes: the keys by label, put into a request
only at send time and replaced by `***` (or, in a shell line, by their environment variable) in
whatever is recorded, printed or reported: raw, URL-encoded, JSON-escaped (`\\u00XX` of every
character too), base64 or base64url, hex, `%XX` of every byte, HTML character references,
whatever a target echoes them as. A proxy's password is taken out the same way.

The client, the burst's own transport and the client mode's recorder all redact through
`Secrets`.
"""

from __future__ import annotations

import base64
import json as jsonlib
import re
import shlex
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

import httpx

REDACTED = "***"
HIDDEN = ""  # the label of a secret that is only taken out (a proxy's password)
INNER_MINIMUM = 8
"""Base64 characters an inner form must have: shorter ones would hide ordinary text."""
ENV_VARS = {"main": "PETSTORE_API_KEY", "spare": "PETSTORE_SPARE_API_KEY"}
"""The variables a user already has set (the checker reads them), so curl lines run as printed."""
# Bytes a shell line cannot carry as they are: C0 controls (tab and newline too: pasted into an
# interactive shell they complete or end the line) and DEL.
CONTROL_BYTES = re.compile(r"[\x00-\x1f\x7f]")


def encoded_forms(secret: str) -> set[str]:
    """The ways a secret may show up: raw, URL-encoded (path or query) or JSON-escaped; and
    base64 or base64url, hex, `%XX` of every byte or HTML character references of every
    character (a server that echoes credentials encodes them so), as URL-encoded too."""
    forms = text_forms(secret)
    raw = secret.encode("utf-8")
    coded = base64_forms(raw) | base64_forms(f"Bearer {secret}".encode()) | bytewise_forms(raw)
    for form in coded | character_reference_forms(secret) | unicode_escape_forms(secret):
        forms |= text_forms(form)
    return {form for form in forms if form}


def text_forms(secret: str) -> set[str]:
    return {
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        str(httpx.QueryParams({"k": secret}))[2:],
        jsonlib.dumps(secret)[1:-1],
        jsonlib.dumps(secret)[1:-1].replace("/", "\\/"),  # PHP's json_encode escapes "/"
    }


def base64_forms(secret: bytes) -> set[str]:
    """base64 and base64url of `secret`, padded and not, and the part of it that reads the same
    wherever the secret sits inside longer encoded text (`Bearer <key>`, a JSON document): at
    each of the three byte offsets, the characters that encode the secret's bytes alone."""
    forms: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(secret).decode("ascii")
        forms |= {whole, whole.rstrip("=")}
        for offset in range(3):
            # Shifted by `offset` bytes, the secret's own groups start where the pad ends.
            inner = encode(bytes(offset) + secret).decode("ascii")
            start = 4 if offset else 0
            end = (offset + len(secret)) // 3 * 4
            if end - start >= INNER_MINIMUM:
                forms.add(inner[start:end])
    return forms


def bytewise_forms(secret: bytes) -> set[str]:
    """Hex, and `%XX` of every byte, in either case. Each byte has its own two digits, so the
    secret's form is found as it is inside the form of any longer text."""
    lower = secret.hex()
    pairs = [lower[i : i + 2] for i in range(0, len(lower), 2)]
    percent = "".join(f"%{pair}" for pair in pairs)
    return {lower, lower.upper(), percent, percent.upper()}


def character_reference_forms(secret: str) -> set[str]:
    """HTML's numeric character reference for every character: decimal, and hex in either
    case (`&#99;`, `&#x6c;`, `&#x6C;`, `&#X6C;`)."""
    decimal = "".join(f"&#{ord(char)};" for char in secret)
    lower = "".join(f"&#x{ord(char):x};" for char in secret)
    upper = "".join(f"&#x{ord(char):X};" for char in secret)
    return {decimal, lower, upper, upper.replace("&#x", "&#X")}


def unicode_escape_forms(secret: str) -> set[str]:
    """JSON's `\\uXXXX` escape for every character (UTF-16 code units, as JSON writes a
    character beyond the BMP), hex digits in either case: a JSON reader decodes it back to the
    key."""
    units = secret.encode("utf-16-be")
    codes = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
    lower = "".join(f"\\u{code:04x}" for code in codes)
    upper = "".join(f"\\u{code:04X}" for code in codes)
    return {lower, upper}


class Secrets:
    """Knows the keys by label: puts them into templates at send time and takes them out after."""

    def __init__(self, keys: dict[str, str], hidden: Iterable[str] = ()):
        """`hidden`: other secrets (a proxy's password) to take out, never to put in."""
        self._keys = {label: secret for label, secret in keys.items() if secret}
        self._form_labels: dict[str, str] = {}
        for label, secret in self._keys.items():
            for form in encoded_forms(secret):
                self._form_labels.setdefault(form, label)
        for secret in filter(None, hidden):
            for form in encoded_forms(secret):
                self._form_labels.setdefault(form, HIDDEN)
        forms = sorted(self._form_labels, key=len, reverse=True)
        self._secret_pattern = re.compile("|".join(map(re.escape, forms))) if forms else None
        names = sorted(set(self._keys) | set(ENV_VARS))
        self._placeholder = re.compile(r"\{(" + "|".join(map(re.escape, names)) + r")\}")

    def secret(self, label: str) -> str:
        try:
            return self._keys[label]
        except KeyError:
            raise ValueError(f"no API key was given for {label!r}") from None

    def expand(self, template: str) -> str:
        """Replace `{main}` / `{spare}` by the secret; only ever done for the bytes we send."""
        return self._placeholder.sub(lambda match: self.secret(match.group(1)), template)

    def placeholders_in(self, text: str) -> list[str]:
        return [match.group(1) for match in self._placeholder.finditer(text)]

    def labels_in(self, text: str) -> list[str]:
        """Labels whose secret appears in `text` (in any encoding)."""
        if self._secret_pattern is None:
            return []
        labels = (self._form_labels[m.group(0)] for m in self._secret_pattern.finditer(text))
        return [label for label in labels if label != HIDDEN]

    def redact(self, text: str) -> str:
        if self._secret_pattern is None:
            return text
        return self._secret_pattern.sub(REDACTED, text)

    def redact_bytes(self, raw: bytes) -> bytes:
        for form in sorted(self._form_labels, key=len, reverse=True):
            raw = raw.replace(form.encode("utf-8"), REDACTED.encode())
        return raw

    def shell_word(self, text: str) -> str:
        """Quote `text` for a POSIX shell, with each secret replaced by its environment variable."""
        if self._secret_pattern is None or not self._secret_pattern.search(text):
            return shlex.quote(text)
        parts: list[str] = []
        position = 0
        for match in self._secret_pattern.finditer(text):
            parts.append(_escape_in_double_quotes(text[position : match.start()]))
            label = self._form_labels[match.group(0)]
            if label == HIDDEN:
                parts.append(REDACTED)
                position = match.end()
                continue
            variable = env_var(label)
            glued = re.match(r"\w", text[match.end() : match.end() + 1])  # "$VARx" names VARx
            parts.append("${" + variable + "}" if glued else "$" + variable)
            position = match.end()
        parts.append(_escape_in_double_quotes(text[position:]))
        return '"' + "".join(parts) + '"'


def ansi_c_quoted(text: str) -> str:
    """`text` as one bash/zsh `$'...'` word: control characters as escapes, never raw. (NUL
    cannot be written this way: such a body goes to a file.)"""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + escape_controls(escaped) + "'"


def escape_controls(text: str) -> str:
    """Control characters as `\\xHH` escapes, two hex digits each."""
    return CONTROL_BYTES.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def env_var(label: str) -> str:
    return ENV_VARS.get(label, f"PETSTORE_{label.upper()}_API_KEY")


def _escape_in_double_quotes(text: str) -> str:
    return re.sub(r'([\\"$`])', r"\\\1", text)


def redact_authorization(value: str) -> str:
    """Record only the scheme (`Bearer ***`, `***`); an empty credential is shown as it was sent."""
    scheme, space, credentials = value.partition(" ")
    if not space:
        return REDACTED if scheme else value
    if not credentials.strip():
        return value
    return f"{scheme} {REDACTED}"
