"""What the service's own answers are like, and the answers something in front of it made.

A response unlike the service's (another `Server`, an HTML page where it answers JSON, a proxy's
stock error page) was made by an intermediary; one of those that refuses a request (403, 420,
429, 503: the statuses proxies' limiters are set to answer) is a front's refusal over a limit,
whatever its status. The client backs off from it as from a 429; the judging names it as one
cause (conformance.judging.fronts); the hints say what to check (conformance.judging.hints).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from conformance.httpclient.recording import Exchange

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
FRONT_REFUSALS = frozenset({403, 420, 429, 503})
"""What a proxy's limiter answers: HAProxy's `deny` 403, nginx's `limit_req` 503, Twitter's
old 420, or a 429. (A front's 413 or 502 is no refusal over a limit: conformance.judging.hints.)"""


class ServiceKind:
    """What the service's own responses are like: the Server they name, JSON bodies, and
    whether they carry the rate-limit headers. Read from the answers no limiter's refusal can
    be (statuses other than FRONT_REFUSALS): a front that refuses every caller for minutes
    answers most of a run, and would otherwise pass for the service itself."""

    def __init__(self, exchanges: list[Exchange]):
        self.exchanges = exchanges
        own = [exchange for exchange in exchanges if exchange.status not in FRONT_REFUSALS]
        self.ids = {exchange.id for exchange in own}
        self.servers = Counter(exchange.header("Server") for exchange in own)
        with_body = [exchange for exchange in own if exchange.response_body.strip()]
        self.json_share = share(e.media_type() == "application/json" for e in with_body)
        self.headed = {e.id for e in own if e.header(RATE_LIMIT_HEADER) is not None}

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
        elif exchange.status in FRONT_REFUSALS and self.bare_where_headed(exchange):
            found["headers"] = "no rate-limit headers where the service's answers carry them"
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

    def quota_left(self, refusal: Exchange) -> int | None:
        """What the service's last answer to the same key before `refusal` said was left
        (X-RateLimit-Remaining), where it said so."""
        before = [
            e
            for e in self.exchanges
            if e.key_label == refusal.key_label and e.started_at < refusal.started_at
        ]
        said = [e.header("X-RateLimit-Remaining") for e in before]
        left = next((value.strip() for value in reversed(said) if value), None)
        return int(left) if left is not None and left.isdigit() else None

    def bare_where_headed(self, exchange: Exchange) -> bool:
        """No rate-limit headers, where the service sends them on nearly every answer."""
        if exchange.header(RATE_LIMIT_HEADER) is not None:
            return False
        others = self.others(exchange)
        return others > 0 and len(self.headed - {exchange.id}) >= USUAL * others

    def framework_page(self, exchange: Exchange) -> bool:
        """An HTML page where the service answers JSON, from the service's own Server."""
        return self.html_page(exchange) and not self.unlike(exchange)


def front_refusal(exchange: Exchange, service: ServiceKind) -> bool:
    """A refusal by a limiter in front of the service: one of its refusal statuses, in an answer
    the service did not make. Two signs are needed (another Server or a proxy's page; or no
    rate-limit headers where the service sends them, with an HTML page where it answers JSON or
    while it said quota was left): an HTML 403 or 429 from a service that names no Server may be
    its framework's or its limiter's own default page (express-rate-limit's), its own failure."""
    if exchange.status not in FRONT_REFUSALS:
        return False
    signs = service.differences(exchange)
    if "server" in signs or "page" in signs:
        return True
    if not service.bare_where_headed(exchange):
        return False
    return "body" in signs or (service.quota_left(exchange) or 0) > 0


def proxy_signature(exchange: Exchange) -> str | None:
    """The proxy whose stock error page this is, when its body signs it."""
    if exchange.media_type() != "text/html":
        return None
    body = exchange.response_body.lower()
    return next((name for mark, name in PROXY_SIGNATURES.items() if mark in body), None)


def share(flags: Iterable[bool]) -> float:
    flags = list(flags)
    return sum(flags) / len(flags) if flags else 0.0
