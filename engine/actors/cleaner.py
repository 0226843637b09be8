"""The log cleaner thread on each broker holding a replica of a compacted topic (engine/compaction.py
holds the rules; kafka-clients-logs.md §D): its checks every log.cleaner.backoff.ms, the passes,
and the retention it runs for compacted logs after each attempt.

`LogCleaner.CleanerThread.doWork` (LogCleaner.scala 384-442) cleans the filthiest log, then runs
`deleteOldSegments` on every compacted log, and sleeps log.cleaner.backoff.ms when it cleaned
nothing. A pass takes no simulated time here, so the thread's checks fall on a fixed grid, every
backoff from the broker's start; the checks that can change nothing are skipped (the next one
that can is queued), except the first one after a segment rolls, which tells the dirty ratio.

With several partitions each partition's simulation runs its own checks on the same grid: logs
cleanable at the same check are all cleaned then (Kafka cleans them one after the other, the
filthiest first, without sleeping in between). A broker restart does not move the grid.

A mixin of engine.sim.Sim: its methods read and change the partition simulation's state.
"""

from __future__ import annotations

from ..compaction import (
    LAST_STABLE_OFFSET,
    MIN_LAG,
    Cleanable,
    CleanPass,
    build_offset_map,
    clean,
    cleanable_offsets,
    first_dirty_offset,
    next_cleanable_ms,
)
from ..segments import SegmentedLog

MAX_PASSES_PER_CHECK = 8  # the thread loops without sleeping while a log stays cleanable


def _fmt_offset_list(offsets: list[int], limit: int = 8) -> str:
    shown = ", ".join(str(o) for o in offsets[:limit])
    return shown + (f", ... ({len(offsets)} in all)" if len(offsets) > limit else "")


def _span(ms: int) -> str:
    """A config's duration in words for a caption: "15 s", "1 day", "12 hours", "1 day 2 hours"."""
    parts, rest = [], int(ms)
    for size, one in ((86_400_000, "day"), (3_600_000, "hour"), (60_000, "min")):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count} {one}" + ("s" if count != 1 and one != "min" else ""))
    if rest or not parts:
        parts.append(f"{rest / 1000:g} s" if rest % 1000 == 0 or rest >= 1000 else f"{rest} ms")
    return " ".join(parts)


def _segments_text(groups: list[list[int]]) -> str:
    """The segments a pass copies, by base offset: "segment 0", "segments 0 and 4", "segments 0 + 2
    (merged into one at 0), 4 and 6"."""
    names = [f"{g[0]}" if len(g) == 1 else f"{' + '.join(str(b) for b in g)} (merged into one at {g[0]})"
             for g in groups]
    word = "segment" if len(groups) == 1 and len(groups[0]) == 1 else "segments"
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{word} {listed}"


