"""Scene 02 (the log is the database): reading deletes nothing, two groups keep independent
positions, a seek replays the same records, and folding the log rebuilds a table; each as the
engine runs it. The checks every scene passes are in test_every_built_scene.py."""

from __future__ import annotations

import pytest
from reader_helpers import judge, log, polled, position_at, received, replay, step_index
from scene_helpers import ask_live

from scenes import Scene, load_scene

BEATS = ["reading-does-not-delete", "two-groups", "replay", "rebuild-state"]


@pytest.fixture(scope="module")
def s02() -> Scene:
    return load_scene("02")


def test_header_knobs_and_beats(s02):
    assert (s02.id, s02.slug) == ("02", "the-log")
    assert [k.key for k in s02.knobs] == ["auto.offset.reset", "max.poll.records"]
    assert all(k.target.startswith("consumers.") for k in s02.knobs)
    assert [b.id for b in s02.beats] == BEATS
    assert [(c["id"], c["group.id"]) for c in s02.base_scenario["consumers"]] == [
        ("c0", "payments"), ("c1", "analytics"), ("c2", "balances")]
    assert s02.challenge.goal == "fan_out"


def _leader_log_at(r, step):
    view = r["views"][step]
    entries = [(e["offset"], e["record"]) for e in view["brokers"]["1"]["log"]]
    return entries, view["partition"]["log_start_offset"]


def test_reading_deletes_nothing(s02):
    r = replay(s02, "reading-does-not-delete")
    poll = step_index(r, "consumer_poll")
    before, start_before = _leader_log_at(r, poll - 1)
    after, start_after = _leader_log_at(r, poll)
    assert before == after == [(0, "a"), (1, "b"), (2, "c")]
    assert start_before == start_after == 0
    assert position_at(r, poll - 1, "c0") == {"0": 0} and position_at(r, poll, "c0") == {"0": 3}
    assert polled(r, "c0") == [[], ["a", "b", "c"]]
    p0 = r["partitions"][0]
    assert (p0["log_start_offset"], p0["hw"], p0["leo"]) == (0, 3, 3)


def test_max_poll_records_changes_the_pace_not_the_log(s02):
    r = replay(s02, "reading-does-not-delete", {"max.poll.records": 1})
    assert polled(r, "c0") == [[], ["a"]]
    assert r["consumers"]["c0"]["position"] == {"0": 1}
    assert log(r) == [(0, None, "a"), (1, None, "b"), (2, None, "c")]


def test_two_groups_keep_independent_positions(s02):
    r = replay(s02, "two-groups")
    assert received(r, "c0") == ["a", "b", "c"] and received(r, "c1") == ["d"]
    # analytics arrives late: latest puts it at the end, 3
    reset = [s for s in r["steps"] if s["kind"] == "consumer_reset_offset" and s["consumer"] == "c1"]
    assert [(s["offset"], s["policy"]) for s in reset] == [(3, "latest")]
    # c1's read of d moves c1 only: c0 stays at 3 from its last poll to the end
    c0_poll = step_index(r, "consumer_poll", consumer="c0", nth=1)
    for k in range(c0_poll, len(r["steps"]) + 1):
        assert position_at(r, k, "c0") == {"0": 3}
    assert position_at(r, len(r["steps"]), "c1") == {"0": 4}
    # no group committed anything, and the groups' bookmarks would be their own
    assert {g: st["committed"] for g, st in r["groups"].items()} == {"payments": {}, "analytics": {}}
    assert log(r) == [(0, None, "a"), (1, None, "b"), (2, None, "c"), (3, None, "d")]


def test_the_challenge_needs_the_late_group_to_start_at_the_beginning(s02):
    for beat in BEATS:
        assert not judge(s02, beat)[0], beat
    met, said = judge(s02, "two-groups", {"auto.offset.reset": "earliest"})
    assert met and "reached both analytics and payments" in said
    r = replay(s02, "two-groups", {"auto.offset.reset": "earliest"})
    assert received(r, "c1") == ["a", "b", "c", "d"]
    met, said = judge(s02, "two-groups")
    assert not met and "3 records were in the log when group analytics started" in said


def test_replay_reads_the_same_records_again(s02):
    r = replay(s02, "replay")
    seek = step_index(r, "consumer_seek")
    assert position_at(r, seek - 1, "c0") == {"0": 3} and position_at(r, seek, "c0") == {"0": 0}
    assert polled(r, "c0") == [[], ["a", "b", "c"], ["a", "b", "c"]]
    assert received(r, "c0") == ["a", "b", "c"] * 2
    assert [x["offset"] for x in r["polls"][2]["records"]] == [0, 1, 2]
    assert log(r) == [(0, None, "a"), (1, None, "b"), (2, None, "c")]
    assert "more than once" in ask_live("replay-means-duplicates", r, "02")


def test_rebuild_state_folds_the_log_into_the_same_table(s02):
    r = replay(s02, "rebuild-state")
    (got,) = [p["records"] for p in r["polls"] if p["consumer"] == "c2"]
    assert [(x["offset"], x["key"], x["record"]) for x in got] == [
        (0, "alice", "a:10"), (1, "bob", "b:5"), (2, "alice", "a:7"), (3, "carol", "c:3")]
    table = {}
    for x in got:
        table[x["key"]] = int(x["record"].split(":")[1])
    assert table == {"alice": 7, "bob": 5, "carol": 3}
    # with Kafka's default (latest) the same new group would start at the end and read nothing
    late = replay(s02, "rebuild-state", {"auto.offset.reset": "latest"})
    assert polled(late, "c2") == [[]]


def test_live_answers_about_groups_and_lag(s02):
    r = replay(s02, "two-groups")
    text = ask_live("how-many-groups", r, "02")
    assert "analytics: c1 at P0 4" in text and "payments: c0 at P0 3" in text
    lag = ask_live("what-is-consumer-lag", r, "02")
    assert "c0's position 3, so 1 record behind" in lag and "c1's position 4, so 0 records behind" in lag
