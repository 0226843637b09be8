"""What the run shows: whether it has settled, the per-step snapshot, the result, the loss
ledger and the invariants checked after every step when asked.

A mixin of engine.sim.Sim: its methods read and change the partition simulation's state
(`self.brokers`, `self.ctl`, `self.batches`, ...), which Sim.__init__ sets up.
"""

from __future__ import annotations

from typing import Any

from ..results import LogEntry, PartitionResult, SegmentInfo
from ..state import (
    MLOG_IN_SNAPSHOT,
    NEVER,
    NO_LEADER,
)
from ..transactions import last_stable_offset, log_view


def duplicates(records: Any) -> list[str]:
    """The ledger's duplicates: each record a log holds more than once, in first-seen order
    (records are unique names in a scenario, so a second copy can only come from a retry)."""
    counts: dict[str, int] = {}
    for r in records:
        counts[r] = counts.get(r, 0) + 1
    return [r for r, n in counts.items() if n > 1]


class ObserveRole:
    def shift_clocks(self, delta: int) -> None:
        """Move the times a quiet partition compares its housekeeping with by `delta` (see
        Clock.skip_idle): last heartbeats, followers' last fetches, parked fetches."""
        for bid, br in self.brokers.items():
            if not br.alive:
                continue
            self.ctl.reg[bid].last_hb += delta
            for st in br.fstate.values():
                st.last_fetch_time += delta
                if st.last_caught_up != NEVER:
                    st.last_caught_up += delta
            for fid, (gen, offset, at, until) in list(br.parked_fetch.items()):
                br.parked_fetch[fid] = (gen, offset, at + delta, until + delta)

    def settled(self) -> bool:
        if self.pending_batches:
            return False
        c = self.ctl
        if c.leader == NO_LEADER:
            return True
        L = self.brokers[c.leader]
        if not L.alive or L.role != "leader":
            # a dead leader cannot make progress until it is fenced; a live one still applying its
            # metadata will, so keep running
            return not L.alive
        if L.pending is not None:
            return False
        for fid in self.replicas:
            if fid == L.id:
                continue
            f = self.brokers[fid]
            if not f.alive or not f.fetching or not self.linked(fid, L.id):
                continue
            if f.leo != L.leo or f.hw != L.hw:
                return False
            st = L.fstate.get(fid)
            if st is not None and st.leo != L.leo:
                return False  # the leader has not yet heard the follower's LEO, so its HW may still move
        return True

    def awaiting_failover(self) -> bool:
        """The controller still names a leader that cannot lead (crashed, stopped, or cut off
        from the controller) and has not fenced it yet; fencing moves leadership or takes the
        partition offline (§5), about broker.session.timeout.ms after the last heartbeat."""
        c = self.ctl
        if c.leader == NO_LEADER or c.reg[c.leader].fenced:
            return False
        L = self.brokers[c.leader]
        return not L.alive or not self.linked(L.id, "controller")

    def settled_after_failover(self) -> bool:
        return not self.awaiting_failover() and self.settled()

    def snapshot(self) -> dict[str, Any]:
        c = self.ctl
        leader_b = self.brokers.get(c.leader) if c.leader != NO_LEADER else None
        leading = leader_b is not None and leader_b.role == "leader"
        by_time = self.prof.isr_by_caught_up_time
        brokers: dict[str, Any] = {}
        for bid in sorted(self.brokers):
            b = self.brokers[bid]
            r = c.reg[bid]
            st = leader_b.fstate.get(bid) if leading and bid != c.leader else None  # type: ignore[union-attr]
            if st is not None:
                reported = st.leo
                caught_up = st.last_caught_up if by_time and st.last_caught_up != NEVER else None
                last_fetch = st.last_fetch_time
            else:
                reported = caught_up = last_fetch = None
            brokers[str(bid)] = {
                "alive": b.alive,
                "fenced": r.fenced,
                "status": b.status,
                "rack": b.rack,
                "role": b.role if b.alive else "none",
                "leo": b.leo,
                "hw": b.hw,
                "flushed": b.flushed,
                "log": [
                    {"offset": i, "epoch": e, "record": rec, "key": self.batches[x].key if x >= 0 else None}
                    for i, (e, rec, x) in enumerate(b.log)
                    if b.seg is None or i not in b.seg.cleaned_away
                ],
                "epoch_cache": [list(x) for x in b.cache],
                "fetching": b.fetching,
                "isolated_from": sorted((next(iter(p - {bid})) for p in self.cut if bid in p), key=str),
                "reported_leo": reported,
                "truncated": list(b.truncated),
                "replica": bid in self.replicas,
                "fetch_delay_ms": b.fetch_delay_ms,
                "caught_up_ms": caught_up,
                "last_fetch_ms": last_fetch,
                "last_heartbeat_ms": r.last_hb,
            }
        leader_hw = leader_b.hw if leader_b is not None else None
        part = {
            "leader": c.leader,
            "leader_epoch": c.leader_epoch,
            "partition_epoch": c.partition_epoch,
            "isr": list(c.isr),
            "elr": list(c.elr),
            "last_known_elr": list(c.lke),
            "online": c.leader != NO_LEADER,
            "recovery_state": c.recovery,
            "replicas": list(self.replicas),
            "hw": leader_hw,
            "maximal_isr": list(leader_b.maximal)
            if leader_b is not None and leader_b.role == "leader"
            else list(c.isr),
            "pending_isr_change": leader_b.pending if leader_b is not None else None,
            "effective_min_isr": self.eff_min(),
            "min_insync_replicas": c.min_isr,
            "under_min_isr": len(c.isr) < self.eff_min(),
            "unclean_leader_election_enable": c.unclean,
            "replica_lag_time_max_ms": self.cfg.lag_time_ms,
            "replica_fetch_wait_max_ms": self.cfg.fetch_wait_ms,
        }
        in_flight = [
            {
                "index": b.index,
                "records": b.records,
                "acks": b.acks_shown,
                "attempt": b.attempts,
                "state": b.state,
                "target": b.target,
            }
            for b in self.batches
            if b.outcome is None and b.control is None
        ]
        controller = {
            "kraft": self.kraft,
            "metadata_log_end": len(self.mlog),
            "metadata_log": self.mlog[-MLOG_IN_SNAPSHOT:],
            "brokers": {
                str(bid): {"fenced": r.fenced, "in_controlled_shutdown": r.shutting, "broker_epoch": r.epoch}
                for bid, r in sorted(c.reg.items())
            },
            "broker_session_timeout_ms": self.cfg.session_timeout_ms,
            "broker_heartbeat_interval_ms": self.cfg.heartbeat_ms,
        }
        acked = list(self.acked_records)
        lost = self.lost_acked(acked)
        out = {
            "t_ms": self.now,
            "partition": part,
            "brokers": brokers,
            "producer": {"in_flight": in_flight},
            "controller": controller,
            "messages": self.messages(),
            "ledger": {
                "acked": acked,
                "failed": list(self.failed_records),
                "sent": list(self.sent_records),
                "lost": lost,
                "duplicates": duplicates(r for _off, r in self.data_entries(leader_b))
                if leader_b is not None else [],
            },
        }
        if self.part2:
            part["log_start_offset"] = self.log_start_offset()
            part["segments"] = self.leader_segments()
            # the three counters of exactly-once (scene 08): what the leader remembers per producer
            # id, and each producer session's epoch and next sequence here
            part["producer_state"] = self.producer_state(leader_b) if leader_b is not None else []
            out["producer"]["sequences"] = self.producer_sequences()
            part["lso"] = last_stable_offset(self)
            part["cleaner_point"] = self.cleaner_point()
            if self.has_txn and leader_b is not None:  # scene 08: which records are aborted or undecided
                view = log_view(self, leader_b)
                part["aborted"] = sorted(view.aborted)
                part["undecided"] = list(view.undecided)
            if self.txn is not None:
                out["producer"]["instances"] = self.producer_instances()
        if self.has_txn:  # transactions: which log entries are markers
            for bid, shown in zip(sorted(self.brokers), brokers.values(), strict=True):
                log = self.brokers[bid].log
                for e in shown["log"]:
                    x = log[e["offset"]][2]
                    if x >= 0 and self.batches[x].control is not None:
                        e["control"] = self.batches[x].control
        if self.txn is not None:  # the coordinator's and the producers' transaction state
            out.update(self.txn.snapshot())
        if self.clients is not None:
            out.update(self.clients.snapshot())
        return out

    def leader_segments(self) -> list[SegmentInfo]:
        """The leader's segments in offset order, the last one active."""
        c = self.ctl
        leader = self.brokers.get(c.leader) if c.leader != NO_LEADER else None
        if leader is None or leader.seg is None:
            return []
        return [
            {"base_offset": s.base_offset, "next_offset": s.next_offset, "bytes": s.size_bytes}
            for s in leader.seg.segments
        ]

    def contract_partition(self) -> PartitionResult:
        """This partition as the contract's part 2 reports it: the leader's offsets, segments and
        log from the log start offset."""
        c = self.ctl
        leader = self.brokers.get(c.leader) if c.leader != NO_LEADER else None
        log = leader.log if leader is not None else []
        start = self.log_start_offset()
        gone = self.cleaned_away()
        entries: list[LogEntry] = []
        for off in range(start, len(log)):
            if gone and off in gone:
                continue  # removed by the cleaner: the log keeps a gap
            _epoch, record, bidx = log[off]
            batch = self.batches[bidx] if bidx >= 0 else None
            if batch is not None and batch.control is not None:  # a transaction marker
                entries.append(
                    {
                        "offset": off,
                        "key": None,
                        "record": None,
                        "timestamp_ms": batch.timestamp,
                        "producer_id": batch.session.pid,
                        "producer_epoch": batch.pepoch,
                        "sequence": -1,
                        "control": batch.control,
                    }
                )
                continue
            entries.append(
                {
                    "offset": off,
                    "key": batch.key if batch is not None else None,
                    "record": record,
                    "timestamp_ms": batch.timestamp if batch is not None else None,
                    "producer_id": batch.session.pid if batch is not None and batch.seq >= 0 else -1,
                    "producer_epoch": batch.pepoch if batch is not None and batch.seq >= 0 else -1,
                    "sequence": batch.seq + off - leader.batch_offsets[bidx][0]  # type: ignore[union-attr]
                    if batch is not None and batch.seq >= 0
                    else -1,
                    "control": None,
                }
            )
        hw = leader.hw if leader is not None else 0
        return {
            "partition": self.partition,
            "leader": c.leader if c.leader != NO_LEADER else None,
            "hw": hw,
            "leo": len(log),
            "lso": last_stable_offset(self),
            "log_start_offset": start,
            "cleaner_point": self.cleaner_point(),
            "segments": self.leader_segments(),
            "log": entries,
        }

    def lost_acked(self, acked: list[str]) -> list[str]:
        """Acknowledged records missing from the partition leader's log: the loss ledger's rule,
        for the result and for every snapshot. With no leader (offline), or while the leader the
        controller names is down and not yet fenced and replaced, nothing is counted as lost: a
        dead leader's log says nothing about which copy the next leader will hold."""
        c = self.ctl
        if not acked or c.leader == NO_LEADER:
            return []
        L = self.brokers[c.leader]
        if not L.alive:
            return []
        present = {rec for (_e, rec, _b) in L.log}
        return [rec for rec in acked if rec not in present]

    # ---------------------------------------------------------------------------------------
    # invariants (checked after every step when asked; see tests)

    def _check_invariants(self) -> None:
        c = self.ctl
        where = f"step {self.nsteps} (t={self.now} ms)"
        if c.leader != NO_LEADER and c.leader not in c.isr:
            self.violations.append(f"{where}: leader B{c.leader} is not in the ISR {c.isr}")
        if self.has_txn and c.leader != NO_LEADER:  # the contract's log_start_offset <= lso <= hw <= leo
            L = self.brokers[c.leader]
            start, lso = self.log_start_offset(), log_view(self, L).lso
            if not start <= lso <= L.hw <= L.leo:
                self.violations.append(
                    f"{where}: B{L.id} has log start {start}, LSO {lso}, HW {L.hw}, LEO {L.leo}: out of order"
                )
        for b in self.brokers.values():
            if not b.alive or b.role != "leader":
                continue
            seen = self.hw_seen.get(b.id)
            if seen is not None and seen[0] == b.leader_epoch and b.hw < seen[1]:
                self.violations.append(f"{where}: B{b.id}'s HW went down from {seen[1]} to {b.hw}")
            self.hw_seen[b.id] = (b.leader_epoch, b.hw)
            for f in b.maximal:
                if f == b.id:
                    continue
                rep = b.fstate[f].leo
                # KIP-250's quorum HW passes slow ISR members by design: that is the proposal's trade
                if rep >= 0 and b.hw > rep and b.id == c.leader and self.cfg.quorum_acks is None:
                    self.violations.append(
                        f"{where}: leader B{b.id}'s HW {b.hw} passes maximal-ISR member B{f}'s "
                        f"reported LEO {rep}"
                    )
        if (
            self.unsafe_history
            or not self.prof.leader_epochs
            or not self.prof.kip279
            or c.leader == NO_LEADER
        ):
            return
        L = self.brokers[c.leader]
        if not L.alive:
            return
        for f in self.brokers.values():
            if f is L or not f.alive or f.leader_id != L.id or f.role != "follower":
                continue
            upto = min(f.hw, L.leo)
            for off in range(upto):
                if f.log[off][:2] != L.log[off][:2]:
                    self.violations.append(
                        f"{where}: B{f.id} disagrees with leader B{L.id} at offset {off}, below its HW {f.hw}"
                    )
                    break

    # ---------------------------------------------------------------------------------------
    # results

    def result(self) -> dict[str, Any]:
        c = self.ctl
        final = self.snapshot()
        produce = []
        acked: list[str] = []
        for b in self.batches:
            if b.control is not None:
                continue  # a transaction marker: the coordinator's, not a produce action's
            produce.append(
                {
                    "records": b.records,
                    "acks": b.acks_shown,
                    "outcome": b.outcome or "pending",
                    "error": b.error,
                    "offsets": b.offsets,
                    "attempts": b.attempts,
                    "sent_ms": b.first_send,
                    "done_ms": b.done_ms,
                }
            )
            if self.part2:  # the contract's part-2 fields of a produce
                produce[-1].update(
                    producer=b.session.id,
                    partition=self.partition,
                    producer_id=b.session.pid if b.seq >= 0 else -1,
                    producer_epoch=b.pepoch if b.seq >= 0 else -1,
                )
            if b.outcome == "acked":
                acked.extend(r for r in b.records if r is not None)  # a tombstone has no name
        if c.leader != NO_LEADER:
            L = self.brokers[c.leader]
            data = self.data_entries(L)
            leader_records = [r for _off, r in data]
            lost = self.lost_acked(acked)
            visible = [r for off, r in data if off < L.hw]
            dups = duplicates(leader_records)
        else:
            lost, visible, dups = [], [], []
        out = {
            "version": 1,
            "final": final,
            "produce": produce,
            "acked_records": acked,
            "lost_acked_records": lost,
            "visible_records": visible,
            "duplicate_records": dups,
            "step_count": self.nsteps,
            "profile": {
                "kafka_version": self.prof.version,
                "label": self.prof.label,
                "description": self.prof.description,
            },
            "proposals": list(self.cfg.proposals),
            "seed": self.cfg.seed,
        }
        if self.record:
            out["steps"] = self.steps
        if self.at_step is not None:
            out["view"] = self.view if self.view is not None else final
        if self.check:
            out["violations"] = self.violations
        if self.views is not None:
            out["views"] = self.views
        return out

    # -------------------------------------------------------------------------------------------
    # producer ids, epochs and sequences as the view shows them (scene 08)

    def producer_state(self, br: Any) -> list[dict[str, Any]]:
        """What broker `br` remembers about each producer id from its log (ProducerStateManager,
        rebuilt the same way on a follower), in producer id order: the epoch and last sequence
        the leader checks a batch against (the leader's own entry, `_producer_entry`: a marker at a
        higher epoch moves the epoch and clears the sequence, shown as -1), and the ranges of the
        last five batches it remembers at that epoch (first and last sequence, first and last
        offset), oldest first. Producers without idempotence (no id) leave nothing."""
        pids: dict[int, None] = {}
        for _e, _r, bidx in br.log:
            if bidx >= 0:
                b = self.batches[bidx]
                if b.seq >= 0 or b.control is not None:
                    pids[b.session.pid] = None
        out = []
        for pid in sorted(pids):
            epoch, last, recent = self._producer_entry(br, pid)
            batches: list[list[int]] = []
            for bidx in reversed(recent):
                b = self.batches[bidx]
                first, end = br.batch_offsets[bidx]
                batches.append([b.seq, b.seq + end - first, first, end])
            out.append({"producer_id": pid, "epoch": epoch, "last_sequence": last, "batches": batches})
        return out

    def producer_sequences(self) -> list[dict[str, Any]]:
        """Each idempotent producer session that has numbered batches for this partition: its id,
        producer id, epoch and the next sequence it will give a batch here, in the order the
        sessions started (a restarted producer shows its old session too, no longer alive)."""
        return [
            {"producer": s.id, "producer_id": s.pid, "epoch": st[0], "next_sequence": st[1], "alive": s.alive,
             "started_ms": s.started_ms}
            for s, st in sorted(self.sequences.items(), key=lambda kv: (kv[0].started_ms, kv[0].pid))
        ]

    def data_entries(self, br: Any) -> list[tuple[int, str]]:
        """(offset, record) of the data records in `br`'s log: a transaction marker is no record,
        a tombstone has no name (the ledger's records)."""
        batches = self.batches
        return [(off, r) for off, (_e, r, x) in enumerate(br.log)
                if r is not None and (x < 0 or batches[x].control is None)]

    def producer_instances(self) -> list[dict[str, Any]]:
        """Each transactional producer instance (one process of a transactional.id): its producer
        id and the epoch it holds, its transaction manager's state, and whether the coordinator
        has fenced it (handed its transactional.id a higher epoch), in the order they started."""
        txn = self.txn
        return [
            {"producer": s.id, "transactional_id": s.config.transactional_id, "producer_id": s.pid,
             "epoch": s.epoch, "state": ct.state, "fenced": txn.fenced(s), "alive": s.alive,
             "started_ms": s.started_ms}
            for s, ct in sorted(txn.clients.items(), key=lambda kv: (kv[0].started_ms, kv[0].id))
        ]
