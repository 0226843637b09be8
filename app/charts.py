"""Server-rendered SVG charts of the precomputed curves (data/curves/), for deep dives D1 and D4.

    charts_panel(scene, state, timeline) -> dict | None   the page's chart slot (templates/_charts.html)
    scale_costs(knobs) -> dict                             scene 05's "what these knobs cost at scale"
    latency_chart(knobs, axis) / loss_chart(knobs)         one chart each (dicts the template renders)

Every number shown is a stored grid point (app/curves.py: nearest point, never interpolated),
with its sample count and 95 % interval in the chart's table. The knob values the learner chose
are snapped to the nearest simulated value on each axis, and a note says so when that moved them.
Nothing here raises for missing or corrupt curve files: the panel then carries an "unavailable"
note instead of charts.

The SVG uses a 480-unit-wide viewBox with 15-16 unit text, so at a 360 px wide phone the text is
still about 11-12 px, and it scales up for a projector. Colours are the Okabe-Ito palette (safe
for colour-blind readers), and every series also differs by marker shape and dash pattern.
"""

from __future__ import annotations

import json
import math
from html import escape
from typing import Any

from markupsafe import Markup

from app import curves

# Tests point this at a temporary directory to check missing or corrupt files.
CURVES_DIR: str | None = None

PROPOSAL = "proposal, not Kafka"

# where the learner's knobs do not say (the scene has no such knob): a middle-of-the-grid value
LATENCY_DEFAULTS: dict[str, Any] = {
    "replication.factor": 3,
    "min.insync.replicas": 2,
    "replica.lag.time.max.ms": 30000,
    "straggler_q": 0.001,
    "straggler_ms": 2000,
    "load_rps": 1000,
}
LOSS_DEFAULTS: dict[str, Any] = {
    "replication.factor": 3,
    "min.insync.replicas": 2,
    "unclean.leader.election.enable": False,
    "afr": 0.04,
    "repair_h": 24,
    "flush.messages": None,
}

# (series key, legend label, is a proposal, colour, marker, dash)
LAT_MODES: list[tuple[str, str, bool, str, str, str]] = [
    ("acks_1", "acks=1", False, "#0072B2", "circle", ""),
    ("acks_all", "acks=all (Kafka)", False, "#D55E00", "square", ""),
    ("quorum", f"KIP-250 quorum: 2 of RF\n({PROPOSAL})", True, "#009E73", "triangle", "7 4"),
    ("acks_min_isr", f"KIP-926 acks=min.insync.replicas\n({PROPOSAL})", True, "#CC79A7", "diamond", "2 4"),
]
PERCENTILES = [("p999", "P999"), ("p99", "P99"), ("p50", "P50")]

# loss series: key, label, knobs, colour, marker, dash
LOSS_SERIES: list[tuple[str, str, dict[str, Any], str, str, str]] = [
    ("independent", "independent failures (Monte Carlo)",
     {"power_events_per_year": 0.0, "blast_racks": 0, "rack_aware": False}, "#0072B2", "circle", ""),
    ("rack_random", "+ 1 rack power cut/yr, random placement",
     {"power_events_per_year": 1.0, "blast_racks": 1, "rack_aware": False}, "#D55E00", "square", ""),
    ("rack_aware", "+ 1 rack power cut/yr, one copy per rack",
     {"power_events_per_year": 1.0, "blast_racks": 1, "rack_aware": True}, "#009E73", "triangle", ""),
    ("site", "+ 1 whole-site power cut/yr",
     {"power_events_per_year": 1.0, "blast_racks": 3, "rack_aware": True}, "#CC79A7", "diamond", ""),
]
CLIP = 1e-12  # the loss chart's floor; closed-form values below it are labelled at the edge
CLOSED_FORM = ("closed_form", "closed form, independent (×p per replica)", "#444444")

AXES = {
    "straggler_q": "share of time a follower straggles",
    "replication.factor": "replication factor",
    "replica.lag.time.max.ms": "replica.lag.time.max.ms",
}

W = 400  # viewBox width
LEFT, RIGHT = 84, 16
FONT = 15


# --------------------------------------------------------------------------------------------
# reading knobs


def _num(raw: Any) -> float | None:
    if raw is None or isinstance(raw, bool):
        return None
    try:
        v = float(str(raw).strip().rstrip("%"))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _bool(raw: Any) -> bool | None:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "on", "yes"):
        return True
    if text in ("false", "0", "off", "no"):
        return False
    return None


def _fmt_q(q: float) -> str:
    if q == 0:
        return "never"
    pct = q * 100
    return f"{pct:g} %"


_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "timed out"
    if ms >= 1000:
        return f"{ms / 1000:.3g} s".replace(".0 s", " s")
    return f"{ms:.3g} ms"


def _fmt_p(p: float) -> str:
    if p <= 0:
        return "0"
    if p >= 0.01:
        return f"{p:.3g}"
    mant, exp = f"{p:.2e}".split("e")
    return f"{float(mant):.2g}×10{str(int(exp)).translate(_SUP)}"


