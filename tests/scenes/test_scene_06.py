"""Scene 06 (leader epochs): the knobs and beats are the agreed ones, and every beat replays on the
real engine showing what its narration claims, under the historic rules it names and, through its
comparison run, under Kafka 4.1. The checks every scene passes (every knob value reaches the
engine, every beat replays cleanly, the page renders) are in test_every_built_scene.py.

If one of these fails because the engine disagrees with kafka-semantics.md, the engine is wrong:
do not bend the narration or the assertion to make it pass.
"""

from __future__ import annotations

import pytest
from scene_helpers import action_index, cache, kinds, records, rows, run, steps, truncated

from scenes import Scene, load_scene

SCENE = "06"
BEATS = ["hw-truncation-loses", "double-crash-diverges", "diverging-epoch", "fast-double-failover"]


@pytest.fixture(scope="module")
def scene() -> Scene:
    return load_scene(SCENE)


# --------------------------------------------------------------------------------------------
# the data


def test_header_panels_and_beats(scene):
    assert (scene.id, scene.slug) == ("06", "leader-epoch")
    assert scene.promise and scene.previously and 10 <= scene.minutes <= 25
    assert scene.panels == ["epoch_cache"]
    assert [b.id for b in scene.beats] == BEATS


def test_historic_beats_are_labelled_and_compared_with_today(scene):
    for beat in scene.beats:
        version = scene.knob_values(beat)["kafka_version"]
        if version in ("0.10", "1.1"):
            assert beat.label and beat.label.startswith("History:"), beat.id
            assert ("KIP-101" in beat.label) == (version == "0.10")
            assert ("KIP-279" in beat.label) == (version == "1.1")
            assert beat.compare is not None and beat.compare.patch == {"kafka_version": "4.1"}
            assert "4.1" in beat.compare.label
        else:
            assert beat.label is None and beat.compare is None


def test_no_vector_clock_claim(scene):
    """A leader epoch is one number per partition; the scene may only say it is NOT a vector clock."""
    texts = [b.narration for b in scene.beats] + [q.answer for q in scene.qa]
    texts += [line.text for block in scene.pseudocode for line in block.lines]
    mentions = [t for t in texts if "vector clock" in t.lower()]
    assert mentions, "the scene should correct the vector-clock misconception"
    for text in mentions:
        assert "not a vector clock" in text or text.startswith("No."), text


def test_knobs_are_real_keys(scene):
    keys = [k.key for k in scene.knobs]
    assert keys == ["kafka_version", "replication.factor", "min.insync.replicas", "acks",
                    "unclean.leader.election.enable"]
    assert set(scene.knob("kafka_version").choices) >= {"0.10", "1.1", "3.6", "4.1"}


def test_pseudocode_highlights_both_truncation_rules_and_the_epoch_bump(scene):
    shown = {k for block in scene.pseudocode for line in block.lines for k in line.kinds}
    for k in ("follower_truncate_to_hw", "leader_diverging_epoch", "follower_truncate", "leader_become"):
        assert k in shown, k


# --------------------------------------------------------------------------------------------
# every beat on the engine


def test_s8_hw_truncation_loses_m1_under_0_10_only(scene):
    beat = "hw-truncation-loses"
    restart = action_index(scene, beat, do="restart", broker=2)
    before = run(scene, beat, upto=restart)  # m1 acked, B2 crashed, HW not yet learned
    assert [(p["records"], p["outcome"]) for p in before["produce"]] == [(["m0"], "acked"), (["m1"], "acked")]
    assert before["final"]["brokers"]["1"]["hw"] == 2
    assert before["final"]["brokers"]["2"]["hw"] == 1, "§3.3: the follower learns the HW one fetch late"
    assert records(before, 2) == ["m0", "m1"]

    r = run(scene, beat)
    assert r["profile"]["kafka_version"] == "0.10"
    assert truncated(r, 2, "high_watermark") == ["m1"], "S8.2 historic: B truncates to its own HW on restart"
    elect = steps(r, "controller_elect_leader")
    assert elect and "B2" in elect[0]["text"]
    assert r["final"]["partition"]["leader"] == 2
    assert r["lost_acked_records"] == ["m1"], "S8.3 historic: committed m1 is lost"
    assert records(r, 1) == records(r, 2) == ["m0"], "S8.3: A, as follower, also ends at B's LEO"
    assert truncated(r, 1) == ["m1"]

    today = run(scene, beat, compare=True)
    assert truncated(today, 2) == [] and truncated(today, 1) == [], "S8.2 current: B keeps m1"
    assert today["lost_acked_records"] == []
    assert records(today, 1) == records(today, 2) == ["m0", "m1"]
    assert "follower_truncate_to_hw" not in kinds(today)
    # the same replay through the knob gives the same run as the comparison
    assert run(scene, beat, {"kafka_version": "4.1"})["final"] == today["final"]


