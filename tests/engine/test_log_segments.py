"""One replica's segmented log (engine/segments.py) against the canonical scenarios of
kafka-clients-logs.md §F.A (A2-A7; A1 and A5's consumer side use `reset_position`), and invariants
over random append/retention schedules."""

import random

import pytest

from engine.segments import (
    EARLIEST,
    LATEST,
    MAX_TIMESTAMP,
    OFFSET_OUT_OF_RANGE,
    OffsetOutOfRangeError,
    SegmentedLog,
    reset_position,
)

MIN = 60_000
HOUR = 60 * MIN
MIB = 1024 * 1024


def at(hh_mm: str) -> int:
    hours, minutes = hh_mm.split(":")
    return int(hours) * HOUR + int(minutes) * MIN


def committed(log: SegmentedLog) -> SegmentedLog:
    log.hw = log.leo  # RF=1: the HW follows the LEO right after each append
    return log


def test_A1_offsets_and_the_two_reset_policies():
    log = SegmentedLog()
    assert log.append([(0, 10, "v0"), (1, 10, "v1"), (2, 10, "v2")]) == [0, 1, 2]
    committed(log)
    assert (log.leo, log.hw, log.log_start_offset) == (3, 3, 0)
    assert reset_position(log, "latest") == 3 and log.read(3).records == ()
    assert reset_position(log, "earliest") == 0
    assert [r.value for r in log.read(0).records] == ["v0", "v1", "v2"]


def test_A2_size_roll_before_the_eleventh_100_kib_record():
    log = SegmentedLog(segment_bytes=1_048_576)
    for i in range(11):
        log.append([(i, 102_470)])
    assert [s.base_offset for s in log.segments] == [0, 10]
    assert log.segments[0].size == 1_024_700
    assert [r.offset for r in log.segments[0].records] == list(range(10))
    assert log.segments[1].name == "00000000000000000010.log"


def test_A3_time_retention_busy_partition():
    log = SegmentedLog(segment_ms=HOUR, retention_ms=HOUR)
    t = at("10:00")
    while t <= at("11:30"):
        log.append([(t, 100)])
        committed(log)
        t += MIN
    # the 11:01 record rolled: S0 holds 10:00..11:00, 61 records
    assert [s.base_offset for s in log.segments] == [0, 61]
    assert log.segments[0].largest_timestamp == at("11:00")
    assert log.retention_pass(at("12:00")) == []  # strictly more than an hour
    deleted = log.retention_pass(at("12:05"))
    assert [(d.base_offset, d.next_offset, d.reason) for d in deleted] == [(0, 61, "retention.ms")]
    assert log.log_start_offset == 61


def test_A3_time_retention_empties_an_idle_partition_and_keeps_its_offsets():
    log = SegmentedLog(segment_ms=HOUR, retention_ms=HOUR)
    t = at("10:00")
    while t <= at("11:30"):
        log.append([(t, 100)])
        t += MIN
    committed(log)
    assert log.leo == 91
    deleted = log.retention_pass(at("12:31"))
    assert [d.base_offset for d in deleted] == [0, 61]
    assert log.log_start_offset == log.leo == 91 and len(log.segments) == 1 and not log.active.records
    assert log.append([(at("12:40"), 100)]) == [91]


def test_A3_an_idle_partition_never_rolls_on_segment_ms():
    log = SegmentedLog(segment_ms=HOUR, retention_ms=-1)
    log.append([(0, 10)])
    committed(log)
    assert log.retention_pass(30 * 24 * HOUR) == [] and len(log.segments) == 1


