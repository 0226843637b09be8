"""The diagram of a scene about logs and their readers (scenes 01-02): partitions, not replicas.

A scene whose scenario has consumers is about what a log holds and who reads it, so the diagram
draws one row per *partition* (the log its leader holds) instead of one row per broker:

    producer box       the requests in flight, each naming its partition
    consumers box      each consumer: its group, whether it runs (never started, joining, running,
                       crashed, closed), its generation and partitions, and what poll() has returned
                       to it so far (duplicates included)
    broker strip       every broker with what it does here: the partitions it leads, the groups it
                       coordinates, what is wrong with it
    partition rows     the leader's log as cells (record, and its key under it), the log start
                       offset (records before it are struck out), the HW and LEO markers, and one
                       lane per group that reads the partition: each running member's position (▲,
                       the next offset it fetches) and the group's committed offset (◆)

Everything is read from the view at the current step (and the steps so far, for what poll()
returned), never from the end of the run. `diagram()` returns the same top-level shape as
app.presenters.diagram (the wide geometry's keys, `narrow`, `clock`, `description`, `summary`),
with `mode` = "log", so the page, the step updates and `visible_signature` treat both alike.
"""

from __future__ import annotations

from typing import Any

from app import diagram as dg
from app.state import format_value

KEY_TEXT_CHARS = 5
RECEIVED_SHOWN = 8  # records listed per consumer in the consumers box; more are counted
CONSUMER_GLYPH = {"running": "●", "joining": "◌", "crashed": "✖", "closed": "■", "idle": "○"}
CONSUMER_STATE_TEXT = {"running": "running", "joining": "joining its group", "crashed": "crashed",
                       "closed": "closed", "idle": "not started"}


def log_mode(scenario: dict[str, Any]) -> bool:
    """Whether a scenario is drawn as partitions and readers: it declares consumers."""
    return bool(scenario.get("consumers"))


# ----------------------------------------------------------------------------------------------
# reading the state at the current step


def partition_views(view: dict[str, Any]) -> list[dict[str, Any]]:
    """Every partition's snapshot at this step (one partition: the view itself)."""
    parts = view.get("partitions")
    if isinstance(parts, list) and parts and all(isinstance(p, dict) for p in parts):
        return parts
    return [view]


def partition_state(snap: dict[str, Any], number: int) -> dict[str, Any]:
    """What a reader of partition `number` sees: its leader, the leader's log and offsets."""
    part = snap.get("partition") or {}
    brokers = snap.get("brokers") or {}
    leader = part.get("leader", -1)
    online = leader not in (None, -1) and str(leader) in brokers
    holder = leader if online else next(iter(part.get("replicas") or []), None)
    b = brokers.get(str(holder), {}) if holder is not None else {}
    log = list(b.get("log") or [])
    hw = part.get("hw")
    if hw is None:
        hw = b.get("hw", 0)
    return {
        "number": number,
        "leader": leader if online else None,
        "holder": holder,
        "holder_state": b,
        "log": log,
        "hw": int(hw or 0),
        "leo": int(b.get("leo", len(log)) or 0),
        "log_start": int(part.get("log_start_offset") or 0),
    }


def consumer_status(c: dict[str, Any]) -> str:
    status = c.get("status") or ("running" if c.get("alive") else "idle")
    if status == "running" and c.get("mode") == "subscribe" and not c.get("member_id"):
        return "joining"
    return str(status)


