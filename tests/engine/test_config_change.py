"""Dynamic min.insync.replicas (kafka-semantics.md §3.1): a config change is not one of the
high-watermark triggers. In Partition.scala (commit 1eb7644) maybeIncrementLeaderHW is called
from makeLeader, updateFollowerFetchState, appendRecordsToLeader and the ISR-commit path; the
lowered minimum is used at the next of those.
"""

from __future__ import annotations

from scenario_builders import advance, crash, produce, run, scenario, set_config, settle, stop_fetching


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


def test_kip_966_setting_min_isr_clears_the_elr_even_to_the_same_value():
    """KIP-966 as the Kafka 4.1 operations docs ("Eligible Leader Replicas") state it: "If the
    cluster-level min.insync.replicas is updated, even if the value is unchanged, all the ELR
    state will be cleaned", and a topic-level update cleans the topic's. The engine keeps that:
    an ELR member shrunk out of the ISR under min ISR 2 is no longer eligible after an operator
    sets min.insync.replicas=2 again."""
    sc = scenario(
        produce("a"), settle(), crash(3), advance(20_000), crash(2), advance(20_000),
        set_config("min.insync.replicas", 2), advance(10),
        kafka_version="4.1", min_isr=2, elr=1,
    )
    r = run(sc, steps=True, all_views=True)
    k = [s["kind"] for s in r["steps"]].index("config_set")
    before = r["views"][k]["partition"]
    assert before["elr"], "the crashed followers are eligible (ELR) before the config change"
    after = r["final"]["partition"]
    assert after["elr"] == [] and after.get("last_known_elr", []) == []