def _fmt_x(knob: str, v: Any) -> str:
    if knob == "straggler_q":
        return _fmt_q(float(v))
    if knob == "replica.lag.time.max.ms":
        return f"{int(v) // 1000} s"
    if knob == "straggler_ms":
        return _fmt_ms(float(v))
    return str(v)


def _snap(kind: str, knob: str, value: float, notes: list[str], shown: str | None = None,
          pool: list[Any] | None = None) -> Any:
    """The grid value of `knob` nearest to `value` (log scale for LOG_KNOBS), noting a move."""
    grid = [g for g in (pool if pool is not None else curves.axis(kind, knob, CURVES_DIR)) if g is not None]
    if not grid:
        raise ValueError(f"no grid values for {knob}")

    def dist(g: float) -> float:
        if knob in curves.LOG_KNOBS:
            return abs(math.log10(max(g, 1e-9)) - math.log10(max(value, 1e-9)))
        return abs(g - value)

    best = min(grid, key=lambda g: (dist(g), g))
    if float(best) != float(value):
        notes.append(f"{shown or knob}={_fmt_x(knob, value) if knob != 'replication.factor' else value} "
                     f"was not simulated; the cursor shows the nearest simulated value, "
                     f"{_fmt_x(knob, best)}.")
    return best


def _latency_cursor(knobs: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    want = dict(LATENCY_DEFAULTS)
    for key in want:
        v = _num(knobs.get(key))
        if v is not None:
            want[key] = v
    cur: dict[str, Any] = {}
    for key in ("replication.factor", "min.insync.replicas", "replica.lag.time.max.ms", "load_rps"):
        cur[key] = _snap("latency", key, want[key], notes)
    cur["straggler_q"] = _snap("latency", "straggler_q", want["straggler_q"], notes)
    if cur["straggler_q"] == 0:
        cur["straggler_ms"] = 0
    else:
        stalls = [g for g in curves.axis("latency", "straggler_ms", CURVES_DIR) if g]
        cur["straggler_ms"] = _snap("latency", "straggler_ms", want["straggler_ms"] or stalls[0], notes,
                                    pool=stalls)
    return cur


# --------------------------------------------------------------------------------------------
# SVG helpers


def _e(text: Any) -> str:
    return escape(str(text), quote=True)


def _marker(shape: str, x: float, y: float, r: float, colour: str, *, hollow: bool = False,
            cls: str = "pt") -> str:
    fill = "var(--panel, #fff)" if hollow else colour
    common = f'class="{cls}" fill="{fill}" stroke="{colour}" stroke-width="2"'
    if shape == "square":
        return f'<rect {common} x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}"/>'
    if shape == "triangle":
        pts = (f"{x:.1f},{y - r * 1.2:.1f} {x + r * 1.1:.1f},{y + r * 0.8:.1f} "
               f"{x - r * 1.1:.1f},{y + r * 0.8:.1f}")
        return f'<polygon {common} points="{pts}"/>'
    if shape == "diamond":
        pts = (f"{x:.1f},{y - r * 1.3:.1f} {x + r * 1.1:.1f},{y:.1f} {x:.1f},{y + r * 1.3:.1f} "
               f"{x - r * 1.1:.1f},{y:.1f}")
        return f'<polygon {common} points="{pts}"/>'
    if shape == "down":  # "less than": a downward triangle
        pts = (f"{x - r * 1.1:.1f},{y - r * 0.8:.1f} {x + r * 1.1:.1f},{y - r * 0.8:.1f} "
               f"{x:.1f},{y + r * 1.2:.1f}")
        return f'<polygon {common} points="{pts}"/>'
    return f'<circle {common} cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}"/>'


class _LogY:
    def __init__(self, lo: float, hi: float, top: float, bottom: float):
        self.lo, self.hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        if self.hi <= self.lo:
            self.hi = self.lo + 1
        self.top, self.bottom = top, bottom

    def __call__(self, v: float) -> float:
        v = max(v, 10.0 ** self.lo)
        frac = (math.log10(v) - self.lo) / (self.hi - self.lo)
        return self.bottom - min(max(frac, 0.0), 1.0) * (self.bottom - self.top)

    def unclamped(self, v: float) -> float:
        frac = (math.log10(max(v, 1e-300)) - self.lo) / (self.hi - self.lo)
        return self.bottom - frac * (self.bottom - self.top)

    def ticks(self, max_labels: int = 6) -> list[int]:
        span = self.hi - self.lo
        step = max(1, math.ceil(span / max_labels))
        return list(range(self.hi, self.lo - 1, -step))


def _xpos(n: int, i: int) -> float:
    inner = W - LEFT - RIGHT
    if n == 1:
        return LEFT + inner / 2
    pad = 28
    return LEFT + pad + i * (inner - 2 * pad) / (n - 1)


def _ms_tick(exp: int) -> str:
    v = 10.0 ** exp
    return _fmt_ms(v) if v >= 1 else f"{v:g} ms"


def _p_tick(exp: int) -> str:
    return "1" if exp == 0 else f"10^{exp}"


def _tick_text(x: float, y: float, label: str, anchor: str = "end", cls: str = "tick") -> str:
    """Tick labels; '10^k' is drawn with a raised exponent."""
    if "^" in label:
        base, exp = label.split("^", 1)
        return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="currentColor" '
                f'font-size="{FONT - 1}">{_e(base)}<tspan dy="-6" font-size="{FONT - 4}">{_e(exp)}</tspan>'
                '</text>')
    return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="currentColor" '
            f'font-size="{FONT - 1}">{_e(label)}</text>')


