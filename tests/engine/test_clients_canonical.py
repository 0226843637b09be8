"""The client-side canonical scenarios of kafka-clients-logs.md §F (A1-A7 logs and offsets, B1-B6
committed offsets, C1-C4 the partitioner), each reproduced through `engine.simulate` alone, with a
scenario written in the contract's words (../shared/design/scenario-contract-clients.md, part 2)
and assertions on the contract's result fields only. Plus one "one clock" test: several partitions
share one cluster and one simulated time.

This is the specification the engine's part-2 work must pass; module-level rules already have
their own tests (test_log_segments.py, test_offsets.py, test_partitioner.py) and are not repeated
here. Every expected number comes from the reference; the comment beside it names the section.

"Prefix" runs (as in test_canonical.py): to see the state in the middle of a story, the same
scenario is run with its action list cut at a mark. The engine is a pure function of the
scenario, so that is the story's state at that point.

Decisions where the reference or the contract leaves room (closest to Kafka's code):

 1. Wall-clock times. A scenario that speaks of "10:00" starts at midnight (t = 0 is 00:00) and
    `advance`s to 10:00 before its first record; records carry `timestamp_ms` (CreateTime) equal
    to the simulated now unless the scenario skews them (A7). Starting at t = 0 with a 10:00
    timestamp would be refused in 4.x (message.timestamp.after.max.ms = 1 h, §1).
 2. Retention checks. Brokers start at t = 0; `kafka-log-retention` first runs after
    log.initial.task.delay.ms = 30 s, then every log.retention.check.interval.ms = 300 000 ms
    (§A.4, LM 628-633). Checks fall at hh:m0:30 and hh:m5:30, so A3's "first check after 12:00"
    is 12:00:30 and the tests look at 12:00:29 and 12:00:31.
 3. Long waits are single `advance` actions (up to 8 days): the contract requires simulated time
    to reach 8 days with idle time skipped; the tests do not split waits into small steps.
 4. A consumer process starts at its first `subscribe` or `assign` (contract: "the consumer starts
    (if not running)"). After a consumer `restart` the test calls `subscribe` again: a restart is
    a new process whose code subscribes before it polls (re-subscribing to the same topic is a
    no-op in Kafka, so this is right whichever way the engine restarts it).
    `stall` moves the simulated clock on by its `ms` (the application is busy meanwhile, so the
    next action, by contract run "at the current simulated time", comes after it), like `advance`
    with that consumer not polling.
 5. Poll timeouts. A new group's first poll waits out group.initial.rebalance.delay.ms (3 s,
    §E.3), so it gets JOIN_MS = 10 s. After a member crashed (no LeaveGroup), the rejoin waits
    for the dead member's session.timeout.ms (45 s, §E.4), so that poll gets REJOIN_MS = 90 s.
    A poll returns as soon as it has records, so long timeouts cost nothing when data is there.
 6. "Restart begins at X" (A1, B1-B3, B6) is observed as the first offset the restarted (or
    new) consumer's poll returns, and in `consumers[id].received`, duplicates included.
 7. `groups[g].committed` is {} when nothing is committed. An Empty group whose offsets expired
    may be deleted altogether (Kafka removes an Empty group left without offsets), so B4 reads
    `groups.get(g, {}).get("committed", {})`.
 8. `polls[i].error` is what poll() throws. With earliest/latest an out-of-range position is
    reset silently (error null, §A.5); only `none` surfaces OFFSET_OUT_OF_RANGE, and then it is
    also in `consumers[id].errors`. Whether retriable errors the client handles itself
    (NOT_COORDINATOR, the silent reset) appear in `errors` is left to the engine: not asserted.
 9. Auto-commit (B3) happens only inside poll(), close() and rebalances (§B.4); it is not a
    `commit` action, so it is not in `commits`: it is read from `groups[g].committed` in prefix
    runs. It is asynchronous, so the test reads it 500 ms after the poll that sent it.
10. Scaled-down segments (A5, A6): `segment.bytes` = 1000 with one 10-record batch of 1000 bytes
    per produce, so each produce fills one segment; the contract accepts this with a `notes` entry.
11. C3: the sticky partitioner's switch counter is taken to count at most the produce's `bytes`
    (Kafka counts the batch's estimated growth, §C.3); the test asserts only bounds that hold for
    any count <= `bytes`.
12. C4: the contract cannot make one in-flight batch fail with NOT_LEADER_OR_FOLLOWER while the
    next one succeeds (both go to the same leader). B1's request is lost in a network cut instead
    (`isolate` from the producer), so its retriable error is REQUEST_TIMED_OUT after
    request.timeout.ms; the mechanism the scenario teaches (a retry landing after a later
    in-flight batch, §C.5) is the same. The producer writes one record first, so that the broker
    holds its sequence state (see the test), which shifts the reference's offsets by one.
13. C2: a client refreshes its metadata every metadata.max.age.ms (300 000) counted from its
    process start or last refresh (§C.4). Whether a first send's topic fetch restarts that clock
    differs between readings of Kafka's `Metadata`; the timeline keeps every produce at least a
    minute away from every possible refresh, and starts the second producer (and the consumer)
    later so that their refreshes fall at a different time.
14. B5: which broker leads `__consumer_offsets-31` is the engine's choice (the contract does not
    fix the internal topic's placement). The test learns it from a prefix run and crashes it.
15. A6/A7 ListOffsets: the contract has no ListOffsets action. EARLIEST is `seek "beginning"`,
    LATEST is `seek "end"` and `auto.offset.reset=latest`, and a lookup by time is 4.0's
    `auto.offset.reset=by_duration:<ISO-8601>` (KIP-1106, §A.5), which is Kafka's own value of a
    contract key. What stays out is listed in A6's and A7's tests.
16. One clock: "steps caused by the crash" are the crash action's own steps, the controller's
    steps (fencing, elections) and the leader_become / follower_become steps that follow; a step
    kind that several partitions share must carry the same `t_ms` in each.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine import ScenarioError, simulate


def NOT_YET(why: str) -> pytest.MarkDecorator:  # noqa: N802 - reads as a marker
    """A canonical scenario the engine does not reproduce yet (issue 10's open items): strict, so
    the mark must go as soon as the engine passes it."""
    return pytest.mark.xfail(reason=why, strict=True, raises=(AssertionError, ScenarioError))

SEC = 1_000
MIN = 60 * SEC
HOUR = 60 * MIN
DAY = 24 * HOUR
MIB = 1024 * 1024

JOIN_MS = 10 * SEC  # decision 5: a new group's first poll (3 s initial rebalance delay + the join)
REJOIN_MS = 90 * SEC  # decision 5: a rejoin that must outwait a crashed member's 45 s session


def at(hh: int, mm: int = 0, ss: int = 0) -> int:
    """A wall-clock time of the reference's scenarios, as ms since the scenario's midnight."""
    return hh * HOUR + mm * MIN + ss * SEC


# ============================================================================ building scenarios


class Story(dict):
    """A contract scenario (a plain JSON dict) that remembers named points in its action list."""

    marks: dict[str, int]


def mark(name: str) -> dict:
    """A named point between actions; not sent to the engine."""
    return {"__mark__": name}


def story(
    *actions: dict,
    brokers: tuple[int | dict, ...] = (1,),
    partitions: int = 1,
    rf: int = 1,
    topic: dict[str, Any] | None = None,
    consumers: tuple[dict, ...] = (),
    producers: tuple[dict, ...] = (),
    timing: dict[str, Any] | None = None,
    seed: int = 0,
) -> Story:
    """One topic (§F conventions: one partition, RF=1 unless stated) on `brokers`."""
    sc = Story(version=1, seed=seed, kafka_version="4.1")
    sc.marks = {}
    sc["brokers"] = [b if isinstance(b, dict) else {"id": b} for b in brokers]
    sc["topic"] = {"partitions": partitions, "replication.factor": rf, **(topic or {})}
    if consumers:
        sc["consumers"] = [dict(c) for c in consumers]
    if producers:
        sc["producers"] = [dict(p) for p in producers]
    if timing:
        sc["timing"] = dict(timing)
    real = []
    for a in actions:
        if "__mark__" in a:
            sc.marks[a["__mark__"]] = len(real)
        else:
            real.append(dict(a))
    sc["actions"] = real
    return sc


def consumer(
    cid: str,
    group: str | None = "g",
    reset: str | None = None,
    auto_commit: bool | None = None,
    loop_ms: int | None = None,
    **kafka: Any,
) -> dict:
    """A consumer process. Only what a test names is written; the rest are Kafka's defaults
    (auto.offset.reset=latest, enable.auto.commit=true every 5000 ms, max.poll.records=500)."""
    c: dict[str, Any] = {"id": cid}
    if group is not None:
        c["group.id"] = group
    if reset is not None:
        c["auto.offset.reset"] = reset
    if auto_commit is not None:
        c["enable.auto.commit"] = auto_commit
    if loop_ms is not None:
        c["loop_ms"] = loop_ms
    c.update({k.replace("_", "."): v for k, v in kafka.items()})
    return c


def values(prefix: str, n: int, start: int = 0) -> list[str]:
    return [f"{prefix}{i}" for i in range(start, start + n)]


def produce(
    *records: str,
    key: str | None = None,
    size: int | None = None,
    ts: int | None = None,
    producer: str | None = None,
    partition: int | None = None,
    count: int | None = None,
) -> dict:
    a: dict[str, Any] = {"do": "produce"}
    if count is not None:
        a["count"] = count
    else:
        a["records"] = list(records)
    if key is not None:
        a["key"] = key
    if size is not None:
        a["bytes"] = size
    if ts is not None:
        a["timestamp_ms"] = ts
    if producer is not None:
        a["producer"] = producer
    if partition is not None:
        a["partition"] = partition
    return a


def advance(ms: int) -> dict:
    return {"do": "advance", "ms": ms}


def settle(max_ms: int | None = None) -> dict:
    return {"do": "settle"} if max_ms is None else {"do": "settle", "max_ms": max_ms}


def crash(broker: int) -> dict:
    return {"do": "crash", "broker": broker}


def isolate(broker: int, *from_: str | int) -> dict:
    return {"do": "isolate", "broker": broker, "from": list(from_)}


def heal(broker: int, *from_: str | int) -> dict:
    return {"do": "heal", "broker": broker, "from": list(from_)}


def subscribe(c: str) -> dict:
    return {"do": "subscribe", "consumer": c}


def assign(c: str, *partitions: int) -> dict:
    return {"do": "assign", "consumer": c, "partitions": list(partitions)}


def poll(c: str, timeout_ms: int | None = None, max_records: int | None = None) -> dict:
    a: dict[str, Any] = {"do": "poll", "consumer": c}
    if timeout_ms is not None:
        a["timeout_ms"] = timeout_ms
    if max_records is not None:
        a["max_records"] = max_records
    return a


def commit(c: str, offsets: dict[int, int] | None = None) -> dict:
    a: dict[str, Any] = {"do": "commit", "consumer": c}
    if offsets is not None:
        a["offsets"] = {str(p): o for p, o in offsets.items()}
    return a


def seek(c: str, partition: int, offset: int | str) -> dict:
    return {"do": "seek", "consumer": c, "partition": partition, "offset": offset}


def stall(c: str, ms: int) -> dict:
    return {"do": "stall", "consumer": c, "ms": ms}


def consumer_crash(c: str) -> dict:
    return {"do": "crash", "consumer": c}


def consumer_restart(c: str) -> dict:
    return {"do": "restart", "consumer": c}


def consumer_shutdown(c: str) -> dict:
    return {"do": "shutdown", "consumer": c}


def producer_shutdown(p: str) -> dict:
    return {"do": "shutdown", "producer": p}


def producer_restart(p: str) -> dict:
    return {"do": "restart", "producer": p}


def add_partitions(count: int) -> dict:
    return {"do": "add_partitions", "count": count}


def delete_records(partition: int, offset: int) -> dict:
    return {"do": "delete_records", "partition": partition, "offset": offset}


# ============================================================================ running and reading


def run(sc: dict, **kwargs: Any) -> dict:
    """simulate() on a deep copy, so a test can reuse its scenario afterwards."""
    return simulate(copy.deepcopy(dict(sc)), **kwargs)


def upto(sc: Story, name: str, **kwargs: Any) -> dict:
    """The story up to the named mark."""
    cut = copy.deepcopy(dict(sc))
    cut["actions"] = cut["actions"][: sc.marks[name]]
    return simulate(cut, **kwargs)


def part(r: dict, p: int = 0) -> dict:
    return r["partitions"][p]


def layout(r: dict, p: int = 0) -> list[tuple[int, int]]:
    """Each segment as (base offset, next offset), oldest first; the last is the active one."""
    return [(s["base_offset"], s["next_offset"]) for s in part(r, p)["segments"]]


def seg_bytes(r: dict, p: int = 0) -> list[int]:
    return [s["bytes"] for s in part(r, p)["segments"]]


def offsets_bounds(r: dict, p: int = 0) -> tuple[int, int, int]:
    """(log_start_offset, hw, leo) of partition p."""
    q = part(r, p)
    return q["log_start_offset"], q["hw"], q["leo"]


def log_rows(r: dict, p: int = 0) -> list[tuple[int, str | None]]:
    return [(e["offset"], e["record"]) for e in part(r, p)["log"]]


def rows(records: list[dict]) -> list[tuple[int, str | None]]:
    return [(x["offset"], x["record"]) for x in records]


def offsets(records: list[dict]) -> list[int]:
    return [x["offset"] for x in records]


def polls_of(r: dict, c: str) -> list[dict]:
    """The `polls` entries of one consumer, in order (polls[i] follows the poll actions)."""
    return [p for p in r["polls"] if p["consumer"] == c]


def received(r: dict, c: str, partition: int | None = None) -> list[dict]:
    got = r["consumers"][c]["received"]
    return [x for x in got if partition is None or x["partition"] == partition]


def committed(r: dict, group: str = "g") -> dict[str, int]:
    return r["groups"].get(group, {}).get("committed", {})


def position(r: dict, c: str) -> dict[str, int]:
    return r["consumers"][c]["position"]


def produced_partitions(r: dict) -> list[int]:
    return [p["partition"] for p in r["produce"]]


# ============================================================================ §F.A the log


def test_A1_offsets_and_the_two_reset_policies():
    """§F.A A1: v0, v1, v2 get offsets 0-2, LEO = HW = 3, logStartOffset 0. A new group with
    `latest` (the default, §1) starts at 3 and receives nothing until offset 3 is written; with
    `earliest` it starts at 0 and receives 0, 1, 2. After commitSync() the committed offset is 3,
    the next offset to read, not 2 (§B.4, KC 931-932)."""
    sc = story(
        produce("v0", "v1", "v2"), settle(), mark("written"),
        subscribe("fresh"), poll("fresh", JOIN_MS), mark("latest joined"),
        subscribe("reader"), poll("reader", JOIN_MS), commit("reader"),
        produce("v3"), settle(), poll("fresh", 5 * SEC),
        consumers=(
            consumer("fresh", group="g-latest"),  # auto.offset.reset left at its default, latest
            consumer("reader", group="g-earliest", reset="earliest", auto_commit=False),
        ),
    )  # fmt: skip

    written = upto(sc, "written")
    assert written["produce"][0]["offsets"] == [0, 1, 2]
    assert log_rows(written) == [(0, "v0"), (1, "v1"), (2, "v2")]
    assert offsets_bounds(written) == (0, 3, 3), "A1: logStartOffset 0, HW = LEO = 3 (RF=1)"

    joined = upto(sc, "latest joined")
    assert polls_of(joined, "fresh")[0]["records"] == [], "A1: latest starts at the HW, 3"
    assert position(joined, "fresh") == {"0": 3}

    r = run(sc)
    reader = polls_of(r, "reader")[0]
    assert reader["error"] is None
    assert rows(reader["records"]) == [(0, "v0"), (1, "v1"), (2, "v2")], "A1: earliest starts at 0"
    assert r["commits"][0] == {"consumer": "reader", "offsets": {"0": 3}, "outcome": "ok", "error": None}
    assert committed(r, "g-earliest") == {"0": 3}, "A1: committed 3 = last processed (2) + 1"
    assert rows(polls_of(r, "fresh")[1]["records"]) == [(3, "v3")], "A1: latest sees offset 3 once written"
    assert position(r, "fresh") == {"0": 4}


@pytest.mark.parametrize("policy", ["latest", "earliest", "none"])
def test_A1_a_committed_offset_wins_over_either_reset_policy(policy):
    """§F.A A1 last line and §A.5: restarting with either reset policy resumes at 3, because a
    committed offset exists; the policy applies only without one (or out of range). `none` does
    not throw either. The second process receives exactly offset 3: a reset would give 0-3
    (earliest), nothing (latest, HW 4) or an error (none)."""
    sc = story(
        produce("v0", "v1", "v2"), settle(),
        subscribe("first"), poll("first", JOIN_MS), commit("first"), consumer_shutdown("first"),
        produce("v3"), settle(),
        subscribe("second"), poll("second", JOIN_MS),
        consumers=(
            consumer("first", reset="earliest", auto_commit=False),
            consumer("second", reset=policy, auto_commit=False),
        ),
    )  # fmt: skip
    r = run(sc)
    assert r["commits"][0]["offsets"] == {"0": 3}
    second = polls_of(r, "second")[0]
    assert second["error"] is None
    assert rows(second["records"]) == [(3, "v3")], f"A1: with {policy} the group resumes at its commit, 3"


def test_A2_size_roll():
    """§F.A A2: segment.bytes = 1048576; each produce is one 100 KiB record, 102 470 bytes on disk.
    The roll check runs before each append (§A.3, LSg 164-170): roll if size > 1048576 - 102470
    = 946106. After 9 records the size is 922 230 (no roll); after 10 it is 1 024 700, so the 11th
    append rolls: segment 0 holds offsets 0-9 and segment 10 starts at offset 10."""
    batch = 102_470
    sc = story(
        *[produce(f"big{i}", size=batch) for i in range(9)], settle(), mark("9 records"),
        produce("big9", size=batch), settle(), mark("10 records"),
        produce("big10", size=batch), settle(),
        topic={"segment.bytes": 1_048_576},
    )  # fmt: skip

    nine = upto(sc, "9 records")
    assert layout(nine) == [(0, 9)] and seg_bytes(nine) == [922_230], "9 x 102470, not > 946106"

    ten = upto(sc, "10 records")
    assert layout(ten) == [(0, 10)] and seg_bytes(ten) == [1_024_700], "922230 not > 946106: appended"

    r = run(sc)
    assert [p["offsets"] for p in r["produce"]] == [[i] for i in range(11)]
    assert layout(r) == [(0, 10), (10, 11)], "1024700 > 946106: the 11th append rolls first"
    assert seg_bytes(r) == [1_024_700, 102_470]
    assert offsets_bounds(r) == (0, 11, 11)


def every_minute(first: int, last: int, prefix: str = "m") -> list[dict]:
    """One record a minute from `first` to `last` inclusive, each with CreateTime = now; the
    simulated clock ends at `last` (decision 1)."""
    out: list[dict] = []
    t = first
    while t <= last:
        out.append(produce(f"{prefix}{t // MIN}", ts=t))
        if t < last:
            out.append(advance(MIN))
        t += MIN
    return out


A3_TOPIC = {"retention.ms": HOUR, "segment.ms": HOUR}  # §F.A A3: retention.ms = segment.ms = 1 h


def test_A3_time_retention_busy_partition():
    """§F.A A3, busy partition. S0 opens with the 10:00 record; the first append whose timestamp is
    later than 11:00 (11:01) rolls (§A.3: 11:01 - 10:00 = 61 min > 60 min; 11:00 is not > 60 min),
    so S0 holds 10:00..11:00, offsets 0-60 (61 records), and S1 starts at 61. S0's largest
    timestamp is 11:00, so it is deletable once now - 11:00 > 1 h (§A.4, strict): the 12:00:30 check
    (decision 2) deletes it and logStartOffset becomes 61. S1 (first batch 11:01) rolls at 12:02,
    so S2 starts at offset 122."""
    sc = story(
        advance(at(10)),
        *every_minute(at(10), at(12)),
        advance(29 * SEC), mark("12:00:29"),  # no check since 11:55:30
        advance(2 * SEC), mark("12:00:31"),  # the 12:00:30 check ran
        advance(29 * SEC),
        *every_minute(at(12, 1), at(12, 10)),
        settle(),  # the 12:10 record reaches the log
        topic=A3_TOPIC,
    )  # fmt: skip

    before = upto(sc, "12:00:29")
    assert layout(before) == [(0, 61), (61, 121)], "A3: S0 = 10:00..11:00 (61 records), S1 from 11:01"
    assert part(before)["log"][60]["timestamp_ms"] == at(11)
    assert offsets_bounds(before) == (0, 121, 121), "12:00 - 11:00 is not > 1 h at any check so far"

    after = upto(sc, "12:00:31")
    assert layout(after) == [(61, 121)], "A3: 12:00:30 - 11:00 > 1 h: S0 deleted"
    assert part(after)["log_start_offset"] == 61, "A3: logStartOffset = S1's base offset"
    assert part(after)["log"][0]["offset"] == 61

    r = run(sc)
    # S1 holds 11:01..12:01 (12:01 - 11:01 = 60 min, not > 60); 12:02 rolls S2 at offset 122.
    assert layout(r) == [(61, 122), (122, 131)]
    assert offsets_bounds(r) == (61, 131, 131)
    # Not expressible through the contract: "the files disappear 60 s later" (file.delete.delay.ms);
    # the result shows live segments only, not files renamed .deleted.


def test_A3_time_retention_idle_partition():
    """§F.A A3, idle partition: the producer stops at 11:30, so offsets 0-90 exist and S1 (61-90) is
    active with newest timestamp 11:30. At the first check after 12:30 (12:30:30, decision 2) every
    segment is deletable: Kafka rolls a new empty segment at LEO = 91 and deletes S1 (§A.4,
    UL 1543-1555). logStartOffset = LEO = 91, the partition is empty, and the next record gets 91.
    An idle partition never rolls on segment.ms by itself (§A.3): S1 stays active until then."""
    sc = story(
        advance(at(10)),
        *every_minute(at(10), at(11, 30)),
        advance(at(12, 30, 29) - at(11, 30)), mark("12:30:29"),
        advance(2 * SEC), mark("12:30:31"),
        advance(at(12, 40) - at(12, 30, 31)),
        produce("late", ts=at(12, 40)),
        settle(),
        topic=A3_TOPIC,
    )  # fmt: skip

    before = upto(sc, "12:30:29")
    assert layout(before) == [(61, 91)], "S0 went at 12:00:30; S1 (newest 11:30) is not yet 1 h old"
    assert offsets_bounds(before) == (61, 91, 91)

    after = upto(sc, "12:30:31")
    assert layout(after) == [(91, 91)], "A3: an empty active segment rolled at the LEO, S1 deleted"
    assert offsets_bounds(after) == (91, 91, 91), "A3: logStartOffset = LEO = 91, the partition is empty"
    assert part(after)["log"] == []

    r = run(sc)
    assert r["produce"][-1]["offsets"] == [91], "A3: the next record gets offset 91"
    assert layout(r) == [(91, 92)]


def test_A4_size_retention_keeps_at_least_retention_bytes():
    """§F.A A4: retention.bytes = 3 MiB; S0-S3 of 1 MiB each plus an active S4 of 0.5 MiB, 4.5 MiB.
    Each produce is one 512 KiB batch: roll if size > 1048576 - 524288 = 524288 (§A.3), so two
    batches fill a segment. The size pass (§A.4, UL 1600-1615): diff = 4.5 - 3 = 1.5 MiB; S0:
    1.5 - 1 = 0.5 >= 0, delete, diff 0.5; S1: 0.5 - 1 < 0, stop. The partition keeps 3.5 MiB,
    above the setting, and later checks delete nothing more."""
    half = MIB // 2
    sc = story(
        *[produce(f"h{i}", size=half) for i in range(9)], settle(), mark("written"),
        advance(MIN),  # the 30 s check
        mark("checked"),
        advance(10 * MIN),  # the 5:30 and 10:30 checks: diff 0.5 MiB < every segment
        topic={"segment.bytes": MIB, "retention.bytes": 3 * MIB, "retention.ms": -1},
    )  # fmt: skip

    written = upto(sc, "written")
    assert layout(written) == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9)]
    assert seg_bytes(written) == [MIB, MIB, MIB, MIB, half], "A4: 4.5 MiB in S0-S3 and an active S4"

    for r in (upto(sc, "checked"), run(sc)):
        assert layout(r) == [(2, 4), (4, 6), (6, 8), (8, 9)], "A4: only S0 goes"
        assert sum(seg_bytes(r)) == 3 * MIB + half, "A4: 3.5 MiB kept, at least retention.bytes"
        assert part(r)["log_start_offset"] == 2


def ten_record_segments(n: int) -> list[dict]:
    """`n` produces of one 10-record, 1000-byte batch each: offsets 10k..10k+9 per produce. With
    segment.bytes = 1000 the roll check (size > 1000 - 1000 = 0) rolls before every batch but the
    first, so each batch is a segment (decision 10)."""
    return [produce(*values("r", 10, 10 * k), size=1000) for k in range(n)]


SCALED = {"segment.bytes": 1000, "retention.ms": -1}


@pytest.mark.parametrize("policy", ["earliest", "latest", "none"])
def test_A5_a_consumer_falls_behind_retention(policy):
    """§F.A A5: group G has committed 40 on p0; retention deletes the segments holding 0-49, so
    logStartOffset = 50. Here size retention does it: 7 segments of 1000 bytes, retention.bytes =
    2000, diff = 5000, so S0-S4 go (5000 - 5 x 1000 = 0 >= 0) and [50-59], [60-69] stay (§A.4).
    A member fetching at 40 gets OFFSET_OUT_OF_RANGE (§A.5, UL 1219-1223), then: earliest seeks to
    50 (40-49 lost, no error surfaced); latest seeks to the HW, 70, skipping everything; none
    throws from poll(). The committed offset stays 40: the broker never re-checks it (§B.2)."""
    sc = story(
        *ten_record_segments(7), settle(),
        subscribe("c0"), poll("c0", JOIN_MS, max_records=40), commit("c0"), consumer_shutdown("c0"),
        advance(MIN),  # the 30 s retention check
        mark("retained"),
        subscribe("c1"), poll("c1", JOIN_MS),
        topic={**SCALED, "retention.bytes": 2000},
        consumers=(
            consumer("c0", group="G", reset="earliest", auto_commit=False),
            consumer("c1", group="G", reset=policy, auto_commit=False),
        ),
    )  # fmt: skip

    kept = upto(sc, "retained")
    assert any("segment.bytes" in n for n in kept["notes"]), "contract: scaled-down sizes are noted"
    assert offsets(polls_of(kept, "c0")[0]["records"]) == list(range(40))
    assert kept["commits"][0]["offsets"] == {"0": 40}
    assert layout(kept) == [(50, 60), (60, 70)]
    assert offsets_bounds(kept) == (50, 70, 70), "A5: logStartOffset = 50"

    r = run(sc)
    got = polls_of(r, "c1")[0]
    if policy == "earliest":
        assert got["error"] is None, "A5: the reset is silent"
        assert offsets(got["records"]) == list(range(50, 70)), "A5: seek to 50; 40-49 are lost to G"
        assert position(r, "c1") == {"0": 70}
    elif policy == "latest":
        assert got["error"] is None
        assert got["records"] == [], "A5: seek to the HW; everything from 40 up to the HW is skipped"
        assert position(r, "c1") == {"0": 70}
    else:
        assert got["error"] == "OFFSET_OUT_OF_RANGE", "A5: with none, poll() throws"
        assert got["records"] == []
        assert "OFFSET_OUT_OF_RANGE" in [e["error"] for e in r["consumers"]["c1"]["errors"]]
    assert committed(r, "G") == {"0": 40}, "A5: the committed offset stays 40 until G commits again"


def test_A6_delete_records_inside_a_segment():
    """§F.A A6: segments [50..59] and [60..69] (active). deleteRecords(p0, 55) sets logStartOffset
    = 55 (§A.1, mid-segment is fine). A fetch at 52 gets OFFSET_OUT_OF_RANGE; ListOffsets(EARLIEST)
    is 55. [50..59] is not deleted, because the next segment's base, 60, is above 55 (the
    log-start pass, §A.4 UL 1617-1628): the bytes for 50-54 stay on disk, unreadable. After a later
    deleteRecords to >= 60, the next check deletes [50..59]."""
    sc = story(
        *ten_record_segments(7), settle(),
        delete_records(0, 50), advance(MIN),  # the 30 s check: S0-S4 end at or below 50, they go
        mark("start 50"),
        delete_records(0, 55), advance(5 * MIN),  # the 5:30 check: next base 60 > 55, nothing goes
        mark("start 55"),
        assign("reader", 0), seek("reader", 0, 52), poll("reader"),  # a fetch at 52
        seek("reader", 0, "beginning"), poll("reader"),  # ListOffsets(EARLIEST)
        mark("read"),
        delete_records(0, 60), advance(5 * MIN),  # the 10:30 check deletes [50..59]
        topic=SCALED,
        consumers=(consumer("reader", group=None, reset="none"),),
    )  # fmt: skip

    fifty = upto(sc, "start 50")
    assert layout(fifty) == [(50, 60), (60, 70)]
    assert offsets_bounds(fifty) == (50, 70, 70)

    r55 = upto(sc, "read")
    assert part(r55)["log_start_offset"] == 55, "A6: deleteRecords(55) moves logStartOffset to 55"
    assert layout(r55) == [(50, 60), (60, 70)], "A6: [50..59] stays, 60 > 55"
    assert seg_bytes(r55) == [1000, 1000], "A6: 50-54 still on disk"
    at52, earliest = polls_of(r55, "reader")
    assert at52["error"] == "OFFSET_OUT_OF_RANGE" and at52["records"] == [], "A6: a fetch at 52"
    assert earliest["error"] is None
    assert offsets(earliest["records"]) == list(range(55, 70)), "A6: ListOffsets(EARLIEST) = 55"

    r = run(sc)
    assert layout(r) == [(60, 70)], "A6: once logStartOffset >= 60 the next check deletes [50..59]"
    assert offsets_bounds(r) == (60, 70, 70)
    # Not expressible through the contract (no ListOffsets action, and a consumer never learns the
    # answer except as the position it seeks to): the ListOffsets(EARLIEST) response itself, 55,
    # is read here as the first offset the consumer receives after seekToBeginning.


A7_TIMES = [at(10), at(10, 5), at(9, 58), at(10, 10)]  # offset 2: a producer with a skewed clock


def a7_log(*then: dict, consumers: tuple[dict, ...]) -> Story:
    """§F.A A7's log, written at 10:10 (decision 1), then a minute later (now ~10:11) `then`."""
    return story(
        advance(at(10, 10)),
        *[produce(f"o{i}", ts=t) for i, t in enumerate(A7_TIMES)],
        settle(), advance(MIN),
        *then,
        consumers=consumers,
    )


