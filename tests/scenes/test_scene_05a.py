"""Scene 05a (log compaction): the latest value per key wins, the cleaner waits for a dirty ratio
strictly above min.cleanable.dirty.ratio, a pass maps keys and recopies segments (merging small
ones, keeping offsets and their gaps, never touching the active segment), a tombstone deletes a
key and goes itself only at a pass after its delete horizon, and a reader who was behind sees the
delete or misses it. Each as the engine runs it, with the numbers the narration quotes; the
canonical scenario is kafka-clients-logs §F.D (compaction, worked end to end) with keys renamed
(K1..K8 -> alice..heidi), and §D.4/§D.5 for the tombstone and reader beats. The checks every scene
passes are in test_every_built_scene.py."""

from __future__ import annotations

import pytest
from reader_helpers import judge, log, polled, replay, segments_at, step_index
from scene_helpers import ask_live

from scenes import Scene, load_scene

BEATS = ["last-value-wins", "dirty-ratio", "tombstone", "slow-reader"]
DAY = 86_400_000
HOUR = 3_600_000


@pytest.fixture(scope="module")
def s05a() -> Scene:
    return load_scene("05a")


def cleaner_point_at(r, step: int) -> int:
    return r["views"][step]["partition"]["cleaner_point"]


def offsets_at(r, step: int) -> list[int]:
    leader = r["views"][step]["partition"]["leader"]
    return [e["offset"] for e in r["views"][step]["brokers"][str(leader)]["log"]]


def test_header_knobs_and_beats(s05a):
    assert (s05a.id, s05a.slug) == ("05a", "compaction")
    knobs = {k.key: k for k in s05a.knobs}
    assert list(knobs) == ["cleanup.policy", "min.cleanable.dirty.ratio", "delete.retention.ms",
                           "min.compaction.lag.ms", "segment.bytes"]
    assert knobs["min.cleanable.dirty.ratio"].default == 0.5 and knobs["delete.retention.ms"].default == DAY
    assert [b.id for b in s05a.beats] == BEATS
    assert s05a.challenge.goal == "miss_delete"
    # the ratio is a fraction picked from a list: parsed from the URL as a number, others refused
    ratio = knobs["min.cleanable.dirty.ratio"]
    assert ratio.parse("0.4") == 0.4 and ratio.parse(0.75) == 0.75
    for bad in ("0.3", "abc", True):
        with pytest.raises(ValueError):
            ratio.parse(bad)
    assert s05a.scenario_for("dirty-ratio", {"min.cleanable.dirty.ratio": "0.4"})["topic"][
        "min.cleanable.dirty.ratio"] == 0.4
    # a tombstone in the data (TOML has no null) reaches the engine as the contract's null record
    tomb = [a for a in s05a.scenario_for("tombstone")["actions"] if a.get("key") == "alice"][1]
    assert tomb["records"] == [None] and "tombstone" not in tomb


def test_F_D_pass_1_keeps_the_latest_per_key_and_leaves_the_active_segment(s05a):
    """§F.D pass 1: ratio 1.0 over offsets 0-7, map alice 5 / bob 4 / carol 7 / dave 6; the first
    segment keeps nothing (an empty segment stays at base 0), the second keeps all four; the cleaner
    point is 8, the log start stays 0, and a reader from 0 gets bob twice."""
    r = replay(s05a, "last-value-wins")
    mapped = step_index(r, "cleaner_offset_map")
    step = r["steps"][mapped - 1]
    assert step["t_ms"] == 15_000 and step["ratio"] == 1.0
    assert step["offset_map"] == {"alice": 5, "bob": 4, "carol": 7, "dave": 6}
    rewrite = step_index(r, "cleaner_rewrite")
    assert segments_at(r, rewrite - 1) == [(0, 4, 400), (4, 8, 400), (8, 10, 200)]
    assert segments_at(r, rewrite) == [(0, 0, 0), (4, 8, 400), (8, 10, 200)]
    assert cleaner_point_at(r, rewrite - 1) == 0 and cleaner_point_at(r, rewrite) == 8
    assert r["views"][rewrite]["partition"]["log_start_offset"] == 0
    assert offsets_at(r, rewrite) == [4, 5, 6, 7, 8, 9]
    assert polled(r, "report") == [["b2", "a3", "d1", "c2", "b3", "e1"]]
    assert "bob 2 times (offsets 4, 8)" in ask_live("exactly-one-per-key", r, "05a")
    assert "a gap at 0-3" in ask_live("offsets-after-compaction", r, "05a")
    assert "alice=a3, bob=b3, carol=c2, dave=d1, erin=e1" in ask_live("state-store", r, "05a")


@pytest.mark.parametrize("knobs", [{"min.compaction.lag.ms": HOUR}, {"cleanup.policy": "delete"}])
def test_without_cleaning_the_reader_gets_every_update(s05a, knobs):
    r = replay(s05a, "last-value-wins", knobs)
    assert not [s for s in r["steps"] if s["kind"].startswith("cleaner_offset")]
    assert len(polled(r, "report")[0]) == 10


