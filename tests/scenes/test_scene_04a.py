"""Scene 04a (the controller and the metadata log): the knobs and beats are the agreed ones, and
every beat shows on the real engine what its narration claims, down to the sequence of metadata
records. The checks every scene passes are in test_every_built_scene.py.

If one of these fails because the engine disagrees with kafka-eos-kraft.md §D or
kafka-semantics.md, the engine is wrong: do not bend the narration or the assertion to make it pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from scene_helpers import ask_live, engine, first, kinds, produce, run

from scenes import Scene, load_scene

BEATS = ["follower-fenced", "leader-fenced", "preferred-leader", "controlled-shutdown", "last-replica"]
BOOTSTRAP_END = 13  # FeatureLevel, 5 RegisterBroker, 5 unfence, Topic, Partition


@pytest.fixture(scope="module")
def s04a() -> Scene:
    return load_scene("04a")


def mlog(result: dict[str, Any]) -> list[dict[str, Any]]:
    return list(result["final"]["controller"]["metadata_log"])


def after_bootstrap(result: dict[str, Any]) -> list[dict[str, Any]]:
    log = mlog(result)
    assert log[0]["offset"] == 0, "the whole log fits in the snapshot for these beats"
    return [r for r in log if r["offset"] >= BOOTSTRAP_END]


def shape(rec: dict[str, Any]) -> tuple:
    """A record without offsets and times: its type and the Kafka fields that say what changed."""
    t = rec["type"]
    if t == "PartitionChangeRecord":
        return (t, rec.get("leader", "-"), tuple(rec["isr"]) if "isr" in rec else "-")
    if t == "BrokerRegistrationChangeRecord":
        return (t, rec["brokerId"], rec.get("fenced", 0), rec.get("inControlledShutdown", 0))
    if t == "RegisterBrokerRecord":
        return (t, rec["brokerId"], rec["fenced"])
    return (t,)


def where(result: dict[str, Any]) -> tuple:
    """(leader, leader epoch, partition epoch, ISR) at the end of a run."""
    part = result["final"]["partition"]
    return part["leader"], part["leader_epoch"], part["partition_epoch"], part["isr"]


def epochs(rec: dict[str, Any]) -> tuple[int, int]:
    return rec["replayed"]["leaderEpoch"], rec["replayed"]["partitionEpoch"]


# --------------------------------------------------------------------------------------------
# data


def test_header_panels_and_knobs(s04a):
    assert (s04a.id, s04a.slug) == ("04a", "controller")
    assert s04a.title == "The controller and the metadata log"
    assert s04a.promise and s04a.previously and s04a.minutes == 12
    assert s04a.panels == ["metadata_log"]
    knobs = {k.key: k for k in s04a.knobs}
    assert list(knobs) == ["broker.session.timeout.ms", "broker.heartbeat.interval.ms", "kafka_version",
                           "replication.factor"]
    assert knobs["broker.session.timeout.ms"].target == "timing.broker.session.timeout.ms"
    assert knobs["broker.session.timeout.ms"].default == 9000
    assert knobs["broker.heartbeat.interval.ms"].target == "timing.broker.heartbeat.interval.ms"
    assert knobs["broker.heartbeat.interval.ms"].default == 2000
    # any heartbeat the knob allows is shorter than any session timeout it allows
    assert knobs["broker.heartbeat.interval.ms"].max < knobs["broker.session.timeout.ms"].min
    assert knobs["kafka_version"].choices == ["3.6", "4.1"]
    assert knobs["kafka_version"].target == "kafka_version"
    assert knobs["replication.factor"].target == "topic.replication.factor"


def test_the_knob_extremes_together_validate_on_every_beat(s04a):
    # the extremes together
    for beat in s04a.beats:
        engine.validate(s04a.scenario_for(beat, {"broker.session.timeout.ms": 4000,
                                                 "broker.heartbeat.interval.ms": 3500}))


def test_beats_in_order_without_a_comparison(s04a):
    assert [b.id for b in s04a.beats] == BEATS
    for beat in s04a.beats:
        assert beat.compare is None and beat.label is None


def test_pseudocode_shows_the_epochs_of_the_metadata_log(s04a):
    text = "\n".join(line.text for b in s04a.pseudocode for line in b.lines)
    assert "no epoch fields" in text and "p.leader_epoch += 1  # even to -1" in text
    assert "the broker epoch is a log offset" in text and "unfenced, but in no ISR" in text


def test_challenge_can_be_won_under_both_versions(s04a):
    actions = [{"do": "produce", "records": ["a"]}, {"do": "settle"},
               {"do": "crash", "broker": 2}, {"do": "crash", "broker": 3},
               {"do": "produce", "records": ["x"]}, {"do": "settle"},
               {"do": "power_loss", "brokers": [1]}, {"do": "advance", "ms": 2000},
               {"do": "restart", "broker": 1}, {"do": "advance", "ms": 12000}]
    for version in ("3.6", "4.1"):
        r = engine.simulate(s04a.scenario_for(s04a.beats[0], {"kafka_version": version}, actions=actions))
        assert "x" in r["lost_acked_records"], version


# --------------------------------------------------------------------------------------------
# every beat on the engine


def test_every_beat_replays_cleanly_under_both_versions_on_kraft(s04a):
    """The version-independent checks of test_every_built_scene.py, under 3.6 as well as 4.1, and
    what every beat of this scene shares: KRaft, no proposal, no acknowledged write lost."""
    for beat in s04a.beats:
        for version in ("4.1", "3.6"):
            sc = s04a.scenario_for(beat, {"kafka_version": version})
            r = run(s04a, beat.id, {"kafka_version": version})
            assert r.get("violations", []) == [], (beat.id, version, r.get("violations"))
            assert r["proposals"] == [] and r["final"]["controller"]["kraft"] is True
            missing = set(beat.focus_step_kinds) - kinds(r)
            assert not missing, (beat.id, version, missing)
            assert engine.simulate(sc, steps=True) == engine.simulate(sc, steps=True), beat.id
            assert r["lost_acked_records"] == []


def test_every_beat_replays_under_other_knob_values(s04a):
    for beat in s04a.beats:
        for over in ({"broker.session.timeout.ms": 4000}, {"broker.session.timeout.ms": 30000},
                     {"broker.heartbeat.interval.ms": 500}, {"broker.heartbeat.interval.ms": 3500},
                     {"replication.factor": 1}, {"replication.factor": 5}):
            r = engine.simulate(s04a.scenario_for(beat, over), check_invariants=True)
            assert r.get("violations", []) == [], (beat.id, over, r.get("violations"))


def test_bootstrap_records(s04a):
    log = mlog(run(s04a, "follower-fenced"))[:BOOTSTRAP_END]
    types = [r["type"] for r in log]
    assert types == (["FeatureLevelRecord"] + ["RegisterBrokerRecord"] * 5
                     + ["BrokerRegistrationChangeRecord"] * 5 + ["TopicRecord", "PartitionRecord"])
    assert all(r["fenced"] is True for r in log if r["type"] == "RegisterBrokerRecord")
    assert all(r["fenced"] == -1 for r in log if r["type"] == "BrokerRegistrationChangeRecord")
    part = log[-1]
    assert (part["replicas"], part["isr"], part["leader"], part["leaderEpoch"], part["partitionEpoch"]) == (
        [1, 2, 3], [1, 2, 3], 1, 0, 0)


def test_beat1_follower_fenced_shrinks_only_the_partition_epoch(s04a):
    beat = "follower-fenced"
    r = run(s04a, beat)
    crash = first(r, "broker_crash", broker=3)
    fence = first(r, "controller_fence_broker", broker=3)
    assert 7000 <= fence["t_ms"] - crash["t_ms"] <= 9000
    b = produce(r, "b")
    assert b["outcome"] == "acked" and fence["t_ms"] < b["done_ms"] <= fence["t_ms"] + 3
    recs = after_bootstrap(r)
    assert [shape(x) for x in recs] == [
        ("PartitionChangeRecord", "-", (1, 2)),  # ISR change first, no leader field
        ("BrokerRegistrationChangeRecord", 3, 1, 0),  # then the fence
        ("RegisterBrokerRecord", 3, True),  # restart: registered fenced
        ("BrokerRegistrationChangeRecord", 3, -1, 0),  # unfenced at a later heartbeat
        ("PartitionChangeRecord", "-", (1, 2, 3)),  # the leader's AlterPartition, committed
    ]
    assert [epochs(x) for x in recs if x["type"] == "PartitionChangeRecord"] == [(0, 1), (0, 2)]
    register = recs[2]
    assert register["brokerEpoch"] == register["offset"] and recs[3]["brokerEpoch"] == register["offset"]
    assert recs[0]["t_ms"] == recs[1]["t_ms"] == fence["t_ms"]
    # unfencing does not put broker 3 back in the ISR: the leader's AlterPartition does, later
    unfence = first(r, "controller_unfence_broker")
    expand = first(r, "leader_expand_isr", after=unfence["i"])
    assert recs[3]["t_ms"] == unfence["t_ms"] < expand["t_ms"] < recs[4]["t_ms"]
    assert "PartitionChangeRecord" not in [x["type"] for x in recs if x["t_ms"] == unfence["t_ms"]]
    assert where(r) == (1, 0, 2, [1, 2, 3])
    assert "controller_alter_partition" in kinds(r) and "leader_commit_isr" in kinds(r)
    # a longer session timeout delays the fence and the write by the same amount
    slow = run(s04a, beat, {"broker.session.timeout.ms": 20000})
    sf = first(slow, "controller_fence_broker", broker=3)
    assert 18000 <= sf["t_ms"] - first(slow, "broker_crash")["t_ms"] <= 20000
    assert produce(slow, "b")["done_ms"] > sf["t_ms"]


def test_beat2_leader_fenced_elects_the_first_isr_member_and_bumps_both_epochs(s04a):
    r = run(s04a, "leader-fenced")
    crash = first(r, "broker_crash", broker=1)
    fence = first(r, "controller_fence_broker", broker=1)
    assert 7000 <= fence["t_ms"] - crash["t_ms"] <= 9000
    elect = first(r, "controller_elect_leader")
    assert elect["t_ms"] == fence["t_ms"] and "B2" in elect["text"]
    recs = after_bootstrap(r)
    assert [shape(x) for x in recs] == [
        ("PartitionChangeRecord", 2, (2, 3)),  # leader and ISR in one record, before the fence record
        ("BrokerRegistrationChangeRecord", 1, 1, 0),
    ]
    assert epochs(recs[0]) == (1, 1)
    assert "leaderEpoch" not in recs[0] and "partitionEpoch" not in recs[0]  # computed on replay
    b = produce(r, "b")
    assert b["outcome"] == "acked" and b["done_ms"] > fence["t_ms"]
    assert where(r) == (2, 1, 1, [2, 3])
    assert r["final"]["brokers"]["1"]["fenced"] is True
    # the gap without a leader follows broker.session.timeout.ms
    longer = run(s04a, "leader-fenced", {"broker.session.timeout.ms": 30000})
    lf = first(longer, "controller_fence_broker", broker=1)
    assert 28000 <= lf["t_ms"] - first(longer, "broker_crash")["t_ms"] <= 30000


def test_beat3_preferred_leader_comes_back_with_one_more_leader_epoch(s04a):
    r = run(s04a, "preferred-leader")
    recs = after_bootstrap(r)
    assert [shape(x) for x in recs] == [
        ("PartitionChangeRecord", 2, (2, 3)),
        ("BrokerRegistrationChangeRecord", 1, 1, 0),
        ("RegisterBrokerRecord", 1, True),
        ("BrokerRegistrationChangeRecord", 1, -1, 0),
        ("PartitionChangeRecord", "-", (1, 2, 3)),
        ("PartitionChangeRecord", 1, "-"),  # the preferred election sets only the leader
    ]
    assert [epochs(x) for x in recs if x["type"] == "PartitionChangeRecord"] == [(1, 1), (1, 2), (2, 3)]
    assert recs[2]["brokerEpoch"] == recs[2]["offset"] > 1  # a new, larger broker epoch
    assert "controller_admin_election" in kinds(r) or "controller_elect_preferred" in kinds(r)
    c = produce(r, "c")
    assert c["outcome"] == "acked" and c["attempts"] == 2
    refused = first(r, "leader_reject_not_leader")
    assert refused["broker"] == 2
    assert where(r) == (1, 2, 3, [1, 2, 3])
    assert r["visible_records"] == ["a", "b", "c"]


def test_beat4_controlled_shutdown_moves_leadership_in_milliseconds(s04a):
    r = run(s04a, "controlled-shutdown")
    begin = first(r, "broker_shutdown")
    elect = first(r, "controller_elect_leader")
    assert elect["t_ms"] - begin["t_ms"] <= 2  # no session timeout to wait for
    assert "controller_fence_broker" not in kinds(r)  # nothing missed a heartbeat
    recs = after_bootstrap(r)
    assert [shape(x) for x in recs] == [
        ("BrokerRegistrationChangeRecord", 1, 0, 1),  # inControlledShutdown=1 first
        ("PartitionChangeRecord", 2, (2, 3)),  # then leadership and ISR move
        ("BrokerRegistrationChangeRecord", 1, 1, 0),  # fenced once it has stopped
        ("RegisterBrokerRecord", 1, True),
        ("BrokerRegistrationChangeRecord", 1, -1, 0),
        ("PartitionChangeRecord", "-", (1, 2, 3)),
        ("PartitionChangeRecord", 1, "-"),  # the leader balancer, unprompted
    ]
    assert recs[-1]["t_ms"] == 300000  # leader.imbalance.check.interval.seconds = 300
    assert "controller_admin_election" not in kinds(r)
    b = produce(r, "b")
    assert b["outcome"] == "acked" and b["attempts"] == 2 and b["done_ms"] - b["sent_ms"] < 200
    # broker 1 appended b in its last instant as leader; the parked request ends with an error
    ended = [s for s in r["steps"] if s["kind"] == "leader_complete_produce" and s["t_ms"] > begin["t_ms"]]
    assert ended[0]["broker"] == 1 and "NOT_LEADER_OR_FOLLOWER" in ended[0]["text"]
    gone = r["final"]["brokers"]["1"]["truncated"]
    assert [e["record"] for e in gone] == ["b"] and gone[0]["why"] == "diverging_epoch"
    restart = first(r, "controller_register_broker")
    assert "clean shutdown" in restart["text"] and "an unclean" not in restart["text"]
    assert where(r) == (1, 2, 3, [1, 2, 3])
    assert r["lost_acked_records"] == [] and r["visible_records"] == ["a", "b"]


def test_beat5_last_replica_two_leader_epochs_and_the_version_difference(s04a):
    new = run(s04a, "last-replica")
    old = run(s04a, "last-replica", {"kafka_version": "3.6"})
    for r in (new, old):
        pcs = [x for x in after_bootstrap(r) if x["type"] == "PartitionChangeRecord"]
        assert [x.get("leader", "-") for x in pcs] == ["-", "-", -1, 1]
        assert [epochs(x) for x in pcs] == [(0, 1), (0, 2), (1, 3), (2, 4)]
        assert pcs[0]["isr"] == [1, 3] and pcs[1]["isr"] == [1]
        assert "controller_partition_offline" in kinds(r)
        x = produce(r, "x")
        assert x["outcome"] == "acked"
        assert x["done_ms"] > first(r, "controller_fence_broker", broker=3)["t_ms"]
        assert where(r) == (1, 2, 4, [1])
        assert r["visible_records"] == ["a", "x", "y"]
    # 4.1 (ELR): the offline record empties the ISR and names broker 1 an eligible leader replica
    offline_new = [x for x in after_bootstrap(new) if x.get("leader") == -1][0]
    assert offline_new["isr"] == [] and offline_new["eligibleLeaderReplicas"] == [1]
    # 3.6: the last ISR member stays in the ISR; the record only sets leader -1
    offline_old = [x for x in after_bootstrap(old) if x.get("leader") == -1][0]
    assert "isr" not in offline_old and "eligibleLeaderReplicas" not in offline_old
    assert old["final"]["partition"]["elr"] == []


# --------------------------------------------------------------------------------------------
# live answers


def _ask(qa_id: str, result: dict[str, Any]) -> str:
    return ask_live(qa_id, result, "04a")


def test_live_answers_describe_the_run(s04a):
    r = run(s04a, "leader-fenced")
    fenced = _ask("how-kafka-decides-broker-dead", r)
    assert "fenced broker 1, at t = 9.001 s, 8.497 s after it crashed" in fenced
    assert "PartitionChangeRecord (leader 2, isr [2, 3])" in _ask("what-is-in-metadata-log", r)
    assert "BrokerRegistrationChangeRecord (broker 1, fenced=1)" in _ask("what-is-in-metadata-log", r)
    text = _ask("how-controller-picks-leader", r)
    # the candidates from the view's ISR; which one the controller picks is the engine's rule, not the app's
    assert "broker 2 leads in leader epoch 1" in text and "are broker 3 (running)" in text
    assert "preferred leader" in text
    text = _ask("partition-change-record-epochs", run(s04a, "preferred-leader"))
    assert "leader epoch is 2 and the partition epoch is 3" in text and "3 PartitionChangeRecords" in text
    assert "2 of them set the leader" in text
    assert "as its controlled shutdown finished" in _ask("how-kafka-decides-broker-dead",
                                                          run(s04a, "controlled-shutdown"))
    # at the scrubber: before anything is fenced
    early = engine.simulate(s04a.scenario_for("leader-fenced"), steps=True, at_step=3)
    assert "No broker has been fenced" in _ask("how-kafka-decides-broker-dead", {**early, "at_step": 3})
    offline_i = first(run(s04a, "last-replica"), "controller_partition_offline")["i"]
    at = engine.simulate(s04a.scenario_for("last-replica"), steps=True, at_step=offline_i)
    assert "has no leader" in _ask("how-controller-picks-leader", at)
