"""Challenges about logs and their readers, judged from the engine's run as of the current step.

A scene's challenge names a goal (scenes.model.ChallengeGoal). `lose_acked_write` is judged from
the engine's loss ledger (app.presenters.challenge_panel); the goals here are judged from the
engine steps so far and the view at the current step, never from the beat's data or the end of
the run:

    read_before_subscribe  a consumer's poll() returned a record that was appended before that
                           consumer first subscribed (or assigned itself partitions)
    spread_keys            three records with three different keys, none naming its partition,
                           sit in three different partitions
    fan_out                the records that were in the log when some group's first member
                           subscribed all reached that group, and another group too
    skip_records           a group is past a record that is still in the log and that no member
                           of the group processed: the group's committed offset, or a running
                           member's position, lies beyond it. A record poll() returned counts as
                           processed unless its consumer crashed before its next poll() or close().
                           Its second part is met too: a member's poll() threw
                           OFFSET_OUT_OF_RANGE (auto.offset.reset=none), so nothing was skipped
                           silently
    hot_partition          on a topic of at least HOT_MIN_PARTITIONS partitions, with at least
                           HOT_MIN_RECORDS records placed by their key, one partition holds at
                           least twice an even share of them, and one key makes up more than half
                           of that partition's (a skewed key, not keys colliding). Its second
                           part is met too: with partitioner.ignore.keys the sticky partitioner
                           put every keyless-treated record on one partition, batch.size not
                           reached
    duplicate_then_dedupe  the log holds a record twice (the engine's duplicates ledger at this
                           step). Its second part is met too: a leader recognised a batch sent
                           again after it was written (leader_dedupe_idempotent), and no record is
                           there twice
    rolling_restart_no_rebalance
                           every member of a group went away (crash or close) and came back running
                           with partitions after the group first became Stable, and no join phase
                           completed since then: a rolling restart with zero rebalances (scene 07)
Each judge returns (met, sentence): the sentence says what the run did, in the engine's terms
(consumers, groups, partitions and offsets), so the learner sees why it is met or not yet.
"""

from __future__ import annotations

import collections
import itertools
from typing import Any

from app import eos, logdiagram
from app.formats import clock
from engine.producers import BATCH_SIZE

OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"


def _appends(steps: list[dict[str, Any]]) -> dict[tuple[int, int], tuple[int, str]]:
    """(partition, offset) -> (engine step, record) for every record a leader appended so far."""
    out: dict[tuple[int, int], tuple[int, str]] = {}
    for s in steps:
        if s.get("kind") != "leader_append":
            continue
        first, last = (s.get("offsets") or [0, -1])[:2]
        records = [str(r) for r in s.get("records") or []]
        partition = int(s.get("partition") or 0)
        for k, offset in enumerate(range(int(first), int(last) + 1)):
            out.setdefault((partition, offset), (int(s["i"]), records[k] if k < len(records) else "?"))
    return out


def _first_start(steps: list[dict[str, Any]]) -> dict[str, int]:
    """The engine step at which each consumer first subscribed or assigned itself partitions."""
    out: dict[str, int] = {}
    for s in steps:
        if s.get("kind") in ("consumer_subscribe", "consumer_assign"):
            out.setdefault(str(s.get("consumer")), int(s["i"]))
    return out


def _groups(scenario: dict[str, Any]) -> dict[str, str]:
    """consumer id -> its group (a consumer without group.id counts as a group of its own)."""
    return {str(c["id"]): str(c.get("group.id") or c["id"]) for c in scenario.get("consumers", [])}


def _names(records: list[str], limit: int = 6) -> str:
    shown = ", ".join(records[:limit])
    return shown + (f" and {len(records) - limit} more" if len(records) > limit else "")


