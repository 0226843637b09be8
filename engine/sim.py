"""Theory of operation: a deterministic discrete-event simulation of one Kafka partition.

This module holds `Sim`, one partition's simulation: its state (engine/state.py), the clock hooks,
the network between the parties, and the steps it emits. Its transitions live in engine/actors/,
one module per actor (producer, leader, follower, the log's segments, controller, broker lifecycle,
faults, observation), as mixins; engine/cluster.py runs every partition on one engine/clock.py.

The cluster is a KRaft controller, up to nine brokers, and one producer client. Nothing here
reads a clock, a file or global randomness: one `Sim` owns simulated time (integer ms), an
event heap ordered by (time, sequence number), and one `random.Random` seeded from the
scenario, used only for the brokers' heartbeat phases (the one ordering real Kafka leaves to
chance that matters here: which of several dead brokers is fenced last).

Every message between parties (producer, brokers, controller) takes NETWORK_DELAY_MS and is
checked at both ends: a cut link loses it, a crashed or restarted receiver refuses it.
Each transition follows ../shared/reference/kafka-semantics.md; the section is cited where the
rule is implemented, and behaviour that changed across versions asks the `Profile`.

State is split the way Kafka splits it:
- `Broker` holds what one broker process knows: its log (page cache + flushed prefix), its HW,
  its leader-epoch cache, and its local view of the partition (role, committed ISR, maximal ISR
  while an AlterPartition is in flight, follower fetch states when leading, the purgatories).
- `Controller` holds the metadata log's view: registrations, fencing, leader, epochs, ISR, ELR.
  Brokers learn it only through messages, so a broker cut off from the controller acts on
  stale metadata, exactly like a zombie leader in real Kafka.
- The "ghost" truth (which records were acknowledged) lives in the producer's batches and is
  compared with the logs only when the result is built, so loss is detected, not guessed.

Transitions are named actor + verb (`leader_append`, `follower_fetch`,
`controller_elect_leader`, ...) and every observable one emits a step (engine/steps.py).
"""

from __future__ import annotations

import heapq
import random
from typing import TYPE_CHECKING, Any

from .actors.broker import BrokerRole
from .actors.cleaner import CleanerRole
from .actors.controller import ControllerRole
from .actors.faults import FaultsRole
from .actors.follower import FollowerRole
from .actors.leader import LeaderRole
from .actors.log import LogRole
from .actors.observe import ObserveRole
from .actors.producer import ProducerRole
from .budget import BudgetExceeded, snapshot_bytes, step_bytes
from .clock import Clock, RunUse
from .scenario import Config, Limits
from .segments import RetentionSchedule, SegmentedLog
from .state import (
    BROKER_LEVEL_KINDS,
    NETWORK_DELAY_MS,
    NO_LEADER,
    REPLICA_SOCKET_TIMEOUT_MS,
    Batch,
    Broker,
    Controller,
    FollowerState,
    ProducerSession,
    _fmt_offsets,
    _fmt_records,
    _fmt_set,
)
from .steps import step_kind

if TYPE_CHECKING:
    from .consumers import Clients


