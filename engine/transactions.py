"""Transactions: the transaction coordinator, the transactional producer's calls, control markers,
the last stable offset and what each isolation level reads (KIP-98, KIP-447; Kafka's
TransactionCoordinator, TransactionMetadata, TransactionManager, ProducerStateManager,
CompletedFetch).

The protocol is TV0/TV1, every release before 4.0 (the reference's §B.4):

1. `init_transactions`: InitProducerId to the coordinator of the transactional.id (the leader of
   `__transaction_state` partition abs(hashCode) % 50, modelled like the group coordinator: the
   first running broker of that partition's stripe, engine/offsets.py). The decision table:
   a new id gets a fresh producer id and epoch 0; Empty / CompleteCommit / CompleteAbort bump the
   epoch (same producer id: a restarted transactional producer keeps its id); PrepareCommit /
   PrepareAbort answer CONCURRENT_TRANSACTIONS (the old transaction finishes as decided, the
   client retries after retry.backoff.ms); Ongoing is fenced: the epoch is bumped
   (PrepareEpochFence, that epoch never handed out), the transaction aborted with markers at the
   bumped epoch, CONCURRENT_TRANSACTIONS answered, and the retry bumps the epoch once more.
2. `begin_transaction` is local: nothing is sent.
3. A `produce` to a partition new to the transaction first sends AddPartitionsToTxn and waits for
   it; the first one moves the coordinator to Ongoing and starts transaction.timeout.ms. The batch
   carries the transactional flag, the producer id and epoch, and its sequence.
4. `commit_transaction` / `abort_transaction` wait for the transaction's batches (EndTxn is never
   sent while one is incomplete), then send EndTxn. The coordinator writes PrepareCommit /
   PrepareAbort and answers at once: the call returns before any marker exists. Then it sends
   WriteTxnMarkers to the leader of every partition in the transaction; each leader appends a
   control batch of one record (COMMIT / ABORT) that takes an offset, with acks=all. When every
   marker is acknowledged the coordinator writes CompleteCommit / CompleteAbort. A transaction
   with no partition ends on the client (no EndTxn).
5. The coordinator sweeps every
   transaction.abort.timed.out.transaction.cleanup.interval.ms (from its start at t=0): a
   transaction Ongoing for more than its transaction.timeout.ms is fenced (epoch + 1) and
   aborted, so a transaction started at t=0 with the default 60 s ends in (60 s, 70 s].
6. Errors, as the Java producer sees them (§B.7): the coordinator answers a stale epoch with
   PRODUCER_FENCED, fatal (every later call fails with it; the instance must be closed); a leader
   answers a produce whose epoch is below the producer state's (a marker at a bumped epoch
   raises it) with INVALID_PRODUCER_EPOCH, abortable: commitTransaction() then fails with it and
   the application must call abortTransaction(). Before 2.7 (the 1.1 profile) there is no
   PRODUCER_FENCED: coordinator and leader both answer INVALID_PRODUCER_EPOCH (47), which the
   client raises as a fatal ProducerFencedException (profiles.py `producer_fenced_split`).
   KIP-447 is 2.5's: the 1.1 profile refuses `send_offsets_to_transaction`.
7. KIP-447 (`send_offsets_to_transaction`, not in the contract's action table: documented in
   engine/scenario.py): AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to
   the group coordinator with the consumer's group metadata (member id, generation), checked as
   a commit is (ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID: abortable). The offsets stay pending and
   become the group's committed offsets when the COMMIT marker is written to the group's
   `__consumer_offsets` partition (not simulated as a log: the group coordinator applies them when
   the transaction completes), and vanish on ABORT.

TV2 (KIP-890, the server default from 4.0) differs, and is not simulated: the epoch is bumped by
every EndTxn (the markers carry E+1 and the next transaction starts every partition at sequence 0),
the client sends no AddPartitionsToTxn (the leader adds the partition on the first produce), a
fence is three bumps instead of two. The engine's numbers are TV1's whatever the profile.

Last stable offset (`last_stable_offset`): min(HW, first offset of the earliest transaction of
the partition that is undecided, or decided with its marker not yet below the HW), never below
the log start offset. read_uncommitted reads to the HW and gets aborted records too;
read_committed reads to the LSO, and the client drops aborted records using the aborted
transactions the fetch returns. No poll returns a control record; the position moves past it.

Simplifications: the coordinator's `__transaction_state` and the group's `__consumer_offsets`
are not replicated logs (a write takes one hop); when the coordinator moves (the first running
broker of the transaction-state partition's stripe, `coordinator`), the next one has the
transactional.id's state at once; markers carry
no coordinator epoch; epochs never run out (no producer-id rotation at 32766); a transactional
produce is not verified with the coordinator by the leader (KIP-890 part 1) -- TV1's client adds
the partition first, so a well-behaved client never needs it.

Step kinds added (engine/steps.py, "transactions" block): txn_init_producer_id,
txn_concurrent_transactions, txn_fence_epoch, txn_begin, txn_add_partitions, txn_prepare,
leader_write_txn_marker, leader_advance_lso, txn_complete, txn_producer_fenced,
txn_timeout_abort, txn_client_error, txn_end_local, leader_reject_invalid_epoch,
consumer_held_at_lso, consumer_skip_txn_records, txn_send_offsets.

Result fields: `transactions[i]` ({producer, action, outcome, error}: outcome "ok" for
init_transactions / begin_transaction / send_offsets_to_transaction, "committed" / "aborted" for
the ends, "error" with Kafka's error name), `producers[id]` gains transaction_state (the
coordinator's state for its transactional.id) and fenced (the coordinator has handed its
transactional.id a newer epoch than this instance holds: it is a zombie, whether it knows yet or
not), `partitions[i].lso`, `partitions[i].log[j].control` ("COMMIT" / "ABORT", record null).
Snapshots gain `partition.lso`, `transactions` (each transactional.id's coordinator state) and
`txn_producers` (each producer process's transaction manager), and a leader log entry that is a
marker has `control`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .offsets import coordinator_of, offsets_partition_for
from .segments import LATEST_TIMESTAMP, NO_TIMESTAMP, NOT_FOUND, OffsetAndTimestamp, batch_size_bytes
from .state import NO_LEADER, Batch, Broker, ProducerSession

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .clock import Clock
    from .producers import ProducerProc
    from .sim import Sim

TXN_STATE_PARTITIONS = 50  # transaction.state.log.num.partitions (TransactionLogConfig 31-46)
HOP_MS = 1  # one network hop (NETWORK_DELAY_MS)
MAX_BLOCK_MS = 60_000  # max.block.ms: how long initTransactions() waits for an answer
MARKER_RETRY_MS = 100  # the marker channel's retry after an error (no leader, not enough replicas)
MARKER_RETRY_MAX_MS = 1_000  # retry.backoff.max.ms: the retries back off exponentially up to it
MARKER_TIMEOUT_MS = 30_000  # request.timeout.ms of a WriteTxnMarkers request
# a control batch on disk: the v2 batch header plus one record whose key is (version, type) and
# value (version, coordinatorEpoch) (ControlRecordType, EndTransactionMarker)
CONTROL_BATCH_BYTES = batch_size_bytes([(0, b"\0\0\0\0", b"\0" * 6)])
PENDING = ("PrepareCommit", "PrepareAbort", "PrepareEpochFence")
FATAL = "FATAL_ERROR"
ABORTABLE = "ABORTABLE_ERROR"
COORDINATOR = "txn-coordinator"  # the actor name of coordinator steps and marker messages
# what moved a fenced producer's epoch on, as its fenced request is told
NEWER_INSTANCE = "a newer instance called initTransactions() and owns this transactional.id"
TIMED_OUT = "its transaction ran past transaction.timeout.ms and the coordinator fenced and aborted it"


def txn_partition_for(transactional_id: str) -> int:
    """TransactionStateManager.partitionFor (TSM 416): abs(hashCode) % 50, the same rule as a group's."""
    return offsets_partition_for(transactional_id, TXN_STATE_PARTITIONS)


