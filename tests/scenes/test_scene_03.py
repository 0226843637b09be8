"""Scene 03 (partitions): murmur2 and toPositive place each key, order holds per partition, one
heavy key makes a hot partition that more partitions do not cool, adding partitions moves keys
only after the producer's metadata refresh (and moves no record), and keyless records go in sticky
runs of batch.size bytes; each as the engine runs it, with the numbers the narration quotes. The
checks every scene passes are in test_every_built_scene.py."""

from __future__ import annotations

import pytest
from reader_helpers import judge, replay, step_index
from scene_helpers import ask_live

from engine.partitioner import murmur2, partition_for_key, to_positive
from scenes import Scene, load_scene

BEATS = ["keys-pick-partitions", "hot-partition", "add-partitions", "keyless-sticky"]


@pytest.fixture(scope="module")
def s03() -> Scene:
    return load_scene("03")


def plog(r, p: int, step: int | None = None) -> list[tuple[str | None, str]]:
    """Partition p's leader log as (key, record), at the end or after `step` steps."""
    snap = r["partitions"][p]["final"] if step is None else r["views"][step]["partitions"][p]
    leader = snap["partition"]["leader"]
    return [(e["key"], e["record"]) for e in snap["brokers"][str(leader)]["log"]]


def sent_to(r) -> list[tuple[str, int]]:
    """Each producer_send's first record and the partition it went to, in order."""
    return [(s["records"][0], s["partition"]) for s in r["steps"] if s["kind"] == "producer_send"]


def test_header_knobs_and_beats(s03):
    assert (s03.id, s03.slug) == ("03", "partitions")
    knobs = {k.key: k for k in s03.knobs}
    assert list(knobs) == ["partitions", "partitioner.ignore.keys", "metadata.max.age.ms"]
    assert (knobs["partitions"].min, knobs["partitions"].max, knobs["partitions"].default) == (1, 12, 3)
    assert [b.id for b in s03.beats] == BEATS
    assert s03.challenge.goal == "hot_partition"
    assert s03.base_scenario["consumers"] == [], "no reader: part 2 of the contract, nobody consuming"


def test_the_hash_values_the_narration_quotes():
    assert murmur2(b"alice") == 1951417749 and murmur2(b"carol") == 271431602
    assert murmur2(b"bob") == -2048144690 and to_positive(-2048144690) == 99338958
    assert abs(-2048144690) % 3 == 2 and 99338958 % 3 == 0  # why toPositive, not abs
    keys = ("alice", "bob", "carol", "user-1", "key-0")
    assert [partition_for_key(k.encode(), 3) for k in keys] == [0, 0, 2, 2, 1]
    assert [partition_for_key(k.encode(), 4) for k in ("alice", "bob", "carol")] == [1, 2, 2]
    assert [partition_for_key(b"user-1", n) for n in (6, 12)] == [2, 8]


def test_keys_pick_partitions_and_order_is_per_partition(s03):
    r = replay(s03, "keys-pick-partitions")
    assert sent_to(r) == [("a1", 0), ("c1", 2), ("b1", 0), ("a2", 0), ("c2", 2)]
    assert plog(r, 0) == [("alice", "a1"), ("bob", "b1"), ("alice", "a2")]
    assert plog(r, 1) == []
    assert plog(r, 2) == [("carol", "c1"), ("carol", "c2")]
    # one record at a time: each lands before the next is sent
    kinds = [s["kind"] for s in r["steps"] if s["kind"] in ("producer_send", "leader_append")]
    assert kinds == ["producer_send", "leader_append"] * 5


def test_one_heavy_key_makes_a_hot_partition(s03):
    r = replay(s03, "hot-partition")
    assert [len(plog(r, p)) for p in range(3)] == [1, 1, 6]
    assert {k for k, _r in plog(r, 2)} == {"user-1"}
    fifth = step_index(r, "leader_append", nth=5)
    assert r["steps"][fifth - 1]["records"] == ["u5", "u6"] and len(plog(r, 2, fifth)) == 6
    text = ask_live("fix-a-hot-partition", r, "03")
    assert "P2 on B3 holds 6" in text and "a hot partition" in text
    # more partitions do not spread one key: user-1 still lands in one of them
    for n, p in ((6, 2), (12, 8)):
        big = replay(s03, "hot-partition", {"partitions": n})
        assert len(plog(big, p)) == 6 and sum(len(plog(big, q)) for q in range(n)) == 8
    # ignoring keys does not spread eight small records either: one sticky partition takes them
    ignored = replay(s03, "hot-partition", {"partitioner.ignore.keys": True})
    assert sorted(len(plog(ignored, p)) for p in range(3)) == [0, 0, 8]
    assert sum(1 for s in ignored["steps"] if s["kind"] == "producer_sticky_partition") == 1


