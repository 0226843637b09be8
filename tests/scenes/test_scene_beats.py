"""Every beat of scene 05 runs on the real engine and shows what its narration claims. (That every
beat validates, replays without invariant violations and deterministically, as every scene's
must, is in test_every_built_scene.py.)

If one of these fails because the engine disagrees with kafka-semantics.md, the engine is wrong:
do not bend the narration or the assertion to make it pass.
"""

from __future__ import annotations

import pytest
from scene_helpers import action_index, engine, kinds, logs, produce, run

from scenes import Scene, load_scene


@pytest.fixture(scope="module")
def s05() -> Scene:
    return load_scene("05")


def test_beat1_standard_setup_loses_nothing_and_keeps_writing(s05):
    r = run(s05, "standard-setup")
    assert r["lost_acked_records"] == []
    assert all(p["outcome"] == "acked" for p in r["produce"])
    # c is written after the leader crashed, and succeeds
    crash_at = action_index(s05, "standard-setup", do="crash")
    assert crash_at < action_index(s05, "standard-setup", records=["c"])
    assert produce(r, "c")["outcome"] == "acked"
    part = r["final"]["partition"]
    assert part["leader"] == 2 and part["leader_epoch"] == 1 and part["isr"] == [2, 3]
    assert r["visible_records"] == ["a", "b", "c"]
    elect = next(s for s in r["steps"] if s["kind"] == "controller_elect_leader")
    crashed = next(s for s in r["steps"] if s["kind"] == "broker_crash")
    assert 7000 <= elect["t_ms"] - crashed["t_ms"] <= 9000  # fenced 7-9 s after the crash


def test_beat2_acks_all_means_one_copy_then_offline(s05):
    beat = "acks-all-means-one"
    crash_leader = action_index(s05, beat, do="crash", broker=1)
    before = run(s05, beat, upto=crash_leader)
    # b and c were acknowledged with acks=all while the ISR was the leader alone
    assert before["final"]["partition"]["isr"] == [1]
    for rec in ("b", "c"):
        p = produce(before, rec)
        assert p["outcome"] == "acked" and p["acks"] == "all"
        assert [b for b, log in logs(before).items() if rec in log] == [1]
    assert before["lost_acked_records"] == []
    # the leader is lost: with unclean off (as narrated) the partition is offline, nothing "lost" yet
    r = run(s05, beat)
    part = r["final"]["partition"]
    assert part["leader"] == -1 and part["online"] is False
    assert r["lost_acked_records"] == []
    assert r["final"]["brokers"]["2"]["alive"] and r["final"]["brokers"]["3"]["alive"]
    assert "controller_partition_offline" in kinds(r)
    # the narration's "switch on unclean election and replay": b and c are lost at once
    u = run(s05, beat, {"unclean.leader.election.enable": True})
    assert sorted(u["lost_acked_records"]) == ["b", "c"]
    assert u["final"]["partition"]["leader"] == 2
    assert "controller_elect_unclean" in kinds(u)


def test_beat3_min_isr_refuses_before_append_and_freezes_the_hw(s05):
    beat = "min-isr-refuses"
    r = run(s05, beat)
    x = produce(r, "x")
    assert x["outcome"] == "failed" and x["error"] == "NOT_ENOUGH_REPLICAS"
    assert all("x" not in log for log in logs(r).values())  # refused before the append: in no log
    assert not any(s["kind"] == "leader_append" and "x" in s.get("records", []) for s in r["steps"])
    assert "x" not in r["acked_records"]
    refusals = [s for s in r["steps"] if s["kind"] == "leader_reject_not_enough_replicas"]
    assert refusals and "nothing appended" in refusals[0]["text"]
    assert "producer_give_up" in kinds(r)
    # z, acks=1, is acknowledged but invisible while the ISR is below the minimum
    restart = action_index(s05, beat, do="restart")
    frozen = run(s05, beat, upto=restart)
    z = produce(frozen, "z")
    assert z["outcome"] == "acked" and z["acks"] in (1, "1")
    part = frozen["final"]["partition"]
    assert part["under_min_isr"] is True and part["isr"] == [1]
    assert "z" in logs(frozen)[1] and "z" not in frozen["visible_records"]
    assert "leader_hold_high_watermark" in kinds(frozen)
    # broker 2 returns: ISR back to 2 members, HW moves, z readable
    part = r["final"]["partition"]
    assert part["isr"] == [1, 2] and part["under_min_isr"] is False
    assert "z" in r["visible_records"]
    assert r["lost_acked_records"] == []