# ---------------------------------------------------------------------------------------------
# the log side: LSO, aborted records, control records


@dataclass(frozen=True)
class TxnLogView:
    lso: int
    aborted: frozenset[int]  # offsets of records whose transaction ended with an ABORT marker
    control: frozenset[int]  # offsets of markers
    open_since: int | None  # first offset of the earliest transaction holding the LSO back
    # offsets of transactional records with no marker of their producer after them (open, or
    # decided with the marker still on the way)
    undecided: tuple[int, ...] = ()


_NO_TXN: frozenset[int] = frozenset()


def log_view(sim: Sim, br: Broker) -> TxnLogView:
    """The producer-state view of replica `br`'s log (ProducerStateManager, UnifiedLog 425-430)."""
    start = sim.log_start_offset() if br.seg is not None else 0
    if not sim.has_txn:
        return TxnLogView(max(br.hw, start), _NO_TXN, _NO_TXN, None)
    log = br.log
    key = (len(log), br.hw, log[-1][2] if log else -1, br.leader_epoch, start)
    cached = sim.txn_cache.get(br.id)
    if cached is not None and cached[0] == key:
        return cached[1]  # type: ignore[no-any-return]
    batches = sim.batches
    open_first: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    aborted: set[int] = set()
    control: set[int] = set()
    for off, (_e, _r, bidx) in enumerate(log):
        if bidx < 0:
            continue
        b = batches[bidx]
        pid = b.session.pid
        if b.control is not None:
            control.add(off)
            if b.control == "ABORT":
                aborted.update(members.get(pid, ()))
            members.pop(pid, None)
            if off < br.hw:  # decided and its marker replicated: no longer holds the LSO back
                open_first.pop(pid, None)
        elif b.txn:
            open_first.setdefault(pid, off)
            members.setdefault(pid, []).append(off)
    first = min(open_first.values(), default=None)
    lso = br.hw if first is None else min(br.hw, first)
    undecided = tuple(sorted(off for offs in members.values() for off in offs))
    view = TxnLogView(max(lso, start), frozenset(aborted), frozenset(control), first, undecided)
    sim.txn_cache[br.id] = (key, view)
    return view


def leader_of(sim: Sim) -> Broker | None:
    c = sim.ctl
    leader = sim.brokers.get(c.leader) if c.leader != NO_LEADER else None
    if leader is None or not leader.alive or leader.role != "leader":
        return None
    return leader


def last_stable_offset(sim: Sim) -> int:
    """The partition's LSO as its leader has it (its HW with no transaction; 0 with no leader)."""
    leader = sim.brokers.get(sim.ctl.leader) if sim.ctl.leader != NO_LEADER else None
    return log_view(sim, leader).lso if leader is not None else 0


def fetch_bound(sim: Sim, isolation: str) -> int | None:
    """Where a consumer's fetch stops: the HW (read_uncommitted) or the LSO (read_committed)."""
    leader = leader_of(sim)
    if leader is None:
        return None
    return log_view(sim, leader).lso if isolation == "read_committed" else leader.hw


