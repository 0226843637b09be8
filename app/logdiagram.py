"""The diagram of a scene about logs and their readers (scenes 01-03): partitions, not replicas.

A scene whose scenario has consumers, several partitions or log settings (segments, retention) is
about what a log holds and who reads it, so the diagram draws one row per *partition* (the log its
leader holds) instead of one row per broker:

    producer box       the requests in flight, each naming its partition
    consumers box      each consumer: its group, whether it runs (never started, joining, running,
                       crashed, closed), its generation and partitions, and what poll() has returned
                       to it so far (duplicates included)
    broker strip       every broker with what it does here: the partitions it leads, the groups it
                       coordinates, what is wrong with it
    partition rows     the leader's log as cells (record, and its key under it), the log start
                       offset (the offsets before it drawn as one empty "deleted" gap: those
                       records are gone), the HW and LEO markers, and one lane per group that reads
                       the partition: each running member's position (▲, the next offset it
                       fetches) and the group's committed offset (◆). With several partitions each
                       row carries its load (records and share of the topic; "hot" at twice an
                       even share or more); a partition add_partitions has not created yet (null
                       in the view) is a dashed row that says so, never an empty log. A scene with
                       log settings also draws each partition's segments under its log: a bracket
                       per segment with its size, the last one marked active, a line at each
                       boundary

Everything is read from the view at the current step (and the steps so far, for what poll()
returned), never from the end of the run. `diagram()` returns the same top-level shape as
app.presenters.diagram (the wide geometry's keys, `narrow`, `clock`, `description`, `summary`),
with `mode` = "log", so the page, the step updates and `visible_signature` treat both alike.
"""

from __future__ import annotations

from typing import Any

from app import diagram as dg
from app import eos, formats
from app.state import format_value
from engine.clients_spec import ConsumerConfig
from engine.segments import LogConfig
from engine.state import TOMBSTONE

AUTO_COMMIT_DEFAULT = ConsumerConfig.enable_auto_commit  # the engine's (Kafka's) default
KEY_TEXT_CHARS = 5
RECEIVED_SHOWN = 8  # records listed per consumer in the consumers box; more are counted
CONSUMER_GLYPH = {"running": "●", "joining": "◌", "crashed": "✖", "closed": "■", "idle": "○"}
CONSUMER_STATE_TEXT = {"running": "running", "joining": "joining its group", "crashed": "crashed",
                       "closed": "closed", "idle": "not started"}


# topic settings that make a scene about segments and retention: its diagram draws the segments
SEGMENT_KEYS = ("segment.bytes", "segment.ms", "retention.ms", "retention.bytes")


# producer settings of the partitioner: a scene about partitions, even when a knob leaves it one
PARTITIONER_KEYS = ("partitioner.ignore.keys", "metadata.max.age.ms")


def log_mode(scenario: dict[str, Any]) -> bool:
    """Whether a scenario is drawn as partitions and readers: it declares consumers, adds
    partitions, sets the partitioner's producer settings, or sets segment or retention settings.
    (Several partitions alone do not: the durability scenes draw one partition's replicas.)"""
    producer = scenario.get("producer") or {}
    return (bool(scenario.get("consumers")) or counters_shown(scenario)
            or any(a.get("do") == "add_partitions" for a in scenario.get("actions") or [])
            or any(k in producer for k in PARTITIONER_KEYS) or shows_segments(scenario))


def counters_shown(scenario: dict[str, Any]) -> bool:
    """Whether the diagram shows exactly-once's counters (scene 08): the scenario names its producer
    processes (`producers`), so each one's producer id, epoch and sequences are drawn, and every
    partition row says what its leader remembers per producer id."""
    return bool(scenario.get("producers"))


def shows_segments(scenario: dict[str, Any]) -> bool:
    """Whether the diagram draws segments: the scene sets a segment or retention setting."""
    topic = scenario.get("topic") or {}
    return any(k in topic for k in SEGMENT_KEYS)


# ----------------------------------------------------------------------------------------------
# reading the state at the current step


def partition_views(view: dict[str, Any]) -> list[dict[str, Any] | None]:
    """Every partition's snapshot at this step, indexed by partition number (one partition: the
    view itself). A partition add_partitions has not created yet is None: absent, not empty."""
    parts = view.get("partitions")
    if isinstance(parts, list) and parts and any(isinstance(p, dict) for p in parts):
        return [p if isinstance(p, dict) else None for p in parts]
    return [view]


