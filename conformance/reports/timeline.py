"""The rate-limit timeline of a run, as one inline SVG: `X-RateLimit-Remaining` per key over
time, each 429 marked, with the `Retry-After` wait it asked for and the `X-RateLimit-Reset`
moment it named. Reading that from a hundred exchanges is slow; from a picture it is not.

Built from the recorded exchanges only (key label, start, elapsed, status, headers), so that it
does not care how they were sent: a concurrent burst may record them out of order (sorted here
by the moment each answer came back), and a big plan's run has thousands of them (thinned to
the lowest and highest Remaining per pixel column, which keeps the shape, and at most one 429
mark per column).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from conformance.httpclient.backoff import LONGEST_WAIT, http_date_to_unix, retry_after_seconds

if TYPE_CHECKING:
    from conformance.httpclient.client import Exchange

WIDTH, HEIGHT = 900, 280
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 44
PLOT_WIDTH, PLOT_HEIGHT = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
COLOURS = {"main": "#1565c0", "spare": "#ef6c00", "none": "#757575"}
OTHER_COLOURS = ("#6a1b9a", "#00838f", "#558b2f")
LIMITED = "#c62828"


@dataclass(frozen=True)
class Point:
    at: float  # seconds from the first answer of the run
    key: str
    remaining: int | None
    window: str | None  # the X-RateLimit-Reset it reported: same value, same window
    status: int
    retry_after: float | None  # seconds, on a 429
    reset_in: float | None  # seconds from this answer to the Reset it names, on a 429


def integer(value: str | None) -> int | None:
    text = (value or "").strip()
    return int(text) if text.isdigit() else None


def reset_in(exchange: Exchange, answered: float) -> float | None:
    """Seconds from the answer to its Reset, judged on the server's own clock where it says;
    None where the Reset is not a moment a run waits for (a day away, in milliseconds, past):
    drawn, it would squeeze the whole run into a sliver of the picture."""
    try:
        reset = float((exchange.header("X-RateLimit-Reset") or "").strip())
    except ValueError:
        return None
    server_now = http_date_to_unix(exchange.header("Date"))
    ahead = reset - (server_now if server_now is not None else answered)
    return ahead if 0 <= ahead <= LONGEST_WAIT else None


def points(exchanges: Iterable[Exchange]) -> list[Point]:
    answered = sorted(((e.started_at + e.elapsed, e) for e in exchanges), key=lambda p: p[0])
    if not answered:
        return []
    start = answered[0][0]
    found = []
    for moment, exchange in answered:
        limited = exchange.status == 429
        date = exchange.header("Date")
        found.append(
            Point(
                at=moment - start,
                key=exchange.key_label,
                remaining=integer(exchange.header("X-RateLimit-Remaining")),
                window=exchange.header("X-RateLimit-Reset"),
                status=exchange.status,
                retry_after=(
                    retry_after_seconds(exchange.header("Retry-After"), date, moment)
                    if limited
                    else None
                ),
                reset_in=reset_in(exchange, moment) if limited else None,
            )
        )
    return found


def thinned(series: list[Point], span: float) -> list[Point]:
    """At most the lowest and the highest Remaining in each pixel column, in time order."""
    if len(series) <= 2 * PLOT_WIDTH:
        return series
    columns: dict[int, list[Point]] = {}
    for point in series:
        columns.setdefault(int(point.at / span * (PLOT_WIDTH - 1)), []).append(point)
    kept = []
    for column in columns.values():
        low = min(column, key=lambda p: p.remaining)
        high = max(column, key=lambda p: p.remaining)
        kept += sorted({low, high}, key=lambda p: p.at)
    return kept


def one_per_column(limited: list[Point], span: float) -> list[Point]:
    seen: dict[tuple[str, int], Point] = {}
    for point in limited:
        seen.setdefault((point.key, int(point.at / span * (PLOT_WIDTH - 1))), point)
    return list(seen.values())


def same_window_runs(series: list[Point]) -> list[list[Point]]:
    runs: list[list[Point]] = []
    for point in series:
        if runs and runs[-1][-1].window == point.window and point.window is not None:
            runs[-1].append(point)
        else:
            runs.append([point])
    return [run for run in runs if len(run) > 1]


def colour(key: str, keys: list[str]) -> str:
    if key in COLOURS:
        return COLOURS[key]
    return OTHER_COLOURS[keys.index(key) % len(OTHER_COLOURS)]


def ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to about `top` (1, 2 or 5 times a power of ten apart)."""
    raw = max(top / count, 1e-9)
    power = 10 ** math.floor(math.log10(raw))
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= raw)
    return [step * i for i in range(int(top / step) + 1)]