def read(
    sim: Sim, pos: int, bound: int, room: int, isolation: str
) -> tuple[list[tuple[int, Any]], int, list[int]]:
    """What a consumer's poll gets from offset `pos` up to `bound`: (records as (offset, log
    entry), the next position, offsets dropped). Control records never reach the application;
    under read_committed neither do aborted ones (the client drops them with the fetch's list of
    aborted transactions, CompletedFetch 207-239: the broker sends them)."""
    leader = leader_of(sim)
    assert leader is not None
    log = leader.log
    if not sim.has_txn:
        end = min(bound, pos + room)
        return [(off, log[off]) for off in range(pos, end)], end, []
    view = log_view(sim, leader)
    committed = isolation == "read_committed"
    out: list[tuple[int, Any]] = []
    dropped: list[int] = []
    off = pos
    while off < bound and len(out) < room:
        if off in view.control or (committed and off in view.aborted):
            dropped.append(off)
        else:
            out.append((off, log[off]))
        off += 1
    return out, off, dropped


def list_offsets_committed(sim: Sim, answer: OffsetAndTimestamp, timestamp: int) -> OffsetAndTimestamp:
    """ListOffsets under read_committed: LATEST is the LSO (seekToEnd, endOffsets: CC 362-363),
    and a by-time hit at or past the LSO is no answer."""
    lso = last_stable_offset(sim)
    if timestamp == LATEST_TIMESTAMP:
        return OffsetAndTimestamp(lso, NO_TIMESTAMP)
    if timestamp >= 0 and answer.offset >= lso:
        return NOT_FOUND
    return answer


def pending_offsets(sim: Sim, group: str, p: int) -> bool:
    """A transaction holds pending offsets of `group` for partition p (KIP-447)."""
    return sim.txn is not None and bool(sim.txn.unstable(group, [p]))


def describe_dropped(sim: Sim, dropped: list[int]) -> str:
    leader = leader_of(sim)
    view = log_view(sim, leader) if leader is not None else None
    markers = [o for o in dropped if view is not None and o in view.control]
    aborted = [o for o in dropped if o not in markers]
    parts = []
    if aborted:
        parts.append(f"aborted record{'s' if len(aborted) != 1 else ''} at {_offsets(aborted)}")
    if markers:
        parts.append(f"transaction marker{'s' if len(markers) != 1 else ''} at {_offsets(markers)}")
    return " and ".join(parts)


def _offsets(offs: list[int]) -> str:
    if len(offs) > 1 and offs[-1] - offs[0] == len(offs) - 1:
        return f"{offs[0]}-{offs[-1]}"
    return ", ".join(str(o) for o in offs)


# ---------------------------------------------------------------------------------------------
# the coordinator and the producers' transaction managers


@dataclass
class TxnMeta:
    """TransactionMetadata: one transactional.id as its coordinator holds it."""

    tid: str
    pid: int
    epoch: int = -1
    state: str = "Empty"
    partitions: set[int] = field(default_factory=set)
    start_ms: int = -1
    timeout_ms: int = 60_000
    result: str | None = None  # "COMMIT" / "ABORT" while its markers are being written
    markers: dict[int, int] = field(default_factory=dict)  # partition -> marker batch index, unanswered
    marker_epoch: int = -1
    # why each epoch was left behind (old epoch -> cause): what a fenced request is told
    bumps: dict[int, str] = field(default_factory=dict)
    # KIP-447: offsets added to the transaction, per group (applied at CompleteCommit)
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    offsets_member: dict[str, tuple[str | None, int]] = field(default_factory=dict)


@dataclass
class ClientTxn:
    """One producer instance's TransactionManager: its state and the transaction it is in."""

    # UNINITIALIZED, READY, IN_TRANSACTION, COMMITTING_TRANSACTION / ABORTING_TRANSACTION (EndTxn
    # in flight), ABORTABLE_ERROR, FATAL_ERROR (TransactionManager.State, TM 199-233)
    state: str = "UNINITIALIZED"
    error: str | None = None
    partitions: set[int] = field(default_factory=set)
    batches: list[tuple[int, int]] = field(default_factory=list)  # (partition, batch index)
    has_offsets: bool = False


