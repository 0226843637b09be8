"""The producer client: batches, the accumulator's order, sends, retries, idempotent sequences
(Sender, RecordAccumulator, TransactionManager; kafka-semantics.md §2, kafka-eos-kraft.md §A).

A mixin of engine.sim.Sim: its methods read and change the partition simulation's state
(`self.brokers`, `self.ctl`, `self.batches`, ...), which Sim.__init__ sets up.
"""

from __future__ import annotations

from typing import Any

from ..clients_spec import DEFAULT_PRODUCER_ID
from ..scenario import ScenarioError
from ..segments import batch_size_bytes
from ..state import (
    FIRST_PRODUCER_ID,
    NETWORK_DELAY_MS,
    NO_LEADER,
    REFRESH_METADATA,
    RETRIABLE,
    Batch,
    ProducerSession,
    _fmt_offsets,
    _fmt_records,
)


def _named(records: list[str]) -> list[str]:
    """The records the ledger tracks by name: all but tombstones (a null value has no name)."""
    return [r for r in records if r is not None] if None in records else records


class ProducerRole:
    # ---------------------------------------------------------------------------------------
    # producer client (Sender / RecordAccumulator, simplified to one batch per produce action)

    def produce(
        self, action: Any, index: int, session: ProducerSession | None = None, refused: str | None = None
    ) -> None:
        """One produce action: a batch from `session` (the run's producer process that sends it;
        None for a partition driven on its own, which has one producer). `refused`: a
        transactional send() that fails before the batch leaves (engine/transactions.py: its
        transaction manager holds an error, or AddPartitionsToTxn failed), with that error."""
        if session is None:
            session = self._own_producer()
        pc = session.config
        if action.records is not None:
            records = list(action.records)
        else:
            base = sum(len(b.records) for b in self.batches if b.control is None)
            records = [f"m{base + i}" for i in range(action.count)]
        if action.acks is None:
            acks: int | str = pc.acks
        elif action.acks == "all":
            acks = -1
        elif action.acks == "min.insync.replicas":
            acks = "min_isr"
        else:
            acks = action.acks
        shown: Any = "all" if acks == -1 else ("min.insync.replicas" if acks == "min_isr" else acks)
        b = Batch(index, records, acks, shown, pc.enable_idempotence and acks == -1, session)
        if b.idempotent:  # the producer numbers each partition's records from 0 (one per record)
            b.pepoch, b.seq = self._next_sequence(session, len(records))
        b.key = action.key
        b.timestamp = self.now if action.timestamp_ms is None else action.timestamp_ms
        b.nbytes = action.bytes_
        if b.nbytes is None and self.part2:
            key = None if b.key is None else b.key.encode()
            values = [None if r is None else r.encode() for r in records]  # None: a tombstone
            b.nbytes = batch_size_bytes([(b.timestamp, key, v) for v in values])
        b.first_send = self.now
        b.action = self.action
        b.lose_response = action.lose_response
        b.deadline = self.now + pc.delivery_timeout_ms
        b.txn = pc.transactional
        self.batches.append(b)
        self.senders.add(session)
        self.pending_batches += 1
        if refused is not None:
            self._producer_fail(b, refused, "its transaction cannot take it")
            return
        self._producer_send(b.index)

    def _own_producer(self) -> ProducerSession:
        """The one producer of a partition simulation driven without engine/cluster.py."""
        if self._own_session is None:
            self._own_session = ProducerSession(self.cfg.producers[0], FIRST_PRODUCER_ID, 0)
        return self._own_session

    def _next_sequence(self, session: ProducerSession, n: int) -> tuple[int, int]:
        """The epoch and first sequence of a new idempotent batch of `session` here. After the
        session bumped its epoch (for another partition's gap), this partition keeps numbering
        under the old epoch until none of its old-epoch batches is unanswered, then starts at 0
        under the new one (TransactionManager.maybeUpdateProducerIdAndEpoch)."""
        st = self.sequences.get(session)
        if st is None:
            st = self.sequences[session] = [session.epoch, 0, -1, -1]
        elif st[0] != session.epoch and self._unanswered(session, len(self.batches)) is None:
            st[:] = [session.epoch, 0, -1, -1]
        epoch, seq = st[0], st[1]
        st[1] += n
        return epoch, seq

    def _unanswered(self, session: ProducerSession, before: int) -> Batch | None:
        """The latest idempotent batch of `session` before index `before` still without an answer."""
        for i in range(before - 1, -1, -1):
            e = self.batches[i]
            if e.session is session and e.idempotent and e.outcome is None:
                return e
        return None

    def unanswered_of(self, session: ProducerSession) -> int:
        """How many of `session`'s batches here have no outcome yet."""
        if not self.pending_batches:
            return 0
        return sum(1 for b in self.batches if b.session is session and b.outcome is None)

    def producer_crash(self, session: ProducerSession) -> tuple[int, int]:
        """`session`'s process dies: its batches here without an outcome end with it, as
        "crashed" (the application never learns what became of them). A request already on the
        wire still reaches the leader, which may append it; its answer finds nobody. Returns how
        many batches were on the wire and how many still in the producer's memory."""
        on_wire = queued = 0
        for b in self.batches:
            if b.session is session and b.outcome is None:
                if b.state == "awaiting_response":
                    on_wire += 1
                else:
                    queued += 1
                self.pending_batches -= 1
                b.outcome = "crashed"
                b.done_ms = self.now
                self._set_state(b, "crashed")
        return on_wire, queued

    def _set_state(self, b: Batch, state: str) -> None:
        b.state = state
        if state in ("backoff", "waiting_for_leader", "held"):
            self.unsendable.add(b.index)
        else:
            self.unsendable.discard(b.index)

    def _held_by(self, idx: int) -> Batch | None:
        """The earlier batch of this partition that is waiting to be sent again, if any. A retried
        batch goes back to the front of the partition's queue (RecordAccumulator.reenqueue, in
        sequence order with idempotence) and the drain takes only the queue's first batch, skipping
        the partition while that one backs off or has no leader, so no later batch overtakes it."""
        b = self.batches[idx]
        batches = self.batches
        earlier = [i for i in self.unsendable if i < idx and batches[i].session is b.session]
        if earlier:
            return batches[min(earlier)]
        if b.idempotent and b.attempts:
            # RecordAccumulator 569-594, 858-862: a retried batch that already has its sequence goes
            # out only as the partition's first unacknowledged one, so an earlier batch still in
            # flight goes first
            return self._unanswered(b.session, idx)
        if b.idempotent and self._unresolved(b.session):
            # RecordAccumulator 851-855 (kafka-eos-kraft §A.6): no new batch leaves while the
            # partition's sequence is unresolved; it waits for the batches in flight, then goes out
            # as it is (resolved) or renumbered under a bumped epoch (`_check_unresolved`)
            return self._in_flight(b.session)
        return None

    def _unresolved(self, session: ProducerSession) -> bool:
        st = self.sequences.get(session)
        return st is not None and st[3] >= 0

    def _in_flight(self, session: ProducerSession) -> Batch | None:
        """`session`'s earliest batch here that has been sent and has no outcome yet (in flight, or
        waiting to be sent again: TransactionManager.hasInflightBatches)."""
        if not self.pending_batches:
            return None
        return next(
            (e for e in self.batches if e.session is session and e.outcome is None and e.attempts), None
        )

    def _release_held(self) -> None:
        """Send, in order, the batches that waited behind one that has now been sent or failed:
        each time the first held batch nothing holds back any more. Iterative (a send made here
        calls this again and returns at once), so each batch leaves once, however many wait."""
        if self.releasing or not self.unsendable:  # every send ends here; usually nothing is held
            return
        self.releasing = True
        try:
            while True:
                held = sorted(i for i in self.unsendable if self.batches[i].state == "held")
                ready = next((i for i in held if self._held_by(i) is None), None)
                if ready is None:
                    return
                self._producer_send(ready)
        finally:
            self.releasing = False

    def _producer_expire_held(self, idx: int) -> None:
        b = self.batches[idx]
        if b.outcome is None and b.state == "held":
            # RecordAccumulator.expiredBatches: the delivery timeout counts in the accumulator too
            why = "delivery.timeout.ms passed while it waited"
            self._producer_fail(b, b.error or "REQUEST_TIMED_OUT", why, expired=True)

    def _producer_send(self, idx: int) -> None:
        b = self.batches[idx]
        if b.outcome is not None:
            return
        held_by = self._held_by(idx)
        if held_by is not None:
            if b.state != "held":
                self._set_state(b, "held")
                self.at(b.deadline, self._producer_expire_held, idx)
                why = "is in flight" if held_by.state == "awaiting_response" else "waits to be sent again"
                self.step(
                    "producer_hold",
                    b.session.id,
                    f"Batch {_fmt_records(b.records)} waits in {_the(b)}'s queue behind "
                    f"{_fmt_records(held_by.records)}, which {why}: a partition's batches leave in order",
                    produce=idx,
                )
            return
        if self.producer_leader == NO_LEADER or not self._can_connect(self.producer_leader):
            # NetworkClient: a node that refuses the connection gets no request; the batch stays in
            # the accumulator (no retry is spent) while the producer refreshes its metadata
            self._producer_refresh()
        leader = self.producer_leader
        if leader == NO_LEADER or not self._can_connect(leader):
            if b.state != "waiting_for_leader":
                self._set_state(b, "waiting_for_leader")
                self.step(
                    "producer_retry",
                    b.session.id,
                    f"{_the(b, True)} knows no leader for the partition; batch "
                    f"{_fmt_records(b.records)} waits for metadata",
                    produce=idx,
                )
            self._producer_wait(b)
            return
        b.attempts += 1
        b.attempt_id += 1
        self._set_state(b, "awaiting_response")
        if b.attempts == 1:
            self.sent_records.extend(_named(b.records))
        b.target = leader
        retry = f" (attempt {b.attempts})" if b.attempts > 1 else ""
        if b.acks == 0:
            self.pending_batches -= 1
            b.outcome = "sent"
            b.done_ms = self.now
            self._set_state(b, "sent")
        # Throughout, a message is sent before the step that narrates it, so that step's snapshot
        # shows it in flight (a hop is 1 ms: the next step is often its delivery). Steps schedule
        # nothing, so this order changes no event and no trace.
        self.send(
            "producer",
            leader,
            self._leader_on_produce,
            (leader, idx, b.attempt_id),
            on_fail=(self._producer_error, idx, b.attempt_id, "NETWORK_EXCEPTION"),
        )
        if self.quiet:
            self.count_step()
        else:
            self.step(
                "producer_send",
                b.session.id,
                f"{_name(b)} sends {_fmt_records(b.records)}{_keyed(b) if self.part2 else ''} to "
                f"B{leader} with acks={b.acks_shown}{retry}{_transactional(b)}",
                produce=idx,
                broker=leader,
                records=b.records,
            )
        if b.acks != 0:
            timeout = b.session.config.request_timeout_ms + 2 * NETWORK_DELAY_MS + 1
            if self.now + timeout > b.deadline:
                # Sender.getExpiredInflightBatches: a batch in flight at its delivery deadline is
                # failed then, whatever answer comes later
                self.at(b.deadline, self._producer_expire, idx, b.attempt_id)
            else:
                self.at(self.now + timeout, self._producer_error, idx, b.attempt_id, "REQUEST_TIMED_OUT")
        self._release_held()

    def _can_connect(self, bid: int) -> bool:
        return self.brokers[bid].alive

    def _producer_refresh(self) -> None:
        c = self.ctl
        self.producer_leader = c.leader

    def _producer_wait(self, b: Batch) -> None:
        """No reachable leader: wait for metadata without spending a retry, until the delivery timeout."""
        backoff = b.session.config.retry_backoff_max_ms
        if self.now + backoff > b.deadline:
            why = "delivery.timeout.ms has passed"
            self._producer_fail(b, b.error or "REQUEST_TIMED_OUT", why, expired=True)
            return
        self.at(self.now + backoff, self._producer_send, b.index)

    def _producer_backoff(self, b: Batch, error: str, quiet: bool = False) -> None:
        pc = b.session.config
        backoff = min(pc.retry_backoff_ms * (2 ** min(b.retries_used, 10)), pc.retry_backoff_max_ms)
        if b.retries_used >= pc.retries or self.now + backoff > b.deadline:
            exhausted = b.retries_used >= pc.retries
            why = "retries are exhausted" if exhausted else "delivery.timeout.ms has passed"
            # the delivery timeout ends it before its retry, as the accumulator's expiry would
            self._producer_fail(b, error, why, expired=not exhausted)
            return
        b.retries_used += 1
        if not quiet:
            self._set_state(b, "backoff")
            self.step(
                "producer_retry",
                b.session.id,
                f"{error} is retriable: {_the(b)} will resend {_fmt_records(b.records)} in {backoff} ms",
                produce=b.index,
            )
        self.at(self.now + backoff, self._producer_send, b.index)

    def _producer_expire(self, idx: int, attempt_id: int) -> None:
        b = self.batches[idx]
        if b.attempt_id != attempt_id or b.state != "awaiting_response" or b.outcome is not None:
            return
        why = "delivery.timeout.ms passed while the request was in flight"
        self._producer_fail(b, "REQUEST_TIMED_OUT", why, expired=True)

    def _producer_fail(self, b: Batch, error: str, why: str, expired: bool = False) -> None:
        """`expired`: failed by its delivery timeout (Sender's expired batches), whatever error it
        last had; sent before, its outcome is unknown."""
        self.pending_batches -= 1
        b.outcome = "failed"
        self.failed_records.extend(_named(b.records))
        b.error = error
        b.done_ms = self.now
        self._set_state(b, "failed")
        self.step(
            "producer_give_up",
            b.session.id,
            f"{_the(b, True)} gives up on {_fmt_records(b.records)}: {error} ({why})",
            produce=b.index,
        )
        # Sender.sendProducerData marks an expired batch that was sent (inRetry) unresolved, whatever
        # answer its last attempt had: a retriable error (a lost connection, a leader change) may
        # follow an attempt that was written (TM 739-745)
        unknown = b.attempts and (expired or error == "REQUEST_TIMED_OUT")
        if b.idempotent and unknown and not b.session.config.transactional:
            st = self.sequences.get(b.session)
            if st is not None and st[0] == b.pepoch:
                # sent, never answered: its outcome is unknown, its sequence unresolved (TM 739-745)
                st[3] = max(st[3], b.seq + len(b.records) - 1)
        self._check_unresolved(b.session)
        self._release_held()

    def _check_unresolved(self, session: ProducerSession) -> None:
        """kafka-eos-kraft §A.6 / §E.A A6: a batch that expired after it was sent leaves its
        sequence unresolved. A later batch acknowledged past it proves it was written (the broker
        takes sequence n+1 only after n): resolved, nothing else happens (TM 756-758). Once no
        batch of the partition is in flight and it is still unresolved, the idempotent producer
        bumps its own epoch and starts the partition's sequence again at 0 (TM 749-781)."""
        st = self.sequences.get(session)
        if st is None or st[3] < 0:
            return
        if st[2] > st[3]:
            st[3] = -1
            return
        if self._in_flight(session) is not None:
            return
        bumped = self._restart_sequences(session, 0)  # the batches held back meanwhile (never sent)
        how = (f"it bumps its epoch to {session.epoch}" if bumped
               else f"its epoch is already {session.epoch} (bumped for another partition)")
        self.step(
            "producer_bump_epoch",
            session.id,
            f"Every batch {_who(session)} had in flight here expired with an unknown outcome: {how} and "
            "numbers its next batches from sequence 0",
        )

    def _producer_error(self, idx: int, attempt_id: int, error: str) -> None:
        b = self.batches[idx]
        if b.control is not None:  # a transaction marker's request failed: the coordinator retries it
            self.txn.marker_answer(self.partition, idx, attempt_id, error, None)
            return
        if b.attempt_id != attempt_id or b.state != "awaiting_response":
            return
        if b.outcome == "sent":
            return  # acks=0: the client never learns
        self.step(
            "producer_receive",
            b.session.id,
            f"{_name(b)} gets {error} for {_fmt_records(b.records)}",
            produce=idx,
            error=error,
        )
        b.error = error
        if error == "MESSAGE_TOO_LARGE" and len(b.records) > 1:
            # Sender.completeBatch 668-680 splits such a batch and sends the halves again
            raise ScenarioError(
                [
                    {
                        "path": f"actions[{b.action}]" if b.action is not None else "actions",
                        "message": "a batch of several records over max.message.bytes: the producer would "
                        "split it and send the parts again, which is not simulated yet; produce one record "
                        "per batch, or fewer bytes",
                    }
                ]
            )
        if error == "OUT_OF_ORDER_SEQUENCE_NUMBER" and self._is_next_sequence(b):
            self._bump_producer_epoch(b)
        if error in REFRESH_METADATA:
            self._producer_refresh()
        if error not in RETRIABLE:
            self._producer_fail(b, error, "not retriable")
            return
        self._producer_backoff(b, error)

    def _producer_response(
        self, idx: int, attempt_id: int, error: str | None, offsets: list[int] | None
    ) -> None:
        b = self.batches[idx]
        if error is not None:
            self._producer_error(idx, attempt_id, error)
            return
        if b.attempt_id != attempt_id or b.outcome is not None:
            return
        self.pending_batches -= 1
        b.outcome = "acked"
        self.acked_records.extend(_named(b.records))
        if b.idempotent:  # the last acknowledged sequence (TransactionManager.lastAckedSequence)
            st = self.sequences.get(b.session)
            if st is not None and st[0] == b.pepoch:
                st[2] = max(st[2], b.seq + len(b.records) - 1)
                self._check_unresolved(b.session)
        b.error = None
        b.offsets = offsets
        b.done_ms = self.now
        self._set_state(b, "acked")
        assert offsets is not None
        if self.quiet:
            self.count_step()
        else:
            self.step(
                "producer_receive",
                b.session.id,
                f"{_name(b)}: {_fmt_records(b.records)} acknowledged at "
                f"{_fmt_offsets(offsets[0], offsets[-1])}",
                produce=idx,
                offsets=offsets,
            )
        if self.unsendable:
            self._release_held()

    def _is_next_sequence(self, b: Batch) -> bool:
        """TransactionManager.isNextSequence (TM 959-964): an OUT_OF_ORDER_SEQUENCE_NUMBER for the
        batch right after the last acknowledged one is a real gap; for any other batch an earlier
        one may still fill it (or, like a retry older than the broker's five-batch window,
        kafka-eos-kraft §E.A A3, it never will), and the batch is retried until its delivery
        timeout. A transactional producer never bumps its own epoch (its coordinator does)."""
        st = self.sequences.get(b.session)
        if st is None or b.session.config.transactional or b.pepoch != st[0]:
            return False
        return b.seq == st[2] + 1

    def _bump_producer_epoch(self, b: Batch) -> None:
        """KIP-360 (TransactionManager 549-560, 749-781): the broker reports a gap no earlier batch
        can fill, so an idempotent producer bumps its own epoch, with no round trip, and numbers
        this partition's unacknowledged batches again from sequence 0 (its other partitions follow
        once their old-epoch batches are answered: `_next_sequence`)."""
        session = b.session
        bumped = self._restart_sequences(session, b.index)
        how = (f"bumps its epoch to {session.epoch}" if bumped
               else f"has already bumped its epoch to {session.epoch} for another partition")
        self.step(
            "producer_bump_epoch",
            session.id,
            f"The gap before {_fmt_records(b.records)} cannot be filled (no earlier batch is unanswered): "
            f"{_the(b)} {how} and numbers its batches from 0 again",
            produce=b.index,
        )

    def _restart_sequences(self, session: ProducerSession, start: int) -> bool:
        """Start this partition's sequence again at 0 under a new epoch and renumber the unanswered
        batches from index `start`. The epoch is the producer's, bumped once for all its partitions
        (TransactionManager.bumpIdempotentEpochAndResetIdIfNeeded): when another partition bumped it
        since this partition's numbering began, this one takes that epoch instead of bumping again.
        True when this call bumped the epoch."""
        st = self.sequences.get(session)
        bumped = st is None or st[0] == session.epoch
        if bumped:
            session.epoch += 1
        self.sequences[session] = [session.epoch, 0, -1, -1]
        self._renumber(session, start)
        return bumped


    def _renumber(self, session: ProducerSession, start: int) -> None:
        """Number `session`'s unanswered batches here from index `start` on again, under its
        current epoch, from the partition's next sequence (TransactionManager 572-586)."""
        st = self.sequences[session]
        for e in self.batches[start:]:
            if e.session is session and e.idempotent and e.outcome is None:
                e.seq = st[1]
                e.pepoch = session.epoch
                st[1] += len(e.records)


def _name(b: Batch) -> str:
    """How a step names the producer that sent `b`: "Producer", or "Producer app1" when the
    scenario has named its producers."""
    pid = b.session.id
    return "Producer" if pid == DEFAULT_PRODUCER_ID else f"Producer {pid}"


def _who(session: ProducerSession) -> str:
    return "the producer" if session.id == DEFAULT_PRODUCER_ID else f"producer {session.id}"


def _the(b: Batch, capital: bool = False) -> str:
    pid = b.session.id
    if pid == DEFAULT_PRODUCER_ID:
        return "The producer" if capital else "the producer"
    return f"Producer {pid}" if capital else f"producer {pid}"


def _transactional(b: Batch) -> str:
    """A transactional batch's produce request carries the flag, its producer id, epoch and
    sequence (engine/transactions.py)."""
    if not b.txn:
        return ""
    return (
        f", transactional: producer id {b.session.pid}, epoch {b.pepoch}, sequence {b.seq}"
        if b.seq >= 0
        else f", transactional: producer id {b.session.pid}"
    )


def _keyed(b: Batch) -> str:
    """' (key "alice")' for a keyed batch: the key decides its partition (engine/producers.py)."""
    return "" if b.key is None else f' (key "{b.key}")'
