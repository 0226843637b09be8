"""Scene 02a (bookmarks and forgetting): a commit stores the next offset in the group's partition
of __consumer_offsets, reading is not committing (auto-commit commits what earlier polls returned;
a crash between the two repeats records), retention deletes whole segments by age whatever the
readers did, retention.bytes is a floor, and a bookmark below the log start meets
auto.offset.reset; each as the engine runs it, with the numbers the narration quotes. The checks
every scene passes are in test_every_built_scene.py."""

from __future__ import annotations

import pytest
from reader_helpers import judge, log, polled, position_at, received, replay, segments_at, step_index
from scene_helpers import ask_live

from engine.offsets import offsets_partition_for
from scenes import Scene, load_scene

BEATS = ["commit-next-offset", "read-is-not-commit", "retention-ignores-readers", "retention-bytes-floor",
         "fell-off-the-log"]
HOUR = 3_600_000


@pytest.fixture(scope="module")
def s02a() -> Scene:
    return load_scene("02a")


def log_start_at(r, step: int) -> int:
    return r["views"][step]["partition"]["log_start_offset"]


def committed_at(r, step: int, group: str = "payments") -> dict[str, int]:
    return r["views"][step]["groups"].get(group, {}).get("committed", {})


def test_header_knobs_and_beats(s02a):
    assert (s02a.id, s02a.slug) == ("02a", "offsets-retention")
    knobs = {k.key: k for k in s02a.knobs}
    assert list(knobs) == ["auto.offset.reset", "enable.auto.commit", "retention.ms", "retention.bytes",
                           "segment.bytes"]
    assert knobs["segment.bytes"].default == 300 and "scaled down" in knobs["segment.bytes"].label
    assert [b.id for b in s02a.beats] == BEATS
    assert s02a.challenge.goal == "skip_records"
    # the scaled-down sizes are the engine's: below Kafka 4's minimum, and said so
    r = replay(s02a, "commit-next-offset")
    assert any("segment.bytes=300 is below" in n for n in r["notes"])


def test_a_commit_stores_the_next_offset_on_the_groups_coordinator(s02a):
    r = replay(s02a, "commit-next-offset")
    assert polled(r, "c0") == [[], ["a", "b", "c"]]
    assert r["commits"] == [{"consumer": "c0", "offsets": {"0": 3}, "outcome": "ok", "error": None}]
    commit = step_index(r, "consumer_commit")
    assert committed_at(r, commit - 1) == {} and committed_at(r, commit) == {"0": 3}
    assert position_at(r, commit, "c0") == {"0": 3}  # the same number as the position
    g = r["groups"]["payments"]
    assert g["offsets_partition"] == offsets_partition_for("payments") == 13
    assert g["coordinator"] == 2 and "coordinator B2" in r["steps"][commit - 1]["text"]
    where = ask_live("where-offsets-live", r, "02a")
    assert "partition 13" in where and "leader B2" in where


def test_auto_commit_commits_earlier_polls_and_a_crash_repeats_the_rest(s02a):
    r = replay(s02a, "read-is-not-commit")
    auto = step_index(r, "consumer_commit")
    step = r["steps"][auto - 1]
    assert "auto-commit" in step["text"] and step["t_ms"] == 11_005
    assert committed_at(r, auto) == {"0": 3}
    crash = step_index(r, "consumer_crash")
    assert r["steps"][crash - 1]["t_ms"] == 12_010
    assert position_at(r, crash - 1, "c0") == {"0": 5}  # it had d and e
    expired = step_index(r, "group_member_expired")
    # session.timeout.ms after the last heartbeat reached the coordinator, 5 ms before the crash
    assert r["steps"][expired - 1]["t_ms"] == 57_005
    # the third poll returns nothing and auto-commits
    assert polled(r, "c0") == [[], ["a", "b", "c"], [], ["d", "e"], ["d", "e"]]
    assert received(r, "c0") == ["a", "b", "c", "d", "e", "d", "e"]
    assert r["groups"]["payments"]["committed"] == {"0": 3}
    # d and e start a second segment: the first one is full
    assert segments_at(r, len(r["steps"])) == [(0, 3, 300), (3, 5, 200)]
    assert "d, e went through its processing more than once" in ask_live("commit-before-or-after", r, "02a")