class Sim(
    ProducerRole,
    LeaderRole,
    LogRole,
    CleanerRole,
    FollowerRole,
    ControllerRole,
    BrokerRole,
    FaultsRole,
    ObserveRole,
):
    def __init__(
        self,
        cfg: Config,
        limits: Limits,
        *,
        record: bool,
        at_step: int | None,
        check_invariants: bool,
        used: RunUse | None = None,
        clock: Clock | None = None,
        partition: int = 0,
        shares_clock: bool = False,
    ):
        self.cfg = cfg
        # one budget and one clock per run, shared by every partition's simulation
        self.used = used if used is not None else RunUse()
        self.clock = clock if clock is not None else Clock(limits)
        self.partition = partition
        # partition 0 alone narrates what happens to brokers (the others apply it silently)
        self.narrates_brokers = partition == 0
        self.budget = self.clock.budget
        self.prof = cfg.profile
        self.limits = limits
        self.record = record
        self.at_step = at_step
        self.check = check_invariants
        self.now = 0
        self.nsteps = 0  # this partition's own steps
        self.last_global_step = 0  # the run's step number of this partition's latest step
        self.action: int | None = None  # index of the contract action now running (steps carry it)
        self.steps: list[dict[str, Any]] = []
        self.view: dict[str, Any] | None = None
        self.violations: list[str] = []
        self.views: list[dict[str, Any]] | None = None  # every step's snapshot, when asked (all_views)
        self.view_steps: list[int] = []  # the run's step number after which each of `views` holds
        # other partitions share the clock: the state after step k is each partition's latest
        # snapshot at or before k, so an at_step view is refreshed at each own step up to k
        self.shares_clock = shares_clock
        self.stale = False  # changed by a step another partition told; view not yet taken again
        self.retention_schedule = RetentionSchedule(cfg.timing.log_retention_check_interval_ms)
        self.retention_at: int | None = None  # when the queued retention check runs
        # the log cleaner thread of a compacted topic (engine/actors/cleaner.py): its queued check,
        # its last check, and each broker's active segment at its last check (a roll is news)
        self.cleaner_at: int | None = None
        self.cleaner_last: int | None = None
        self.cleaner_seen: dict[int, int] = {}
        self.cleaner_key: tuple[Any, ...] | None = None  # the segments the queued check was worked out for
        self.part2 = False  # the scenario uses the contract's part 2 (consumers, log start offset)
        self.clients: Clients | None = None  # partition 0 holds the consumers (engine/consumers.py)
        self.rng = random.Random(cfg.seed)
        self.replicas = list(cfg.replicas)
        self.brokers = {bid: Broker(bid, rack) for bid, rack in cfg.brokers}
        for bid, delay in cfg.fetch_delays.items():
            self.brokers[bid].fetch_delay_ms = delay
        self.ctl = Controller(list(self.brokers), self.replicas, cfg.unclean, cfg.min_isr)
        self.flush_messages = cfg.flush_messages
        self.cut: set[frozenset[Any]] = set()
        self.batches: list[Batch] = []
        # batches not yet finished that hold back the ones behind them (backoff, no leader, held)
        self.unsendable: set[int] = set()
        self.releasing = False  # _release_held is running (a send inside it must not start another)
        # each idempotent producer session's [epoch, next sequence] in this partition: a session
        # bumps its epoch for all partitions, and a partition starts its sequences again from 0
        # under the new epoch once none of its batches of the old epoch is unanswered
        self.sequences: dict[ProducerSession, list[int]] = {}
        self._own_session: ProducerSession | None = None  # for a Sim driven without the cluster
        self.senders: set[ProducerSession] = set()  # the producer sessions that have sent batches here
        self.pending_batches = 0  # batches without an outcome yet (kept so settle is O(brokers))
        # the ledger as it grows, so a snapshot can say what was sent, acknowledged or failed by then
        self.sent_records: list[str] = []
        self.acked_records: list[str] = []  # in the order the producer received the acknowledgements
        self.failed_records: list[str] = []
        self.producer_leader = self.replicas[0]
        self.unsafe_history = (
            False  # an unclean election or lost page cache happened (logs may legitimately differ)
        )
        self.hw_seen: dict[int, tuple[int, int]] = {}
        # the controller's metadata log (__cluster_metadata); ZooKeeper-era profiles have none
        self.mlog: list[dict[str, Any]] = []
        self.kraft = self.prof.session_guards_reregistration or self.prof.alter_partition
        self._mlog_leader_epoch = 0
        self.quiet = False
        # transactions (engine/transactions.py): the run's coordinator, whether this partition
        # has seen a transactional batch or marker, and the last LSO computed per broker
        self.txn: Any = None
        self.has_txn = False
        self.txn_cache: dict[int, Any] = {}

    # ---------------------------------------------------------------------------------------
    # event loop

    def at(self, t: int, fn: Any, *args: Any) -> None:
        clock = self.clock
        heapq.heappush(clock.q, (t, clock.tick(), self, fn, args))

    def run_until(self, t_end: int, stop: Any = None) -> None:
        self.clock.run_until(t_end, stop)
        self.now = self.clock.now

    @property
    def events(self) -> int:
        return self.clock.events

    def _too_many_steps(self) -> BudgetExceeded:
        return BudgetExceeded(
            "steps", f"the scenario produced more than {self.limits.max_steps} steps; shorten it"
        )

    def count_step(self) -> None:
        """A step nobody will read (no recording, no view, no checks): count it, skip the prose."""
        self.nsteps += 1
        clock = self.clock
        clock.steps += 1
        if clock.steps > self.limits.max_steps:
            raise self._too_many_steps()

    def tell(self, kind: str, actor: str, text: str, **extra: Any) -> None:
        """A step whose prose costs something to build: quiet runs only count it."""
        if self.quiet:
            self.count_step()
        else:
            self.step(kind, actor, text, **extra)

    def step(self, kind: str, actor: str, text: str, **extra: Any) -> None:
        if not self.narrates_brokers and kind in BROKER_LEVEL_KINDS and "records" not in extra:
            # the same broker event, already told by partition 0: what it changes here shows in
            # this partition's view from that step on, once the event that caused it has finished
            if (self.views is not None or self.at_step is not None) and not self.stale:
                self.stale = True
                self.clock.stale.append(self)
            return
        self.nsteps += 1
        clock = self.clock
        clock.steps += 1
        self.last_global_step = clock.steps
        if clock.steps > self.limits.max_steps:
            raise self._too_many_steps()
        if self.record:
            entry = {
                "i": clock.steps,
                "t_ms": self.now,
                "actor": actor,
                "kind": kind,
                "text": text,
                "code": step_kind(kind, self.kraft).code,
                "action": self.action,
            }
            if extra:
                entry.update(extra)
            self.steps.append(entry)
            self._grow(step_bytes(text, extra.get("records")))
        if self.check:
            self._check_invariants()
        if self.at_step is not None and (
            clock.steps == self.at_step or (self.shares_clock and clock.steps < self.at_step)
        ):
            self.view = self.snapshot()
        if self.views is not None:
            self._view_after_step()

    def refresh_view(self) -> None:
        """Take this partition's view again, under the run's latest step number (see step())."""
        self.stale = False
        if self.views is not None:
            if self.view_steps[-1] == self.clock.steps:
                self.views[-1] = self.snapshot()
            else:
                self._view_after_step()
        elif self.at_step is not None and self.clock.steps <= self.at_step:
            self.view = self.snapshot()

    def _view_after_step(self) -> None:
        """Keep this partition's state as it is after the run's step number `clock.steps`."""
        assert self.views is not None
        self.views.append(self.snapshot())
        self.view_steps.append(self.clock.steps)
        self._grow(snapshot_bytes(self.views[-1]))

    def _grow(self, nbytes: int) -> None:
        """Count the estimated size of what the result will hold; refuse past the run's budget."""
        self.used.result_bytes += nbytes
        if self.used.result_bytes > self.budget.max_result_bytes:
            raise BudgetExceeded(
                "result_bytes",
                f"the result would be larger than {self.budget.max_result_bytes // (1024 * 1024)} MB "
                "(steps and per-step states of every record on every replica); ask without steps, "
                "or with fewer records, replicas or actions",
            )

    # ---------------------------------------------------------------------------------------
    # network

    def linked(self, a: Any, b: Any) -> bool:
        return not self.cut or frozenset((a, b)) not in self.cut

    def send(
        self,
        src: Any,
        dst: Any,
        fn: Any,
        args: tuple[Any, ...],
        on_fail: tuple[Any, ...] | None = None,
        on_lost: tuple[Any, ...] | None = None,
        extra_ms: int = 0,
    ) -> None:
        """Deliver fn(*args) at dst after one hop (plus extra_ms for a slow sender).

        on_fail runs if dst refuses the connection (it is down); on_lost runs
        REPLICA_SOCKET_TIMEOUT_MS later if a cut link swallows the message. This is the engine's
        hottest path, hence the inlined heap push."""
        if self.cut and frozenset((src, dst)) in self.cut:
            if on_lost is not None:
                self.at(self.now + REPLICA_SOCKET_TIMEOUT_MS, *on_lost)
            return
        inc = None
        if dst.__class__ is int:
            b = self.brokers[dst]
            if b.status != "running":
                if on_fail is not None:
                    self.at(self.now + NETWORK_DELAY_MS, *on_fail)
                return
            inc = b.inc
        clock = self.clock
        heapq.heappush(
            clock.q,
            (
                self.now + NETWORK_DELAY_MS + extra_ms,
                clock.tick(),
                self,
                self._deliver,
                (src, dst, inc, fn, args, on_fail, on_lost, self.now),
            ),
        )

    def moved_args(self, fn: Any, args: tuple[Any, ...], delta: int) -> tuple[Any, ...]:
        """An event's arguments once it moves `delta` ms later: a message's send time moves with it."""
        if fn.__func__ is _DELIVER:
            return (*args[:7], args[7] + delta)
        return args

    def _deliver(
        self,
        src: Any,
        dst: Any,
        inc: int | None,
        fn: Any,
        args: tuple[Any, ...],
        on_fail: tuple[Any, ...] | None,
        on_lost: tuple[Any, ...] | None,
        sent_ms: int,  # read only by snapshot(), which lists the messages in flight
    ) -> None:
        if self.cut and frozenset((src, dst)) in self.cut:
            if on_lost is not None:
                self.at(self.now + REPLICA_SOCKET_TIMEOUT_MS, *on_lost)
            return
        if inc is not None:
            b = self.brokers[dst]
            if b.inc != inc or b.status != "running":
                if on_fail is not None:
                    on_fail[0](*on_fail[1:])
                return
        fn(*args)

    # ---------------------------------------------------------------------------------------
    # configuration helpers

    def eff_min(self) -> int:
        m = self.ctl.min_isr
        if self.prof.effective_min_isr_cap:
            return min(m, len(self.replicas))  # Partition.effectiveMinIsr (P 389-391), 3.7+
        return m

    def eligible(self, bid: int) -> bool:
        """KRaft ISR eligibility (P 1068-1101): not fenced, not in controlled shutdown."""
        if not self.prof.fenced_not_eligible:
            return True
        r = self.ctl.reg[bid]
        return r.registered and not r.fenced and not r.shutting

    def caught_up(self, leader: Broker, st: FollowerState) -> bool:
        """Replica.isCaughtUp (Rep 67-73)."""
        return st.leo >= leader.leo or self.now - st.last_caught_up <= self.cfg.lag_time_ms

    # ---------------------------------------------------------------------------------------
    # start-up

    def start(self) -> None:
        cfg = self.cfg
        c = self.ctl
        # nothing reads step prose: hot paths count their steps without formatting them
        self.quiet = not self.record and self.at_step is None and not self.check and self.views is None
        self._bootstrap_metadata()
        if self.part2:
            for bid in self.replicas:
                self.brokers[bid].seg = SegmentedLog.create(cfg.log, 0)
        for bid, b in self.brokers.items():
            b.leader_epoch = 0
            b.partition_epoch = 0
            if bid in self.replicas:
                self._apply_metadata(bid, self._metadata(), quiet=True)
            phase = self.rng.randrange(cfg.heartbeat_ms)
            self.at(phase, self._broker_heartbeat, bid, b.inc)
            c.reg[bid].last_hb = 0
            self.at(cfg.session_timeout_ms + 1, self._ctl_session_check, bid, 0)
        period = cfg.lag_time_ms // 2 if self.prof.isr_check_half_lag else cfg.lag_time_ms
        self.at(period, self._isr_expiration_tick, period)
        if cfg.auto_rebalance:
            self.at(cfg.rebalance_interval_ms, self._ctl_rebalance_tick)
        if self.prof.periodic_unclean_check:
            self.at(cfg.unclean_interval_ms, self._ctl_unclean_tick)
        if self.at_step == 0 or (self.shares_clock and self.at_step is not None):
            self.view = self.snapshot()
        if self.views is not None:
            self._view_after_step()

    # ---------------------------------------------------------------------------------------
    # settle

    def quiet_for_skip(self) -> bool:
        """True when this partition's pending events are all housekeeping that changes nothing
        (Clock.skip_idle): settled, led by a live leader with every live replica in its ISR, no
        broker between states, no network cut, no preferred-leader move due."""
        if self.cut or not self.settled() or self.awaiting_failover():
            return False
        c = self.ctl
        if c.leader == NO_LEADER:
            return False
        L = self.brokers[c.leader]
        if not L.alive or L.role != "leader":
            return False
        for bid, br in self.brokers.items():
            r = c.reg[bid]
            if br.parked:
                return False
            if br.alive:
                if r.fenced or not r.registered or r.shutting or br.pending is not None or br.zk_fail:
                    return False
                if bid in self.replicas and (bid not in c.isr or not br.fetching or br.leader_id != L.id):
                    return False
            elif not r.fenced:
                return False  # a dead broker not yet fenced: the session check is still to come
        if self.cfg.auto_rebalance and self.replicas[0] != c.leader and self.brokers[self.replicas[0]].alive:
            return False
        for _t, _tick, owner, fn, args in self.clock.q:
            if owner is self:
                f = fn.__func__
                if f is _DELIVER:
                    f = args[3].__func__
                if f not in _HOUSEKEEPING and f not in _WAKEUPS:
                    return False
        return True

    # ---------------------------------------------------------------------------------------
    # observation

    def _message(self, t: int, d: tuple[Any, ...]) -> dict[str, Any] | None:
        """One queued delivery as the request or response it stands for (None: not a message kind)."""
        src, dst, _inc, fn, args, _on_fail, _on_lost, sent = d
        kind = _MESSAGE_KINDS.get(fn.__func__)
        if kind is None:  # pragma: no cover - every send target is listed in _MESSAGE_KINDS
            return None
        m: dict[str, Any] = {"kind": kind, "src": src, "dst": dst, "sent_ms": sent, "arrive_ms": t}
        if kind == "fetch":
            _lid, _fid, offset, last_epoch = args[:4]
            m["offset"] = offset
            m["epoch"] = last_epoch
            m["label"] = f"Fetch offset {offset}" + ("" if last_epoch is None else f", epoch {last_epoch}")
        elif kind == "fetch_response":
            _fid, _gen, _lid, what, a, b = args
            m["diverging"] = what == "diverging"
            if what == "records":
                m["records"] = len(a)
                m["hw"] = b
                m["error"] = None
                n = len(a)
                m["label"] = (f"{n} record{'s' if n != 1 else ''}" if n else "No records") + f", HW {b}"
            else:
                m["records"] = 0
                m["hw"] = None
                if what == "diverging":
                    m["error"] = None
                    m["diverging_epoch"] = a
                    m["diverging_end_offset"] = b
                    m["label"] = f"Diverging: epoch {a} ends at {b}"
                elif what == "out_of_range":
                    m["error"] = "OFFSET_OUT_OF_RANGE"
                    m["leader_leo"] = a
                    m["label"] = f"Out of range: leader LEO {a}"
                else:
                    m["error"] = "NOT_LEADER_OR_FOLLOWER"
                    m["label"] = "NOT_LEADER_OR_FOLLOWER"
        elif kind == "produce":
            _bid, idx, attempt_id = args
            batch = self.batches[idx]
            m["records"] = list(batch.records)
            m["index"] = idx
            m["acks"] = batch.acks_shown
            m["label"] = f"Produce {_fmt_records(batch.records, 3)} acks={batch.acks_shown}"
            if batch.control is not None:  # the coordinator's WriteTxnMarkers (engine/transactions.py)
                m["control"] = batch.control
                m["label"] = f"WriteTxnMarkers {batch.control} (producer id {batch.session.pid})"
        elif kind == "produce_response":
            idx, _attempt, error, offsets = args
            m["index"] = idx
            m["error"] = error
            m["offsets"] = offsets
            m["label"] = error if error is not None else (
                f"Ack {_fmt_offsets(offsets[0], offsets[-1])}" if offsets else "Ack"
            )
        elif kind == "alter_partition":
            new_isr = list(args[3])
            m["isr"] = new_isr
            m["label"] = f"AlterPartition ISR {_fmt_set(new_isr)}"
        elif kind == "alter_partition_response":
            m["error"] = args[1]
            m["label"] = f"AlterPartition: {args[1]}"
        elif kind == "metadata":
            meta = args[1]
            m["leader"] = meta["leader"]
            m["leader_epoch"] = meta["leader_epoch"]
            m["isr"] = list(meta["isr"])
            lead = f"B{meta['leader']}" if meta["leader"] != NO_LEADER else "none"
            m["label"] = f"Leader {lead}, epoch {meta['leader_epoch']}, ISR {_fmt_set(meta['isr'])}"
            if not self.kraft:  # the ZooKeeper-era controller's request (UpdateMetadata aside)
                m["api"] = "LeaderAndIsr"
                m["label"] = "LeaderAndIsr: " + m["label"]
        else:  # the broker lifecycle: heartbeat, registration, controlled shutdown
            api = _LIFECYCLE_API[fn.__func__]
            m["api"] = api if self.kraft else "ZooKeeper session"
            m["label"] = m["api"] if self.kraft else "ZooKeeper session (simplified)"
        return m

    def messages(self) -> list[dict[str, Any]]:
        """Requests and responses in flight (queued deliveries) and fetches parked at a leader,
        oldest first. Cheap enough for a snapshot per step: the queue holds a few dozen events of
        each partition (with many partitions, all of theirs: this one's are picked out first)."""
        deliver = Sim._deliver
        out: list[tuple[int, int, dict[str, Any]]] = []
        mine = [event for event in self.clock.q if event[2] is self]
        for t, seq, _owner, fn, d in mine:
            if fn.__func__ is deliver:
                m = self._message(t, d)
                if m is not None:
                    out.append((d[7], seq, m))
        for L in self.brokers.values():
            if not L.parked_fetch:
                continue
            for fid, (_gen, offset, at, until) in L.parked_fetch.items():
                out.append(
                    (
                        at,
                        -1,  # parked before anything queued at the same millisecond was sent
                        {
                            "kind": "fetch_held",
                            "src": fid,
                            "dst": L.id,
                            "sent_ms": at,
                            "arrive_ms": at,
                            "offset": offset,
                            "until_ms": until,
                            "label": f"Fetch offset {offset} waits for data until {until} ms",
                        },
                    )
                )
        out.sort(key=lambda x: (x[0], x[1]))
        return [m for _s, _q, m in out]


