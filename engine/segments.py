"""One partition replica's log as Kafka keeps it: a row of segments, the last one active.

Pure and deterministic: no wall clock (every call that needs the time takes `now_ms`) and no
randomness (a segment's roll jitter comes from the `roll_jitter` callable the caller passes; the
default is Kafka's default `segment.jitter.ms` = 0).

What is modelled, each after the Kafka code it paraphrases (Kafka 4.0, trunk at 1eb7644, the
files `UnifiedLog.scala`, `LocalLog.scala`, `LogSegment.java`, `Partition.scala`,
`ReplicaManager.scala`, `LogManager.scala`):

- the offsets: log start offset, high watermark, log end offset;
- appends, with the roll check (`UnifiedLog.maybeRoll` / `LogSegment.shouldRoll`) made before the
  batch is written: size including the incoming batch, time measured with record timestamps from
  the segment's first batch, a full offset or time index, a relative-offset overflow;
- retention (`UnifiedLog.deleteOldSegments`): the log-start-offset, size and time passes, each
  deleting a prefix of whole segments below the high watermark, the empty active segment rolled
  when every segment goes, files renamed `.deleted` and removed `file.delete.delay.ms` later, and
  the `kafka-log-retention` schedule (`RetentionSchedule`), which skips checks that cannot delete;
- DeleteRecords (`Partition.deleteRecordsOnLeader`), reads (`UnifiedLog.read`), ListOffsets
  (`Partition.fetchOffsetForTimestamp`), and the consumer's `auto.offset.reset`.

Compaction is engine/compaction.py (its docstring lists the step kinds and result fields it adds):
here a `compact` policy switches the size and time passes off, a batch can carry the cleaner's
delete horizon and keep its offsets when records leave it, and the log keeps its cleaner
checkpoint and the offsets the cleaner removed.

Not modelled here: transactions (engine/transactions.py gives the last stable offset that the
uncleanable point and the fetches use), tiered storage, and record batches split across fetches
(a read returns whole records, not Kafka's whole batches that the client trims).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
NO_TIMESTAMP = -1
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
OFFSET_INDEX_ENTRY_BYTES = 8
TIME_INDEX_ENTRY_BYTES = 12
RECORD_BATCH_OVERHEAD = 61
LOG_INITIAL_TASK_DELAY_MS = 30_000

# Why a pass deleted a segment: the names of Kafka's SegmentDeletionReason classes.
START_OFFSET_BREACH = "StartOffsetBreach"
RETENTION_SIZE_BREACH = "RetentionSizeBreach"
RETENTION_MS_BREACH = "RetentionMsBreach"

OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"


class LogError(Exception):
    """A request the log refuses; `error` is the Kafka error name the client receives."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True)