def test_A7_list_offsets_earliest_and_latest():
    """§F.A A7: records at offsets 0-3 with CreateTime 10:00, 10:05, 09:58 (skewed), 10:10; HW = 4.
    EARLIEST -> 0 (seekToBeginning), LATEST -> 4, the HW (seekToEnd, and auto.offset.reset=latest,
    §A.6: a consumer's LATEST is the HW)."""
    sc = a7_log(
        assign("early", 0), seek("early", 0, "beginning"), poll("early"),
        assign("end", 0), seek("end", 0, "end"), poll("end"),
        assign("fresh", 0), poll("fresh"),
        consumers=(
            consumer("early", group=None),
            consumer("end", group=None),
            consumer("fresh", group=None, reset="latest"),
        ),
    )  # fmt: skip
    r = run(sc)
    assert [(e["offset"], e["timestamp_ms"]) for e in part(r)["log"]] == list(enumerate(A7_TIMES))
    assert part(r)["hw"] == 4
    assert offsets(polls_of(r, "early")[0]["records"]) == [0, 1, 2, 3], "A7: EARLIEST -> 0"
    assert polls_of(r, "end")[0]["records"] == [] and position(r, "end") == {"0": 4}, "A7: LATEST -> 4"
    assert polls_of(r, "fresh")[0]["records"] == [] and position(r, "fresh") == {"0": 4}