class CleanerRole:

    def _cleaner_tick(self, t: int) -> int:
        """The first check of the cleaner thread at or after `t` (on its grid) not yet run."""
        backoff = max(1, self.cfg.timing.log_cleaner_backoff_ms)
        tick = -(-t // backoff) * backoff
        if self.cleaner_last is not None and tick <= self.cleaner_last:
            tick = self.cleaner_last + backoff
        return tick

    def _schedule_cleaner(self) -> None:
        """Queue the next check of the cleaner thread that can do something: clean (as if the high
        watermark had caught up with the appends), delete segments, or tell the ratio after a
        roll. Called after every append and after every check."""
        if not self.part2 or not self.cfg.log.compact:
            return
        soonest = self._cleaner_tick(self.now)
        if self.cleaner_at is not None and self.cleaner_at <= soonest:
            return
        # an append that rolled nothing changes no answer (the active segment counts for nothing),
        # except for size retention: skip the work when the segments are as last worked out
        key = tuple((bid, b.seg.active.base_offset, b.seg.log_start_offset)
                    for bid in self.replicas if (b := self.brokers[bid]).alive and b.seg is not None)
        if key == self.cleaner_key and self.cfg.log.retention_bytes < 0:
            return
        self.cleaner_key = key
        due: int | None = None
        for bid in self.replicas:
            br = self.brokers[bid]
            if not br.alive or br.seg is None:
                continue
            seg = br.seg
            if self.cleaner_seen.setdefault(bid, seg.active.base_offset) != seg.active.base_offset:
                due = self.now  # a roll: the next check tells the new ratio
                break
            for d in (self._caught_up_cleanable_ms(seg), seg.next_deletion_ms(assume_caught_up=True)):
                if d is not None and (due is None or d < due):
                    due = d
        if due is None:
            return
        t = self._cleaner_tick(max(due, self.now))
        if self.cleaner_at is not None and self.cleaner_at <= t:
            return
        self.cleaner_at = t
        self.at(t, self._cleaner_check, t)

    def _caught_up_cleanable_ms(self, seg: SegmentedLog) -> int | None:
        """next_cleanable_ms as if the high watermark were at the LEO: a replicated log's HW
        follows its appends within milliseconds, without another append to wake the schedule."""
        hw = seg.high_watermark
        seg.high_watermark = seg.log_end_offset
        try:
            return next_cleanable_ms(seg, self.now)
        finally:
            seg.high_watermark = hw

    def _cleaner_check(self, t: int) -> None:
        """One round of each replica's cleaner thread: clean while the log is cleanable, then
        deleteOldSegments (for a compacted log the retention task leaves this to the cleaner)."""
        if self.cleaner_at != t:
            return  # a later schedule replaced this one
        self.cleaner_at = None
        self.cleaner_last = t
        for bid in self.replicas:
            br = self.brokers[bid]
            if not br.alive or br.seg is None:
                continue
            seg = br.seg
            seg.update_high_watermark(br.hw)
            rolled = self.cleaner_seen.get(bid) != seg.active.base_offset
            self.cleaner_seen[bid] = seg.active.base_offset
            for n in range(MAX_PASSES_PER_CHECK):
                c = cleanable_offsets(seg, self.now)
                if not c.eligible(seg.config):
                    if n == 0 and rolled:
                        self._tell_not_cleanable(bid, seg, c)
                    break
                mapped = build_offset_map(seg, c, self.now)
                self._tell_map(bid, seg, mapped)  # the view at this step: the log not yet recopied
                self._tell_pass(bid, seg, clean(seg, c, self.now, mapped))
            self._retention_on(bid)
        self.cleaner_key = None  # time has moved: work the next check out again
        self._schedule_cleaner()

    def _tell_not_cleanable(self, bid: int, seg: SegmentedLog, c: Cleanable) -> None:
        config = seg.config
        backoff = self.cfg.timing.log_cleaner_backoff_ms
        if c.cleanable_bytes == 0:
            if c.limit == MIN_LAG:
                young = next(s for s in seg.segments if s.base_offset == c.first_uncleanable)
                why = (f"nothing is cleanable yet: the dirty segment at {c.first_uncleanable} holds a record "
                       f"younger than min.compaction.lag.ms={config.min_compaction_lag_ms} (its newest "
                       f"timestamp is {young.largest_timestamp_ms} ms)")
            elif c.limit == LAST_STABLE_OFFSET:
                why = (f"nothing is cleanable yet: the cleaner stops at the last stable offset, here the "
                       f"high watermark {seg.last_stable_offset}, and no dirty segment from {c.first_dirty} "
                       "lies wholly below it")
            else:
                why = (f"nothing is cleanable: the dirty records from {c.first_dirty} are all in the active "
                       "segment, which is never cleaned")
        else:
            why = (f"the dirty ratio is {c.ratio:.2f} ({c.cleanable_bytes} dirty bytes at offsets "
                   f"{c.first_dirty}-{c.first_uncleanable - 1} of {c.total_bytes} cleanable), not above "
                   f"min.cleanable.dirty.ratio={config.min_cleanable_dirty_ratio}")
        self.step(
            "cleaner_check",
            f"broker-{bid}",
            f"B{bid}'s log cleaner checks the log: {why}, so it cleans nothing and looks again in "
            f"{_span(backoff)} (log.cleaner.backoff.ms)",
            broker=bid,
            ratio=round(c.ratio, 4),
            cleaner_point=c.first_dirty,
        )

    def _tell_map(self, bid: int, seg: SegmentedLog, p: CleanPass) -> None:
        c = p.cleanable
        config = seg.config
        if c.ratio > config.min_cleanable_dirty_ratio:
            why = (f"dirty ratio {c.ratio:.2f}, above "
                   f"min.cleanable.dirty.ratio={config.min_cleanable_dirty_ratio}")
        else:
            why = (f"max.compaction.lag.ms={config.max_compaction_lag_ms} has passed for its oldest dirty "
                   f"segment, so it cleans whatever the dirty ratio ({c.ratio:.2f})")
        keys = ", ".join(f"{k} {o}" for k, o in list(p.offset_map.items())[:8])
        if len(p.offset_map) > 8:
            keys += f", ... ({len(p.offset_map)} keys)"
        self.step(
            "cleaner_offset_map",
            f"broker-{bid}",
            f"B{bid}'s log cleaner starts a pass ({why}): it reads the dirty offsets "
            f"{c.first_dirty}-{p.cleaner_point - 1} and notes each key's latest offset: {keys or 'no keys'}",
            broker=bid,
            offset_map=dict(p.offset_map),
            ratio=round(c.ratio, 4),
        )

    def _tell_pass(self, bid: int, seg: SegmentedLog, p: CleanPass) -> None:
        c = p.cleanable
        config = seg.config
        text = (f"B{bid}'s log cleaner copies {_segments_text(p.groups)} again, keeping only each key's "
                f"latest record: {p.kept} record{'s' * (p.kept != 1)} stay")
        if p.superseded:
            n = len(p.superseded)
            text += (f", {n} {'is' if n == 1 else 'are'} dropped because a later record has the same key "
                     f"(offset{'s' * (n != 1)} {_fmt_offset_list(p.superseded)})")
        for base, last, why in p.kept_empty[:4]:
            span = f"{base}" if base == last else f"{base}-{last}"
            text += (f"; the batch at {span} stays with no records (its header only), "
                     + ("the last batch of an idempotent producer still active, to keep its sequence number"
                        if why == "producer" else "the last batch of this pass, to keep where it ends"))
        if p.empty_segments:
            text += (f"; segment{'s' * (len(p.empty_segments) > 1)} {_fmt_offset_list(p.empty_segments)} "
                     f"{'are' if len(p.empty_segments) > 1 else 'is'} left empty, until a later pass merges "
                     f"{'them' if len(p.empty_segments) > 1 else 'it'} with the next")
        if p.stamped:
            verb = "stay" if len(p.stamped) > 1 else "stays"
            text += (f"; the tombstone{'s' * (len(p.stamped) > 1)} at {_fmt_offset_list(p.stamped)} {verb} "
                     f"at least {_span(config.delete_retention_ms)} from now (delete.retention.ms)")
        text += f"; no offset changes; the cleaner point moves {c.first_dirty} -> {p.cleaner_point}"
        self.step(
            "cleaner_rewrite",
            f"broker-{bid}",
            text,
            broker=bid,
            kept=p.kept,
            removed=p.superseded + p.expired,
            cleaner_point=p.cleaner_point,
            groups=[list(g) for g in p.groups],
            stamped=list(p.stamped),
            horizon_ms=p.horizon_ms,
        )
        if p.expired:
            # a key written again after its tombstone (in the dirty part, not mapped by this pass)
            # still shows that later value to a reader from the start
            log = self.brokers[bid].log
            dropped = {self.batches[log[o][2]].key: o for o in p.expired if log[o][2] >= 0}
            again = {r.key for s in seg.segments for b in s.batches for r in b.records
                     if r.key in dropped and r.offset > dropped[r.key]}
            many = len(p.expired) > 1
            if not again:
                keys = "those keys" if many else "that key"
                after = f"a reader from the start no longer sees {keys} at all"
            elif len(again) == len(dropped):
                after = (f"a reader from the start no longer sees the delete{'s' * many}, only the "
                         f"value{'s' * many} written after")
            else:
                after = (f"a reader from the start no longer sees those deletes; of their keys, only "
                         f"{', '.join(sorted(str(k) for k in again))} shows, with the value written after")
            self.step(
                "cleaner_tombstone_expired",
                f"broker-{bid}",
                f"B{bid}'s log cleaner drops the tombstone{'s' * many} at "
                f"{_fmt_offset_list(p.expired)}: delete.retention.ms has passed since the pass that first "
                f"kept {'them' if many else 'it'}; {after}",
                broker=bid,
                removed=list(p.expired),
            )

    def cleaned_away(self) -> set[int]:
        """The offsets the partition leader's cleaner removed (readers of the flat log skip them)."""
        leader = self.brokers.get(self.ctl.leader)
        if leader is None or leader.seg is None:
            return set()
        return leader.seg.cleaned_away

    def cleaner_point(self) -> int:
        """The leader's first dirty offset (its cleaner checkpoint, else its log start offset)."""
        leader = self.brokers.get(self.ctl.leader)
        if leader is None or leader.seg is None:
            return 0
        return first_dirty_offset(leader.seg)
