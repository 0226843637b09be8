"""One partition replica's log as segments: when a segment rolls, which segments retention deletes,
what a read below the log start or past the end answers, and ListOffsets.

Pure and clock-free: every call that depends on time takes `now_ms`; record timestamps are the
producer's CreateTime, as the records carry them. The rules paraphrase Kafka 4.x's
`UnifiedLog`, `LocalLog` and `LogSegment` (storage module); each method names the one it follows.

The high watermark is the caller's (replication sets it): this module only refuses to delete or
start the log at or above it. Sizes are the bytes the scenario gives each record (Kafka counts
the batch on disk, headers included). Simplifications, each stated where it matters: a produce
batch is the unit of a roll check; the roll jitter (`segment.jitter.ms`) is 0; the offset and time
indexes never fill; the bytes of a deleted segment leave at once (Kafka keeps them for
`file.delete.delay.ms`, unreadable, since the log start moved first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3  # ListOffsets' special timestamps


@dataclass(frozen=True)
class Record:
    offset: int
    timestamp_ms: int
    size: int
    value: str = ""
    key: str | None = None


@dataclass
class Segment:
    base_offset: int
    records: list[Record] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(r.size for r in self.records)

    @property
    def first_timestamp(self) -> int | None:
        return self.records[0].timestamp_ms if self.records else None

    @property
    def largest_timestamp(self) -> int | None:
        """`LogSegment.largestTimestamp`: the newest record timestamp in the segment (not its last)."""
        return max((r.timestamp_ms for r in self.records), default=None)

    @property
    def name(self) -> str:
        """The segment file's name: its base offset, zero-padded to 20 digits (LogFileUtils)."""
        return f"{self.base_offset:020d}.log"


@dataclass(frozen=True)
class Deleted:
    base_offset: int
    next_offset: int
    reason: Literal["log_start_offset", "retention.bytes", "retention.ms"]


@dataclass(frozen=True)
class ReadResult:
    error: str | None
    records: tuple[Record, ...] = ()


class OffsetOutOfRangeError(Exception):
    """What `poll()` throws with `auto.offset.reset=none` (OffsetOutOfRangeException)."""