def test_A7_list_offsets_by_time_through_a_by_duration_reset():
    """§F.A A7 by time, through the only consumer path to a by-time ListOffsets: 4.0's
    auto.offset.reset=by_duration:D resets to the first offset with timestamp >= now - D (§A.5,
    KIP-1106; decision 15). With now ~10:11: D = 10 min gives T ~10:01 -> offset 1, mid-log; D = 12
    min gives T ~09:59 -> offset 0, the first *in offset order* with timestamp >= 09:59 (offset 2's
    09:58 is earlier in time but not >= T). Any T in (10:00, 10:05] gives 1 and any in (09:58, 10:00]
    gives 0, so the few ms the consumer takes do not matter."""
    sc = a7_log(
        assign("t1001", 0), poll("t1001"),
        assign("t0959", 0), poll("t0959"),
        consumers=(
            consumer("t1001", group=None, reset="by_duration:PT10M"),
            consumer("t0959", group=None, reset="by_duration:PT12M"),
        ),
    )  # fmt: skip
    r = run(sc, steps=True)
    assert offsets(polls_of(r, "t1001")[0]["records"]) == [1, 2, 3], "A7: T = 10:01 -> offset 1"
    assert offsets(polls_of(r, "t0959")[0]["records"]) == [0, 1, 2, 3], "A7: T = 09:59 -> offset 0"
    resets = {s["consumer"]: s for s in r["steps"] if s["kind"] == "consumer_reset_offset"}
    assert resets["t1001"]["offset"] == 1 and resets["t1001"]["policy"] == "by_duration:PT10M"
    t_asked = int(resets["t1001"]["text"].split("at or after ")[1].split(" ")[0])
    assert at(10) < t_asked <= at(10, 5), "A7: the client asks for its now minus D"
    # Not expressible through the contract (it has no ListOffsets action):
    #   - MAX_TIMESTAMP -> offset 3 (only Admin.listOffsets(OffsetSpec.maxTimestamp()) asks it);
    #   - the -1 answer itself (T = 10:11, or a hit at or beyond the HW, §A.6, RM 1543-1563): a
    #     consumer never sees it, only what it does then (the next test).