class Canvas:
    def __init__(self, span: float, ceiling: int):
        self.span, self.ceiling = span, ceiling
        self.parts: list[str] = []

    def x(self, at: float) -> float:
        return round(LEFT + min(at, self.span) / self.span * PLOT_WIDTH, 1)

    def y(self, remaining: float) -> float:
        return round(TOP + PLOT_HEIGHT - remaining / self.ceiling * PLOT_HEIGHT, 1)

    def add(self, text: str) -> None:
        self.parts.append(text)

    def axes(self) -> None:
        bottom, right = TOP + PLOT_HEIGHT, LEFT + PLOT_WIDTH
        self.add(
            f'<rect x="{LEFT}" y="{TOP}" width="{PLOT_WIDTH}" height="{PLOT_HEIGHT}" '
            'fill="#fafafa" stroke="#bbb"/>'
        )
        for value in ticks(self.ceiling):
            self.add(
                f'<line x1="{LEFT - 4}" x2="{right}" y1="{self.y(value)}" '
                f'y2="{self.y(value)}" stroke="#e3e3e3"/>'
            )
            self.add(
                f'<text x="{LEFT - 6}" y="{self.y(value) + 4}" text-anchor="end">{value:g}</text>'
            )
        for value in ticks(self.span, 8):
            self.add(
                f'<text x="{self.x(value)}" y="{bottom + 16}" text-anchor="middle">{value:g}</text>'
            )
        self.add(
            f'<text x="{LEFT + PLOT_WIDTH / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
            "seconds since the first answer</text>"
        )
        self.add(
            f'<text transform="translate(14 {TOP + PLOT_HEIGHT / 2}) rotate(-90)" '
            'text-anchor="middle">X-RateLimit-Remaining</text>'
        )

    def series(self, key: str, series: list[Point], stroke: str) -> None:
        """A dot per answer; a line joins answers of one window only (same Reset), where the
        count is known to run down. Across windows nothing was observed, so nothing is drawn."""
        dots = "".join(f"M{self.x(p.at)} {self.y(p.remaining)}h0" for p in series)
        self.add(
            f'<path class="psc-series" data-key="{escape(key)}" d="{dots}" '
            f'stroke="{stroke}" stroke-width="4" stroke-linecap="round"/>'
        )
        for run in same_window_runs(series):
            coordinates = " ".join(f"{self.x(p.at)},{self.y(p.remaining)}" for p in run)
            self.add(
                f'<polyline fill="none" stroke="{stroke}" stroke-width="1.2" '
                f'stroke-opacity="0.7" points="{coordinates}"/>'
            )

    def limited(self, point: Point, stroke: str) -> None:
        """The 429: a red cross on the key's line at 0; its Retry-After wait as a red band;
        the Reset it named as a dashed line."""
        x, y = self.x(point.at), self.y(0)
        if point.retry_after is not None:
            self.add(
                f'<rect class="psc-retry-after" x="{x}" y="{y - 10}" height="6" '
                f'width="{max(self.x(point.at + point.retry_after) - x, 1)}" '
                f'fill="{LIMITED}" fill-opacity="0.35"><title>{escape(point.key)}: '
                f"Retry-After {point.retry_after:g} s</title></rect>"
            )
        if point.reset_in is not None and point.reset_in >= 0:
            reset_x = self.x(point.at + point.reset_in)
            self.add(
                f'<line class="psc-reset" x1="{reset_x}" x2="{reset_x}" y1="{TOP}" '
                f'y2="{y}" stroke="{stroke}" stroke-dasharray="4 3"><title>'
                f"{escape(point.key)}: X-RateLimit-Reset, {point.reset_in:.1f} s after "
                "the 429</title></line>"
            )
        self.add(
            f'<path class="psc-429" d="M{x - 5},{y - 5}L{x + 5},{y + 5}M{x - 5},{y + 5}'
            f'L{x + 5},{y - 5}" stroke="{LIMITED}" stroke-width="2.5"><title>'
            f"{escape(point.key)}: 429 at {point.at:.2f} s</title></path>"
        )

    def svg(self, label: str) -> str:
        return (
            f'<svg class="psc-timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
            f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-label="{escape(label)}" font-family="sans-serif" font-size="11">'
            f"<title>{escape(label)}</title>{''.join(self.parts)}</svg>"
        )


