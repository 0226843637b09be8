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


def _lower_min_isr_story(start_min: int, *values: int) -> dict:
    """ELR on. B3 stops fetching and is shrunk out; x (acks=1) waits above the HW; min.insync.replicas
    is set to each of `values` in turn; y (acks=1) is the next append."""
    sets = []
    for v in values:
        sets += [set_config("min.insync.replicas", v), advance(10)]
    return scenario(
        produce("a"), settle(), stop_fetching(3), produce("x", acks=1), advance(6_000),
        *sets, advance(2_000), produce("y", acks=1), advance(100),
        kafka_version="4.1", min_isr=start_min, lag_ms=2_000, elr=1,
    )


def test_s3_1_with_elr_the_clear_elr_change_reaches_the_leader_and_moves_the_hw():
    """§3.1 + KAFKA-16540 (4.0): with ELR on, B3 left the ISR below min 3, so ELR {3}. Setting
    min.insync.replicas=2 makes the controller write ClearElrRecord; the partition change reaches
    the leader, whose makeLeader runs maybeIncrementLeaderHW: the HW moves one hop after the
    config change, before any append."""
    r = run(_lower_min_isr_story(3, 2), steps=True, all_views=True)
    k = next(s["i"] for s in r["steps"] if s["kind"] == "config_set")
    assert r["views"][k]["partition"]["elr"] == [3] and r["views"][k]["partition"]["hw"] == 1
    clear = next(s for s in r["steps"] if s["kind"] == "controller_update_elr" and s["i"] > k)
    assert "ClearElrRecord" in clear["text"]
    assert r["views"][clear["i"]]["partition"]["elr"] == []
    moved = next(s for s in r["steps"] if s["kind"] == "leader_advance_high_watermark" and s["i"] > k)
    send_y = max(s["i"] for s in r["steps"] if s["kind"] == "producer_send")
    assert moved["i"] < send_y and moved["t_ms"] == r["steps"][k - 1]["t_ms"] + 1
    log = r["final"]["controller"]["metadata_log"]
    assert [rec["type"] for rec in log].count("ClearElrRecord") == 1


def test_s3_1_with_elr_empty_the_config_change_changes_no_partition_and_moves_no_hw():
    """§3.1 + KAFKA-18649: B3 left the ISR while it was at min 2, so the ELR is empty. Setting
    min.insync.replicas to 3 and back to 2 writes ClearElrRecords that change no partition (no
    epoch bump), so nothing reaches the leader: the HW stays until the next append."""
    r = run(_lower_min_isr_story(2, 3, 2), steps=True, all_views=True)
    sets = [s["i"] for s in r["steps"] if s["kind"] == "config_set"]
    assert r["views"][sets[0]]["partition"]["elr"] == []
    epoch = r["views"][sets[0]]["partition"]["partition_epoch"]
    send_y = max(s["i"] for s in r["steps"] if s["kind"] == "producer_send")
    between = [s for s in r["steps"] if sets[0] <= s["i"] < send_y]
    assert not [s for s in between if s["kind"] in ("controller_update_elr", "leader_advance_high_watermark")]
    assert {r["views"][s["i"]]["partition"]["partition_epoch"] for s in between} == {epoch}
    assert r["final"]["partition"]["hw"] == 3, "the next append (a trigger) moves the HW"
