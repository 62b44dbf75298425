"""Hints: where a failure matches a pattern we know, say what probably causes it and what to check.

A hint never decides anything; it is read from the run's own exchanges after the verdict, and
shown under the failure in the console, the HTML report and conformance.json. The patterns:

- a response that differs in kind from the service's own (another `Server`, or a proxy's own
  error page): made by something in front of the service, such as a proxy;
- an HTML error page from the service's own `Server` where it answers JSON: the framework's
  default error page, which the service should replace with its JSON errors;
- a refusal made in front (a 503 or 429 from a proxy's limiter): what answered, and when, against
  what the service's own headers still said was left of the quota;
- rate-limit headers on the service's successes but missing on the 4xx a framework makes
  before the handler runs: the limiter or header middleware runs after the router, the body
  parser or the auth layer;
- a limit that counts per endpoint: the limiter is keyed by the request path;
- a 5xx where a requirement wanted a 4xx: the server failed on the input instead of refusing it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from urllib.parse import urlsplit

from conformance.client import REFUSALS, Exchange
from conformance.verdict import RequirementOutcome, Verdict

RATE_LIMIT_HEADER = "X-RateLimit-Limit"
# How the stock error pages of common proxies sign themselves (nginx: `<center>nginx</center>`).
PROXY_SIGNATURES = {
    "<center>nginx": "nginx",
    "<center>openresty": "OpenResty",
    "<address>apache": "Apache httpd",
    "haproxy": "HAProxy",
}
# The share of the other responses that must agree before a response counts as unlike them.
USUAL = 0.8
# Statuses a framework answers before a handler runs, and the layer that answers them.
LAYERS = {
    400: "the body parser or the request validation",
    411: "the body parser",
    413: "the body-size limit",
    415: "the body parser",
    422: "the request validation",
    431: "the HTTP server",
    401: "the auth layer",
    403: "the auth layer",
    404: "the router",
    405: "the router",
}


def attach(verdict: Verdict, exchanges: list[Exchange]) -> None:
    """Give every failed or warned requirement the hints its failures call for."""
    service = ServiceKind(exchanges)
    for outcome in verdict.outcomes:
        if outcome.outcome in ("failed", "warned"):
            outcome.hints = hints_for(outcome, exchanges, service)


def hints_for(
    outcome: RequirementOutcome, exchanges: list[Exchange], service: ServiceKind | None = None
) -> list[str]:
    service = service or ServiceKind(exchanges)
    failing = list({f.exchange.id: f.exchange for f in outcome.failures if f.exchange}.values())
    found = [
        front_limit_hint(failing, service, exchanges),
        intermediary_hint(failing, service),
        framework_page_hint(failing, service),
    ]
    if outcome.requirement.id == "LIM-HEADERS-PRESENT":
        own = [exchange for exchange in failing if not service.unlike(exchange)]
        found.append(middleware_order_hint(own, exchanges))
    if outcome.requirement.id == "LIM-PER-CALLER":
        found.append(
            "the limit seems to count per endpoint: the limiter is probably keyed by the request "
            "path (the default of slowapi and of many gateways); key it by the caller's API key, "
            "so that every endpoint and method draws on the one limit of the plan"
        )
    if outcome.requirement.id != "GEN-NO-SERVER-ERROR":
        # A proxy's 5xx says nothing about how the service handled the input.
        found.append(crash_hint([e for e in failing if not service.unlike(e)]))
    return [hint for hint in found if hint]


class ServiceKind:
    """What the service's own responses are like: the Server they name, JSON bodies, and
    whether they carry the rate-limit headers."""

    def __init__(self, exchanges: list[Exchange]):
        self.ids = {exchange.id for exchange in exchanges}
        self.servers = Counter(exchange.header("Server") for exchange in exchanges)
        with_body = [exchange for exchange in exchanges if exchange.response_body.strip()]
        self.json_share = share(e.media_type() == "application/json" for e in with_body)
        self.headed = {e.id for e in exchanges if e.header(RATE_LIMIT_HEADER) is not None}

    def others(self, exchange: Exchange) -> int:
        """How many responses of the run there are besides `exchange`."""
        return len(self.ids - {exchange.id})

    def usual_server(self, exchange: Exchange) -> str | None:
        """The Server most other responses name, when nearly all agree (None: no such one)."""
        counts = self.servers.copy()
        if exchange.id in self.ids:
            counts[exchange.header("Server")] -= 1
        others = self.others(exchange)
        if others < 3:
            return None
        value, seen = counts.most_common(1)[0]
        return value if seen >= USUAL * others else None

    def differences(self, exchange: Exchange) -> dict[str, str]:
        """How `exchange` differs in kind from the other responses of the run, by aspect."""
        found = {}
        server = exchange.header("Server")
        usual = self.usual_server(exchange)
        if usual is not None and server != usual:
            said = f"`Server: {server}`" if server else "no Server header"
            found["server"] = f"{said} where the service's other responses say `Server: {usual}`"
        if self.html_page(exchange):
            found["body"] = "an HTML body where the service answers JSON"
        if proxy_signature(exchange):
            found["page"] = f"the stock error page of {proxy_signature(exchange)}"
        bare = exchange.header(RATE_LIMIT_HEADER) is None
        if bare and len(self.headed - {exchange.id}) == self.others(exchange) > 0:
            found["headers"] = "no rate-limit headers where every other response had them"
        return found

    def html_page(self, exchange: Exchange) -> bool:
        return exchange.media_type() == "text/html" and self.json_share >= USUAL

    def unlike(self, exchange: Exchange) -> bool:
        """Made by something else than the service: another Server, or a proxy's own page.
        (Missing headers alone may come from the service's own middleware order; an HTML page
        from the service's own Server is its framework's default page: `framework_page`.)"""
        differences = self.differences(exchange)
        if "server" in differences or "page" in differences:
            return True
        # Without a Server the service is known by, HTML where it answers JSON may be either.
        return "body" in differences and self.usual_server(exchange) is None

    def framework_page(self, exchange: Exchange) -> bool:
        """An HTML page where the service answers JSON, from the service's own Server."""
        return self.html_page(exchange) and not self.unlike(exchange)