def _legend(entries: list[tuple[str, str, str, str]], y0: float) -> tuple[list[str], float]:
    """One legend entry per row; a label may wrap onto a second line at "\n"."""
    out = []
    y = y0
    for label, colour, marker, dash in entries:
        if marker == "swatch":
            out.append(f'<rect x="12" y="{y - 8:.1f}" width="32" height="16" fill="currentColor" '
                       'fill-opacity=".08" stroke="currentColor" stroke-opacity=".4" '
                       'stroke-dasharray="2 3"/>')
        else:
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<line x1="12" x2="44" y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" '
                       f'stroke-width="3"{dash_attr}/>')
            if marker:
                out.append(_marker(marker, 28, y, 5, colour))
        first, _, second = label.partition("\n")
        out.append(f'<text x="52" y="{y + 5:.1f}" fill="currentColor" font-size="{FONT}">{_e(first)}</text>')
        if second:
            y += 18
            out.append(f'<text x="52" y="{y + 5:.1f}" fill="currentColor" font-size="{FONT - 1}" '
                       f'font-style="italic">{_e(second)}</text>')
        y += 22
    return out, y


def _svg(chart_id: str, title: str, desc: str, height: float, body: list[str]) -> Markup:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart-svg" viewBox="0 0 {W} {height:.0f}" '
            f'role="img" aria-labelledby="{chart_id}-t {chart_id}-d" '
            f'font-family="system-ui, -apple-system, Segoe UI, Roboto, DejaVu Sans, sans-serif">'
            f'<title id="{chart_id}-t">{_e(title)}</title><desc id="{chart_id}-d">{_e(desc)}</desc>')
    return Markup(head + "".join(body) + "</svg>")


# --------------------------------------------------------------------------------------------
# latency chart (D1)