class Transactions:
    """Every transactional producer of the run and the coordinator of their transactional.ids."""

    def __init__(self, cfg: Any, clock: Clock, sims: list[Sim], pids: Any) -> None:
        self.cfg = cfg
        self.clock = clock
        self.sims = sims
        self.pids = pids  # engine/cluster.py PidAllocator: one sequence of producer ids per run
        self.now = 0
        self.metas: dict[str, TxnMeta] = {}
        self.clients: dict[ProducerSession, ClientTxn] = {}
        self.entries: list[dict[str, Any]] = []
        self.markers: dict[tuple[int, int], str] = {}  # (partition, batch index) -> transactional.id
        self.sessions: dict[str, ProducerSession] = {}  # transactional.id -> marker session
        self.held_told: set[tuple[str, int, int]] = set()
        self.unstable_told: set[tuple[str, str]] = set()
        self.interval = cfg.timing.transaction_abort_timed_out_transaction_cleanup_interval_ms
        self.brokers = sorted(sims[0].brokers)
        self.groups: Any = None  # the consumers' Clients, for KIP-447 (set by the run)
        # the coordinator's answer to a stale epoch (§B.7): PRODUCER_FENCED from 2.7; before, the
        # one name INVALID_PRODUCER_EPOCH (47), fatal wherever it came from (profiles.py)
        split = cfg.profile.producer_fenced_split
        self.fence_error = "PRODUCER_FENCED" if split else "INVALID_PRODUCER_EPOCH"
        for sim in sims:
            sim.txn = self

    # -- plumbing ---------------------------------------------------------------------------

    def at(self, t: int, fn: Any, *args: Any) -> None:
        clock = self.clock
        heapq.heappush(clock.q, (t, clock.tick(), self, fn, args))

    def run_to(self, t: int, stop: Any = None) -> None:
        if t > self.clock.now:
            self.clock.run_until(t, stop)
        self.now = self.clock.now

    def step(self, kind: str, actor: str, text: str, partition: int | None = None, **extra: Any) -> None:
        """A coordinator's or a client's step, told by partition 0 (like the consumers'); with
        several partitions `partition_id` names the one it is about, if any."""
        sim = self.sims[0]
        sim.now = self.clock.now
        if partition is not None:
            extra["partition_id"] = partition
        sim.tell(kind, actor, text, **extra)

    def coordinator(self, tid: str) -> int | None:
        brokers = self.sims[0].brokers
        return coordinator_of(tid, self.brokers, lambda b: brokers[b].alive, TXN_STATE_PARTITIONS)

    def client(self, session: ProducerSession) -> ClientTxn:
        ct = self.clients.get(session)
        if ct is None:
            ct = self.clients[session] = ClientTxn()
        return ct

    def _entry(self, session: ProducerSession, action: str) -> dict[str, Any]:
        entry = {"producer": session.id, "action": action, "outcome": "ok", "error": None}
        self.entries.append(entry)
        return entry

    def _fail(self, session: ProducerSession, entry: dict[str, Any], error: str, text: str) -> None:
        entry["outcome"], entry["error"] = "error", error
        self.step("txn_client_error", session.id, text, error=error)

    def _sync(self, ct: ClientTxn) -> None:
        """A batch of the transaction failed: the transaction manager is in ABORTABLE_ERROR (or
        FATAL_ERROR for a fatal error), as Sender.failBatch leaves it."""
        if ct.state != "IN_TRANSACTION":
            return
        for p, idx in ct.batches:
            b = self.sims[p].batches[idx]
            if b.outcome == "failed":
                fatal = b.error == self.fence_error
                ct.state, ct.error = (FATAL if fatal else ABORTABLE), b.error
                return

    def _stuck(self, ct: ClientTxn, session: ProducerSession, entry: dict[str, Any], call: str) -> bool:
        """A call in an error state throws the error it holds (TransactionManager.maybeFailWithError)."""
        self._sync(ct)
        if ct.state == FATAL:
            self._fail(
                session,
                entry,
                ct.error or self.fence_error,
                f"{session.id}.{call} throws {ct.error}: a fatal error earlier; this producer can only "
                "be closed",
            )
            return True
        return False

    def _refused(
        self, ct: ClientTxn, session: ProducerSession, entry: dict[str, Any], call: str, need: str, why: str
    ) -> bool:
        """A call the transaction manager's state does not allow: it throws the error it holds, or
        IllegalStateException."""
        if self._stuck(ct, session, entry, call):
            return True
        if ct.state == need:
            return False
        error = ct.error if ct.state == ABORTABLE and ct.error else "IllegalStateException"
        self._fail(session, entry, error, f"{session.id}.{call} throws {error}: {why}")
        return True

    # -- InitProducerId ---------------------------------------------------------------------

    def init_transactions(self, producer: ProducerProc) -> None:
        session = producer.session
        pc = session.config
        tid = pc.transactional_id
        ct = self.client(session)
        entry = self._entry(session, "init_transactions")
        if ct.state != "UNINITIALIZED":
            self._fail(
                session, entry, "IllegalStateException",
                f"{session.id}.initTransactions() throws IllegalStateException: it already ran",
            )
            return
        limit = self.cfg.timing.transaction_max_timeout_ms
        if pc.transaction_timeout_ms > limit:
            ct.state, ct.error = FATAL, "INVALID_TRANSACTION_TIMEOUT"
            self._fail(
                session, entry, "INVALID_TRANSACTION_TIMEOUT",
                f"InitProducerId: transaction.timeout.ms={pc.transaction_timeout_ms} is above the "
                f"broker's transaction.max.timeout.ms={limit}: INVALID_TRANSACTION_TIMEOUT",
            )
            return
        deadline = self.clock.now + MAX_BLOCK_MS
        told = False
        while True:
            if self.coordinator(tid) is None:
                self.run_to(min(deadline, self.clock.now + MARKER_RETRY_MS))
                if self.clock.now >= deadline:
                    self._fail(
                        session, entry, "TimeoutException",
                        f"{session.id}.initTransactions() times out after max.block.ms={MAX_BLOCK_MS}: "
                        "no broker can coordinate its transactional.id",
                    )
                    return
                continue
            self.run_to(self.clock.now + HOP_MS)  # FindCoordinator done; InitProducerId arrives
            error = self._handle_init(tid, pc.transaction_timeout_ms, quiet=told)
            self.run_to(self.clock.now + HOP_MS)  # the answer comes back
            if error != "CONCURRENT_TRANSACTIONS":
                break
            told = True
            if self.clock.now >= deadline:
                self._fail(session, entry, "TimeoutException",
                           f"{session.id}.initTransactions() times out after max.block.ms={MAX_BLOCK_MS}")
                return
            self.run_to(self.clock.now + pc.retry_backoff_ms)
        meta = self.metas[tid]
        session.pid, session.epoch = meta.pid, meta.epoch
        ct.state, ct.error = "READY", None

    def _handle_init(self, tid: str, timeout_ms: int, *, quiet: bool) -> str | None:
        meta = self.metas.get(tid)
        coord = self.coordinator(tid)
        where = f"B{coord}, leader of __transaction_state partition {txn_partition_for(tid)}"
        if meta is None:
            meta = self.metas[tid] = TxnMeta(tid, self.pids.allocate(), timeout_ms=timeout_ms)
        if meta.state in PENDING:
            if not quiet:
                self.step(
                    "txn_concurrent_transactions",
                    COORDINATOR,
                    f"InitProducerId({tid!r}): its transaction is in {meta.state}, markers still being "
                    f"written: CONCURRENT_TRANSACTIONS; the client backs off and asks again",
                    error="CONCURRENT_TRANSACTIONS",
                )
            return "CONCURRENT_TRANSACTIONS"
        if meta.state == "Ongoing":
            old = meta.epoch
            self._fence_and_abort(
                meta, f"InitProducerId({tid!r}) from a new instance finds the transaction of {tid!r} Ongoing"
            )
            self.step(
                "txn_concurrent_transactions",
                COORDINATOR,
                f"The coordinator answers the new instance CONCURRENT_TRANSACTIONS (the fence epoch "
                f"{old + 1} is never handed out); it backs off and asks again until the abort is complete",
                error="CONCURRENT_TRANSACTIONS",
            )
            return "CONCURRENT_TRANSACTIONS"
        old = meta.epoch
        meta.epoch += 1
        meta.bumps.setdefault(old, NEWER_INSTANCE)
        meta.state = "Empty"
        meta.timeout_ms = timeout_ms
        meta.partitions = set()
        if old < 0:
            text = (
                f"The transaction coordinator ({where}) sees transactional.id {tid!r} for the first "
                f"time: producer id {meta.pid}, epoch {meta.epoch}, state Empty"
            )
        else:
            text = (
                f"The transaction coordinator ({where}) gives {tid!r} its producer id {meta.pid} again "
                f"with epoch {old} -> {meta.epoch}: any instance still holding an older epoch is fenced"
            )
        self.step("txn_init_producer_id", COORDINATOR, text, producer_id=meta.pid, epoch=meta.epoch)
        return None

    def _fence_and_abort(self, meta: TxnMeta, why: str, kind: str = "txn_fence_epoch") -> None:
        """PrepareEpochFence then PrepareAbort at the bumped epoch (TMD 257-267, TC 172-189)."""
        old = meta.epoch
        meta.epoch += 1
        meta.bumps[old] = TIMED_OUT if kind == "txn_timeout_abort" else NEWER_INSTANCE
        meta.state = "PrepareEpochFence"
        parts = ", ".join(f"P{p}" for p in sorted(meta.partitions)) or "no partition"
        self.step(
            kind,
            COORDINATOR,
            f"{why}: the coordinator fences it, epoch {old} -> {meta.epoch} (PrepareEpochFence), then "
            f"PrepareAbort; ABORT markers at epoch {meta.epoch} go to {parts}",
            epoch=meta.epoch,
        )
        self._prepare(meta, "ABORT")

    # -- the transaction ---------------------------------------------------------------------

    def begin_transaction(self, producer: ProducerProc) -> None:
        session = producer.session
        ct = self.client(session)
        entry = self._entry(session, "begin_transaction")
        if self._refused(ct, session, entry, "beginTransaction()", "READY", f"its state is {ct.state}"):
            return
        ct.state = "IN_TRANSACTION"
        ct.partitions, ct.batches, ct.has_offsets = set(), [], False
        self.step(
            "txn_begin",
            session.id,
            f"{session.id}.beginTransaction(): purely local, nothing is sent; the coordinator's "
            "transaction.timeout.ms starts only with the first partition added",
        )

    def before_send(self, session: ProducerSession, p: int) -> str | None:
        """send() in a transaction: AddPartitionsToTxn first for a partition new to it. Returns the
        error the send fails with, or None."""
        ct = self.client(session)
        self._sync(ct)
        if ct.state in (FATAL, ABORTABLE):
            return ct.error
        if ct.state != "IN_TRANSACTION":  # pragma: no cover - the scenario refuses it up front
            return "IllegalStateException"
        if p in ct.partitions:
            return None
        error = self._add(session, ct, {p}, "AddPartitionsToTxn", f"P{p}")
        if error is None:
            ct.partitions.add(p)
        return error

    def _add(
        self, session: ProducerSession, ct: ClientTxn, parts: set[int], api: str, what: str
    ) -> str | None:
        tid = session.config.transactional_id
        deadline = self.clock.now + session.config.delivery_timeout_ms
        told = False
        while True:
            self.run_to(self.clock.now + HOP_MS)
            error = self._handle_add(tid, session, parts, api, what, quiet=told)
            self.run_to(self.clock.now + HOP_MS)
            if error != "CONCURRENT_TRANSACTIONS" or self.clock.now >= deadline:
                break
            told = True
            self.run_to(self.clock.now + session.config.retry_backoff_ms)
        if error is not None:
            fatal = error == self.fence_error
            ct.state, ct.error = (FATAL if fatal else ABORTABLE), error
        return error

    def _fenced(self, meta: TxnMeta | None, session: ProducerSession, api: str) -> bool:
        if meta is not None and meta.pid == session.pid and meta.epoch == session.epoch:
            return False
        have = f"epoch {meta.epoch}" if meta is not None else "no such transactional.id"
        cause = meta.bumps.get(session.epoch, NEWER_INSTANCE) if meta is not None else NEWER_INSTANCE
        self.step(
            "txn_producer_fenced",
            COORDINATOR,
            f"{api} from {session.id} with producer id {session.pid}, epoch {session.epoch}; the coordinator "
            f"has {have}: {self.fence_error}, fatal -- {cause}",
            error=self.fence_error,
        )
        return True

    def _handle_add(
        self, tid: str, session: ProducerSession, parts: set[int], api: str, what: str, *, quiet: bool
    ) -> str | None:
        meta = self.metas.get(tid)
        if self._fenced(meta, session, api):
            return self.fence_error
        assert meta is not None
        if meta.state in PENDING:
            if not quiet:
                self.step(
                    "txn_concurrent_transactions",
                    COORDINATOR,
                    f"{api}({what}) from {session.id}: the previous transaction is in {meta.state}, its "
                    "markers not all written: CONCURRENT_TRANSACTIONS; the client retries",
                    error="CONCURRENT_TRANSACTIONS",
                )
            return "CONCURRENT_TRANSACTIONS"
        started = meta.state != "Ongoing"
        if started:
            meta.state = "Ongoing"
            meta.start_ms = self.clock.now
            meta.partitions = set()
            meta.offsets, meta.offsets_member = {}, {}
            self._schedule_timeout(meta)
        meta.partitions |= parts
        if started:
            since = (
                f"; {meta.state} since now: transaction.timeout.ms={meta.timeout_ms} counts from here"
            )
        else:
            since = ""
        self.step(
            "txn_add_partitions",
            COORDINATOR,
            f"{api}({what}) from {session.id} (producer id {meta.pid}, epoch {meta.epoch}): the coordinator "
            f"adds it to the transaction of {tid!r}{since}",
        )
        return None

    def sent(self, session: ProducerSession, p: int, idx: int) -> None:
        self.client(session).batches.append((p, idx))
        self.sims[p].has_txn = True

    def end_transaction(self, producer: ProducerProc, commit: bool) -> None:
        session = producer.session
        ct = self.client(session)
        action = "commit_transaction" if commit else "abort_transaction"
        call = "commitTransaction()" if commit else "abortTransaction()"
        entry = self._entry(session, action)
        if self._cannot_end(ct, session, entry, call, commit):
            return
        if ct.state not in ("IN_TRANSACTION", ABORTABLE):
            self._fail(session, entry, "IllegalStateException",
                       f"{session.id}.{call} throws IllegalStateException: no transaction is open")
            return
        # EndTxn waits for every batch of the transaction (TransactionManager 806)
        sims = self.sims

        def flushed() -> bool:
            return all(sims[p].batches[i].outcome is not None for p, i in ct.batches)

        if not flushed():
            deadline = max(sims[p].batches[i].deadline for p, i in ct.batches) + 1
            self.run_to(deadline, stop=flushed)
        if self._cannot_end(ct, session, entry, call, commit):
            return
        kind = "COMMIT" if commit else "ABORT"
        done = "committed" if commit else "aborted"
        if not ct.partitions and not ct.has_offsets:
            ct.state, ct.error = "READY", None
            entry["outcome"] = done
            self.step("txn_end_local", session.id,
                      f"{session.id}.{call}: nothing was added to the transaction, so no EndTxn is sent")
            return
        tid = session.config.transactional_id
        told = False
        ct.state = "COMMITTING_TRANSACTION" if commit else "ABORTING_TRANSACTION"  # EndTxn in flight
        while True:
            self.run_to(self.clock.now + HOP_MS)
            error = self._handle_end(tid, session, kind, quiet=told)
            self.run_to(self.clock.now + HOP_MS)
            if error != "CONCURRENT_TRANSACTIONS":
                break
            told = True
            self.run_to(self.clock.now + session.config.retry_backoff_ms)
        if error is not None:
            ct.state, ct.error = FATAL, error
            entry["outcome"], entry["error"] = "error", error
            self.step(
                "txn_client_error",
                session.id,
                f"{session.id}.{call} throws ProducerFencedException ({error}): fatal, the producer must be "
                "closed; the coordinator has aborted its transaction, or is aborting it, at the fence",
                error=error,
            )
            return
        ct.state, ct.error = "READY", None
        ct.partitions, ct.batches, ct.has_offsets = set(), [], False
        entry["outcome"] = done

    def _cannot_end(
        self, ct: ClientTxn, session: ProducerSession, entry: dict[str, Any], call: str, commit: bool
    ) -> bool:
        """A fatal error fails both ends; an abortable one fails a commit only (TransactionManager
        .beginCommit / beginAbort)."""
        if self._stuck(ct, session, entry, call):
            return True
        if commit and ct.state == ABORTABLE:
            self._fail(
                session, entry, ct.error or "KafkaException",
                f"{session.id}.{call} throws {ct.error}: a send of this transaction failed, an abortable "
                "error; the application must call abortTransaction()",
            )
            return True
        return False

    def _handle_end(self, tid: str, session: ProducerSession, kind: str, *, quiet: bool) -> str | None:
        meta = self.metas.get(tid)
        if self._fenced(meta, session, f"EndTxn({kind})"):
            return self.fence_error
        assert meta is not None
        if meta.state in PENDING:
            if not quiet:
                self.step("txn_concurrent_transactions", COORDINATOR,
                          f"EndTxn({kind}) while {meta.state}: CONCURRENT_TRANSACTIONS",
                          error="CONCURRENT_TRANSACTIONS")
            return "CONCURRENT_TRANSACTIONS"
        if meta.state != "Ongoing":
            return "INVALID_TXN_STATE"
        self._prepare(meta, kind, told_by=session.id)
        return None

    def _prepare(self, meta: TxnMeta, kind: str, told_by: str | None = None) -> None:
        """Prepare{Commit,Abort} is durable: markers go to every partition of the transaction."""
        meta.state = "PrepareCommit" if kind == "COMMIT" else "PrepareAbort"
        meta.result = kind
        meta.marker_epoch = meta.epoch
        parts = sorted(meta.partitions)
        if told_by is not None:
            where = ", ".join(f"P{p}" for p in parts)
            named = ", ".join(repr(g) for g in meta.offsets)
            groups = f" and the offsets of group {named}" if meta.offsets else ""
            self.step(
                "txn_prepare",
                COORDINATOR,
                f"EndTxn({kind}) from {told_by}: the coordinator writes {meta.state} to __transaction_state "
                f"and answers at once -- the call returns now, before any marker exists; {kind} markers "
                f"(epoch {meta.epoch}) go next to {where or 'no partition'}{groups}",
                transaction_state=meta.state,
            )
        meta.markers = {}
        for p in parts:
            self._write_marker(meta, p, kind)
        if not meta.markers:
            self._complete(meta)

    def _marker_session(self, meta: TxnMeta) -> ProducerSession:
        s = self.sessions.get(meta.tid)
        if s is None or s.pid != meta.pid:
            s = ProducerSession(self.cfg.producers[0], meta.pid, 0)
            s.id = COORDINATOR
            self.sessions[meta.tid] = s
        return s

    def _write_marker(self, meta: TxnMeta, p: int, kind: str) -> None:
        sim = self.sims[p]
        sim.now = self.clock.now
        idx = len(sim.batches)
        b = Batch(idx, [kind], -1, "all", False, self._marker_session(meta))
        b.control = kind
        b.pepoch = meta.epoch
        b.timestamp = self.clock.now
        b.nbytes = CONTROL_BATCH_BYTES if sim.part2 else None
        b.first_send = self.clock.now
        b.deadline = self.clock.now
        sim.batches.append(b)
        sim.pending_batches += 1
        sim.has_txn = True
        meta.markers[p] = idx
        self.markers[(p, idx)] = meta.tid
        self._send_marker(p, idx)

    def _send_marker(self, p: int, idx: int) -> None:
        sim = self.sims[p]
        b = sim.batches[idx]
        if b.outcome is not None:
            return
        sim.now = self.clock.now
        leader = sim.ctl.leader
        if leader == NO_LEADER or not sim.brokers[leader].alive:
            b.state = "waiting_for_leader"
            self.at(self.clock.now + MARKER_RETRY_MS, self._send_marker, p, idx)
            return
        b.attempts += 1
        b.attempt_id += 1
        b.state = "awaiting_response"
        b.target = leader
        sim.send(
            COORDINATOR,
            leader,
            sim._leader_on_produce,
            (leader, idx, b.attempt_id),
            on_fail=(self.marker_answer, p, idx, b.attempt_id, "NETWORK_EXCEPTION", None),
        )
        self.at(self.clock.now + MARKER_TIMEOUT_MS, self.marker_answer, p, idx, b.attempt_id,
                "REQUEST_TIMED_OUT", None)

    def marker_answer(self, p: int, idx: int, attempt_id: int, error: str | None, offsets: Any) -> None:
        """A leader's answer to WriteTxnMarkers (the leader's _respond routes it here)."""
        sim = self.sims[p]
        b = sim.batches[idx]
        if b.outcome is not None or attempt_id != b.attempt_id:
            return
        if error is not None:  # the marker channel retries until the marker is written
            b.state = "backoff"
            delay = min(MARKER_RETRY_MS * 2 ** min(b.retries_used, 10), MARKER_RETRY_MAX_MS)
            b.retries_used += 1
            self.at(self.clock.now + delay, self._send_marker, p, idx)
            return
        b.outcome, b.offsets, b.done_ms, b.state = "acked", offsets, self.clock.now, "acked"
        sim.pending_batches -= 1
        meta = self.metas[self.markers[(p, idx)]]
        meta.markers.pop(p, None)
        sim.now = self.clock.now
        lso = last_stable_offset(sim)
        leader = leader_of(sim)
        hw = leader.hw if leader is not None else lso
        held = "" if lso == hw else f" (a later transaction still holds it below the HW {hw})"
        sim.tell(
            "leader_advance_lso",
            f"broker-{b.target}",
            f"The {b.control} marker at offset {offsets[0]} is below the HW: the last stable offset is "
            f"{lso}{held}; read_committed consumers can read every offset below it",
            broker=b.target,
            lso=lso,
        )
        if not meta.markers:
            self._complete(meta)

    def _complete(self, meta: TxnMeta) -> None:
        kind = meta.result
        meta.state = "CompleteCommit" if kind == "COMMIT" else "CompleteAbort"
        applied = ""
        if meta.offsets:
            groups = self.groups
            for gid, offs in meta.offsets.items():
                if kind == "COMMIT" and groups is not None:
                    groups.apply_txn_offsets(gid, offs, self.clock.now)
            verb = "become the committed offsets" if kind == "COMMIT" else "are discarded"
            applied = f"; the pending offsets of group {', '.join(repr(g) for g in meta.offsets)} {verb}"
        self.step(
            "txn_complete",
            COORDINATOR,
            f"Every {kind} marker of {meta.tid!r} is written: {meta.state} in __transaction_state{applied}",
            transaction_state=meta.state,
        )
        meta.offsets, meta.offsets_member = {}, {}
        meta.result = None
        meta.partitions = set()

    # -- the timeout sweep -------------------------------------------------------------------

    def _schedule_timeout(self, meta: TxnMeta) -> None:
        """The first sweep (every cleanup interval from the coordinator's start) that finds the
        transaction expired: start + timeout < now (TransactionStateManager 122-141)."""
        every = self.interval
        t = ((meta.start_ms + meta.timeout_ms) // every + 1) * every
        self.at(t, self._sweep, meta.tid, meta.start_ms, meta.epoch)

    def _sweep(self, tid: str, start_ms: int, epoch: int) -> None:
        meta = self.metas[tid]
        if meta.state != "Ongoing" or meta.start_ms != start_ms or meta.epoch != epoch:
            return
        self.now = self.clock.now
        self._fence_and_abort(
            meta,
            f"The coordinator's sweep (every {self.interval} ms) finds the transaction of {tid!r} open since "
            f"{start_ms} ms, longer than transaction.timeout.ms={meta.timeout_ms}",
            kind="txn_timeout_abort",
        )

    # -- KIP-447 -----------------------------------------------------------------------------

    def send_offsets(self, producer: ProducerProc, consumer: str, offsets: dict[str, int] | None) -> None:
        session = producer.session
        ct = self.client(session)
        entry = self._entry(session, "send_offsets_to_transaction")
        call = "sendOffsetsToTransaction()"
        if self._refused(ct, session, entry, call, "IN_TRANSACTION", "no transaction is open"):
            return
        groups = self.groups
        c = groups.consumers[consumer]
        gid = c.group
        chosen = {int(k): v for k, v in offsets.items()} if offsets is not None else dict(c.position)
        offsets_p = offsets_partition_for(gid, groups.offsets_partitions)
        if not ct.has_offsets:  # AddOffsetsToTxn: the group's __consumer_offsets partition joins
            error = self._add(session, ct, set(), "AddOffsetsToTxn",
                              f"group {gid!r}, __consumer_offsets partition {offsets_p}")
            if error is not None:
                self._fail(session, entry, error,
                           f"{session.id}.sendOffsetsToTransaction() fails: {error}")
                return
            ct.has_offsets = True
        tid = session.config.transactional_id
        meta = self.metas[tid]
        # TxnOffsetCommit to the group coordinator, with consumer.groupMetadata()
        self.run_to(self.clock.now + HOP_MS)
        member, generation = c.group_metadata  # the last completed join's, not the reset state
        error = None
        if self._fenced(meta, session, "TxnOffsetCommit"):
            error = self.fence_error
        else:
            # groupMetadata() carries the group.instance.id too: a static member is checked by it
            error = groups.check_txn_commit(gid, member, generation, c.spec.group_instance_id)
        self.run_to(self.clock.now + HOP_MS)
        said = ", ".join(f"P{p} {o}" for p, o in sorted(chosen.items())) or "nothing"
        if error is not None:
            fatal = error == self.fence_error
            ct.state, ct.error = (FATAL if fatal else ABORTABLE), error
            kind = "fatal" if fatal else "abortable (CommitFailedException): the application must abort"
            self._fail(
                session, entry, error,
                f"TxnOffsetCommit of {said} for group {gid!r} with member {member}, generation {generation}: "
                f"{error}, {kind}",
            )
            return
        meta.offsets.setdefault(gid, {}).update(chosen)
        meta.offsets_member[gid] = (member, generation)
        self.step(
            "txn_send_offsets",
            COORDINATOR,
            f"TxnOffsetCommit of {said} for group {gid!r} (member {member}, generation {generation}) is "
            f"accepted: the offsets are pending, invisible until {tid!r} commits",
        )

    def unstable(self, group: str, partitions: list[int]) -> list[int]:
        """The partitions among `partitions` for which a transaction holds pending offsets of `group`."""
        return sorted(
            {
                p
                for m in self.metas.values()
                if m.state == "Ongoing" or m.state in PENDING
                for p in m.offsets.get(group, {})
                if p in partitions
            }
        )

    def offsets_stable(self, consumer: str, group: str, partitions: list[int]) -> bool:
        """OffsetFetch with requireStable (the Java consumer always asks so, CCo 1442): while a
        transaction holds pending offsets of the group for one of these partitions, the group
        coordinator answers UNSTABLE_OFFSET_COMMIT (OMM 739, 764-767). Simplified: the consumer
        asks again at its next poll, not within this one."""
        pending = self.unstable(group, partitions)
        key = (consumer, group)
        if not pending:
            self.unstable_told.discard(key)
            return True
        if key in self.unstable_told:
            return False
        self.unstable_told.add(key)
        self.step(
            "consumer_unstable_offsets",
            consumer,
            f"{consumer} fetches the committed offsets of group {group!r}: UNSTABLE_OFFSET_COMMIT, a "
            f"transaction holds pending offsets for {', '.join(f'P{p}' for p in pending)}; it waits for "
            "that transaction to end and asks again",
            consumer=consumer,
            error="UNSTABLE_OFFSET_COMMIT",
        )
        return False

    # -- results -----------------------------------------------------------------------------

    def fenced(self, session: ProducerSession) -> bool:
        tid = session.config.transactional_id
        meta = self.metas.get(tid) if tid is not None else None
        if meta is None or session.pid < 0:
            return False
        return meta.pid != session.pid or meta.epoch > session.epoch

    def producer_result(self, session: ProducerSession, out: dict[str, Any]) -> None:
        tid = session.config.transactional_id
        meta = self.metas.get(tid) if tid is not None else None
        if meta is None:
            return
        out["transaction_state"] = meta.state
        out["fenced"] = self.fenced(session)

    def snapshot(self) -> dict[str, Any]:
        """A view's `transactions` (per transactional.id, the coordinator's) and `txn_producers`
        (per producer process running now, its transaction manager's)."""
        latest = {s.id: (s, ct) for s, ct in self.clients.items()}
        producers = {
            pid: {
                "transactional_id": s.config.transactional_id,
                "producer_id": s.pid,
                "epoch": s.epoch if s.pid >= 0 else -1,
                "state": ct.state,
                "error": ct.error,
                "partitions": sorted(ct.partitions),
                "fenced": self.fenced(s),
            }
            for pid, (s, ct) in sorted(latest.items())
        }
        return {"transactions": self._coordinator_view(), "txn_producers": producers}

    def _coordinator_view(self) -> dict[str, Any]:
        return {
            tid: {
                "producer_id": m.pid,
                "epoch": m.epoch,
                "state": m.state,
                "partitions": sorted(m.partitions),
                "start_ms": m.start_ms if m.state == "Ongoing" else None,
                "coordinator": self.coordinator(tid),
                "txn_partition": txn_partition_for(tid),
            }
            for tid, m in sorted(self.metas.items())
        }

    def tell_held(self, consumer: str, p: int, lso: int, hw: int) -> None:
        """A read_committed fetch stopped at the LSO with more below the HW: said once per LSO."""
        key = (consumer, p, lso)
        if key in self.held_told:
            return
        self.held_told.add(key)
        sim = self.sims[p]
        leader = leader_of(sim)
        first = log_view(sim, leader).open_since if leader is not None else None
        why = f"a transaction open since offset {first}" if first is not None else "an open transaction"
        self.step(
            "consumer_held_at_lso",
            consumer,
            f"{consumer} (read_committed) stops at P{p}'s last stable offset {lso}: {why} holds back "
            f"everything after it, other producers' records too, although the HW is {hw}",
            partition=p,
            consumer=consumer,
        )
