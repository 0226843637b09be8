"""What a consumer group with several members looks like at the current step (scene 07).

A scene whose consumers share a group is drawn as that group, not as logs (`group_mode`):

    header      the group's state, generation, protocol and assignor, its coordinator and leader,
                how many rebalances have completed
    a chip      per partition: the member that processes it now, "busy" when that member's
                application is not polling, hatched when nobody may (revoked by its owner, or its
                owner crashed or left)
    a card      per member: the partitions it owns now, what it is doing, and its downtime so far

Downtime is the engine's: `consumers[id].downtime` lists the intervals in which the live member
processed nothing (with their reason). They are cut at the current step's time here, so the page
shows the downtime *so far*, never the run's total, and counted from the group's first generation
(the wait for a new group's first rebalance is the same in every run).
"""

from __future__ import annotations

from typing import Any

from app import formats
from engine.clients_spec import ConsumerConfig, assignor_short_name

GROUP_STATE_SHORT = {"PreparingRebalance": "preparing", "CompletingRebalance": "completing"}
DOWN_SHORT = {"revoked": "revoked, waiting", "unassigned": "no partitions", "stalled": "busy, no poll()"}


def shared_groups(scenario: dict[str, Any]) -> list[str]:
    """The groups that two or more consumers of the scenario share, in name order."""
    count: dict[str, int] = {}
    for c in scenario.get("consumers") or []:
        g = c.get("group.id")
        if g:
            count[str(g)] = count.get(str(g), 0) + 1
    return sorted(g for g, n in count.items() if n > 1)


def downtime_at(intervals: list[dict[str, Any]], t_ms: int,
                since_ms: int = 0) -> tuple[int, dict[str, Any] | None]:
    """The downtime of one member up to `t_ms` (its intervals cut at that time, overlaps counted
    once), leaving out the intervals that began before `since_ms` (a new group's wait for its first
    rebalance), and the interval open at `t_ms`, if any (`to_ms` None or later)."""
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
        if end > start and start >= since_ms:  # an interval begun before `since_ms` is not counted
            spans.append((start, end))
    total, reach = 0, None
    for start, end in sorted(spans):
        if reach is not None and start < reach:
            start = reach
        if end > start:
            total += end - start
        reach = end if reach is None else max(reach, end)
    return total, current


def member_downtime(result: dict[str, Any], view: dict[str, Any],
                    cid: str) -> tuple[int, dict[str, Any] | None]:
    """A member's downtime at the view's step, counted from when its group first became Stable
    (nothing before that), and the downtime interval open at this step."""
    consumer = (result.get("consumers") or {}).get(cid) or {}
    c = (view.get("consumers") or {}).get(cid) or {}
    t = int(view.get("t_ms", 0))
    since = started_at(view, str(c.get("group") or ""))
    total, now = downtime_at(consumer.get("downtime") or [], t, since if since is not None else t)
    return total, now


def started_at(view: dict[str, Any], group: str) -> int | None:
    """When the group first became Stable (its first generation), or None before that. Downtime
    is counted from then: the wait for a new group's first rebalance is the same in every run."""
    history = ((view.get("groups") or {}).get(group) or {}).get("history") or []
    return int(history[0]["t_ms"]) if history else None


def partition_idle(timeline: Any) -> dict[int, int] | None:
    """Each partition's idle time so far: how long, from the first time a member took it up to the
    current step, no live member of the group held it (revoked and not yet given out again, given
    out but not yet taken up, or its holder crashed, closed or was removed). This is what a
    rebalance costs the topic, and what the eager and cooperative protocols differ on; a holder
    whose application is busy without poll() still holds its partitions and is not counted here
    (the member's own `down` time counts it). Read from every step's state (`timeline.views`);
    None without them."""
    views, steps = getattr(timeline, "views", None), timeline.steps
    if not views:
        return None
    group = shared_groups(timeline.scenario)[0]
    partitions = int((timeline.scenario.get("topic") or {}).get("partitions", 1))
    idle = dict.fromkeys(range(partitions), 0)
    seen: set[int] = set()  # a partition counts from the first time a member took it up
    for k in range(min(timeline.step, len(views) - 1)):
        # the state after k steps holds from step k's time until step k+1's
        start = int(steps[k - 1]["t_ms"]) if k > 0 else 0
        span = int(steps[k]["t_ms"]) - start
        held = owners(views[k], group)
        seen |= set(held)
        if span <= 0:
            continue
        for p in idle:
            if p in seen and p not in held:
                idle[p] += span
    return idle


