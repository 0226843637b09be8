"""A replica's segments and retention on top of its log (engine/segments.py holds the rules):
appends into segments, the retention schedule, DeleteRecords (kafka-clients-logs.md §A).

A mixin of engine.sim.Sim: its methods read and change the partition simulation's state
(`self.brokers`, `self.ctl`, `self.batches`, ...), which Sim.__init__ sets up.
"""

from __future__ import annotations

from ..scenario import ScenarioError
from ..segments import Batch, LogError, OffsetAndTimestamp, SegmentedLog, batch_size_bytes
from ..state import (
    NO_LEADER,
    Broker,
)
from ..transactions import list_offsets_committed

# a leader's cleaned log as a follower copies it: its cleaner point, its batches below that point
# by base offset, the offsets its cleaner removed
_Cleaned = tuple[int, dict[int, Batch], set[int]]


class LogRole:

    # ---------------------------------------------------------------------------------------
    # segments and retention (part-2 scenarios: engine/segments.py keeps each replica's segments)

    def _append_segments(self, br: Broker, start: int, entries: list[tuple[int, str, int]]) -> None:
        """The same records, batch by batch, into the replica's segments (UnifiedLog.append with
        maybeRoll): a producer batch keeps its CreateTime, key and size on every replica."""
        seg = br.seg
        assert seg is not None
        if seg.log_end_offset != start:  # keep the two views of the log on the same offsets
            seg.truncate_to(start, self.now)
            if seg.log_end_offset < start:
                seg.roll(self.now, start)
        cleaned = self._leader_cleaned_batches(br, start)
        i = 0
        while i < len(entries):
            if cleaned is not None and start + i < cleaned[0]:
                step = self._copy_cleaned(seg, start + i, start + len(entries), cleaned)
                if step:
                    i += step
                    continue
            bidx = entries[i][2]
            j = i + 1
            while j < len(entries) and entries[j][2] == bidx:
                j += 1
            b = self.batches[bidx] if bidx >= 0 else None
            done = b.on_disk if b is not None else None
            if done is not None and done.base_offset == start + i and len(done.records) == j - i:
                # the same batch at the same offsets on another replica: one frozen object serves all
                seg.maybe_roll(done, self.now).append(done, seg.config, self.now)
                i = j
                continue
            ts = b.timestamp if b is not None else self.now
            key = b.key if b is not None else None
            records = [(ts, key, entries[k][1]) for k in range(i, j)]
            size = b.nbytes if b is not None and b.nbytes is not None else None
            if size is None or (b is not None and j - i != len(b.records)):
                encoded = [(t, None if k is None else k.encode(), None if v is None else v.encode())
                           for t, k, v in records]
                size = batch_size_bytes(encoded)
            try:
                pid = b.session.pid if b is not None and b.seq >= 0 else -1
                written = seg.append(records, size, self.now, pid)
                if b is not None and j - i == len(b.records):
                    b.on_disk = written
            except LogError as exc:
                raise ScenarioError([{"path": "actions", "message": f"{exc.error}: {exc}"}]) from None
            i = j
        self._schedule_retention()

    def _leader_cleaned_batches(self, br: Broker, start: int) -> _Cleaned | None:
        """For a follower fetching below its leader's cleaner point: that point, the leader's batches
        there by base offset, and the offsets its cleaner removed. A fetch returns the batches as they
        are in the leader's log, so a follower copies the cleaned ones, with their gaps and their
        tombstone horizons (§D.4, KIP-534: the horizon is in the batch header), not the records the
        leader's cleaner already removed. None when there is nothing cleaned to copy."""
        if br.role != "follower" or br.leader_id == NO_LEADER:
            return None
        src = self.brokers[br.leader_id].seg
        if src is None or not src.cleaner_checkpoint or src.cleaner_checkpoint <= start:
            return None
        cp = src.cleaner_checkpoint
        batches = {b.base_offset: b for s in src.segments if s.base_offset < cp for b in s.batches}
        return cp, batches, src.cleaned_away

    def _copy_cleaned(self, seg: SegmentedLog, offset: int, end: int,
                      cleaned: _Cleaned) -> int:
        """Copy what the leader's cleaned log holds at `offset` into the follower's segments: its
        batch starting there (when the fetch covers all of it), or nothing when its cleaner removed
        the offset. Returns how many offsets that covers; 0 means copy the record as fetched."""
        _cp, batches, gone = cleaned
        b = batches.get(offset)
        if b is not None and b.last_offset < end:
            seg.maybe_roll(b, self.now).append(b, seg.config, self.now)
            held = {r.offset for r in b.records}
            seg.cleaned_away.update(o for o in range(b.base_offset, b.last_offset + 1) if o not in held)
            return b.last_offset - offset + 1
        if b is None and offset in gone:
            seg.cleaned_away.add(offset)
            return 1
        return 0

    def log_start_offset(self) -> int:
        """The partition's log start offset: its leader's (0 before part 2)."""
        c = self.ctl
        leader = self.brokers.get(c.leader) if c.leader != NO_LEADER else None
        if leader is not None and leader.seg is not None:
            return leader.seg.log_start_offset
        return 0

    def list_offsets(self, timestamp: int, isolation: str) -> OffsetAndTimestamp | None:
        """ListOffsets answered by the partition's leader (KafkaApis.handleListOffsetRequest ->
        ReplicaManager.fetchOffsetForTimestamp -> Partition.fetchOffsetForTimestamp): the rule is
        SegmentedLog.list_offsets, over the leader's segments at its current high watermark. None
        when no running leader can answer (the client asks again later)."""
        c = self.ctl
        leader = self.brokers.get(c.leader) if c.leader != NO_LEADER else None
        if leader is None or not leader.alive or leader.role != "leader" or leader.seg is None:
            return None
        leader.seg.update_high_watermark(leader.hw)
        answer = leader.seg.list_offsets(timestamp, isolation)
        if isolation == "read_committed" and self.has_txn:  # the LSO (engine/transactions.py)
            answer = list_offsets_committed(self, answer, timestamp)
        return answer

    def delete_records(self, offset: int) -> tuple[int, str | None]:
        """Partition.deleteRecordsOnLeader: the leader moves its log start offset (-1: to its HW);
        the followers follow (in Kafka on their next fetch; here at once). (low watermark, error)."""
        c = self.ctl
        leader = self.brokers.get(c.leader) if c.leader != NO_LEADER else None
        if leader is None or not leader.alive or leader.role != "leader" or leader.seg is None:
            return 0, "NOT_LEADER_OR_FOLLOWER"
        seg = leader.seg
        seg.update_high_watermark(leader.hw)
        try:
            low = seg.delete_records(offset)
        except LogError as exc:
            return seg.log_start_offset, exc.error
        for bid in self.replicas:
            f = self.brokers[bid]
            if f is not leader and f.alive and f.seg is not None:
                f.seg.update_high_watermark(f.hw)
                if low <= f.seg.high_watermark:
                    f.seg.maybe_increment_log_start_offset(low)
        self._schedule_retention()
        return low, None

    def _schedule_retention(self) -> None:
        """Queue the next retention check that can delete something (RetentionSchedule skips the
        ones that cannot), on the fixed schedule: 30 s after start, then every
        log.retention.check.interval.ms. A check that turns out to delete nothing (a high
        watermark still behind) schedules the one after it. Without size retention, appends only
        push the earliest deletion later, so a check already queued stays the first useful one."""
        if self.cfg.log.compact:  # LogManager.cleanupLogs skips compacted logs: the cleaner deletes
            self._schedule_cleaner()
            return
        if self.retention_at is not None and self.cfg.log.retention_bytes < 0:
            return
        due: int | None = None
        for bid in self.replicas:
            br = self.brokers[bid]
            if br.alive and br.seg is not None:
                br.seg.update_high_watermark(br.hw)
                d = br.seg.next_deletion_ms(assume_caught_up=True)
                if d is not None and (due is None or d < due):
                    due = d
        if due is None:
            return
        sched = self.retention_schedule
        t = sched.check_at_or_after(max(due, self.now + 1))
        if self.retention_at is not None and self.retention_at <= t:
            return
        self.retention_at = t
        self.at(t, self._retention_check, t)

    def _retention_check(self, t: int) -> None:
        """LogManager.cleanupLogs on each broker holding a replica: UnifiedLog.deleteOldSegments."""
        if self.retention_at != t:
            return  # a later schedule replaced this one
        self.retention_at = None
        for bid in self.replicas:
            self._retention_on(bid)
        self._schedule_retention()

    def _retention_on(self, bid: int) -> None:
        """UnifiedLog.deleteOldSegments on one broker's replica, told as a step when it deletes."""
        br = self.brokers[bid]
        if br.alive and br.seg is not None:
            seg = br.seg
            seg.update_high_watermark(br.hw)
            before = seg.log_start_offset
            gone = seg.retention_pass(self.now)
            if not gone:
                return
            why = {
                "RetentionMsBreach": f"retention.ms={self.cfg.log.retention_ms}",
                "RetentionSizeBreach": f"retention.bytes={self.cfg.log.retention_bytes}",
                "StartOffsetBreach": "below the log start offset",
            }
            names = ", ".join(
                f"{_span(d.segment.base_offset, d.segment.next_offset)} ({why.get(d.reason, d.reason)})"
                for d in gone
            )
            self.step(
                "broker_delete_segments",
                f"broker-{bid}",
                f"B{bid} deletes segment{'s' if len(gone) > 1 else ''} {names}; "
                f"log start offset {before} -> {seg.log_start_offset}",
                broker=bid,
            )


def _span(base: int, nxt: int) -> str:
    """A segment's offsets, `base-last`; a segment the cleaner emptied has none."""
    return f"{base}-{nxt - 1}" if nxt > base else f"{base} (emptied by the cleaner)"