def test_A7_by_duration_later_than_every_record_leaves_no_position_until_a_record_comes():
    """§F.A A7 with T = 10:10:30, after every record (D = 30 s at ~10:11): the leader answers -1
    (§A.6). Kafka 4.0's consumer does not fall back to latest: the partition keeps no position
    (OffsetFetcherUtils keeps only answers other than -1), poll() returns nothing, and the client
    asks again request.timeout.ms (30 s) after its first ListOffsets, with a new now - D. A record
    written meanwhile is then found, so the consumer starts there. A commit has nothing to commit
    for that partition in the meantime."""
    sc = a7_log(
        assign("late", 0), poll("late"),
        mark("missed"),
        produce("o4"), settle(),
        poll("late"),  # within the 30 s: no second ListOffsets yet
        mark("too_soon"),
        poll("late", 40 * SEC),  # the retry inside this poll finds o4
        consumers=(consumer("late", group=None, reset="by_duration:PT30S"),),
    )  # fmt: skip
    missed = upto(sc, "missed", steps=True)
    assert polls_of(missed, "late")[0] == {"consumer": "late", "records": [], "error": None}
    assert position(missed, "late") == {}, "A7: T = 10:10:30 -> -1: no position, not the LEO"
    miss = [s for s in missed["steps"] if s["kind"] == "consumer_reset_offset"]
    assert len(miss) == 1 and miss[0]["offset"] is None and "asks again" in miss[0]["text"]
    (empty,) = [s for s in missed["steps"] if s["kind"] == "consumer_poll_empty"]
    assert "P0 has no position" in empty["text"]

    too_soon = upto(sc, "too_soon")
    assert polls_of(too_soon, "late")[1]["records"] == [] and position(too_soon, "late") == {}

    r = run(sc, steps=True)
    assert offsets(polls_of(r, "late")[2]["records"]) == [4], "the retry lands on the new record"
    assert position(r, "late") == {"0": 5}
    hits = [s for s in r["steps"] if s["kind"] == "consumer_reset_offset" and s["offset"] is not None]
    assert [s["offset"] for s in hits] == [4]
    first_ask = next(s["t_ms"] for s in r["steps"] if s["kind"] == "consumer_reset_offset")
    assert hits[0]["t_ms"] - first_ask >= 30 * SEC, "the retry waits request.timeout.ms"