@dataclass
class SegmentedLog:
    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    retention_ms: int = 604_800_000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    segments: list[Segment] = field(default_factory=lambda: [Segment(0)])
    log_start_offset: int = 0
    hw: int = 0

    # -- offsets ---------------------------------------------------------------------------

    @property
    def leo(self) -> int:
        """The offset the next record gets."""
        active = self.segments[-1]
        return active.records[-1].offset + 1 if active.records else active.base_offset

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    # -- appends ---------------------------------------------------------------------------

    def should_roll(self, batch: list[tuple[int, int]]) -> bool:
        """`LogSegment.shouldRoll`, asked by `UnifiedLog.maybeRoll` before each append, for a batch
        of (timestamp, size): roll if the batch would push the active segment past segment.bytes,
        or if the segment is non-empty and the batch's newest timestamp is more than segment.ms
        after the segment's first record's (strictly)."""
        active = self.active
        incoming = sum(size for _, size in batch)
        if active.size > self.segment_bytes - incoming:
            return True
        first = active.first_timestamp
        if first is None:
            return False
        newest = max(ts for ts, _ in batch)
        return newest - first > self.segment_ms

    def roll(self) -> Segment:
        """`UnifiedLog.roll`: a new empty active segment based at the log end offset."""
        if self.active.records:
            self.segments.append(Segment(self.leo))
        return self.active

    def append(self, batch: list[tuple[int, int]] | list[tuple[int, int, str]]) -> list[int]:
        """`UnifiedLog.append` on the leader for one produce batch of (timestamp_ms, size[, value]):
        roll first when `should_roll` says so, then give the records consecutive offsets from the
        LEO. Returns the offsets. An idle partition never rolls: only an append checks."""
        if not batch:
            return []
        pairs = [(entry[0], entry[1]) for entry in batch]
        if self.should_roll(pairs):
            self.roll()
        first = self.leo
        for i, entry in enumerate(batch):
            value = entry[2] if len(entry) > 2 else ""  # type: ignore[misc]
            self.active.records.append(Record(first + i, entry[0], entry[1], value))
        return list(range(first, first + len(batch)))

    # -- retention -------------------------------------------------------------------------

    def retention_pass(self, now_ms: int) -> list[Deleted]:
        """`UnifiedLog.deleteOldSegments`: with `delete` in the policy, the log-start pass, then
        retention.bytes, then retention.ms; with `compact` alone, the log-start pass only. Each pass
        deletes a prefix of whole segments (`deletableSegments`): it stops at the first segment the
        rule keeps, and never deletes data at or above the HW, nor an empty last segment. When every
        segment goes, a new empty active segment is rolled first (`deleteSegments`: "we must always
        have at least one segment"), and the log start becomes the old LEO."""
        deleted = self._delete_prefix("log_start_offset", lambda seg, nxt, _: nxt <= self.log_start_offset)
        if "delete" not in self.cleanup_policy.split(","):
            return deleted
        if self.retention_bytes >= 0 and self.size >= self.retention_bytes:
            over = [self.size - self.retention_bytes]

            def by_size(seg: Segment, _nxt: int, _i: int) -> bool:
                if over[0] - seg.size < 0:
                    return False
                over[0] -= seg.size
                return True

            deleted += self._delete_prefix("retention.bytes", by_size)
        if self.retention_ms >= 0:

            def by_time(seg: Segment, _nxt: int, _i: int) -> bool:
                newest = seg.largest_timestamp
                return newest is not None and now_ms - newest > self.retention_ms

            deleted += self._delete_prefix("retention.ms", by_time)
        return deleted

    def _delete_prefix(self, reason, rule) -> list[Deleted]:
        doomed: list[Segment] = []
        for i, seg in enumerate(self.segments):
            last = i == len(self.segments) - 1
            upper = self.leo if last else self.segments[i + 1].base_offset
            if last and not seg.records:
                break
            if self.hw < upper or not rule(seg, upper, i):
                break
            doomed.append(seg)
        if not doomed:
            return []
        if len(doomed) == len(self.segments):
            self.segments.append(Segment(self.leo))  # roll an empty active segment first
        out = []
        for seg in doomed:
            upper = self.segments[self.segments.index(seg) + 1].base_offset
            out.append(Deleted(seg.base_offset, upper, reason))
        self.segments = [s for s in self.segments if s not in doomed]
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        return out

    def delete_records(self, before_offset: int) -> int:
        """`UnifiedLog.maybeIncrementLogStartOffset` for DeleteRecords (KIP-107): the log start moves
        to `before_offset`, possibly mid-segment; never backwards and never past the HW (Kafka
        answers OFFSET_OUT_OF_RANGE). Segments wholly below it go at the next retention pass."""
        if before_offset > self.hw:
            raise ValueError(f"{OFFSET_OUT_OF_RANGE}: {before_offset} is above the high watermark {self.hw}")
        self.log_start_offset = max(self.log_start_offset, before_offset)
        return self.log_start_offset

    # -- reads -----------------------------------------------------------------------------

    def read(self, offset: int, max_records: int = 500) -> ReadResult:
        """A consumer fetch (`UnifiedLog.read` / `LocalLog.read`, read_uncommitted): below the log
        start or past the LEO is OFFSET_OUT_OF_RANGE; from the HW to the LEO an empty answer with no
        error; otherwise the records from `offset` up to the HW."""
        if offset < self.log_start_offset or offset > self.leo:
            return ReadResult(OFFSET_OUT_OF_RANGE)
        out = [r for s in self.segments for r in s.records if offset <= r.offset < self.hw]
        return ReadResult(None, tuple(out[:max_records]))

    def list_offsets(self, timestamp: int) -> tuple[int, int]:
        """ListOffsets on the leader for a consumer (read_uncommitted): (offset, timestamp).
        EARLIEST is the log start, LATEST the HW (not the LEO), MAX_TIMESTAMP the record with the
        largest timestamp; a real time T finds the first record *in offset order* with timestamp
        >= T at or above the log start, and (-1, -1) when there is none below the HW."""
        if timestamp == EARLIEST:
            return self.log_start_offset, -1
        if timestamp == LATEST:
            return self.hw, -1
        visible = [r for s in self.segments for r in s.records if r.offset >= self.log_start_offset]
        if timestamp == MAX_TIMESTAMP:
            if not visible:
                return -1, -1
            best = max(visible, key=lambda r: (r.timestamp_ms, -r.offset))
            return best.offset, best.timestamp_ms
        for seg in self.segments:
            if seg.largest_timestamp is None or seg.largest_timestamp < timestamp:
                continue
            for r in seg.records:
                if r.offset >= self.log_start_offset and r.timestamp_ms >= timestamp:
                    return (r.offset, r.timestamp_ms) if r.offset < self.hw else (-1, -1)
        return -1, -1


def reset_position(log: SegmentedLog, policy: str) -> int:
    """Where a consumer seeks after OFFSET_OUT_OF_RANGE, or with no committed offset
    (`auto.offset.reset`, read_uncommitted): earliest is the log start, latest the HW; none
    throws, as `poll()` does."""
    if policy == "earliest":
        return log.list_offsets(EARLIEST)[0]
    if policy == "latest":
        return log.list_offsets(LATEST)[0]
    if policy == "none":
        raise OffsetOutOfRangeError("auto.offset.reset=none: poll() throws OffsetOutOfRangeException")
    raise ValueError(f"auto.offset.reset must be earliest, latest or none, not {policy!r}")