def partition_state(snap: dict[str, Any] | None, number: int) -> dict[str, Any]:
    """What a reader of partition `number` sees: its leader, the leader's log and offsets, its
    segments (when the engine reports them). `absent` is true for a partition that does not
    exist yet at this step; it has no log, offsets or leader."""
    if snap is None:
        return {"number": number, "absent": True, "leader": None, "holder": None, "holder_state": {},
                "log": [], "hw": 0, "leo": 0, "log_start": 0, "segments": []}
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
        "absent": False,
        "leader": leader if online else None,
        "holder": holder,
        "holder_state": b,
        "log": log,
        "hw": int(hw or 0),
        "leo": int(b.get("leo", len(log)) or 0),
        "log_start": int(part.get("log_start_offset") or 0),
        "segments": [dict(x) for x in part.get("segments") or []],
        # compaction (scene 05a): where the cleaner's next pass starts; None before any pass
        "cleaner_point": part.get("cleaner_point"),
    }


def existing(states: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The partitions that exist at this step."""
    return [st for st in states if not st.get("absent")]


def kept(st: dict[str, Any]) -> int:
    """How many records a partition holds now: the records of its log from its log start offset
    (a compacted log has gaps, so this is not its end minus its start; a log the view does not
    list, an offline one, counts its offsets)."""
    if st["log"]:
        return sum(1 for e in st["log"] if int(e["offset"]) >= st["log_start"])
    return max(0, st["leo"] - st["log_start"])


def load(states: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per existing partition: its records, its share of the topic's records, and whether it is
    hot: at least twice an even share, once the topic holds at least two records per partition
    (below that a share says little). Empty with one partition."""
    there = existing(states)
    total = sum(kept(st) for st in there)
    if len(there) < 2:
        return {}
    even = total / len(there)
    out = {}
    for st in there:
        n = kept(st)
        out[st["number"]] = {"records": n, "share": (n / total) if total else 0.0,
                             "hot": total >= 2 * len(there) and n >= 2 * even, "total": total,
                             "even": even}
    return out


def producer_metadata(scenario: dict[str, Any], steps: list[dict[str, Any]]) -> int:
    """How many partitions the producer's metadata shows after `steps`: the topic's count at the
    start, then what each metadata refresh saw."""
    known = int((scenario.get("topic") or {}).get("partitions") or 1)
    for s in steps:
        if s.get("kind") == "producer_metadata_refresh" and s.get("partitions") is not None:
            known = int(s["partitions"])
    return known


def sticky_partition(steps: list[dict[str, Any]]) -> int | None:
    """The partition the producer's keyless records stick to after `steps` (its last draw), or
    None before the first."""
    for s in reversed(steps):
        if s.get("kind") == "producer_sticky_partition" and s.get("partition") is not None:
            return int(s["partition"])
    return None


def _sticky_line(scenario: dict[str, Any], steps: list[dict[str, Any]]) -> int | None:
    """Where keyless records stick, for a scenario that sends some (-1 before the first draw),
    else None: the line is there from the first step, so the producer box keeps its height."""
    ignore = bool((scenario.get("producer") or {}).get("partitioner.ignore.keys"))
    keyless = any(a.get("do") == "produce" and a.get("partition") is None and (a.get("key") is None or ignore)
                  for a in scenario.get("actions") or [])
    if not keyless:
        return None
    drawn = sticky_partition(steps)
    return -1 if drawn is None else drawn


def bytes_text(n: int) -> str:
    return f"{n} B" if n < 10_000 else f"{n / 1024:.0f} KiB"


def consumer_status(c: dict[str, Any]) -> str:
    status = c.get("status") or ("running" if c.get("alive") else "idle")
    if status == "running" and c.get("mode") == "subscribe" and not c.get("member_id"):
        return "joining"
    return str(status)


def received_so_far(
    steps: list[dict[str, Any]], *, this_process: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """Per consumer, what poll() returned to the application in the steps so far, in order.
    `this_process`: only since the consumer's latest start (a restarted c0 is a new process that
    has received nothing yet; the learner check read the old process's records as the new one's)."""
    out: dict[str, list[dict[str, Any]]] = {}
    stopped: set[str] = set()  # crashed or closed: its next start is a new process
    for s in steps:
        kind = s.get("kind")
        if this_process and kind in ("consumer_crash", "consumer_close"):
            stopped.add(str(s.get("consumer")))
        elif this_process and kind in ("consumer_restart", "consumer_subscribe", "consumer_assign"):
            cid = str(s.get("consumer"))
            if kind == "consumer_restart" or cid in stopped:
                stopped.discard(cid)
                out[cid] = []
        if kind != "consumer_poll":
            continue
        got = s.get("got") or []
        records = s.get("records") or []
        rows = out.setdefault(str(s.get("consumer")), [])
        for (p, off), rec in zip(got, records, strict=False):
            # a tombstone (compacted topics) has a null value: drawn as ∅, like its cell
            rows.append({"partition": int(p), "offset": int(off),
                         "record": TOMBSTONE_TEXT if rec is None else str(rec)})
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
        if snap is None:
            continue
        for m in snap.get("messages", []) or []:
            kind = m.get("kind")
            if kind not in ("produce", "produce_response"):
                continue  # heartbeats and metadata are scene 04a's story
            text = dg._message_text(m)
            where = f"P{p} on B{m['dst']}" if kind == "produce" else "producer"
            if kind == "produce" and not several:
                where = f"B{m['dst']}"
            at, to = ("producer", f"p{p}") if kind == "produce" else (f"p{p}", "producer")
            said = None
            if m.get("src") == "txn-coordinator":  # a marker: the coordinator sends it, not the producer
                text, to, at = _marker_text(m, snap), "", f"p{p}"
                said = f"the transaction coordinator sends the {m.get('control')} marker to B{m['dst']}"
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
                "to": [to] if to else [],
                "labels": [str(m.get("label") or full)],
                "held": False,
                "full": full,
                "shown": dg.short(full, dg.MAX_PILL_CHARS),
                "title": str(m.get("label") or full),
                "said": said,
            }
            by_key[key] = pill
            pills.append(pill)
    return pills


def _reader_now(steps: list[dict[str, Any]], snaps: list[dict[str, Any] | None]) -> list[str]:
    """At the step where a read_committed reader is held at the last stable offset, or its poll
    comes back empty, a line saying so (the log itself does not change then)."""
    last = steps[-1] if steps else {}
    who = last.get("consumer")
    if last.get("kind") == "consumer_held_at_lso":
        snap = snaps[int(last.get("partition_id") or 0)] if snaps else None
        lso = ((snap or {}).get("partition") or {}).get("lso")
        return [f"→ {who} waits at the LSO{f' {lso}' if lso is not None else ''}: an open transaction"]
    if last.get("kind") == "consumer_poll_empty":
        return [f"→ {who}.poll() returned nothing"]
    return []


REFUSAL_KINDS = ("txn_producer_fenced", "txn_client_error")


def _refusal_now(steps: list[dict[str, Any]]) -> list[str]:
    """At the step where a transactional call is refused or throws, that refusal as a line in the
    producer box (the log does not change then), from the step's own caption."""
    last = steps[-1] if steps else {}
    if last.get("kind") not in REFUSAL_KINDS:
        return []
    head = str(last.get("text", "")).split(":")[0]
    return ["→ " + dg.short(head, 64)]


def _lost_answer(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At the step where a scenario's lost response is lost: the answer, drawn at the partition
    with a cross and no arrow (it never reaches the producer)."""
    last = steps[-1] if steps else {}
    if last.get("kind") != "leader_response_lost":
        return []
    p, b = int(last.get("partition") or 0), last.get("broker")
    text = f"B{b}'s answer ✕ lost"
    said = f"B{b}'s answer to the producer is lost on the way; the producer still waits for it"
    cls = dg.MESSAGE_CLASS.get("produce_response", "control")
    return [{"key": "lost", "kind": "produce_response", "cls": cls, "at": f"p{p}", "text": text,
             "to": [], "labels": [said], "held": False, "full": text,
             "shown": text, "title": said, "said": said}]


def _marker_text(m: dict[str, Any], snap: dict[str, Any]) -> str:
    """A transaction marker on its way from the transaction coordinator to a partition's leader
    (WriteTxnMarkers), named by the broker that sends it."""
    coordinators = sorted({int(t["coordinator"]) for t in (snap.get("transactions") or {}).values()
                           if t.get("coordinator") is not None})
    sender = f"B{coordinators[0]}" if len(coordinators) == 1 else "coordinator"
    return f"{sender}: {m.get('control') or 'marker'} marker"


def _producer_lines(snaps: list[dict[str, Any] | None], known: int | None = None,
                    sticky: int | None = None) -> list[str]:
    """The requests in flight; with several partitions also what the producer's metadata shows
    when it lags behind the topic (`known` partitions), and where keyless records stick."""
    lines = []
    several = len(snaps) > 1
    there = sum(1 for snap in snaps if snap is not None)
    head = []
    if known is not None:
        lag = f" (the topic has {there})" if known != there else ""
        head.append(f"metadata: {known} partition{'s' if known != 1 else ''}{lag}")
    if sticky is not None:
        head.append(f"no key: sticks to P{sticky}" if sticky >= 0 else "no key: no partition drawn yet")
    for p, snap in enumerate(snaps):
        if snap is None:
            continue
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
    return head + (lines or ["no request in flight"])


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
        # a broker with something wrong says what (each condition has its own glyph), else ● running
        state = " · ".join(c["text"] for c in conditions) if conditions else "●"
        text = f"B{bid} {state}" + (" · leads " if conditions and leads else " leads " if leads else "")
        text += _partitions_text(leads) if leads else ""
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


def _absent_row(st: dict[str, Any]) -> dict[str, Any]:
    """A partition that does not exist yet at this step: a dashed row that says so, with no log,
    offsets or markers (it is not an empty partition)."""
    number = st["number"]
    return {
        "id": number,
        "label": f"P{number}",
        "absent": True,
        "status": "absent",
        "status_text": "",
        "status_more": "",
        "leader": False,
        "badges": [{"text": "not created yet", "cls": "absent",
                    "title": f"P{number} does not exist at this step: the topic has fewer partitions "
                             "so far. Nothing can be written to it or read from it."}],
        "conditions": [],
        "cells_model": [],
        "segments": [],
        "deleted": None,
        "markers": None,
        "lanes": [],
        "span": 0,
    }


_SECTION_TITLE = {
    "clean": "a segment in the clean section, before the cleaner point: already compacted",
    "dirty": "a segment in the dirty section, from the cleaner point on: every update since the last pass",
}


def _section(st: dict[str, Any], base: int, active: bool) -> str:
    """On a compacted topic, the section a segment is in (the active one counts as dirty)."""
    if not st.get("compacted"):
        return ""
    point = st.get("cleaner_point")
    return "clean" if point is not None and base < int(point) and not active else "dirty"


def _segments_model(st: dict[str, Any]) -> list[dict[str, Any]]:
    """The partition's segments (oldest first; the last is the active one) as brackets under its
    log: offsets, size, and a title that says what each is."""
    segs = st["segments"]
    out = []
    for k, seg in enumerate(segs):
        base, nxt, size = int(seg["base_offset"]), int(seg["next_offset"]), int(seg["bytes"])
        active = k == len(segs) - 1
        span = (f"offsets {base}-{nxt - 1}" if nxt - base > 1
                else f"offset {base}" if nxt > base else "no record")
        what = ("the active segment: the only one that takes appends" if active
                else "a closed segment: retention may delete it whole")
        section = _section(st, base, active)
        if section:
            what = what + ", never cleaned" if active else _SECTION_TITLE[section]
        label = "active · " if active else f"{section} · " if section else ""
        out.append({"base": base, "next": nxt, "bytes": size, "active": active,
                    "text": label + bytes_text(size),
                    # where the whole label does not fit: the active one keeps its name (the bytes
                    # are in its title), the others their size
                    "short": "active" if active else bytes_text(size).replace(" ", ""),
                    "title": f"P{st['number']} segment {base}: {span}, {size} bytes; {what}"})
    return out


def _deleted_model(st: dict[str, Any]) -> dict[str, Any] | None:
    """The offsets below the log start offset, which no reader can fetch any more: one gap."""
    gone = [e for e in st["log"] if int(e["offset"]) < st["log_start"]]
    if st["log_start"] <= 0:
        return None
    first = min([int(e["offset"]) for e in gone], default=0)
    names = ", ".join(str(e.get("record")) for e in gone[:8]) + (" …" if len(gone) > 8 else "")
    last = st["log_start"] - 1
    span = f"offsets {first}-{last}" if last > first else f"offset {first}"
    return {"first": first, "last": last,
            "title": f"P{st['number']} {span}{f' ({names})' if names else ''}: deleted, below the log start "
                     f"offset {st['log_start']}; no reader can fetch them any more"}


# ----------------------------------------------------------------------------------------------
# compaction (scene 05a): tombstones, the offsets a cleaning pass removed, the cleaner point

TOMBSTONE_TEXT = TOMBSTONE  # the engine's own sign for a tombstone, as its captions write it


def is_tombstone(entry: dict[str, Any]) -> bool:
    """A data record with a key and a null value (a control record has `record` null too)."""
    return entry.get("record") is None and entry.get("key") is not None and not entry.get("control")


def horizons_so_far(steps: list[dict[str, Any]]) -> dict[tuple[int, int], int]:
    """(partition, offset) -> the delete horizon a cleaning pass stamped on that tombstone, from
    the engine's cleaner_rewrite steps so far (the leader's; a pass stamps a tombstone once)."""
    out: dict[tuple[int, int], int] = {}
    for s in steps:
        if s.get("kind") == "cleaner_rewrite" and s.get("horizon_ms") is not None:
            for offset in s.get("stamped") or []:
                out.setdefault((int(s.get("partition") or 0), int(offset)), int(s["horizon_ms"]))
    return out


def _horizon_text(entry: dict[str, Any], st: dict[str, Any]) -> str:
    horizon = (st.get("horizons") or {}).get((st["number"], int(entry["offset"])))
    if horizon is None:
        return ""
    return f"; a cleaning pass may remove it from {formats.clock(int(horizon))} on (its delete horizon)"


CLEANER_KINDS = ("cleaner_check", "cleaner_offset_map")


def cleaner_badge(steps: list[dict[str, Any]], ratio_min: Any) -> dict[str, Any]:
    """What the log cleaner last decided, from its steps so far: a check that did not clean (the
    dirty ratio it saw, not above the minimum) or a pass (the ratio that started it). There from
    the first step, so the strip keeps its height; a check that cleans nothing is a visible change."""
    last = next((s for s in reversed(steps) if s.get("kind") in CLEANER_KINDS), None)
    if last is None:
        return {"text": "cleaner: no check yet", "cls": "broker",
                "title": "The log cleaner thread has not looked at this log yet"}
    ratio = last.get("ratio")
    seen = f"ratio {ratio:.2f}" if isinstance(ratio, (int, float)) else "nothing cleanable"
    if last["kind"] == "cleaner_check":
        text = f"cleaner: {seen}, not > {ratio_min}: waits"
    else:
        text = f"cleaner: {seen} > {ratio_min}: cleaned"
    return {"text": text, "cls": "broker",
            "title": "The log cleaner's last decision: " + str(last.get("text", ""))}


def cleaned_runs(st: dict[str, Any]) -> list[dict[str, Any]]:
    """The offsets between the log start and the log end that the log no longer holds: a cleaning
    pass removed them (offsets never change, so a compacted log has gaps). One run per gap."""
    held = {int(e["offset"]) for e in st["log"]}
    runs: list[list[int]] = []
    for offset in range(st["log_start"], st["leo"]):
        if offset in held:
            continue
        if runs and runs[-1][1] == offset - 1:
            runs[-1][1] = offset
        else:
            runs.append([offset, offset])
    out = []
    for first, last in runs:
        span = f"offsets {first}-{last}" if last > first else f"offset {first}"
        out.append({"first": first, "last": last,
                    "title": f"P{st['number']} {span}: removed by the cleaner, a later record with the same "
                             "key replaced them (or a tombstone's horizon passed); offsets never change, so "
                             "a fetch here returns the next record that is left"})
    return out


def _cleaner_model(st: dict[str, Any]) -> dict[str, Any] | None:
    point = st.get("cleaner_point")
    if not st.get("compacted") or point is None or not st["segments"] or int(point) <= st["log_start"]:
        return None
    point = int(point)
    return {"point": point,
            "title": f"P{st['number']} cleaner point {point}: offsets before it are the clean section "
                     f"(already compacted), from {point} on the dirty section, every update still there"}


def _row(st: dict[str, Any], consumers: dict[str, Any], groups: dict[str, Any],
         loads: dict[int, dict[str, Any]], segments: bool) -> dict[str, Any]:
    if st.get("absent"):
        return _absent_row(st)
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
    share = loads.get(number)
    if share is not None:
        n = share["records"]
        # counts, not rounded percentages (12, 12 and 75 % sent a learner looking for 1 %)
        text = f"{n} of {share['total']} rec" + (" · hot" if share["hot"] else "")
        badges.append({
            "text": text, "cls": "hot" if share["hot"] else "load",
            "title": (f"P{number} holds {n} of the topic's {share['total']} records; an even "
                      f"share would be {share['even']:.1f}"
                      + ("; at twice that or more it is a hot partition" if share["hot"] else "")),
        })
    conditions = dg.condition_badges(b, replica=False) if b else []
    cells = []
    for entry in st["log"]:
        offset = int(entry["offset"])
        if offset < st["log_start"]:
            continue  # deleted: drawn as one gap (see _deleted_model), the records are gone
        key = entry.get("key")
        tomb = is_tombstone(entry)
        record = TOMBSTONE_TEXT if tomb else str(entry.get("record"))
        if offset < st["hw"]:
            state, what = "committed", "readable (below the HW)"
        else:
            state, what = "uncommitted", "not readable yet (at or above the HW)"
        key_text = f"key {key}" if key is not None else "no key"
        name = f"a tombstone for {key}" if tomb else f"{record} ({key_text})"
        cells.append({
            "offset": offset,
            "record": record,
            "key": "" if key is None else str(key),
            "state": state,
            "tomb": tomb,
            "title": f"P{number} offset {offset}: {name} — {what}" + _horizon_text(entry, st),
        })
    return {
        "id": number,
        "label": f"P{number}",
        "absent": False,
        "status": status if b else "running",
        "status_text": status_first,
        "status_more": status_more,
        "leader": st["leader"] is not None,
        "badges": badges,
        "conditions": conditions,
        "cells_model": cells,
        "segments": _segments_model(st) if segments else [],
        "deleted": _deleted_model(st),
        "cleaned": cleaned_runs(st),
        "cleaner": _cleaner_model(st),
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
    log_config = LogConfig.from_topic(scenario.get("topic") or {})  # the engine's defaults and policy
    compacted = log_config.compact
    horizons = horizons_so_far(timeline.steps[: timeline.step]) if compacted else {}
    for st in states:
        st["compacted"], st["horizons"] = compacted, horizons
    consumers = view.get("consumers") or {}
    if counters_shown(scenario):  # scene 08: a consumer the beat never uses is not drawn
        used = {str(a.get("consumer")) for a in scenario.get("actions") or [] if a.get("consumer")}
        consumers = ({cid: c for cid, c in consumers.items() if cid in used}
                     or dict(list(consumers.items())[:1]))
    groups = view.get("groups") or {}
    steps = timeline.steps[: timeline.step]
    received = received_so_far(steps, this_process=True)
    counters = counters_shown(scenario)
    first_producer = (scenario.get("producers") or [{}])[0] if counters else scenario.get("producer") or {}
    acks = format_value(first_producer.get("acks", "all"))
    topic = (scenario.get("topic") or {}).get("name", "t")
    several = len(states) > 1
    readers = bool(scenario.get("consumers"))
    model = {
        "producer": {"title": f"Producer · acks={acks}",
                     "lines": _producer_lines(snaps, producer_metadata(scenario, steps) if several else None,
                                              _sticky_line(scenario, steps) if several else None)},
        "consumers": ({"title": "Consumers", "lines": _consumer_lines(consumers, received)} if readers
                      else None),
        "brokers": _broker_badges(view, states, groups),
        "rows": [_row(st, consumers, groups, load(states), shows_segments(scenario)) for st in states],
        "pills": _pills(snaps) + _lost_answer(steps),
        "timers": [],
    }
    if compacted:  # scene 05a: the cleaner's last decision, so a check that cleans nothing shows
        model["brokers"].append(cleaner_badge(steps, log_config.min_cleanable_dirty_ratio))
    if counters and model["consumers"] is not None:  # scene 08: what a read_committed reader is doing now
        model["consumers"]["lines"] = model["consumers"]["lines"] + _reader_now(steps, snaps)
    if counters:  # scene 08: the producer's id, epoch and sequences, and what each leader remembers
        model["producer"]["counters"] = eos.producer_lines(scenario, snaps)
        model["producer"]["lines"] = (model["producer"]["counters"] + model["producer"]["lines"]
                                      + _refusal_now(steps))
        strip_from = len(model["brokers"])
        model["brokers"].extend(eos.coordinator_badges(view))
        transactional = any(p.get("transactional.id") is not None for p in scenario.get("producers") or [])
        for st, row in zip(states, model["rows"], strict=True):
            if st.get("absent"):
                continue
            snap = snaps[st["number"]]
            model["brokers"].extend(eos.state_badges(snap, st["number"], st["leader"], several))
            _transaction_cells(row, snap, st, transactional)
        model["counter_badges"] = [b["text"] for b in model["brokers"][strip_from:]]
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
        "svg_title": (f"The topic {topic}: its partitions, the producer and the consumers" if readers
                      else f"The topic {topic}: its partitions and the producer"),
        "region_label": "Cluster diagram",
        "pills": model["pills"],
        "timers": [],
        "clock": {"t_ms": t_ms, "text": formats.clock(t_ms), "timers": {}, "waits": {}},
        # what the legend explains (the same at every step of a scenario)
        "shows_segments": shows_segments(scenario),
        # scene 05a: tombstones, the cleaner's gaps and sections; whether retention can move the
        # log start (a compact-only topic never deletes whole segments)
        "compacted": compacted,
        "retention": log_config.delete,
        "several": several,
        "readers": readers,
        # scene 08's legend entries: transactions, the counters; keys and commits only when drawn
        "transactions": counters and any(p.get("transactional.id") is not None
                                         for p in scenario.get("producers") or []),
        "counters": counters,
        "keyed": any(a.get("key") is not None for a in scenario.get("actions") or []),
        "commits": (any(a.get("do") == "commit" for a in scenario.get("actions") or [])
                    or any(c.get("group.id") and c.get("enable.auto.commit", AUTO_COMMIT_DEFAULT)
                           for c in scenario.get("consumers") or [])),
    }
    out["summary"] = summary_sentence(timeline, states, topic)
    out["description"] = describe(timeline, view, states, consumers, groups, received, model, topic)
    return out


def _transaction_cells(row: dict[str, Any], snap: dict[str, Any] | None, st: dict[str, Any],
                       transactional: bool) -> None:
    """Scene 08: colour markers, aborted and undecided records (app/eos.py), name a marker C or A,
    and, when a producer has a transactional.id, mark the last stable offset (LSO; HW=LSO when
    they meet: without transactions the two are always the same, so it is not drawn)."""
    by_offset = {int(e["offset"]): e for e in st["log"]}
    for cell in row["cells_model"]:
        entry = by_offset.get(cell["offset"])
        how = eos.cell_class(snap, entry) if entry is not None else None
        if how is None:
            continue
        cell["epoch_class"], phrase = how
        if entry.get("control"):
            # a mark, not a letter: a marker drawn "C" or "A" read as the records c and a
            cell["record"] = "C✓" if entry["control"] == "COMMIT" else "A✗"
        cell["title"] += f"; {phrase}"
    lso = ((snap or {}).get("partition") or {}).get("lso")
    if transactional and lso is not None and row.get("markers"):
        row["markers"]["lso"] = int(lso)
        row["markers"]["hw_text"] = "HW=LSO" if int(lso) == st["hw"] else "HW"


# ----------------------------------------------------------------------------------------------
# the text alternative


def _log_text(st: dict[str, Any]) -> str:
    kept = [e for e in st["log"] if int(e["offset"]) >= st["log_start"]]
    if not kept:
        return "empty"
    parts = []
    for e in kept:
        if is_tombstone(e):
            parts.append(f"a tombstone for {e.get('key')} at {e['offset']}")
            continue
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
    there = existing(states)
    count = len(there)
    missing = [f"P{st['number']}" for st in states if st.get("absent")]
    later = f" ({', '.join(missing)} not created yet)" if missing else ""
    head = (f"At {formats.clock(t)}: topic {topic} has "
            f"{count} partition{'s' if count != 1 else ''}{later}; ")
    if count <= 2:
        parts = []
        for st in there:
            n = kept(st)
            lead = f"led by B{st['leader']}" if st["leader"] is not None else "with no leader"
            segs = len(st["segments"])
            in_segs = f" in {segs} segments" if segs > 1 else ""
            parts.append(f"P{st['number']} {lead} holds {n} record{'s' if n != 1 else ''}{in_segs}"
                         f" (log start {st['log_start']}, HW {st['hw']})")
        return head + "; ".join(parts) + "."
    loads = load(states)
    sizes = ", ".join(f"P{st['number']} {kept(st)}" + (" (hot)" if loads[st["number"]]["hot"] else "")
                      for st in there)
    starts = {st["log_start"] for st in there}
    tail = f"every log starts at {starts.pop()}" if len(starts) == 1 else "log starts differ"
    offline = [f"P{st['number']}" for st in there if st["leader"] is None]
    down = f"; {', '.join(offline)} without a leader" if offline else ""
    return head + f"records per partition: {sizes}; {tail}{down}."


def _segments_text(row: dict[str, Any]) -> str:
    parts = []
    for seg in row["segments"]:
        span = (f"{seg['base']}-{seg['next'] - 1}" if seg["next"] - seg["base"] > 1
                else str(seg["base"]) if seg["next"] > seg["base"] else f"{seg['base']}, empty")
        parts.append(("active " if seg["active"] else "") + f"{span} ({seg['bytes']} bytes)")
    return "; ".join(parts)


def describe(timeline: Any, view: dict[str, Any], states: list[dict[str, Any]], consumers: dict[str, Any],
             groups: dict[str, Any], received: dict[str, list[dict[str, Any]]], model: dict[str, Any],
             topic: str) -> list[str]:
    lines = [summary_sentence(timeline, states, topic)]
    counters = model["producer"].get("counters") or []
    producer = [x for x in model["producer"]["lines"] if x not in counters]
    flight = [x for x in producer if not x.startswith(("metadata:", "no key:"))]
    head = [x.replace("metadata:", "its metadata shows").replace("no key: sticks to", "records without a key "
                                                                      "stick to")
            .replace("no key: no partition drawn yet", "no partition drawn yet for records without a key")
            for x in producer if x.startswith(("metadata:", "no key:"))]
    said = "nothing in flight" if flight == ["no request in flight"] else "in flight " + "; ".join(flight)
    lines.append("Producer: " + "; ".join(head + [said]) + ".")
    if counters:  # scene 08: producer ids, epochs, sequences; what leaders and the coordinator hold
        lines.append("Producer processes: " + "; ".join(x.replace("✖ ", "dead: ") for x in counters) + ".")
        if model.get("counter_badges"):
            lines.append("Brokers remember: " + "; ".join(model["counter_badges"]) + ".")
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
        where = (f" in __consumer_offsets partition {g['offsets_partition']}"
                 if g.get("offsets_partition") is not None else "")
        lines.append(f"Group {gid}: {g.get('state')}, generation {g.get('generation')}; committed offsets "
                     f"{said}, stored by its coordinator {coordinator}{where}.")
    loads = load(states)
    for st, row in zip(states, model["rows"], strict=True):
        if st.get("absent"):
            lines.append(f"Partition {st['number']}: not created yet at this step; it has no log.")
            continue
        lead = f"leader B{st['leader']}" if st["leader"] is not None else "no leader"
        text = (f"Partition {st['number']} ({lead}, log start {st['log_start']}, HW {st['hw']}, "
                f"LEO {st['leo']}): {_log_text(st)}.")
        share = loads.get(st["number"])
        if share is not None:
            text += (f" It holds {share['records']} of the topic's {share['total']} records"
                     + (", a hot partition." if share["hot"] else "."))
        deleted = [e for e in st["log"] if int(e["offset"]) < st["log_start"]]
        if deleted:
            gone = row["deleted"]
            span = (f"Offsets {gone['first']}-{gone['last']}" if gone["last"] > gone["first"]
                    else f"Offset {gone['first']}")
            text += (f" {span} deleted ({', '.join(str(e.get('record')) for e in deleted)} are gone)"
                     if len(deleted) > 1 else f" {span} deleted ({deleted[0].get('record')} is gone)") + "."
        cleaned = row.get("cleaned") or []
        if cleaned:
            spans = ", ".join(f"{c['first']}-{c['last']}" if c["last"] > c["first"] else str(c["first"])
                              for c in cleaned)
            many = len(cleaned) > 1 or cleaned[0]["last"] > cleaned[0]["first"]
            text += f" The cleaner removed offset{'s' if many else ''} {spans}: the offsets stay, as gaps."
        if row["markers"] and row["markers"].get("lso") is not None:
            text += f" Last stable offset {row['markers']['lso']}."
        if row["segments"]:
            text += " Segments: " + _segments_text(row) + "."
        marks = [m["text"] for lane in row["lanes"] for m in lane["markers"]]
        if marks:
            text += " Markers: " + "; ".join(marks) + "."
        lines.append(text)
    lines.append("Brokers: " + "; ".join(_broker_words(view, states, groups)) + ".")
    lines.extend(b["title"].replace("The log cleaner's", "Log cleaner's", 1).rstrip(".") + "."
                 for b in model["brokers"] if b["text"].startswith("cleaner"))
    pills = model["pills"]
    if pills:
        lines.append("On the network: " + "; ".join(
            p.get("said") or
            f"{'the producer' if p['at'] == 'producer' else 'P' + p['at'][1:] + ' leader'} sends {p['full']}"
            for p in pills) + ".")
    else:  # a request the producer still waits for is in its box ("awaiting reply"), not on the wire
        lines.append("On the network: no message is travelling at this instant.")
    return lines