def swatch(drawing: str) -> str:
    return f'<svg width="18" height="10" style="vertical-align:middle">{drawing}</svg>'


def legend(keys: list[str], counts: dict[str, int]) -> str:
    items = [
        swatch(
            f'<path d="M4 5h10" stroke="{colour(key, keys)}" stroke-width="2"/>'
            f'<path d="M9 5h0" stroke="{colour(key, keys)}" stroke-width="5" '
            'stroke-linecap="round"/>'
        )
        + f" key {escape(key)} ({counts[key]} answers)"
        for key in keys
    ]
    items += [
        swatch(f'<path d="M4 0L14 10M4 10L14 0" stroke="{LIMITED}" stroke-width="2.5"/>') + " 429",
        swatch(f'<rect y="2" width="18" height="6" fill="{LIMITED}" fill-opacity="0.35"/>')
        + " the Retry-After wait it asked for",
        swatch('<path d="M9 0v10" stroke="#333" stroke-width="2" stroke-dasharray="3 2"/>')
        + " the X-RateLimit-Reset it named",
    ]
    return f'<p class="psc-legend">{"".join(f"<span>{item}</span>" for item in items)}</p>'


def timeline_html(exchanges: Iterable[Exchange]) -> str:
    found = points(exchanges)
    if not found:
        return "<p>This run received no answers to draw.</p>"
    keys = sorted({p.key for p in found}, key=lambda k: (k not in COLOURS, k))
    limited = [p for p in found if p.status == 429]
    extents = [p.at + (p.retry_after or 0) for p in limited]
    extents += [p.at + p.reset_in for p in limited if p.reset_in is not None and p.reset_in >= 0]
    span = max([found[-1].at, *extents, 0.001]) * 1.02
    ceiling = max([p.remaining for p in found if p.remaining is not None] + [1])
    canvas = Canvas(span, ceiling)
    canvas.axes()
    for key in keys:
        series = thinned([p for p in found if p.key == key and p.remaining is not None], span)
        canvas.series(key, series, colour(key, keys))
    for point in one_per_column(limited, span):
        canvas.limited(point, colour(point.key, keys))
    counts = {key: sum(p.key == key for p in found) for key in keys}
    label = (
        f"X-RateLimit-Remaining over {found[-1].at:.1f} s for {len(keys)} key label(s); "
        f"{len(limited)} answer(s) 429"
    )
    if not limited:
        label += ": no key was limited in this run"
    return f"{canvas.svg(label)}{legend(keys, counts)}<p>{escape(label)}.</p>"


# --- A client's timeline (petstore-conformance client) ------------------------------------
LANE_HEIGHT = 34
STATUS_COLOURS = {2: "#2e7d32", 4: "#757575", 5: "#ef6c00"}


@dataclass(frozen=True)
class ClientMark:
    """One request of a client: when it arrived, the status it got, the wait that answer asked
    for (seconds, from the answer), and whether it came before an earlier answer's wait ended."""

    at: float  # seconds from the scenario's first request
    status: int
    wait: float | None
    early: bool