def idle_text(idle: dict[int, int]) -> str:
    """ "P0-P2 2.004 s, P3-P5 4 ms": runs of neighbouring partitions with the same idle time."""
    runs: list[tuple[int, int, int]] = []
    for p in sorted(idle):
        if runs and runs[-1][1] == p - 1 and runs[-1][2] == idle[p]:
            runs[-1] = (runs[-1][0], p, idle[p])
        else:
            runs.append((p, p, idle[p]))
    return ", ".join((f"P{a}" if a == b else f"P{a}-P{b}") + f" {formats.sim_time(ms)}" for a, b, ms in runs)


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
            if g.get("state") == "Stable":
                # the new generation gives it to cid, which has not taken it up yet (it revokes
                # only while the group prepares a rebalance)
                return f"given to {cid}, not yet taken up"
            return f"revoked by {cid}"
    last = (g.get("history") or [])[-1:] or [{}]
    for cid, parts in sorted((last[0].get("assignment") or {}).items()):
        if p in [int(x) for x in parts or []]:
            c = consumers.get(cid) or {}
            return f"{cid} {c.get('status') or 'gone'}" if not c.get("alive") else f"revoked by {cid}"
    # the newest generation gives it to nobody: the cooperative assignor held it back, so the member
    # of the generation before gives it up and a further round hands it out
    earlier = (g.get("history") or [])[-2:-1]
    for cid, parts in sorted(((earlier[0] if earlier else {}).get("assignment") or {}).items()):
        if p in [int(x) for x in parts or []]:
            return f"held back, revoked by {cid}"
    return None


def group_mode(scenario: dict[str, Any]) -> bool:
    """Whether the scenario is drawn as a consumer group: several of its consumers share a group
    (scene 07). Its partitions' logs matter less than who may process each partition. A scenario
    that names its producer processes (scene 08's counters) keeps its log drawing: there the group
    is one of the counters, drawn in the consumer lines (generation, owned partitions)."""
    return bool(shared_groups(scenario)) and not scenario.get("producers")


def _member_index(scenario: dict[str, Any]) -> dict[str, int]:
    return {str(c["id"]): k for k, c in enumerate(scenario.get("consumers") or [])}


def _status(c: dict[str, Any]) -> str:
    status = str(c.get("status") or ("running" if c.get("alive") else "idle"))
    if status == "running" and not c.get("member_id"):
        return "joining"
    return status


def _timers(spec: dict[str, Any]) -> str:
    """The two timers that watch a member, as configured (Kafka's defaults when the scenario
    leaves them out): the coordinator's session timer and the client's poll timer."""
    default = ConsumerConfig(id="default")  # the engine's (Kafka's) defaults
    session = int(spec.get("session.timeout.ms", default.session_timeout_ms))
    poll = int(spec.get("max.poll.interval.ms", default.max_poll_interval_ms))
    beat = int(spec.get("heartbeat.interval.ms", default.heartbeat_interval_ms))
    leaves = ("stops heartbeating (a static member sends no LeaveGroup)" if spec.get("group.instance.id")
              else "leaves the group")
    return (f"Heartbeats every {formats.sim_time(beat)}; the coordinator removes it after "
            f"{formats.sim_time(session)} without one (session.timeout.ms); its own heartbeat thread "
            f"{leaves} after {formats.sim_time(poll)} without a poll() (max.poll.interval.ms)")