def read_before_subscribe(timeline: Any) -> tuple[bool, str]:
    steps = timeline.steps[: timeline.step]
    appended = _appends(steps)
    started = _first_start(steps)
    received = logdiagram.received_so_far(steps)
    for cid in sorted(received):
        start = started.get(cid)
        early = [r["record"] for r in received[cid]
                 if start is not None and appended.get((r["partition"], r["offset"]), (start, ""))[0] < start]
        if early:
            when = clock(int(steps[start - 1].get("t_ms", 0))) if 0 < start <= len(steps) else "the start"
            return True, (f"{cid} subscribed at {when}, and poll() has since returned "
                          f"{_names(list(dict.fromkeys(early)))}, written before that.")
    waiting = [(cid, sum(1 for i, _r in appended.values() if i < at)) for cid, at in sorted(started.items())]
    missed = [(cid, n) for cid, n in waiting if n]
    if missed:
        cid, n = missed[0]
        return False, (f"{cid} subscribed after {n} record{'s' if n != 1 else ''} had been written, and "
                       f"poll() has returned none of {'them' if n != 1 else 'it'} to it so far.")
    if started:
        return False, "every consumer so far subscribed before the records it could read were written."
    return False, "no consumer has subscribed yet."


def spread_keys(timeline: Any) -> tuple[bool, str]:
    named = {str(r) for a in timeline.scenario.get("actions", [])
             if a.get("do") == "produce" and a.get("partition") is not None for r in a.get("records") or []}
    where: dict[str, set[int]] = {}
    for st in (logdiagram.partition_state(s, i)
               for i, s in enumerate(logdiagram.partition_views(timeline.view))):
        for e in st["log"]:
            key = e.get("key")
            if key is None or str(e.get("record")) in named or int(e["offset"]) < st["log_start"]:
                continue
            where.setdefault(str(key), set()).add(st["number"])
    for keys in itertools.combinations(sorted(where), 3):
        for parts in itertools.product(*(sorted(where[k]) for k in keys)):
            if len(set(parts)) == 3:
                pairs = ", ".join(f"{k} in P{p}" for k, p in zip(keys, parts, strict=True))
                return True, f"three keys sit in three different partitions: {pairs}."
    if not where:
        return False, "no record with a key is in the topic yet."
    used = sorted({p for ps in where.values() for p in ps})
    by_key = "; ".join(f"{k} in {', '.join(f'P{p}' for p in sorted(ps))}" for k, ps in sorted(where.items()))
    return False, (f"{len(where)} key{'s' if len(where) != 1 else ''} in "
                   f"{len(used)} partition{'s' if len(used) != 1 else ''} so far ({by_key}).")


def fan_out(timeline: Any) -> tuple[bool, str]:
    steps = timeline.steps[: timeline.step]
    appended = _appends(steps)
    started = _first_start(steps)
    group_of = _groups(timeline.scenario)
    got: dict[str, set[tuple[int, int]]] = {}
    for cid, rows in logdiagram.received_so_far(steps).items():
        got.setdefault(group_of.get(cid, cid), set()).update((r["partition"], r["offset"]) for r in rows)
    first_in_group: dict[str, int] = {}
    for cid, at in started.items():
        g = group_of.get(cid, cid)
        first_in_group[g] = min(at, first_in_group.get(g, at))
    best = None
    for late, at in sorted(first_in_group.items(), key=lambda kv: kv[1]):
        before = {po for po, (i, _r) in appended.items() if i < at}
        if not before:
            continue
        names = [appended[po][1] for po in sorted(before)]
        if not before <= got.get(late, set()):
            missing = sorted(before - got.get(late, set()))
            best = best or (f"{len(before)} record{'s were' if len(before) != 1 else ' was'} in the log when "
                            f"group {late} started, and {len(missing)} of them "
                            f"{'have' if len(missing) != 1 else 'has'} not reached it.")
            continue
        others = [g for g in sorted(got) if g != late and before <= got[g]]
        if others:
            return True, (f"{_names(names)}, in the log before group {late} started, reached both {late} "
                          f"and {others[0]}.")
        best = best or (f"group {late} read everything that was in the log when it started, but no other "
                        "group has read all of it.")
    if best:
        return False, best
    if len(first_in_group) < 2:
        return False, "fewer than two groups have started reading."
    return False, "every group started before the records it could read were written."