def test_without_auto_commit_the_restart_skips_silently(s02a):
    r = replay(s02a, "read-is-not-commit", {"enable.auto.commit": False})
    assert not [s for s in r["steps"] if s["kind"] == "consumer_commit"]
    resets = [s for s in r["steps"] if s["kind"] == "consumer_reset_offset"]
    assert [(s["offset"], s["policy"]) for s in resets] == [(0, "latest"), (5, "latest")]
    assert received(r, "c0") == ["a", "b", "c", "d", "e"]  # d and e never processed
    met, said = judge(s02a, "read-is-not-commit", {"enable.auto.commit": False})
    assert met and "d, e (P0 offsets 3-4)" in said and "c0's position is 5" in said


def test_retention_deletes_the_oldest_whole_segment_by_age(s02a):
    r = replay(s02a, "retention-ignores-readers")
    assert polled(r, "c0") == [[], ["a"]]
    assert r["groups"]["payments"]["committed"] == {"0": 1}
    appends = [s for s in r["steps"] if s["kind"] == "leader_append"]
    assert [(s["records"], s["t_ms"]) for s in appends] == [
        (["a", "b", "c"], 5_001), (["d", "e", "f"], 2_405_009), (["g"], 4_805_011)]
    second, third = (int(s["i"]) for s in appends[1:])
    assert segments_at(r, second - 1) == [(0, 3, 300)]
    assert segments_at(r, second) == [(0, 3, 300), (3, 6, 300)]  # a roll: d, e, f would overflow
    delete = step_index(r, "broker_delete_segments")
    step = r["steps"][delete - 1]
    assert step["t_ms"] == 3_630_000 == 30_000 + 12 * 300_000  # the first check over an hour after c
    assert step["t_ms"] - 5_000 > HOUR > step["t_ms"] - 300_000 - 5_000
    assert log_start_at(r, delete - 1) == 0 and log_start_at(r, delete) == 3
    assert segments_at(r, delete) == [(3, 6, 300)]
    assert segments_at(r, third) == [(3, 6, 300), (6, 7, 100)]
    # nobody asked payments: its bookmark now points before the log start
    assert committed_at(r, delete) == {"0": 1}
    assert log(r) == [(3, None, "d"), (4, None, "e"), (5, None, "f"), (6, None, "g")]
    assert "is below P0's log start offset 3" in ask_live("fell-behind-retention", r, "02a")
    # at Kafka's default 7 days nothing is deleted
    assert "broker_delete_segments" not in {s["kind"] for s in replay(
        s02a, "retention-ignores-readers", {"retention.ms": 604_800_000})["steps"]}


def test_retention_bytes_keeps_at_least_the_setting(s02a):
    r = replay(s02a, "retention-bytes-floor")
    end = len(r["steps"])
    delete = step_index(r, "broker_delete_segments")
    assert r["steps"][delete - 1]["t_ms"] == 30_000  # the first check, 30 s after start
    assert segments_at(r, delete - 1) == [(0, 3, 300), (3, 6, 300), (6, 9, 300), (9, 10, 100)]
    assert segments_at(r, end) == [(3, 6, 300), (6, 9, 300), (9, 10, 100)]
    assert sum(b for _s, _n, b in segments_at(r, end)) == 700 > 500
    assert log_start_at(r, end) == 3
    assert "retention.bytes=500: the next check would delete nothing" in ask_live(
        "retention-bytes-is-a-floor", r, "02a")


@pytest.mark.parametrize(("policy", "start", "got"),
                         [("earliest", 3, ["d", "e", "f", "g"]), ("latest", 7, [])])