def test_A7_by_duration_earlier_than_every_record_is_the_earliest_available():
    """§F.A A7 after DeleteRecords(2): D = 1 day reaches before every record, so the answer is the
    first record at or after the log start offset, 2, the same offset `earliest` gets; not 0, which
    is gone (the by-time lookup skips offsets below logStartOffset, §A.6)."""
    sc = a7_log(
        delete_records(0, 2),
        assign("day", 0), poll("day"),
        assign("first", 0), poll("first"),
        consumers=(
            consumer("day", group=None, reset="by_duration:P1D"),
            consumer("first", group=None, reset="earliest"),
        ),
    )  # fmt: skip
    r = run(sc)
    assert part(r)["log_start_offset"] == 2
    assert offsets(polls_of(r, "day")[0]["records"]) == [2, 3], "A7: before every record -> 2"
    assert offsets(polls_of(r, "first")[0]["records"]) == [2, 3]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("by_duration:1h", "Unable to parse duration string"),
        ("by_duration:PT", "Unable to parse duration string"),
        ("by_duration", "<:duration> part is missing"),
        ("by_duration:-PT1H", "Negative duration is not supported"),
        ("by_duration:PT-1H30M", "Negative duration is not supported"),  # -60 + 30 min
        ("BY_DURATION:PT1H", "Unknown auto offset reset strategy"),
        ("EARLIEST", "Unknown auto offset reset strategy"),
    ],
)
def test_A7_a_bad_by_duration_value_is_refused(value, words):
    """A7's consumer with an auto.offset.reset that Kafka 4.0's AutoOffsetResetStrategy.fromString
    refuses: the scenario is refused at the consumer's key, in Kafka's words."""
    sc = a7_log(assign("c", 0), poll("c"), consumers=(consumer("c", group=None, reset=value),))
    with pytest.raises(ScenarioError) as info:
        run(sc)
    (found,) = [p for p in info.value.problems if p["path"] == "consumers[0].auto.offset.reset"]
    assert words in found["message"] and "by_duration:<PnDTnHnMn.nS.>" in found["message"]


@pytest.mark.parametrize("version", ["3.6", "1.1", "0.10", "0.8"])
def test_A7_by_duration_is_refused_before_kafka_4_0(version):
    """A7's by_duration consumer on a profile before 4.0: 3.x's consumer accepts only latest,
    earliest and none (ConfigDef.ValidString, ConsumerConfig 517-522 at tag 3.9.0)."""
    sc = a7_log(assign("c", 0), poll("c"), consumers=(consumer("c", group=None, reset="by_duration:PT10M"),))
    sc["kafka_version"] = version
    with pytest.raises(ScenarioError) as info:
        run(sc)
    (found,) = [p for p in info.value.problems if p["path"] == "consumers[0].auto.offset.reset"]
    assert "Kafka 4.0" in found["message"]
    assert "String must be one of: latest, earliest, none" in found["message"]


# ============================================================================ §F.B committed offsets


@pytest.mark.parametrize("who", ["restarted process", "new owner"])
def test_B1_process_then_commit_is_at_least_once(who):
    """§F.B B1: poll() returns 0-4, the app processes them and crashes before commitSync(). The new
    owner (or the restarted process) starts at the last committed offset, 0 here, and processes 0-4
    again. The committed 0 comes from a commitSync() right after joining an empty partition
    (position 0). Both processes use `latest`, the default: had the reset policy applied instead of
    the commit, they would have started at 5 and seen nothing."""
    then = (
        [consumer_restart("c0"), subscribe("c0"), poll("c0", REJOIN_MS)]
        if who == "restarted process"
        else [subscribe("c1"), poll("c1", REJOIN_MS)]
    )
    sc = story(
        subscribe("c0"), poll("c0", JOIN_MS), commit("c0"),  # position 0: commits 0
        produce(*values("v", 5)), settle(), poll("c0", 5 * SEC),  # returns 0-4
        consumer_crash("c0"),  # before commitSync(): no LeaveGroup, no commit
        *then,
        consumers=(consumer("c0", auto_commit=False), consumer("c1", auto_commit=False)),
    )  # fmt: skip
    r = run(sc)
    assert r["commits"][0]["offsets"] == {"0": 0} and r["commits"][0]["outcome"] == "ok"
    first = polls_of(r, "c0")[1]
    assert offsets(first["records"]) == [0, 1, 2, 3, 4]
    again = r["polls"][-1]
    assert again["error"] is None
    assert offsets(again["records"]) == [0, 1, 2, 3, 4], "B1: 0-4 are processed again"
    assert committed(r) == {"0": 0}
    if who == "restarted process":
        assert offsets(received(r, "c0")) == [0, 1, 2, 3, 4] * 2, "B1: duplicates, never loss"


def test_B2_commit_then_process_is_at_most_once():
    """§F.B B2: poll() returns 0-4, the app calls commitSync() (committed = 5), then crashes while
    processing offset 2. On restart it begins at 5: offsets 2-4 are never processed."""
    sc = story(
        produce(*values("v", 10)), settle(),
        subscribe("c0"), poll("c0", JOIN_MS, max_records=5),  # returns 0-4
        commit("c0"),  # committed = 5, the position
        consumer_crash("c0"),  # while processing offset 2
        consumer_restart("c0"), subscribe("c0"), poll("c0", REJOIN_MS),
        consumers=(consumer("c0", reset="earliest", auto_commit=False),),
    )  # fmt: skip
    r = run(sc)
    assert offsets(polls_of(r, "c0")[0]["records"]) == [0, 1, 2, 3, 4]
    assert r["commits"][0]["offsets"] == {"0": 5}, "B2: commitSync() commits the position, 5"
    assert offsets(polls_of(r, "c0")[1]["records"]) == [5, 6, 7, 8, 9], "B2: restart begins at 5"
    assert offsets(received(r, "c0")) == list(range(10)), "B2: 2-4 are never delivered again (loss)"


