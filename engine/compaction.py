"""Log compaction: Kafka's log cleaner over one replica's segments (engine/segments.py).

Pure and deterministic, like segments.py: every call that needs the time takes `now_ms`.

What is modelled, each after the Kafka code it paraphrases (trunk at 1eb7644, the files
core/src/main/scala/kafka/log/LogCleaner.scala (LCl), LogCleanerManager.scala (LCM),
clients/.../record/MemoryRecords.java (MR), storage/.../log/LogValidator.java (LV)):

- the cleanable range (`LogCleanerManager.cleanableOffsets`, LCM 622-679): the first dirty offset
  is the cleaner checkpoint, or the log start offset when there is none or it is out of range;
  the first uncleanable offset is the least of the last stable offset, the active segment's base
  and (with `min.compaction.lag.ms` > 0) the first dirty segment whose largest timestamp is
  within the lag, rounded down to a segment's base (`calculateCleanableBytes`, LCM 685-691);
- the dirty ratio (`LogToClean`, LCl 1226-1236): cleanable bytes over clean plus cleanable
  bytes, the active segment in neither; a log is cleaned when the ratio is strictly above
  `min.cleanable.dirty.ratio`, or when `max.compaction.lag.ms` has passed for its earliest dirty
  segment and it has cleanable bytes (`grabFilthiestCompactedLog`, LCM 181-225, and
  `maxCompactionDelay`, LCM 599-612); among several logs the highest ratio goes first;
- one pass (`Cleaner.doClean`, LCl 594-635): the offset map key -> latest offset over the dirty
  range (LCl 1035-1124; its latest offset is the last batch's last offset, the new cleaner point
  is that plus one), segments from the log's start up to the new cleaner point grouped while
  their sizes fit `segment.bytes` and their indexes `segment.index.bytes`
  (`groupSegmentsBySize`, LCl 976-1002), each group recopied into one segment at the first's
  base offset keeping the last one's modification time (`cleanSegments`, LCl 650-718);
- which records stay (`shouldRetainRecord`, LCl 905-937): past the map's latest offset, or the
  key's latest offset and either a value or a tombstone whose batch has no delete horizon yet or
  one still in the future; which empty batches stay (`cleanInto`, LCl 752-790): an active
  idempotent producer's last batch and the last batch before the first uncleanable offset;
- the tombstone horizon (KIP-534, MR 186-205): the first pass that keeps a batch holding a
  tombstone writes `deleteHorizonMs` = that pass's time + `delete.retention.ms` into it; a later
  pass at or after that time drops the tombstone; a rewritten batch keeps its base and last
  offsets (MR 296-300) and its horizon.

Not modelled: the offset map's 128 MiB buffer and MD5 hash collisions (every pass maps its whole
dirty range), transactions (aborted batches and markers: the last stable offset bounds the range
as Kafka does), message formats before v2 (the legacy horizon), the producer-expiry check's
schedule restarting with a broker (it runs every 10 minutes from the log's creation at time 0
here), and a rewritten batch's exact size: a batch that keeps k of its n
records keeps the batch overhead and k/n of the rest of its bytes, an empty one only the overhead
(or its whole size when that is smaller).

Replicas: each broker's cleaner cleans its own copy on the same grid. A follower that fetches below
its leader's cleaner point copies the leader's cleaned batches, gaps and horizons included, as a
fetch returns them (engine/actors/log.py); a truncation moves the checkpoint to the base of the
segment left active (LogManager.truncateTo). Not modelled there: a power loss can cut into cleaned
segments here, where Kafka flushes a segment when it rolls and a cleaned one before it is swapped in.

Vocabulary: this follows the cleaner's code, not the design doc. The log is a *clean* part
(already compacted) then a *dirty* part; the boundary is the *cleaner point* (the first dirty
offset, `cleaner-offset-checkpoint`). The design doc calls the clean part the *tail* and the dirty
part the *head* (DD 524-531).

For the simulation (engine/actors/cleaner.py), step kinds (engine/steps.py), stable names:
- `cleaner_check`: the first check after a segment rolled found the log not cleanable (the
  ratio at or below the threshold, or nothing cleanable yet, and why);
- `cleaner_offset_map`: a pass starts: its dirty range, ratio (or overdue max lag) and key map;
- `cleaner_rewrite`: the pass recopied its segments: groups, records kept and removed, tombstones
  stamped with a horizon, the new cleaner point (fields `kept`, `removed`, `cleaner_point`,
  `groups`, `stamped`, `horizon_ms`); `cleaner_offset_map` has `offset_map` and `ratio`,
  `cleaner_check` `ratio` and `cleaner_point`, `cleaner_tombstone_expired` `removed`;
- `cleaner_tombstone_expired`: the pass dropped tombstones whose horizon had passed;
- `leader_reject_invalid_record`: a record without a key refused by a compacted topic.
Result fields: `partitions[i].cleaner_point` (the leader's first dirty offset), `log` entries
without the offsets the cleaner removed (tombstones have `record` null), `segments` as cleaned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .segments import (
    INT_MAX,
    LONG_MAX,
    OFFSET_INDEX_ENTRY_BYTES,
    RECORD_BATCH_OVERHEAD,
    TIME_INDEX_ENTRY_BYTES,
    Batch,
    LogConfig,
    Segment,
    SegmentedLog,
)

PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms
PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000  # producer.id.expiration.check.interval.ms
INVALID_RECORD = "INVALID_RECORD"

# what ends the cleanable range (the first uncleanable offset's reason)
ACTIVE_SEGMENT = "the active segment"
LAST_STABLE_OFFSET = "the last stable offset"
MIN_LAG = "min.compaction.lag.ms"


def refuses(config: LogConfig, key: str | None) -> str | None:
    """`LogValidator.validateKey` (LV 597-604): a compacted topic refuses a record without a key;
    the whole produce request fails with INVALID_RECORD. The message, or None when accepted."""
    if config.compact and key is None:
        return "Compacted topic cannot accept message without key"
    return None


@dataclass(frozen=True)
class Cleanable:
    """`LogToClean`: where the dirty part starts, where the cleanable part ends, their sizes."""

    first_dirty: int
    first_uncleanable: int  # a segment's base offset
    clean_bytes: int
    cleanable_bytes: int
    limit: str  # what stopped the range: ACTIVE_SEGMENT, LAST_STABLE_OFFSET or MIN_LAG
    compaction_delay_ms: int  # > 0: max.compaction.lag.ms passed that long ago (needCompactionNow)

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def overdue(self) -> bool:
        return self.compaction_delay_ms > 0

    def eligible(self, config: LogConfig) -> bool:
        """LCM 212-214: some bytes at all, and either overdue with cleanable bytes or a ratio
        strictly above min.cleanable.dirty.ratio."""
        if self.total_bytes <= 0:
            return False
        return (self.overdue and self.cleanable_bytes > 0) or self.ratio > config.min_cleanable_dirty_ratio


def _floor_index(log: SegmentedLog, offset: int) -> int:
    """The index of the segment holding `offset` (the last based at or below it), 0 when none."""
    found = 0
    for i, s in enumerate(log.segments):
        if s.base_offset <= offset:
            found = i
        else:
            break
    return found


def first_dirty_offset(log: SegmentedLog) -> int:
    """LCM 626-644: the checkpoint when it lies in [log start offset, LEO], else the log start."""
    cp = log.cleaner_checkpoint
    if cp is None or cp < log.log_start_offset or cp > log.log_end_offset:
        return log.log_start_offset
    return cp


def cleanable_offsets(log: SegmentedLog, now_ms: int) -> Cleanable:
    """`cleanableOffsets`, `maxCompactionDelay` and the byte counts of `LogToClean`."""
    config = log.config
    first_dirty = first_dirty_offset(log)
    dirty_non_active = log.segments[_floor_index(log, first_dirty):-1]  # nonActiveLogSegmentsFrom
    limits = [(log.active.base_offset, ACTIVE_SEGMENT), (log.last_stable_offset, LAST_STABLE_OFFSET)]
    lag = max(config.min_compaction_lag_ms, 0)
    if lag > 0:
        young = next((s for s in dirty_non_active if s.largest_timestamp_ms > now_ms - lag), None)
        if young is not None:
            limits.append((young.base_offset, MIN_LAG))
    uncleanable, limit = min(limits, key=lambda x: x[0])
    uncleanable = max(first_dirty, uncleanable)
    # calculateCleanableBytes: the segment holding that offset (or the active one) is uncleanable
    end = _floor_index(log, uncleanable)
    first_uncleanable = log.segments[end].base_offset
    clean_bytes = sum(s.size_bytes for s in log.segments if s.base_offset < first_dirty)
    lo = _floor_index(log, min(first_dirty, first_uncleanable))
    cleanable_bytes = sum(s.size_bytes for s in log.segments[lo:end])
    # maxCompactionDelay: the earliest first-batch timestamp (> 0) among dirty non-active segments
    delay = 0
    max_lag = max(config.max_compaction_lag_ms, 0)
    if max_lag < LONG_MAX:
        # Kafka skips timestamps <= 0 (none); simulated time starts at 0, a real time here
        firsts = [s.first_batch_timestamp_ms for s in dirty_non_active
                  if s.first_batch_timestamp_ms is not None and s.first_batch_timestamp_ms >= 0]
        earliest = min(firsts, default=LONG_MAX)
        clean_until = now_ms - max_lag
        if earliest < clean_until:
            delay = clean_until - earliest
    return Cleanable(first_dirty, first_uncleanable, clean_bytes, cleanable_bytes, limit, delay)


def next_cleanable_ms(log: SegmentedLog, now_ms: int) -> int | None:
    """The earliest time at or after `now_ms` a check would clean this log if nothing were
    appended meanwhile, or None for never. Without appends, only time changes the answer:
    a segment leaving `min.compaction.lag.ms`, or `max.compaction.lag.ms` passing."""
    config = log.config
    if cleanable_offsets(log, now_ms).eligible(config):
        return now_ms
    times: set[int] = set()
    first_dirty = first_dirty_offset(log)
    for s in log.segments[_floor_index(log, first_dirty):-1]:
        if config.min_compaction_lag_ms > 0:
            times.add(s.largest_timestamp_ms + config.min_compaction_lag_ms)
        first = s.first_batch_timestamp_ms
        if config.max_compaction_lag_ms < LONG_MAX and first is not None and first >= 0:
            times.add(first + config.max_compaction_lag_ms + 1)
    for t in sorted(x for x in times if x > now_ms):
        if cleanable_offsets(log, t).eligible(config):
            return t
    return None


def active_producers(log: SegmentedLog, now_ms: int,
                     expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> dict[int, int]:
    """`UnifiedLog.lastRecordsOfActiveProducers`: each idempotent producer's last data offset, for
    producers not yet expired. A producer expires only when the periodic check finds its last
    batch at least producer.id.expiration.ms old (`PeriodicProducerExpirationCheck`, UnifiedLog
    469-470, every producer.id.expiration.check.interval.ms from the log's creation), so it stays
    active up to one interval longer."""
    last: dict[int, tuple[int, int]] = {}
    for s in log.segments:
        for b in s.batches:
            if b.producer_id >= 0:
                last[b.producer_id] = (b.last_offset, b.max_timestamp_ms)
    interval = PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS
    check = now_ms - now_ms % interval  # the last check at or before now (none before the first)
    if check < interval:
        return {pid: off for pid, (off, _ts) in last.items()}
    return {pid: off for pid, (off, ts) in last.items() if check - ts < expiration_ms}


@dataclass
class CleanPass:
    """What one pass did, for the steps that tell it and for tests."""

    t_ms: int
    cleanable: Cleanable
    offset_map: dict[str, int]
    cleaner_point: int  # the new checkpoint: the map's latest offset + 1
    groups: list[list[int]] = field(default_factory=list)  # base offsets of the segments merged
    kept: int = 0
    superseded: list[int] = field(default_factory=list)  # offsets removed for a newer record
    expired: list[int] = field(default_factory=list)  # tombstones removed: horizon passed
    stamped: list[int] = field(default_factory=list)  # tombstones kept, horizon written now
    horizon_ms: int | None = None  # the horizon written this pass
    # the batches kept with no records, (base offset, last offset, why): "producer" (an active
    # idempotent producer's last batch) or "end" (the last batch of the pass); and the segments
    # the pass left empty (their base offsets)
    kept_empty: list[tuple[int, int, str]] = field(default_factory=list)
    empty_segments: list[int] = field(default_factory=list)


def _index_bytes(s: Segment) -> tuple[int, int]:
    """The sizes of a rolled segment's offset and time indexes (trimmed to their entries)."""
    return s.offset_index_entries * OFFSET_INDEX_ENTRY_BYTES, s.time_index_entries * TIME_INDEX_ENTRY_BYTES


def _group_by_size(segments: list[Segment], config: LogConfig, first_uncleanable: int) -> list[list[Segment]]:
    """`groupSegmentsBySize` (LCl 976-1002)."""
    groups: list[list[Segment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size_bytes
        oidx, tidx = _index_bytes(segments[i])
        i += 1
        while i < len(segments):
            nxt = segments[i]
            noidx, ntidx = _index_bytes(nxt)
            last_offset = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            if not (size + nxt.size_bytes <= config.segment_bytes
                    and oidx + noidx <= config.segment_index_bytes
                    and tidx + ntidx <= config.segment_index_bytes
                    # LCl 992 `group.last`: the group is built in reverse, so that is its FIRST
                    # segment: the merged segment's offsets must fit 32 bits from its base
                    and (nxt.size_bytes == 0 or last_offset - group[0].base_offset <= INT_MAX)):
                break
            group.append(nxt)
            size += nxt.size_bytes
            oidx += noidx
            tidx += ntidx
            i += 1
        groups.append(group)
    return groups


def _resized(batch: Batch, kept: int) -> int:
    """The bytes of a rewritten batch keeping `kept` of its records (see the module's note)."""
    n = len(batch.records)
    if kept == n:
        return batch.size_bytes
    if batch.size_bytes <= RECORD_BATCH_OVERHEAD:
        return batch.size_bytes if kept == 0 else max(1, batch.size_bytes * kept // n)
    return RECORD_BATCH_OVERHEAD + (batch.size_bytes - RECORD_BATCH_OVERHEAD) * kept // n


def build_offset_map(log: SegmentedLog, cleanable: Cleanable, now_ms: int) -> CleanPass:
    """`Cleaner.buildOffsetMap` over the dirty range: key -> latest offset, and the new cleaner
    point (the last batch's last offset + 1). The pass, before `clean` recopies anything."""
    lo, hi = cleanable.first_dirty, cleanable.first_uncleanable
    offset_map: dict[str, int] = {}
    latest = -1
    for s in log.segments[_floor_index(log, lo):]:
        if s.base_offset >= hi:
            break
        for b in s.batches:
            for r in b.records:
                if r.key is not None and r.offset >= lo:
                    offset_map[r.key] = r.offset
            if b.last_offset >= lo:
                latest = max(latest, b.last_offset)
    return CleanPass(now_ms, cleanable, offset_map, latest + 1)


def clean(log: SegmentedLog, cleanable: Cleanable, now_ms: int, mapped: CleanPass | None = None) -> CleanPass:
    """One pass of `Cleaner.doClean` over `log`, in place (its offset map from `mapped`, else built
    now); returns what it did. The caller checked that the log is eligible; offsets never change,
    the log start offset never moves."""
    config = log.config
    hi = cleanable.first_uncleanable
    done = mapped if mapped is not None else build_offset_map(log, cleanable, now_ms)
    offset_map, latest = done.offset_map, done.cleaner_point - 1
    if latest < 0:  # nothing in the dirty range: nothing to recopy
        return done
    end = latest + 1
    producers = active_producers(log, now_ms)
    n_to_clean = sum(1 for s in log.segments[:-1] if s.base_offset < end)
    out: list[Segment] = []
    for group in _group_by_size(log.segments[:n_to_clean], config, hi):
        done.groups.append([s.base_offset for s in group])
        first = group[0]
        cleaned = Segment(first.base_offset, first.created_ms, first.roll_jitter_ms, last_modified_ms=now_ms)
        for s in group:
            for b in s.batches:
                kept_batch = _clean_batch(b, offset_map, latest, hi, producers, now_ms, config, done)
                if kept_batch is not None:
                    cleaned.append(kept_batch, config, now_ms)
        cleaned.last_modified_ms = group[-1].last_modified_ms  # LCl 703-705
        if not cleaned.batches:
            done.empty_segments.append(cleaned.base_offset)
        out.append(cleaned)
    log.segments[:n_to_clean] = out
    log.cleaned_away.update(done.superseded)
    log.cleaned_away.update(done.expired)
    log.cleaner_checkpoint = end
    return done


def _clean_batch(b: Batch, offset_map: Mapping[str, int], latest: int, upper: int,
                 producers: Mapping[int, int], now_ms: int, config: LogConfig,
                 done: CleanPass) -> Batch | None:
    """`cleanInto`'s filter for one batch: the batch as it is, rewritten, empty, or None (gone)."""
    keep = []
    tombstones = False
    for r in b.records:
        if r.offset > latest:
            keep.append(r)
        elif r.key is None or r.offset < offset_map.get(r.key, -1):
            done.superseded.append(r.offset)
        elif r.value is None and b.delete_horizon_ms is not None and now_ms >= b.delete_horizon_ms:
            done.expired.append(r.offset)
        else:
            keep.append(r)
    for r in keep:
        if r.value is None:
            tombstones = True
            break
    done.kept += len(keep)
    if keep:
        stamp = tombstones and b.delete_horizon_ms is None
        if len(keep) == len(b.records) and not stamp:
            return b
        horizon = now_ms + config.delete_retention_ms if stamp else b.delete_horizon_ms
        if stamp:
            done.stamped.extend(r.offset for r in keep if r.value is None)
            done.horizon_ms = horizon
        span = (b.base_offset, b.last_offset)
        return Batch(tuple(keep), _resized(b, len(keep)), b.producer_id, horizon, span)
    last_of_producer = b.producer_id >= 0 and producers.get(b.producer_id) == b.last_offset
    if last_of_producer or b.last_offset + 1 == upper:
        done.kept_empty.append((b.base_offset, b.last_offset, "producer" if last_of_producer else "end"))
        return Batch((), _resized(b, 0), b.producer_id, b.delete_horizon_ms, (b.base_offset, b.last_offset),
                     b.max_timestamp_ms)
    return None
