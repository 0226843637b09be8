"""engine/segments.py against Kafka: the canonical scenarios A1-A7 of kafka-clients-logs.md §F.A
(outcomes as written there), the rules of §A.3-A.6 one by one, and invariants over random
append / DeleteRecords / retention schedules. One partition, one replica: the high watermark
follows the LEO after every append (§F conventions)."""

import random

import pytest

from engine.segments import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    RETENTION_MS_BREACH,
    RETENTION_SIZE_BREACH,
    START_OFFSET_BREACH,
    LogConfig,
    LogError,
    OffsetAndTimestamp,
    RetentionSchedule,
    Segment,
    SegmentedLog,
    batch_size_bytes,
    consumer_fetch,
    initial_position,
    reset_offset,
    reset_timestamp,
    seeded_jitter,
)

MIN = 60_000
HOUR = 60 * MIN
DAY = 24 * HOUR
MIB = 1024 * 1024


def at(hh: int, mm: int = 0) -> int:
    """A wall-clock time of the reference's scenarios, as ms since midnight."""
    return hh * HOUR + mm * MIN


def produce(log: SegmentedLog, ts: int, value: str = "v", size: int = 10, now: int | None = None):
    batch = log.append([(ts, None, value)], size, ts if now is None else now)
    log.update_high_watermark(log.log_end_offset)
    return batch


def layout(log: SegmentedLog) -> list[tuple[int, int]]:
    """Each segment as (base offset, next offset)."""
    return [(s.base_offset, s.next_offset) for s in log.segments]


# ---- §F.A canonical scenarios ------------------------------------------------------------------


def test_FA1_offsets_and_the_two_reset_policies():
    log = SegmentedLog.create(LogConfig())
    offsets = [produce(log, 0, v).base_offset for v in ("v0", "v1", "v2")]
    assert offsets == [0, 1, 2]
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (0, 3, 3)

    # a new group: no committed offset, so auto.offset.reset decides
    latest = initial_position(log, None, "latest")
    assert latest == 3
    assert consumer_fetch(log, latest, "latest").records == []

    earliest = initial_position(log, None, "earliest")
    fetched = consumer_fetch(log, earliest, "earliest")
    assert earliest == 0
    assert [r.value for r in fetched.records] == ["v0", "v1", "v2"]
    committed = fetched.position  # commitSync() commits the position: the next offset to read
    assert committed == 3

    for policy in ("latest", "earliest", "none"):
        assert initial_position(log, committed, policy) == 3

    with pytest.raises(LogError) as err:
        initial_position(log, None, "none")
    assert err.value.error == "NoOffsetForPartitionException"


def test_FA2_size_roll():
    log = SegmentedLog.create(LogConfig(segment_bytes=1_048_576))
    batch = 102_470
    for i in range(10):
        produce(log, i, size=batch)
        assert len(log.segments) == 1
        if i == 8:
            assert log.active.size_bytes == 922_230  # not > 1048576 - 102470 = 946106: no roll
    assert log.active.size_bytes == 1_024_700
    produce(log, 10, size=batch)  # the 11th append rolls before it is written
    assert layout(log) == [(0, 10), (10, 11)]
    assert [s.file_name for s in log.segments] == ["00000000000000000000.log", "00000000000000000010.log"]


def test_FA2_batch_size_of_a_100_KiB_record_is_about_102470_bytes():
    # DefaultRecordBatch's 61-byte header plus DefaultRecord.sizeInBytes: 102411 bytes of record
    size = batch_size_bytes([(0, None, b"x" * 102_400)])
    assert size == 102_472
    assert abs(size - 102_470) <= 5


def minute_log(until_hh: int, until_mm: int):
    """§F.A A3: retention.ms = segment.ms = 1 h, one record a minute from 10:00, checks every
    5 minutes on the quarter-hour grid (the broker started 30 s before midnight)."""
    config = LogConfig(retention_ms=HOUR, segment_ms=HOUR)
    log = SegmentedLog.create(config, now_ms=at(10))
    schedule = RetentionSchedule(interval_ms=5 * MIN, start_ms=-30_000)
    deletions = []
    t = at(10)
    while t <= at(until_hh, until_mm):
        deletions += schedule.run_until(log, t - 1)
        produce(log, t)
        t += MIN
    return log, schedule, deletions