def test_beat4_rf1_cap_41_accepts_36_refuses(s05):
    beat = "rf1-cap"
    r = run(s05, beat)
    assert r["final"]["partition"]["replicas"] == [1]
    assert r["final"]["partition"]["effective_min_isr"] == 1
    assert all(p["outcome"] == "acked" for p in r["produce"])
    old = run(s05, beat, {"kafka_version": "3.6"})
    assert [(p["outcome"], p["error"]) for p in old["produce"]] == [("failed", "NOT_ENOUGH_REPLICAS")]
    assert all(log == [] for log in logs(old).values())


def test_beat5_unclean_election_loses_acked_records(s05):
    r = run(s05, "unclean-election")
    assert sorted(r["lost_acked_records"]) == ["b", "c"]
    assert produce(r, "b")["outcome"] == "acked" and produce(r, "c")["outcome"] == "acked"
    restart = action_index(s05, "unclean-election", do="restart")
    elected = run(s05, "unclean-election", upto=restart)
    part = elected["final"]["partition"]
    assert part["leader"] == 3 and part["recovery_state"] == "RECOVERING" and part["isr"] == [3]
    assert sorted(elected["lost_acked_records"]) == ["b", "c"]
    assert "controller_elect_unclean" in kinds(r)
    assert "leader_shrink_isr" in kinds(r)
    # brokers 1 and 2 come back and truncate b and c themselves (diverging epoch)
    for b in ("1", "2"):
        gone = r["final"]["brokers"][b]["truncated"]
        assert sorted(e["record"] for e in gone) == ["b", "c"]
        assert {e["why"] for e in gone} == {"diverging_epoch"}
    assert all(log == ["a"] for b, log in logs(r).items() if b in (1, 2, 3))
    assert r["final"]["partition"]["leader"] == 3
    # and with unclean election off the same faults leave it offline, losing nothing
    safe = run(s05, "unclean-election", {"unclean.leader.election.enable": False}, upto=restart)
    assert safe["lost_acked_records"] == [] and safe["final"]["partition"]["online"] is False
    safe_full = run(s05, "unclean-election", {"unclean.leader.election.enable": False})
    assert safe_full["lost_acked_records"] == []


def test_beat6_elr_recovers_without_loss_and_the_leader_comes_from_the_elr(s05):
    beat = "elr-recovers"
    r = run(s05, beat)
    assert r["lost_acked_records"] == []
    assert all(p["outcome"] == "acked" for p in r["produce"])
    assert r["visible_records"] == ["a", "b", "c", "d"]
    # find the election after the partition went offline and look at the state just before it
    offline_i = next(s["i"] for s in r["steps"] if s["kind"] == "controller_partition_offline")
    elect = next(s for s in r["steps"] if s["kind"] == "controller_elect_leader" and s["i"] > offline_i)
    # the election and its ELR update are one partition change: look just after the unfencing
    unfence_i = max(s["i"] for s in r["steps"]
                    if s["kind"] == "controller_unfence_broker" and s["i"] < elect["i"])
    assert not any(s["kind"].startswith("controller_elect") for s in r["steps"]
                   if offline_i < s["i"] < elect["i"])
    before = engine.simulate(s05.scenario_for(beat), at_step=unfence_i)["view"]["partition"]
    after = engine.simulate(s05.scenario_for(beat), at_step=elect["i"])["view"]["partition"]
    assert before["isr"] == [] and before["leader"] == -1 and 1 in before["elr"]
    assert after["leader"] == 1 and after["isr"] == [1] and after["recovery_state"] == "RECOVERED"
    assert "controller_elect_unclean" not in kinds(r)
    assert "controller_elect_last_known_leader" not in kinds(r)
    # with ISR {1} below the minimum, d is refused until broker 3 rejoins, then a retry succeeds
    d = produce(r, "d")
    assert d["outcome"] == "acked" and d["attempts"] > 1
    refused = [s for s in r["steps"] if s["kind"] == "leader_reject_not_enough_replicas"]
    rejoined = next(s for s in r["steps"] if s["kind"] == "leader_commit_isr" and s["i"] > elect["i"])
    assert refused and all(s["t_ms"] < rejoined["t_ms"] for s in refused)
    # without ELR the same clean shutdowns leave the partition offline until broker 2 returns
    no_elr = run(s05, beat, {"eligible.leader.replicas.version": 0})
    assert no_elr["lost_acked_records"] == []
    assert no_elr["final"]["partition"]["online"] is False
