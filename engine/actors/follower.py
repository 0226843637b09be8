"""A follower: fetching, applying responses, truncation on a diverging epoch or a lost page cache
(AbstractFetcherThread, ReplicaFetcherThread; kafka-semantics.md §3, §6).

A mixin of engine.sim.Sim: its methods read and change the partition simulation's state
(`self.brokers`, `self.ctl`, `self.batches`, ...), which Sim.__init__ sets up.
"""

from __future__ import annotations

from typing import Any

from ..state import (
    NO_LEADER,
    Broker,
    _fmt_cache,
    _fmt_offsets,
    _fmt_records,
)


class FollowerRole:

    # ---------------------------------------------------------------------------------------
    # fetching (§3.3, §6)

    def _follower_fetch(self, fid: int) -> None:
        f = self.brokers[fid]
        if not f.alive or f.role != "follower" or not f.fetching or f.fetch_inflight:
            return
        leader = f.leader_id
        if leader == NO_LEADER:
            return
        f.fetch_inflight = True
        f.fetch_gen += 1
        gen = f.fetch_gen
        # AFT 487-503: lastFetchedEpoch is the epoch cache's latest epoch, which includes an epoch
        # this broker led without writing (S6 step 5: B2 fetches with epoch 1)
        last_epoch = f.cache[-1][0] if (f.cache and f.log and self.prof.leader_epochs) else None
        self.send(
            fid,
            leader,
            self._leader_on_fetch,
            (leader, fid, f.leo, last_epoch, gen, f.inc),
            on_fail=(self._fetch_failed, fid, f.inc, gen),
            on_lost=(self._fetch_failed, fid, f.inc, gen),
            extra_ms=f.fetch_delay_ms,
        )

    def _fetch_failed(self, fid: int, inc: int, gen: int) -> None:
        f = self.brokers[fid]
        if f.inc != inc or f.fetch_gen != gen or not f.alive:
            return
        f.fetch_inflight = False
        self.at(self.now + self.cfg.fetch_backoff_ms, self._follower_fetch_retry, fid, f.inc)

    def _follower_fetch_retry(self, fid: int, inc: int) -> None:
        if self.brokers[fid].inc == inc:
            self._follower_fetch(fid)

    def _follower_on_response(self, fid: int, gen: int, lid: int, kind: str, a: Any, b: Any) -> None:
        f = self.brokers[fid]
        if gen != f.fetch_gen:
            return
        f.fetch_inflight = False
        if f.role != "follower" or f.leader_id != lid:
            self._follower_fetch(fid)
            return
        if kind == "records":
            entries: list[tuple[int, str, int]] = a
            first = f.leo
            cache_len = len(f.cache)
            if entries:
                self._append(f, entries)
            # the next fetch (from the new LEO; it carries no HW) leaves now, so the steps below show it
            self._follower_fetch(fid)
            if entries:
                if self.quiet:
                    self.count_step()
                else:
                    self.step(
                        "follower_fetch",
                        f"broker-{fid}",
                        f"B{fid} fetched {_fmt_offsets(first, f.leo - 1)} "
                        f"({_fmt_records([e[1] for e in entries])}) from B{lid}; its LEO is now {f.leo}",
                        broker=fid,
                        records=[e[1] for e in entries],
                        offsets=[first, f.leo - 1],
                    )
                if len(f.cache) > cache_len and cache_len > 0:  # a later epoch, not the first record
                    self.step(
                        "leader_epoch_cache",
                        f"broker-{fid}",
                        f"B{fid} copies records of a new epoch, so its leader-epoch cache is now "
                        f"{_fmt_cache(f.cache)}",
                        broker=fid,
                    )
            new_hw = min(b, f.leo)  # RFT 121-135: set, not maxed; clamped to the LEO
            if new_hw != f.hw:
                old = f.hw
                f.hw = new_hw
                if self.quiet:
                    self.count_step()
                else:
                    self.step(
                        "follower_update_high_watermark",
                        f"broker-{fid}",
                        f"B{fid} learns the leader's HW: {old} -> {new_hw}",
                        broker=fid,
                    )
        elif kind == "diverging":
            self._truncate_on_divergence(f, a, b)
            self._follower_fetch(fid)
        elif kind == "out_of_range":
            # historic: a follower ahead of the leader truncates to the leader's LEO
            self._truncate(
                f,
                a,
                "high_watermark",
                kind="follower_truncate",
                text=f"B{fid} is ahead of leader B{lid} and truncates to its LEO {a}",
            )
            self._follower_fetch(fid)
        else:  # not_leader
            self.at(self.now + self.cfg.fetch_backoff_ms, self._follower_fetch_retry, fid, f.inc)

    def _truncate_on_divergence(self, f: Broker, e: int, end: int) -> None:
        """AbstractFetcherThread truncation (AFT 583-633), including KIP-279's multi-round search."""
        epochs = [c[0] for c in f.cache]
        if not self.prof.kip279:
            target = min(end, f.leo)  # 0.11-1.1: one round, no check of the follower's own epoch end
        elif e in epochs:
            own_end = self._end_offset_for(f, e)[1]
            target = min(end, own_end, f.leo)
        else:
            floor = [x for x in epochs if x <= e]
            if floor:
                target = self._end_offset_for(f, floor[-1])[1]
                target = min(target, f.leo)
            else:
                target = min(end, f.leo)
        # LEFC.truncateFromEnd: epochs starting at or after the truncation point go, even when no
        # record does; otherwise the follower would ask about the same epoch forever
        f.cache = [c for c in f.cache if c[1] < target]
        if target < f.leo:
            below_hw = " (below its own HW)" if target < f.hw else ""
            self._truncate(
                f,
                target,
                "diverging_epoch",
                text=f"B{f.id} truncates its log to offset {target}{below_hw}, deleting "
                f"{_fmt_records([x[1] for x in f.log[target:]])}",
            )

    def _truncate(
        self, br: Broker, to: int, why: str, kind: str = "follower_truncate", text: str = ""
    ) -> None:
        if to >= br.leo:
            return
        removed = br.log[to:]
        del br.log[to:]
        if br.seg is not None:
            br.seg.truncate_to(to, self.now)
        for off, (e, r, _b) in enumerate(removed, start=to):
            br.truncated.append({"offset": off, "epoch": e, "record": r, "t_ms": self.now, "why": why})
        br.flushed = min(br.flushed, to)
        br.hw = min(br.hw, to)
        br.cache = [c for c in br.cache if c[1] < to]
        br.batch_offsets = {k: v for k, v in br.batch_offsets.items() if v[1] < to}
        if why == "power_loss":
            self.unsafe_history = True
        self.step(
            kind,
            f"broker-{br.id}",
            text or f"B{br.id} truncates to offset {to}",
            broker=br.id,
            records=[x[1] for x in removed],
        )
