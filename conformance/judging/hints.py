"""Hints: where a failure matches a pattern we know, say what probably causes it and what to check.

A hint never decides anything; it is read from the run's own exchanges after the verdict, and
shown under the failure in the console, the HTML report and conformance.json. The patterns:

- a response that differs in kind from the service's own (another `Server`, or a proxy's own
  error page): made by something in front of the service, such as a proxy;
- an HTML error page from the service's own `Server` where it answers JSON: the framework's
  default error page, which the service should replace with its JSON errors;
- a refusal made in front (a proxy's limiter's 403, 429 or 503:
  conformance.httpclient.service_kind): what answered, and when, against what the service's own
  headers still said was left of the quota;
- rate-limit headers on the service's successes but missing on the 4xx a framework makes
  before the handler runs: the limiter or header middleware runs after the router, the body
  parser or the auth layer;
- a limit that counts per endpoint: the limiter is keyed by the request path;
- a 5xx where a requirement wanted a 4xx: the server failed on the input instead of refusing it;
- a create refused for its body only when it offered an h2c upgrade: a server that drops the body
  of a request offering an upgrade it does not take (uvicorn with httptools).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from conformance.httpclient.recording import Exchange
from conformance.httpclient.service_kind import RATE_LIMIT_HEADER, ServiceKind, front_refusal
from conformance.judging.verdict import RequirementOutcome, Verdict

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
        own = [e for e in failing if not service.unlike(e) and not front_refusal(e, service)]
        found.append(middleware_order_hint(own, exchanges))
    if outcome.requirement.id == "LIM-PER-CALLER":
        found.append(
            "the limit seems to count per endpoint: the limiter is probably keyed by the request "
            "path (the default of slowapi and of many gateways); key it by the caller's API key, "
            "so that every endpoint and method draws on the one limit of the plan"
        )
    if outcome.requirement.id == "CAT-CREATE-H2C-OFFER":
        found.append(upgrade_offer_hint([e for e in failing if not service.unlike(e)]))
    if outcome.requirement.id != "GEN-NO-SERVER-ERROR":
        # A proxy's 5xx says nothing about how the service handled the input.
        found.append(crash_hint([e for e in failing if not service.unlike(e)]))
    return [hint for hint in found if hint]


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
        fix = (
            f"have it answer 429 (nginx: limit_req_status 429; HAProxy: deny_status 429), and {fix}"
        )
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


def upgrade_offer_hint(failing: list[Exchange]) -> str | None:
    """A create refused for its body when it offered an upgrade: the body was dropped."""
    refused = [exchange for exchange in failing if exchange.status in (400, 411, 415, 422)]
    if not refused:
        return None
    first = refused[0]
    server = first.header("Server") or ""
    known = (
        f"`Server: {server}`: uvicorn" if "uvicorn" in server.lower() else "A known cause: uvicorn"
    )
    return (
        f"the {first.status} says the body of the create is missing or unreadable, though it "
        "was sent as to the creates that were served: the server probably stops reading a "
        "request at the end of its head when it offers an upgrade (Connection: Upgrade, "
        "Upgrade: h2c) and then serves it without its body, instead of ignoring the offer. "
        f"{known} with httptools (what uvicorn[standard] installs, as FastAPI's documentation "
        "recommends) does this: uvicorn issue 2722 and httptools issue 124, open upstream. "
        "Until they are fixed, serve with uvicorn's h11 protocol (`uvicorn --http h11`, "
        "`uvicorn.Config(app, http=\"h11\")`). Java's HttpClient, Spring's RestClient and "
        "curl --http2 send this offer"
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


def unique(items: Iterable) -> list:
    seen: list = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen
