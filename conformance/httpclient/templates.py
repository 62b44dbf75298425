"""Requests made from their templates: a test names a key by its label ("main") or by a
placeholder (`"bearer {main}"`), and the secret is put in here, at the last moment, into a
request that is sent and never recorded as such; the base URL joined, the default headers
(User-Agent, Accept-Encoding) set, a JSON body encoded by hand.
"""

from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass
from typing import Any

import httpx

from conformance.httpclient.bounds import ACCEPT_ENCODING
from conformance.httpclient.redaction import Secrets

NO_KEY = "none"


class _Unset:
    """Marks `json` as not given, so that `json=None` can still send the JSON literal null."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


@dataclass
class Prepared:
    """A request ready to send, secrets already expanded; never recorded as such."""

    label: str
    method: str
    url: httpx.URL
    headers: dict[str, str]
    json: Any
    content: bytes | str | None


class Templates:
    """Expands a request's templates into a `Prepared` one, and builds it for httpx."""

    def __init__(self, base_url: str, secrets: Secrets, user_agent: str, allow_key_in_url: bool):
        self.base_url = base_url
        self.user_agent = user_agent
        self._secrets = secrets
        self._allow_key_in_url = allow_key_in_url

    def default_headers(self) -> dict[str, str]:
        return {"User-Agent": self.user_agent, "Accept-Encoding": ACCEPT_ENCODING}

    def prepare(
        self,
        method: str,
        path: str,
        key: str | None,
        authorization: str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        json: Any = UNSET,
        content: bytes | str | None = None,
    ) -> Prepared:
        templates: list[str] = [path]
        request_headers: dict[str, str] = {}
        if authorization is not None:
            request_headers["Authorization"] = authorization
        elif key is not None:
            self._secrets.secret(key)  # fail early and clearly on an unknown label
            request_headers["Authorization"] = "Bearer {" + key + "}"
        for name, value in (headers or {}).items():
            # Header names are case-insensitive: a caller's "authorization" replaces ours.
            for existing in [k for k in request_headers if k.lower() == name.lower()]:
                del request_headers[existing]
            request_headers[name] = value
        templates += list(request_headers.values()) + list((params or {}).values())
        used = [label for text in templates for label in self._secrets.placeholders_in(text)]

        url = httpx.URL(self._join(self._secrets.expand(path)))
        if params:
            url = url.copy_merge_params({k: self._secrets.expand(v) for k, v in params.items()})
        expanded_headers = {name: self._secrets.expand(v) for name, v in request_headers.items()}
        literal = [
            label
            for text in [str(url), *expanded_headers.values()]
            for label in self._secrets.labels_in(text)
        ]
        label = (used or literal or [key or NO_KEY])[0]
        if self._secrets.labels_in(str(url)) and not self._allow_key_in_url:
            # A key in a URL lands in the target's access log and every proxy's: the user's call.
            raise ValueError("a real API key would travel in the URL (needs --allow-key-in-url)")
        return Prepared(label, method.upper(), url, expanded_headers, json, content)

    def _join(self, path: str) -> str:
        if not path:
            return self.base_url
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")


def build(http: httpx.Client, prepared: Prepared) -> httpx.Request:
    """The request as `http` builds it (its default headers, its timeout), to send on it or on
    a burst's session."""
    headers = dict(prepared.headers)
    content = prepared.content
    if prepared.json is not UNSET:
        # Encoded here, not by httpx, because httpx reads json=None as "no body" and a test
        # may well want to send the JSON literal null.
        content = jsonlib.dumps(
            prepared.json, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode("utf-8")
        if not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = "application/json"
    return http.build_request(prepared.method, prepared.url, headers=headers, content=content)