def processed_so_far(steps: list[dict[str, Any]], group_of: dict[str, str]) -> tuple[
        dict[str, set[tuple[int, int]]], dict[str, list[dict[str, Any]]]]:
    """Per group, the (partition, offset) of every record its members processed in `steps`, and
    per consumer the records it held when it crashed (returned by poll(), never processed).

    An application processes what poll() returned before it calls poll() again or close(); a
    crash in between loses that work. What the last poll of a consumer still running returned
    counts as processed (it is being processed now)."""
    holding: dict[str, list[dict[str, Any]]] = {}
    done: dict[str, set[tuple[int, int]]] = {}
    lost: dict[str, list[dict[str, Any]]] = {}

    def finish(cid: str) -> None:
        rows = holding.pop(cid, [])
        done.setdefault(group_of.get(cid, cid), set()).update((r["partition"], r["offset"]) for r in rows)

    for s in steps:
        kind = s.get("kind")
        cid = str(s.get("consumer"))
        if kind == "consumer_poll":
            finish(cid)
            got = zip(s.get("got") or [], s.get("records") or [], strict=False)
            holding[cid] = [{"partition": int(p), "offset": int(off), "record": str(rec)}
                            for (p, off), rec in got]
        elif kind == "consumer_close":
            finish(cid)
        elif kind == "consumer_crash":
            lost.setdefault(cid, []).extend(holding.pop(cid, []))
    for cid in list(holding):
        finish(cid)
    return done, lost


def skip_records(timeline: Any) -> tuple[bool, str]:
    steps = timeline.steps[: timeline.step]
    group_of = _groups(timeline.scenario)
    done, lost = processed_so_far(steps, group_of)
    view = timeline.view
    consumers = view.get("consumers") or {}
    groups = view.get("groups") or {}
    states = {st["number"]: st for st in (logdiagram.partition_state(s, i)
                                          for i, s in enumerate(logdiagram.partition_views(view)))}
    for gid in sorted(groups):
        marks: dict[int, tuple[int, str]] = {}
        for p, off in (groups[gid].get("committed") or {}).items():
            marks[int(p)] = (int(off), f"its committed offset is {off}")
        for cid in sorted(consumers):
            c = consumers[cid]
            if group_of.get(cid, cid) != gid or not c.get("alive"):
                continue
            owned = [int(x) for x in c.get("assigned") or []]
            for p, off in (c.get("position") or {}).items():
                if int(p) in owned and int(off) > marks.get(int(p), (-1, ""))[0]:
                    marks[int(p)] = (int(off), f"{cid}'s position is {off}")
        for p, (upto, why) in sorted(marks.items()):
            st = states.get(p)
            if st is None or st.get("absent"):
                continue
            skipped = [e for e in st["log"]
                       if st["log_start"] <= int(e["offset"]) < min(upto, st["hw"])
                       and (p, int(e["offset"])) not in done.get(gid, set())]
            if skipped:
                first, last = int(skipped[0]["offset"]), int(skipped[-1]["offset"])
                span = f"offsets {first}-{last}" if last > first else f"offset {first}"
                names = _names([str(e.get("record")) for e in skipped])
                return True, (f"group {gid} is past {names} (P{p} {span}), still in the log, which no member "
                              f"of {gid} processed: {why}, and nothing told the application.")
    thrown = [s for s in steps if s.get("kind") == "consumer_error" and s.get("error") == OUT_OF_RANGE]
    if thrown:
        cid = str(thrown[-1].get("consumer"))
        return True, (f"second part: {cid}'s poll() threw {OUT_OF_RANGE} (auto.offset.reset=none). Nothing "
                      "was skipped silently: the application is told, and must seek somewhere itself.")
    dropped = [(cid, r) for cid, rows in sorted(lost.items()) for r in rows]
    if dropped:
        cid = dropped[0][0]
        names = _names([r["record"] for c, r in dropped if c == cid])
        gid = group_of.get(cid, cid)
        return False, (f"{cid} crashed holding {names}, never processed, but group {gid} is not past them: "
                       "they will be read again (a repeat, not a skip).")
    if not groups:
        return False, "no consumer group has read anything yet."
    return False, ("every record a group is past was processed by one of its members, or is no longer "
                   "in the log.")