def test_adding_partitions_moves_keys_after_the_refresh_and_no_record(s03):
    r = replay(s03, "add-partitions")
    create = step_index(r, "admin_create_partitions")
    assert r["steps"][create - 1]["partitions"] == 4
    # P3 is absent before it is created, and empty right after
    assert r["views"][create - 1]["partitions"][3] is None
    assert plog(r, 3, create) == []
    before = {p: plog(r, p, create - 1) for p in range(3)}
    assert {p: plog(r, p, create) for p in range(3)} == before  # nothing moved
    refresh = step_index(r, "producer_metadata_refresh")
    step = r["steps"][refresh - 1]
    assert step["t_ms"] == 300_000 and step["partitions"] == 4
    assert "'alice' P0 -> P1, 'bob' P0 -> P2, 'carol' stays on P2" in step["text"]
    assert sent_to(r) == [("a1", 0), ("b1", 0), ("c1", 2), ("a2", 0), ("a3", 1), ("b2", 2), ("c2", 2)]
    assert [s["t_ms"] for s in r["steps"] if s["kind"] == "producer_send"][4] == 301_008
    assert plog(r, 0) == [("alice", "a1"), ("bob", "b1"), ("alice", "a2")]
    assert plog(r, 1) == [("alice", "a3")]
    assert plog(r, 2) == [("carol", "c1"), ("bob", "b2"), ("carol", "c2")]
    assert plog(r, 3) == []
    # a longer metadata.max.age.ms keeps the old count for the whole beat
    late = replay(s03, "add-partitions", {"metadata.max.age.ms": 600_000})
    assert "producer_metadata_refresh" not in {s["kind"] for s in late["steps"]}
    assert [p for _r, p in sent_to(late)] == [0, 0, 2, 0, 0, 0, 2]


def test_records_without_a_key_go_in_sticky_runs(s03):
    r = replay(s03, "keyless-sticky")
    draws = [s for s in r["steps"] if s["kind"] == "producer_sticky_partition"]
    assert [s["partition"] for s in draws] == [2, 2, 1]  # the second draw repeats P2
    assert "batch.size=16384" in draws[1]["text"]
    assert [len(plog(r, p)) for p in range(3)] == [0, 2, 4]
    assert [rec for _k, rec in plog(r, 2)] == ["n1", "n2", "n3", "n4"]
    # a draw comes only after 16384 bytes (two 8 KiB records) went to the sticky partition
    sends = [s for s in r["steps"] if s["kind"] in ("producer_sticky_partition", "producer_send")]
    order = ["draw" if s["kind"] == "producer_sticky_partition" else s["records"][0] for s in sends]
    assert order == ["draw", "n1", "n2", "draw", "n3", "n4", "draw", "n5", "n6"]
    assert "drawn 3 times: P2, P2, P1; 1 of those draws picked the partition it was already on" in ask_live(
        "null-key-round-robin", r, "03")


def test_the_challenge_needs_a_skewed_key_on_six_partitions_or_more(s03):
    for beat in BEATS:
        assert not judge(s03, beat)[0], beat
    met, said = judge(s03, "hot-partition")
    assert not met and "user-1 alone put 6 there" in said and "6 or more" in said
    for n in (6, 12):
        met, said = judge(s03, "hot-partition", {"partitions": n})
        assert met and "6 of the 8 keyed records" in said
    # the second part: ignoring keys, the sticky partitioner still puts these 8 small records on one
    # partition (batch.size not reached), and the verdict says so
    met, said = judge(s03, "hot-partition", {"partitions": 6, "partitioner.ignore.keys": True})
    assert met and "second part" in said and "all 8 records still went to P" in said
    r = replay(s03, "hot-partition", {"partitions": 6, "partitioner.ignore.keys": True})
    assert len({p["partition"] for p in r["produce"]}) == 1
    # too few records placed by their key, however the partitions fall
    met, said = judge(s03, "keys-pick-partitions", {"partitions": 7})
    assert not met and "5 records" in said
    # judged at the current step: the hot partition builds up record by record
    r = replay(s03, "hot-partition", {"partitions": 6})
    third = step_index(r, "leader_append", nth=3)
    assert not judge(s03, "hot-partition", {"partitions": 6}, step=third)[0]


def test_live_answers_follow_the_step(s03):
    from scene_helpers import engine

    sc = s03.scenario_for("add-partitions")
    full = engine.simulate(sc, steps=True)
    create = step_index(full, "admin_create_partitions")

    def at(k):
        return {**engine.simulate(sc, at_step=k), "steps": full["steps"], "at_step": k, "scenario": sc}

    assert "P3 not created yet" in ask_live("how-many-partitions", at(create - 1), "03")
    assert "still shows 3" in ask_live("what-adding-partitions-does", at(create), "03")
    refresh = step_index(full, "producer_metadata_refresh")
    assert "shows all 4 partitions" in ask_live("what-adding-partitions-does", at(refresh), "03")