MEMBER_GLYPH = {"running": "●", "joining": "◌", "crashed": "✖", "closed": "■", "idle": "○"}


def group_content(timeline: Any, scenario: dict[str, Any]) -> dict[str, Any]:
    """What the group diagram shows at this step, independent of the geometry."""
    view = timeline.view
    group = shared_groups(scenario)[0]
    g = (view.get("groups") or {}).get(group) or {}
    consumers = view.get("consumers") or {}
    index = _member_index(scenario)
    specs = {str(c["id"]): c for c in scenario.get("consumers") or []}
    instance = {cid: c.get("group.instance.id") for cid, c in specs.items()}
    partitions = int((scenario.get("topic") or {}).get("partitions", 1))
    owner = owners(view, group)
    busy = {cid for cid in consumers
            if (member_downtime(timeline.result, view, cid)[1] or {}).get("why") == "stalled"}
    chips = []
    for p in range(partitions):
        cid = owner.get(p)
        if cid is not None and cid in busy:  # owned, but its application is not polling
            chips.append({"p": p, "label": f"{cid} busy", "short": cid, "sub": "busy",
                          "cls": f"m{index.get(cid, 0) % 4} busy",
                          "title": f"P{p}: {cid} owns it, but its application is busy and does not poll"})
        elif cid is not None:
            chips.append({"p": p, "label": cid, "short": cid, "cls": f"m{index.get(cid, 0) % 4}",
                          "title": f"P{p}: {cid} owns it and processes it"})
        else:
            why = idle_reason(view, group, p) if g else None
            chips.append({"p": p, "label": why or "idle", "short": "idle", "cls": "paused",
                          "title": f"P{p}: nobody in group {group} may process it now"
                                   + (f" ({why})" if why else "")})
    members, down = [], {}
    named = {str(a.get("consumer")) for a in scenario.get("actions") or [] if a.get("consumer")}
    for cid in sorted(c for c, x in consumers.items() if x.get("group") == group):
        if _status(consumers[cid]) == "idle" and cid not in named:
            continue  # a consumer this run never starts
        c = consumers[cid]
        status = _status(c)
        owned = sorted(int(p) for p in c.get("assigned") or [])
        total, now = member_downtime(timeline.result, view, cid)
        if status in ("crashed", "closed", "idle"):
            state = {"crashed": "crashed: sends nothing", "closed": "closed", "idle": "not started"}[status]
        elif now is not None:
            why = DOWN_SHORT.get(str(now.get("why")), now.get("why"))
            state = f"{why} since {formats.sim_time(int(now['from_ms']))}"
        elif status == "joining":
            state = "joining the group"
        else:
            state = "processing" if owned else "waiting for partitions"
        down[cid] = "" if status in ("idle", "crashed", "closed") else f"down {formats.sim_time(total)}"
        gen = c.get("generation")
        members.append({
            "cid": cid, "cls": f"m{index.get(cid, 0) % 4}", "status": status,
            "name": f"{MEMBER_GLYPH.get(status, '●')} {cid}",
            "tag": str(instance[cid]) if instance.get(cid) else "dynamic",
            "gen": f"gen {gen}" if isinstance(gen, int) and gen >= 0 else "no gen",
            "owned": owned, "state": state, "paused": now is not None,
            "title": f"{cid}: {status}; owns {_parts(owned)}; {state}. {_timers(specs.get(cid) or {})}",
        })
    coord = f"B{g['coordinator']}" if g.get("coordinator") is not None else "—"
    first = _first_coordinator(timeline, group)
    if first is not None and g.get("coordinator") is not None and first != g["coordinator"]:
        # the broker leading its __consumer_offsets partition failed: another replica leads it now
        coord += f" (moved from B{first})"
    protocol = g.get("protocol")
    how = protocol or "no protocol yet"
    if protocol and g.get("assignor"):
        how = f"{protocol} ({g['assignor']})"
    head = f"{group} · {g.get('state', 'not formed')}" if g else f"{group} · not formed yet"
    gen = f"gen {g.get('generation')} · {how}" if g else how
    rebalances = g.get("rebalances")
    sub = f"coordinator {coord} · leader {g.get('leader') or '—'}"
    if rebalances is not None:
        sub += f" · {rebalances} rebalance{'s' if rebalances != 1 else ''}"
    return {"group": group, "head": head, "gen": gen, "sub": sub, "chips": chips, "members": members,
            "down": down, "state": str(g.get("state") or "")}


