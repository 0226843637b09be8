"""Consumers and committed offsets (issue 10): the canonical scenarios of kafka-clients-logs.md
§F.A and §F.B that the engine can express today, each named after the scenario it reproduces.

Retention by time and size (A3, A4), segment rolls (A2), ListOffsets by time (A7) and offset
expiry after days (B4) need segments and idle-time skipping in the simulator: not here yet."""

from __future__ import annotations

from typing import Any

import pytest

from engine import ScenarioError, simulate


def one_broker(
    consumers: list[dict[str, Any]], actions: list[dict[str, Any]], **topic: Any
) -> dict[str, Any]:
    """One broker, RF=1, so HW = LEO right after each append (the §F conventions)."""
    return {
        "brokers": [{"id": 1}],
        "topic": {"replication.factor": 1, **topic},
        "consumers": consumers,
        "actions": actions,
    }


def produce(n: int, prefix: str = "v", start: int = 0) -> list[dict[str, Any]]:
    """n records in batches of at most 1,000 (the per-produce cap), then settle."""
    out: list[dict[str, Any]] = []
    i = start
    while i < start + n:
        k = min(1_000, start + n - i)
        out.append({"do": "produce", "records": [f"{prefix}{j}" for j in range(i, i + k)]})
        i += k
    return [*out, {"do": "settle"}]


def poll(cid: str = "c0", ms: int = 5_000, **extra: Any) -> dict[str, Any]:
    return {"do": "poll", "consumer": cid, "timeout_ms": ms, **extra}


def offsets_of(p: dict[str, Any]) -> list[int]:
    return [r["offset"] for r in p["records"]]


# ------------------------------------------------------------------------------------------
# F.A1 Offsets and the two reset policies


@pytest.mark.parametrize(("reset", "first"), [("latest", []), ("earliest", [0, 1, 2])])
def test_A1_offsets_and_the_two_reset_policies(reset, first):
    """v0-v2 get offsets 0-2, LEO = HW = 3, log start 0. A new group with `latest` starts at 3 and
    gets nothing; with `earliest` it gets 0, 1, 2. The commit stores 3 (the next offset to read),
    and a restart resumes at 3 whatever the reset policy."""
    c0 = {"id": "c0", "group.id": "g", "auto.offset.reset": reset, "enable.auto.commit": False}
    r = simulate(
        one_broker(
            [c0],
            [
                *produce(3),
                {"do": "subscribe", "consumer": "c0"},
                poll(),
                {"do": "commit", "consumer": "c0"},
                {"do": "shutdown", "consumer": "c0"},
                *produce(1, start=3),
                {"do": "restart", "consumer": "c0"},
                poll(),
            ],
        )
    )
    p0 = r["partitions"][0]
    assert [e["offset"] for e in p0["log"]] == [0, 1, 2, 3] and p0["log_start_offset"] == 0
    assert offsets_of(r["polls"][0]) == first
    assert r["commits"] == [{"consumer": "c0", "offsets": {"0": 3}, "outcome": "ok", "error": None}]
    assert r["groups"]["g"]["committed"] == {"0": 3}
    # the committed offset decides, not auto.offset.reset: the restarted process reads offset 3
    assert offsets_of(r["polls"][1]) == [3]
    assert r["consumers"]["c0"]["position"] == {"0": 4}


def test_A1_a_crashed_member_blocks_the_next_join_until_its_session_times_out():
    """A crash sends no LeaveGroup: the group keeps the dead member until session.timeout.ms
    (45 s) passes after its last contact with the coordinator (its commit, which counts as a
    heartbeat, OMM 456-466), so the restarted process's join completes only then (KIP-735's
    default)."""
    c0 = {"id": "c0", "group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    r = simulate(
        one_broker(
            [c0],
            [
                *produce(3),
                {"do": "subscribe", "consumer": "c0"},
                poll(),
                {"do": "commit", "consumer": "c0"},
                {"do": "crash", "consumer": "c0"},
                {"do": "restart", "consumer": "c0"},
                poll(ms=10_000),
                poll(ms=60_000),
            ],
        ),
        steps=True,
    )
    crash_at = next(s["t_ms"] for s in r["steps"] if s["kind"] == "consumer_crash")
    last_contact = next(s["t_ms"] for s in r["steps"] if s["kind"] == "consumer_commit")
    expired = next(s for s in r["steps"] if s["kind"] == "group_member_expired")
    assert last_contact <= crash_at and expired["t_ms"] == last_contact + 45_000
    assert r["polls"][1]["records"] == []  # still waiting for the old member to go
    joins = [s for s in r["steps"] if s["kind"] == "consumer_join"]
    assert len(joins) == 2 and joins[1]["t_ms"] > expired["t_ms"]
    assert r["groups"]["g"]["generation"] == 2 and r["groups"]["g"]["state"] == "Stable"
    assert [h["generation"] for h in r["groups"]["g"]["history"]] == [1, 2]


# ------------------------------------------------------------------------------------------
# F.A5 A consumer falls behind the log start offset


@pytest.mark.parametrize(
    ("reset", "position", "error"),
    [("earliest", 50, None), ("latest", 60, None), ("none", None, "OFFSET_OUT_OF_RANGE")],
)
def test_A5_a_consumer_falls_behind_the_log_start(reset, position, error):
    """Group G committed 40; the log start moves to 50 (here by DeleteRecords, which moves it as
    retention does). A fetch at 40 gets OFFSET_OUT_OF_RANGE; `earliest` seeks to 50 (40-49 are
    lost to G, no error surfaced), `latest` seeks to the HW (everything up to it is skipped),
    `none` makes poll() throw. The committed offset stays 40: the broker never re-checks it."""
    c0 = {"id": "c0", "group.id": "G", "auto.offset.reset": reset, "enable.auto.commit": False}
    r = simulate(
        one_broker(
            [c0],
            [
                *produce(60),
                {"do": "assign", "consumer": "c0", "partitions": [0]},
                {"do": "commit", "consumer": "c0", "offsets": {"0": 40}},
                {"do": "delete_records", "partition": 0, "offset": 50},
                poll(max_records=5),
            ],
        ),
        steps=True,
    )
    assert r["partitions"][0]["log_start_offset"] == 50
    assert any(s["kind"] == "consumer_out_of_range" and "offset 40" in s["text"] for s in r["steps"])
    assert r["polls"][0]["error"] == error
    if position is None:
        assert r["polls"][0]["records"] == []
        assert r["consumers"]["c0"]["errors"][-1]["error"] == "OFFSET_OUT_OF_RANGE"
    elif position == 50:
        assert offsets_of(r["polls"][0]) == [50, 51, 52, 53, 54]
    else:
        assert r["polls"][0]["records"] == [] and r["consumers"]["c0"]["position"] == {"0": 60}
    assert r["groups"]["G"]["committed"] == {"0": 40}


# ------------------------------------------------------------------------------------------
# F.A6 DeleteRecords inside a segment


def test_A6_delete_records_moves_the_log_start_and_reads_below_it_fail():
    """deleteRecords(p0, 55) sets the log start offset to 55: a fetch at 52 gets
    OFFSET_OUT_OF_RANGE, and the earliest offset (seek to the beginning, ListOffsets EARLIEST)
    is 55. (Segments are not simulated yet: that the [50..59] segment stays on disk is not shown.)"""
    c0 = {"id": "c0", "auto.offset.reset": "none"}
    r = simulate(
        one_broker(
            [c0],
            [
                *produce(70),
                {"do": "delete_records", "partition": 0, "offset": 55},
                {"do": "assign", "consumer": "c0", "partitions": [0]},
                {"do": "seek", "consumer": "c0", "partition": 0, "offset": 52},
                poll(max_records=3),
                {"do": "seek", "consumer": "c0", "partition": 0, "offset": "beginning"},
                poll(max_records=3),
            ],
        )
    )
    assert r["partitions"][0]["log_start_offset"] == 55
    assert r["partitions"][0]["log"][0]["offset"] == 55
    assert r["polls"][0]["error"] == "OFFSET_OUT_OF_RANGE"
    assert offsets_of(r["polls"][1]) == [55, 56, 57]


def test_delete_records_above_the_high_watermark_is_refused():
    r = simulate(
        one_broker([], [*produce(5), {"do": "delete_records", "partition": 0, "offset": 9}]), steps=True
    )
    assert r["partitions"][0]["log_start_offset"] == 0
    assert "OFFSET_OUT_OF_RANGE" in [s for s in r["steps"] if s["kind"] == "admin_delete_records"][0]["text"]


# ------------------------------------------------------------------------------------------
# F.B Committed offsets


def _restart_after(mid: list[dict[str, Any]], **consumer: Any) -> dict[str, Any]:
    c0 = {
        "id": "c0",
        "group.id": "g",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **consumer,
    }
    return simulate(
        one_broker(
            [c0],
            [
                *produce(10),
                {"do": "subscribe", "consumer": "c0"},
                poll(max_records=5),
                *mid,
                {"do": "crash", "consumer": "c0"},
                {"do": "restart", "consumer": "c0"},
                poll(ms=60_000, max_records=5),
            ],
        )
    )


def test_B1_process_then_commit_is_at_least_once():
    """poll() returns 0-4; the app processes them and crashes before commitSync(): the restarted
    process starts from the last committed offset (none, so `earliest`: 0) and gets 0-4 again."""
    r = _restart_after([])
    assert offsets_of(r["polls"][0]) == offsets_of(r["polls"][1]) == [0, 1, 2, 3, 4]
    assert [x["offset"] for x in r["consumers"]["c0"]["received"]] == [0, 1, 2, 3, 4] * 2


def test_B2_commit_then_process_is_at_most_once():
    """poll() returns 0-4; commitSync() stores 5; the app crashes while processing offset 2: the
    restart begins at 5, so 2-4 are never processed."""
    r = _restart_after([{"do": "commit", "consumer": "c0"}])
    assert r["commits"][0]["offsets"] == {"0": 5}
    assert offsets_of(r["polls"][1]) == [5, 6, 7, 8, 9]


def test_B3_auto_commit_happens_inside_poll_with_the_previous_polls_positions():
    """Defaults (auto-commit every 5 s). The assignment restarts the timer; poll() returns 0-499;
    2 s later poll() returns 500-999 and commits nothing; at 5.5 s poll() first commits {p0: 1000}
    (what the previous poll reached), then returns 1000-1499. A crash at 6 s while processing 1200:
    the restart begins at 1000 and gets 1000-1199 again. Nothing is lost."""
    c0 = {"id": "c0", "group.id": "g", "auto.offset.reset": "earliest"}
    r = simulate(
        one_broker(
            [c0],
            [
                *produce(2_000),
                {"do": "subscribe", "consumer": "c0"},
                poll(),
                {"do": "stall", "consumer": "c0", "ms": 2_000},
                poll(),
                {"do": "stall", "consumer": "c0", "ms": 3_500},
                poll(),
                {"do": "stall", "consumer": "c0", "ms": 500},
                {"do": "crash", "consumer": "c0"},
                {"do": "restart", "consumer": "c0"},
                poll(ms=60_000, max_records=200),
            ],
        ),
        steps=True,
    )
    assert [(offsets_of(p)[0], offsets_of(p)[-1]) for p in r["polls"]] == [
        (0, 499), (500, 999), (1000, 1499), (1000, 1199)
    ]  # fmt: skip
    join = next(s["t_ms"] for s in r["steps"] if s["kind"] == "consumer_join")
    commits = [s for s in r["steps"] if s["kind"] == "consumer_commit"]
    assert len(commits) == 1 and "P0 1000" in commits[0]["text"]
    assert 5_000 <= commits[0]["t_ms"] - join < 5_600
    assert r["commits"] == []  # auto-commits are not commit actions


def test_B5_where_the_group_lives():
    """group.id `orders` -> __consumer_offsets partition 31 (Java hashCode, abs, mod 50). Its
    coordinator is the broker leading that partition; when that broker dies, another replica's
    broker takes over."""
    c0 = {"id": "c0", "group.id": "orders", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    sc = {
        "topic": {"replication.factor": 3},
        "consumers": [c0],
        "actions": [
            *produce(2),
            {"do": "subscribe", "consumer": "c0"},
            poll(),
            {"do": "commit", "consumer": "c0"},
        ],
    }
    r = simulate(sc)
    g = r["groups"]["orders"]
    assert g["offsets_partition"] == 31 and g["committed"] == {"0": 2}
    first = g["coordinator"]
    sc["actions"] += [
        {"do": "crash", "broker": first},
        {"do": "commit", "consumer": "c0", "offsets": {"0": 1}},
    ]
    r = simulate(sc)
    assert r["groups"]["orders"]["coordinator"] not in (None, first)
    assert r["groups"]["orders"]["committed"] == {"0": 1}


def test_B6_commits_can_go_backwards():
    """commitSync({p0: 100}) then commitSync({p0: 50}): the committed offset is 50 (last write
    wins; the broker checks no order), so a restart reprocesses from 50."""
    r = _restart_after(
        [
            {"do": "commit", "consumer": "c0", "offsets": {"0": 100}},
            {"do": "commit", "consumer": "c0", "offsets": {"0": 8}},
        ]
    )
    assert [c["offsets"] for c in r["commits"]] == [{"0": 100}, {"0": 8}]
    assert r["groups"]["g"]["committed"] == {"0": 8}
    assert offsets_of(r["polls"][1]) == [8, 9]


# ------------------------------------------------------------------------------------------
# the consumer API's edges


def test_a_consumer_without_a_group_id_cannot_commit_or_subscribe():
    """Kafka's InvalidGroupIdException, refused before the run: the scenario says where."""
    with pytest.raises(ScenarioError) as e:
        simulate(
            one_broker(
                [{"id": "c0"}],
                [
                    *produce(2),
                    {"do": "subscribe", "consumer": "c0"},
                    poll(),
                    {"do": "commit", "consumer": "c0"},
                ],
            )
        )
    paths = [p["path"] for p in e.value.problems]
    assert "actions[2].consumer" in paths and "actions[4].consumer" in paths
    assert "group.id" in e.value.problems[0]["message"]


def test_assign_with_a_group_id_commits_to_a_simple_group_that_keeps_its_offsets():
    """assign() consumers commit with generation -1: the coordinator creates a 'simple' group."""
    c0 = {"id": "c0", "group.id": "s", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    r = simulate(
        one_broker(
            [c0],
            [
                *produce(4),
                {"do": "assign", "consumer": "c0", "partitions": [0]},
                poll(),
                {"do": "commit", "consumer": "c0"},
            ],
        )
    )
    assert r["groups"]["s"]["committed"] == {"0": 4} and r["groups"]["s"]["state"] == "Empty"


def test_several_partitions_one_consumer_reads_each_in_order():
    """Ordering holds within a partition only: one member owns every partition and reads each
    partition's records in offset order."""
    c0 = {"id": "c0", "group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    keys = ["alice", "bob", "carol", "alice", "carol"]
    actions = [{"do": "produce", "records": [f"r{i}"], "key": k} for i, k in enumerate(keys)]
    r = simulate(
        {
            "topic": {"replication.factor": 3, "partitions": 3},
            "consumers": [c0],
            "actions": [*actions, {"do": "settle"}, {"do": "subscribe", "consumer": "c0"}, poll()],
        }
    )
    got = r["polls"][0]["records"]
    assert sorted(x["record"] for x in got) == [f"r{i}" for i in range(5)]
    for p in range(3):
        mine = [x["offset"] for x in got if x["partition"] == p]
        assert mine == sorted(mine) == list(range(len(mine)))
    # C1: alice and bob -> p0, carol -> p2 (murmur2 of the key)
    assert {x["key"]: x["partition"] for x in got} == {"alice": 0, "bob": 0, "carol": 2}
    assert r["consumers"]["c0"]["assigned"] == [0, 1, 2]


def test_unknown_consumers_and_partitions_get_clear_problems():
    with pytest.raises(ScenarioError) as e:
        simulate(
            one_broker([{"id": "c0"}], [poll("c9"), {"do": "assign", "consumer": "c0", "partitions": [3]}])
        )
    paths = {p["path"]: p["message"] for p in e.value.problems}
    assert "c9" in paths["actions[0].consumer"] and "c0" in paths["actions[0].consumer"]
    assert "partition" in paths["actions[1].partitions[0]"]


def test_a_second_live_member_joins_the_same_group():
    """Issue 12: two members of one group rebalance (the canonical cases are in
    test_groups_canonical.py); here only that the second member is no longer refused."""
    consumers = [{"id": c, "group.id": "g", "loop_ms": 100} for c in ("c0", "c1")]
    actions = [{"do": "subscribe", "consumer": c} for c in ("c0", "c1")] + [{"do": "settle"}]
    r = simulate(one_broker(consumers, actions))
    assert r["groups"]["g"]["state"] == "Stable" and sorted(r["groups"]["g"]["members"]) == ["c0", "c1"]


def test_a_scenario_without_consumers_keeps_its_result_shape():
    r = simulate({"actions": [{"do": "produce", "records": ["a"]}, {"do": "settle"}]})
    assert "polls" not in r and "partitions" not in r


def test_idle_days_are_skipped_and_the_cluster_carries_on_after_them():
    """Issue 10: 8 simulated days must run fast. A quiet cluster's housekeeping (heartbeats, empty
    fetches, periodic checks) is skipped over; after the jump replication, membership and
    consumers go on as before: the ISR is whole, no broker was fenced, the next record is read."""
    from engine import Limits

    day = 86_400_000
    c0 = {"id": "c0", "group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    actions = [*produce(2), {"do": "subscribe", "consumer": "c0"}, poll(), {"do": "commit", "consumer": "c0"}]
    actions += [{"do": "advance", "ms": 3_600_000}] * (8 * 24)
    actions += [{"do": "produce", "records": ["late"]}, {"do": "settle"}, poll()]
    sc = {"topic": {"replication.factor": 3, "min.insync.replicas": 2}, "consumers": [c0], "actions": actions}
    r = simulate(sc, steps=True, limits=Limits(max_sim_ms=10 * day, max_actions=1_000))
    assert r["steps"][-1]["t_ms"] > 8 * day
    assert [x["record"] for p in r["polls"] for x in p["records"]] == ["v0", "v1", "late"]
    assert r["produce"][-1]["outcome"] == "acked"
    assert r["final"]["partition"]["isr"] == [1, 2, 3]
    assert not any(s["kind"].startswith("controller_") for s in r["steps"])


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        # add_partitions runs, but not after what a new partition would have to replay
        ({"actions": [{"do": "crash", "broker": 1}, {"do": "add_partitions", "count": 2}]}, "actions[1].do"),
    ],
)
def test_what_is_parsed_but_not_simulated_yet_is_refused_clearly(extra, path):
    with pytest.raises(ScenarioError) as e:
        simulate(extra)
    assert e.value.problems[0]["path"] == path and "not simulated yet" in e.value.problems[0]["message"]


def test_a_poll_loop_reads_what_arrives_and_its_idle_days_are_skipped():
    """loop_ms: the application polls every loop_ms while it runs; records produced later reach it
    without poll actions, across a quiet week that the idle skip jumps (bench/engine.py measures
    how fast)."""
    from engine import Limits

    c0 = {"id": "c0", "group.id": "g", "auto.offset.reset": "earliest", "loop_ms": 1_000}
    actions = [{"do": "subscribe", "consumer": "c0"}, {"do": "advance", "ms": 10_000}, *produce(3)]
    actions += [{"do": "advance", "ms": 5_000}] + [{"do": "advance", "ms": 3_600_000}] * (7 * 24)
    actions += [*produce(1, start=3), {"do": "advance", "ms": 5_000}]
    r = simulate(one_broker([c0], actions), limits=Limits(max_actions=1_000))
    assert [x["record"] for x in r["consumers"]["c0"]["received"]] == ["v0", "v1", "v2", "v3"]
    assert r["groups"]["g"]["committed"] == {"0": 4}  # auto-commit inside the loop's polls
    assert r["polls"] == []  # polls[] follows poll actions only


def test_part2_produce_entries_name_producer_partition_id_and_epoch():
    """Contract part 2: produce[i] gains producer, partition, producer_id and producer_epoch; a
    part-1 scenario's produce entries keep their shape."""
    r = simulate(
        one_broker([], [{"do": "produce", "records": ["a"], "key": "k"}, {"do": "settle"}], partitions=2)
    )
    p = r["produce"][0]
    assert (p["producer"], p["producer_id"], p["producer_epoch"]) == ("producer", 1000, 0)
    assert p["partition"] == r["partitions"][p["partition"]]["partition"]
    assert r["partitions"][p["partition"]]["log"][0]["sequence"] == 0
    plain = simulate({"actions": [{"do": "produce", "records": ["a"]}, {"do": "settle"}]})
    assert "producer_id" not in plain["produce"][0]


# ------------------------------------------------------------------------------------------
# an empty poll() says why (a `poll` action only; a poll loop's idle ticks stay silent)


def empty_polls(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in r["steps"] if s["kind"] == "consumer_poll_empty"]


def test_an_empty_poll_action_is_one_step_saying_it_is_caught_up():
    """The learner sees the consumer ask and get nothing: one step per `poll` action that returns
    no records, at the moment it returns, with the reason read from the state then."""
    c0 = {"id": "c0", "group.id": "g", "auto.offset.reset": "earliest"}
    actions = [*produce(2), {"do": "subscribe", "consumer": "c0"}, poll(), poll(ms=1_000)]
    r = simulate(one_broker([c0], actions), steps=True)
    assert offsets_of(r["polls"][0]) == [0, 1] and r["polls"][1]["records"] == []
    (empty,) = empty_polls(r)
    last = len(actions) - 1
    assert empty["consumer"] == "c0" and empty["action"] == last
    assert empty["text"] == (
        "c0.poll() returns nothing after its 1000 ms timeout: caught up at the high watermark (P0 at 2)"
    )
    assert empty["t_ms"] == r["action_t_ms"][last] + 1_000


def test_an_empty_poll_while_the_group_is_still_forming_says_so():
    """A new group's first join waits group.initial.rebalance.delay.ms (3 s): a 1 s poll returns
    before the consumer owns anything."""
    c0 = {"id": "c0", "group.id": "g"}
    r = simulate(one_broker([c0], [{"do": "subscribe", "consumer": "c0"}, poll(ms=1_000)]), steps=True)
    (empty,) = empty_polls(r)
    assert "still joining group 'g'" in empty["text"] and "group.initial.rebalance.delay.ms" in empty["text"]


def test_an_empty_poll_with_nothing_assigned_says_so():
    c0 = {"id": "c0"}
    actions = [{"do": "assign", "consumer": "c0", "partitions": []}, poll(ms=500)]
    (empty,) = empty_polls(simulate(one_broker([c0], actions), steps=True))
    assert empty["text"].endswith("no partitions are assigned to it")


def test_an_empty_poll_behind_an_unreplicated_tail_names_the_high_watermark():
    """acks=1 with a follower cut off: the leader's LEO runs ahead of the HW, and a consumer at the
    HW reads nothing: the records past it are written but not yet on every in-sync replica."""
    sc = {
        "topic": {"replication.factor": 2, "min.insync.replicas": 1},
        "producer": {"acks": 1},
        "consumers": [{"id": "c0"}],
        "actions": [
            *produce(1),
            {"do": "assign", "consumer": "c0", "partitions": [0]},
            {"do": "seek", "consumer": "c0", "partition": 0, "offset": "end"},
            {"do": "isolate", "broker": 2, "from": [1]},
            {"do": "produce", "records": ["x", "y"]},
            {"do": "advance", "ms": 100},
            poll(ms=200),
        ],
        "brokers": [{"id": 1}, {"id": 2}],
    }
    r = simulate(sc, steps=True)
    assert r["polls"][0]["records"] == []
    (empty,) = empty_polls(r)
    assert "caught up at the high watermark 1; offsets 1-2 are written but not yet" in empty["text"]


def test_a_poll_loop_finding_nothing_stays_silent():
    """loop_ms polls every second; its empty ticks make no steps (idle loops must not flood the
    steps), while a `poll` action by the same consumer that finds nothing still makes one."""
    c0 = {"id": "c0", "group.id": "g", "auto.offset.reset": "earliest", "loop_ms": 1_000}
    actions = [{"do": "subscribe", "consumer": "c0"}, {"do": "advance", "ms": 60_000}, poll(ms=1_000)]
    r = simulate(one_broker([c0], actions), steps=True)
    (empty,) = empty_polls(r)
    assert empty["action"] == 2


def test_a_by_duration_miss_in_a_poll_loop_waits_quietly_and_lets_idle_days_be_skipped():
    """A7's "later than every record" in a poll loop: the first miss is one step, the retries every
    request.timeout.ms are quiet, a quiet week is skipped (a retry then can find nothing new), and
    the first record after it is where the consumer starts."""
    from engine import Limits

    c0 = {"id": "c0", "auto.offset.reset": "by_duration:PT1M", "loop_ms": 1_000}
    actions = [*produce(2), {"do": "advance", "ms": 120_000}]
    actions += [{"do": "assign", "consumer": "c0", "partitions": [0]}, {"do": "advance", "ms": 60_000}]
    actions += [{"do": "advance", "ms": 3_600_000}] * (7 * 24)
    actions += [*produce(1, start=2), {"do": "advance", "ms": 40_000}]
    r = simulate(one_broker([c0], actions), steps=True, limits=Limits(max_actions=1_000))
    assert [x["offset"] for x in r["consumers"]["c0"]["received"]] == [2]
    resets = [s for s in r["steps"] if s["kind"] == "consumer_reset_offset"]
    assert [s["offset"] for s in resets] == [None, 2]
    assert r["steps"][-1]["t_ms"] > 7 * 86_400_000
