"""The two pictures a workshop draws on the server: the join QR code and a poll's bar chart.

Both are SVG text built here (the QR's modules by segno), so they need no script, no image
library and no network, and they scale to a projector.
"""

from __future__ import annotations

import io
from html import escape

import segno


def qr_svg(url: str, label: str) -> str:
    """A QR code for `url`, black on white whatever the page's theme (a scanner needs the
    contrast), with `label` as its accessible name."""
    code = segno.make(url, error="m")
    out = io.BytesIO()
    code.save(
        out, kind="svg", scale=6, border=2, xmldecl=False, svgns=True, nl=False,
        dark="#000000", light="#ffffff", title=label, svgclass="qr", lineclass=None,
    )  # fmt: skip
    svg = out.getvalue().decode("utf-8")
    # segno draws in pixels with fixed width and height; a viewBox lets CSS size it (the big join
    # screen draws it across half the screen)
    size = code.symbol_size(scale=6, border=2)[0]
    fixed = f'width="{size}" height="{size}"'
    svg = svg.replace(fixed, f'viewBox="0 0 {size} {size}" {fixed}', 1)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{escape(label)}" ', 1)


BAR_H = 34
GAP = 12
LABEL_W = 40
WIDTH = 520


def poll_chart_svg(options: list[str], counts: dict[str, int], *, right: str | None) -> str:
    """One horizontal bar per option letter, its count and share written beside it. `right`
    (the answer's letter, once revealed) draws that bar in the "right" colour and says so in
    words too, so the chart does not rely on colour."""
    total = sum(counts.get(o, 0) for o in options)
    height = len(options) * (BAR_H + GAP) + GAP
    room = WIDTH - LABEL_W - 150
    parts = [
        f'<svg class="poll-chart" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
        f'aria-labelledby="poll-chart-t" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="poll-chart-t">{escape(_summary(options, counts, total, right))}</title>',
    ]
    for i, letter in enumerate(options):
        n = counts.get(letter, 0)
        share = n / total if total else 0.0
        y = GAP + i * (BAR_H + GAP)
        w = max(2.0, room * share)
        cls = "bar right" if letter == right else "bar"
        note = " · right answer" if letter == right else ""
        parts.append(
            f'<text class="opt" x="8" y="{y + BAR_H * 0.68:.1f}">{escape(letter)}</text>'
            f'<rect class="{cls}" x="{LABEL_W}" y="{y}" width="{w:.1f}" height="{BAR_H}" rx="4"/>'
            f'<text class="n" x="{LABEL_W + w + 8:.1f}" y="{y + BAR_H * 0.68:.1f}">'
            f"{n} ({round(share * 100)}%){note}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _summary(options: list[str], counts: dict[str, int], total: int, right: str | None) -> str:
    said = ", ".join(f"{o}: {counts.get(o, 0)}" for o in options)
    answer = f" The right answer is {right}." if right else ""
    return f"{total} answer{'s' if total != 1 else ''}. {said}.{answer}"