def client_timeline_html(lanes: list[tuple[str, list[ClientMark]]]) -> str:
    """A lane per scenario: a mark per request (a red cross for a 429), a red band for each
    wait the client was given, and a black ring around each request that broke one: a
    premature retry is seen at a glance."""
    lanes = [(name, marks) for name, marks in lanes if marks]
    if not lanes:
        return "<p>The client sent no requests to draw.</p>"
    ends = [m.at + (m.wait or 0) for _, marks in lanes for m in marks]
    span = max([*ends, 0.001]) * 1.02
    height = TOP + LANE_HEIGHT * len(lanes) + BOTTOM
    canvas = Canvas(span, 1)
    for row, (name, marks) in enumerate(lanes):
        middle = TOP + LANE_HEIGHT * row + LANE_HEIGHT / 2
        canvas.add(
            f'<line x1="{LEFT}" x2="{LEFT + PLOT_WIDTH}" y1="{middle}" y2="{middle}" '
            # The name above its lane: scenario names are longer than the left margin.
            f'stroke="#e3e3e3"/><text x="{LEFT + 2}" y="{middle - 8}" fill="#555">'
            f"{escape(name)}</text>"
        )
        for mark in marks:
            canvas.add(client_mark(canvas, mark, middle, name))
    for value in ticks(span, 8):
        canvas.add(
            f'<text x="{canvas.x(value)}" y="{height - BOTTOM + 16}" '
            f'text-anchor="middle">{value:g}</text>'
        )
    canvas.add(
        f'<text x="{LEFT + PLOT_WIDTH / 2}" y="{height - 6}" text-anchor="middle">'
        "seconds since the scenario's first request</text>"
    )
    early = sum(m.early for _, marks in lanes for m in marks)
    label = f"the client's requests in {len(lanes)} scenarios; {early} came before a wait ended"
    svg = canvas.svg(label).replace(f'height="{HEIGHT}"', f'height="{height}"', 1)
    svg = svg.replace(f'viewBox="0 0 {WIDTH} {HEIGHT}"', f'viewBox="0 0 {WIDTH} {height}"', 1)
    items = [
        swatch(f'<path d="M4 0L14 10M4 10L14 0" stroke="{LIMITED}" stroke-width="2.5"/>') + " 429",
        swatch(f'<rect y="2" width="18" height="6" fill="{LIMITED}" fill-opacity="0.35"/>')
        + " the Retry-After wait it was given",
        swatch('<circle cx="9" cy="5" r="4" fill="none" stroke="#000" stroke-width="1.5"/>')
        + " a request before that wait ended",
    ]
    legend_html = "".join(f"<span>{item}</span>" for item in items)
    return f'{svg}<p class="psc-legend">{legend_html}</p><p>{escape(label)}.</p>'


def client_mark(canvas: Canvas, mark: ClientMark, middle: float, lane: str) -> str:
    x = canvas.x(mark.at)
    title = f"<title>{escape(lane)}: {mark.status} at {mark.at:.3f} s</title>"
    parts = []
    if mark.wait:
        width = max(canvas.x(mark.at + mark.wait) - x, 1)
        parts.append(
            f'<rect class="psc-retry-after" x="{x}" y="{middle - 3}" height="6" '
            f'width="{width}" fill="{LIMITED}" fill-opacity="0.35"><title>{escape(lane)}: '
            f"wait {mark.wait:g} s</title></rect>"
        )
    if mark.status == 429:
        parts.append(
            f'<path class="psc-429" d="M{x - 5},{middle - 5}L{x + 5},{middle + 5}'
            f'M{x - 5},{middle + 5}L{x + 5},{middle - 5}" stroke="{LIMITED}" '
            f'stroke-width="2.5">{title}</path>'
        )
    else:
        fill = STATUS_COLOURS.get(mark.status // 100, "#757575")
        parts.append(f'<circle cx="{x}" cy="{middle}" r="4" fill="{fill}">{title}</circle>')
    if mark.early:
        parts.append(
            f'<circle class="psc-early" cx="{x}" cy="{middle}" r="8" fill="none" '
            f'stroke="#000" stroke-width="1.5">{title}</circle>'
        )
    return "".join(parts)
