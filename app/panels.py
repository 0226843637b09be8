"""Presenters for a scene's extra state panels (`Scene.panels`), drawn from the engine's state.

Theory of operation
-------------------
A scene lists the panels it needs; `state_panels()` builds the context of each one from the
timeline at its current step, so they change with the scrubber like the diagram does. Every
panel is text first (tables, lists, sentences): it is its own text alternative, and it reflows
from 360 px phones to desktops without sideways scrolling of the page.

    metadata_log  the KRaft controller's metadata log (`view.controller.metadata_log`): one row
                  per record with Kafka's field names. `replayed` is what a broker computes when it
                  replays the record (the epochs), not a field of the record, and is shown apart.
    epoch_cache   each replica's leader-epoch cache [[epoch, start offset], ...] and its log,
                  with the first offset where live replicas disagree marked.
    partitions    one card per partition (result["partitions"]): replicas grouped by rack,
                  leader, ISR, whether it still takes acks=all writes, acked and lost records.
    page_cache    per broker, records on disk (`flushed`) vs only in the page cache (`leo`).

The chart panels ("latency_chart", "loss_chart") belong to `app.charts`, owned elsewhere:
`charts_slot()` calls it when the module exists and the scene asks for a chart, and is None
otherwise, so this module never depends on it.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from app import charts
from app.formats import clock
from app.simulation import Timeline
from engine import PROFILES

log = logging.getLogger("app")

PAGE_CACHE_MAX_CELLS = 16  # cells drawn per broker; more are counted in words
CHART_PANELS = ("latency_chart", "loss_chart", "scale_costs")
# BrokerRegistrationChangeRecord.fenced is a BrokerRegistrationFencingChange value
FENCING_CHANGE_TEXT = {-1: "unfence", 0: "no change", 1: "fence"}
RECORD_FIXED_FIELDS = ("offset", "t_ms", "type", "replayed")


def _fmt(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def _status(broker: dict[str, Any]) -> str:
    status = broker.get("status", "running" if broker.get("alive", True) else "crashed")
    text = {"running": "running", "crashed": "crashed", "shutdown": "shut down"}.get(status, str(status))
    if broker.get("fenced"):
        text += ", fenced"
    if "controller" in (broker.get("isolated_from") or []):
        text += ", isolated"
    return text


def _alive(broker: dict[str, Any]) -> bool:
    return broker.get("status", "running" if broker.get("alive", True) else "crashed") == "running"


def _version(timeline: Timeline) -> str:
    return str((timeline.result.get("profile") or {}).get("kafka_version", ""))


# ----------------------------------------------------------------------------------------------


def metadata_log_panel(timeline: Timeline, previous_view: dict[str, Any] | None) -> dict[str, Any]:
    """The metadata log at this step; records appended by this step are marked new."""
    controller = timeline.view.get("controller") or {}
    if not controller.get("kraft", True):
        return {
            "kraft": False,
            "text": f"Kafka {_version(timeline)} ran before KRaft: the controller kept this state in "
            "ZooKeeper, so there is no metadata log to show.",
            "records": [],
        }
    records = controller.get("metadata_log", []) or []
    end = int(controller.get("metadata_log_end", len(records)))
    before = (
        int(((previous_view or {}).get("controller") or {}).get("metadata_log_end", end))
        if previous_view
        else end
    )
    rows = []
    for rec in records:
        fields = []
        for key, value in rec.items():
            if key in RECORD_FIXED_FIELDS:
                continue
            text = _fmt(value)
            if (
                rec.get("type") == "BrokerRegistrationChangeRecord"
                and key == "fenced"
                and value in FENCING_CHANGE_TEXT
            ):
                text += f" ({FENCING_CHANGE_TEXT[value]})"
            fields.append({"name": key, "value": text})
        replayed = [{"name": k, "value": _fmt(v)} for k, v in (rec.get("replayed") or {}).items()]
        offset = int(rec.get("offset", 0))
        rows.append(
            {
                "offset": offset,
                "t_ms": rec.get("t_ms"),
                "type": rec.get("type", "?"),
                "fields": fields,
                "replayed": replayed,
                "new": previous_view is not None and offset >= before,
            }
        )
    first = rows[0]["offset"] if rows else end
    new_count = sum(1 for r in rows if r["new"])
    return {
        "kraft": True,
        "records": rows,
        "end": end,
        "hidden": first,
        "text": (
            f"{end} record{'s' if end != 1 else ''} in the metadata log"
            + (f" (the newest {len(rows)} shown)" if first else "")
            + (f"; this step appended {new_count}." if new_count else ".")
        ),
    }


def _divergence(brokers: dict[str, dict[str, Any]], ids: list[int]) -> int | None:
    """The first offset at which two live replicas hold different entries (record or epoch)."""
    live = [brokers[str(b)] for b in ids if str(b) in brokers and _alive(brokers[str(b)])]
    logs = [
        {int(e["offset"]): (e.get("epoch"), str(e.get("record"))) for e in b.get("log", [])} for b in live
    ]
    offsets = sorted({o for entries in logs for o in entries})
    for offset in offsets:
        held = {entries[offset] for entries in logs if offset in entries}
        if len(held) > 1:
            return offset
    return None


def epoch_cache_panel(timeline: Timeline) -> dict[str, Any]:
    view = timeline.view
    brokers = view.get("brokers", {})
    replicas = [int(r) for r in (view.get("partition", {}).get("replicas") or [])] or sorted(
        int(b) for b in brokers
    )
    diverge = _divergence(brokers, replicas)
    version = _version(timeline)
    width = max([len(brokers.get(str(b), {}).get("log", [])) for b in replicas] + [1])
    rows = []
    for bid in replicas:
        b = brokers.get(str(bid))
        if b is None:
            continue
        cache = [{"epoch": int(e), "start": int(o)} for e, o in (b.get("epoch_cache") or [])]
        entries = {int(e["offset"]): e for e in b.get("log", [])}
        cells = []
        for offset in range(width):
            e = entries.get(offset)
            cells.append(
                {
                    "offset": offset,
                    "text": f"{e.get('record')} e{e.get('epoch')}" if e else "",
                    "empty": e is None,
                    "diverges": diverge is not None and offset == diverge and e is not None,
                }
            )
        cache_text = "; ".join(f"epoch {c['epoch']} from offset {c['start']}" for c in cache) or "empty"
        rows.append(
            {
                "id": bid,
                "label": f"B{bid}",
                "status": _status(b),
                "alive": _alive(b),
                "cache": cache,
                "cache_text": cache_text,
                "leo": b.get("leo"),
                "cells": cells,
            }
        )
    if diverge is None:
        diverge_text = "The live replicas agree on every offset they both hold."
    else:
        holders = [
            f"B{r['id']} has {r['cells'][diverge]['text']}"
            for r in rows
            if r["alive"] and not r["cells"][diverge]["empty"]
        ]
        diverge_text = f"The live replicas first disagree at offset {diverge}: {', '.join(holders)}."
    return {
        "rows": rows,
        "offsets": list(range(width)),
        "diverge": diverge,
        "diverge_text": diverge_text,
        "no_epochs": not PROFILES[version].leader_epochs if version in PROFILES else False,
        "version": version,
    }


def _rack_of(scenario: dict[str, Any]) -> dict[int, str | None]:
    return {int(b["id"]): b.get("rack") for b in scenario.get("brokers", []) if "id" in b}


def partitions_panel(timeline: Timeline) -> dict[str, Any]:
    racks = _rack_of(timeline.scenario)
    if timeline.partitions:
        entries = [
            (int(p.get("partition", i)), p.get("replicas") or [], p["view"])
            for i, p in enumerate(timeline.partitions)
        ]
    else:
        view = timeline.view
        entries = [(0, view.get("partition", {}).get("replicas") or [], view)]
    cards = []
    writable_count = 0
    for number, replicas, view in entries:
        part = view.get("partition", {})
        brokers = view.get("brokers", {})
        leader = part.get("leader", -1)
        isr = sorted(int(b) for b in part.get("isr") or [])
        effective = int(part["effective_min_isr"])
        groups: dict[str, list[dict[str, Any]]] = {}
        for bid in replicas:
            b = brokers.get(str(bid), {})
            marks = []
            if bid == leader:
                marks.append("leader")
            marks.append("ISR" if bid in isr else "not in ISR")
            status = _status(b)
            if status != "running":
                marks.append(status)
            groups.setdefault(str(racks.get(int(bid)) or "none"), []).append(
                {
                    "id": bid,
                    "text": f"B{bid}",
                    "marks": ", ".join(marks),
                    "leader": bid == leader,
                    "down": not _alive(b),
                    "in_isr": bid in isr,
                }
            )
        online = leader not in (None, -1) and part.get("online", True)
        if not online:
            writes, ok = "offline: no leader, every write waits", False
        elif not part["under_min_isr"]:
            writes, ok = f"takes acks=all writes (ISR {len(isr)} ≥ min {effective})", True
        else:
            writes, ok = (
                f"refuses acks=all writes: NOT_ENOUGH_REPLICAS (ISR {len(isr)} < min {effective})",
                False,
            )
        writable_count += ok
        acked = [str(r) for r in view["ledger"]["acked"]]
        lost = sorted(str(r) for r in view["ledger"]["lost"])
        cards.append(
            {
                "n": number,
                "racks": [{"rack": rack, "replicas": members} for rack, members in sorted(groups.items())],
                "leader": f"B{leader}" if online else "none",
                "epoch": part.get("leader_epoch", 0),
                "isr": "{" + ", ".join(str(b) for b in isr) + "}",
                "writes": writes,
                "writable": ok,
                "acked": ", ".join(acked) or "none yet",
                "lost": ", ".join(lost),
            }
        )
    return {
        "cards": cards,
        "summary": f"{writable_count} of {len(cards)} partition{'s' if len(cards) != 1 else ''} "
        f"take acks=all writes at {clock(timeline.view.get('t_ms', 0))}.",
    }


def page_cache_panel(timeline: Timeline) -> dict[str, Any]:
    views = [p["view"] for p in timeline.partitions] if timeline.partitions else [timeline.view]
    racks = _rack_of(timeline.scenario)
    totals: dict[int, dict[str, Any]] = {}
    for view in views:
        for key, b in view.get("brokers", {}).items():
            bid = int(key)
            row = totals.setdefault(
                bid, {"leo": 0, "flushed": 0, "power_lost": [], "broker": b, "holds": False}
            )
            if b.get("replica", True) or b.get("log") or b.get("truncated"):
                row["holds"] = True
            row["leo"] += int(b.get("leo") or 0)
            row["flushed"] += min(int(b.get("flushed") or 0), int(b.get("leo") or 0))
            row["power_lost"] += [
                str(t.get("record")) for t in b.get("truncated", []) or [] if t.get("why") == "power_loss"
            ]
    flush = (timeline.scenario.get("topic") or {}).get("flush.messages")
    rows = []
    for bid in sorted(totals):
        row = totals[bid]
        if not row["holds"]:
            continue
        b = row["broker"]
        disk, cached = row["flushed"], row["leo"] - row["flushed"]
        cells = ["disk"] * min(disk, PAGE_CACHE_MAX_CELLS)
        cells += ["cache"] * min(cached, PAGE_CACHE_MAX_CELLS - len(cells))
        status = _status(b)
        if not _alive(b) and row["power_lost"]:
            note = f"power loss: the page cache is gone ({', '.join(row['power_lost'])} lost on this broker)"
        elif row["power_lost"]:
            note = f"lost {', '.join(row['power_lost'])} in an earlier power loss"
        elif b.get("status") == "crashed":
            note = "process crash: the page cache belongs to the operating system and survives"
        else:
            note = ""
        rows.append(
            {
                "id": bid,
                "label": f"B{bid}",
                "rack": racks.get(bid),
                "status": status,
                "down": not _alive(b),
                "disk": disk,
                "cache": cached,
                "cells": cells,
                "more": max(0, disk + cached - len(cells)),
                "note": note,
                "text": f"{disk} on disk, {cached} only in the page cache",
            }
        )
    if flush in (None, 0):
        policy = (
            "flush.messages is not set: Kafka never fsyncs on its own; the operating system writes "
            "dirty pages to disk when it chooses."
        )
    else:
        plural = "s" if flush != 1 else ""
        policy = f"flush.messages={flush}: the broker fsyncs after every {flush} appended record{plural}."
    return {
        "rows": rows,
        "policy": policy,
        "summed": len(views) > 1,
        "partitions": len(views),
    }


# ----------------------------------------------------------------------------------------------


def charts_slot(scene: Any, state: Any, timeline: Timeline) -> dict[str, Any] | None:
    """The scene's at-scale charts panel context, or None when the scene shows no charts.

    `app.charts` is imported with this module, so an image or checkout without it (or without
    the curves reader it needs) fails at start-up instead of silently dropping the panels."""
    if not any(p in CHART_PANELS for p in scene.panels):
        return None
    try:
        raw = getattr(state, "knobs", ()) or ()
        pairs = raw.items() if isinstance(raw, dict) else raw
        knobs = tuple(sorted((str(k), str(v)) for k, v in pairs))
        return _charts_for(scene.id, knobs)
    except Exception:  # a chart must never take the scene page down with it
        log.exception("charts_panel failed for scene %s", scene.id)
        return None


@functools.lru_cache(maxsize=256)
def _charts_for(scene_id: str, knobs: tuple[tuple[str, str], ...]) -> dict[str, Any] | None:
    """Charts depend only on the scene and its knob values, never on the step, and the curves are
    read-only files: memoized, a step update costs nothing here (a nearest-point scan is ~14 ms).
    The returned dict is shared between requests and must be treated as read-only."""
    import scenes

    scene = scenes.load_scene(scene_id)
    state = _KnobsOnly(dict(knobs))
    if "scale_costs" in scene.panels:
        return {"costs": charts.scale_costs(state)}
    return charts.charts_panel(scene, state, None)


class _KnobsOnly:
    """What the chart functions read from a SceneState: its knob values."""

    def __init__(self, knobs: dict[str, str]):
        self.knobs = knobs


def state_panels(
    scene: Any, timeline: Timeline, previous_view: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The scene's state panels in the order the scene lists them: [{"name", "p"}, ...].

    Each name has a template `_panel_<name>.html`; chart panels are not in this list (see
    `charts_slot`).
    """
    out = []
    for name in scene.panels:
        if name == "metadata_log":
            context = metadata_log_panel(timeline, previous_view)
        elif name == "epoch_cache":
            context = epoch_cache_panel(timeline)
        elif name == "partitions":
            context = partitions_panel(timeline)
        elif name == "page_cache":
            context = page_cache_panel(timeline)
        else:
            continue
        out.append({"name": name, "template": f"_panel_{name}.html", "p": context})
    return out