def _first_coordinator(timeline: Any, group: str) -> int | None:
    """The group's coordinator broker at the first step that had one (None without views)."""
    for v in (getattr(timeline, "views", None) or [])[: timeline.step + 1]:
        c = ((v.get("groups") or {}).get(group) or {}).get("coordinator")
        if c is not None:
            return int(c)
    return None


def group_layout(content: dict[str, Any], width: int, narrow: bool) -> dict[str, Any]:
    """SVG coordinates of the group diagram for one geometry."""
    pad = 6
    y = 20.0
    head_y, gen_y = y, y + 18
    sub_y = gen_y + 16
    chips_label_y = sub_y + 20
    chip_top = chips_label_y + 6
    n = max(1, len(content["chips"]))
    gap = 4
    chip_w = (width - 2 * pad - gap * (n - 1)) / n
    chip_h = 48 if narrow else 36  # narrow chips may need a third line ("busy")
    chips = []
    for k, c in enumerate(content["chips"]):
        x = pad + k * (chip_w + gap)
        room = int(chip_w / 7.4)
        text = c["label"] if len(c["label"]) <= room else c["short"]
        sub = c.get("sub") if text != c["label"] else None  # a third line when the label does not fit
        chips.append({**c, "x": round(x, 1), "y": round(chip_top, 1), "w": round(chip_w, 1), "h": chip_h,
                      "cx": round(x + chip_w / 2, 1), "ty1": round(chip_top + 15, 1),
                      "ty2": round(chip_top + 30, 1), "ty3": round(chip_top + 43, 1),
                      "text": text, "sub": sub})
    y = chip_top + chip_h + 12
    cols = 1 if narrow else min(3, max(1, len(content["members"])))
    card_w = (width - 2 * pad - 8 * (cols - 1)) / cols
    # On a phone the two runs of a comparison are stacked, so each member is one compact card of
    # two lines (name, partitions and down time; then what it does), keeping both runs close.
    card_h = 44 if narrow else 76
    gap_y = 5 if narrow else 8
    cards = []
    for k, m in enumerate(content["members"]):
        col, row = k % cols, k // cols
        x = pad + col * (card_w + 8)
        top = y + row * (card_h + gap_y)
        mini_w, mini_gap = (22, 2) if narrow else (26, 3)
        mini_x, mini_y = (x + 84, top + 5) if narrow else (x + 10, top + 30)
        minis = [{"p": p, "x": round(mini_x + j * (mini_w + mini_gap), 1), "y": round(mini_y, 1), "w": mini_w,
                  "tx": round(mini_x + j * (mini_w + mini_gap) + mini_w / 2, 1), "ty": round(mini_y + 12, 1)}
                 for j, p in enumerate(m["owned"])]
        cards.append({**m, "x": round(x, 1), "y": round(top, 1), "w": round(card_w, 1), "h": card_h,
                      "tx": round(x + 10, 1), "name_y": round(top + 18, 1), "tag_x": round(x + card_w - 8, 1),
                      "minis": minis, "none_x": round(mini_x, 1),
                      "none_y": round(top + 18 if narrow else top + 42, 1),
                      "state_y": round(top + 36 if narrow else top + 62, 1),
                      "down_x": round(x + card_w - 8, 1)})
    rows = (len(content["members"]) + cols - 1) // cols
    height = y + rows * (card_h + gap_y) + 2
    return {"width": width, "height": round(height), "head_y": head_y, "gen_y": gen_y, "sub_y": sub_y,
            "label_x": pad,
            "chips_label_y": round(chips_label_y, 1), "chips": chips, "cards": cards, "clock_x": width - pad,
            "geometry": "narrow" if narrow else "wide"}