def test_a_bookmark_below_the_log_start_meets_auto_offset_reset(s02a, policy, start, got):
    r = replay(s02a, "fell-off-the-log", {"auto.offset.reset": policy})
    fetched = step_index(r, "consumer_fetch_offsets", nth=2)
    assert "P0 1" in r["steps"][fetched - 1]["text"]
    oor = step_index(r, "consumer_out_of_range")
    assert "offset 1" in r["steps"][oor - 1]["text"] and "log start offset 3" in r["steps"][oor - 1]["text"]
    reset = [s for s in r["steps"] if s["kind"] == "consumer_reset_offset"][-1]
    assert (reset["offset"], reset["policy"]) == (start, policy)
    assert polled(r, "c0")[-1] == got
    assert r["groups"]["payments"]["committed"] == {"0": 1}  # until the next commit
    assert r["polls"][-1]["error"] is None


def test_none_makes_poll_throw(s02a):
    r = replay(s02a, "fell-off-the-log", {"auto.offset.reset": "none"})
    assert r["polls"][-1]["error"] == "OFFSET_OUT_OF_RANGE"
    assert [p["error"] for p in r["polls"][:2]] == ["NoOffsetForPartitionException"] * 2
    assert r["commits"][0]["outcome"] == "ok"  # the explicit commit of 1 still works
    assert "threw OFFSET_OUT_OF_RANGE" in ask_live("fell-behind-retention", r, "02a")


def test_the_challenge_is_one_knob_away_in_two_beats(s02a):
    for beat in BEATS:
        assert not judge(s02a, beat)[0], beat
    met, said = judge(s02a, "fell-off-the-log", {"auto.offset.reset": "latest"})
    assert met and "d, e, f, g (P0 offsets 3-6)" in said and "c0's position is 7" in said
    # a crash that loses work is a repeat while the bookmark is behind it
    met, said = judge(s02a, "read-is-not-commit")
    assert not met and "crashed holding d, e" in said and "a repeat, not a skip" in said
    # none turns the skip into an error: nothing is skipped, and that is the challenge's second part
    met, said = judge(s02a, "fell-off-the-log", {"auto.offset.reset": "none"})
    assert met and said.startswith("second part: c0's poll() threw OFFSET_OUT_OF_RANGE")
    # judged at the current step: before the second poll nothing is skipped yet
    r = replay(s02a, "fell-off-the-log", {"auto.offset.reset": "latest"})
    reset = [int(s["i"]) for s in r["steps"] if s["kind"] == "consumer_reset_offset"][-1]
    assert not judge(s02a, "fell-off-the-log", {"auto.offset.reset": "latest"}, step=reset - 1)[0]
    assert judge(s02a, "fell-off-the-log", {"auto.offset.reset": "latest"}, step=reset)[0]


@pytest.mark.parametrize("segment_bytes", range(100, 1001, 100))
def test_every_segment_bytes_the_knob_offers_runs_every_beat(s02a, segment_bytes):
    """The knob goes down to 100 bytes, below a 300-byte batch: the leader then refuses it with
    RECORD_LIST_TOO_LARGE and the beat goes on (the learner check saw an error page instead)."""
    for beat in BEATS:
        r = replay(s02a, beat, {"segment.bytes": segment_bytes})
        refused = [p for p in r["produce"] if p["error"] == "RECORD_LIST_TOO_LARGE"]
        assert bool(refused) == any(p["outcome"] == "failed" for p in r["produce"])
        if segment_bytes >= 300:
            assert not refused, (beat, segment_bytes)


def test_live_answers_read_the_segments_at_the_step(s02a):
    from scene_helpers import engine

    sc = s02a.scenario_for("retention-ignores-readers")
    at = engine.simulate(sc, steps=True)
    delete = step_index(at, "broker_delete_segments")
    before = {**engine.simulate(sc, at_step=delete - 1), "steps": at["steps"], "at_step": delete - 1,
              "scenario": sc}
    text = ask_live("when-exactly-deleted", before, "02a")
    assert "oldest segment (0-2) has its newest record from t = 5 s" in text
    assert "at the check at t = 1 hour 0 min 30 s" in text
    after = {**engine.simulate(sc, at_step=delete), "steps": at["steps"], "at_step": delete, "scenario": sc}
    assert "Last deletion, at t = 1 hour 0 min 30 s" in ask_live("is-the-active-segment-safe", after, "02a")