def latency_chart(knobs: dict[str, Any], axis: str = "straggler_q") -> dict[str, Any]:
    """P999/P99/P50 produce latency per ack mode against one knob, the others at the cursor."""
    if axis not in AXES:
        raise ValueError(f"no latency axis {axis!r}; choose one of {', '.join(AXES)}")
    notes: list[str] = []
    cur = _latency_cursor(knobs, notes)
    xs = [v for v in curves.axis("latency", axis, CURVES_DIR) if v is not None]
    points = []
    for x in xs:
        ask = dict(cur, **{axis: x})
        if axis == "straggler_q":
            ask["straggler_ms"] = 0 if x == 0 else (cur["straggler_ms"] or 2000)
        pt = curves.latency(CURVES_DIR, **ask)
        if not pt["exact"]:
            notes.append(f"At {AXES[axis]}={_fmt_x(axis, x)} the nearest stored point differs from the "
                         f"other knobs; its own knobs are listed in the table.")
        points.append((x, pt))
    cursor_i = xs.index(cur[axis])
    chart_id = f"lat-{axis.replace('.', '-').replace('_', '-')}"

    # layout: legend, then three stacked panels sharing the x axis
    legend_entries = [(label, colour, marker, dash) for _, label, _, colour, marker, dash in LAT_MODES]
    legend_entries.append(("shaded: 95 % interval; ringed: your knobs", "#888888", "", "1 3"))
    body, y = _legend(legend_entries, 20)
    panel_h, gap = 150, 46
    top0 = y + 10
    values = [v for _, pt in points for m, *_ in LAT_MODES for p, _ in PERCENTILES
              for v in (pt["series"][m][p] or [None])[0:3] if v]
    ymax_data = max(values + [10.0])
    ys = _LogY(max(min(values + [1.0]), 1.0), max(ymax_data, 10.0), 0, 1)
    n = len(xs)
    cx = _xpos(n, cursor_i)
    for pi, (pkey, plabel) in enumerate(PERCENTILES):
        top = top0 + pi * (panel_h + gap)
        bottom = top + panel_h
        sy = _LogY(10.0 ** ys.lo, 10.0 ** ys.hi, top, bottom)
        body.append(f'<rect class="plot" x="{LEFT}" y="{top:.1f}" width="{W - LEFT - RIGHT}" '
                    f'height="{panel_h}" fill="none" stroke="currentColor" stroke-opacity=".35"/>')
        for exp in sy.ticks(5):
            ty = sy(10.0 ** exp)
            body.append(f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" '
                        f'stroke="currentColor" stroke-opacity=".15"/>')
            body.append(_tick_text(LEFT - 6, ty + 5, _ms_tick(exp)))
        body.append(f'<text class="panel-label" x="{LEFT + 8}" y="{top + 20:.1f}" fill="currentColor" '
                    f'font-size="{FONT + 1}" font-weight="700">{plabel}</text>')
        # cursor
        body.append(f'<line class="cursor" x1="{cx:.1f}" x2="{cx:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" '
                    f'stroke="currentColor" stroke-width="2" stroke-dasharray="5 4" stroke-opacity=".7"/>')
        for mi, (m, _label, _proposal, colour, marker, dash) in enumerate(LAT_MODES):
            off = (mi - 1.5) * 4  # overlapping modes (the two proposals often agree) stay visible
            trip = [pt["series"][m][pkey] for _, pt in points]
            # band from the stored intervals
            upper = [(_xpos(n, i) + off, sy(t[2])) for i, t in enumerate(trip) if t]
            lower = [(_xpos(n, i) + off, sy(t[1])) for i, t in enumerate(trip) if t]
            if len(upper) >= 2:
                poly = " ".join(f"{x:.1f},{yy:.1f}" for x, yy in upper + lower[::-1])
                body.append(f'<polygon class="band" points="{poly}" fill="{colour}" fill-opacity=".18" '
                            'stroke="none"/>')
            line = [(_xpos(n, i) + off, sy(t[0]) if t else top + 2) for i, t in enumerate(trip)]
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            pts = " ".join(f"{x:.1f},{yy:.1f}" for x, yy in line)
            body.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2.5"'
                        f'{dash_attr} points="{pts}"/>')
            for i, t in enumerate(trip):
                x_ = _xpos(n, i) + off
                if t is None:
                    body.append(_marker("down", x_, top + 8, 5, colour, hollow=True))
                    continue
                body.append(f'<line class="whisker" x1="{x_:.1f}" x2="{x_:.1f}" y1="{sy(t[1]):.1f}" '
                            f'y2="{sy(t[2]):.1f}" stroke="{colour}" stroke-width="1.5"/>')
                body.append(_marker(marker, x_, sy(t[0]), 4.5, colour))
                if i == cursor_i:
                    body.append(f'<circle class="cursor-pt" cx="{x_:.1f}" cy="{sy(t[0]):.1f}" r="9" '
                                f'fill="none" stroke="{colour}" stroke-width="2"/>')
        # x tick labels under every panel (stacked panels on a phone are far apart)
        for i, x in enumerate(xs):
            body.append(_tick_text(_xpos(n, i), bottom + 18, _fmt_x(axis, x), anchor="middle"))
    total_h = top0 + 3 * (panel_h + gap) + 10
    axis_label = {"straggler_q": "share of time each follower straggles\n"
                                 "(a simulator setting, not a Kafka config)",
                  "replication.factor": "replication.factor",
                  "replica.lag.time.max.ms": "replica.lag.time.max.ms"}[axis]
    for li, text in enumerate(axis_label.split("\n")):
        body.append(f'<text class="axis-label" x="{(LEFT + W - RIGHT) / 2:.1f}" '
                    f'y="{total_h - 6 + li * 18:.1f}" text-anchor="middle" fill="currentColor" '
                    f'font-size="{FONT - li}">{_e(text)}</text>')
    total_h += 18 * axis_label.count("\n")
    mid = top0 + 1.5 * (panel_h + gap)
    body.append(f'<text class="axis-label" transform="translate(14 {mid:.1f}) rotate(-90)" '
                f'text-anchor="middle" fill="currentColor" font-size="{FONT}">'
                'produce latency, ms (log scale)</text>')

    at = points[cursor_i][1]["series"]
    cursor_text = _cursor_words(cur, axis)
    title = f"Produce latency against {AXES[axis]}"
    desc = (f"Log-scale produce latency (P999, P99, P50) for acks=1, acks=all and two proposals that are not "
            f"Kafka, against {AXES[axis]} ({', '.join(_fmt_x(axis, x) for x in xs)}). At your knobs "
            f"({cursor_text}): " + "; ".join(
                f"{label} P999 {_fmt_ms((at[m]['p999'] or [None])[0])}" for m, label, *_ in LAT_MODES) + ".")
    table = _latency_table(axis, points)
    return {
        "id": chart_id, "kind": "latency", "axis": axis, "title": title, "desc": desc,
        "svg": _svg(chart_id, title, desc, total_h, body), "table": table, "notes": _dedupe(notes),
        "cursor": {"index": cursor_i, "value": cur[axis], "label": _fmt_x(axis, cur[axis]), "knobs": cur},
        "summary": _latency_summary(cur, at),
    }


def _cursor_words(cur: dict[str, Any], axis: str | None = None) -> str:
    parts = [f"RF {cur['replication.factor']}", f"min.insync.replicas {cur['min.insync.replicas']}",
             f"replica.lag.time.max.ms {int(cur['replica.lag.time.max.ms']) // 1000} s",
             f"straggling {_fmt_q(cur['straggler_q'])} of the time"
             + (f" with {_fmt_ms(cur['straggler_ms'])} fetches" if cur["straggler_q"] else ""),
             f"{int(cur['load_rps'])} requests/s"]
    return ", ".join(parts)