def test_F_D_ratio_of_exactly_half_does_not_clean_and_pass_2_merges(s05a):
    """§F.D's ratio rule and pass 2 on 200-byte segments: after pass 1 (clean 200 bytes) one dirty
    segment of 200 is 0.5, not > 0.5; a second makes 0.67, and pass 2 merges the empty first
    segment with the second at base 0, where b2 survives (bob not rewritten) and a2 goes."""
    r = replay(s05a, "dirty-ratio")
    first = step_index(r, "cleaner_rewrite")
    assert r["steps"][step_index(r, "cleaner_offset_map") - 1]["offset_map"] == {"alice": 3, "bob": 2}
    assert segments_at(r, first) == [(0, 0, 0), (2, 4, 200), (4, 5, 100)]
    check = r["steps"][step_index(r, "cleaner_check") - 1]
    assert (check["t_ms"], check["ratio"]) == (30_000, 0.5)
    assert "0.50 (200 dirty bytes at offsets 4-5 of 400 cleanable)" in check["text"]
    second = r["steps"][step_index(r, "cleaner_offset_map", nth=2) - 1]
    assert second["t_ms"] == 45_000 and round(second["ratio"], 2) == 0.67
    assert second["offset_map"] == {"carol": 7, "alice": 5, "dave": 6}
    rewrite = step_index(r, "cleaner_rewrite", nth=2)
    assert "segments 0 + 2 (merged into one at 0), 4 and 6" in r["steps"][rewrite - 1]["text"]
    assert segments_at(r, rewrite) == [(0, 3, 100), (4, 6, 100), (6, 8, 200), (8, 9, 100)]
    assert log(r) == [(2, "bob", "b2"), (5, "alice", "a3"), (6, "dave", "d1"), (7, "carol", "c2"),
                      (8, "erin", "e1")]
    assert "found a dirty ratio of 0.67, so it cleaned" in ask_live("when-does-cleaning-start", r, "05a")


def test_a_lower_ratio_cleans_at_one_half(s05a):
    r = replay(s05a, "dirty-ratio", {"min.cleanable.dirty.ratio": 0.4})
    assert [s["t_ms"] for s in r["steps"] if s["kind"] == "cleaner_offset_map"] == [15_000, 30_000]


def test_a_tombstone_lives_a_day_after_the_first_pass_that_keeps_it(s05a):
    """§D.4 / §F.D tombstone expiry: pass 1 keeps the tombstone and stamps its horizon (pass time +
    delete.retention.ms); a later pass after the horizon drops it, and needs the ratio again."""
    r = replay(s05a, "tombstone")
    first = r["steps"][step_index(r, "cleaner_rewrite") - 1]
    assert first["t_ms"] == 15_000 and first["horizon_ms"] == 15_000 + DAY
    assert "stays at least 1 day" in first["text"]
    after_first = step_index(r, "cleaner_rewrite")
    assert [(e["offset"], e["record"]) for e in
            r["views"][after_first]["brokers"]["1"]["log"]] == [(1, "b1"), (2, "c1"), (3, None), (4, "b2")]
    assert first["stamped"] == [3] and first["horizon_ms"] == 15_000 + DAY
    at_first = {**r, "view": r["views"][after_first], "at_step": after_first}
    stamped = ask_live("tombstone-how-long", at_first, "05a")
    assert ("the tombstone for alice at offset 3 is in the log, kept by every pass until "
            "t = 1 day 0 hours 0 min 15 s, its delete horizon") in stamped
    assert "a pass after the horizon removed the tombstone at 3" in ask_live("tombstone-how-long", r, "05a")
    expired = r["steps"][step_index(r, "cleaner_tombstone_expired") - 1]
    assert expired["t_ms"] == 86_430_000 > 15_000 + DAY and expired["removed"] == [3]
    second = r["steps"][step_index(r, "cleaner_offset_map", nth=2) - 1]
    assert round(second["ratio"], 2) == 0.57  # 400 dirty against 300 clean
    assert log(r) == [(4, "bob", "b2"), (5, "carol", "c2"), (6, "dave", "d1"), (7, "erin", "e1"),
                      (8, "bob", "b3")]
    # two days of delete.retention.ms: the same pass keeps it
    kept = replay(s05a, "tombstone", {"delete.retention.ms": 2 * DAY})
    assert "cleaner_tombstone_expired" not in {s["kind"] for s in kept["steps"]}
    assert (3, "alice", None) in log(kept)


def test_a_reader_back_within_delete_retention_sees_the_delete(s05a):
    """§D.5 guarantee 4: report read alice=a1, was away 12 hours; the second pass came before the
    horizon, so report resumes at its committed offset 1 and reads the tombstone."""
    r = replay(s05a, "slow-reader")
    assert polled(r, "report") == [[], ["a1"], [None, "b2", "c2", "d1", "e1", "b3"]]
    assert polled(r, "app") == [["a1", "b1", "c1", None, "b2"]]
    second = r["steps"][step_index(r, "cleaner_rewrite", nth=2) - 1]
    assert second["t_ms"] == 43_230_000 < 15_000 + DAY
    met, said = judge(s05a, "slow-reader")
    assert not met and "report read alice = a1 at 0, then the tombstone at 3" in said
    assert "then the tombstone at 3" in ask_live("miss-a-delete", r, "05a")


def test_a_reader_away_longer_than_delete_retention_misses_the_delete(s05a):
    """§D.5 flip side (§F.D: 'One that starts afterwards never sees K9 at all'): with
    delete.retention.ms = 1 h the second pass drops the tombstone, report resumes past it, and its
    table keeps alice = a1. The challenge is met one knob away from the beat."""
    r = replay(s05a, "slow-reader", {"delete.retention.ms": HOUR})
    assert polled(r, "report")[-1] == ["b2", "c2", "d1", "e1", "b3"]
    met, said = judge(s05a, "slow-reader", {"delete.retention.ms": HOUR})
    assert met and "report read alice = a1 (P0 offset 0)" in said and "read on to offset 4" in said
    # not by any beat's default path
    for beat in BEATS:
        assert not judge(s05a, beat)[0], beat
