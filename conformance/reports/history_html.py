"""`history.html`, the page `petstore-conformance history` writes (conformance.evidence.history):
the nights' verdicts as a strip, the requirements that fail and since when, the unstable ones,
the grid of requirements by nights, the run's time, requests and peak memory as inline SVG
charts, and the notes. Newest night first, everywhere, charts included.

One self-contained file: no script at all, styles inline, and a Content-Security-Policy that
loads nothing from anywhere. Everything from a statement is escaped (it was bounded and its
control characters escaped when read).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from conformance import __version__

if TYPE_CHECKING:
    from conformance.evidence.history import History, Night, Row

POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
STYLE = """
body {font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222}
h2 {margin: 1.2em 0 .4em}
table {border-collapse: collapse}
td, th {border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top}
.strip {display: flex; flex-wrap: wrap; gap: 2px; margin: .4em 0}
.strip span {width: 14px; height: 22px; display: inline-block; border-radius: 2px}
.conformant, td.p {background: #2e7d32; color: #fff}
.not-conformant, td.f {background: #c62828; color: #fff}
.no-verdict, .unknown, td.o {background: #6d6d6d; color: #fff}
.excused {background: #8e24aa; color: #fff}
td.w {background: #f9a825} td.n {background: #eee; color: #777} td.a {background: #fff}
.grid td.p, .grid td.f, .grid td.w, .grid td.n, .grid td.a, .grid td.o {padding: 0;
  width: 14px; min-width: 14px; text-align: center; font-size: 11px}
.grid th.night {writing-mode: vertical-rl; font-weight: normal; font-size: 11px; padding: 2px}
.state-failed {color: #c62828; font-weight: bold} .state-warned {color: #b26a00}
.state-passed {color: #2e7d32} .grid td {white-space: nowrap}
.unstable {color: #8e24aa; font-weight: bold}
.verdict {font-size: 1.3em; font-weight: bold; padding: .3em .8em; border-radius: 4px;
  display: inline-block}
.note {color: #555}
svg text {font: 11px system-ui, sans-serif; fill: #444}
"""
CELL = {"passed": "p", "failed": "f", "warned": "w", "not-tested": "n", "absent": "a"}
MARK = {"passed": "✓", "failed": "✗", "warned": "!", "not-tested": "·", "absent": ""}
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 900, 150, 70, 16, 12, 28


def h(value: object) -> str:
    return escape(str(value), quote=True)


VERDICT_CLASSES = {
    "conformant": "conformant",
    "not conformant": "not-conformant",
    "no verdict": "no-verdict",
    "not conformant, every failure expected": "excused",
}


def css(verdict: str) -> str:
    return VERDICT_CLASSES.get(verdict, "unknown")


def day(night: Night) -> str:
    return night.time[:10] or night.run_id[:20] or "?"


def newest_first(history: History) -> list[int]:
    return list(range(len(history.nights) - 1, -1, -1))


def strip(history: History) -> str:
    boxes = "".join(
        f'<span class="{css(night.verdict)}" title="{h(night.time or night.run_id)}: '
        f'{h(night.verdict)}"></span>'
        for night in reversed(history.nights)
    )
    conformant = sum(night.verdict == "conformant" for night in history.nights)
    return (
        f'<div class="strip" id="strip" aria-label="verdicts, newest first">{boxes}</div>'
        f'<p class="note">{len(history.nights)} nights, newest first (left), from '
        f"{h(day(history.nights[-1]))} back to {h(day(history.nights[0]))}; "
        f"{conformant} conformant. Green conformant, red not conformant, purple every failure "
        "expected (a baseline excused them), grey no verdict.</p>"
    )


def since_text(history: History, row: Row) -> str:
    nights = len(row.states) - row.since
    first = h(day(history.nights[row.since]))
    if row.since == 0 and nights > 1:
        return f"{first} (all {nights} nights shown)"
    return f"{first} ({nights} night{'s' if nights != 1 else ''})"


def attention(history: History) -> str:
    failing = "".join(
        f"<li><b>{h(row.id)}</b> failing since {since_text(history, row)}"
        + (f', <span class="unstable">unstable ({row.flips} flips)</span>' if row.unstable else "")
        + "</li>"
        for row in history.failing
    )
    unstable = "".join(
        f'<li><span class="unstable">{h(row.id)}</span>: flipped {row.flips} times; now '
        f"{h(row.state)} since {since_text(history, row)}</li>"
        for row in history.unstable
    )
    return (
        f'<h2 id="failing">Failing now ({len(history.failing)})</h2>'
        + (f"<ul>{failing}</ul>" if failing else "<p>None: no requirement fails tonight.</p>")
        + f'<h2 id="unstable">Unstable: flipped more than once ({len(history.unstable)})</h2>'
        + (f"<ul>{unstable}</ul>" if unstable else "<p>None.</p>")
    )


def grid(history: History) -> str:
    order = newest_first(history)
    heads = "".join(
        f'<th class="night" title="{h(history.nights[i].time)}">{h(day(history.nights[i]))}</th>'
        for i in order
    )
    rows = []
    for row in history.rows:
        cells = "".join(
            f'<td class="{CELL.get(row.states[i], "o")}">{MARK.get(row.states[i], "?")}</td>'
            for i in order
        )
        flag = ' <span class="unstable">unstable</span>' if row.unstable else ""
        rows.append(
            f'<tr data-id="{h(row.id)}"><th>{h(row.id)}{flag}</th>'
            f'<td class="state-{h(row.state)}">{h(row.state)}</td>'
            f"<td>{since_text(history, row)}</td><td>{row.flips}</td>{cells}</tr>"
        )
    legend = " ".join(f"{MARK[s] or '(blank)'} {s}" for s in CELL)
    return (
        f'<h2 id="requirements">Requirements by night ({len(history.rows)})</h2>'
        f'<p class="note">{h(legend)}. Newest night first.</p>'
        '<div style="overflow-x: auto"><table class="grid" id="grid"><thead><tr>'
        f"<th>Requirement</th><th>State</th><th>Since</th><th>Flips</th>{heads}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def chart(history: History, name: str, title: str, unit: str, values: list) -> str:
    """One measure across the nights, newest on the left as in the grid; a night that does
    not say is a gap."""
    known = [v for v in values if v is not None]
    if not known:
        return f"<h3>{h(title)}</h3><p class='note'>No night says.</p>"
    top = max(known) or 1
    count = len(values)
    step = (WIDTH - LEFT - RIGHT) / max(count - 1, 1)
    plot = HEIGHT - TOP - BOTTOM
    points, marks = [], []
    for position, index in enumerate(newest_first(history)):
        value = values[index]
        if value is None:
            points.append(None)
            continue
        x, y = LEFT + position * step, TOP + plot * (1 - value / top)
        points.append(f"{x:.1f},{y:.1f}")
        marks.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#1565c0"><title>'
            f"{h(day(history.nights[index]))}: {value:,.1f} {h(unit)}</title></circle>"
        )
    lines = [
        f'<polyline points="{" ".join(run)}" fill="none" stroke="#1565c0" stroke-width="1.5"/>'
        for run in stretches(points)
    ]
    newest, oldest = day(history.nights[-1]), day(history.nights[0])
    last = "unknown" if values[-1] is None else f"{values[-1]:,.0f} {unit}"
    return (
        f"<h3>{h(title)}: newest {h(last)}, from {min(known):,.0f} to {top:,.0f} {h(unit)}</h3>"
        f'<svg class="chart" id="chart-{name}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{h(title)}, newest night on the left">'
        f'<line x1="{LEFT}" y1="{TOP + plot}" x2="{WIDTH - RIGHT}" y2="{TOP + plot}" '
        'stroke="#999"/>'
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot}" stroke="#999"/>'
        f'<text x="{LEFT - 6}" y="{TOP + 8}" text-anchor="end">{compact(top)}</text>'
        f'<text x="{LEFT - 6}" y="{TOP + plot}" text-anchor="end">0</text>'
        f'<text x="{LEFT}" y="{HEIGHT - 8}">{h(newest)} (newest)</text>'
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{h(oldest)}</text>'
        f"{''.join(lines)}{''.join(marks)}</svg>"
    )


def compact(value: float) -> str:
    """An axis label that fits left of the axis: 1,800; 25.3k; 954M."""
    if value < 10_000:
        return f"{value:,.0f}"
    for suffix in ("k", "M", "G", "T", "P"):
        value /= 1000
        if value < 1000 or suffix == "P":
            return f"{value:.3g}{suffix}"
    return f"{value:.3g}"  # not reached: figures end at 10**15


def stretches(points: list[str | None]) -> list[list[str]]:
    """The unbroken stretches of points (a night that does not say breaks the line)."""
    found: list[list[str]] = [[]]
    for point in points:
        if point is None:
            found.append([])
        else:
            found[-1].append(point)
    return [stretch for stretch in found if len(stretch) > 1]


def charts(history: History) -> str:
    nights = history.nights
    memory = [None if n.peak_memory_bytes is None else n.peak_memory_bytes / 2**20 for n in nights]
    return (
        '<h2 id="charts">Time, requests and memory</h2>'
        + chart(history, "seconds", "Time of the run", "s", [n.seconds for n in nights])
        + chart(history, "requests", "Requests sent", "requests", [n.requests for n in nights])
        + chart(history, "memory", "Peak memory of the checker", "MiB", memory)
    )


def notes(history: History) -> str:
    parts = ""
    if history.notes:
        items = "".join(f"<li>{h(note)}</li>" for note in history.notes)
        parts += f'<h2 id="notes">Notes: nights that checked something else</h2><ul>{items}</ul>'
    if history.skipped:
        items = "".join(f"<li>{h(line)}</li>" for line in history.skipped)
        parts += (
            f'<h2 id="skipped">Statements not read ({len(history.skipped)})</h2><ul>{items}</ul>'
        )
    return parts


def newest(history: History) -> str:
    night = history.nights[-1]
    facts = ", ".join(
        f"{name.replace('_', ' ')} {h(value or '(not stated)')}"
        for name, value in night.facts.items()
    )
    return (
        f'<p><span class="verdict {css(night.verdict)}">Newest night, {h(day(night))}: '
        f"{h(night.verdict)}</span></p><p class='note'>{facts}.</p>"
    )


def page(history: History) -> str:
    title = f"Pet Store conformance: {len(history.nights)} nights"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{h(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        f"<h1>{h(title)}</h1>{newest(history)}{strip(history)}{attention(history)}"
        f"{grid(history)}{charts(history)}{notes(history)}"
        f'<p class="note">Written by petstore-conformance {h(__version__)} history. For '
        'machines: <a href="history.json">history.json</a>.</p>\n</body></html>\n'
    )