def _latency_summary(cur: dict[str, Any], at: dict[str, Any]) -> str:
    a = (at["acks_all"]["p999"] or [None])[0]
    q = (at["quorum"]["p999"] or [None])[0]
    one = (at["acks_1"]["p999"] or [None])[0]
    return (f"At your knobs ({_cursor_words(cur)}), one in a thousand acks=all writes waits longer than "
            f"{_fmt_ms(a)}; acks=1 {_fmt_ms(one)}; the KIP-250 quorum proposal {_fmt_ms(q)} "
            f"(simulated over {at['acks_all']['n']:,} requests).")


def _latency_table(axis: str, points: list[tuple[Any, dict[str, Any]]]) -> dict[str, Any]:
    headers = [AXES[axis], "ack mode", "P50", "P99", "P999", "requests simulated (effective)", "timed out"]
    rows = []
    for x, pt in points:
        for m, label, *_ in LAT_MODES:
            s = pt["series"][m]
            cells = [_fmt_x(axis, x), label]
            for p in ("p50", "p99", "p999"):
                t = s[p]
                cells.append("timed out (> 30 s)" if t is None else
                             f"{_fmt_ms(t[0])} (95 % CI {_fmt_ms(t[1])}–{_fmt_ms(t[2])})")
            cells.append(f"{s['n']:,} ({s['n_eff']:,.0f})")
            cells.append(f"{s['timeout_frac'] * 100:.3g} %")
            rows.append(cells)
    return {"caption": "The numbers behind the chart: each row is one stored grid point "
                       "(95 % order-statistic intervals; stragglers oversampled, so the effective "
                       "sample size is smaller than the count)",
            "headers": headers, "rows": rows}


# --------------------------------------------------------------------------------------------
# loss chart (D4)


