"""Dynamic min.insync.replicas (kafka-semantics.md §3.1): a config change is not one of the
high-watermark triggers. In Partition.scala (commit 1eb7644) maybeIncrementLeaderHW is called
from makeLeader, updateFollowerFetchState, appendRecordsToLeader and the ISR-commit path; the
lowered minimum is used at the next of those.
"""

from __future__ import annotations

from scenario_builders import advance, produce, run, scenario, set_config, settle, stop_fetching


def test_s3_1_lowering_min_isr_does_not_move_the_hw_by_itself():
    """§3.1 (4.1, ELR off): the HW is held under min ISR 3; lowering it to 2 moves the HW only
    when the next append (a trigger) happens, not at the config change."""
    sc = scenario(
        produce("a"), settle(), stop_fetching(3), produce("x", acks=1), advance(6_000),
        set_config("min.insync.replicas", 2), advance(2_000), produce("y", acks=1), advance(100),
        kafka_version="4.1", min_isr=3, lag_ms=2_000, elr=0,
    )
    r = run(sc, steps=True, all_views=True)
    kinds = [s["kind"] for s in r["steps"]]
    k = kinds.index("config_set")
    send_y = max(i for i, s in enumerate(r["steps"]) if s["kind"] == "producer_send")
    assert r["views"][k]["partition"]["isr"] == [1, 2]
    held = {r["views"][i + 1]["partition"]["hw"] for i in range(k, send_y)}
    assert held == {1}, "the config change alone does not advance the HW"
    assert r["final"]["partition"]["hw"] == 3, "the next append is a trigger: HW moves to the LEO"
