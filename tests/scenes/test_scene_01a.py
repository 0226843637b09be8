"""Scene 01a (hello, Kafka): a record's anatomy, keys that pick partitions, and where a new
consumer starts (latest, earliest, none), each as the engine runs it. The checks every scene
passes are in test_every_built_scene.py."""

from __future__ import annotations

import pytest
from reader_helpers import judge, log, polled, position_at, received, replay, step_index
from scene_helpers import ask_live

from engine.partitioner import partition_for_key
from scenes import Scene, load_scene

BEATS = ["record-anatomy", "same-key-same-partition", "first-poll-latest", "first-poll-earliest"]


@pytest.fixture(scope="module")
def s01a() -> Scene:
    return load_scene("01a")


def test_header_knobs_and_beats(s01a):
    assert (s01a.id, s01a.slug) == ("01a", "hello-kafka")
    knobs = {k.key: k for k in s01a.knobs}
    assert list(knobs) == ["partitions", "auto.offset.reset"]
    assert (knobs["partitions"].min, knobs["partitions"].max, knobs["partitions"].default) == (1, 6, 3)
    assert knobs["auto.offset.reset"].choices == ["earliest", "latest", "none"]
    assert [b.id for b in s01a.beats] == BEATS
    assert s01a.challenge.goal == "spread_keys"


def test_the_keys_land_where_the_narration_says():
    where = {n: [partition_for_key(k.encode(), n) for k in ("alice", "bob", "carol")] for n in (3, 5, 6)}
    assert where == {3: [0, 0, 2], 5: [4, 3, 2], 6: [3, 0, 2]}


def test_record_anatomy(s01a):
    r = replay(s01a, "record-anatomy")
    (entry,) = r["partitions"][0]["log"]
    assert (entry["offset"], entry["key"], entry["record"]) == (0, "alice", "a1")
    assert entry["timestamp_ms"] == 0  # CreateTime: the producer's clock when it sent
    assert r["produce"][0]["partition"] == 0
    assert [p["leader"] for p in r["partitions"]] == [1, 2, 3]
    # the diagram's cells carry the key: the leader's log in the view has it
    assert r["views"][-1]["partitions"][0]["brokers"]["1"]["log"][0]["key"] == "alice"


def test_one_key_one_partition_in_order(s01a):
    r = replay(s01a, "same-key-same-partition")
    assert log(r, 0) == [(0, "alice", "a1"), (1, "bob", "b1"), (2, "alice", "a2")]
    assert log(r, 1) == []
    assert log(r, 2) == [(0, "carol", "c1")]


def test_latest_starts_a_new_group_at_the_high_watermark(s01a):
    r = replay(s01a, "first-poll-latest")
    resets = [s for s in r["steps"] if s["kind"] == "consumer_reset_offset"]
    assert [(s["partition_id"], s["offset"], s["policy"]) for s in resets] == [
        (0, 2, "latest"), (1, 0, "latest"), (2, 1, "latest")]
    assert position_at(r, int(resets[-1]["i"]), "c0") == {"0": 2, "1": 0, "2": 1}
    assert polled(r, "c0") == [[], ["a2"]]
    text = ask_live("new-consumer-sees-nothing", r, "01a")
    assert "auto.offset.reset=latest" in text and "P0 2, P1 0, P2 1" in text


def test_earliest_reads_everything_in_partition_order(s01a):
    r = replay(s01a, "first-poll-earliest")
    got = r["polls"][0]["records"]
    assert [(x["partition"], x["offset"], x["record"]) for x in got] == [
        (0, 0, "a1"), (0, 1, "b1"), (0, 2, "a2"), (2, 0, "c1")]
    assert r["consumers"]["c0"]["position"] == {"0": 3, "1": 0, "2": 1}


def test_none_throws_instead_of_guessing(s01a):
    r = replay(s01a, "first-poll-latest", {"auto.offset.reset": "none"})
    assert {p["error"] for p in r["polls"]} == {"NoOffsetForPartitionException"}
    assert received(r, "c0") == []
    assert "NoOffsetForPartitionException" in ask_live("new-consumer-sees-nothing", r, "01a")


def test_the_challenge_is_judged_from_the_partition_logs(s01a):
    for beat in BEATS:
        assert not judge(s01a, beat)[0], beat
    for n, met in ((1, False), (2, False), (3, False), (4, False), (5, True), (6, True)):
        assert judge(s01a, "same-key-same-partition", {"partitions": n})[0] is met, n
    met, said = judge(s01a, "same-key-same-partition", {"partitions": 5})
    assert "alice in P4, bob in P3, carol in P2" in said
    # at the step before the third key lands, not yet
    r = replay(s01a, "same-key-same-partition", {"partitions": 5})
    third = step_index(r, "leader_append", nth=3)
    assert not judge(s01a, "same-key-same-partition", {"partitions": 5}, step=third - 1)[0]
    assert judge(s01a, "same-key-same-partition", {"partitions": 5}, step=third)[0]