def _sticky_one_partition(timeline: Any) -> tuple[bool, str]:
    """hot_partition's second part: keys ignored, yet the records still share one partition."""
    views = logdiagram.partition_views(timeline.view)
    states = [logdiagram.partition_state(s, i) for i, s in enumerate(views)]
    used = {st["number"]: len([e for e in st["log"] if int(e["offset"]) >= st["log_start"]])
            for st in states if not st.get("absent")}
    holding = {p: n for p, n in used.items() if n}
    if len(holding) == 1:
        ((p, n),) = holding.items()
        return True, (f"second part: partitioner.ignore.keys is true, and all {n} records still went to "
                      f"P{p}. The sticky partitioner stays on a partition until at least batch.size "
                      f"({BATCH_SIZE} bytes) has gone there, so a few small records share one partition: "
                      "ignoring keys spreads load only over many batches.")
    spread = ", ".join(f"P{p} {n}" for p, n in sorted(holding.items())) or "none yet"
    return False, (f"partitioner.ignore.keys is true, so keys chose no partition: the sticky partitioner "
                   f"placed the records ({spread}), and a hot partition now says nothing about a key.")


HOT_MIN_PARTITIONS = 6
HOT_MIN_RECORDS = 6


def hot_partition(timeline: Any) -> tuple[bool, str]:
    scenario = timeline.scenario
    if (scenario.get("producer") or {}).get("partitioner.ignore.keys"):
        return _sticky_one_partition(timeline)
    named = {str(r) for a in scenario.get("actions", [])
             if a.get("do") == "produce" and a.get("partition") is not None for r in a.get("records") or []}
    states = [st for st in (logdiagram.partition_state(s, i)
                            for i, s in enumerate(logdiagram.partition_views(timeline.view)))
              if not st.get("absent")]
    by_part: dict[int, list[str]] = {}
    for st in states:
        by_part[st["number"]] = [str(e["key"]) for e in st["log"]
                                 if e.get("key") is not None and str(e.get("record")) not in named
                                 and int(e["offset"]) >= st["log_start"]]
    n = len(states)
    total = sum(len(keys) for keys in by_part.values())
    if total < HOT_MIN_RECORDS:
        placed = f"{total} record{'s' if total != 1 else ''} placed by {'their' if total != 1 else 'its'} key"
        return False, f"{placed} so far; the challenge needs {HOT_MIN_RECORDS} or more."
    even = total / n
    p, keys = max(by_part.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    top = max(set(keys), key=lambda k: (keys.count(k), k))
    share = f"P{p} holds {len(keys)} of the {total} keyed records on {n} partition{'s' if n != 1 else ''}"
    if len(keys) < 2 * even:
        return False, f"{share}, below twice an even share ({2 * even:.1f}): no partition is hot."
    if keys.count(top) * 2 <= len(keys):
        return False, (f"{share}, a hot partition, but from keys colliding ({', '.join(sorted(set(keys)))}), "
                       "not one skewed key.")
    if n < HOT_MIN_PARTITIONS:
        return False, (f"{share} ({top} alone put {keys.count(top)} there): hot on {n} partitions. Now show "
                       f"that more partitions do not cool it: {HOT_MIN_PARTITIONS} or more.")
    return True, (f"{share}, where an even share is {even:.1f}; {top} alone put {keys.count(top)} there, and "
                  "more partitions cannot spread one key.")


# ----------------------------------------------------------------------------------------------
# miss_delete (scene 05a): a reader read past a tombstone that the cleaner removed first


def _appended_so_far(steps: list[dict[str, Any]]) -> tuple[dict[tuple[int, int], str | None],
                                                           dict[tuple[int, int], str]]:
    """From the leaders' append steps so far (each carries its produce's key): (partition, offset)
    -> key of every record, and -> key of every tombstone (a null value)."""
    key_of: dict[tuple[int, int], str | None] = {}
    tombstones: dict[tuple[int, int], str] = {}
    for s in steps:
        if s.get("kind") != "leader_append":
            continue
        first, partition, key = int((s.get("offsets") or [0])[0]), int(s.get("partition") or 0), s.get("key")
        for k, rec in enumerate(s.get("records") or []):
            key_of[(partition, first + k)] = key
            if rec is None and key is not None:
                tombstones[(partition, first + k)] = key
    return key_of, tombstones


def miss_delete(timeline: Any) -> tuple[bool, str]:
    steps = timeline.steps[: timeline.step]
    key_of, tombstones = _appended_so_far(steps)
    if not tombstones:
        return False, "no key has been deleted yet: no tombstone is in the log."
    received = logdiagram.received_so_far(steps)
    seen: list[str] = []
    for cid, rows in sorted(received.items()):
        for row in rows:
            p, off = row["partition"], row["offset"]
            key = key_of.get((p, off))
            if key is None or row["record"] == logdiagram.TOMBSTONE_TEXT:
                continue
            later = sorted(t for (tp, t), k in tombstones.items() if tp == p and k == key and t > off)
            if not later:
                continue
            t = later[0]
            after = [r for r in rows if r["partition"] == p and r["offset"] > off
                     and key_of.get((p, r["offset"])) == key]
            past = [r for r in rows if r["partition"] == p and r["offset"] > t]
            if after:
                got = after[0]
                tomb = got["record"] == logdiagram.TOMBSTONE_TEXT
                then = f"the tombstone at {got['offset']}" if tomb else f"{got['record']} at {got['offset']}"
                seen.append(f"{cid} read {key} = {row['record']} at {off}, then {then}: its table is "
                            "up to date")
            elif past:
                return True, (f"{cid} read {key} = {row['record']} (P{p} offset {off}); the tombstone at {t} "
                              f"deleted {key}, but {cid} read on to offset {past[0]['offset']} without ever "
                              f"receiving it: the cleaner removed it first. {cid}'s table still says {key} = "
                              f"{row['record']}, and nothing told it otherwise.")
    if seen:
        return False, "; ".join(seen[:2]) + ". The delete reached every reader so far."
    return False, ("a key was deleted, but no reader that read its old value has read past the tombstone's "
                   "offset yet.")


def duplicate_then_dedupe(timeline: Any) -> tuple[bool, str]:
    """Scene 08: a record the log holds twice (the engine's duplicates ledger at this step, each
    with its number of copies); its second part: the leader recognised a batch sent again after it
    was written, and no record is there twice. Each run is judged on its own (the page keeps no
    memory of earlier runs), so the sentence names the beat to start from."""
    snaps = logdiagram.partition_views(timeline.view)
    dups = eos.duplicates(snaps)
    steps = timeline.steps[: timeline.step]
    if dups:
        # how many copies: counted in the logs the ledger counted (each leader's log at this step)
        copies = collections.Counter(
            str(e["record"]) for p, snap in enumerate(snaps)
            for e in logdiagram.partition_state(snap, p)["log"]
            if e.get("record") is not None and not e.get("control"))
        by_count: dict[int, list[str]] = {}
        for r in dups:
            by_count.setdefault(copies.get(r, 2), []).append(r)
        said = "; ".join(f"{_names(rs)} {TIMES.get(n, f'{n} times')}" for n, rs in sorted(by_count.items()))
        return True, (f"first part: the log holds {said} (the engine's duplicates ledger). Now the second "
                      "part: keep the same trouble in beat 1 (the lost answer) and change one knob so that "
                      "the log holds one copy of everything.")
    deduped = [s for s in steps if s.get("kind") == "leader_dedupe_idempotent"]
    if deduped:
        return True, (f"second part: {deduped[0].get('text', 'a leader recognised a retried batch')}; "
                      "the log holds every record once.")
    resent = any(s.get("kind") == "producer_retry" for s in steps)
    return False, ("a batch was sent again, but no record is in the log twice yet: was the first attempt "
                   "written?" if resent else "no batch has been sent twice so far, and no record is in the "
                   "log twice. Start from beat 1 (a lost answer, a retry) with enable.idempotence=false.")


TIMES = {2: "twice", 3: "three times"}


# rebalancing (scene 07)

AWAY_KINDS = ("consumer_crash", "consumer_close")
BACK_KINDS = ("consumer_restart", "consumer_subscribe")


def rolling_restart_no_rebalance(timeline: Any) -> tuple[bool, str]:
    """Every member of the group went away and came back with partitions after the group first
    became Stable, and no join phase has completed since then (no rebalance, the generation never
    moved). Judged from the steps so far and the view at this step."""
    steps = timeline.steps[: timeline.step]
    stable = next((k for k, s in enumerate(steps) if s.get("kind") == "group_sync_complete"), None)
    if stable is None:
        return False, "the group has not become Stable yet, so there is nothing to restart."
    group = str(steps[stable].get("group") or "")
    group_of = _groups(timeline.scenario)
    # the members: the consumers of that group that had started when it first became Stable
    members = sorted({str(s.get("consumer")) for s in steps[:stable] if s.get("kind") in BACK_KINDS
                      and (not group or group_of.get(str(s.get("consumer"))) == group)})
    away: set[str] = set()
    back: set[str] = set()
    rebalances: list[dict[str, Any]] = []
    for s in steps[stable + 1:]:
        kind, cid = s.get("kind"), str(s.get("consumer"))
        if kind in AWAY_KINDS:
            away.add(cid)
            back.discard(cid)
        elif kind in BACK_KINDS and cid in away:
            back.add(cid)
        elif kind == "group_join_complete" and (not group or s.get("group") in (None, group)):
            rebalances.append(s)
    consumers = timeline.view.get("consumers") or {}

    def running_with_partitions(cid: str) -> bool:
        c = consumers.get(cid) or {}
        return bool(c.get("alive")) and bool(c.get("assigned"))

    done = [c for c in members if c in back and running_with_partitions(c)]
    since = f"since the group became Stable at {clock(int(steps[stable].get('t_ms', 0)))}"
    if rebalances:
        first = rebalances[0]
        gen = first.get("generation")
        return False, (f"{len(rebalances)} rebalance{'s' if len(rebalances) != 1 else ''} completed {since}, "
                       f"the first at {clock(int(first.get('t_ms', 0)))}"
                       + (f" (generation {gen})" if gen is not None else "")
                       + ". A restart that the coordinator does not recognise is a new member.")
    if len(done) == len(members):
        who = " and ".join(done) if len(done) == 2 else ", ".join(done)
        return True, (f"{who} each went away and came back with their partitions, and no "
                      f"rebalance completed {since}.")
    missing = [c for c in members if c not in done]
    so_far = f"{', '.join(done)} restarted and running again" if done else "no member has restarted yet"
    return False, f"{so_far}; still to go: {', '.join(missing)}. No rebalance {since} so far."


JUDGES = {
    "miss_delete": miss_delete,
    "duplicate_then_dedupe": duplicate_then_dedupe,
    "read_before_subscribe": read_before_subscribe,
    "spread_keys": spread_keys,
    "fan_out": fan_out,
    "skip_records": skip_records,
    "hot_partition": hot_partition,
    "rolling_restart_no_rebalance": rolling_restart_no_rebalance,
}


def judge(goal: str, timeline: Any) -> tuple[bool, str]:
    return JUDGES[goal](timeline)