def _loss_cursor(knobs: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    want = dict(LOSS_DEFAULTS)
    for key in ("replication.factor", "min.insync.replicas", "afr", "repair_h"):
        v = _num(knobs.get(key))
        if v is not None:
            want[key] = v
    unclean = _bool(knobs.get("unclean.leader.election.enable"))
    cur: dict[str, Any] = {
        "replication.factor": _snap("loss", "replication.factor", want["replication.factor"], notes),
        "min.insync.replicas": _snap("loss", "min.insync.replicas", want["min.insync.replicas"], notes),
        "afr": _snap("loss", "afr", want["afr"], notes, shown="annual failure rate"),
        "repair_h": _snap("loss", "repair_h", want["repair_h"], notes, shown="repair time (hours)"),
        "unclean.leader.election.enable": bool(unclean) if unclean is not None else False,
    }
    flush = _num(knobs.get("flush.messages"))
    # the curves know per-message fsync (1) or none; any larger value behaves like Kafka's default
    cur["flush.messages"] = 1 if flush is not None and flush <= 1 else None
    return cur


def _loss_point(cur: dict[str, Any], rf: int, extra: dict[str, Any]) -> dict[str, Any]:
    ask = {
        "replication.factor": rf,
        # Kafka's effective minimum: min(min.insync.replicas, RF) (Partition.scala 389-391)
        "min.insync.replicas": min(int(cur["min.insync.replicas"]), rf),
        "afr": cur["afr"], "repair_h": cur["repair_h"],
        "unclean.leader.election.enable": cur["unclean.leader.election.enable"],
        "flush.messages": cur["flush.messages"] if extra.get("power_events_per_year") else None,
        **extra,
    }
    return curves.loss(CURVES_DIR, **ask)


def _closed_form_year(pt: dict[str, Any]) -> float | None:
    """1 - exp(-RF * AFR * p^(RF-1)) computed without underflow (the stored value rounds to 0)."""
    cf = pt.get("closed_form")
    if not cf:
        return None
    rf, afr, p = int(pt["knobs"]["replication.factor"]), float(pt["knobs"]["afr"]), float(cf["p"])
    rate = rf * afr * p ** (rf - 1)
    return -math.expm1(-rate)


def loss_chart(knobs: dict[str, Any]) -> dict[str, Any]:
    """P(an acknowledged write is lost in a year) against RF: closed form and Monte Carlo."""
    notes: list[str] = []
    cur = _loss_cursor(knobs, notes)
    rfs = [int(v) for v in curves.axis("loss", "replication.factor", CURVES_DIR)]
    data: dict[str, list[dict[str, Any]]] = {}
    for key, _label, extra, *_ in LOSS_SERIES:
        data[key] = [_loss_point(cur, rf, extra) for rf in rfs]
        for rf, pt in zip(rfs, data[key], strict=True):
            if not pt["exact"]:
                notes.append(f"RF {rf}, {_label}: the nearest stored point differs; "
                             "its knobs are in the table.")
    closed = [_closed_form_year(pt) for pt in data["independent"]]
    trials = data["independent"][0]["trials"]
    floor = data["independent"][-1]["p_loss_year"]["ci95"][1]  # the k=0 upper bound
    cursor_i = rfs.index(int(cur["replication.factor"]))

    below = any(v is not None and 0 < v < CLIP for v in closed)
    legend = [(CLOSED_FORM[1] + ("\n(it runs off the bottom below 10⁻¹²)" if below else ""),
               CLOSED_FORM[2], "", "6 4")]
    legend += [(label, colour, marker, dash) for _, label, _, colour, marker, dash in LOSS_SERIES]
    legend.append(("hollow ▽: none seen, true value below it", "#888888", "", "1 3"))
    legend.append((f"too rare to see in {trials:,} partition-years", "", "swatch", ""))
    body, y = _legend(legend, 20)
    top = y + 14
    plot_h = 330
    bottom = top + plot_h
    vals = [v for v in closed if v] + [pt["p_loss_year"]["ci95"][1] for s in data.values() for pt in s]
    vals += [pt["p_loss_year"]["p"] for s in data.values() for pt in s if pt["p_loss_year"]["p"] > 0]
    lo = max(min(v for v in vals if v > 0), CLIP)
    sy = _LogY(lo, 1.0, top, bottom)
    n = len(rfs)
    body.append(f'<rect class="plot" x="{LEFT}" y="{top:.1f}" width="{W - LEFT - RIGHT}" height="{plot_h}" '
                f'fill="none" stroke="currentColor" stroke-opacity=".35"/>')
    for exp in sy.ticks(8):
        ty = sy(10.0 ** exp)
        body.append(f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" '
                    f'stroke="currentColor" stroke-opacity=".15"/>')
        body.append(_tick_text(LEFT - 6, ty + 5, _p_tick(exp)))
    # what the Monte Carlo can resolve
    fy = sy(floor)
    body.append(f'<rect class="unresolved" x="{LEFT}" y="{fy:.1f}" width="{W - LEFT - RIGHT}" '
                f'height="{bottom - fy:.1f}" fill="currentColor" fill-opacity=".05"/>')
    body.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{fy:.1f}" y2="{fy:.1f}" stroke="currentColor" '
                f'stroke-opacity=".5" stroke-dasharray="2 3"/>')
    cx = _xpos(n, cursor_i)
    body.append(f'<line class="cursor" x1="{cx:.1f}" x2="{cx:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" '
                f'stroke="currentColor" stroke-width="2" stroke-dasharray="5 4" stroke-opacity=".7"/>')
    # the closed form keeps falling below the chart's floor: draw it unclamped and clip it
    cf_pts = [(_xpos(n, i), sy.unclamped(v)) for i, v in enumerate(closed) if v]
    cf_str = " ".join(f"{x:.1f},{yy:.1f}" for x, yy in cf_pts)
    body.append(f'<clipPath id="loss-rf-clip"><rect x="{LEFT}" y="{top:.1f}" width="{W - LEFT - RIGHT}" '
                f'height="{plot_h}"/></clipPath>')
    body.append(f'<polyline class="series closed-form" fill="none" stroke="{CLOSED_FORM[2]}" '
                f'stroke-width="2.5" stroke-dasharray="6 4" points="{cf_str}" '
                'clip-path="url(#loss-rf-clip)"/>')
    offsets = {"independent": -9, "rack_random": -3, "rack_aware": 3, "site": 9}
    for key, _label, _extra, colour, marker, dash in LOSS_SERIES:
        line = []
        for i, pt in enumerate(data[key]):
            x_ = _xpos(n, i) + offsets[key]
            L = pt["p_loss_year"]
            hi_y, lo_y = sy(L["ci95"][1]), sy(max(L["ci95"][0], 10.0 ** sy.lo))
            if L["k"] == 0:
                body.append(_marker("down", x_, hi_y, 5, colour, hollow=True, cls="pt bound"))
                ring_y = hi_y
            else:
                body.append(f'<line class="whisker" x1="{x_:.1f}" x2="{x_:.1f}" y1="{hi_y:.1f}" '
                            f'y2="{lo_y:.1f}" stroke="{colour}" stroke-width="1.5"/>')
                py = sy(L["p"])
                line.append((x_, py))
                body.append(_marker(marker, x_, py, 4.5, colour))
                ring_y = py
            if i == cursor_i:
                body.append(f'<circle class="cursor-pt" cx="{x_:.1f}" cy="{ring_y:.1f}" r="9" fill="none" '
                            f'stroke="{colour}" stroke-width="2"/>')
        if len(line) >= 2:
            body.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2"'
                        f'{" stroke-dasharray=" + chr(34) + dash + chr(34) if dash else ""} '
                        f'points="{" ".join(f"{x:.1f},{yy:.1f}" for x, yy in line)}"/>')
    for i, rf in enumerate(rfs):
        body.append(_tick_text(_xpos(n, i), bottom + 20, str(rf), anchor="middle"))
    total_h = bottom + 52
    body.append(f'<text class="axis-label" x="{(LEFT + W - RIGHT) / 2:.1f}" y="{total_h - 8:.1f}" '
                f'text-anchor="middle" fill="currentColor" font-size="{FONT}">replication.factor</text>')
    body.append(f'<text class="axis-label" transform="translate(14 {(top + bottom) / 2:.1f}) rotate(-90)" '
                f'text-anchor="middle" fill="currentColor" font-size="{FONT}">'
                'P(acked write lost) per year</text>')

    p = data["independent"][0]["closed_form"]["p"] if data["independent"][0]["closed_form"] else None
    title = "Chance of losing an acknowledged write in a year, against replication factor"
    at = {key: data[key][cursor_i]["p_loss_year"] for key, *_ in LOSS_SERIES}
    desc = (f"Log-scale probability per partition-year, RF 1 to {rfs[-1]}, annual failure rate "
            f"{cur['afr'] * 100:g} % per broker, {int(cur['repair_h'])} h to repair"
            + (f" (so p = {_fmt_p(p)})" if p else "") + ". At RF "
            f"{rfs[cursor_i]}: closed form {_fmt_p(closed[cursor_i] or 0)}; "
            + "; ".join(f"{label} {_loss_words(at[key], trials)}" for key, label, *_ in LOSS_SERIES) + ".")
    table = _loss_table(rfs, data, closed)
    return {
        "id": "loss-rf", "kind": "loss", "axis": "replication.factor", "title": title, "desc": desc,
        "svg": _svg("loss-rf", title, desc, total_h, body), "table": table, "notes": _dedupe(notes),
        "cursor": {"index": cursor_i, "value": rfs[cursor_i], "label": str(rfs[cursor_i]), "knobs": cur},
        "summary": _loss_summary(cur, rfs[cursor_i], closed[cursor_i], at, trials, p),
        "p": p,
    }


