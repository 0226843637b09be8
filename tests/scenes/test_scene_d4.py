"""Deep dive D4 (the arithmetic of losing data): every beat replays on the real engine showing
what its narration claims: two copies lost to two overlapping failures and a third copy saving
them, a rack power cut taking all three copies without broker.rack and none with it, a site-wide
cut beating RF 5 unless every message is fsynced, and the two CAP choices (min.insync.replicas
refuses writes during a network split; unclean election trades an acknowledged write for
availability). The checks every scene passes, including that the chart-only failure-rate knobs
never reach the engine, are in test_every_built_scene.py.

If one of these fails because the engine disagrees with kafka-semantics.md, the engine is wrong:
do not bend the narration or the assertion to make it pass.
"""

from __future__ import annotations

import pytest
from scene_helpers import action_index, kinds, produce, records, run, steps

from scenes import Scene, load_scene

SCENE = "d4"
BEATS = ["two-copies-two-failures", "rack-power-cut", "site-power-cut", "min-isr-chooses-consistency",
         "unclean-chooses-availability"]


@pytest.fixture(scope="module")
def scene() -> Scene:
    return load_scene(SCENE)


# --------------------------------------------------------------------------------------------
# what each beat claims


def partition_rows(result):
    return [(p["replicas"], p["lost_acked_records"]) for p in result.get("partitions") or []]


def test_panels_and_layout(scene):
    assert scene.panels[0] == "loss_chart"
    assert [b.id for b in scene.beats] == BEATS
    assert [b["id"] for b in scene.base_scenario["brokers"]] == list(range(1, 10))
    assert all("rack" not in b for b in scene.base_scenario["brokers"]), "base: nobody set broker.rack"
    racks = {b["id"]: b["rack"] for b in scene.beat("rack-power-cut").compare.patch["brokers"]}
    assert racks == {i: "abc"[(i - 1) // 3] for i in range(1, 10)}
    assert all(b.label is None for b in scene.beats), "every beat is Kafka"


def test_two_overlapping_failures_lose_two_copies_but_not_three(scene):
    r = run(scene, "two-copies-two-failures")
    assert r["final"]["partition"]["replicas"] == [1, 2]
    assert produce(r, "a")["outcome"] == "acked"
    assert sorted(r["lost_acked_records"]) == ["a", "b"]
    assert all(records(r, x) == [] for x in (1, 2))
    c = run(scene, "two-copies-two-failures", compare=True)
    assert c["final"]["partition"]["replicas"] == [1, 2, 3]
    assert c["lost_acked_records"] == [] and c["final"]["partition"]["leader"] == 3
    assert records(c, 3) == ["a", "b"]


def test_a_rack_power_cut_takes_every_copy_without_broker_rack(scene):
    r = run(scene, "rack-power-cut")
    assert partition_rows(r) == [([1, 2, 3], ["a"]), ([2, 3, 4], []), ([3, 4, 5], [])]
    assert r["lost_acked_records"] == ["a"]
    # partition 1 kept one copy and refused acks=all writes until the rack came back
    p1 = run(scene, "rack-power-cut", upto=action_index(scene, "rack-power-cut", do="restart", broker=1))
    isr1 = p1["partitions"][1]["final"]["partition"]["isr"]
    assert isr1 == [4]
    c = run(scene, "rack-power-cut", compare=True)
    assert partition_rows(c) == [([1, 4, 7], []), ([5, 8, 2], []), ([9, 3, 6], [])]
    assert c["lost_acked_records"] == []


def test_a_site_wide_power_cut_beats_rf5_unless_every_message_is_flushed(scene):
    r = run(scene, "site-power-cut")
    assert r["final"]["partition"]["replicas"] == [1, 2, 3, 4, 5]
    assert sorted(r["lost_acked_records"]) == ["a", "b"]
    assert len({s["broker"] for s in steps(r, "broker_power_loss")}) == 9
    c = run(scene, "site-power-cut", compare=True)
    assert c["lost_acked_records"] == []
    assert "broker_flush" in kinds(c)


def test_min_isr_refuses_writes_during_a_network_split(scene):
    beat = "min-isr-chooses-consistency"
    r = run(scene, beat)
    shrink = steps(r, "leader_shrink_isr")[0]
    assert shrink["t_ms"] == 45_000 and "{1}" in shrink["text"]
    assert steps(r, "leader_expire_produce")[0]["t_ms"] < shrink["t_ms"], "b times out first"
    refused = steps(r, "leader_reject_not_enough_replicas")
    assert refused and all(s["t_ms"] > shrink["t_ms"] for s in refused)
    assert steps(r, "leader_hold_high_watermark")
    heal = steps(r, "network_heal")[0]
    for rec in ("b", "c"):
        p = produce(r, rec)
        assert p["outcome"] == "acked" and p["done_ms"] > heal["t_ms"]
    assert r["lost_acked_records"] == [] and r["final"]["partition"]["isr"] == [1, 2, 3]
    # min.insync.replicas=1: acknowledged during the split, on broker 1 alone
    c = run(scene, beat, compare=True)
    for rec in ("b", "c"):
        p = produce(c, rec)
        assert p["outcome"] == "acked" and p["done_ms"] < heal["t_ms"]
    assert "leader_reject_not_enough_replicas" not in kinds(c)
    during = run(scene, beat, compare=True, upto=action_index(scene, beat, do="heal", broker=1))
    assert records(during, 1) == ["a", "b", "c"]
    assert records(during, 2) == ["a"] and records(during, 3) == ["a"]


def test_unclean_election_trades_an_acked_write_for_availability(scene):
    beat = "unclean-chooses-availability"
    r = run(scene, beat)
    elect = steps(r, "controller_elect_unclean")
    assert elect and "B3" in elect[0]["text"]
    assert r["final"]["partition"]["leader"] == 3 and r["final"]["partition"]["online"]
    assert r["lost_acked_records"] == ["b"]
    c_write = produce(r, "c")
    assert c_write["outcome"] != "acked" and c_write["error"] == "NOT_ENOUGH_REPLICAS"
    off = run(scene, beat, compare=True)
    assert not off["final"]["partition"]["online"] and off["final"]["partition"]["leader"] == -1
    assert off["lost_acked_records"] == []
    assert "b" in records(off, 1) and "b" in records(off, 2)


def test_live_answers_read_the_simulation(scene):
    from app.qa import live_answer

    by_id = {q.id: q for q in scene.qa}
    text = live_answer(by_id["is-rf3-enough"], run(scene, "rack-power-cut"))
    assert "no broker.rack set" in text
    text = live_answer(by_id["is-rf3-enough"], run(scene, "rack-power-cut", compare=True))
    assert "racks a/b/c" in text and "different racks" in text
    assert "availability" in live_answer(by_id["kafka-cap"], run(scene, "unclean-chooses-availability"))
    assert "consistency" in live_answer(
        by_id["kafka-cap"], run(scene, "unclean-chooses-availability", compare=True))