def front_refusal(exchange: Exchange, service: ServiceKind) -> bool:
    """A refusal by a limiter in front of the service: a 429 or 503 the service did not make."""
    return exchange.status in REFUSALS and service.unlike(exchange)


def refusal_circumstances(refusal: Exchange, exchanges: list[Exchange]) -> str:
    """When the front refused: after how many requests of the key, in how long, and what the
    service's own headers last said was left."""
    before = [
        e
        for e in exchanges
        if e.key_label == refusal.key_label and e.started_at < refusal.started_at
    ]
    who = (
        "unauthenticated requests"
        if refusal.key_label == "none"
        else f"the {refusal.key_label} key"
    )
    span = refusal.started_at - min((e.started_at for e in before), default=refusal.started_at)
    text = f"after {len(before)} requests of {who} in {span:.1f} s"
    said = [e.header("X-RateLimit-Remaining") for e in before]
    left = next((value.strip() for value in reversed(said) if value), None)
    if left is not None and left.isdigit() and int(left) > 0:
        text += (
            f", while the service's own headers still said X-RateLimit-Remaining {left}: the "
            "front refuses before the plan's quota is spent"
        )
    return text


def front_limit_hint(
    failing: list[Exchange], service: ServiceKind, exchanges: list[Exchange]
) -> str | None:
    refusals = [exchange for exchange in failing if front_refusal(exchange, service)]
    if not refusals:
        return None
    first = refusals[0]
    what = "; ".join(service.differences(first).values())
    fix = "raise its limit above the plan's (or leave limiting to the service)"
    if first.status != 429:
        fix = f"have it answer 429 (nginx: limit_req_status 429), and {fix}"
    return (
        f"the {first.status} of {first.method} {urlsplit(first.url).path} is a refusal by a "
        "limiter in front of the service (an intermediary: a proxy or gateway), not by the "
        f"service: {what}. "
        f"It came {refusal_circumstances(first, exchanges)}. Check the limits of what sits in "
        f"front of {urlsplit(first.url).netloc}: {fix}"
    )