def _loss_words(L: dict[str, Any], trials: int) -> str:
    if L["k"] == 0:
        return f"< {_fmt_p(L['ci95'][1])} (none in {trials:,})"
    return f"{_fmt_p(L['p'])} ({L['k']:,} in {trials:,})"


def _loss_summary(cur: dict[str, Any], rf: int, closed: float | None, at: dict[str, Any], trials: int,
                  p: float | None) -> str:
    text = (f"With {cur['afr'] * 100:g} % of brokers failing per year and {int(cur['repair_h'])} h to "
            f"rebuild a replica, p = {_fmt_p(p or 0)} is the chance a given replica is down at a random "
            f"moment. At RF {rf} the closed form gives {_fmt_p(closed or 0)} per year if failures are "
            f"independent; the Monte Carlo saw {_loss_words(at['independent'], trials)}. Add one rack power "
            f"cut a year and random placement gives {_loss_words(at['rack_random'], trials)}, one replica "
            f"per rack {_loss_words(at['rack_aware'], trials)}.")
    return text


def _loss_table(rfs: list[int], data: dict[str, list[dict[str, Any]]],
                closed: list[float | None]) -> dict[str, Any]:
    headers = ["RF", "failures", "P(acked loss) per year", "95 % CI", "lost years / simulated", "closed form",
               "stored knobs"]
    rows = []
    for i, rf in enumerate(rfs):
        for key, label, *_ in LOSS_SERIES:
            pt = data[key][i]
            L = pt["p_loss_year"]
            k = pt["knobs"]
            est = f"< {_fmt_p(L['ci95'][1])}" if L["k"] == 0 else _fmt_p(L["p"])
            rows.append([str(rf), label, est, f"{_fmt_p(L['ci95'][0])}–{_fmt_p(L['ci95'][1])}",
                         f"{L['k']:,} / {pt['trials']:,}",
                         _fmt_p(closed[i]) if key == "independent" and closed[i] is not None else "—",
                         f"min.insync.replicas {k['min.insync.replicas']}, unclean "
                         f"{'on' if k['unclean.leader.election.enable'] else 'off'}, flush.messages "
                         f"{k['flush.messages'] if k['flush.messages'] is not None else 'never'}"])
    return {"caption": "The numbers behind the chart: Clopper-Pearson 95 % intervals, so a year count of "
                       "0 still has an upper bound; the closed form assumes independent failures",
            "headers": headers, "rows": rows}


def _dedupe(items: list[str]) -> list[str]:
    seen: list[str] = []
    for it in items:
        if it not in seen:
            seen.append(it)
    return seen


# --------------------------------------------------------------------------------------------
# the page slot


def _knob_dict(state: Any) -> dict[str, Any]:
    try:
        return dict(getattr(state, "knobs", ()) or ())
    except (TypeError, ValueError):
        return {}


def _provenance(kind: str) -> str:
    doc = curves.load(kind, CURVES_DIR)
    return (f"{doc['grid']} grid, seed {doc['seed']}, {len(doc['points'])} points, pipeline commit "
            f"{str(doc['source_commit'])[:10]}")