def test_B3_auto_commit_happens_only_inside_poll():
    """§F.B B3 (classic client, defaults: enable.auto.commit, auto.commit.interval.ms = 5000).
    t=0: the assignment completes (the auto-commit timer resets, CC 419-420) and poll() returns
    0-499 (max.poll.records). t=2 s: poll() returns 500-999; the timer has not expired: no commit.
    t=5.5 s: poll() commits {p0: 1000} (async) before fetching, then returns 1000-1499 (§B.4,
    CC 1157-1165). Nothing commits between 5 s and 5.5 s: auto-commit runs only inside poll().
    The app crashes at t=6 s while processing 1200; the restart begins at 1000 and reprocesses
    1000-1199: nothing is lost, because each batch was finished before the next poll()."""
    sc = story(
        produce(count=1000), produce(count=1000), settle(),
        subscribe("c0"), poll("c0", JOIN_MS),  # t=0: 0-499
        stall("c0", 2 * SEC), poll("c0"),  # t=2 s: 500-999
        stall("c0", 3_500), mark("t=5.5s"), poll("c0"),  # t=5.5 s: commit 1000, then 1000-1499
        stall("c0", 500), mark("t=6s"),
        consumer_crash("c0"),  # while processing 1200
        consumer_restart("c0"), subscribe("c0"), poll("c0", REJOIN_MS),
        consumers=(consumer("c0", reset="earliest"),),
    )  # fmt: skip

    before = upto(sc, "t=5.5s")
    assert [offsets(p["records"]) for p in polls_of(before, "c0")] == [
        list(range(0, 500)), list(range(500, 1000))
    ]  # fmt: skip
    assert committed(before) == {}, "B3: 5.5 s after the assignment and still nothing: no poll() ran"

    crashing = upto(sc, "t=6s")
    assert offsets(polls_of(crashing, "c0")[2]["records"]) == list(range(1000, 1500))
    assert committed(crashing) == {"0": 1000}, "B3: the t=5.5 s poll() committed the previous position"
    assert crashing["commits"] == [], "an auto-commit is not a commit action (decision 9)"

    r = run(sc)
    restarted = polls_of(r, "c0")[3]
    assert offsets(restarted["records"]) == list(range(1000, 1500)), "B3: the restart begins at 1000"
    got = offsets(received(r, "c0"))
    assert got == list(range(1500)) + list(range(1000, 1500)), "B3: 1000-1199 reprocessed, none lost"
    # Not expressible: the worker-pool variant ("handed records to a worker pool and returned to
    # poll() at once") needs a notion of processing that finishes after poll() returns; the
    # contract's application processes each batch instantly.


def test_B4_offsets_expire_only_after_the_group_is_empty():
    """§F.B B4: G's last consumer stops "Monday 09:00" and G becomes Empty with that state time.
    Its offsets expire at the first offsets-retention check (every 10 min) on or after the next
    Monday 09:00, offsets.retention.minutes = 10080 = 7 d after the group became Empty, not after
    the commit (§B.5, CG 943-967). A consumer that starts Tuesday finds no offsets and applies
    auto.offset.reset (earliest: it starts over at 0 instead of resuming at 5). The topic keeps its
    records (retention.ms = -1) so that only the offsets expire."""
    sc = story(
        produce(*values("v", 5)), settle(),
        subscribe("c0"), poll("c0", JOIN_MS), commit("c0"),  # committed 5
        consumer_shutdown("c0"),  # Monday 09:00: LeaveGroup, G is Empty
        advance(SEC), mark("empty"),
        advance(7 * DAY - MIN), mark("7 d - 1 min"),  # no check can have expired them yet
        advance(11 * MIN), mark("7 d + 10 min"),  # a check ran in [7 d, 7 d + 10 min)
        advance(DAY - 10 * MIN),  # Tuesday 09:00
        subscribe("c1"), poll("c1", JOIN_MS),
        topic={"retention.ms": -1},
        consumers=(
            consumer("c0", reset="earliest", auto_commit=False),
            consumer("c1", reset="earliest", auto_commit=False),
        ),
    )  # fmt: skip

    empty = upto(sc, "empty")
    assert empty["groups"]["g"]["state"] == "Empty"
    assert committed(empty) == {"0": 5}
    assert committed(upto(sc, "7 d - 1 min")) == {"0": 5}, "B4: 7 d count from Empty, not yet passed"
    assert committed(upto(sc, "7 d + 10 min")) == {}, "B4: expired at the first check after 7 d"

    r = run(sc)
    tuesday = polls_of(r, "c1")[0]
    assert tuesday["error"] is None
    assert offsets(tuesday["records"]) == [0, 1, 2, 3, 4], "B4: no offsets, so earliest applies"


def test_B4_an_active_group_keeps_its_offsets():
    """§F.B B4 counter-case: one consumer of G stays up, still subscribed, and commits nothing (the
    topic is quiet): nothing expires, because offsets of a topic a live group subscribes to never
    expire (§B.5, OMM 883-896). The reference says a month; 8 days (> offsets.retention.minutes)
    shows it within the contract's 8-day minimum. The consumer keeps polling once a minute
    (loop_ms), well inside max.poll.interval.ms, so it stays a member; auto-commit is off so that
    it really commits nothing."""
    sc = story(
        produce(*values("v", 5)), settle(),
        subscribe("c0"), advance(10 * MIN), mark("joined"),
        commit("c0"),  # committed 5, then silence
        advance(8 * DAY),
        topic={"retention.ms": -1},
        consumers=(consumer("c0", reset="earliest", auto_commit=False, loop_ms=MIN),),
    )  # fmt: skip
    joined = upto(sc, "joined")
    assert offsets(received(joined, "c0")) == [0, 1, 2, 3, 4]

    r = run(sc)
    assert r["commits"][0]["offsets"] == {"0": 5} and r["commits"][0]["outcome"] == "ok"
    assert committed(r) == {"0": 5}, "B4: an active, subscribed group's offsets do not expire"
    assert r["groups"]["g"]["state"] == "Stable"
    assert r["groups"]["g"]["members"] == {"c0": [0]}
    assert position(r, "c0") == {"0": 5}


def test_B5_where_the_group_lives_and_what_happens_when_its_coordinator_fails():
    """§F.B B5: group.id=orders -> __consumer_offsets-31 (Java hashCode -1008770331, abs, mod 50 =
    31, §B.1; not murmur2). Its coordinator is the broker that leads partition 31; if that broker
    fails, the new leader of p31 becomes the coordinator after loading the partition (§E.1), and
    the group's commits survive it. Which broker leads p31 is the engine's (decision 14)."""
    acts = [
        produce(*values("v", 5)), settle(),
        subscribe("c0"), advance(2 * JOIN_MS), commit("c0"),  # joined, read 0-4, committed 5
        mark("before"),
    ]  # fmt: skip
    kwargs: dict[str, Any] = dict(
        brokers=(1, 2, 3), rf=3,
        consumers=(consumer("c0", group="orders", reset="earliest", auto_commit=False, loop_ms=SEC),),
    )  # fmt: skip
    sc = story(*acts, **kwargs)
    before = upto(sc, "before")
    group = before["groups"]["orders"]
    assert group["offsets_partition"] == 31, "B5: abs(\"orders\".hashCode()) % 50 = 31"
    old = group["coordinator"]
    assert old in (1, 2, 3)
    assert before["commits"][0]["outcome"] == "ok" and group["committed"] == {"0": 5}

    # the coordinator fails: fenced after broker.session.timeout.ms (9 s), p31 elects a new leader,
    # which loads the group; 30 s is ample. The consumer finds the new coordinator and commits.
    r = run(story(*acts, crash(old), advance(30 * SEC), commit("c0"), **kwargs))
    group = r["groups"]["orders"]
    assert group["offsets_partition"] == 31
    assert group["coordinator"] in (1, 2, 3) and group["coordinator"] != old, "B5: p31's new leader"
    assert r["commits"][1]["outcome"] == "ok", "B5: the client looked the coordinator up again"
    assert group["committed"] == {"0": 5}, "B5: the new coordinator loaded the group's offsets"


def test_B6_commits_can_go_backwards():
    """§F.B B6: commitSync({p0: 100}) then commitSync({p0: 50}) from the same generation: both are
    accepted (the broker checks membership and generation, never the offset, §B.2 OMM 473-505), the
    committed offset is 50, and a restart reprocesses 50-99."""
    sc = story(
        produce(*values("v", 100)), settle(),
        subscribe("c0"), poll("c0", JOIN_MS),  # 0-99
        commit("c0", {0: 100}), commit("c0", {0: 50}),
        consumer_crash("c0"), consumer_restart("c0"), subscribe("c0"), poll("c0", REJOIN_MS),
        consumers=(consumer("c0", reset="earliest", auto_commit=False),),
    )  # fmt: skip
    r = run(sc)
    assert offsets(polls_of(r, "c0")[0]["records"]) == list(range(100))
    assert [(c["offsets"], c["outcome"], c["error"]) for c in r["commits"]] == [
        ({"0": 100}, "ok", None), ({"0": 50}, "ok", None)
    ]  # fmt: skip
    assert committed(r) == {"0": 50}, "B6: last write wins, backwards included"
    assert offsets(polls_of(r, "c0")[1]["records"]) == list(range(50, 100)), "B6: 50-99 reprocessed"