def test_s9_double_crash_diverges_under_0_10_and_agrees_under_4_1(scene):
    beat = "double-crash-diverges"
    r = run(scene, beat)
    # m0 reached B2's disk by writeback; m1 reached only B1's
    assert truncated(r, 2, "power_loss") == ["m1"]
    assert truncated(r, 1) == []
    m2 = next(p for p in r["produce"] if p["records"] == ["m2"])
    assert m2["outcome"] == "acked" and m2["offsets"] == [1], "S9.3: B writes m2 at offset 1"
    assert r["final"]["partition"]["leader"] == 2
    assert r["lost_acked_records"] == ["m1"], "S9.4: m1 was on one broker, which lost the election"
    # historic: permanent divergence at offset 1, and B1 even rejoined the ISR
    assert records(r, 1)[:2] == ["m0", "m1"] and records(r, 2)[:2] == ["m0", "m2"]
    assert sorted(r["final"]["partition"]["isr"]) == [1, 2]
    assert "leader_diverging_epoch" not in kinds(r)

    today = run(scene, beat, compare=True)
    assert truncated(today, 1, "diverging_epoch") == ["m1"], "S9.4 current: DivergingEpoch(0, 1)"
    div = steps(today, "leader_diverging_epoch")
    assert div and "DivergingEpoch(0, 1)" in div[0]["text"]
    assert rows(today, 1) == rows(today, 2)
    assert records(today, 1) == ["m0", "m2"]
    assert cache(today, 1) == cache(today, 2)
    assert today["lost_acked_records"] == ["m1"]


def test_diverging_epoch_walkthrough(scene):
    beat = "diverging-epoch"
    restart = action_index(scene, beat, do="restart", broker=1)
    before = run(scene, beat, upto=restart)
    assert rows(before, 1) == [(0, 0, "a"), (1, 0, "b"), (2, 0, "x"), (3, 0, "y")]
    assert rows(before, 2) == [(0, 0, "a"), (1, 0, "b"), (2, 1, "p")]
    assert cache(before, 1) == [[0, 0]] and cache(before, 2) == [[0, 0], [1, 2]]
    assert before["final"]["partition"]["leader"] == 2 and before["final"]["partition"]["leader_epoch"] == 1

    r = run(scene, beat)
    ks = [s["kind"] for s in r["steps"] if s["t_ms"] >= steps(r, "broker_restart")[0]["t_ms"]]
    assert ks.index("leader_diverging_epoch") < ks.index("follower_truncate") < ks.index("follower_fetch")
    div = steps(r, "leader_diverging_epoch")[0]
    assert "offset 4" in div["text"] and "last epoch 0" in div["text"]
    assert "DivergingEpoch(0, 2)" in div["text"]
    assert "offset 2" in steps(r, "follower_truncate")[0]["text"]
    assert truncated(r, 1, "diverging_epoch") == ["x", "y"]
    for b in (1, 2, 3):
        assert rows(r, b) == [(0, 0, "a"), (1, 0, "b"), (2, 1, "p")]
        assert cache(r, b) == [[0, 0], [1, 2]]
    assert r["final"]["partition"]["isr"] == [1, 2, 3]
    assert sorted(r["lost_acked_records"]) == ["x", "y"], "acks=1 records only the old leader had (S11)"
    assert all(p["acks"] in (1, "1") for p in r["produce"] if p["records"][0] in ("x", "y"))


def test_s10_fast_double_failover_diverges_under_1_1_and_truncates_c_under_4_1(scene):
    beat = "fast-double-failover"
    r = run(scene, beat)
    assert r["profile"]["kafka_version"] == "1.1"
    assert records(r, 2)[1] == "c" and records(r, 3)[1] == "b", "S10.4 pre-KIP-279: divergence"
    assert truncated(r, 2) == []
    assert r["lost_acked_records"] == ["c"]

    today = run(scene, beat, compare=True)
    assert today["final"]["partition"]["leader"] == 3 and today["final"]["partition"]["leader_epoch"] == 2
    div = steps(today, "leader_diverging_epoch")
    assert div and "DivergingEpoch(0, 2)" in div[0]["text"], "S10.4: the largest epoch <= 1 is 0"
    assert truncated(today, 2, "diverging_epoch") == ["c"]
    assert "offset 1" in steps(today, "follower_truncate")[0]["text"], "S10.4: min(2, own end of e0 = 1)"
    for b in (2, 3):
        assert rows(today, b) == [(0, 0, "a"), (1, 0, "b"), (2, 2, "d")]
    assert cache(today, 2) == cache(today, 3) == [[0, 0], [2, 2]]
    assert today["lost_acked_records"] == ["c"], "S10.5: c (acks=1 on 2) is the only acked loss"
    # 3.6 follows today's rule too
    assert truncated(run(scene, beat, {"kafka_version": "3.6"}), 2, "diverging_epoch") == ["c"]


def test_live_answers_read_the_simulation(scene):
    from app.qa import live_answer

    by_id = {q.id: q for q in scene.qa}
    r = run(scene, "double-crash-diverges")
    text = live_answer(by_id["what-is-a-leader-epoch"], r)
    assert "first disagree at offset 1" in text and "0.10" in text
    assert "m1" in live_answer(by_id["why-hw-truncation-lost-acked"], run(scene, "hw-truncation-loses"))
    agree = live_answer(by_id["how-diverging-epoch-works"], run(scene, "diverging-epoch"))
    assert "epoch 1 from offset 2" in agree and "disagree" not in agree
