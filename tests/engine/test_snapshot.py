"""What every snapshot exposes besides the replicas' state: messages in flight, the timers behind
ISR shrinks and fencing, and the producer's ledger as of that step (docs/scenario-format.md)."""

from __future__ import annotations

from scenario_builders import (
    FENCE_MS,
    REJOIN_MS,
    advance,
    crash,
    produce,
    restart,
    run,
    scenario,
    settle,
    stop_fetching,
)

import engine


def _views(sc: dict) -> dict:
    return run(sc, steps=True, all_views=True)


def _messages(view: dict, kind: str, **match) -> list[dict]:
    return [m for m in view["messages"] if m["kind"] == kind and all(m.get(k) == v for k, v in match.items())]


def _writes() -> dict:
    return scenario(produce("a", "b"), settle(), produce("c"), settle(), min_isr=2, acks="all")


def test_every_message_is_in_flight_at_the_instant_of_its_snapshot():
    r = _views(_writes())
    seen = set()
    for view in r["views"]:
        for m in view["messages"]:
            seen.add(m["kind"])
            assert m["sent_ms"] <= view["t_ms"], m
            if m["kind"] == "fetch_held":
                assert view["t_ms"] <= m["until_ms"], m
            else:
                assert view["t_ms"] <= m["arrive_ms"], m
            assert m["label"] and {"src", "dst", "arrive_ms"} <= set(m)
    assert {"produce", "produce_response", "fetch", "fetch_held", "fetch_response"} <= seen


def test_a_fetch_shows_between_send_and_delivery_with_its_offset():
    r = _views(_writes())
    steps, views = r["steps"], r["views"]
    # B2 appends a, b and fetches again from its new LEO 2 at once, with the epoch it last fetched
    k = next(i for i, st in enumerate(steps, 1) if st["kind"] == "follower_fetch" and st["broker"] == 2)
    fetch = _messages(views[k], "fetch", src=2, dst=1)
    assert len(fetch) == 1 and fetch[0]["offset"] == 2 and fetch[0]["epoch"] == 0
    assert fetch[0]["sent_ms"] == steps[k - 1]["t_ms"] and fetch[0]["arrive_ms"] == fetch[0]["sent_ms"] + 1
    # delivered: the leader serves it, and it is gone from the snapshot
    served = next(
        i for i, st in enumerate(steps, 1)
        if i > k and st["kind"] == "leader_serve_fetch" and st["follower"] == 2
    )
    assert _messages(views[served], "fetch", src=2, dst=1, offset=2) == []


def test_a_fetch_with_nothing_to_read_is_held_at_the_leader_until_the_wait_ends():
    r = _views(_writes())
    steps, views = r["steps"], r["views"]
    k = next(i for i, st in enumerate(steps, 1) if st["kind"] == "leader_serve_fetch" and st["follower"] == 2)
    held = _messages(views[k], "fetch_held", src=2, dst=1)
    assert len(held) == 1
    # replica.fetch.wait.max.ms (500) after it was parked
    assert held[0]["offset"] == 2 and held[0]["until_ms"] == steps[k - 1]["t_ms"] + 500
    assert views[k]["partition"]["replica_fetch_wait_max_ms"] == 500


def test_a_fetch_response_carries_the_leaders_high_watermark():
    r = _views(_writes())
    steps, views = r["steps"], r["views"]
    # a's append wakes the held fetches: the responses carry a, b and the HW before they count (0)
    k = next(i for i, st in enumerate(steps, 1) if st["kind"] == "leader_park_produce")
    first = _messages(views[k], "fetch_response", src=1, dst=2)
    assert first and first[0]["records"] == 2 and first[0]["hw"] == 0 and first[0]["diverging"] is False
    # c's append wakes them again, now with HW 2
    k = next(i for i, st in enumerate(steps, 1) if st["kind"] == "leader_park_produce" and i > k)
    again = _messages(views[k], "fetch_response", src=1, dst=3)
    assert again and again[0]["records"] == 1 and again[0]["hw"] == 2


def test_produce_request_and_response_show_with_their_batch():
    r = _views(_writes())
    steps, views = r["steps"], r["views"]
    k = next(i for i, st in enumerate(steps, 1) if st["kind"] == "producer_send")
    req = _messages(views[k], "produce", src="producer", dst=1)
    assert req and req[0]["records"] == ["a", "b"] and req[0]["index"] == 0
    k = next(i for i, st in enumerate(steps, 1) if st["kind"] == "leader_complete_produce")
    resp = _messages(views[k], "produce_response", src=1, dst="producer")
    assert resp and resp[0]["error"] is None and resp[0]["index"] == 0


def test_a_refused_produce_answers_with_its_error_in_flight():
    sc = scenario(crash(2), crash(3), advance(FENCE_MS), produce("x"), advance(50),
                  min_isr=2, acks="all", retries=0)
    r = _views(sc)
    k = next(i for i, st in enumerate(r["steps"], 1) if st["kind"] == "leader_reject_not_enough_replicas")
    resp = _messages(r["views"][k], "produce_response")
    assert resp and resp[0]["error"] == "NOT_ENOUGH_REPLICAS"


