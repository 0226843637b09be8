"""The cluster diagram: what one engine snapshot shows, laid out twice (wide and phone).

`content()` turns a snapshot into what the learner should see, free of coordinates: the producer
and controller boxes, one row per broker (its log, markers, badges), the requests and responses
on the wire, and the timers that decide the lesson. `layout()` places that content in one of two
geometries: WIDE (a label column, the log, a gutter that carries the message arrows, and an
activity column with each node's outgoing messages and timers) and NARROW (a phone: the broker's
name and badges above its log, activity lines under it, no arrows; every message names its
destination in its text). The template draws both SVGs and a container query shows the one that
fits, so the phone never scales a 720-unit drawing down to 7 px text.

Everything that merely ticks with simulated time (the clock, timer values, how long a parked fetch
still waits) is kept under the diagram's `clock` key, apart from what the learner sees change;
`visible_signature` hashes the rest (see app.presenters).

Record states are shown by pattern, border and a glyph as well as colour:

    committed     solid cell            below the leader's high watermark
    uncommitted   hatched, dashed edge  at or above the leader's HW (may still be lost)
    lost          cross-hatched, "!"    acknowledged to the producer, not on the leader
    truncated     ghost, struck out     deleted by truncation or a power loss, drawn in a lane
                                        under the cells, in its own offset's column
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from app.formats import sim_time

RECORD_TEXT_CHARS = 4
EPOCH_PALETTE_SIZE = 6
MAX_PILL_CHARS = 34

STATUS_TEXT = {"running": "running", "crashed": "crashed", "shutdown": "shut down"}
STATUS_GLYPH = {"running": "●", "crashed": "✖", "shutdown": "■", "fenced": "⊘"}
INFLIGHT_STATE_TEXT = {
    "awaiting_response": "awaiting response",
    "backoff": "backing off to retry",
    "waiting_for_leader": "waiting for a leader",
}
INFLIGHT_STATE_SHORT = {
    "awaiting_response": "awaiting reply",
    "backoff": "backoff",
    "waiting_for_leader": "no leader",
}
TRUNCATE_WHY_TEXT = {
    "diverging_epoch": "diverging epoch",
    "high_watermark": "truncated to HW",
    "power_loss": "lost in power loss",
    "disk_lost": "lost with the disk",
}
MESSAGE_CLASS = {
    "fetch": "fetch",
    "fetch_held": "held",
    "fetch_response": "response",
    "produce": "produce",
    "produce_response": "response",
    "alter_partition": "control",
    "alter_partition_response": "control",
    "metadata": "control",
    "heartbeat": "control",
    "heartbeat_response": "control",
}


def short(record: Any, limit: int = RECORD_TEXT_CHARS) -> str:
    text = str(record)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _join(values: list[Any], empty: str = "none") -> str:
    return ", ".join(str(v) for v in values) if values else empty


def _ids(values: Any) -> list[int]:
    return [int(v) for v in (values or [])]


def _set(values: Any) -> str:
    return "{" + ", ".join(str(v) for v in values or []) + "}"




# ----------------------------------------------------------------------------------------------
# broker status


def broker_status_parts(broker: dict[str, Any]) -> tuple[str, str, str]:
    """(glyph + state, qualifiers, status class) of a broker."""
    status = broker.get("status", "running" if broker.get("alive", True) else "crashed")
    text = STATUS_TEXT.get(status, status)
    glyph = STATUS_GLYPH.get(status, "●")
    more: list[str] = []
    if broker.get("fenced") and status == "running":
        glyph = STATUS_GLYPH["fenced"]
    if broker.get("fenced"):
        more.append("fenced")
    if status == "running" and not broker.get("fetching", True):
        more.append("not fetching")
    if is_isolated(broker):
        more.append("isolated")
    elif broker.get("isolated_from"):
        more.append("cut off from " + ", ".join(f"B{p}" for p in broker["isolated_from"] if str(p).isdigit()))
    return glyph + " " + text, ", ".join(more), status


def broker_status(broker: dict[str, Any]) -> tuple[str, str]:
    first, more, status = broker_status_parts(broker)
    return (first + ", " + more if more else first), status


def is_isolated(broker: dict[str, Any]) -> bool:
    """Cut off from the controller: the broker's own network is down (an `isolate` without
    `from`), rather than some other broker being cut off from it."""
    return "controller" in (broker.get("isolated_from") or [])


def condition_badges(broker: dict[str, Any], *, replica: bool) -> list[dict[str, str]]:
    """What is wrong with a broker, one badge each: crashed, shut down, fenced, stopped, slow,
    isolated (every one also spelled out in words, so nothing depends on the colour)."""
    status = broker.get("status", "running" if broker.get("alive", True) else "crashed")
    out = []
    if status == "crashed":
        out.append({"text": "✖ crashed", "cls": "bad", "title": "The broker's process is down"})
    elif status == "shutdown":
        out.append({"text": "■ shut down", "cls": "bad", "title": "The broker was shut down"})
    if broker.get("fenced"):
        out.append(
            {
                "text": "⊘ fenced",
                "cls": "bad",
                "title": "The controller fenced it: it cannot lead or join the ISR",
            }
        )
    if status == "running" and not broker.get("fetching", True) and replica:
        out.append(
            {
                "text": "‖ stopped",
                "cls": "warn",
                "title": "Its replica fetcher is stopped: it fetches nothing",
            }
        )
    delay = int(broker.get("fetch_delay_ms") or 0)
    if delay > 0 and status == "running":
        out.append(
            {
                "text": f"slow link +{sim_time(delay)}",
                "cls": "warn",
                "title": f"Each fetch request it sends takes {sim_time(delay)} longer to reach the leader",
            }
        )
    if is_isolated(broker):
        out.append(
            {
                "text": "✂ isolated",
                "cls": "warn",
                "title": "Cut off from the network, the controller included",
            }
        )
    elif broker.get("isolated_from"):
        cut = ", ".join(f"B{p}" for p in broker["isolated_from"] if str(p).isdigit())
        if cut:
            out.append({"text": f"✂ cut off from {cut}", "cls": "warn", "title": f"No link to {cut}"})
    return out


# ----------------------------------------------------------------------------------------------
# content: what to draw, no coordinates yet


def _node(value: Any) -> str:
    """A message end as a node key: "producer", "controller" or "b<id>"."""
    if value in ("producer", "controller"):
        return str(value)
    return f"b{int(value)}"


def _node_name(node: str) -> str:
    return node if node in ("producer", "controller") else "B" + node[1:]


def _records_text(records: list[Any], limit: int = 3) -> str:
    names = [str(r) for r in records]
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f" +{len(names) - limit}"


def _message_text(m: dict[str, Any]) -> str:
    """The words on a message pill, without its destination."""
    kind = m.get("kind")
    if kind == "fetch":
        return f"fetch @{m.get('offset')}"
    if kind == "fetch_held":
        return f"holds B{m.get('src')}'s fetch @{m.get('offset')}"
    if kind == "fetch_response":
        if m.get("diverging"):
            return f"diverging: e{m.get('diverging_epoch')} ends @{m.get('diverging_end_offset')}"
        if m.get("error"):
            return "out of range" if m["error"] == "OFFSET_OUT_OF_RANGE" else str(m["error"])
        n = int(m.get("records") or 0)
        return f"{n} record{'s' if n != 1 else ''}, HW {m.get('hw')}"
    if kind == "produce":
        return f"produce {_records_text(m.get('records') or [])}"
    if kind == "produce_response":
        if m.get("error"):
            return str(m["error"])
        offsets = m.get("offsets") or []
        if not offsets:
            return "ack"
        return f"ack @{offsets[0]}" + (f"-{offsets[-1]}" if offsets[-1] != offsets[0] else "")
    if kind == "alter_partition":
        return f"AlterPartition ISR {_set(m.get('isr'))}"
    if kind == "alter_partition_response":
        return f"AlterPartition: {m.get('error')}"
    if kind == "metadata":
        lead = m.get("leader")
        lead_text = f"B{lead}" if lead not in (None, -1) else "none"
        # before KRaft the controller sent LeaderAndIsr; the engine names it in `api`
        what = "LeaderAndIsr" if m.get("api") == "LeaderAndIsr" else "metadata"
        return f"{what}: leader {lead_text} e{m.get('leader_epoch')}, ISR {_set(m.get('isr'))}"
    return str(m.get("api") or m.get("label") or kind)


def _heartbeat_matters(m: dict[str, Any], brokers: dict[str, Any], t_ms: int, interval: int) -> bool:
    """Routine heartbeats are noise; a registration, a controlled-shutdown request or answer, and
    the heartbeats of a fenced broker or of one whose session is running out are the lesson."""
    api = str(m.get("api") or "")
    if api not in ("BrokerHeartbeat", "BrokerHeartbeat response", "ZooKeeper session"):
        return True
    end = m["src"] if m.get("kind") == "heartbeat" else m.get("dst")
    b = brokers.get(str(end), {})
    if b.get("fenced"):
        return True
    last = b.get("last_heartbeat_ms")
    return last is not None and t_ms - int(last) > 2 * max(1, interval)


def messages_content(view: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Messages grouped into pills (one per sender and text, with every destination) and the
    clock text of each pill that waits (a fetch parked at its leader)."""
    brokers = view.get("brokers", {})
    t_ms = int(view.get("t_ms", 0))
    interval = int((view.get("controller") or {}).get("broker_heartbeat_interval_ms") or 2000)
    pills: list[dict[str, Any]] = []
    by_key: dict[tuple[str, str, str], dict[str, Any]] = {}
    waits: dict[str, str] = {}
    for m in view.get("messages", []) or []:
        kind = m.get("kind")
        if kind in ("heartbeat", "heartbeat_response") and not _heartbeat_matters(m, brokers, t_ms, interval):
            continue
        src, dst = _node(m["src"]), _node(m["dst"])
        text = _message_text(m)
        held = kind == "fetch_held"
        at = dst if held else src
        key = (at, kind, text)
        pill = by_key.get(key)
        if pill is None:
            pill = {
                "key": f"m{len(pills)}",
                "kind": kind,
                "cls": MESSAGE_CLASS.get(kind, "control"),
                "at": at,
                "text": text,
                "to": [],
                "labels": [],
                "held": held,
            }
            by_key[key] = pill
            pills.append(pill)
        if not held and dst not in pill["to"]:
            pill["to"].append(dst)
        pill["labels"].append(str(m.get("label") or text))
        if held and m.get("until_ms") is not None:
            waits[pill["key"]] = f"{sim_time(max(0, int(m['until_ms']) - t_ms))} left"
    for pill in pills:
        if pill["held"]:
            pill["full"] = pill["text"]
        else:
            pill["full"] = pill["text"] + " → " + ", ".join(_node_name(n) for n in pill["to"])
        pill["shown"] = short(pill["full"], MAX_PILL_CHARS)
        pill["title"] = "; ".join(dict.fromkeys(pill["labels"]))
    return pills, waits