def test_A4_size_retention_keeps_at_least_retention_bytes():
    log = SegmentedLog(segment_bytes=MIB, retention_bytes=3 * MIB, retention_ms=-1)
    for i in range(9):  # four full 1 MiB segments and half of a fifth
        log.append([(i, MIB // 2)])
    committed(log)
    assert [s.size for s in log.segments] == [MIB, MIB, MIB, MIB, MIB // 2]
    deleted = log.retention_pass(0)
    assert [(d.base_offset, d.reason) for d in deleted] == [(0, "retention.bytes")]
    assert log.size == 3 * MIB + MIB // 2


def log_from_50(records: int) -> SegmentedLog:
    """Ten 100-byte records a segment (segment.bytes 1000), `records` of them, everything below
    offset 50 deleted by DeleteRecords and a retention pass."""
    log = SegmentedLog(segment_bytes=1000)
    for i in range(records):
        log.append([(i, 100)])
    committed(log)
    log.delete_records(50)
    log.retention_pass(0)
    return log


def test_A5_a_consumer_behind_retention_gets_out_of_range_and_resets_by_policy():
    log = log_from_50(60)
    assert log.log_start_offset == 50
    assert log.read(40).error == OFFSET_OUT_OF_RANGE
    assert reset_position(log, "earliest") == 50  # 40-49 lost to the group, no error
    assert reset_position(log, "latest") == log.hw == 60  # everything skipped
    with pytest.raises(OffsetOutOfRangeError):
        reset_position(log, "none")


def test_A6_delete_records_inside_a_segment():
    log = log_from_50(70)
    assert [s.base_offset for s in log.segments] == [50, 60]  # segments [50..59], [60..69]
    log.delete_records(55)
    assert log.log_start_offset == 55
    assert log.read(52).error == OFFSET_OUT_OF_RANGE and log.list_offsets(EARLIEST)[0] == 55
    assert log.retention_pass(0) == []  # [50..59] stays: the next base, 60, is above 55
    log.delete_records(60)
    assert [d.base_offset for d in log.retention_pass(0)] == [50]


def test_A6_delete_records_past_the_high_watermark_is_refused():
    log = SegmentedLog()
    log.append([(0, 10), (1, 10)])
    log.hw = 1
    with pytest.raises(ValueError, match=OFFSET_OUT_OF_RANGE):
        log.delete_records(2)


def test_A7_list_offsets_by_time_is_first_in_offset_order():
    log = SegmentedLog()
    log.append([(at("10:00"), 10), (at("10:05"), 10), (at("09:58"), 10), (at("10:10"), 10)])
    committed(log)
    assert log.list_offsets(at("10:01"))[0] == 1
    assert log.list_offsets(at("09:59"))[0] == 0
    assert log.list_offsets(at("10:11")) == (-1, -1)
    assert log.list_offsets(MAX_TIMESTAMP)[0] == 3
    assert log.list_offsets(LATEST)[0] == 4 and log.list_offsets(EARLIEST)[0] == 0


def test_a_read_between_the_high_watermark_and_the_end_is_empty_not_an_error():
    log = SegmentedLog()
    log.append([(0, 10), (1, 10), (2, 10)])
    log.hw = 1
    assert log.read(2) == log.read(3)
    assert log.read(2).error is None and log.read(2).records == ()
    assert log.read(4).error == OFFSET_OUT_OF_RANGE
    assert [r.offset for r in log.read(0).records] == [0]


def test_retention_never_deletes_at_or_above_the_high_watermark():
    log = SegmentedLog(segment_bytes=100, retention_ms=0)
    for i in range(10):
        log.append([(i, 50)])
    log.hw = 5  # segments of two records: [0,1] [2,3] [4,5] ...
    log.retention_pass(10**9)
    assert log.log_start_offset == 4 and log.segments[0].base_offset == 4


def test_a_compact_only_topic_ignores_time_and_size_retention():
    log = SegmentedLog(segment_bytes=100, retention_ms=0, retention_bytes=0, cleanup_policy="compact")
    for i in range(10):
        log.append([(i, 50)])
    committed(log)
    assert log.retention_pass(10**9) == []
    log.delete_records(4)
    assert [d.reason for d in log.retention_pass(10**9)] == ["log_start_offset", "log_start_offset"]


@pytest.mark.parametrize("seed", range(30))
def test_invariants_over_random_schedules(seed):
    rng = random.Random(seed)
    log = SegmentedLog(
        segment_bytes=rng.choice([200, 500, 1000]),
        segment_ms=rng.choice([HOUR, 10 * MIN]),
        retention_ms=rng.choice([-1, HOUR, 3 * HOUR]),
        retention_bytes=rng.choice([-1, 0, 800, 3000]),
    )
    now = 0
    for _ in range(300):
        now += rng.randrange(0, 5 * MIN)
        roll = rng.random()
        if roll < 0.6:
            count = rng.randrange(1, 4)
            log.append([(now + rng.randrange(-MIN, MIN), rng.randrange(10, 150)) for _ in range(count)])
        elif roll < 0.8:
            log.hw = rng.randrange(log.hw, log.leo + 1)
        elif roll < 0.9:
            log.delete_records(rng.randrange(log.log_start_offset, log.hw + 1))
        else:
            log.retention_pass(now)
        assert log.log_start_offset <= log.hw <= log.leo
        assert log.segments and log.segments[0].base_offset <= log.log_start_offset
        bases = [s.base_offset for s in log.segments]
        assert bases == sorted(set(bases))
        offsets = [r.offset for s in log.segments for r in s.records]
        assert offsets == list(range(bases[0], log.leo))  # contiguous, no gaps between segments


def test_eight_simulated_days_of_retention_checks_jump_time():
    log = SegmentedLog(segment_ms=HOUR, retention_ms=24 * HOUR)
    now = 0
    interval = 5 * MIN  # log.retention.check.interval.ms
    for _ in range(8 * 24 * 12):
        log.append([(now, 100)])
        committed(log)
        log.retention_pass(now)
        now += interval
    assert log.log_start_offset > 0 and len(log.segments) <= 26