def test_FA3_time_retention_busy_partition():
    log, schedule, deletions = minute_log(12, 30)
    s0 = [d for d in deletions if d.segment.base_offset == 0]
    # the 11:01 record rolled: S0 holds 10:00..11:00, 61 records
    assert s0[0].segment.next_offset == 61
    assert s0[0].segment.largest_timestamp_ms == at(11)
    # at the 12:00 check now - 11:00 is exactly 1 h, not more: the 12:05 check deletes S0
    assert [(d.reason, d.at_ms) for d in s0] == [(RETENTION_MS_BREACH, at(12, 5))]
    assert log.log_start_offset == 61 == log.segments[0].base_offset
    assert s0[0].at_ms - at(10) == 2 * HOUR + 5 * MIN  # how long the 10:00 record lived
    assert s0[0].files_removed_ms == at(12, 6)  # file.delete.delay.ms later
    assert log.bytes_on_disk(at(12, 6) - 1) == log.size_bytes + s0[0].segment.size_bytes
    assert log.bytes_on_disk(at(12, 6)) == log.size_bytes
    assert len(deletions) == 1


def test_FA3_time_retention_idle_partition():
    log, schedule, deletions = minute_log(11, 30)
    assert log.log_end_offset == 91  # offsets 0-90
    deletions += schedule.run_until(log, at(12, 30))
    assert [d.segment.base_offset for d in deletions] == [0]
    assert layout(log) == [(61, 91)]  # S1 active, newest record 11:30: not yet
    deletions += schedule.run_until(log, at(12, 35))
    assert [(d.segment.base_offset, d.at_ms) for d in deletions[1:]] == [(61, at(12, 35))]
    # Kafka rolled a new empty active segment at the LEO before deleting S1
    assert layout(log) == [(91, 91)]
    assert log.log_start_offset == log.log_end_offset == 91
    assert produce(log, at(13)).base_offset == 91


def test_FA3_idle_partition_never_rolls_on_segment_ms():
    log = SegmentedLog.create(LogConfig(segment_ms=HOUR, retention_ms=-1))
    produce(log, at(10))
    schedule = RetentionSchedule()
    schedule.run_until(log, 30 * DAY)  # no append, so no roll check
    assert layout(log) == [(0, 1)]
    produce(log, 30 * DAY)
    assert layout(log) == [(0, 1), (1, 2)]