class LogConfig:
    """The topic configs a log reads, with Kafka 4.x defaults. Field names are Kafka's keys with
    dots as underscores."""

    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10_485_760
    index_interval_bytes: int = 4096
    retention_ms: int = 604_800_000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"  # "delete", "compact" or "compact,delete"
    min_cleanable_dirty_ratio: float = 0.5
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1_048_588
    file_delete_delay_ms: int = 60_000

    @classmethod
    def from_topic(cls, topic: Mapping[str, object]) -> LogConfig:
        """Read Kafka's own keys (`"segment.bytes"`, ...) from a scenario's topic object; keys it
        does not know are ignored."""
        known = {f.replace("_", "."): f for f in cls.__dataclass_fields__}
        return cls(**{known[k]: v for k, v in topic.items() if k in known})  # type: ignore[arg-type]

    # the config is frozen, so what follows from it is worked out once (each append reads it)
    @cached_property
    def delete(self) -> bool:
        """`LogConfig.delete`: the policy includes `delete`."""
        return "delete" in self.cleanup_policy.split(",")

    @cached_property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @cached_property
    def max_segment_ms(self) -> int:
        """`LogConfig.maxSegmentMs`: a compacted topic rolls by `max.compaction.lag.ms` too."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms


def no_jitter(config: LogConfig) -> int:
    return 0


def seeded_jitter(draw: Callable[[], int]) -> Callable[[LogConfig], int]:
    """`LogConfig.randomSegmentJitter` with the caller's generator: `draw()` stands for
    `Utils.abs(random.nextInt())`; the jitter is that modulo min(segment.jitter.ms, segment.ms)."""

    def jitter(config: LogConfig) -> int:
        if config.segment_jitter_ms == 0:
            return 0
        return draw() % min(config.segment_jitter_ms, config.segment_ms)

    return jitter


def _varint_size(value: int) -> int:
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def batch_size_bytes(records: Sequence[tuple[int, bytes | None, bytes | None]]) -> int:
    """On-disk size of an uncompressed v2 batch of `(timestamp_ms, key, value)` records, header-less:
    `DefaultRecordBatch.RECORD_BATCH_OVERHEAD` plus `DefaultRecord.sizeInBytes` per record."""
    if not records:
        return 0
    base_ts = records[0][0]
    total = RECORD_BATCH_OVERHEAD
    for delta, (ts, key, value) in enumerate(records):
        body = 1 + _varint_size(delta) + _varint_size(ts - base_ts) + 1  # attributes, deltas, 0 headers
        for part in (key, value):
            body += 1 if part is None else _varint_size(len(part)) + len(part)
        total += _varint_size(body) + body
    return total


@dataclass(frozen=True)
class Record:
    offset: int
    timestamp_ms: int
    key: str | None = None
    value: str | None = None


_timestamp = attrgetter("timestamp_ms")


@dataclass(frozen=True)
class Batch:
    records: tuple[Record, ...]
    size_bytes: int
    producer_id: int = -1  # an idempotent producer's id, else -1 (RecordBatch.NO_PRODUCER_ID)
    # set by the cleaner (engine/compaction.py): the tombstone horizon KIP-534 writes into the
    # batch header, and the (base, last) offsets a rewritten batch keeps from the original even
    # when it lost its first or last records, or all of them (an empty batch)
    delete_horizon_ms: int | None = None
    span: tuple[int, int] | None = None
    empty_max_timestamp_ms: int = NO_TIMESTAMP  # an empty batch keeps its original's max timestamp
    # worked out once, when the batch is made: a batch is frozen and shared by every replica that
    # holds it, and each append asks for these several times (roll check, segment bookkeeping)
    max_timestamp_ms: int = field(init=False, repr=False, compare=False)
    offset_of_max_timestamp: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # `DefaultRecordBatch.offsetOfMaxTimestamp`: the first record carrying the batch's max
        # timestamp (max() returns the first of equal ones)
        if not self.records:  # an empty batch the cleaner kept
            object.__setattr__(self, "max_timestamp_ms", self.empty_max_timestamp_ms)
            object.__setattr__(self, "offset_of_max_timestamp", -1)
            return
        top = max(self.records, key=_timestamp)
        object.__setattr__(self, "max_timestamp_ms", top.timestamp_ms)
        object.__setattr__(self, "offset_of_max_timestamp", top.offset)

    @property
    def base_offset(self) -> int:
        return self.span[0] if self.span is not None else self.records[0].offset

    @property
    def last_offset(self) -> int:
        return self.span[1] if self.span is not None else self.records[-1].offset


@dataclass
class Segment:
    """One `.log` file with its indexes, as `LogSegment` keeps them in memory."""

    base_offset: int
    created_ms: int
    roll_jitter_ms: int = 0
    batches: list[Batch] = field(default_factory=list)
    size_bytes: int = 0
    first_batch_timestamp_ms: int | None = None  # LogSegment.rollingBasedTimestamp
    max_timestamp_ms: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    last_modified_ms: int = 0
    offset_index_entries: int = 0
    time_index_entries: int = 0
    time_index_last_ms: int = NO_TIMESTAMP
    bytes_since_last_index_entry: int = 0

    @property
    def next_offset(self) -> int:
        return self.batches[-1].last_offset + 1 if self.batches else self.base_offset

    @property
    def file_name(self) -> str:
        """`LogFileUtils.logFile`: the base offset padded to 20 digits."""
        return f"{self.base_offset:020d}.log"

    @property
    def largest_timestamp_ms(self) -> int:
        """`LogSegment.largestTimestamp`: the max record timestamp, else the file's mtime."""
        return self.max_timestamp_ms if self.max_timestamp_ms >= 0 else self.last_modified_ms

    def time_waited_for_roll(self, now_ms: int, batch_max_timestamp_ms: int) -> int:
        """`LogSegment.timeWaitedForRoll`: the incoming batch's max timestamp minus the first
        batch's, or wall-clock age when the first batch had no timestamp."""
        first = self.first_batch_timestamp_ms
        if first is not None and first >= 0:
            return batch_max_timestamp_ms - first
        return now_ms - self.created_ms

    def should_roll(self, config: LogConfig, batch_bytes: int, batch_max_timestamp_ms: int,
                    batch_last_offset: int, now_ms: int) -> bool:
        """`LogSegment.shouldRoll`: size past `segment.bytes` counting the incoming batch, or a
        non-empty segment older than `segment.ms` minus its jitter (strictly), or a full index, or
        an offset that does not fit 32 bits relative to the base."""
        reached_roll_ms = (self.time_waited_for_roll(now_ms, batch_max_timestamp_ms)
                           > config.max_segment_ms - self.roll_jitter_ms)
        offset_entries = (config.segment_index_bytes // OFFSET_INDEX_ENTRY_BYTES)
        time_entries = (config.segment_index_bytes // TIME_INDEX_ENTRY_BYTES)
        return (self.size_bytes > config.segment_bytes - batch_bytes
                or (self.size_bytes > 0 and reached_roll_ms)
                or self.offset_index_entries >= offset_entries
                or self.time_index_entries >= time_entries
                or not 0 <= batch_last_offset - self.base_offset <= INT_MAX)

    def append(self, batch: Batch, config: LogConfig, now_ms: int) -> None:
        """`LogSegment.append`: remember the first batch's timestamp, the max timestamp and where it
        is, and add a sparse index entry once more than `index.interval.bytes` went in unindexed."""
        if self.size_bytes == 0:
            self.first_batch_timestamp_ms = batch.max_timestamp_ms
        if batch.max_timestamp_ms > self.max_timestamp_ms:
            self.max_timestamp_ms = batch.max_timestamp_ms
            self.offset_of_max_timestamp = batch.offset_of_max_timestamp
        if self.bytes_since_last_index_entry > config.index_interval_bytes:
            self.offset_index_entries += 1
            if self.time_index_entries == 0 or self.max_timestamp_ms > self.time_index_last_ms:
                self.time_index_entries += 1
                self.time_index_last_ms = self.max_timestamp_ms
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += batch.size_bytes
        self.batches.append(batch)
        self.size_bytes += batch.size_bytes
        self.last_modified_ms = now_ms

    def records(self) -> list[Record]:
        return [r for b in self.batches for r in b.records]


@dataclass(frozen=True)
class Deletion:
    """A segment retention removed: gone from reads at `at_ms`, its `.deleted` files removed from
    disk at `files_removed_ms` (`LocalLog.deleteSegmentFiles` with `file.delete.delay.ms`)."""

    segment: Segment
    reason: str
    at_ms: int
    files_removed_ms: int


@dataclass(frozen=True)
class OffsetAndTimestamp:
    """A ListOffsets answer; (-1, -1) is "no such offset" (the Java consumer's `null`)."""

    offset: int
    timestamp_ms: int


NOT_FOUND = OffsetAndTimestamp(-1, NO_TIMESTAMP)


@dataclass
class SegmentedLog:
    """One partition replica's log (`UnifiedLog` over `LocalLog`). The replication layer moves the
    high watermark with `update_high_watermark`; with one replica it follows the LEO."""

    config: LogConfig
    segments: list[Segment]
    log_start_offset: int = 0
    high_watermark: int = 0
    roll_jitter: Callable[[LogConfig], int] = no_jitter
    deleted: list[Deletion] = field(default_factory=list)
    # compaction (engine/compaction.py): the cleaner checkpoint (first dirty offset; None before
    # the first pass) and the offsets the cleaner removed, which readers of the flat log skip
    cleaner_checkpoint: int | None = None
    cleaned_away: set[int] = field(default_factory=set)

    @classmethod
    def create(cls, config: LogConfig, now_ms: int = 0,
               roll_jitter: Callable[[LogConfig], int] = no_jitter) -> SegmentedLog:
        first = Segment(0, now_ms, roll_jitter(config), last_modified_ms=now_ms)
        return cls(config, [first], roll_jitter=roll_jitter)

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark  # no transactions in this model

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self.segments)

    def bytes_on_disk(self, now_ms: int) -> int:
        """Live segments plus deleted ones whose files are still waiting out `file.delete.delay.ms`."""
        pending = sum(d.segment.size_bytes for d in self.deleted if d.files_removed_ms > now_ms)
        return self.size_bytes + pending

    # -- appends and rolls -------------------------------------------------------------------

    def append(self, records: Sequence[tuple[int, str | None, str | None]], size_bytes: int,
               now_ms: int, producer_id: int = -1) -> Batch:
        """`UnifiedLog.append` of one batch of `(timestamp_ms, key, value)` records, `size_bytes` on
        disk: size checks, offsets from the LEO, `maybeRoll`, then the write to the active segment.
        The high watermark does not move here."""
        if not records:
            raise ValueError("a batch holds at least one record")
        too_big = self.too_large(size_bytes)
        if too_big is not None:
            error, key, limit = too_big
            raise LogError(error, f"batch of {size_bytes} bytes > {key} {limit}")
        first = self.log_end_offset
        batch = Batch(tuple(Record(first + i, ts, k, v) for i, (ts, k, v) in enumerate(records)),
                      size_bytes, producer_id)
        self.maybe_roll(batch, now_ms).append(batch, self.config, now_ms)
        return batch

    def too_large(self, size_bytes: int) -> tuple[str, str, int] | None:
        """(error, the topic setting, its value) a leader answers for a batch of `size_bytes` it
        cannot append: over max.message.bytes (UnifiedLog.analyzeAndValidateRecords:
        MESSAGE_TOO_LARGE, 10) or over segment.bytes (UnifiedLog.append 874-877:
        RECORD_LIST_TOO_LARGE, 18, Kafka's RecordBatchTooLargeException); None when it fits."""
        if size_bytes > self.config.max_message_bytes:
            return "MESSAGE_TOO_LARGE", "max.message.bytes", self.config.max_message_bytes
        if size_bytes > self.config.segment_bytes:
            return "RECORD_LIST_TOO_LARGE", "segment.bytes", self.config.segment_bytes
        return None

    def maybe_roll(self, batch: Batch, now_ms: int) -> Segment:
        """`UnifiedLog.maybeRoll`: roll to a segment based at the batch's first offset when the
        active segment `shouldRoll`; runs only inside an append."""
        active = self.segments[-1]
        if active.should_roll(self.config, batch.size_bytes, batch.max_timestamp_ms,
                              batch.last_offset, now_ms):
            return self.roll(now_ms, batch.base_offset)
        return active

    def roll(self, now_ms: int, expected_next_offset: int = 0) -> Segment:
        """`LocalLog.roll`: a new active segment at max(expected offset, LEO); an empty active
        segment already at that offset is replaced (the KAFKA-6388 case)."""
        offset = max(expected_next_offset, self.log_end_offset)
        segment = Segment(offset, now_ms, self.roll_jitter(self.config), last_modified_ms=now_ms)
        if self.active.base_offset == offset:
            self.segments[-1] = segment
        else:
            self.segments.append(segment)
        return segment

    def truncate_to(self, offset: int, now_ms: int) -> None:
        """`LocalLog.truncateTo` (a follower's truncation, a lost page cache or disk): every record
        at or above `offset` goes; segments based at or above it are deleted, the one holding it is
        cut (its size scaled to the records kept); an emptied log restarts at `offset`. The high
        watermark and log start offset never stay past the new end."""
        if offset >= self.log_end_offset:
            return
        keep = [seg for seg in self.segments if seg.base_offset < offset]
        if not keep:
            self.segments = [Segment(offset, now_ms, self.roll_jitter(self.config), last_modified_ms=now_ms)]
        else:
            last = keep[-1]
            cut = Segment(last.base_offset, last.created_ms, last.roll_jitter_ms, last_modified_ms=now_ms)
            for batch in last.batches:
                if batch.base_offset >= offset:
                    break
                if batch.last_offset >= offset:
                    kept = tuple(r for r in batch.records if r.offset < offset)  # a cleaned batch has gaps
                    n = offset - batch.base_offset
                    span = batch.last_offset - batch.base_offset + 1
                    batch = Batch(kept, max(1, batch.size_bytes * n // span), batch.producer_id,
                                  batch.delete_horizon_ms,
                                  (batch.base_offset, offset - 1) if batch.span is not None else None,
                                  batch.max_timestamp_ms)  # kept when the cut leaves it empty
                cut.append(batch, self.config, now_ms)
            keep[-1] = cut
            self.segments = keep
        self.high_watermark = min(self.high_watermark, offset)
        self.log_start_offset = min(self.log_start_offset, offset)
        if self.cleaned_away:
            self.cleaned_away = {o for o in self.cleaned_away if o < offset}
        # LogManager.truncateTo -> maybeTruncateCleanerCheckpointToActiveSegmentBaseOffset (LM
        # 752-759, 926-929): the cleaner checkpoint drops to the base of the segment the
        # truncation left active, not to the truncation offset (cleaning restarts at a boundary)
        active_base = self.segments[-1].base_offset
        if self.cleaner_checkpoint is not None and self.cleaner_checkpoint > active_base:
            self.cleaner_checkpoint = active_base

    def update_high_watermark(self, offset: int) -> int:
        """`UnifiedLog.updateHighWatermark`: clamped into [log start offset, LEO]."""
        self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
        return self.high_watermark

    # -- the log start offset, DeleteRecords and retention ----------------------------------

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """`UnifiedLog.maybeIncrementLogStartOffset`: only forward, never past the high watermark."""
        if offset > self.high_watermark:
            raise LogError(OFFSET_OUT_OF_RANGE, f"log start offset {offset} would pass the "
                           f"high watermark {self.high_watermark}")
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        return True

    def delete_records(self, offset: int) -> int:
        """`Partition.deleteRecordsOnLeader`: the admin `deleteRecords(beforeOffset)`; -1 means the
        high watermark. Moves the log start offset (mid-segment is fine); segments go at the next
        retention check. Refused on a log without `delete` in its policy. Returns the low
        watermark."""
        if not self.config.delete:
            raise LogError("POLICY_VIOLATION", "records can not be deleted under this cleanup.policy")
        target = self.high_watermark if offset == -1 else offset
        if target < 0:
            raise LogError(OFFSET_OUT_OF_RANGE, f"offset {target} is not valid")
        self.maybe_increment_log_start_offset(target)
        return self.log_start_offset

    def _deletable(self, predicate: Callable[[Segment, Segment | None], bool]) -> list[Segment]:
        """`UnifiedLog.deletableSegments`: walk from the oldest segment, stop at the first that fails
        the predicate, reaches past the high watermark, or is the empty last segment."""
        out: list[Segment] = []
        for i, segment in enumerate(self.segments):
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            upper = nxt.base_offset if nxt else self.log_end_offset
            last_and_empty = nxt is None and segment.size_bytes == 0
            if not (self.high_watermark >= upper and predicate(segment, nxt)) or last_and_empty:
                break
            out.append(segment)
        return out

    def _start_offset_breached(self) -> list[Segment]:
        """`UnifiedLog.deleteLogStartOffsetBreachedSegments`: every offset is below the start."""
        return self._deletable(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset)

    def _size_breached(self) -> list[Segment]:
        """`UnifiedLog.deleteRetentionSizeBreachedSegments`: keep at least `retention.bytes`."""
        retention = self.config.retention_bytes
        size = self.size_bytes
        if retention < 0 or size < retention:
            return []
        diff = size - retention

        def breached(segment: Segment, nxt: Segment | None) -> bool:
            nonlocal diff
            if diff - segment.size_bytes >= 0:
                diff -= segment.size_bytes
                return True
            return False

        return self._deletable(breached)

    def _time_breached(self, now_ms: int) -> list[Segment]:
        """`UnifiedLog.deleteRetentionMsBreachedSegments`: the newest record is older than
        `retention.ms` (strictly)."""
        if self.config.retention_ms < 0:
            return []
        return self._deletable(lambda s, nxt: now_ms - s.largest_timestamp_ms > self.config.retention_ms)

    def _delete_segments(self, deletable: list[Segment], reason: str, now_ms: int) -> list[Deletion]:
        """`UnifiedLog.deleteSegments`: when every segment goes, roll a new empty active one first
        ("we must always have at least one segment"); raise the log start offset to the first
        survivor before removing the segments from lookups; delete their files later."""
        if not deletable:
            return []
        if len(deletable) == len(self.segments):
            fresh = self.roll(now_ms)
            if deletable[-1].base_offset == fresh.base_offset:
                deletable = deletable[:-1]
        if not deletable:
            return []
        survivor = self.segments[len(deletable)]
        self.maybe_increment_log_start_offset(survivor.base_offset)
        del self.segments[: len(deletable)]
        done = [Deletion(s, reason, now_ms, now_ms + self.config.file_delete_delay_ms) for s in deletable]
        self.deleted.extend(done)
        return done

    def retention_pass(self, now_ms: int) -> list[Deletion]:
        """`UnifiedLog.deleteOldSegments`: the log-start-offset pass, then (only with `delete` in
        the policy) the size pass and the time pass, each on what the previous one left."""
        done = self._delete_segments(self._start_offset_breached(), START_OFFSET_BREACH, now_ms)
        if self.config.delete:
            done += self._delete_segments(self._size_breached(), RETENTION_SIZE_BREACH, now_ms)
            done += self._delete_segments(self._time_breached(now_ms), RETENTION_MS_BREACH, now_ms)
        return done

    def next_deletion_ms(self, assume_caught_up: bool = False) -> int | None:
        """The earliest time a `retention_pass` would delete something if nothing else happened to
        the log, or None for never (this lets a schedule jump over checks that do nothing).
        assume_caught_up: as if the high watermark were at the LEO (a replicated log's HW follows
        its appends within milliseconds, without another call to this log)."""
        if assume_caught_up and self.high_watermark < self.log_end_offset:
            hw, self.high_watermark = self.high_watermark, self.log_end_offset
            try:
                return self.next_deletion_ms()
            finally:
                self.high_watermark = hw
        if self._start_offset_breached() or (self.config.delete and self._size_breached()):
            return -LONG_MAX
        if not self.config.delete or self.config.retention_ms < 0:
            return None
        if not self._deletable(lambda s, nxt: True):
            return None  # blocked by the high watermark or empty: only an outside change helps
        return self.segments[0].largest_timestamp_ms + self.config.retention_ms + 1

    # -- reads and ListOffsets --------------------------------------------------------------

    def _fetch_limit(self, isolation: str | None) -> int:
        if isolation == "read_committed":
            return self.last_stable_offset
        if isolation == "read_uncommitted":
            return self.high_watermark
        return self.log_end_offset  # a follower or debug request

    def read(self, offset: int, max_records: int = 500,
             isolation: str | None = "read_uncommitted") -> list[Record]:
        """`UnifiedLog.read` then `LocalLog.read`: below the log start offset or above the LEO is
        OFFSET_OUT_OF_RANGE; from the fetch limit (HW for consumers) up to the LEO is an empty
        answer without error; otherwise records from `offset` up to the limit."""
        if offset < self.log_start_offset:
            raise LogError(OFFSET_OUT_OF_RANGE, f"offset {offset} is below the log start offset "
                           f"{self.log_start_offset}")
        if offset > self.log_end_offset:
            raise LogError(OFFSET_OUT_OF_RANGE, f"offset {offset} is above the log end offset "
                           f"{self.log_end_offset}")
        limit = self._fetch_limit(isolation)
        out: list[Record] = []
        for segment in self.segments:
            if segment.next_offset <= offset:
                continue
            for record in segment.records():
                if record.offset >= limit or len(out) >= max_records:
                    return out
                if record.offset >= offset:
                    out.append(record)
        return out

    def list_offsets(self, timestamp: int, isolation: str | None = "read_uncommitted") -> OffsetAndTimestamp:
        """ListOffsets on the leader: `Partition.fetchOffsetForTimestamp` over
        `UnifiedLog.fetchOffsetByTimestamp`, with `ReplicaManager.fetchOffsetForTimestamp`'s rule
        that a hit at or past the last fetchable offset is no answer. EARLIEST is the log start
        offset; LATEST the HW (LSO under read_committed; LEO for a replica); MAX_TIMESTAMP the
        first record with the largest timestamp; a time T the first record in offset order, in the
        first segment whose largest timestamp is >= T, with timestamp >= T and offset >= the log
        start offset."""
        limit = self._fetch_limit(isolation)
        if timestamp == EARLIEST_TIMESTAMP:
            return OffsetAndTimestamp(self.log_start_offset, NO_TIMESTAMP)
        if timestamp == LATEST_TIMESTAMP:
            return OffsetAndTimestamp(limit, NO_TIMESTAMP)
        found: OffsetAndTimestamp | None = None
        if timestamp == MAX_TIMESTAMP:
            top = max(self.segments, key=lambda s: s.max_timestamp_ms)  # the first with the max
            if top.max_timestamp_ms >= 0:
                found = OffsetAndTimestamp(top.offset_of_max_timestamp, top.max_timestamp_ms)
        elif timestamp >= 0:
            target = next((s for s in self.segments if s.largest_timestamp_ms >= timestamp), None)
            if target is not None:
                found = next((OffsetAndTimestamp(r.offset, r.timestamp_ms) for r in target.records()
                              if r.timestamp_ms >= timestamp and r.offset >= self.log_start_offset), None)
        else:
            raise ValueError(f"unknown ListOffsets timestamp {timestamp}")
        if found is None or found.offset >= limit:
            return NOT_FOUND
        return found


@dataclass
class RetentionSchedule:
    """The `kafka-log-retention` task (`LogManager.startup`): first run `log.initial.task.delay.ms`
    (30 s) after the broker starts, then at a fixed rate of `log.retention.check.interval.ms`.
    `run_until` runs the checks that fall in a span but evaluates only those that can delete, so
    days of idle simulated time cost a handful of steps. This task skips logs whose policy includes
    `compact`: for those the cleaner thread calls `deleteOldSegments` after each cleaning
    (`LogCleaner.CleanerThread`), which is the caller's to schedule."""

    interval_ms: int = 300_000
    start_ms: int = 0
    initial_delay_ms: int = LOG_INITIAL_TASK_DELAY_MS
    last_check_ms: int | None = None

    def check_at_or_after(self, t_ms: int) -> int:
        first = self.start_ms + self.initial_delay_ms
        if t_ms <= first:
            return first
        return first + -(-(t_ms - first) // self.interval_ms) * self.interval_ms

    def last_check_at_or_before(self, t_ms: int) -> int | None:
        first = self.start_ms + self.initial_delay_ms
        if t_ms < first:
            return None
        return first + (t_ms - first) // self.interval_ms * self.interval_ms

    def run_until(self, log: SegmentedLog, until_ms: int) -> list[Deletion]:
        """Every check in (last check, until_ms], in order; checks that could delete nothing are
        skipped, which changes nothing since a pass that deletes nothing has no effect."""
        first = self.start_ms + self.initial_delay_ms
        start = first if self.last_check_ms is None else self.last_check_ms + 1
        t = self.check_at_or_after(start)
        done: list[Deletion] = []
        while t <= until_ms:
            due = log.next_deletion_ms()
            if due is None:
                break
            t = max(t, self.check_at_or_after(due))
            if t > until_ms:
                break
            done += log.retention_pass(t)
            t = self.check_at_or_after(t + 1)
        last = self.last_check_at_or_before(until_ms)
        if last is not None:
            self.last_check_ms = last
        return done


# -- the consumer side ---------------------------------------------------------------------


def reset_timestamp(policy: str, now_ms: int = 0, duration_ns: int | None = None) -> int:
    """The timestamp a consumer's offset reset puts in its ListOffsets request
    (`AutoOffsetResetStrategy.timestamp()`): EARLIEST for `earliest`, LATEST for `latest`, and for
    `by_duration:D` (Kafka 4.0, KIP-1106; `duration_ns` is D) the client's now minus D, as
    `Instant.now().minus(duration).toEpochMilli()` computes it (floored to the millisecond).
    `none` has no timestamp: it raises, as `poll()` does.

    Kafka 4.0 (the 4.0 branch at 4ae6814, the code 4.0.0 shipped; clients/.../consumer/internals/):
    AutoOffsetResetStrategy.java 121-131 is this rule; OffsetFetcher.java 213-223 sends it in a
    ListOffsets request to the leader when the position is reset. The simulated clock starts at 0
    and no record's timestamp is below 0, so a time before 0 finds what 0 finds: it is clamped,
    which keeps it clear of the special negative timestamps (-1 LATEST, -2 EARLIEST, ...)."""
    if policy == "earliest":
        return EARLIEST_TIMESTAMP
    if policy == "latest":
        return LATEST_TIMESTAMP
    if duration_ns is not None:
        return max(0, (now_ms * 1_000_000 - duration_ns) // 1_000_000)
    raise LogError(OFFSET_OUT_OF_RANGE, f"no valid position and auto.offset.reset={policy}")


def reset_offset(
    log: SegmentedLog,
    policy: str,
    isolation: str = "read_uncommitted",
    *,
    now_ms: int = 0,
    duration_ns: int | None = None,
) -> int:
    """The consumer's offset reset (`SubscriptionState.resetStrategy`, then a ListOffsets with
    `reset_timestamp`): `earliest` is the log start offset, `latest` the HW (the LSO under
    read_committed), `by_duration` the first offset with a timestamp at or after now minus the
    duration, or -1 when the leader has none below the HW (the client then keeps no position; see
    engine/consumers.py `_reset`); `none` raises, as `poll()` does."""
    return log.list_offsets(reset_timestamp(policy, now_ms, duration_ns), isolation).offset


def initial_position(log: SegmentedLog, committed: int | None, policy: str,
                     isolation: str = "read_uncommitted") -> int:
    """Where an assigned partition starts: the committed offset when there is one (whatever the
    policy), else `auto.offset.reset` (`SubscriptionState.resetInitializingPositions`). With `none`
    there is no error code: the Java client throws NoOffsetForPartitionException, named here."""
    if committed is not None and committed >= 0:
        return committed
    try:
        return reset_offset(log, policy, isolation)
    except LogError as exc:
        raise LogError("NoOffsetForPartitionException", str(exc)) from None


@dataclass(frozen=True)
class Fetched:
    records: list[Record]
    position: int
    reset_from: int | None = None  # the out-of-range position a reset replaced


def consumer_fetch(log: SegmentedLog, position: int, policy: str, max_records: int = 500,
                   isolation: str = "read_uncommitted") -> Fetched:
    """A consumer fetch at its position (`FetchCollector.handleInitializeErrors`): on
    OFFSET_OUT_OF_RANGE, `earliest`/`latest` reset the position and fetch again; `none` lets the
    error out of `poll()`. The reset discards nothing the group committed: that stays as it was."""
    reset_from = None
    try:
        records = log.read(position, max_records, isolation)
    except LogError as exc:
        if exc.error != OFFSET_OUT_OF_RANGE or policy not in ("earliest", "latest"):
            raise
        reset_from, position = position, reset_offset(log, policy, isolation)
        records = log.read(position, max_records, isolation)
    next_position = records[-1].offset + 1 if records else position
    return Fetched(records, next_position, reset_from)