# ============================================================================ §F.C the partitioner

# §C.2's table: toPositive(murmur2(utf8(key))) % partitions.
ON_3 = {"alice": 0, "bob": 0, "carol": 2, "key-1": 0, "key-0": 1}
ON_4 = {"alice": 1, "bob": 2, "carol": 2, "key-1": 0, "key-0": 1}


def test_C1_keyed_records_on_three_partitions_read_by_whoever_owns_the_partition():
    """§F.C C1 (§C.2 table) with the ownership given by hand (`assign`, no group: part 1 of the
    client side): alice, bob and key-1 -> p0, key-0 -> p1, carol -> p2. Every bob record lands in
    p0 and the consumer that owns p0 reads them in write order; the one that owns p2 sees only
    carol. The group version (range assignment of two members) is the test below (issue 12)."""
    writes = [("alice", "a1"), ("bob", "b1"), ("carol", "c1"), ("bob", "b2"), ("key-1", "k1"),
              ("key-0", "k0"), ("bob", "b3")]  # fmt: skip
    sc = story(
        *[produce(v, key=k) for k, v in writes], settle(),
        assign("c0", 0, 1), assign("c1", 2), poll("c0"), poll("c0"), poll("c1"),
        partitions=3,
        consumers=tuple(consumer(c, group=None, reset="earliest") for c in ("c0", "c1")),
    )  # fmt: skip
    r = run(sc)
    assert produced_partitions(r) == [ON_3[k] for k, _ in writes]
    assert log_rows(r, 0) == [(0, "a1"), (1, "b1"), (2, "b2"), (3, "k1"), (4, "b3")]
    assert log_rows(r, 1) == [(0, "k0")] and log_rows(r, 2) == [(0, "c1")]
    assert rows(received(r, "c0", 0)) == [(0, "a1"), (1, "b1"), (2, "b2"), (3, "k1"), (4, "b3")]
    assert [x["record"] for x in received(r, "c0", 0) if x["record"].startswith("b")] == ["b1", "b2", "b3"]
    assert rows(received(r, "c0", 1)) == [(0, "k0")]
    assert rows(received(r, "c1")) == [(0, "c1")]


def test_C1_keyed_records_on_three_partitions():
    """§F.C C1 (§C.2 table): alice -> p0, bob -> p0, carol -> p2, key-1 -> p0, key-0 -> p1. Every
    record with key bob goes to p0 and is read in write order by whoever owns p0: with two
    consumers and the default (eager range, §E.5-E.6) assignment, c0 owns p0 and p1, c1 owns p2."""
    writes = [("alice", "a1"), ("bob", "b1"), ("carol", "c1"), ("bob", "b2"), ("key-1", "k1"),
              ("key-0", "k0"), ("bob", "b3")]  # fmt: skip
    sc = story(
        *[produce(v, key=k) for k, v in writes], settle(),
        subscribe("c0"), subscribe("c1"), advance(15 * SEC),
        partitions=3,
        consumers=(
            consumer("c0", reset="earliest", loop_ms=100),
            consumer("c1", reset="earliest", loop_ms=100),
        ),
    )  # fmt: skip
    r = run(sc)
    assert produced_partitions(r) == [ON_3[k] for k, _ in writes]
    assert log_rows(r, 0) == [(0, "a1"), (1, "b1"), (2, "b2"), (3, "k1"), (4, "b3")]
    assert [e["key"] for e in part(r, 0)["log"]] == ["alice", "bob", "bob", "key-1", "bob"]
    assert log_rows(r, 1) == [(0, "k0")] and log_rows(r, 2) == [(0, "c1")]
    assert r["groups"]["g"]["members"] == {"c0": [0, 1], "c1": [2]}, "range: 3 // 2 = 1, c0 one extra"
    assert rows(received(r, "c0", 0)) == [(0, "a1"), (1, "b1"), (2, "b2"), (3, "k1"), (4, "b3")]
    assert [x["record"] for x in received(r, "c0", 0) if x["record"].startswith("b")] == ["b1", "b2", "b3"]
    assert rows(received(r, "c1")) == [(0, "c1")]


def test_C2_growing_from_3_to_4_partitions():
    """§F.C C2 (§C.4): nothing moves when partitions are added; a producer re-routes a key only
    after its own metadata refresh (metadata.max.age.ms = 5 min), so for a while two producers split
    `alice` across p0 and p1. Under 4 partitions: alice -> p1 (moved), bob -> p2 (moved), carol ->
    p2, key-1 -> p0, key-0 -> p1 (stay). Timeline (decision 13): app1 starts at 0:00 (refresh due
    5:00); app2 is a process started at 3:50 (refresh not before 8:50); partitions are added at
    4:30."""
    sc = story(
        *[produce(f"{k}@0", key=k, producer="app1") for k in ON_3],  # 0:00, 3 partitions
        producer_shutdown("app2"),  # app2's process starts at 3:50, below
        advance(3 * MIN + 50 * SEC), producer_restart("app2"),
        advance(10 * SEC), produce("alice@4:00", key="alice", producer="app2"),  # app2 learns 3
        advance(30 * SEC), add_partitions(4),  # 4:30
        produce("alice@4:30", key="alice", producer="app1"),  # app1's metadata still says 3
        advance(90 * SEC),  # 6:00: app1 refreshed at 5:00, app2 has not
        *[produce(f"{k}@6:00", key=k, producer="app1") for k in ON_4],
        produce("alice@6:00 app2", key="alice", producer="app2"),
        advance(4 * MIN),  # 10:00: app2 refreshed by 9:00
        produce("alice@10:00 app2", key="alice", producer="app2"),
        settle(),
        partitions=3,
        producers=({"id": "app1"}, {"id": "app2"}),
    )  # fmt: skip
    r = run(sc)
    where = {p["records"][0]: p["partition"] for p in r["produce"]}
    assert [where[f"{k}@0"] for k in ON_3] == [ON_3[k] for k in ON_3], "C1's placement on 3 partitions"
    assert where["alice@4:00"] == 0 and where["alice@4:30"] == 0, "C2: before a refresh, still 3"
    assert [where[f"{k}@6:00"] for k in ON_4] == [ON_4[k] for k in ON_4], "C2: the 4-partition table"
    assert where["alice@6:00 app2"] == 0, "C2: app2 not refreshed yet: alice split across p0 and p1"
    assert where["alice@10:00 app2"] == 1, "C2: after its refresh app2 sends alice to p1 too"

    assert len(r["partitions"]) == 4
    assert [v for _, v in log_rows(r, 0) if v.startswith("alice")] == [
        "alice@0", "alice@4:00", "alice@4:30", "alice@6:00 app2"
    ], "C2: old alice records stay in p0; nothing is re-hashed or moved"  # fmt: skip
    assert [v for _, v in log_rows(r, 1) if v.startswith("alice")] == ["alice@6:00", "alice@10:00 app2"]
    assert log_rows(r, 3) == [], "no key of this story hashes to p3"
    # Not expressed: "across 100k keys, 74.9% move" is a property of the hash (test_partitioner.py);
    # "a consumer reading p1 can process the new alice records before another has finished the old
    # ones in p0" is a possibility, not an outcome the reference fixes.


def test_C2_a_latest_consumer_skips_what_a_new_partition_got_before_it_noticed():
    """§C.4 (the consumer side of C2) and §A.5 (CCfg 178-179): only the group leader watches for a
    new partition count, at its metadata refresh; a new partition has no committed offset, so under
    auto.offset.reset=latest the group starts it at its HW and silently skips what producers wrote
    there before. key-3 -> p2 of 3 and p3 of 4 (§C.2 table). The producer starts at 0:00 (refresh
    due 5:00), the consumer at 4:00 (refresh due ~9:00), partitions are added at 4:30: key-3's 6:00
    record lands in p3 before the group knows p3, its 10:00 record after (decision 13)."""
    sc = story(
        produce("x0", key="key-3"),  # 0:00 -> p2
        advance(4 * MIN), subscribe("c0"),  # 4:00
        advance(30 * SEC), add_partitions(4),  # 4:30
        advance(90 * SEC), produce("x1", key="key-3"),  # 6:00 -> p3 offset 0, before the group knows p3
        advance(4 * MIN), produce("x2", key="key-3"),  # 10:00 -> p3 offset 1
        advance(10 * SEC),
        partitions=3,
        consumers=(consumer("c0", loop_ms=SEC),),  # latest, the default
    )  # fmt: skip
    r = run(sc)
    assert produced_partitions(r) == [2, 3, 3]
    assert log_rows(r, 3) == [(0, "x1"), (1, "x2")]
    assert r["groups"]["g"]["members"] == {"c0": [0, 1, 2, 3]}, "the leader noticed p3 and rebalanced"
    assert rows(received(r, "c0", 3)) == [(1, "x2")], "A.5: x1 was written before the group knew p3: skipped"
    assert "x1" not in [x["record"] for x in received(r, "c0")]