def received_so_far(steps: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per consumer, what poll() returned to the application in the steps so far, in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for s in steps:
        if s.get("kind") != "consumer_poll":
            continue
        got = s.get("got") or []
        records = s.get("records") or []
        rows = out.setdefault(str(s.get("consumer")), [])
        for (p, off), rec in zip(got, records, strict=False):
            rows.append({"partition": int(p), "offset": int(off), "record": str(rec)})
    return out


def _short_list(records: list[str], limit: int = RECEIVED_SHOWN) -> str:
    if len(records) <= limit:
        return ", ".join(records)
    return "… " + ", ".join(records[-limit:]) + f" ({len(records)} in all)"


def _partitions_text(ids: list[int]) -> str:
    if not ids:
        return "no partition"
    return ", ".join(f"P{p}" for p in ids)


# ----------------------------------------------------------------------------------------------
# content


def _pills(snaps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Produce requests and their answers on the wire, at their sender, naming the partition."""
    pills: list[dict[str, Any]] = []
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    several = len(snaps) > 1
    for p, snap in enumerate(snaps):
        for m in snap.get("messages", []) or []:
            kind = m.get("kind")
            if kind not in ("produce", "produce_response"):
                continue  # heartbeats and metadata are scene 04a's story
            text = dg._message_text(m)
            where = f"P{p} on B{m['dst']}" if kind == "produce" else "producer"
            if kind == "produce" and not several:
                where = f"B{m['dst']}"
            at, to = ("producer", f"p{p}") if kind == "produce" else (f"p{p}", "producer")
            full = f"{text} → {where}"
            key = (at, full)
            if key in by_key:
                continue
            pill = {
                "key": f"m{len(pills)}",
                "kind": kind,
                "cls": dg.MESSAGE_CLASS.get(kind, "control"),
                "at": at,
                "text": text,
                "to": [to],
                "labels": [str(m.get("label") or full)],
                "held": False,
                "full": full,
                "shown": dg.short(full, dg.MAX_PILL_CHARS),
                "title": str(m.get("label") or full),
            }
            by_key[key] = pill
            pills.append(pill)
    return pills


def _producer_lines(snaps: list[dict[str, Any]]) -> list[str]:
    lines = []
    several = len(snaps) > 1
    for p, snap in enumerate(snaps):
        for req in (snap.get("producer") or {}).get("in_flight", []) or []:
            records = dg.short(", ".join(str(r) for r in req.get("records", [])), 10)
            target = req.get("target")
            where = f"B{target}" if target not in (None, -1) else "?"
            if several:
                where = f"P{p} on {where}"
            state = dg.INFLIGHT_STATE_SHORT.get(req.get("state"), str(req.get("state", "")))
            lines.append(f"[{records}] → {where}, {state}")
    if len(lines) > 3:
        lines = lines[:3] + [f"… and {len(lines) - 3} more in flight"]
    return lines or ["no request in flight"]


def _consumer_lines(consumers: dict[str, Any], received: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = []
    for cid in sorted(consumers):
        c = consumers[cid]
        status = consumer_status(c)
        group = c.get("group")
        who = f"{cid} ({group})" if group else f"{cid} (no group)"
        text = f"{CONSUMER_GLYPH.get(status, '●')} {who} {CONSUMER_STATE_TEXT.get(status, status)}"
        if status == "running":
            owned = _partitions_text(sorted(int(p) for p in c.get("assigned") or []))
            text += f", gen {c['generation']}, owns {owned}" if c.get("member_id") else f", reads {owned}"
        lines.append(text)
        got = [r["record"] for r in received.get(cid, [])]
        if got:
            lines.append("   received " + _short_list(got))
    return lines or ["no consumer"]


def _broker_badges(view: dict[str, Any], states: list[dict[str, Any]],
                   groups: dict[str, Any]) -> list[dict[str, Any]]:
    """One badge per broker (its state and the partitions it leads), and one more for a broker that
    coordinates consumer groups, so that no badge outgrows a phone's width."""
    brokers = view.get("brokers") or {}
    out = []
    for key in sorted(brokers, key=int):
        b = brokers[key]
        bid = int(key)
        leads = [s["number"] for s in states if s["leader"] == bid]
        coordinates = sorted(g for g, st in groups.items() if st.get("coordinator") == bid)
        conditions = dg.condition_badges(b, replica=False)
        bad = any(c["cls"] == "bad" for c in conditions)
        text = f"B{bid} {'✖' if bad else '●'}" + (" leads " + _partitions_text(leads) if leads else "")
        text += "".join(f" · {c['text']}" for c in conditions)
        title = [c["title"] for c in conditions]
        title.append(f"leads {_partitions_text(leads)}" if leads else "leads no partition of this topic")
        out.append({"text": text, "cls": "bad" if bad else ("leader" if leads else "broker"),
                    "title": f"Broker {bid}: " + "; ".join(title)})
        if coordinates:
            whom = coordinates[0] if len(coordinates) == 1 else f"{len(coordinates)} groups"
            out.append({"text": f"B{bid}: coordinator of {whom}", "cls": "broker",
                        "title": f"Broker {bid} is the group coordinator of {', '.join(coordinates)}: it "
                                 "keeps their members and committed offsets"})
    return out


def _lanes(number: int, consumers: dict[str, Any], groups: dict[str, Any]) -> list[dict[str, Any]]:
    """One lane per group (or group-less consumer) that has something to mark in this partition:
    each running member's position, and the group's committed offset."""
    lanes: dict[str, dict[str, Any]] = {}
    p = str(number)
    for cid in sorted(consumers):
        c = consumers[cid]
        lane_key = c.get("group") or cid
        pos = (c.get("position") or {}).get(p)
        if c.get("alive") and number in [int(x) for x in c.get("assigned") or []] and pos is not None:
            lane = lanes.setdefault(lane_key, {"key": lane_key, "markers": []})
            lane["markers"].append({
                "offset": int(pos), "kind": "position", "text": f"{cid} position {pos}",
                "title": f"{cid}'s position in P{number}: the next offset it fetches is {pos}",
            })
    for gid in sorted(groups):
        committed = (groups[gid].get("committed") or {}).get(p)
        if committed is None:
            continue
        lane = lanes.setdefault(gid, {"key": gid, "markers": []})
        lane["markers"].append({
            "offset": int(committed), "kind": "committed", "text": f"{gid} committed {committed}",
            "title": f"Group {gid} has committed offset {committed} for P{number} (the next record it "
                     f"would read after a restart)",
        })
    first = {c.get("group") or cid: cid for cid, c in sorted(consumers.items(), reverse=True)}
    return [lanes[k] for k in sorted(lanes, key=lambda k: (first.get(k, "~"), k))]


def _row(st: dict[str, Any], consumers: dict[str, Any], groups: dict[str, Any]) -> dict[str, Any]:
    number = st["number"]
    b = st["holder_state"]
    status_first, status_more, status = dg.broker_status_parts(b) if b else ("● running", "", "running")
    badges = []
    if st["leader"] is not None:
        badges.append({"text": f"♛ B{st['leader']}", "cls": "leader",
                       "title": f"Broker {st['leader']} leads P{number}: it holds the log and appends to it"})
    else:
        badges.append({"text": "no leader", "cls": "bad",
                       "title": f"P{number} has no running leader: nobody can write or read it"})
    badges.append({"text": f"start {st['log_start']}", "cls": "start",
                   "title": f"Log start offset {st['log_start']}: the oldest offset P{number} still keeps"})
    conditions = dg.condition_badges(b, replica=False) if b else []
    cells = []
    for entry in st["log"]:
        offset = int(entry["offset"])
        record = str(entry.get("record"))
        key = entry.get("key")
        if offset < st["log_start"]:
            state, what = "deleted", "deleted: below the log start offset"
        elif offset < st["hw"]:
            state, what = "committed", "readable (below the HW)"
        else:
            state, what = "uncommitted", "not readable yet (at or above the HW)"
        key_text = f"key {key}" if key is not None else "no key"
        cells.append({
            "offset": offset,
            "record": record,
            "key": "" if key is None else str(key),
            "state": state,
            "title": f"P{number} offset {offset}: {record} ({key_text}) — {what}",
        })
    return {
        "id": number,
        "label": f"P{number}",
        "status": status if b else "running",
        "status_text": status_first,
        "status_more": status_more,
        "leader": st["leader"] is not None,
        "badges": badges,
        "conditions": conditions,
        "cells_model": cells,
        "markers": {"hw": st["hw"], "leo": st["leo"], "start": st["log_start"], "text": f"LEO {st['leo']}"},
        "lanes": _lanes(number, consumers, groups),
        "span": max(st["leo"], len(st["log"])) + 1,
    }


def diagram(
    timeline: Any, scenario: dict[str, Any], *, id_prefix: str = "dg", defs: bool = True
) -> dict[str, Any]:
    view = timeline.view
    snaps = partition_views(view)
    states = [partition_state(s, i) for i, s in enumerate(snaps)]
    consumers = view.get("consumers") or {}
    groups = view.get("groups") or {}
    received = received_so_far(timeline.steps[: timeline.step])
    acks = format_value((scenario.get("producer") or {}).get("acks", "all"))
    topic = (scenario.get("topic") or {}).get("name", "t")
    model = {
        "producer": {"title": f"Producer · acks={acks}", "lines": _producer_lines(snaps)},
        "consumers": {"title": "Consumers", "lines": _consumer_lines(consumers, received)},
        "brokers": _broker_badges(view, states, groups),
        "rows": [_row(st, consumers, groups) for st in states],
        "pills": _pills(snaps),
        "timers": [],
    }
    wide = dg.layout_log(model, dg.WIDE)
    narrow = dg.layout_log(model, dg.NARROW)
    t_ms = int(view.get("t_ms", 0))
    out = {
        **wide,
        "mode": "log",
        "narrow": narrow,
        "id_prefix": id_prefix,
        "defs": defs,
        "partition": None,
        "partition_label": f"topic {topic}",
        "svg_title": f"The topic {topic}: its partitions, the producer and the consumers",
        "region_label": "Cluster diagram",
        "pills": model["pills"],
        "timers": [],
        "clock": {"t_ms": t_ms, "text": f"t = {t_ms / 1000:.3f} s", "timers": {}, "waits": {}},
    }
    out["summary"] = summary_sentence(timeline, states, topic)
    out["description"] = describe(timeline, view, states, consumers, groups, received, model, topic)
    return out


# ----------------------------------------------------------------------------------------------
# the text alternative


def _log_text(st: dict[str, Any]) -> str:
    kept = [e for e in st["log"] if int(e["offset"]) >= st["log_start"]]
    if not kept:
        return "empty"
    parts = []
    for e in kept:
        key = f" (key {e['key']})" if e.get("key") is not None else ""
        parts.append(f"{e.get('record')}{key} at {e['offset']}")
    return ", ".join(parts)


def _broker_words(view: dict[str, Any], states: list[dict[str, Any]], groups: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(view.get("brokers") or {}, key=int):
        status, _ = dg.broker_status(view["brokers"][key])
        bid = int(key)
        text = f"B{bid} {status[2:]}"
        leads = [s["number"] for s in states if s["leader"] == bid]
        if leads:
            text += ", leads " + _partitions_text(leads)
        coordinates = sorted(g for g, st in groups.items() if st.get("coordinator") == bid)
        if coordinates:
            groups_word = "groups " if len(coordinates) > 1 else "group "
            text += ", coordinator of " + groups_word + ", ".join(coordinates)
        out.append(text)
    return out


def summary_sentence(timeline: Any, states: list[dict[str, Any]], topic: str) -> str:
    """One sentence under the diagram: each partition's leader and size (compact beyond two
    partitions, so it stays one or two lines; the text alternative has the details)."""
    t = timeline.view.get("t_ms", 0)
    count = len(states)
    head = (f"After step {timeline.step} of {timeline.step_count} (t = {t} ms): topic {topic} has "
            f"{count} partition{'s' if count != 1 else ''}; ")
    if count <= 2:
        parts = []
        for st in states:
            n = st["leo"] - st["log_start"]
            lead = f"led by B{st['leader']}" if st["leader"] is not None else "with no leader"
            parts.append(f"P{st['number']} {lead} holds {n} record{'s' if n != 1 else ''}"
                         f" (log start {st['log_start']}, HW {st['hw']})")
        return head + "; ".join(parts) + "."
    sizes = ", ".join(f"P{st['number']} {st['leo'] - st['log_start']}" for st in states)
    starts = {st["log_start"] for st in states}
    tail = f"every log starts at {starts.pop()}" if len(starts) == 1 else "log starts differ"
    offline = [f"P{st['number']}" for st in states if st["leader"] is None]
    down = f"; {', '.join(offline)} without a leader" if offline else ""
    return head + f"records per partition: {sizes}; {tail}{down}."


def describe(timeline: Any, view: dict[str, Any], states: list[dict[str, Any]], consumers: dict[str, Any],
             groups: dict[str, Any], received: dict[str, list[dict[str, Any]]], model: dict[str, Any],
             topic: str) -> list[str]:
    lines = [summary_sentence(timeline, states, topic)]
    producer = model["producer"]["lines"]
    lines.append("Producer: " + ("nothing in flight." if producer == ["no request in flight"]
                                 else "in flight " + "; ".join(producer) + "."))
    for cid in sorted(consumers):
        c = consumers[cid]
        status = consumer_status(c)
        group = f"group {c['group']}" if c.get("group") else "no group"
        text = f"Consumer {cid} ({group}): {CONSUMER_STATE_TEXT.get(status, status)}"
        if status == "running":
            assigned = sorted(int(p) for p in c.get("assigned") or [])
            if c.get("member_id"):
                text += f", generation {c['generation']}, owns {_partitions_text(assigned)}"
            positions = c.get("position") or {}
            if positions:
                text += "; positions " + ", ".join(f"P{p} {o}" for p, o in sorted(positions.items()))
        elif status == "crashed":
            text += "; its positions died with it"
        got = [r["record"] for r in received.get(cid, [])]
        text += ("; poll() has returned " + ", ".join(got)) if got else "; poll() has returned nothing yet"
        lines.append(text + ".")
    for gid in sorted(groups):
        g = groups[gid]
        committed = g.get("committed") or {}
        said = ", ".join(f"P{p} {o}" for p, o in sorted(committed.items())) or "none yet"
        coordinator = f"B{g['coordinator']}" if g.get("coordinator") is not None else "no broker"
        lines.append(f"Group {gid}: {g.get('state')}, generation {g.get('generation')}; committed offsets "
                     f"{said}, stored by its coordinator {coordinator}.")
    for st, row in zip(states, model["rows"], strict=True):
        lead = f"leader B{st['leader']}" if st["leader"] is not None else "no leader"
        text = (f"Partition {st['number']} ({lead}, log start {st['log_start']}, HW {st['hw']}, "
                f"LEO {st['leo']}): {_log_text(st)}.")
        deleted = [e for e in st["log"] if int(e["offset"]) < st["log_start"]]
        if deleted:
            text += " Deleted below the log start: " + ", ".join(str(e.get("record")) for e in deleted) + "."
        marks = [m["text"] for lane in row["lanes"] for m in lane["markers"]]
        if marks:
            text += " Markers: " + "; ".join(marks) + "."
        lines.append(text)
    lines.append("Brokers: " + "; ".join(_broker_words(view, states, groups)) + ".")
    pills = model["pills"]
    if pills:
        lines.append("On the network: " + "; ".join(
            f"{'the producer' if p['at'] == 'producer' else 'P' + p['at'][1:] + ' leader'} sends {p['full']}"
            for p in pills) + ".")
    else:
        lines.append("On the network: no request or response in flight.")
    return lines