def diagram(timeline: Any, scenario: dict[str, Any], *, id_prefix: str = "dg",
            defs: bool = True) -> dict[str, Any]:
    """The group diagram at the timeline's step: the same top-level shape as the other diagrams
    (the wide geometry's keys, `narrow`, `clock`, `summary`, `description`), with `mode` "group".
    Each member's downtime ticks with the clock, so it lives in `clock` (not in the signature)."""
    content = group_content(timeline, scenario)
    t_ms = int(timeline.view.get("t_ms", 0))
    wide = group_layout(content, 720, narrow=False)
    out = {
        **wide,
        "mode": "group",
        "narrow": group_layout(content, 310, narrow=True),
        "id_prefix": id_prefix,
        "defs": defs,
        "head": content["head"],
        "gen": content["gen"],
        "sub": content["sub"],
        "svg_title": f"Consumer group {content['group']}: its partitions and members",
        "region_label": "Group diagram",
        "pills": [],
        "timers": [],
        "partition": None,
        "clock": {"t_ms": t_ms, "text": formats.clock(t_ms), "timers": {}, "waits": {},
                  "down": content["down"]},
    }
    paused = [c for c in content["chips"] if c["cls"] == "paused"]
    out["summary"] = (f"At {formats.clock(t_ms)}: {content['head']}; "
                      + (f"{len(paused)} of {len(content['chips'])} partitions have nobody processing them."
                         if paused else "every partition has a member processing it."))
    out["description"] = [out["summary"], f"{content['gen']}; {content['sub']}."] + [
        f"P{c['p']}: {c['title'].split(': ', 1)[1]}." for c in content["chips"]
    ] + [f"Member {m['cid']} ({m['tag']}, {m['gen']}): owns {_parts(m['owned'])}; {m['state']}; "
         f"{content['down'][m['cid']]} so far." for m in content["members"]]
    return out


def outcomes(timeline: Any) -> dict[str, Any]:
    """The line under each run of a side-by-side comparison: the group's generation and
    rebalances so far, and each member's downtime so far (what the two protocols are compared on)."""
    view = timeline.view
    group = shared_groups(timeline.scenario)[0]
    g = (view.get("groups") or {}).get(group) or {}
    downs = []
    for cid, c in sorted((view.get("consumers") or {}).items()):
        if c.get("group") == group and (c.get("status") or "idle") != "idle":
            downs.append(f"{cid} {formats.sim_time(member_downtime(timeline.result, view, cid)[0])}")
    head = (f"Generation {g.get('generation')}, {g.get('rebalances', 0)} rebalance"
            f"{'s' if g.get('rebalances', 0) != 1 else ''} so far." if g else "The group has not formed yet.")
    idle = partition_idle(timeline) if started_at(view, group) is not None else None
    text = head
    if idle is not None:
        text += f" Partitions idle since the group started (no live member holding them): {idle_text(idle)}."
    if downs:
        text += f" Members down (live but processing nothing): {', '.join(downs)}."
    return {"acked": [], "failed": [], "waiting": [], "unanswered": [], "lost": [], "text": text}


def run_title(scenario: dict[str, Any]) -> str:
    """The title over the main run of a comparison: what its consumers are configured with."""
    group = shared_groups(scenario)[0]
    spec = next(c for c in scenario.get("consumers") or [] if c.get("group.id") == group)
    listed = tuple(spec.get("partition.assignment.strategy") or ConsumerConfig.partition_assignment_strategy)
    # the protocol every listed assignor supports: the engine's rule (ConsumerConfig.rebalance_protocol)
    short = tuple(assignor_short_name(a) or a for a in listed)
    protocol = ConsumerConfig(id="run", partition_assignment_strategy=short).rebalance_protocol
    static = " · static members" if spec.get("group.instance.id") else ""
    return f"This run: [{', '.join(listed)}] = {protocol}{static}"