def runs(partitions: list[int]) -> list[int]:
    """Lengths of the maximal runs of consecutive equal partitions."""
    out: list[int] = []
    for i, p in enumerate(partitions):
        if i and p == partitions[i - 1]:
            out[-1] += 1
        else:
            out.append(1)
    return out


def test_C3_keyless_records_stick_to_a_partition_for_at_least_batch_size_bytes():
    """§F.C C3 (3.3+ defaults, batch.size = 16384, §C.3 BIP 218-227): keyless records stick to one
    partition until at least 16384 bytes were appended there, then the next partition is drawn at
    random (it may be the same one). With 1000-byte produces, 16 x 1000 = 16000 < 16384, so at least
    17 consecutive produces share a partition before any switch: every run of one partition is >= 17
    long, except the last, which may be cut short (decision 11). It is not one record per partition
    (the pre-2.4 round-robin, §G.11). Across three seeds the partitioner does move."""
    used: set[int] = set()
    for seed in range(3):
        acts: list[dict] = []
        for i in range(100):
            acts += [produce(f"n{i}", size=1000), advance(10)]
        r = run(story(*acts, settle(), partitions=3, seed=seed))
        chosen = produced_partitions(r)
        assert all(p in (0, 1, 2) for p in chosen)
        lengths = runs(chosen)
        assert all(n >= 17 for n in lengths[:-1]), f"C3 (seed {seed}): a switch before 16384 bytes: {lengths}"
        assert [p["outcome"] for p in r["produce"]] == ["acked"] * 100
        used |= set(chosen)
    assert len(used) > 1, "C3: the sticky partition changes after about batch.size bytes"
    # Not expressed: which partition each draw picks (random, weighted toward shorter queues with
    # adaptive partitioning, §C.3) and the slow-broker comparison with KIP-480.


@pytest.mark.parametrize("idempotence", [False, True], ids=["idempotence off", "idempotence on"])
def test_C4_retries_and_order(idempotence):
    """§F.C C4 (§C.5): max.in.flight = 5, retries on. Batch B1 fails with a retriable error while B2,
    sent behind it and in flight at the same time, succeeds (decision 12: B1's request is lost in a
    network cut and times out after request.timeout.ms = 30 s). Idempotence off: the log holds B2,
    then B1's retry: reordered. Idempotence on (the default): B2's sequence is out of order while
    B1's is missing, so the broker rejects B2 until B1 lands; the log is B1 then B2.

    The producer first writes one record, "x" at offset 0 (sequence 0), so that it has its producer
    id and metadata before the cut and the broker holds its sequence state for the partition: a
    broker with no state for a producer accepts any first sequence ("accept writes with any
    sequence number", ProducerAppendInfo.checkSequence), so without "x" even an idempotent B2 would
    land first. The reference's offsets-to-be 0-9 and 10-19 are therefore 1-10 and 11-20 here."""
    b1, b2 = values("b1-", 10), values("b2-", 10)
    sc = story(
        produce("x"), settle(),  # offset 0, sequence 0
        isolate(1, "producer"),  # B1's request will not arrive
        produce(*b1), advance(10),
        heal(1, "producer"),
        produce(*b2),  # sent at once: B1 is in flight, not backing off
        settle(max_ms=120 * SEC),
        producers=(
            {"id": "producer", "enable.idempotence": idempotence, "max.in.flight.requests.per.connection": 5},
        ),
    )  # fmt: skip
    r = run(sc)
    assert [p["outcome"] for p in r["produce"]] == ["acked", "acked", "acked"]
    first, second = list(range(1, 11)), list(range(11, 21))
    if idempotence:
        assert [v for _, v in log_rows(r)] == ["x"] + b1 + b2, "C4: the broker holds B2 until B1 lands"
        assert [p["offsets"] for p in r["produce"]] == [[0], first, second]
        assert [e["sequence"] for e in part(r)["log"]] == list(range(21)), "one producer's sequence, in order"
        assert len({e["producer_id"] for e in part(r)["log"]}) == 1
    else:
        assert [v for _, v in log_rows(r)] == ["x"] + b2 + b1, "C4: B2 first, then B1's retry: reordered"
        assert [p["offsets"] for p in r["produce"]] == [[0], second, first]


# ============================================================================ one clock

KEY_FOR = {0: "alice", 1: "key-0", 2: "carol"}  # §C.2: murmur2 % 3 sends each to its own partition
RACKED = ({"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"id": 3, "rack": "b"})


def test_one_clock_a_broker_crash_and_a_settle_happen_at_one_time_in_every_partition():
    """Partitions are not separate simulations: a cluster has one clock (kafka-semantics.md §8).
    3 partitions, RF=3, keyed produces to each; the broker that leads the most partitions crashes
    (with racks a, b, b the striped placer gives broker 1 two leaderships). Every step the crash
    causes carries one `t_ms` whatever the partition: the crash itself; the controller fencing the
    broker and electing new leaders (one controller, one decision); the new leaders and followers
    taking over. Produces in flight meanwhile then finish at different times per partition, but
    `settle` ends once for the whole cluster: the actions after it all start at the same time,
    whichever partition they touch (decision 16)."""

    def keyed(round_: int) -> list[dict]:
        return [produce(f"{KEY_FOR[p]}-{round_}", key=KEY_FOR[p]) for p in range(3)]

    head = [*keyed(1), settle()]
    kwargs: dict[str, Any] = dict(
        brokers=RACKED, rf=3, partitions=3, topic={"min.insync.replicas": 2},
    )  # fmt: skip
    first = run(story(*head, **kwargs))
    assert produced_partitions(first) == [0, 1, 2]
    leaders = [q["final"]["partition"]["leader"] for q in first["partitions"]]
    victim = max(set(leaders), key=leaders.count)
    led = [p for p, b in enumerate(leaders) if b == victim]
    assert len(led) >= 2, f"the striped placer should give one broker two leaderships: {leaders}"

    acts = [*head, crash(victim), *keyed(2), settle(), *keyed(3), settle()]
    crash_i = len(head)
    settle_i = crash_i + 4
    after = list(range(settle_i + 1, settle_i + 4))
    r = run(story(*acts, **kwargs), steps=True)
    steps = r["steps"]
    t_of = r["action_t_ms"]

    own = {s["t_ms"] for s in steps if s["action"] == crash_i}
    assert own == {t_of[crash_i]}, f"the crash's own steps happen when it does: {sorted(own)}"

    window = [s for s in steps if crash_i <= s["action"] <= settle_i]
    ctl = [s for s in window if s["kind"].startswith("controller_")]
    assert {s["kind"] for s in ctl} >= {"controller_fence_broker", "controller_elect_leader"}
    assert len({s["t_ms"] for s in ctl}) == 1, (
        "one controller fences the broker and elects every new leader in one decision: "
        f"{sorted((s['t_ms'], s['kind'], s['partition']) for s in ctl)}"
    )
    elected = {s["partition"] for s in ctl if s["kind"] == "controller_elect_leader"}
    assert elected == set(led), f"each partition the crashed broker led elects a leader: {elected}"
    for kind in ("leader_become", "follower_become"):
        mine = [s for s in window if s["kind"] == kind]
        assert {s["partition"] for s in mine} >= set(led), kind
        assert len({s["t_ms"] for s in mine}) == 1, (
            f"{kind} at different times per partition: {sorted((s['t_ms'], s['partition']) for s in mine)}"
        )

    for q in r["partitions"]:
        assert victim not in q["final"]["partition"]["isr"]
    assert [p["outcome"] for p in r["produce"]] == ["acked"] * 9
    assert produced_partitions(r) == [0, 1, 2] * 3

    starts = {t_of[i] for i in after}
    assert len(starts) == 1, f"settle ended at different times per partition: {[t_of[i] for i in after]}"
    sent = {r["produce"][i]["sent_ms"] for i in range(6, 9)}
    assert sent == starts, f"the produces after settle left at {sorted(sent)}, not at {starts}"
    settle_end = max(s["t_ms"] for s in steps if s["action"] == settle_i)
    assert settle_end <= starts.pop(), "no partition is still settling when the next action starts"
