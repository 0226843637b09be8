"""A partition leader: the produce path with its purgatory, the high watermark, serving follower
fetches, and the ISR it asks the controller to change (Partition.scala, ReplicaManager.scala,
DelayedProduce.scala; kafka-semantics.md §2-§4).

A mixin of engine.sim.Sim: its methods read and change the partition simulation's state
(`self.brokers`, `self.ctl`, `self.batches`, ...), which Sim.__init__ sets up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..compaction import INVALID_RECORD, refuses
from ..state import (
    UNKNOWN,
    Batch,
    Broker,
    FollowerState,
    _fmt_offsets,
    _fmt_records,
    _fmt_set,
)

NUM_BATCHES_TO_RETAIN = 5  # ProducerStateEntry: the batches a replica remembers per producer id



def _nothing() -> None:
    """What is left to say after an answer that was not lost: nothing."""

class LeaderRole:
    # ---------------------------------------------------------------------------------------
    # leader: the produce path (kafka-semantics.md §2)

    def _acks_valid(self, acks: int | str) -> bool:
        if acks == "min_isr":
            return True  # KIP-926 proposal: the broker is assumed to understand it
        if acks in (-1, 0, 1):
            return True  # ReplicaManager.isValidRequiredAcks (RM 1421-1423)
        return self.prof.accepts_acks_above_one and isinstance(acks, int) and acks > 1

    def _respond(
        self, bid: int, idx: int, attempt_id: int, error: str | None, offsets: list[int] | None,
        defer_loss: bool = False,
    ) -> Callable[[], None]:
        """Answer a produce request. Returns what is left to say: with `defer_loss`, the step
        telling that a scenario's lost response was lost, for the caller to emit after its own
        step ("B1 answers the producer"), so the log reads in the order things happen."""
        b = self.batches[idx]
        if b.acks == 0:
            return _nothing  # acks=0 gets no response (KA 709-728)
        if b.control is not None:  # a transaction marker: the answer goes to the coordinator
            answer = (self.partition, idx, attempt_id, error, offsets)
            self.send(bid, "txn-coordinator", self.txn.marker_answer, answer)
            return _nothing
        if b.lose_response:
            # the scenario's lost response (kafka-eos-kraft A1): the leader has done its work, the
            # answer never reaches the producer, which hears nothing until request.timeout.ms
            b.lose_response = False

            def lost() -> None:
                self.step(
                    "leader_response_lost",
                    f"broker-{bid}",
                    f"B{bid}'s answer for {_fmt_records(b.records)} is lost on the way: the producer "
                    f"hears nothing, and its request.timeout.ms={b.session.config.request_timeout_ms} "
                    "clock runs on",
                    broker=bid,
                    produce=idx,
                )

            if defer_loss:
                return lost
            lost()
            return _nothing
        self.send(bid, "producer", self._producer_response, (idx, attempt_id, error, offsets))
        return _nothing

    def _reject_produce(self, bid: int, idx: int, attempt_id: int, kind: str, error: str, text: str) -> None:
        """A produce refused before any append: say why, answer with Kafka's error."""
        self._respond(bid, idx, attempt_id, error, None)
        self.step(kind, f"broker-{bid}", text, broker=bid)

    def _leader_on_produce(self, bid: int, idx: int, attempt_id: int) -> None:
        br = self.brokers[bid]
        batch = self.batches[idx]
        acks = batch.acks
        who = f"B{bid}"
        if not self._acks_valid(acks):
            self._reject_produce(
                bid,
                idx,
                attempt_id,
                "leader_reject_invalid_acks",
                "INVALID_REQUIRED_ACKS",
                f"{who} rejects acks={acks}: INVALID_REQUIRED_ACKS (21); nothing is appended",
            )
            return
        if br.role != "leader":
            self._reject_produce(
                bid,
                idx,
                attempt_id,
                "leader_reject_not_leader",
                "NOT_LEADER_OR_FOLLOWER",
                f"{who} does not lead the partition: NOT_LEADER_OR_FOLLOWER",
            )
            return
        needs_min_isr = acks == -1 or acks == "min_isr"
        eff = self.eff_min()
        if needs_min_isr and len(br.isr) < eff:
            # §2.2: the check comes BEFORE the append, on the committed ISR, for acks=-1 only
            self._reject_produce(
                bid,
                idx,
                attempt_id,
                "leader_reject_not_enough_replicas",
                "NOT_ENOUGH_REPLICAS",
                f"{who} refuses {_what(batch)}: committed ISR {_fmt_set(br.isr)} has "
                f"{len(br.isr)} < min.insync.replicas {eff}: NOT_ENOUGH_REPLICAS (19), nothing appended",
            )
            return
        existing = br.batch_offsets.get(idx) if batch.idempotent or batch.control is not None else None
        if existing is None and br.seg is not None and batch.nbytes is not None:
            too_big = br.seg.too_large(batch.nbytes)
            if too_big is not None:
                error, key, limit = too_big
                self._reject_produce(
                    bid,
                    idx,
                    attempt_id,
                    "leader_reject_too_large",
                    error,
                    f"{who} refuses {_fmt_records(batch.records)}: a batch of {batch.nbytes} bytes is more "
                    f"than the topic's {key}={limit}: {error}, nothing appended",
                )
                return
        entry = self._producer_entry(br, batch.session.pid) if batch.idempotent else None
        if existing is not None and batch.idempotent:
            # a duplicate is one of the entry's remembered batches, at the entry's epoch (PSE 135:
            # an older epoch falls to the epoch check). The entry keeps only the last five batches
            # (PSE 36): an older retry is not recognised and falls through to the sequence check
            # (kafka-eos-kraft §E.A A3)
            if entry is None or entry[0] != batch.pepoch or idx not in entry[2]:
                existing = None
        if existing is None and br.seg is not None:
            refused = refuses(br.seg.config, batch.key)
            if refused is not None:  # LogValidator.validateKey: the whole request fails
                self._reject_produce(
                    bid,
                    idx,
                    attempt_id,
                    "leader_reject_invalid_record",
                    INVALID_RECORD,
                    f"{who} refuses {_fmt_records(batch.records)}: the topic is compacted "
                    f"(cleanup.policy={br.seg.config.cleanup_policy}) and the records have no key. "
                    f"{refused}: {INVALID_RECORD} (87), nothing appended",
                )
                return
        if existing is None and entry is not None:
            epoch, last, _recent = entry
            if batch.pepoch < epoch:
                # PAI 96-110: a lower epoch than the producer state's (a newer instance's, or a
                # transaction marker's after a fence): INVALID_PRODUCER_EPOCH since 2.8
                self._reject_produce(
                    bid,
                    idx,
                    attempt_id,
                    "leader_reject_invalid_epoch",
                    "INVALID_PRODUCER_EPOCH",
                    f"{who} refuses {_fmt_records(batch.records)} from producer id {batch.session.pid}: "
                    f"its epoch {batch.pepoch} is older than the epoch {epoch} this partition has seen: "
                    "INVALID_PRODUCER_EPOCH (47), nothing appended",
                )
                return
            if batch.pepoch == epoch and batch.seq != last + 1:
                why = f"its first sequence is {batch.seq} but the last one here is {last}"
            elif batch.pepoch > epoch and batch.seq != 0:
                why = f"a new producer epoch must start at sequence 0, not {batch.seq}"
            else:
                why = ""
            if why:
                self._reject_produce(
                    bid,
                    idx,
                    attempt_id,
                    "leader_reject_out_of_order",
                    "OUT_OF_ORDER_SEQUENCE_NUMBER",
                    f"{who} refuses {_fmt_records(batch.records)}: {why}: "
                    "OUT_OF_ORDER_SEQUENCE_NUMBER (45), nothing appended",
                )
                return
        if existing is not None and batch.control is not None:
            first, last = existing  # a marker retried after it was written: answered with its offset
        elif existing is not None:
            first, last = existing
            self.step(
                "leader_dedupe_idempotent",
                f"broker-{bid}",
                f"{who} already has this idempotent batch at {_fmt_offsets(first, last)}: "
                "it returns the original offsets and appends nothing",
                broker=bid,
            )
        else:
            first = br.leo
            epoch = br.leader_epoch
            if batch.control is not None:
                # the leader builds the control batch itself, stamped with its own clock
                # (KafkaApis.handleWriteTxnMarkersRequest -> MemoryRecords.withEndTransactionMarker)
                batch.timestamp = self.now
            self._append(br, [(epoch, r, idx) for r in batch.records])
            last = br.leo - 1
            if batch.control is not None:
                self.tell(
                    "leader_write_txn_marker",
                    f"broker-{bid}",
                    f"{who} writes the {batch.control} marker of producer id {batch.session.pid} (epoch "
                    f"{batch.pepoch}) at offset {first}: a control record, it takes an offset and no "
                    "consumer ever receives it",
                    broker=bid,
                    offsets=[first, last],
                    control=batch.control,
                )
            elif self.quiet:
                self.count_step()
            else:
                if self.part2:  # the client-side scenes: where the records land, no epochs yet
                    text = f"{who} appends {_fmt_records(batch.records)} at {_fmt_offsets(first, last)}"
                    if batch.txn:
                        text += (
                            f", in an open transaction of producer id {batch.session.pid}: read_committed "
                            f"readers stop at its first offset until its marker"
                        )
                else:
                    text = (
                        f"{who} appends {_fmt_records(batch.records)} at {_fmt_offsets(first, last)} "
                        f"(epoch {epoch}); LEO {br.leo}"
                    )
                self.step(
                    "leader_append",
                    f"broker-{bid}",
                    text,
                    broker=bid,
                    records=batch.records,
                    key=batch.key,  # one key per produce: a reader of the steps needs no lookup table
                    offsets=[first, last],
                )
            self._wake_parked_fetches(br)
            self._maybe_increment_hw(br)
        offsets = list(range(first, last + 1))
        if acks == 0:
            return
        if acks == 1:
            self._respond(bid, idx, attempt_id, None, offsets)
            self.step(
                "leader_respond_produce",
                f"broker-{bid}",
                f"acks=1: {who} answers at once, before any follower has the records",
                broker=bid,
            )
            return
        entry = [idx, attempt_id, last + 1, acks, offsets]
        verdict = self._purgatory_verdict(br, entry)
        if verdict is not None:
            self._complete_parked(br, entry, verdict)
            return
        br.parked.append(entry)
        if self.quiet:
            self.count_step()
        else:
            self.step(
                "leader_park_produce",
                f"broker-{bid}",
                f"{who} parks the acks={batch.acks_shown} request until its HW reaches {last + 1} "
                f"(now {br.hw}; ISR {_fmt_set(br.maximal)})",
                broker=bid,
            )
        timeout = batch.session.config.request_timeout_ms  # the request's own timeout field
        self.at(self.now + timeout, self._expire_produce, bid, br.inc, idx, attempt_id)

    def _producer_entry(self, br: Broker, pid: int) -> tuple[int, int, list[int]] | None:
        """The producer state a replica rebuilds from its log (ProducerStateManager, one entry per
        producer id), in one backward scan: the epoch and sequence of its last record from producer
        `pid`, and the batches that entry remembers, its last NUM_BATCHES_TO_RETAIN = 5 of that
        epoch, newest first (PSE 36, 107-110). None when the log has nothing of `pid` (then, since
        KIP-360, any first sequence is accepted: ProducerAppendInfo 112-143). A transaction marker
        at a bumped epoch (a fence) moves the entry's epoch and clears its sequences and batches:
        that epoch starts at 0 (ProducerStateEntry.maybeUpdateProducerEpoch, PSE 97-105)."""
        log = br.log
        batches = self.batches
        marker: int | None = None  # the epoch of a later transaction marker of `pid`
        state: tuple[int, int] | None = None
        recent: list[int] = []
        for off in range(len(log) - 1, -1, -1):
            bidx = log[off][2]
            if bidx < 0:
                continue
            b = batches[bidx]
            if b.session.pid != pid:
                continue
            if b.control is not None:
                if state is None and marker is None:
                    marker = b.pepoch
                continue
            if b.seq < 0:
                continue
            if state is None:
                if marker is not None and marker > b.pepoch:
                    return marker, -1, []
                state = (b.pepoch, b.seq + off - br.batch_offsets[bidx][0])
                recent.append(bidx)
            elif bidx != recent[-1]:
                if b.pepoch != state[0]:
                    break  # an epoch change clears the remembered batches (PSE 97-105)
                recent.append(bidx)
            if len(recent) == NUM_BATCHES_TO_RETAIN:
                break
        if state is None:
            return (marker, -1, []) if marker is not None else None
        return state[0], state[1], recent

    def _append(self, br: Broker, entries: list[tuple[int, str, int]]) -> None:
        start = br.leo
        if br.seg is not None:
            self._append_segments(br, start, entries)
        br.log.extend(entries)
        cache = br.cache
        epochs = self.prof.leader_epochs
        for i, (epoch, _r, bidx) in enumerate(entries):
            if epochs and (not cache or epoch > cache[-1][0]):
                cache.append([epoch, start + i])
            if bidx >= 0:
                prev = br.batch_offsets.get(bidx)
                br.batch_offsets[bidx] = (prev[0] if prev else start + i, start + i)
        fm = self.flush_messages
        if fm is not None and br.leo - br.flushed >= fm:
            br.flushed = br.leo  # UL 932: flush once unflushed messages reach flush.messages
            self.step(
                "broker_flush",
                f"broker-{br.id}",
                f"B{br.id} fsyncs its log up to offset {br.leo} (flush.messages={fm})",
                broker=br.id,
            )

    def _purgatory_verdict(self, br: Broker, entry: list[Any]) -> str | None:
        """checkEnoughReplicasReachOffset (P 1111-1147): None = keep waiting, "" = success, else an error."""
        if br.role != "leader":
            return "NOT_LEADER_OR_FOLLOWER"
        required, acks = entry[2], entry[3]
        if acks == -1:
            if br.hw >= required:
                return "" if self.eff_min() <= len(br.maximal) else "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
            return None
        members = br.maximal if acks == "min_isr" else br.isr
        count = 1 + sum(1 for f in members if f != br.id and br.fstate[f].leo >= required)
        need = self.eff_min() if acks == "min_isr" else acks
        return "" if count >= need else None

    def _complete_parked(self, br: Broker, entry: list[Any], verdict: str) -> None:
        idx, attempt_id, required, acks, offsets = entry
        b = self.batches[idx]
        if b.control is not None:  # a marker: the coordinator narrates its answer (leader_advance_lso)
            self._respond(br.id, idx, attempt_id, verdict or None, offsets if verdict == "" else None)
            return
        if verdict == "" and self.quiet:
            self._respond(br.id, idx, attempt_id, None, offsets)
            self.count_step()
            return
        if verdict == "":
            if acks == -1 and self.cfg.quorum_acks is not None:
                text = (
                    f"B{br.id}'s HW {br.hw} passed offset {required - 1}: {self.cfg.quorum_acks} "
                    f"replicas have {_fmt_records(b.records)} (the KIP-250 quorum, not every ISR "
                    "member); the request succeeds"
                )
            elif acks == -1 and self.part2:
                # the client-side scenes come before replication: the same fact, fewer terms
                where = " on every in-sync replica" if len(self.replicas) > 1 else ""
                text = f"B{br.id} answers the producer: {_fmt_records(b.records)} is stored{where}"
            elif acks == -1:
                text = (
                    f"B{br.id}'s HW {br.hw} passed offset {required - 1}: every ISR member has "
                    f"{_fmt_records(b.records)}; the request succeeds"
                )
            else:
                need = acks if acks != "min_isr" else self.eff_min()
                text = f"{need} replicas have offset {required - 1}: success"
            lost = self._respond(br.id, idx, attempt_id, None, offsets, defer_loss=True)
            self.step(
                "leader_complete_produce" if acks in (-1, "min_isr") else "leader_ack_count",
                f"broker-{br.id}",
                text,
                broker=br.id,
                produce=idx,
            )
            lost()  # the answer is sent, then lost: the steps say it in that order
        else:
            lost = self._respond(br.id, idx, attempt_id, verdict, None, defer_loss=True)
            self.step(
                "leader_complete_produce",
                f"broker-{br.id}",
                f"B{br.id} completes the parked request for {_fmt_records(b.records)} with {verdict}",
                broker=br.id,
                produce=idx,
                error=verdict,
            )
            lost()

    def _check_purgatory(self, br: Broker) -> None:
        if not br.parked:
            return
        keep = []
        done = []
        for entry in br.parked:
            verdict = self._purgatory_verdict(br, entry)
            (keep if verdict is None else done).append((entry, verdict))
        br.parked = [e for e, _ in keep]
        for entry, verdict in done:
            self._complete_parked(br, entry, verdict)

    def _expire_produce(self, bid: int, inc: int, idx: int, attempt_id: int) -> None:
        br = self.brokers[bid]
        if br.inc != inc:
            return
        for entry in br.parked:
            if entry[0] == idx and entry[1] == attempt_id:
                br.parked.remove(entry)
                self._respond(bid, idx, attempt_id, "REQUEST_TIMED_OUT", None)
                self.step(
                    "leader_expire_produce",
                    f"broker-{bid}",
                    f"The parked request for {_fmt_records(self.batches[idx].records)} times out: "
                    f"REQUEST_TIMED_OUT (7); the records stay in B{bid}'s log above the HW",
                    broker=bid,
                    produce=idx,
                )
                return

    # ---------------------------------------------------------------------------------------
    # leader: high watermark (§3.1)

    def _maybe_increment_hw(self, br: Broker) -> None:
        if br.role != "leader":
            return
        leo = br.leo
        q = self.cfg.quorum_acks
        if q is not None:
            # KIP-250 proposal: the HW is the q-th largest LEO in the (maximal) ISR
            leos = sorted([leo] + [br.fstate[f].leo for f in br.maximal if f != br.id], reverse=True)
            candidate = leos[q - 1] if len(leos) >= q else leos[-1]
        else:
            candidate = leo
            counts_caught_up = self.prof.caught_up_counts_for_hw
            for f, st in br.fstate.items():
                if st.leo < candidate and (
                    f in br.maximal or (counts_caught_up and self.caught_up(br, st) and self.eligible(f))
                ):
                    candidate = st.leo
        if candidate <= br.hw:
            return
        if self.prof.hw_freeze_under_min_isr and len(br.isr) < self.eff_min():
            if br.last_hold != candidate:
                br.last_hold = candidate
                self.step(
                    "leader_hold_high_watermark",
                    f"broker-{br.id}",
                    f"B{br.id} holds its HW at {br.hw}: committed ISR {_fmt_set(br.isr)} is below "
                    f"min.insync.replicas {self.eff_min()} (it could otherwise move to {candidate})",
                    broker=br.id,
                )
            return
        old = br.hw
        br.hw = candidate
        if self.quiet:
            self.count_step()
        else:
            if self.part2:
                upto = "offset 0" if candidate == 1 else f"offsets up to {candidate - 1}"
                text = f"B{br.id}'s high watermark moves {old} -> {candidate}: consumers can read {upto}"
            else:
                text = f"Leader B{br.id} HW {old} -> {candidate}"
            self.step("leader_advance_high_watermark", f"broker-{br.id}", text, broker=br.id)
        self._check_purgatory(br)

    def _leader_on_fetch(
        self, lid: int, fid: int, offset: int, last_epoch: int | None, gen: int, inc: int = -1
    ) -> None:
        L = self.brokers[lid]
        f = self.brokers[fid]
        if inc != -1 and f.inc != inc:
            # ref: kafka-semantics.md §3.3, §4.3. A fetch from an earlier incarnation of the follower
            # is refused: the leader fences a fetch-state update whose broker epoch is older than the
            # one it has for that broker (Replica.updateFetchStateOrThrow, commit 1eb7644; KIP-903,
            # 3.5, KRaft only). Simplified: the engine fences it in every profile, although before
            # 3.5 (and under ZooKeeper) such a delayed fetch could be applied -- the bug KIP-903 fixed.
            return
        st0 = L.fstate.get(fid) if L.role == "leader" else None
        if st0 is not None and gen < st0.last_gen:
            # One fetcher thread and connection per leader, one fetch in flight: Kafka handles a
            # follower's fetches in the order they were sent, so an older fetch (one its fetcher
            # abandoned on stop_fetching, overtaken here by a newer one) was handled before the
            # newer one and cannot move the leader's record of the follower's LEO back. An abandoned
            # fetch that arrives first is handled as Kafka would; the follower discards its answer.
            return
        if L.role != "leader" or fid not in L.fstate:
            self.send(
                lid,
                fid,
                self._follower_on_response,
                (fid, gen, lid, "not_leader", None, None),
                on_lost=(self._fetch_failed, fid, self.brokers[fid].inc, gen),
            )
            return
        f_inc = self.brokers[fid].inc
        if last_epoch is not None:
            e, end = self._end_offset_for(L, last_epoch)
            if e == UNKNOWN or e < last_epoch or end < offset:
                # P 1517-1570: answer DivergingEpoch, no records, follower state untouched
                if e == UNKNOWN:
                    e, end = last_epoch, 0
                self.send(
                    lid,
                    fid,
                    self._follower_on_response,
                    (fid, gen, lid, "diverging", e, end),
                    on_lost=(self._fetch_failed, fid, f_inc, gen),
                )
                self.step(
                    "leader_diverging_epoch",
                    f"broker-{lid}",
                    f"B{fid} fetches at offset {offset} with last epoch {last_epoch}; on leader B{lid} "
                    f"epoch {e} ends at {end}: DivergingEpoch({e}, {end})",
                    broker=lid,
                )
                return
        elif not self.prof.leader_epochs and offset > L.leo:
            self.send(
                lid,
                fid,
                self._follower_on_response,
                (fid, gen, lid, "out_of_range", L.leo, None),
                on_lost=(self._fetch_failed, fid, f_inc, gen),
            )
            return
        if (
            last_epoch is not None
            and not self.prof.kip279
            and L.cache
            and last_epoch != L.cache[-1][0]
            and (fid, last_epoch) not in L.answered
        ):
            L.answered.add((fid, last_epoch))
            end = self._end_offset_for(L, last_epoch)[1]
            self.step(
                "leader_answer_epoch_end",
                f"broker-{lid}",
                f"B{fid} asks where epoch {last_epoch} ends; B{lid} does not know that epoch and, before "
                f"KIP-279, answers with the start of its next epoch: {end}. B{fid} keeps everything "
                f"below {end}",
                broker=lid,
            )
        initial_hw = L.hw  # P 1526-1531: the HW is read before this fetch's position is applied
        st = L.fstate[fid]
        st.last_gen = gen
        old_leo = st.leo
        self._update_follower_state(L, st, offset)
        if offset < len(L.log):
            entries = L.log[offset:]
            self.send(
                lid,
                fid,
                self._follower_on_response,
                (fid, gen, lid, "records", entries, initial_hw),
                on_lost=(self._fetch_failed, fid, f_inc, gen),
            )
        else:
            until = self.now + self.cfg.fetch_wait_ms
            L.parked_fetch[fid] = (gen, offset, self.now, until)
            self.at(until, self._fetch_expire, lid, L.inc, fid, gen)
        if st.leo != old_leo and (old_leo != UNKNOWN or offset > 0):
            if self.quiet:
                self.count_step()
            else:
                self.step(
                    "leader_serve_fetch",
                    f"broker-{lid}",
                    f"B{fid}'s fetch at offset {offset} tells leader B{lid} that B{fid}'s LEO is {offset}",
                    broker=lid,
                    follower=fid,
                )
        if st.leo != old_leo:
            self._maybe_expand_isr(L, fid)
            self._maybe_increment_hw(L)
            if L.parked and self.batches[L.parked[0][0]].acks != -1:
                self._check_purgatory(L)
        else:
            self._maybe_expand_isr(L, fid)

    def _update_follower_state(self, L: Broker, st: FollowerState, offset: int) -> None:
        """Replica.updateFetchState (Rep 108-144)."""
        now = self.now
        leo_now = L.leo
        if self.prof.isr_by_caught_up_time:
            if offset >= leo_now:
                st.last_caught_up = max(st.last_caught_up, now)
            elif offset >= st.last_fetch_leader_leo:
                st.last_caught_up = max(st.last_caught_up, st.last_fetch_time)
        st.last_fetch_leader_leo = leo_now
        st.last_fetch_time = now
        st.leo = offset

    def _fetch_expire(self, lid: int, inc: int, fid: int, gen: int) -> None:
        L = self.brokers[lid]
        if L.inc != inc:
            return
        parked = L.parked_fetch.get(fid)
        if parked is None or parked[0] != gen:
            return
        del L.parked_fetch[fid]
        offset = parked[1]
        entries = L.log[offset:] if L.role == "leader" else []
        self.send(
            lid,
            fid,
            self._follower_on_response,
            (fid, gen, lid, "records", entries, L.hw),
            on_lost=(self._fetch_failed, fid, self.brokers[fid].inc, gen),
        )

    def _wake_parked_fetches(self, L: Broker) -> None:
        if not L.parked_fetch:
            return
        parked = L.parked_fetch
        L.parked_fetch = {}
        for fid, (gen, offset, _at, _until) in parked.items():
            entries = L.log[offset:]
            self.send(
                L.id,
                fid,
                self._follower_on_response,
                (fid, gen, L.id, "records", entries, L.hw),
                on_lost=(self._fetch_failed, fid, self.brokers[fid].inc, gen),
            )

    def _fail_parked_fetches(self, L: Broker) -> None:
        parked = L.parked_fetch
        L.parked_fetch = {}
        for fid, (gen, _offset, _at, _until) in parked.items():
            self.send(L.id, fid, self._follower_on_response, (fid, gen, L.id, "not_leader", None, None))

    def _end_offset_for(self, br: Broker, requested: int) -> tuple[int, int]:
        """LeaderEpochFileCache.endOffsetFor (LEFC 286-330)."""
        cache = br.cache
        if not cache:
            return UNKNOWN, UNKNOWN
        if requested == cache[-1][0]:
            return requested, br.leo
        floor = None
        higher = None
        for e, s in cache:
            if e <= requested:
                floor = (e, s)
            elif higher is None:
                higher = (e, s)
        if higher is None:
            return UNKNOWN, UNKNOWN
        if floor is None or not self.prof.kip279:
            # before KIP-279 an unknown epoch was answered with the start of the next one
            return requested, higher[1]
        return floor[0], higher[1]

    # ---------------------------------------------------------------------------------------
    # ISR maintenance (§4)

    def _isr_expiration_tick(self, period: int) -> None:
        for br in self.brokers.values():
            if br.alive and br.role == "leader":
                self._maybe_shrink_isr(br)
        self.at(self.now + period, self._isr_expiration_tick, period)

    def _maybe_shrink_isr(self, br: Broker) -> None:
        if br.pending is not None:
            return  # P 1319-1321: nothing while an AlterPartition is in flight
        out = []
        for f in br.isr:
            if f == br.id:
                continue
            st = br.fstate[f]
            if self.prof.isr_by_caught_up_time:
                if not self.caught_up(br, st):
                    out.append(f)
            else:
                stuck = self.now - st.last_fetch_time > self.cfg.lag_time_ms
                slow = st.leo >= 0 and br.leo - st.leo > self.cfg.lag_max_messages
                if stuck or slow:
                    out.append(f)
        if not out:
            return
        new = [x for x in br.isr if x not in out]
        self._request_isr_change(
            br,
            new,
            "shrink",
            f"B{br.id} finds {_fmt_set(out)} out of sync (not caught up for more than "
            f"replica.lag.time.max.ms={self.cfg.lag_time_ms}); it asks to shrink the ISR to {_fmt_set(new)}",
        )

    def _maybe_expand_isr(self, L: Broker, fid: int) -> None:
        if L.pending is not None or fid in L.isr:
            return
        if not self.eligible(fid):
            return
        st = L.fstate[fid]
        if st.leo < L.hw:
            return
        join_epoch = self.prof.leader_epochs and self.prof.isr_join_needs_epoch_start
        if join_epoch and st.leo < L.epoch_start:
            return  # P 1061-1066: the follower must reach the current epoch's start (2.1, KAFKA-7128)
        new = L.isr + [fid]
        self._request_isr_change(
            L,
            new,
            "expand",
            f"B{fid} reached the HW {L.hw}"
            + (f" and the epoch start {L.epoch_start}" if join_epoch else "")
            + f"; B{L.id} asks to expand the ISR to {_fmt_set(new)}",
        )

    def _request_isr_change(self, L: Broker, new: list[int], direction: str, text: str) -> None:
        """Emit the leader's ISR step after the state it describes exists (pending change or new ISR)."""
        kind = "leader_shrink_isr" if direction == "shrink" else "leader_expand_isr"
        if self.prof.alter_partition:
            L.pending = direction
            L.pending_isr = list(new)
            # P 224-266: an expansion counts at once; a shrink keeps the old members until committed
            L.maximal = (
                sorted(set(L.isr) | set(new), key=self._order) if direction == "expand" else list(L.isr)
            )
            self.send(
                L.id,
                "controller",
                self._ctl_alter_partition,
                (L.id, L.leader_epoch, L.partition_epoch, list(new)),
            )
            self.step(kind, f"broker-{L.id}", text, broker=L.id)
        else:
            # ref: kafka-semantics.md §4.4, S14. Before AlterPartition (KIP-497) the leader wrote the
            # ISR to ZooKeeper itself, as a conditional write on its cached zkVersion
            # (Partition.updateIsr, ReplicationUtils.updateLeaderAndIsr, tag 1.1.0): it uses the new
            # ISR only if the write succeeds. The partition epoch stands for the zkVersion, and the
            # controller link stands for the ZooKeeper session (one simplification: the controller
            # and ZooKeeper are on the same side of every cut).
            c = self.ctl
            if not self.linked(L.id, "controller"):
                self._zk_write_failed(
                    L,
                    new,
                    "no_session",
                    f"B{L.id} cannot reach ZooKeeper: its conditional write of ISR {_fmt_set(new)} to "
                    f"/brokers/topics/topic/partitions/0/state fails, so it keeps ISR {_fmt_set(L.isr)}",
                )
                return
            if L.partition_epoch != c.partition_epoch:
                self._zk_write_failed(
                    L,
                    new,
                    "stale",
                    f"B{L.id}: Cached zkVersion [{L.partition_epoch}] not equal to that in zookeeper "
                    f"[{c.partition_epoch}], skip updating ISR (it keeps ISR {_fmt_set(L.isr)})",
                )
                return
            L.zk_fail = None
            L.isr = list(new)
            L.maximal = list(new)
            written = (
                f"writes ISR {_fmt_set(new)} to ZooKeeper (conditional on zkVersion {L.partition_epoch})"
            )
            text = text.replace(f"asks to {direction} the ISR to {_fmt_set(new)}", written)
            self.step(kind, f"broker-{L.id}", text, broker=L.id)
            self._ctl_alter_partition(L.id, L.leader_epoch, L.partition_epoch, list(new), direct=True)
            L.partition_epoch = c.partition_epoch  # zkVersion = newVersion on success
            self._maybe_increment_hw(L)
            self._check_purgatory(L)

    def _zk_write_failed(self, L: Broker, new: list[int], why: str, text: str) -> None:
        """A failed ZooKeeper ISR write changes nothing; one step per distinct failure, not per retry."""
        key = (why, L.partition_epoch, self.ctl.partition_epoch, tuple(new))
        if L.zk_fail == key:
            return
        L.zk_fail = key
        self.step("leader_isr_write_failed", f"broker-{L.id}", text, broker=L.id)

    def _leader_alter_rejected(self, lid: int, reason: str, partition_epoch: int) -> None:
        L = self.brokers[lid]
        if L.pending is None or L.partition_epoch != partition_epoch:
            return
        if reason == "INELIGIBLE_REPLICA":
            L.pending = None
            L.maximal = list(L.isr)
            self._maybe_increment_hw(L)


def _what(batch: Batch) -> str:
    """A refused batch as a caption names it: its records, or a transaction marker as such (a
    WriteTxnMarkers append is refused by the same min.insync.replicas check, KA 2479-2483)."""
    return f"the {batch.control} marker" if batch.control is not None else _fmt_records(batch.records)