def charts_panel(scene: Any, state: Any, timeline: Any = None) -> dict[str, Any] | None:
    """The chart panel of a scene whose `panels` name "latency_chart" or "loss_chart", else None.

    Never raises for bad curve files or odd knob values: it returns a dict whose `unavailable`
    says so, with a note a learner can read.
    """
    panels = list(getattr(scene, "panels", None) or [])
    wanted = [p for p in panels if p in ("latency_chart", "loss_chart")]
    if not wanted:
        return None
    knobs = _knob_dict(state)
    out: dict[str, Any] = {"charts": [], "notes": [], "unavailable": False, "note": None, "sources": []}
    try:
        if "latency_chart" in wanted:
            first = latency_chart(knobs, "straggler_q")
            first["open"] = True
            out["charts"].append(first)
            for axis in ("replication.factor", "replica.lag.time.max.ms"):
                c = latency_chart(knobs, axis)
                c["open"] = False
                out["charts"].append(c)
            out["sources"].append("Latency: " + _provenance("latency") + ". Load 1000 requests/s unless "
                                  "your knobs say otherwise; followers' usual fetch delay is lognormal, "
                                  "median 3 ms.")
            out["lead"] = first["summary"]
        if "loss_chart" in wanted:
            c = loss_chart(knobs)
            c["open"] = True
            out["charts"].append(c)
            out["sources"].append("Loss: " + _provenance("loss") + ". Power cuts take a rack's "
                                  "unflushed page cache, and its brokers are back after 2 h.")
            out["lead"] = (out.get("lead", "") + " " + c["summary"]).strip()
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError,
            json.JSONDecodeError, ZeroDivisionError) as exc:
        return {"charts": [], "notes": [], "sources": [], "unavailable": True, "lead": None,
                "note": ("Curves unavailable: the precomputed data in data/curves could not be read "
                         f"({type(exc).__name__}). The simulation above still works; regenerate the "
                         "curves with `python -m pipeline run`.")}
    for c in out["charts"]:
        out["notes"].extend(n for n in c["notes"] if n not in out["notes"])
    out["links"] = [{"href": "/scenes/05", "text": "Scene 05: the four durability knobs"}]
    return out


# --------------------------------------------------------------------------------------------
# scene 05's mini panel


def scale_costs(knobs: dict[str, Any] | Any) -> dict[str, Any]:
    """acks=all P999 at the current RF/min ISR and P(acked loss)/year at the current RF, with links.

    `knobs` is a dict of knob strings or a SceneState. Never raises: on a curve problem the dict
    has `unavailable` and a note.
    """
    if not isinstance(knobs, dict):
        knobs = _knob_dict(knobs)
    links = [{"href": "/scenes/d1", "text": "D1 · The slowest follower sets your tail latency"},
             {"href": "/scenes/d4", "text": "D4 · The arithmetic of losing data"}]
    try:
        notes: list[str] = []
        lat_knobs = {k: knobs[k] for k in ("replication.factor", "min.insync.replicas") if k in knobs}
        cur = _latency_cursor(lat_knobs, notes)
        pt = curves.latency(CURVES_DIR, **cur)
        s = pt["series"]["acks_all"]
        p999 = s["p999"]
        loss_keys = ("replication.factor", "min.insync.replicas", "unclean.leader.election.enable")
        loss_cur = _loss_cursor({k: knobs[k] for k in loss_keys if k in knobs}, notes)
        rf = int(loss_cur["replication.factor"])
        ind = _loss_point(loss_cur, rf, LOSS_SERIES[0][2])
        rack = _loss_point(loss_cur, rf, LOSS_SERIES[1][2])
        aware = _loss_point(loss_cur, rf, LOSS_SERIES[2][2])
        trials = ind["trials"]
        closed = _closed_form_year(ind)
        acks = str(knobs.get("acks", "all"))
        rows = [
            {"label": f"acks=all P999 at RF {cur['replication.factor']}, min.insync.replicas "
                      f"{cur['min.insync.replicas']}",
             "value": _fmt_ms(p999[0] if p999 else None),
             "detail": (f"95 % CI {_fmt_ms(p999[1])}–{_fmt_ms(p999[2])}, {s['n']:,} simulated requests; "
                        "a follower straggles (2 s fetches) 0.1 % of the time" if p999 else
                        "requests timed out")
             + ("" if acks in ("all", "-1") else f"; your acks={acks} does not wait for followers")},
            {"label": f"P(acked write lost) per year at RF {rf}, independent failures",
             "value": (f"< {_fmt_p(ind['p_loss_year']['ci95'][1])}" if ind["p_loss_year"]["k"] == 0
                       else _fmt_p(ind["p_loss_year"]["p"])),
             "detail": (f"closed form {_fmt_p(closed or 0)}; {ind['p_loss_year']['k']:,} in {trials:,} "
                        f"simulated partition-years, 4 % of brokers failing a year, 1 day to repair")},
            {"label": "… with one rack power cut a year",
             "value": f"{_loss_words(rack['p_loss_year'], trials)} random placement",
             "detail": f"one replica per rack: {_loss_words(aware['p_loss_year'], trials)}"},
        ]
        return {"unavailable": False, "rows": rows, "notes": _dedupe(notes), "links": links,
                "title": "What these knobs cost at scale", "note": None}
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError,
            json.JSONDecodeError, ZeroDivisionError) as exc:
        return {"unavailable": True, "rows": [], "notes": [], "links": links,
                "title": "What these knobs cost at scale",
                "note": f"Curves unavailable: data/curves could not be read ({type(exc).__name__})."}