def test_FA4_size_retention_keeps_at_least_retention_bytes():
    log = SegmentedLog.create(LogConfig(segment_bytes=MIB, retention_bytes=3 * MIB, retention_ms=-1))
    for i in range(9):
        produce(log, i, size=MIB // 2)
    assert [s.size_bytes for s in log.segments] == [MIB] * 4 + [MIB // 2]
    deletions = log.retention_pass(now_ms=100)
    assert [(d.segment.base_offset, d.reason) for d in deletions] == [(0, RETENTION_SIZE_BREACH)]
    assert log.size_bytes == 3 * MIB + MIB // 2
    assert log.log_start_offset == 2
    assert log.retention_pass(now_ms=200) == []


def a5_log() -> SegmentedLog:
    """Ten 10-byte records per segment, offsets 0-69; retention.bytes keeps two segments."""
    log = SegmentedLog.create(LogConfig(segment_bytes=100, retention_bytes=200, retention_ms=-1))
    for i in range(70):
        produce(log, i)
    log.retention_pass(now_ms=1000)
    return log


def test_FA5_a_consumer_falls_behind_retention():
    log = a5_log()
    assert log.log_start_offset == 50
    assert layout(log) == [(50, 60), (60, 70)]
    committed = 40

    with pytest.raises(LogError) as err:
        log.read(committed)
    assert err.value.error == "OFFSET_OUT_OF_RANGE"

    earliest = consumer_fetch(log, committed, "earliest")
    assert (earliest.reset_from, earliest.records[0].offset) == (40, 50)  # 40-49 lost, no error

    latest = consumer_fetch(log, committed, "latest")
    assert (latest.position, latest.records) == (70, [])  # everything up to the HW skipped

    with pytest.raises(LogError) as err:
        consumer_fetch(log, committed, "none")
    assert err.value.error == "OFFSET_OUT_OF_RANGE"
    # the broker never re-checks the committed offset: nothing here touched it
    assert committed == 40


def test_FA6_delete_records_inside_a_segment():
    log = a5_log()  # segments [50..59] and [60..69] active
    assert log.delete_records(55) == 55
    assert log.log_start_offset == 55
    with pytest.raises(LogError) as err:
        log.read(52)
    assert err.value.error == "OFFSET_OUT_OF_RANGE"
    assert log.list_offsets(EARLIEST_TIMESTAMP).offset == 55
    assert log.retention_pass(now_ms=2000) == []  # next base 60 > 55: [50..59] stays
    assert layout(log) == [(50, 60), (60, 70)]
    assert log.size_bytes == 200  # 50-54 are still on disk, unreadable
    assert [r.offset for r in log.read(55, 3)] == [55, 56, 57]

    log.delete_records(60)
    deletions = log.retention_pass(now_ms=3000)
    assert [(d.segment.base_offset, d.reason) for d in deletions] == [(50, START_OFFSET_BREACH)]
    assert layout(log) == [(60, 70)]


def test_FA7_list_offsets_by_time():
    log = SegmentedLog.create(LogConfig())
    for ts in (at(10), at(10, 5), at(9, 58), at(10, 10)):
        produce(log, ts)
    assert log.high_watermark == 4
    assert log.list_offsets(at(10, 1)).offset == 1
    assert log.list_offsets(at(9, 59)).offset == 0  # first in offset order, not earliest in time
    assert log.list_offsets(at(10, 11)) == OffsetAndTimestamp(-1, -1)
    assert log.list_offsets(MAX_TIMESTAMP) == OffsetAndTimestamp(3, at(10, 10))
    assert log.list_offsets(LATEST_TIMESTAMP).offset == 4
    assert log.list_offsets(EARLIEST_TIMESTAMP).offset == 0


def test_FA7_a_by_duration_reset_asks_for_now_minus_the_duration():
    """A7's log through the consumer's reset rule: by_duration:D asks ListOffsets for now - D
    (AutoOffsetResetStrategy.timestamp(), floored to the ms as Instant.toEpochMilli does) and takes
    the answer as it comes, -1 included (the consumer then keeps no position)."""
    log = SegmentedLog.create(LogConfig())
    for ts in (at(10), at(10, 5), at(9, 58), at(10, 10)):
        produce(log, ts)
    now = at(10, 11)
    assert reset_timestamp("earliest", now) == EARLIEST_TIMESTAMP
    assert reset_timestamp("latest", now) == LATEST_TIMESTAMP
    assert reset_timestamp("by_duration:PT10M", now, 10 * MIN * 1_000_000) == at(10, 1)
    assert reset_timestamp("by_duration:PT0.0005S", now, 500_000) == now - 1  # floored
    assert reset_timestamp("by_duration:P1D", now, DAY * 1_000_000) == 0  # before the clock's start
    with pytest.raises(LogError):
        reset_timestamp("none", now)

    def by(minutes: int) -> int:
        return reset_offset(log, "by_duration", now_ms=now, duration_ns=minutes * MIN * 1_000_000)

    assert (by(10), by(12), by(1), by(0), by(24 * 60)) == (1, 0, 3, -1, 0)
    log.delete_records(2)
    assert by(24 * 60) == 2 == reset_offset(log, "earliest"), "before every record: the earliest left"


# ---- §A.3 the roll rule, piece by piece -------------------------------------------------------


def test_time_roll_is_strict_and_uses_the_first_batch_max_timestamp():
    log = SegmentedLog.create(LogConfig(segment_ms=HOUR))
    # first batch: timestamps 10:00 and 10:10, so the segment's clock starts at 10:10
    log.append([(at(10), None, "a"), (at(10, 10), None, "b")], 20, now_ms=0)
    produce(log, at(11, 10), now=0)  # exactly segment.ms after: no roll
    assert len(log.segments) == 1
    produce(log, at(11, 10) + 1, now=0)  # the broker's clock plays no part
    assert layout(log) == [(0, 3), (3, 4)]


def test_time_roll_by_wall_clock_when_the_first_batch_has_no_timestamp():
    log = SegmentedLog.create(LogConfig(segment_ms=HOUR), now_ms=0)
    produce(log, -1, now=0)
    produce(log, -1, now=HOUR)
    assert len(log.segments) == 1
    produce(log, -1, now=HOUR + 1)
    assert len(log.segments) == 2


def test_roll_jitter_is_injected_and_shortens_segment_ms():
    draws = iter([1_000_000, 7])
    config = LogConfig(segment_ms=HOUR, segment_jitter_ms=10 * MIN)
    log = SegmentedLog.create(config, roll_jitter=seeded_jitter(lambda: next(draws)))
    assert log.active.roll_jitter_ms == 1_000_000 % (10 * MIN) == 400_000
    produce(log, 0)
    produce(log, HOUR - 400_000 + 1)
    assert len(log.segments) == 2 and log.active.roll_jitter_ms == 7


def test_compacted_topic_rolls_by_max_compaction_lag():
    config = LogConfig(cleanup_policy="compact", segment_ms=DAY, max_compaction_lag_ms=HOUR)
    assert config.max_segment_ms == HOUR
    log = SegmentedLog.create(config)
    produce(log, 0)
    produce(log, HOUR + 1)
    assert len(log.segments) == 2


def test_full_offset_index_rolls():
    # 24 index bytes: three 8-byte offset entries, two 12-byte time entries; a time entry is added
    # only when the max timestamp grew, so with one timestamp the offset index fills first
    log = SegmentedLog.create(LogConfig(segment_index_bytes=24, index_interval_bytes=10))
    for _ in range(4):
        produce(log, 0, size=11)
    # an entry goes in before the 2nd, 3rd and 4th appends (more than 10 bytes unindexed)
    assert (log.active.offset_index_entries, log.active.time_index_entries) == (3, 1)
    produce(log, 0, size=11)
    assert layout(log) == [(0, 4), (4, 5)]


def test_full_time_index_rolls():
    log = SegmentedLog.create(LogConfig(segment_index_bytes=24, index_interval_bytes=10))
    for ts in range(3):
        produce(log, ts, size=11)
    assert (log.active.offset_index_entries, log.active.time_index_entries) == (2, 2)
    produce(log, 3, size=11)
    assert layout(log) == [(0, 3), (3, 4)]


def test_relative_offset_overflow_rolls():
    segment = Segment(base_offset=0, created_ms=0)
    config = LogConfig()
    assert not segment.should_roll(config, 10, 0, 2**31 - 1, 0)
    assert segment.should_roll(config, 10, 0, 2**31, 0)


def test_batch_larger_than_a_segment_is_refused():
    log = SegmentedLog.create(LogConfig(segment_bytes=100))
    with pytest.raises(LogError) as err:
        produce(log, 0, size=101)
    assert err.value.error == "RECORD_LIST_TOO_LARGE"
    assert log.log_end_offset == 0


def test_contract_keys_build_the_config():
    config = LogConfig.from_topic({"name": "t", "segment.bytes": 2048, "retention.ms": -1,
                                   "cleanup.policy": "compact,delete", "retention.bytes": 10})
    assert (config.segment_bytes, config.retention_ms, config.retention_bytes) == (2048, -1, 10)
    assert config.delete and config.compact


# ---- §A.4 retention ----------------------------------------------------------------------------


def test_retention_never_deletes_at_or_above_the_high_watermark():
    log = SegmentedLog.create(LogConfig(segment_bytes=20, retention_ms=HOUR))
    for _ in range(4):
        log.append([(0, None, "v")], 10, now_ms=0)  # a follower has not caught up: HW stays
    log.update_high_watermark(2)
    assert layout(log) == [(0, 2), (2, 4)]
    assert [d.segment.base_offset for d in log.retention_pass(DAY)] == [0]
    assert log.retention_pass(2 * DAY) == []  # [2..3] reaches past the HW
    assert log.next_deletion_ms() is None
    log.update_high_watermark(4)
    assert [d.segment.base_offset for d in log.retention_pass(2 * DAY)] == [2]
    assert layout(log) == [(4, 4)]


def test_size_retention_keeps_the_active_segment_unless_retention_bytes_is_zero():
    log = SegmentedLog.create(LogConfig(retention_bytes=1, retention_ms=-1))
    produce(log, 0)
    assert log.retention_pass(1) == []
    log.config = LogConfig(retention_bytes=0, retention_ms=-1)  # a dynamic config change
    assert [d.reason for d in log.retention_pass(2)] == [RETENTION_SIZE_BREACH]
    assert layout(log) == [(1, 1)] and log.log_start_offset == 1


def test_compact_only_runs_the_start_offset_pass_and_refuses_delete_records():
    log = SegmentedLog.create(LogConfig(cleanup_policy="compact", segment_bytes=20,
                                        retention_ms=1, retention_bytes=0))
    for _ in range(4):
        produce(log, 0)
    assert log.retention_pass(DAY) == []
    with pytest.raises(LogError) as err:
        log.delete_records(2)
    assert err.value.error == "POLICY_VIOLATION"  # Partition.deleteRecordsOnLeader checks config.delete


def test_delete_records_bounds():
    log = a5_log()
    with pytest.raises(LogError) as err:
        log.delete_records(71)  # past the HW
    assert err.value.error == "OFFSET_OUT_OF_RANGE"
    assert log.delete_records(10) == 50  # behind the start: no change, no error
    assert log.delete_records(-1) == 70  # -1 is the high watermark
    assert [d.segment.base_offset for d in log.retention_pass(0)] == [50]
    assert layout(log) == [(60, 70)]  # the active segment holds data: it stays


def test_eight_idle_days_cost_a_handful_of_checks():
    class Counting(SegmentedLog):
        passes = 0

        def retention_pass(self, now_ms):
            Counting.passes += 1
            return super().retention_pass(now_ms)

    config = LogConfig(segment_bytes=100, retention_ms=DAY)
    log = Counting(config, SegmentedLog.create(config).segments)
    schedule = RetentionSchedule()
    for i in range(30):
        produce(log, i * MIN)
    deletions = schedule.run_until(log, 8 * DAY)
    assert Counting.passes <= 4  # of 2,304 scheduled checks
    assert schedule.last_check_ms == 8 * DAY - 5 * MIN + 30_000
    # each 10-record segment went at the first check more than a day after its newest record
    due = [schedule.check_at_or_after(m * MIN + DAY + 1) for m in (9, 19, 29)]
    assert [d.at_ms for d in deletions] == due
    assert log.log_start_offset == log.log_end_offset == 30


def test_jumping_schedule_matches_every_check():
    rng = random.Random(7)
    config = LogConfig(segment_bytes=50, segment_ms=20 * MIN, retention_ms=HOUR, retention_bytes=120)
    jumping, stepping = SegmentedLog.create(config), SegmentedLog.create(config)
    schedule = RetentionSchedule(interval_ms=MIN)
    got, want = [], []
    t, check = 0, 30_000  # checks every minute from 30 s
    for _ in range(200):
        t += rng.choice([1_000, 30_000, 7 * MIN, 3 * HOUR])
        got += [(d.segment.base_offset, d.reason, d.at_ms) for d in schedule.run_until(jumping, t)]
        while check <= t:
            want += [(d.segment.base_offset, d.reason, d.at_ms) for d in stepping.retention_pass(check)]
            check += MIN
        size = rng.randint(5, 30)
        for log in (jumping, stepping):
            produce(log, t, size=size)
    assert got == want and got


# ---- §A.5 reads and §A.6 ListOffsets ---------------------------------------------------------


def test_reads_between_hw_and_leo_are_empty_and_above_leo_out_of_range():
    log = SegmentedLog.create(LogConfig())
    for _ in range(5):
        log.append([(0, None, "v")], 10, now_ms=0)
    log.update_high_watermark(3)
    assert [r.offset for r in log.read(1)] == [1, 2]
    assert log.read(3) == [] and log.read(5) == []
    assert [r.offset for r in log.read(3, isolation=None)] == [3, 4]  # a follower reads to the LEO
    with pytest.raises(LogError) as err:
        log.read(6)
    assert err.value.error == "OFFSET_OUT_OF_RANGE"


def test_list_offsets_hides_hits_at_or_past_the_high_watermark():
    log = SegmentedLog.create(LogConfig())
    log.append([(100, None, "a")], 10, now_ms=0)
    log.append([(200, None, "b")], 10, now_ms=0)
    log.update_high_watermark(1)
    assert log.list_offsets(150) == OffsetAndTimestamp(-1, -1)
    assert log.list_offsets(MAX_TIMESTAMP) == OffsetAndTimestamp(-1, -1)
    assert log.list_offsets(LATEST_TIMESTAMP).offset == 1
    assert log.list_offsets(LATEST_TIMESTAMP, isolation=None).offset == 2


def test_list_offsets_searches_only_the_first_segment_with_a_late_enough_timestamp():
    # UnifiedLog.searchOffsetInLocalLog picks the first segment whose largest timestamp >= T and
    # searches it alone from the log start offset; records below the start still count for the
    # pick, so a match in a later segment is not found
    log = SegmentedLog.create(LogConfig(segment_bytes=20))
    for ts in (500, 10, 20, 600):
        produce(log, ts)
    assert layout(log) == [(0, 2), (2, 4)]
    assert log.list_offsets(400).offset == 0
    log.delete_records(1)
    assert log.list_offsets(400) == OffsetAndTimestamp(-1, -1)
    assert log.list_offsets(550).offset == 3


def test_an_empty_log_answers_without_records():
    log = SegmentedLog.create(LogConfig())
    assert log.read(0) == []
    assert log.list_offsets(MAX_TIMESTAMP) == OffsetAndTimestamp(-1, -1)
    assert log.list_offsets(0) == OffsetAndTimestamp(-1, -1)
    assert log.next_deletion_ms() is None  # nothing to delete, ever: a schedule runs no pass
    assert RetentionSchedule().run_until(log, 8 * DAY) == []


# ---- invariants over random schedules ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_invariants_over_random_schedules(seed):
    rng = random.Random(seed)
    config = LogConfig(segment_bytes=rng.choice([40, 100, 300]), segment_ms=rng.choice([MIN, HOUR]),
                       retention_ms=rng.choice([-1, 10 * MIN, HOUR]),
                       retention_bytes=rng.choice([-1, 0, 150, 500]),
                       cleanup_policy=rng.choice(["delete", "compact,delete"]))
    log = SegmentedLog.create(config)
    schedule = RetentionSchedule(interval_ms=rng.choice([MIN, 5 * MIN]))
    t = 0
    for _ in range(150):
        t += rng.choice([0, 1_000, MIN, 20 * MIN, 2 * HOUR])
        active_before = log.active
        step = rng.random()
        if step < 0.6:
            n = rng.randint(1, 3)
            log.append([(t + rng.randint(-MIN, MIN), None, "v")] * n, 10 * n, now_ms=t)
        elif step < 0.75:
            log.update_high_watermark(rng.randint(log.high_watermark, log.log_end_offset))
        elif step < 0.85 and log.high_watermark > log.log_start_offset:
            log.delete_records(rng.randint(log.log_start_offset, log.high_watermark))
        else:
            deleted = schedule.run_until(log, t)
            # the active segment goes only when every segment does, after a fresh empty one is rolled
            if any(d.segment is active_before for d in deleted):
                assert log.active.size_bytes == 0 and log.active.base_offset == log.log_end_offset
        assert log.log_start_offset <= log.last_stable_offset <= log.high_watermark <= log.log_end_offset
        assert log.segments[0].base_offset <= log.log_start_offset
        for left, right in zip(log.segments, log.segments[1:], strict=False):
            assert left.next_offset == right.base_offset and left.base_offset < right.base_offset
        assert all(s.size_bytes > 0 for s in log.segments[:-1])
        for segment in log.segments[:-1]:
            assert segment.size_bytes <= config.segment_bytes
        offsets = [r.offset for s in log.segments for r in s.records()]
        assert offsets == list(range(log.segments[0].base_offset, log.log_end_offset))


# ---- a batch the leader cannot append (UnifiedLog.append 874-877; Errors 10 and 18) ----------


def _too_big(topic: dict, records: list[str], nbytes: int) -> dict:
    from engine import simulate

    sc = {
        "topic": {"replication.factor": 3, **topic},
        "consumers": [],
        "actions": [{"do": "produce", "records": records, "bytes": nbytes}, {"do": "settle"}],
    }
    return simulate(sc, steps=True)


def test_a_batch_over_segment_bytes_is_refused_by_the_leader_and_not_retried():
    """RecordBatchTooLargeException is Errors.RECORD_LIST_TOO_LARGE (18), not retriable: the
    producer fails the batch at once; nothing is appended anywhere (the run goes on)."""
    r = _too_big({"segment.bytes": 200}, ["a", "b", "c"], 300)
    (p,) = r["produce"]
    assert (p["outcome"], p["error"], p["attempts"]) == ("failed", "RECORD_LIST_TOO_LARGE", 1)
    refused = [s for s in r["steps"] if s["kind"] == "leader_reject_too_large"]
    assert len(refused) == 1 and "segment.bytes=200" in refused[0]["text"]
    assert r["partitions"][0]["log"] == [] and r["partitions"][0]["leo"] == 0


def test_a_record_over_max_message_bytes_gets_message_too_large():
    """max.message.bytes is not a scenario key: its default, 1048588 bytes, applies."""
    r = _too_big({}, ["big"], 2_000_000)
    (p,) = r["produce"]
    assert (p["outcome"], p["error"]) == ("failed", "MESSAGE_TOO_LARGE")


def test_a_several_record_batch_over_max_message_bytes_is_refused_clearly():
    """Kafka's producer splits such a batch and resends the parts (Sender.completeBatch); not
    simulated yet, so the run stops with a problem, never half-way."""
    from engine import ScenarioError

    with pytest.raises(ScenarioError) as e:
        _too_big({}, ["x", "y"], 2_000_000)
    assert "split" in e.value.problems[0]["message"] and e.value.problems[0]["path"] == "actions[0]"
