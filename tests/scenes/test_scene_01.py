"""Scene 01 (foundations, the seven nouns): the knobs and beats are the agreed ones, and every beat
shows on the real engine what its narration claims: offsets from 0, a consumer pulling from a
position it keeps itself, a committed offset that outlives the process, and per-partition offsets.
The checks every scene passes are in test_every_built_scene.py."""

from __future__ import annotations

import pytest
from reader_helpers import judge, log, polled, position_at, received, replay, step_index
from scene_helpers import ask_live, first

from scenes import Scene, load_scene

BEATS = ["first-record", "consumer-pulls", "reader-away", "partitions"]


@pytest.fixture(scope="module")
def s01() -> Scene:
    return load_scene("01")


def test_header_knobs_and_beats(s01):
    assert (s01.id, s01.slug, s01.minutes) == ("01", "foundations", 8)
    knobs = {k.key: k for k in s01.knobs}
    assert list(knobs) == ["partitions", "auto.offset.reset"]
    parts = knobs["partitions"]
    assert (parts.min, parts.max, parts.target) == (1, 3, "topic.partitions")
    assert knobs["auto.offset.reset"].target == "consumers.auto.offset.reset"
    assert [b.id for b in s01.beats] == BEATS
    assert s01.challenge.goal == "read_before_subscribe"
    # the consumer knob reaches every consumer of the scenario
    sc = s01.scenario_for("consumer-pulls", {"auto.offset.reset": "earliest"})
    assert [c["auto.offset.reset"] for c in sc["consumers"]] == ["earliest"]


def test_first_record_offsets_start_at_zero(s01):
    r = replay(s01, "first-record")
    assert [p["offsets"] for p in r["produce"]] == [[0], [1]]
    assert log(r) == [(0, None, "a"), (1, None, "b")]
    p0 = r["partitions"][0]
    assert (p0["leader"], p0["hw"], p0["leo"], p0["log_start_offset"]) == (1, 2, 2, 0)


def test_consumer_pulls_from_a_position_it_keeps_itself(s01):
    r = replay(s01, "consumer-pulls")
    join = first(r, "consumer_join")
    assert 3000 <= join["t_ms"] < 3100  # group.initial.rebalance.delay.ms, 3 s
    assert polled(r, "c0") == [[], ["a", "b"]]
    assert r["consumers"]["c0"]["position"] == {"0": 2}
    # the reset on an empty partition puts c0 at 0, and the position only moves when poll() returns
    reset = step_index(r, "consumer_reset_offset")
    assert position_at(r, reset, "c0") == {"0": 0}
    poll = step_index(r, "consumer_poll")
    assert position_at(r, poll - 1, "c0") == {"0": 0} and position_at(r, poll, "c0") == {"0": 2}
    # the broker keeps no note of the read: nothing was committed, the log is unchanged
    assert r["groups"]["payments"]["committed"] == {} and log(r) == [(0, None, "a"), (1, None, "b")]
    assert r["groups"]["payments"]["generation"] == 1


def test_reader_away_resumes_from_the_committed_offset(s01):
    r = replay(s01, "reader-away")
    commit = first(r, "consumer_commit")
    assert "close()" in commit["text"] and "P0 1" in commit["text"] and "on coordinator B2" in commit["text"]
    assert r["groups"]["payments"]["committed"] == {"0": 1}
    assert r["groups"]["payments"]["coordinator"] == 2
    refetch = [s for s in r["steps"] if s["kind"] == "consumer_fetch_offsets"]
    assert refetch[0]["text"].endswith("none") and refetch[1]["text"].endswith("P0 1")
    assert polled(r, "c0") == [[], ["a"], ["b", "c"]]
    assert received(r, "c0") == ["a", "b", "c"]  # nothing lost, nothing read twice
    # the close's LeaveGroup ends generation 2 with no members (Empty); the new process forms 3
    assert r["groups"]["payments"]["generation"] == 3
    # while c0 is closed, the view says so and the producer's b and c still land
    closed = step_index(r, "consumer_close")
    assert r["views"][closed]["consumers"]["c0"]["status"] == "closed"
    assert log(r) == [(0, None, "a"), (1, None, "b"), (2, None, "c")]


def test_two_partitions_number_their_own_offsets(s01):
    r = replay(s01, "partitions")
    assert [(p["partition"], p["offsets"]) for p in r["produce"]] == [(1, [0]), (0, [0]), (0, [1])]
    assert log(r, 0) == [(0, "bob", "b"), (1, "carol", "c")]
    assert log(r, 1) == [(0, "alice", "a")]
    assert [p["leader"] for p in r["partitions"]] == [1, 2]
    # c0 arrives after the records: latest puts it at the end of both partitions, it gets nothing
    assert r["consumers"]["c0"]["position"] == {"0": 2, "1": 1}
    assert polled(r, "c0") == [[]]


def test_the_challenge_is_judged_from_the_run(s01):
    for beat in BEATS:
        assert not judge(s01, beat)[0], beat  # no beat as written does it
    met, said = judge(s01, "partitions", {"auto.offset.reset": "earliest"})
    assert met and "b, c, a" in said
    r = replay(s01, "partitions", {"auto.offset.reset": "earliest"})
    assert received(r, "c0") == ["b", "c", "a"]
    # judged at the current step: before the poll returns, not yet
    poll = step_index(r, "consumer_poll")
    assert not judge(s01, "partitions", {"auto.offset.reset": "earliest"}, step=poll - 1)[0]
    # the knob does nothing for a group that has a bookmark: reader-away's second c0 resumes at 1
    again = replay(s01, "reader-away", {"auto.offset.reset": "earliest"})
    assert polled(again, "c0")[-1] == ["b", "c"]


def test_live_answers_read_the_state_at_the_step(s01):
    r = replay(s01, "reader-away")
    assert "group payments has committed P0 1" in ask_live("who-remembers-my-place", r, "01")
    assert "first rebalance finished at t = 3.005 s" in ask_live("first-poll-is-slow", r, "01")
    early = {**r, "view": r["views"][1], "at_step": 1}
    assert "No group has formed" in ask_live("first-poll-is-slow", early, "01")
    two = replay(s01, "partitions")
    assert "P0 on B1 holds 2 (b, c)" in ask_live("topic-vs-partition", two, "01")