def intermediary_hint(failing: list[Exchange], service: ServiceKind) -> str | None:
    # A front's refusals get front_limit_hint, which says more.
    failing = [exchange for exchange in failing if not front_refusal(exchange, service)]
    unlike = [exchange for exchange in failing if service.unlike(exchange)]
    if not unlike:
        return None
    first = unlike[0]
    share_text = "" if len(unlike) == len(failing) else f" ({len(unlike)} of {len(failing)})"
    what = f"the {first.status} of {first.method} {urlsplit(first.url).path}{share_text}"
    check = "its error pages, its limits, and that it passes the service's answers on unchanged"
    if first.status == 413:
        check = (
            "its body-size limit (nginx's client_max_body_size is 1 MiB unless set): raise it "
            "above the service's own, or have the proxy's 413 carry the rate-limit headers"
        )
    return (
        f"{what} looks produced by an intermediary in front of the service (a proxy, load "
        f"balancer or gateway), not by the service: "
        f"{'; '.join(service.differences(first).values())}. "
        f"Check what sits in front of {urlsplit(first.url).netloc}: {check}"
    )


def framework_page_hint(failing: list[Exchange], service: ServiceKind) -> str | None:
    pages = [exchange for exchange in failing if service.framework_page(exchange)]
    if not pages:
        return None
    first = pages[0]
    server = first.header("Server")
    return (
        f"the {first.status} of {first.method} {urlsplit(first.url).path} is an HTML page from "
        f"the service's own server (`Server: {server}`, as its JSON answers): the web "
        "framework's default error page, made before or around the API's own error handling. "
        "Replace the framework's default error pages with the API's JSON errors (Django: "
        "handler404/handler500 and DEBUG off; Flask: errorhandler; Starlette/FastAPI: "
        "exception_handlers; Express/Fastify: the not-found and error handlers)"
    )


def proxy_signature(exchange: Exchange) -> str | None:
    """The proxy whose stock error page this is, when its body signs it."""
    if exchange.media_type() != "text/html":
        return None
    body = exchange.response_body.lower()
    return next((name for mark, name in PROXY_SIGNATURES.items() if mark in body), None)


def middleware_order_hint(failing: list[Exchange], exchanges: list[Exchange]) -> str | None:
    """Headers on the successes, missing on the refusals a framework makes before the handler."""
    headed = sorted({e.status for e in exchanges if e.header(RATE_LIMIT_HEADER) is not None})
    bare = sorted({exchange.status for exchange in failing})
    if not bare or not any(200 <= status < 300 for status in headed):
        return None
    if 429 in bare:
        return (
            "the 429s carry no rate-limit headers while the served responses do: the headers "
            "are probably added to the handler's responses only; add them to the limiter's "
            "refusals too"
        )
    layers = unique(LAYERS[status] for status in bare if status in LAYERS)
    if not layers:
        return None
    return (
        f"the rate-limit headers are on the {plural(headed, 300)} but missing on the "
        f"{plural(bare)}: the limiter or the header middleware probably runs after "
        f"{' and '.join(layers)}, which answer{'s' if len(layers) == 1 else ''} before it. "
        "Make it the outermost layer, so that every response passes through it"
    )


def crash_hint(failing: list[Exchange]) -> str | None:
    crashed = [exchange for exchange in failing if exchange.status >= 500]
    if not crashed:
        return None
    return (
        f"a {crashed[0].status} where a 4xx or a success was due: the server probably failed on "
        "this input (an unhandled error) instead of refusing it; its log will say where"
    )


def plural(statuses: list[int], below: int = 1000) -> str:
    shown = [f"{status}s" for status in statuses if status < below]
    return ", ".join(shown[:-1]) + (" and " if len(shown) > 1 else "") + shown[-1]


def share(flags: Iterable[bool]) -> float:
    flags = list(flags)
    return sum(flags) / len(flags) if flags else 0.0


def unique(items: Iterable) -> list:
    seen: list = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen
