"""Several partitions (kafka-semantics.md §8): striped placement, shared faults, merged results."""

from __future__ import annotations

from engine import simulate
from engine.scenario import striped_placement

RACKED = [{"id": i, "rack": r} for i, r in [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"), (6, "c")]]


def test_striped_placement_matches_the_reference_pattern():
    # §8 / seed 004: racks A, B, C give A0,B0,C0 / B1,C1,A1 / C2,A2,B2
    brokers = [(b["id"], b["rack"]) for b in RACKED]
    assert [striped_placement(brokers, 3, p) for p in range(3)] == [[1, 3, 5], [4, 6, 2], [5, 1, 3]]
    # without racks every broker is its own rack: the plain stripe
    plain = [(1, None), (2, None), (3, None)]
    assert [striped_placement(plain, 3, p) for p in range(3)] == [[1, 2, 3], [2, 3, 1], [3, 1, 2]]


def test_a_lone_broker_in_its_own_rack_gets_nearly_every_partition():
    brokers = [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "b"), (6, "b"), (7, "c")]
    layouts = [striped_placement(brokers, 3, p) for p in range(6)]
    assert all(7 in replicas for replicas in layouts), (
        "§8: uneven racks concentrate replicas on the lone broker"
    )


def test_step_count_is_the_same_with_and_without_recorded_steps():
    sc = {
        "brokers": RACKED,
        "topic": {"replication.factor": 3, "partitions": 3},
        "actions": [
            {"do": "produce", "records": ["x"], "partition": 1},
            {"do": "crash", "broker": 1},
            {"do": "advance", "ms": 10_000},
        ],
    }
    quiet = simulate(sc)
    loud = simulate(sc, steps=True)
    assert quiet["step_count"] == loud["step_count"] == len(loud["steps"]) > 0


def test_a_rack_power_loss_costs_no_partition_an_acknowledged_record():
    actions = [{"do": "produce", "records": [f"x{p}"], "partition": p} for p in range(6)]
    actions += [{"do": "settle"}, {"do": "power_loss", "rack": "a"}, {"do": "advance", "ms": 10_000}]
    actions += [{"do": "produce", "records": [f"y{p}"], "partition": p} for p in range(6)] + [
        {"do": "settle"}
    ]
    r = simulate(
        {
            "brokers": RACKED,
            "topic": {"replication.factor": 3, "partitions": 6, "min.insync.replicas": 2},
            "actions": actions,
        },
        check_invariants=True,
    )
    assert r["lost_acked_records"] == [] and r["violations"] == []
    assert sorted(r["acked_records"]) == sorted([f"x{p}" for p in range(6)] + [f"y{p}" for p in range(6)])
    assert len(r["partitions"]) == 6 and all(p["final"]["partition"]["online"] for p in r["partitions"])


def _three_partitions() -> dict:
    actions = [{"do": "produce", "records": [f"x{p}"], "partition": p} for p in range(3)]
    actions += [{"do": "settle"}, {"do": "crash", "broker": 1}, {"do": "advance", "ms": 10_000}]
    actions += [{"do": "produce", "records": [f"y{p}"], "partition": p} for p in range(3)]
    actions += [{"do": "settle"}]
    return {
        "brokers": RACKED,
        "topic": {"replication.factor": 3, "partitions": 3, "min.insync.replicas": 2},
        "actions": actions,
    }


def test_all_views_with_several_partitions_equal_the_at_step_view_at_every_step():
    sc = _three_partitions()
    r = simulate(sc, steps=True, all_views=True)
    views = r["views"]
    assert len(views) == r["step_count"] + 1
    assert [p["final"] for p in r["partitions"]] == views[-1]["partitions"]
    for k in range(r["step_count"] + 1):
        one = simulate(sc, at_step=k)
        assert views[k] == one["view"], f"step {k}"
        assert views[k]["partitions"] == [p["view"] for p in one["partitions"]], f"step {k}"
        assert {key: v for key, v in views[k].items() if key != "partitions"} == views[k]["partitions"][0]


def test_several_partitions_views_follow_the_merged_steps_in_time():
    r = simulate(_three_partitions(), steps=True, all_views=True)
    for k, st in enumerate(r["steps"], start=1):
        for p, view in enumerate(r["views"][k]["partitions"]):
            assert view["t_ms"] <= st["t_ms"] or k == r["step_count"], (k, p)
        if st["kind"] == "producer_receive" and st["partition"] is not None:
            # the acknowledgement is in that partition's ledger from this step's millisecond on
            # (a view shows each partition at the end of its step's millisecond), never before
            rec = st["text"].split(": ", 2)[-1].split(" ")[0]
            assert rec in r["views"][k]["partitions"][st["partition"]]["ledger"]["acked"]
            before = max(i for i in range(k) if i == 0 or r["steps"][i - 1]["t_ms"] < st["t_ms"])
            assert rec not in r["views"][before]["partitions"][st["partition"]]["ledger"]["acked"]


def test_keyed_records_go_where_murmur2_sends_them():
    """kafka-clients-logs.md §F.C C1 on three partitions: alice → p0, carol → p2, key-0 → p1; a
    partition named on the produce wins over its key (C.1's order)."""
    sc = {
        "topic": {"replication.factor": 3, "partitions": 3},
        "actions": [
            {"do": "produce", "records": ["a1"], "key": "alice"},
            {"do": "produce", "records": ["c1"], "key": "carol"},
            {"do": "produce", "records": ["k1"], "key": "key-0"},
            {"do": "produce", "records": ["c2"], "key": "carol", "partition": 0},
            {"do": "produce", "records": ["c3"], "key": "carol"},
            {"do": "settle"},
        ],
    }
    result = simulate(sc)
    assert [(b["records"][0], b["partition"]) for b in result["produce"]] == [
        ("a1", 0), ("c1", 2), ("k1", 1), ("c2", 0), ("c3", 2)
    ]  # fmt: skip
    assert [b["offsets"] for b in result["produce"] if b["records"][0].startswith("c")] == [[0], [1], [1]]


def test_one_clock_a_fault_lands_at_the_same_time_in_every_partition():
    """Issue 10's one-clock rule: partitions with different traffic still share the brokers' time.

    Partition 0 gets twenty records and partition 1 one, so their `settle`s would end at different
    times if each partition ran on its own clock (before the rewrite, a crash after a settle landed
    at different milliseconds in different partitions). With one clock, the settle ends when the
    whole cluster is settled, the crash reaches every partition at that millisecond, and the
    controller's fencing of the crashed broker changes every partition at one step."""
    actions = [{"do": "produce", "records": [f"x{i}"], "partition": 0} for i in range(20)]
    actions += [{"do": "produce", "records": ["y"], "partition": 1}, {"do": "settle"}]
    actions += [{"do": "crash", "broker": 1}, {"do": "settle", "through_failover": True}]
    actions += [{"do": "produce", "records": ["z"], "partition": 2}, {"do": "advance", "ms": 100}]
    sc = {"topic": {"replication.factor": 3, "partitions": 3}, "actions": actions}
    r = simulate(sc, steps=True, all_views=True)
    crash = 22
    crash_at = r["action_t_ms"][crash]
    # the settle before the crash waited for the slower partition: P0's followers learn HW 20 at 506
    assert crash_at == max(s["t_ms"] for s in r["steps"] if s["action"] == crash - 1)
    crash_steps = [s for s in r["steps"] if s["action"] == crash]
    assert crash_steps and {s["t_ms"] for s in crash_steps} == {crash_at}
    fence = next(s for s in r["steps"] if s["kind"] == "controller_fence_broker")
    elect = next(s for s in r["steps"] if s["kind"] == "controller_elect_leader")
    assert elect["partition"] == 0 and elect["i"] == fence["i"] + 1 and elect["t_ms"] == fence["t_ms"]
    before, after = r["views"][fence["i"] - 1], r["views"][elect["i"]]
    for p in range(3):  # B1 leaves every ISR at the fence's millisecond (P0's with its leadership)
        assert 1 in before["partitions"][p]["partition"]["isr"], p
        assert 1 not in after["partitions"][p]["partition"]["isr"], p
        assert after["partitions"][p]["t_ms"] == fence["t_ms"], p
    # the steps are numbered in the order they happened, and time never goes back
    assert [s["i"] for s in r["steps"]] == list(range(1, r["step_count"] + 1))
    times = [s["t_ms"] for s in r["steps"]]
    assert times == sorted(times)