def test_isr_shrink_sends_alter_partition_and_the_controller_publishes_metadata():
    sc = scenario(produce("a"), settle(), stop_fetching(3), produce("b"), advance(50_000),
                  min_isr=2, acks="all")
    r = _views(sc)
    steps, views = r["steps"], r["views"]
    k = next(i for i, st in enumerate(steps, 1) if st["kind"] == "leader_shrink_isr")
    alter = _messages(views[k], "alter_partition", src=1, dst="controller")
    assert alter and alter[0]["isr"] == [1, 2]
    k = next(i for i, st in enumerate(steps, 1) if st["kind"] == "controller_alter_partition")
    meta = _messages(views[k], "metadata", src="controller")
    assert {m["dst"] for m in meta} == {1, 2, 3} and all(m["isr"] == [1, 2] for m in meta)


def test_timers_caught_up_and_heartbeat():
    sc = scenario(produce("a"), settle(), stop_fetching(3), produce("b"), advance(20_000), crash(2),
                  advance(FENCE_MS), min_isr=1, acks="all")
    r = _views(sc)
    final = r["final"]
    assert final["partition"]["replica_lag_time_max_ms"] == 30_000
    assert final["controller"]["broker_session_timeout_ms"] == 9_000
    assert final["controller"]["broker_heartbeat_interval_ms"] == 2_000
    b = final["brokers"]
    assert b["1"]["caught_up_ms"] is None, "no lastCaughtUpTimeMs for the leader itself"
    b_appended = [st["t_ms"] for st in r["steps"] if st["kind"] == "leader_append"][1]
    # B3 stopped fetching before b: the leader last saw it caught up no later than b's append
    # (its last fetch, already on the wire, arrives in that millisecond), and never since
    assert b["3"]["caught_up_ms"] is not None and b["3"]["caught_up_ms"] <= b_appended
    assert b["3"]["last_fetch_ms"] == b["3"]["caught_up_ms"]
    # B2 crashed: its last heartbeat is older than the session timeout, so it is fenced
    crashed_at = next(st["t_ms"] for st in r["steps"] if st["kind"] == "broker_crash")
    assert b["2"]["last_heartbeat_ms"] <= crashed_at and b["2"]["fenced"]
    assert final["t_ms"] - b["1"]["last_heartbeat_ms"] <= 2_001
    for view in r["views"]:
        for row in view["brokers"].values():
            assert row["last_heartbeat_ms"] is not None and row["last_heartbeat_ms"] <= view["t_ms"]


def _ledger_by_steps(steps: list[dict], produce_records: list[list[str]], k: int) -> dict:
    acked, failed, sent, seen = [], [], [], set()
    for st in steps[:k]:
        idx = st.get("produce")
        if st["kind"] == "producer_receive" and "offsets" in st:
            acked += produce_records[idx]
        elif st["kind"] == "producer_give_up":
            failed += produce_records[idx]
        elif st["kind"] == "producer_send" and idx not in seen:
            seen.add(idx)
            sent += produce_records[idx]
    return {"acked": acked, "failed": failed, "sent": sent}


def test_the_ledger_at_a_step_never_holds_what_happens_later():
    sc = scenario(
        produce("a"), settle(), crash(2), crash(3), advance(FENCE_MS), produce("b"), advance(200),
        produce("c"), restart(2), advance(REJOIN_MS), settle(),
        min_isr=2, acks="all", retries=0, elr=0,
    )
    r = _views(sc)
    recs = [p["records"] for p in r["produce"]]
    assert {p["outcome"] for p in r["produce"]} == {"acked", "failed"}
    for k, view in enumerate(r["views"]):
        want = _ledger_by_steps(r["steps"], recs, k)
        got = {key: view["ledger"][key] for key in ("acked", "failed", "sent")}
        assert got == want, f"step {k}"


def test_lost_at_the_last_step_matches_the_result():
    # S2.5: acks=all with ISR {1} acknowledges b and c on one copy; an unclean election loses them
    sc = scenario(
        produce("a"), settle(), crash(2), crash(3), produce("b"), advance(2_000), advance(FENCE_MS),
        produce("c"), advance(100), crash(1), advance(FENCE_MS),
        restart(2), advance(REJOIN_MS), restart(3), restart(1), advance(REJOIN_MS), settle(), advance(1_000),
        min_isr=1, unclean=True, acks="all", elr=0,
    )
    r = _views(sc)
    assert r["lost_acked_records"] == ["b", "c"]
    assert r["views"][-1]["ledger"]["lost"] == r["lost_acked_records"]
    assert r["final"]["ledger"]["lost"] == r["lost_acked_records"]
    # while there is no leader nothing counts as lost (the result's rule); before the crash nothing is
    offline = next(i for i, st in enumerate(r["steps"], 1) if st["kind"] == "controller_partition_offline")
    assert r["views"][offline]["ledger"]["lost"] == []
    assert r["views"][offline]["ledger"]["acked"] == ["a", "b", "c"]


def test_nothing_counts_as_lost_while_the_leader_is_down_and_not_yet_replaced():
    """A leader that lost its page cache says nothing about which copy the next leader will hold
    (D4's rack power cut): the ledger waits for the controller to fence and replace it."""
    scenario = {
        "version": 1,
        "actions": [
            {"do": "produce", "records": ["a", "b"]},
            {"do": "settle"},
            {"do": "power_loss", "brokers": [1]},
            {"do": "advance", "ms": 20_000},
        ],
    }
    result = engine.simulate(scenario, all_views=True)
    down = [v for v in result["views"] if v["partition"]["leader"] == 1 and not v["brokers"]["1"]["alive"]]
    assert down, "the leader should be down but not yet replaced for a while"
    assert all(v["ledger"]["lost"] == [] for v in down)
    assert result["final"]["partition"]["leader"] != 1
    assert result["lost_acked_records"] == [] and result["final"]["ledger"]["acked"] == ["a", "b"]