def _add_timer(
    visible: list[dict[str, Any]],
    clock: dict[str, Any],
    bid: int,
    kind: str,
    label: str,
    elapsed: int,
    limit: int,
    *,
    title: str,
    sentence: str,
) -> None:
    """One countdown bar: what it is (visible content) and how far it has run (clock, which only
    ticks with time and so is left out of the visible signature)."""
    key = f"{kind}{bid}"
    visible.append({"key": key, "broker": bid, "kind": kind, "label": label, "title": title})
    clock[key] = {
        "text": f"{sim_time(elapsed)} / {sim_time(limit)}",
        "frac": round(min(1.0, elapsed / limit), 3),
        "sentence": sentence,
    }


def timers_content(
    view: dict[str, Any], leader: Any, isr: set[int]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The two timers that decide failover lessons, as (visible part, clock part):

    - a follower in the ISR that has not been caught up for a while, against
      replica.lag.time.max.ms (the leader drops it from the ISR when it runs out);
    - a broker the controller has not heard from, against broker.session.timeout.ms (the
      controller fences it when it runs out).
    """
    t_ms = int(view.get("t_ms", 0))
    part = view.get("partition", {}) or {}
    ctl = view.get("controller", {}) or {}
    lag_max = part.get("replica_lag_time_max_ms")
    fetch_wait = int(part.get("replica_fetch_wait_max_ms") or 500)
    session = ctl.get("broker_session_timeout_ms")
    interval = int(ctl.get("broker_heartbeat_interval_ms") or 2000)
    visible: list[dict[str, Any]] = []
    clock: dict[str, Any] = {}
    for key in sorted(view.get("brokers", {}), key=int):
        b = view["brokers"][key]
        bid = int(key)
        troubled = bool(
            b.get("status", "running") != "running"
            or not b.get("fetching", True)
            or b.get("isolated_from")
            or int(b.get("fetch_delay_ms") or 0) > 0
        )
        caught = b.get("caught_up_ms")
        if lag_max and caught is not None and bid != leader and bid in isr:
            elapsed = max(0, t_ms - int(caught))
            if troubled or elapsed > 2 * fetch_wait:
                _add_timer(
                    visible, clock, bid, "lag", "ISR lag", elapsed, lag_max,
                    title=f"Time since B{bid} was last caught up with the leader; at "
                    f"replica.lag.time.max.ms ({sim_time(lag_max)}) the leader drops it from the ISR",
                    sentence=f"B{bid} last caught up {sim_time(elapsed)} ago; the leader drops it from "
                    f"the ISR at {sim_time(lag_max)} (replica.lag.time.max.ms)",
                )
        last = b.get("last_heartbeat_ms")
        if session and last is not None and not b.get("fenced") and b.get("replica", True):
            elapsed = max(0, t_ms - int(last))
            silent = not b.get("alive", True) or is_isolated(b)
            if silent or elapsed > 2 * interval:
                if ctl.get("kraft", True):
                    title = (f"Time since the controller last heard B{bid}'s heartbeat; at "
                             f"broker.session.timeout.ms ({sim_time(session)}) it fences the broker")
                    sentence = (f"the controller last heard from B{bid} {sim_time(elapsed)} ago; it fences "
                                f"the broker at {sim_time(session)} (broker.session.timeout.ms)")
                else:  # before KRaft: a ZooKeeper session (the engine keeps KRaft's timing)
                    title = (f"Time since B{bid}'s ZooKeeper session last heard from it; when the session "
                             f"expires ({sim_time(session)} here) the controller takes it out of every ISR")
                    sentence = (f"B{bid}'s ZooKeeper session last heard from it {sim_time(elapsed)} ago; it "
                                f"expires at {sim_time(session)} and the controller acts on the expiry")
                _add_timer(visible, clock, bid, "session", "session", elapsed, session,
                           title=title, sentence=sentence)  # fmt: skip
    return visible, clock


# ----------------------------------------------------------------------------------------------
# geometry


@dataclass(frozen=True)
class Geometry:
    name: str
    width: int
    stacked: bool  # the phone: name and badges above the log, activity under it
    log_left: int
    log_width: int
    gutter_left: int
    act_left: int
    cell_max: float
    cell_min: float
    min_cells: int
    char_w: float  # the width of one character of pill or badge text, estimated
    cell_h: int


WIDE = Geometry("wide", 720, False, 138, 236, 380, 418, 30, 14, 8, 6.6, 30)
NARROW = Geometry("narrow", 310, True, 50, 252, 0, 8, 34, 14, 6, 7.0, 32)
LABEL_X = 8
PILL_H = 15
ITEM_H = 18
TIMER_BAR_W = 48
BADGE_H = 15


@dataclass
class Cell:
    x: float
    y: float
    w: float
    h: float
    text: str
    record: str
    offset: int | None
    epoch: int | None
    epoch_class: str
    state: str  # committed | uncommitted | lost | truncated
    glyph: str
    title: str

    def __post_init__(self) -> None:
        self.x, self.y, self.w = round(self.x, 1), round(self.y, 1), round(self.w, 1)
        self.cx = round(self.x + self.w / 2, 1)  # text anchor
        self.ty = round(self.y + min(14, self.h - 3), 1)  # record text baseline
        self.ey = round(self.y + self.h - 4, 1)  # epoch text baseline
        self.gx = round(self.x + self.w - 5, 1)  # glyph position (top right corner)
        self.x2 = round(self.x + self.w, 1)
        self.my = round(self.y + self.h / 2, 1)


def _compaction_marks(r: dict[str, Any], cell_y: float, cell_w: float,
                      g: Geometry) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Scene 05a: a dotted slot per run of offsets the cleaner removed, and the cleaner point as a
    line through the log (the segments under it are marked clean or dirty)."""
    slots = []
    for run in r.get("cleaned") or []:
        x = round(g.log_left + run["first"] * cell_w, 1)
        w = round((run["last"] - run["first"] + 1) * cell_w - 2, 1)
        slots.append({"x": x, "y": round(cell_y + 3, 1), "w": w, "h": g.cell_h - 6, "title": run["title"]})
    cleaner = r.get("cleaner")
    if cleaner is None:
        return slots, None
    # the line only: the segments under the log say which side is clean and which dirty
    x = round(g.log_left + cleaner["point"] * cell_w - 1, 1)
    return slots, {"x": x, "y1": round(cell_y - 2, 1), "y2": round(cell_y + g.cell_h + 2, 1),
                   "title": cleaner["title"]}


def _text_w(text: str, g: Geometry) -> float:
    """An estimate of a pill's or badge's text width (there is no font metric on the server):
    digits, capitals and symbols run wider than the average letter, narrow punctuation less."""
    units = sum(1.2 if (c.isdigit() or c.isupper() or ord(c) > 127) else 0.55 if c in " .,:;'|" else 1.0
                for c in text)
    return round(units * g.char_w + 12, 1)


def _flow(
    items: list[dict[str, Any]], x0: float, y0: float, right: float, g: Geometry, h: float, slack: float = 1.0
) -> float:
    """Place badges left to right, wrapping at `right`; return the bottom y. `slack` widens the
    estimate for long badges, whose estimate errs more."""
    x, y = x0, y0
    for item in items:
        w = round(_text_w(item["text"], g) * slack, 1)
        if x > x0 and x + w > right:
            x, y = x0, y + h + 3
        item.update(x=round(x, 1), y=round(y, 1), w=w, tx=round(x + 5, 1), ty=round(y + h - 3.5, 1))
        x += w + 4
    return y + h if items else y0


def _place_items(items: list[dict[str, Any]], x: float, y: float, g: Geometry) -> float:
    """Activity items (message pills and timers) one per line; return the bottom y."""
    for item in items:
        item_y = round(y, 1)
        if item["type"] == "pill":
            w = _text_w(item["shown"] + (" · 0.0 s left" if item["held"] else ""), g)
            item.update(
                x=round(x, 1), y=item_y, w=w, h=PILL_H, tx=round(x + 5, 1), ty=round(item_y + 11.5, 1)
            )
        else:
            item.update(
                x=round(x, 1),
                y=item_y,
                bar_x=round(x, 1),
                bar_y=round(item_y + 4, 1),
                bar_w=TIMER_BAR_W,
                tx=round(x + TIMER_BAR_W + 6, 1),
                ty=round(item_y + 12, 1),
                h=PILL_H,
            )
        y += ITEM_H
    return y



def _top_boxes(
    model: dict[str, Any],
    g: Geometry,
    nodes: tuple[str, ...],
    items_at: dict[str, list[dict[str, Any]]],
    ports: dict[str, dict[str, float]],
) -> tuple[list[dict[str, Any]], float, float | None]:
    """The boxes over the rows (the producer, and the controller or the consumers, if any): side by
    side on a wide screen, stacked on a phone. Returns the boxes, the y under them and where the
    clock goes on a phone (None on a wide screen: it sits on the offsets line)."""
    W = g.width
    y = 6.0
    boxes = []
    if g.stacked:
        clock_y = y + 12
        y += 18
        specs = [(node, 6, W - 12) for node in nodes]
    else:
        clock_y = None
        specs = [(nodes[0], 6, g.gutter_left - 8)]
        if len(nodes) > 1:
            specs.append((nodes[1], g.act_left - 4, W - g.act_left - 2))
    tops = []
    for node, bx, bw in specs:
        box = model[node]
        lines = [{"text": t} for t in box["lines"]]
        by = y
        ly = by + 17
        for line in lines:
            ly += 15
            line["y"] = round(ly, 1)
        items = [dict(i) for i in items_at.get(node, [])]
        bottom = _place_items(items, bx + 8, ly + 6, g) if items else ly
        if node == "producer" and not g.stacked:  # its pills sit by the gutter, where its arrows leave
            for item in items:
                item["x"] = round(bx + bw - 8 - item["w"], 1)
                item["tx"] = round(item["x"] + 5, 1)
        boxes.append(
            {
                "cls": node,
                "title": box["title"],
                "x": bx,
                "y": by,
                "w": bw,
                "h": round(bottom + 8 - by, 1),
                "text_x": bx + 10,
                "title_y": by + 17,
                "lines": lines,
                "acts": items,
            }
        )
        tops.append(boxes[-1])
        if g.stacked:
            y = by + boxes[-1]["h"] + 6
    if not g.stacked:
        top_h = max(b["h"] for b in boxes)
        for b in boxes:
            b["h"] = top_h
        y += top_h + 6
    for b in boxes:
        ports[b["cls"]] = {"in_y": b["y"] + 10, "x_in": b["x"] + (b["w"] if b["cls"] == "producer" else 0)}
    return boxes, y, clock_y


def _close_row(
    row: dict[str, Any],
    items: list[dict[str, Any]],
    top: float,
    bottom: float,
    cell_y: float,
    g: Geometry,
    ports: dict[str, dict[str, float]],
    node: str,
    rows: list[dict[str, Any]],
) -> float:
    """Finish one partition row of either drawing (its band, its activity items, the port arrows
    aim at) and return the y where the next row starts."""
    row["acts"] = items
    row["band_y"] = round(top, 1)
    row["band_h"] = round(bottom + 4 - top, 1)
    row["mid_y"] = round(cell_y + g.cell_h / 2, 1)
    ports[node] = {"in_y": row["mid_y"]}
    rows.append(row)
    return bottom + 8


def layout(model: dict[str, Any], g: Geometry) -> dict[str, Any]:
    """SVG coordinates of the model's content in geometry `g`."""
    W = g.width
    pills = model["pills"]
    items_at: dict[str, list[dict[str, Any]]] = {}
    for p in pills:
        items_at.setdefault(p["at"], []).append({"type": "pill", **p})
    for t in model["timers"]:
        items_at.setdefault(f"b{t['broker']}", []).append({"type": "timer", **t})

    widest = max([g.min_cells] + [r["span"] for r in model["rows"] if not r["spare"]])
    cell_w = max(g.cell_min, min(g.cell_max, g.log_width / widest))
    narrow_cells = cell_w < 22
    ports: dict[str, dict[str, float]] = {}

    # the producer and controller boxes
    boxes, y, clock_y = _top_boxes(model, g, ("producer", "controller"), items_at, ports)

    header_y = round(y + 12, 1)
    offsets = [
        {"x": round(g.log_left + i * cell_w + cell_w / 2, 1), "text": str(i)}
        for i in range(int(widest))
        if not narrow_cells or i % 2 == 0
    ]
    y = header_y + 6

    rows = []
    for r in model["rows"]:
        row = {k: v for k, v in r.items() if k not in ("cells_model", "ghosts_model")}
        node = f"b{r['id']}"
        items = [dict(i) for i in items_at.get(node, [])]
        top = y
        if r["spare"]:
            row["text_y"] = round(top + 14, 1)
            row["band_y"] = round(top, 1)
            if g.stacked:
                bottom = _place_items(items, g.act_left, top + 22, g) if items else top + 20
            else:
                bottom = max(top + 20, _place_items(items, g.act_left, top + 3, g) if items else top)
            row["band_h"] = round(bottom - top, 1)
            row["acts"] = items
            row["mid_y"] = round(top + 10, 1)
            rows.append(row)
            ports[node] = {"in_y": row["mid_y"]}
            y = bottom + 4
            continue
        # the name, the role badges and the condition badges
        row["name_y"] = round(top + 14, 1)
        badges = [dict(b) for b in r["badges"]]
        conditions = [dict(c) for c in r["conditions"]]
        if g.stacked:
            name_w = len(r["label"]) * 9 + (len(r["rack"]) * g.char_w + 8 if r["rack"] else 0) + 14
            head_bottom = _flow(badges + conditions, LABEL_X + name_w, top + 3, W - 8, g, BADGE_H)
            log_top = max(top + 20, head_bottom + 4)
        else:
            bottom_b = _flow(badges, LABEL_X, top + 20, g.log_left - 10, g, BADGE_H)
            bottom_c = (
                _flow(conditions, LABEL_X, bottom_b + 3, g.log_left - 10, g, BADGE_H)
                if conditions
                else bottom_b
            )
            head_bottom = bottom_c
            if r.get("epochs"):
                row["epochs_x"], row["epochs_y"] = LABEL_X, round(head_bottom + 12, 1)
                head_bottom += 15
            log_top = top
        row["badges"], row["conditions"] = badges, conditions
        cell_y = log_top + 14
        cells = []
        for c in r["cells_model"]:
            cells.append(
                Cell(
                    x=g.log_left + c["offset"] * cell_w,
                    y=cell_y,
                    w=cell_w - 2,
                    h=g.cell_h,
                    text=short(c["record"]) if _fits(short(c["record"]), cell_w) else "",
                    record=c["record"],
                    offset=c["offset"],
                    epoch=c["epoch"],
                    epoch_class=c["epoch_class"],
                    state=c["state"],
                    glyph=c["glyph"],
                    title=c["title"],
                )
            )
        marker_y = cell_y + g.cell_h + 1  # the triangles' tips
        lane_bottom = marker_y + 12
        ghosts = []
        if r["ghosts_model"]:
            ghost_y = lane_bottom + 2
            for c in r["ghosts_model"]:
                ghosts.append(
                    Cell(
                        x=g.log_left + c["offset"] * cell_w,
                        y=ghost_y,
                        w=cell_w - 2,
                        h=15,
                        text=short(c["record"]) if _fits(short(c["record"]), cell_w) else "",
                        record=c["record"],
                        offset=c["offset"],
                        epoch=c["epoch"],
                        epoch_class="ghost",
                        state=c["state"],
                        glyph=c["glyph"],
                        title=c["title"],
                    )
                )
            lane_bottom = ghost_y + 15
        row["cells"], row["ghosts"] = cells, ghosts
        row["ghost_label_x"] = round(g.log_left - 10, 1) if ghosts else None
        m = dict(r["markers"])
        x_of = lambda off: round(g.log_left + off * cell_w - 1, 1)  # noqa: E731
        m["hw_x"] = x_of(m["hw"]) if m["hw"] is not None else None
        m["leo_x"] = x_of(m["leo"])
        m["seen_x"] = x_of(m["seen"]) if m["seen"] is not None else None
        m["tip_y"] = round(marker_y, 1)
        label_w = len(m["text"]) * 5.9
        right_of = max(m["leo_x"], m["seen_x"] if m["seen_x"] is not None else m["leo_x"]) + 8
        left_of = min(m["leo_x"], m["seen_x"] if m["seen_x"] is not None else m["leo_x"]) - 8
        if right_of + label_w <= g.log_left + g.log_width + (
            W - g.log_left - g.log_width - 8 if g.stacked else 0
        ):
            m["text_x"], m["anchor"] = round(right_of, 1), "start"
        else:
            m["text_x"], m["anchor"] = round(max(g.log_left + label_w, left_of), 1), "end"
        m["text_y"] = round(marker_y + 10, 1)
        row["markers"] = m
        row["cell_y"] = round(cell_y, 1)
        row["cell_mid_y"] = round(cell_y + g.cell_h / 2 + 4, 1)
        row["hw_label_y"] = round(cell_y - 3, 1)
        row["marker_top"] = round(cell_y - 2, 1)
        row["marker_bottom"] = round(cell_y + g.cell_h + 2, 1)
        if g.stacked:
            if r.get("epochs"):
                row["epochs_x"], row["epochs_y"] = LABEL_X, round(lane_bottom + 13, 1)
                lane_bottom += 16
            bottom = _place_items(items, g.act_left, lane_bottom + 4, g) if items else lane_bottom
        else:
            bottom = max(
                lane_bottom, head_bottom, _place_items(items, g.act_left, top + 4, g) if items else top
            )
        y = _close_row(row, items, top, bottom, cell_y, g, ports, node, rows)

    arrows = [] if g.stacked else _arrows(boxes, rows, ports, g)
    return {
        "geometry": g.name,
        "width": W,
        "height": round(y + 2),
        "boxes": boxes,
        "rows": rows,
        "offsets": offsets,
        "header_y": header_y,
        "clock_x": W - 8,
        "clock_y": round(clock_y if clock_y is not None else header_y, 1),
        "arrows": arrows,
        "narrow": narrow_cells,
        "show_epoch": not narrow_cells,
        "label_x": LABEL_X,
        "log_left": g.log_left,
    }


def _arrows(
    boxes: list[dict[str, Any]], rows: list[dict[str, Any]], ports: dict[str, dict[str, float]], g: Geometry
) -> list[dict[str, Any]]:
    """One path per (pill, destination) through the gutter between the log and the activity column."""
    lanes = max(1, int((g.act_left - g.gutter_left - 8) / 4))
    out = []
    placed = [(b["cls"], i) for b in boxes for i in b["acts"]] + [
        (f"b{r['id']}", i) for r in rows for i in r["acts"]
    ]
    k = 0
    for at, item in placed:
        if item["type"] != "pill" or not item.get("to"):
            continue
        y0 = item["y"] + PILL_H / 2
        x0 = item["x"] + item["w"] if at == "producer" else item["x"]
        for dst in item["to"]:
            port = ports.get(dst)
            if port is None:
                continue
            lane = round(g.gutter_left + 4 + (k % lanes) * 4, 1)
            k += 1
            if dst == "controller":
                x1, y1, head = g.act_left - 5, port["in_y"] + (k % 3) * 5, "right"
            elif dst == "producer":
                x1, y1, head = g.gutter_left - 1, port["in_y"] + (k % 3) * 5, "left"
            else:
                x1, y1, head = g.gutter_left - 1, port["in_y"], "left"
            y1 = round(y1, 1)
            d = f"M{round(x0, 1)} {round(y0, 1)}H{lane}V{y1}H{x1}"
            if head == "left":
                tip = f"M{x1} {y1}l5 -3.5v7z"
            else:
                tip = f"M{x1 + 4} {y1}l-5 -3.5v7z"
            out.append({"d": d, "tip": tip, "cls": item["cls"], "title": item["title"]})
    return out


# ----------------------------------------------------------------------------------------------
# the log diagram (app/logdiagram.py): one row per partition, with its readers' lanes

LANE_H = 15
KEY_CHARS = 5
STRIP_LABEL = "Brokers"


def _lane_layout(
    lane: dict[str, Any], x_of: Any, top: float, right: float, g: Geometry
) -> tuple[dict[str, Any], float]:
    """A reader lane: its markers (▲ a member's position, ◆ the group's committed offset) at their
    offsets, markers at one offset sharing one label when it fits beside them (else one label
    each). A label goes right of its marker, else left; one that fits neither way, or would run
    into the previous label or over another marker of the lane (markers sit on the first line),
    moves down a line: a label beside the wrong marker reads as that marker's value (the
    new-learner check read "payments committed 1" as the value at c0's position marker). Returns
    the lane and its bottom y."""
    at: dict[int, list[dict[str, Any]]] = {}
    for m in lane["markers"]:
        at.setdefault(int(m["offset"]), []).append(m)
    mark_xs = {offset: x_of(offset) for offset in at}
    marks = []
    labels = []
    line_ends: list[float] = []

    def width(text: str) -> float:  # lane labels are bold: wider than g.char_w's average
        return len(text) * g.char_w * 1.12

    def put(text: str, title: str, x: float, offset: int) -> None:
        w = width(text)
        if x + 8 + w <= right:
            tx, anchor, start, end, forced = x + 8, "start", x + 8, x + 8 + w, False
        elif x - 8 - w >= 4:
            tx, anchor, start, end, forced = x - 8, "end", x - 8 - w, x - 8, False
        else:  # fits neither beside its marker: under the markers, as far right as it can go
            start = max(4.0, min(x - w / 2, right - w))
            tx, anchor, end, forced = start, "start", start + w, True
        over_a_mark = forced or any(start - 6 < mx < end + 6 for o, mx in mark_xs.items() if o != offset)
        line = 1 if over_a_mark else 0
        while line < len(line_ends) and start < line_ends[line] + 6:
            line += 1
        while len(line_ends) <= line:
            line_ends.append(float("-inf"))
        line_ends[line] = end
        labels.append({"x": round(tx, 1), "anchor": anchor, "line": line, "text": text, "title": title})

    for offset in sorted(at):
        group = sorted(at[offset], key=lambda m: m["kind"] != "position")
        x = mark_xs[offset]
        for k, m in enumerate(group):
            dx = 0 if len(group) == 1 else -4 + 8 * k  # two marks at one offset sit side by side
            marks.append({"x": x, "kind": m["kind"], "title": m["title"], "dx": dx})
        text = " · ".join(m["text"] for m in group)
        fits = x + 8 + width(text) <= right or x - 8 - width(text) >= 4
        if fits or len(group) == 1:
            put(text, "; ".join(m["title"] for m in group), x, offset)
        else:
            for m in group:
                put(m["text"], m["title"], x, offset)
    lines = max(1, len(line_ends))
    mark_y = top + 1
    for mk in marks:
        mk.update(x=round(mk["x"] + mk["dx"], 1), y=round(mark_y, 1))
    for lb in labels:
        lb["y"] = round(top + 10 + lb["line"] * 12, 1)
    out = {"key": lane["key"], "marks": marks, "labels": labels, "y": round(top, 1)}
    return out, top + LANE_H + (lines - 1) * 12


KEY_CHAR_W = 5.2  # an italic 9 px character, about
KEY_SQUEEZE = 0.6  # the narrowest a key's letters are pressed together before it is cut instead


def _key_text(key: str, cell_w: float) -> tuple[str, float | None]:
    """A record's key under its value: whole when it fits the cell; pressed into the cell's width
    (SVG textLength) when that keeps it readable, since a key that differs only at its end
    ("user-1", "user-2") says nothing once cut; else cut to what fits. (text, textLength or None)."""
    if not key:
        return "", None
    room = cell_w - 4
    natural = len(key) * KEY_CHAR_W
    if natural <= room:
        return key, None
    if room / natural >= KEY_SQUEEZE:
        return key, round(room, 1)
    text = short(key, KEY_CHARS)
    return (text, None) if _fits(text, cell_w, KEY_CHAR_W) else ("", None)


def _fits(text: str, cell_w: float, char_w: float = 6.4) -> bool:
    """Whether a cell's text fits in it: always in a wide cell, in a narrow one when it is short
    (a one- or two-letter record name stays readable when a long log narrows the cells)."""
    return cell_w >= 22 or len(text) * char_w <= cell_w - 4


ACT_RESERVE = 200  # a wide log diagram keeps this much of its right side for the pills in flight


def _widened(g: Geometry, widest: float) -> Geometry:
    """On a wide screen a log longer than its column takes room from the activity column (kept
    ACT_RESERVE wide for the pills), so its cells stay up to cell_max wide instead of shrinking
    into half the drawing (05a's 11 offsets were 21 px cells in 236 of 720 px). The same for every
    step of a run: it depends on the longest log only."""
    if g.stacked or widest * g.cell_max <= g.log_width:
        return g
    room = g.width - 8 - ACT_RESERVE - (g.act_left - g.log_left - g.log_width) - g.log_left
    log_width = int(min(widest * g.cell_max, max(g.log_width, room)))
    shift = log_width - g.log_width
    return dataclasses.replace(g, log_width=log_width, gutter_left=g.gutter_left + shift,
                               act_left=g.act_left + shift)


def layout_log(model: dict[str, Any], g: Geometry) -> dict[str, Any]:
    """SVG coordinates of a log diagram's content (app/logdiagram.py) in geometry `g`."""
    W = g.width
    items_at: dict[str, list[dict[str, Any]]] = {}
    for p in model["pills"]:
        items_at.setdefault(p["at"], []).append({"type": "pill", **p})
    widest = max([g.min_cells] + [r["span"] for r in model["rows"]])
    g = _widened(g, widest)
    cell_w = max(g.cell_min, min(g.cell_max, g.log_width / widest))
    narrow_cells = cell_w < 22
    ports: dict[str, dict[str, float]] = {}
    nodes = ("producer", "consumers") if model.get("consumers") else ("producer",)
    boxes, y, clock_y = _top_boxes(model, g, nodes, items_at, ports)

    # the brokers, one badge each, after a label
    strip_y = round(y + 12, 1)
    strip = [dict(b) for b in model["brokers"]]
    strip_x0 = LABEL_X + len(STRIP_LABEL) * g.char_w + 6
    y = _flow(strip, strip_x0, y + 1, W - 8, g, BADGE_H, slack=1.08) + 6

    header_y = round(y + 12, 1)
    offsets = [
        {"x": round(g.log_left + i * cell_w + cell_w / 2, 1), "text": str(i)}
        for i in range(int(widest))
        if not narrow_cells or i % 2 == 0
    ]
    y = header_y + 6
    right = (g.act_left - 6) if not g.stacked else (W - 6)

    rows = []
    any_segments = any(r.get("segments") for r in model["rows"])
    for r in model["rows"]:
        row = {k: v for k, v in r.items() if k not in ("cells_model", "lanes", "segments", "deleted")}
        node = f"p{r['id']}"
        items = [dict(i) for i in items_at.get(node, [])]
        top = y
        row["name_y"] = round(top + 14, 1)
        badges = [dict(b) for b in r["badges"]]
        conditions = [dict(c) for c in r["conditions"]]
        if r.get("absent"):
            # a partition that does not exist yet: its name, a badge and a note where its log
            # would be, no log or markers; as tall as an empty partition's row, so that its
            # creation does not push the rest of the page down
            if g.stacked:
                name_w = len(r["label"]) * 9 + 14
                head_bottom = _flow(badges, LABEL_X + name_w, top + 3, W - 8, g, BADGE_H)
                log_top = max(top + 20, head_bottom + 4)
            else:
                head_bottom = _flow(badges, LABEL_X, top + 20, g.log_left - 10, g, BADGE_H)
                log_top = top
            cells_bottom = log_top + 14 + g.cell_h + 13 + (22 if any_segments else 0)
            bottom = max(head_bottom, cells_bottom)
            row.update(badges=badges, conditions=[], cells=[], lanes=[], acts=[], segs=[], seg_lines=[],
                       gap=None, band_y=round(top, 1), band_h=round(bottom + 4 - top, 1),
                       note={"x": g.log_left + 4, "y": round(log_top + 14 + g.cell_h / 2 + 4, 1),
                             "text": "does not exist yet"},
                       mid_y=round(log_top + 14 + g.cell_h / 2, 1), spare=False)
            ports[node] = {"in_y": row["mid_y"]}
            rows.append(row)
            y = bottom + 8
            continue
        if g.stacked:
            name_w = len(r["label"]) * 9 + 14
            head_bottom = _flow(badges + conditions, LABEL_X + name_w, top + 3, W - 8, g, BADGE_H)
            log_top = max(top + 20, head_bottom + 4)
        else:
            bottom_b = _flow(badges, LABEL_X, top + 20, g.log_left - 10, g, BADGE_H)
            head_bottom = (
                _flow(conditions, LABEL_X, bottom_b + 3, g.log_left - 10, g, BADGE_H)
                if conditions
                else bottom_b
            )
            log_top = top
        row["badges"], row["conditions"] = badges, conditions
        cell_y = log_top + 14
        x_of = lambda off: round(g.log_left + off * cell_w - 1, 1)  # noqa: E731
        cells = []
        for c in r["cells_model"]:
            cell = Cell(
                x=g.log_left + c["offset"] * cell_w,
                y=cell_y,
                w=cell_w - 2,
                h=g.cell_h,
                text=short(c["record"]) if _fits(short(c["record"]), cell_w) else "",
                record=c["record"],
                offset=c["offset"],
                epoch=None,
                epoch_class=c.get("epoch_class", "ep0"),
                state=c["state"],
                glyph="",
                title=c["title"],
            )
            key, key_len = _key_text(c["key"], cell_w)
            # a record without a key has its value in the middle of the cell
            ty = cell.ty if key else round(cell.my + 4, 1)
            cells.append({**dataclasses.asdict(cell), "cx": cell.cx, "ty": ty, "ey": cell.ey,
                          "x2": cell.x2, "my": cell.my, "key": key, "key_len": key_len,
                          "tomb": bool(c.get("tomb"))})
        row["cells"] = cells
        row["cleaned"], row["cleaner"] = _compaction_marks(r, cell_y, cell_w, g)
        marker_y = cell_y + g.cell_h + 1
        m = dict(r["markers"])
        m["hw_x"] = x_of(m["hw"])
        m["leo_x"] = x_of(m["leo"])
        m["start_x"] = x_of(m["start"])
        if "lso" in m:  # scene 08: the last stable offset
            m["lso_x"] = x_of(m["lso"])
        m["tip_y"] = round(marker_y, 1)
        label_w = len(m["text"]) * 5.9
        if m["leo_x"] + 8 + label_w <= right:
            m["text_x"], m["anchor"] = round(m["leo_x"] + 8, 1), "start"
        else:
            m["text_x"], m["anchor"] = round(m["leo_x"] - 8, 1), "end"
        m["text_y"] = round(marker_y + 10, 1)
        row["markers"] = m
        row["cell_y"] = round(cell_y, 1)
        row["hw_label_y"] = round(cell_y - 3, 1)
        row["marker_top"] = round(cell_y - 2, 1)
        row["marker_bottom"] = round(cell_y + g.cell_h + 2, 1)
        gone = r.get("deleted")
        if gone is not None:
            # the deleted offsets: one dashed gap where their cells were, the records are gone
            gx = round(g.log_left + gone["first"] * cell_w, 1)
            gw = round((gone["last"] - gone["first"] + 1) * cell_w - 2, 1)
            label = "deleted" if gw >= 44 else ("del." if gw >= 24 else "")
            row["gap"] = {"x": gx, "y": round(cell_y, 1), "w": gw, "h": g.cell_h, "cx": round(gx + gw / 2, 1),
                          "ty": round(cell_y + g.cell_h / 2 + 4, 1), "text": label, "title": gone["title"]}
        else:
            row["gap"] = None
        lane_y = marker_y + 15
        segs, seg_lines = [], []
        if r.get("segments"):
            # the segments under the log: a bracket per segment with its size, the last one active
            line_y = round(marker_y + 19, 1)
            last = len(r["segments"]) - 1
            for k, seg in enumerate(r["segments"]):
                x1 = round(g.log_left + seg["base"] * cell_w + 1, 1)
                x2 = round(g.log_left + seg["next"] * cell_w - 3, 1) if seg["next"] > seg["base"] else x1 + 6
                room = (right - x1) if k == last else (x2 - x1 + 4)
                text = seg["text"] if len(seg["text"]) * g.char_w * 0.85 <= room else (
                    seg["short"] if len(seg["short"]) * g.char_w * 0.85 <= room else "")
                segs.append({"x1": x1, "x2": round(x2, 1), "y": line_y, "tx": x1, "ty": round(line_y + 11, 1),
                             "text": text, "active": seg["active"], "title": seg["title"],
                             "d": f"M{x1} {round(line_y - 4, 1)}v4H{round(x2, 1)}v-4"})
                if seg["base"] > m["start"]:
                    seg_lines.append(round(g.log_left + seg["base"] * cell_w - 1, 1))
            lane_y = line_y + 18
        row["segs"], row["seg_lines"] = segs, seg_lines
        lanes = []
        # on a wide screen a lane below the row's activity (its pills) may use the activity
        # column too, so that a long label stays to the right of its marker
        acts_end = top + 4 + len(items) * ITEM_H
        for lane in r["lanes"]:
            lane_right = right if (g.stacked or lane_y <= acts_end) else W - 8
            placed, lane_y = _lane_layout(lane, x_of, lane_y, lane_right, g)
            lanes.append(placed)
        row["lanes"] = lanes
        lanes_bottom = lane_y if (lanes or segs) else marker_y + 12
        if g.stacked:
            bottom = _place_items(items, g.act_left, lanes_bottom + 4, g) if items else lanes_bottom
        else:
            acts_bottom = _place_items(items, g.act_left, top + 4, g) if items else top
            bottom = max(lanes_bottom, head_bottom, acts_bottom)
        row["spare"] = False
        y = _close_row(row, items, top, bottom, cell_y, g, ports, node, rows)

    arrows = [] if g.stacked else _arrows(boxes, rows, ports, g)
    return {
        "geometry": g.name,
        "width": W,
        "height": round(y + 2),
        "boxes": boxes,
        "strip": strip,
        "strip_label": STRIP_LABEL,
        "strip_y": strip_y,
        "rows": rows,
        "offsets": offsets,
        "header_y": header_y,
        "clock_x": W - 8,
        "clock_y": round(clock_y if clock_y is not None else header_y, 1),
        "arrows": arrows,
        "narrow": narrow_cells,
        "show_epoch": False,
        "label_x": LABEL_X,
        "log_left": g.log_left,
    }