# The request or response each queued delivery stands for (snapshot()["messages"])
_MESSAGE_KINDS: dict[Any, str] = {
    Sim._leader_on_fetch: "fetch",
    Sim._follower_on_response: "fetch_response",
    Sim._leader_on_produce: "produce",
    Sim._producer_response: "produce_response",
    Sim._ctl_alter_partition: "alter_partition",
    Sim._leader_alter_rejected: "alter_partition_response",
    Sim._apply_metadata: "metadata",
    # KRaft's broker lifecycle RPCs: registration, heartbeats, and the controlled shutdown, which
    # a broker asks for in its heartbeat (wantShutDown) and is granted in the answer (shouldShutDown)
    Sim._ctl_heartbeat: "heartbeat",
    Sim._ctl_register: "heartbeat",
    Sim._ctl_controlled_shutdown: "heartbeat",
    Sim._broker_registered: "heartbeat_response",
    Sim._finish_shutdown: "heartbeat_response",
}
_LIFECYCLE_API: dict[Any, str] = {
    Sim._ctl_heartbeat: "BrokerHeartbeat",
    Sim._ctl_register: "BrokerRegistration",
    Sim._ctl_controlled_shutdown: "BrokerHeartbeat (wantShutDown)",
    Sim._broker_registered: "BrokerRegistration response",
    Sim._finish_shutdown: "BrokerHeartbeat response (shouldShutDown)",
}


_DELIVER = Sim._deliver
# Events that must happen at their own time: an idle skip stops before them (Clock.skip_idle)
_WAKEUPS = frozenset({Sim._retention_check, Sim._cleaner_check})
# The events of a quiet cluster (Sim.quiet_for_skip): heartbeats, fetches that find nothing new,
# periodic checks with nothing to do, and the timeouts of requests already answered (a quiet
# partition has no batch without an outcome and nothing in purgatory)
_HOUSEKEEPING = frozenset(
    {
        Sim._producer_error,
        Sim._producer_expire,
        Sim._producer_expire_held,
        Sim._expire_produce,
        Sim._broker_heartbeat,
        Sim._ctl_heartbeat,
        Sim._ctl_session_check,
        Sim._follower_fetch,
        Sim._follower_fetch_retry,
        Sim._leader_on_fetch,
        Sim._follower_on_response,
        Sim._fetch_expire,
        Sim._isr_expiration_tick,
        Sim._ctl_rebalance_tick,
        Sim._ctl_unclean_tick,
    }
)
