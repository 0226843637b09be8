"""What a consumer group with several members looks like at the current step (scene 07).

The log diagram (app/logdiagram.py) draws consumers one line each. A group that several consumers
of the scenario share is drawn as a group instead, from the engine's view at this step:

    header      the group's state, generation, protocol and assignor, its coordinator and leader
    a member    alive or not, the partitions it may process now, and its downtime so far; a member
                between an eager revoke and its new assignment, or waiting for its first one, says
                since when
    a partition who may process it now, or that nobody may: revoked by its owner, or owned by a
                member that crashed or left, with the time it has been idle so far

Downtime is the engine's: `consumers[id].downtime` lists the intervals in which the live member
processed nothing (with their reason). They are cut at the current step's time here, so the page
shows the downtime *so far*, never the run's total.
"""

from __future__ import annotations

from typing import Any

from app import formats

GROUP_STATE_SHORT = {"PreparingRebalance": "preparing", "CompletingRebalance": "completing"}
DOWN_WHY = {
    "revoked": "revoked, waiting for its new assignment",
    "unassigned": "waiting for partitions",
    "stalled": "application busy, not polling",
}


def shared_groups(scenario: dict[str, Any]) -> list[str]:
    """The groups that two or more consumers of the scenario share, in name order."""
    count: dict[str, int] = {}
    for c in scenario.get("consumers") or []:
        g = c.get("group.id")
        if g:
            count[str(g)] = count.get(str(g), 0) + 1
    return sorted(g for g, n in count.items() if n > 1)


def downtime_at(intervals: list[dict[str, Any]], t_ms: int) -> tuple[int, dict[str, Any] | None]:
    """The downtime of one member up to `t_ms` (its intervals cut at that time, overlaps counted
    once) and the interval open at `t_ms`, if any (`to_ms` None or later than `t_ms`)."""
    spans = []
    current = None
    for d in intervals or []:
        start = int(d.get("from_ms", 0))
        end = d.get("to_ms")
        end = t_ms if end is None else min(int(end), t_ms)
        if start > t_ms:
            continue
        if d.get("to_ms") is None or int(d["to_ms"]) > t_ms:
            current = d
        if end > start:
            spans.append((start, end))
    total, reach = 0, None
    for start, end in sorted(spans):
        if reach is not None and start < reach:
            start = reach
        if end > start:
            total += end - start
        reach = end if reach is None else max(reach, end)
    return total, current


def member_downtime(result: dict[str, Any], cid: str, t_ms: int) -> tuple[int, dict[str, Any] | None]:
    consumer = (result.get("consumers") or {}).get(cid) or {}
    return downtime_at(consumer.get("downtime") or [], t_ms)


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} s" if ms < 60_000 else formats.clock(ms)


def _parts(ids: list[int]) -> str:
    return ", ".join(f"P{p}" for p in ids) if ids else "nothing"


def owners(view: dict[str, Any], group: str) -> dict[int, str]:
    """Partition -> the member of `group` that may process it now (alive, and it is in the
    partitions that member holds at this step)."""
    out = {}
    for cid, c in sorted((view.get("consumers") or {}).items()):
        if c.get("group") == group and c.get("alive"):
            for p in c.get("assigned") or []:
                out[int(p)] = cid
    return out


def idle_reason(view: dict[str, Any], group: str, p: int) -> str | None:
    """Why nobody processes partition `p` now, from the coordinator's stored assignment: its
    holder revoked it, crashed or closed; None when the group never gave it out."""
    g = (view.get("groups") or {}).get(group) or {}
    consumers = view.get("consumers") or {}
    for cid, parts in sorted((g.get("members") or {}).items()):
        if p in [int(x) for x in parts or []]:
            c = consumers.get(cid) or {}
            if not c.get("alive"):
                return f"{cid} {c.get('status') or 'gone'}"
            return f"revoked by {cid}"
    last = (g.get("history") or [])[-1:] or [{}]
    for cid, parts in sorted((last[0].get("assignment") or {}).items()):
        if p in [int(x) for x in parts or []]:
            c = consumers.get(cid) or {}
            return f"{cid} {c.get('status') or 'gone'}" if not c.get("alive") else f"revoked by {cid}"
    return None


def header_lines(view: dict[str, Any], group: str) -> list[str]:
    g = (view.get("groups") or {}).get(group)
    if not g:
        return [f"{group}: no member has joined yet"]
    protocol = g.get("protocol") or "?"
    assignor = g.get("assignor")
    how = f"{protocol} ({assignor})" if assignor else str(protocol)
    state = str(g.get("state"))
    first = f"{group}: {state} · gen {g.get('generation')} · {how}"
    coord = f"B{g['coordinator']}" if g.get("coordinator") is not None else "none"
    second = f"coordinator {coord} · leader {g.get('leader') or 'none'}"
    rebalances = g.get("rebalances")
    if rebalances is not None:
        second += f" · {rebalances} rebalance{'s' if rebalances != 1 else ''}"
    return [first, second]


def member_line(view: dict[str, Any], result: dict[str, Any], cid: str, glyph: str, status: str) -> str:
    c = (view.get("consumers") or {}).get(cid) or {}
    t = int(view.get("t_ms", 0))
    down, now = member_downtime(result, cid, t)
    if status == "idle":
        return f"{glyph} {cid} not started"
    if not c.get("alive"):
        return f"{glyph} {cid} {status}"
    owned = sorted(int(p) for p in c.get("assigned") or [])
    text = f"{glyph} {cid} owns {_parts(owned)}" if owned else f"{glyph} {cid} owns nothing"
    if now is not None:
        text += f" · {now.get('why', 'down')} since {formats.clock(int(now.get('from_ms', 0)))}"
    text += f" · down {_seconds(down)}"
    return text


def partition_badge(view: dict[str, Any], result: dict[str, Any], group: str, p: int) -> dict[str, str]:
    """The badge a partition row carries: its owner in the group, or that it is paused and why."""
    owner = owners(view, group).get(p)
    if owner is not None:
        return {"text": f"▶ {owner}", "cls": "owner",
                "title": f"{owner} owns P{p} in group {group} and processes it"}
    why = idle_reason(view, group, p)
    text = "⏸ " + (why or "no owner")
    return {"text": text, "cls": "bad",
            "title": f"Nobody in group {group} may process P{p} now" + (f": {why}" if why else "")}


def describe_group(view: dict[str, Any], result: dict[str, Any], group: str) -> list[str]:
    """Sentences for the text alternative."""
    t = int(view.get("t_ms", 0))
    lines = [" ".join(header_lines(view, group)).replace(" · ", ", ") + "."]
    for cid, c in sorted((view.get("consumers") or {}).items()):
        if c.get("group") != group:
            continue
        down, now = member_downtime(result, cid, t)
        if not c.get("alive"):
            lines.append(f"Member {cid}: {c.get('status')}.")
            continue
        owned = sorted(int(p) for p in c.get("assigned") or [])
        text = f"Member {cid} may process {_parts(owned)}; downtime so far {_seconds(down)}"
        if now is not None:
            why = DOWN_WHY.get(str(now.get("why")), now.get("why"))
            text += f" ({why} since {formats.clock(int(now['from_ms']))})"
        lines.append(text + ".")
    return lines
