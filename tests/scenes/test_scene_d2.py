"""Deep dive D2 (acks=2): every beat replays on the real engine showing what its narration claims:
acks=2 losing a write under the 0.8 rules, error 21 today, and the KIP-926 proposal (labelled)
losing the same way. The checks every scene passes are in test_every_built_scene.py.

If one of these fails because the engine disagrees with kafka-semantics.md, the engine is wrong:
do not bend the narration or the assertion to make it pass.
"""

from __future__ import annotations

import pytest
from scene_helpers import action_index, kinds, records, run, steps, truncated

from scenes import Scene, load_scene

SCENE = "d2"
BEATS = ["acks-2-loses", "error-21-today", "kip-926-proposal"]


@pytest.fixture(scope="module")
def scene() -> Scene:
    return load_scene(SCENE)


def test_header_labels_and_knobs(scene):
    assert (scene.id, scene.slug) == ("d2", "acks-2-is-gone")
    assert [b.id for b in scene.beats] == BEATS
    assert scene.beat("acks-2-loses").label.startswith("History:")
    assert "KIP-1" in scene.beat("acks-2-loses").label
    proposal = scene.beat("kip-926-proposal").label
    assert proposal.startswith("Proposal, not Kafka") and "KIP-926" in proposal
    assert scene.beat("error-21-today").label is None
    acks = scene.knob("acks")
    assert acks.target == "producer.acks" and "min.insync.replicas" in acks.choices
    assert "proposal" in acks.label.lower() and "not Kafka" in acks.label
    assert scene.knob("kafka_version").choices[0] == "0.8"


def test_acks_2_under_0_8_acknowledges_then_loses_b(scene):
    beat = "acks-2-loses"
    crash = action_index(scene, beat, do="crash", broker=1)
    before = run(scene, beat, upto=crash)
    b = next(p for p in before["produce"] if p["records"] == ["b"])
    assert b["outcome"] == "acked" and b["acks"] in (2, "2")
    assert records(before, 1)[-1] == "b" and records(before, 3)[-1] == "b"
    assert "b" not in records(before, 2), "the slow follower has not fetched b"
    assert 2 in before["final"]["partition"]["isr"], "0.8: slow but fetching, so still in the ISR"
    assert any("2 replicas have offset 1" in s["text"] for s in steps(before, "leader_ack_count"))

    r = run(scene, beat)
    assert r["profile"]["kafka_version"] == "0.8"
    elect = steps(r, "controller_elect_leader")[0]
    assert "B2" in elect["text"] and "ISR" in elect["text"]
    assert r["final"]["partition"]["leader"] == 2
    assert r["lost_acked_records"] == ["b"]
    assert truncated(r, 3) == ["b"] and truncated(r, 1) == ["b"]
    assert all(records(r, x) == ["a"] for x in (1, 2, 3))


def test_acks_2_today_is_refused_with_error_21(scene):
    today = run(scene, "acks-2-loses", compare=True)
    assert [(p["outcome"], p["error"], p["attempts"]) for p in today["produce"]] == [
        ("failed", "INVALID_REQUIRED_ACKS", 1)] * 2
    assert all(records(today, x) == [] for x in (1, 2, 3)), "§2.1: nothing is appended"
    assert today["acked_records"] == [] and today["lost_acked_records"] == []
    assert len(steps(today, "leader_reject_invalid_acks")) == 2
    assert "leader_append" not in kinds(today)
    for version in ("0.10", "3.6"):
        old = run(scene, "acks-2-loses", {"kafka_version": version})
        assert {p["error"] for p in old["produce"]} == {"INVALID_REQUIRED_ACKS"}


def test_error_21_then_acks_all_loses_nothing(scene):
    r = run(scene, "error-21-today")
    a, b, c = r["produce"]
    assert (a["outcome"], a["error"], a["attempts"]) == ("failed", "INVALID_REQUIRED_ACKS", 1)
    assert "a" not in {rec for x in (1, 2, 3) for rec in records(r, x)}
    assert b["outcome"] == "acked" and b["attempts"] == 1
    # c was parked waiting for the slow broker 2 when the leader crashed: never acked there
    assert c["outcome"] == "acked" and c["attempts"] == 2
    assert r["final"]["partition"]["leader"] == 2
    assert truncated(r, 3, "diverging_epoch") == ["c"], "the unacknowledged copy of c goes"
    assert r["lost_acked_records"] == []
    assert all(records(r, x) == ["b", "c"] for x in (1, 2, 3))
    assert "producer_give_up" in kinds(r) and "producer_retry" in kinds(r)


def test_kip_926_proposal_loses_b_and_acks_all_does_not(scene):
    beat = "kip-926-proposal"
    r = run(scene, beat)
    assert r["proposals"] == ["KIP-926"]
    b = next(p for p in r["produce"] if p["records"] == ["b"])
    assert b["outcome"] == "acked" and b["attempts"] == 1
    assert r["final"]["partition"]["leader"] == 2
    assert r["lost_acked_records"] == ["b"]
    assert truncated(r, 3, "diverging_epoch") == ["b"]

    kafka = run(scene, beat, compare=True)
    assert kafka["proposals"] == []
    b = next(p for p in kafka["produce"] if p["records"] == ["b"])
    assert b["outcome"] == "acked" and b["attempts"] > 1, "acks=all waited for broker 2; b was retried"
    assert kafka["lost_acked_records"] == []
    # the knob says the same: acks=all instead of the proposal
    assert run(scene, beat, {"acks": "all"})["lost_acked_records"] == []


def test_live_answers_read_the_simulation(scene):
    from app.qa import live_answer

    by_id = {q.id: q for q in scene.qa}
    assert "INVALID_REQUIRED_ACKS" in live_answer(by_id["invalid-required-acks-21"],
                                                  run(scene, "acks-2-loses", compare=True))
    copies = live_answer(by_id["why-acks-2-lost-data"], run(scene, "acks-2-loses"))
    assert "b is nowhere (lost)" in copies
