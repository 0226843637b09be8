"""Theory of operation: a deterministic discrete-event simulation of one Kafka partition.

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

import dataclasses
import heapq
import itertools
import random
from typing import Any

from . import budget as _budget
from .budget import BudgetExceeded, snapshot_bytes, step_bytes
from .consumers import Clients
from .partitioner import partition_for_key
from .scenario import Config, Limits, ScenarioError
from .steps import step_kind

NETWORK_DELAY_MS = 1
NO_LEADER = -1
NEVER = -(10**12)  # a time long before the scenario starts
REPLICA_SOCKET_TIMEOUT_MS = 30_000  # replica.socket.timeout.ms: a lost fetch is noticed after this
UNKNOWN = -1
MLOG_IN_SNAPSHOT = 40  # newest metadata records carried in a snapshot (the log itself is unbounded)

RETRIABLE = frozenset(
    {
        "NOT_ENOUGH_REPLICAS",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "REQUEST_TIMED_OUT",
        "NOT_LEADER_OR_FOLLOWER",
        "NETWORK_EXCEPTION",
        "LEADER_NOT_AVAILABLE",
    }
)
REFRESH_METADATA = frozenset(
    {"NOT_LEADER_OR_FOLLOWER", "NETWORK_EXCEPTION", "REQUEST_TIMED_OUT", "LEADER_NOT_AVAILABLE"}
)


class FollowerState:
    """The leader's bookkeeping about one follower (Replica.scala 30-55)."""

    __slots__ = ("leo", "last_fetch_leader_leo", "last_fetch_time", "last_caught_up", "last_gen")

    def __init__(self, now: int, in_isr: bool):
        self.leo = UNKNOWN
        self.last_gen = -1  # the follower's number of the newest fetch this leader has handled
        self.last_fetch_leader_leo = UNKNOWN
        self.last_fetch_time = now
        self.last_caught_up = now if in_isr else NEVER


class Broker:
    __slots__ = (
        "id",
        "rack",
        "status",
        "inc",
        "log",
        "hw",
        "flushed",
        "cache",
        "fetching",
        "truncated",
        "role",
        "leader_id",
        "leader_epoch",
        "partition_epoch",
        "isr",
        "maximal",
        "pending",
        "zk_fail",
        "pending_isr",
        "fstate",
        "epoch_start",
        "parked",
        "parked_fetch",
        "fetch_inflight",
        "fetch_gen",
        "registered",
        "clean_shutdown",
        "batch_offsets",
        "last_hold",
        "fetch_delay_ms",
        "answered",
    )

    def __init__(self, bid: int, rack: str | None):
        self.id = bid
        self.rack = rack
        self.status = "running"  # running | crashed | shutdown
        self.inc = 0  # incarnation: bumps on every stop and start; stale events check it
        self.log: list[tuple[int, str, int]] = []  # (leader epoch, record, producer batch index)
        self.hw = 0
        self.flushed = 0
        self.cache: list[list[int]] = []  # leader-epoch cache: [epoch, start offset]
        self.fetching = True
        self.truncated: list[dict[str, Any]] = []
        self.role = "none"  # leader | follower | none
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.isr: list[int] = []
        self.maximal: list[int] = []
        self.pending: str | None = None  # "expand" | "shrink" while an AlterPartition is in flight
        self.zk_fail: tuple[Any, ...] | None = None  # last failed ZooKeeper ISR write (historic profiles)
        self.pending_isr: list[int] = []
        self.fstate: dict[int, FollowerState] = {}
        self.epoch_start = 0
        self.parked: list[
            list[Any]
        ] = []  # produce purgatory: [batch, attempt, required offset, acks, expiry]
        # follower -> (fetch gen, fetch offset, parked at, wait ends at)
        self.parked_fetch: dict[int, tuple[int, int, int, int]] = {}
        self.fetch_inflight = False
        self.fetch_gen = 0
        self.registered = True
        self.clean_shutdown = False
        self.batch_offsets: dict[int, tuple[int, int]] = {}
        self.last_hold = -1
        self.fetch_delay_ms = 0  # not a Kafka config: extra time each of this follower's fetches takes
        self.answered: set[tuple[int, int]] = set()  # pre-KIP-279 epoch answers already narrated

    @property
    def alive(self) -> bool:
        return self.status == "running"

    @property
    def leo(self) -> int:
        return len(self.log)


class Registration:
    __slots__ = ("registered", "fenced", "shutting", "inc", "last_hb", "hb_count", "epoch")

    def __init__(self) -> None:
        self.registered = True
        self.fenced = False
        self.shutting = False
        self.inc = 0
        self.last_hb = 0
        self.hb_count = 0
        self.epoch = 0  # broker epoch: the metadata-log offset of its RegisterBrokerRecord


class Controller:
    __slots__ = (
        "reg",
        "leader",
        "leader_epoch",
        "partition_epoch",
        "isr",
        "elr",
        "lke",
        "recovery",
        "unclean",
        "min_isr",
    )

    def __init__(self, brokers: list[int], replicas: list[int], unclean: bool, min_isr: int):
        self.reg = {b: Registration() for b in brokers}
        self.leader = replicas[0]
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.isr = list(replicas)
        self.elr: list[int] = []
        self.lke: list[int] = []
        self.recovery = "RECOVERED"
        self.unclean = unclean
        self.min_isr = min_isr


class Batch:
    __slots__ = (
        "index",
        "records",
        "acks",
        "acks_shown",
        "idempotent",
        "attempts",
        "attempt_id",
        "state",
        "target",
        "first_send",
        "deadline",
        "outcome",
        "error",
        "offsets",
        "done_ms",
        "retries_used",
        "key",
    )

    def __init__(self, index: int, records: list[str], acks: int | str, acks_shown: Any, idempotent: bool):
        self.index = index
        self.records = records
        self.acks = acks
        self.acks_shown = acks_shown
        self.idempotent = idempotent
        self.attempts = 0
        self.attempt_id = 0
        self.state = "new"
        self.target = NO_LEADER
        self.first_send = 0
        self.deadline = 0
        self.outcome: str | None = None
        self.error: str | None = None
        self.offsets: list[int] | None = None
        self.done_ms: int | None = None
        self.retries_used = 0
        self.key: str | None = None


def _fmt_offsets(first: int, last: int) -> str:
    return f"offset {first}" if first == last else f"offsets {first}-{last}"


def _fmt_records(records: list[str], limit: int = 6) -> str:
    if len(records) <= limit:
        return ", ".join(records)
    return ", ".join(records[:limit]) + f", ... ({len(records)} records)"


def _fmt_cache(cache: list[list[int]]) -> str:
    return "{" + ", ".join(f"e{e}->{start}" for e, start in cache) + "}"


def _fmt_set(ids: list[int]) -> str:
    return "{" + ", ".join(str(i) for i in ids) + "}"




@dataclasses.dataclass
class RunUse:
    """What a run has used so far across its partitions (estimated result bytes)."""

    result_bytes: int = 0


class Clock:
    """The one simulated clock of a run: every partition's simulation queues its events here.

    With several partitions, each partition has its own `Sim` (its replicas, its controller view,
    its producer batches), but they all wait in one queue ordered by (time, insertion), so a fault
    lands at the same simulated millisecond in every partition and a `settle` ends at one time for
    the whole cluster. `steps` numbers the steps of the whole run in the order they happened.
    """

    __slots__ = (
        "now", "q", "tick", "events", "steps", "limits", "budget", "stale", "sims", "skips", "skipped_ms",
        "cap",
    )

    def __init__(self, limits: Limits, cap: int | None = None) -> None:
        self.cap = limits.max_sim_ms if cap is None else cap  # the scenario's simulated-time cap
        self.now = 0
        self.q: list[tuple[int, int, Sim, Any, tuple[Any, ...]]] = []
        self.tick = itertools.count(1).__next__
        self.events = 0
        self.steps = 0
        self.limits = limits
        self.budget = _budget.current()
        self.stale: list[Sim] = []  # partitions changed by a step told by another (see Sim.step)
        self.sims: list[Sim] = []  # set when idle time may be skipped (skip_idle)
        self.skips = 0
        self.skipped_ms = 0

    def refresh_stale(self) -> None:
        for sim in self.stale:
            sim.refresh_view()
        self.stale.clear()

    def run_until(self, t_end: int, stop: Any = None) -> None:
        cap = self.cap
        clamped = t_end > cap
        if clamped:
            t_end = cap
        q = self.q
        pop = heapq.heappop
        max_events = self.limits.max_events
        check_every = _budget.CHECK_EVERY_EVENTS
        # one comparison per event: `mark` is the next event count at which to look at the
        # budget (the event cap, or the next deadline/cancel check, whichever comes first)
        mark = min(max_events + 1, self.events + check_every)
        next_idle_check = self.now + IDLE_CHECK_MS if self.sims else cap + 1
        while q and q[0][0] <= t_end:
            if q[0][0] >= next_idle_check:
                self.skip_idle(t_end)
                next_idle_check = q[0][0] + IDLE_CHECK_MS
            t, _, owner, fn, args = pop(q)
            self.now = owner.now = t
            fn(*args)
            if self.stale:
                self.refresh_stale()
            self.events += 1
            if self.events >= mark:
                if self.events > max_events:
                    raise BudgetExceeded(
                        "events",
                        f"the scenario needs more than {self.limits.max_events} engine events (all "
                        "partitions together); shorten it (fewer actions, partitions or less simulated time)",
                    )
                self.budget.check()
                mark = min(max_events + 1, self.events + check_every)
            if stop is not None and stop():
                return
        if clamped:
            raise BudgetExceeded(
                "sim_time",
                f"the scenario runs past the cap of {cap} ms of simulated time; "
                "use fewer or shorter advance/settle actions",
            )
        self.now = max(self.now, t_end)

    def skip_idle(self, t_end: int) -> None:
        """Jump over simulated time in which a quiet cluster only repeats its housekeeping.

        Quiet (Sim.quiet_for_skip): nothing to produce, every replica in sync, every broker
        registered and in touch, so each pending event of the replication engine is a heartbeat,
        an empty fetch or a periodic check that changes nothing. Those events, and the times the
        engine compares them with, move forward together by the jump; the cluster's next events
        are the same ones, later. What must happen at its own time (a consumer's timer, the end of
        the action) is not moved: the jump stops IDLE_MARGIN_MS before the first of them, and the
        engine runs normally from there. Days of idle time then cost a few hundred events."""
        sims = self.sims
        wake = t_end
        for t, _tick, owner, _fn, _args in self.q:
            if owner.__class__ is not Sim and t < wake:
                wake = t
        delta = wake - IDLE_MARGIN_MS - self.now
        if delta < IDLE_MARGIN_MS or not all(sim.quiet_for_skip() for sim in sims):
            return
        moved = []
        for t, tick, owner, fn, args in self.q:
            if owner.__class__ is Sim:
                if fn.__func__ is _DELIVER:
                    args = (*args[:7], args[7] + delta)  # sent_ms moves with the message
                t += delta
            moved.append((t, tick, owner, fn, args))
        heapq.heapify(moved)
        self.q[:] = moved
        for sim in sims:
            sim.shift_clocks(delta)
        self.now += delta
        for sim in sims:
            sim.now = self.now
        self.skips += 1
        self.skipped_ms += delta


# Idle-time skipping (Clock.skip_idle): how often a run looks for a quiet cluster, and how much
# simulated time it leaves to run normally before the next event that must happen at its own time
IDLE_CHECK_MS = 1_000
IDLE_MARGIN_MS = 30_000


class Sim:
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
        self.log_start = 0  # the partition's log start offset (moved by DeleteRecords)
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
    # the metadata log (kafka-eos-kraft.md §D.3)

    def mrec(self, rtype: str, **fields: Any) -> int:
        """Append a metadata record; returns its offset. Field names follow Kafka's record schemas."""
        if not self.kraft:
            return -1
        offset = len(self.mlog)
        self.mlog.append({"offset": offset, "t_ms": self.now, "type": rtype, **fields})
        return offset

    def _bootstrap_metadata(self) -> None:
        # the record stores a numeric level; we show the release it corresponds to instead
        self.mrec("FeatureLevelRecord", name="metadata.version", release=self.prof.version)
        for bid, b in self.brokers.items():
            off = self.mrec(
                "RegisterBrokerRecord", brokerId=bid, brokerEpoch=len(self.mlog), rack=b.rack, fenced=True
            )
            self.ctl.reg[bid].epoch = off
        for bid in self.brokers:
            self.mrec(
                "BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=self.ctl.reg[bid].epoch, fenced=-1
            )
        c = self.ctl
        self.mrec("TopicRecord", name="topic")
        self.mrec(
            "PartitionRecord",
            partitionId=0,
            replicas=list(self.replicas),
            isr=list(c.isr),
            leader=c.leader,
            leaderEpoch=0,
            partitionEpoch=0,
            leaderRecoveryState="RECOVERED",
        )

    # ---------------------------------------------------------------------------------------
    # start-up

    def start(self) -> None:
        cfg = self.cfg
        c = self.ctl
        # nothing reads step prose: hot paths count their steps without formatting them
        self.quiet = not self.record and self.at_step is None and not self.check and self.views is None
        self._bootstrap_metadata()
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
    # producer client (Sender / RecordAccumulator, simplified to one batch per produce action)

    def produce(self, action: Any, index: int) -> None:
        if action.records is not None:
            records = list(action.records)
        else:
            base = sum(len(b.records) for b in self.batches)
            records = [f"m{base + i}" for i in range(action.count)]
        if action.acks is None:
            acks: int | str = self.cfg.acks
        elif action.acks == "all":
            acks = -1
        elif action.acks == "min.insync.replicas":
            acks = "min_isr"
        else:
            acks = action.acks
        shown: Any = "all" if acks == -1 else ("min.insync.replicas" if acks == "min_isr" else acks)
        b = Batch(index, records, acks, shown, self.cfg.idempotent and acks == -1)
        b.key = action.key
        b.first_send = self.now
        b.deadline = self.now + self.cfg.delivery_timeout_ms
        self.batches.append(b)
        self.pending_batches += 1
        self._producer_send(b.index)

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
        earlier = [i for i in self.unsendable if i < idx]
        return self.batches[min(earlier)] if earlier else None

    def _release_held(self) -> None:
        """Send, in order, the batches that waited behind one that has now been sent or failed:
        each time the first held batch nothing holds back any more. Iterative (a send made here
        calls this again and returns at once), so each batch leaves once, however many wait."""
        if self.releasing:
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
            self._producer_fail(b, b.error or "REQUEST_TIMED_OUT", why)

    def _producer_send(self, idx: int) -> None:
        b = self.batches[idx]
        if b.outcome is not None:
            return
        held_by = self._held_by(idx)
        if held_by is not None:
            if b.state != "held":
                self._set_state(b, "held")
                self.at(b.deadline, self._producer_expire_held, idx)
                self.step(
                    "producer_hold",
                    "producer",
                    f"Batch {_fmt_records(b.records)} waits in the producer's queue behind "
                    f"{_fmt_records(held_by.records)}, which waits to be sent again: a partition's "
                    "batches leave in order",
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
                    "producer",
                    f"The producer knows no leader for the partition; batch {_fmt_records(b.records)} waits "
                    "for metadata",
                    produce=idx,
                )
            self._producer_wait(b)
            return
        b.attempts += 1
        b.attempt_id += 1
        self._set_state(b, "awaiting_response")
        if b.attempts == 1:
            self.sent_records.extend(b.records)
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
                "producer",
                f"Producer sends {_fmt_records(b.records)} to B{leader} with acks={b.acks_shown}{retry}",
                produce=idx,
                broker=leader,
                records=b.records,
            )
        if b.acks != 0:
            timeout = self.cfg.request_timeout_ms + 2 * NETWORK_DELAY_MS + 1
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
        backoff = self.cfg.retry_backoff_max_ms
        if self.now + backoff > b.deadline:
            self._producer_fail(b, b.error or "REQUEST_TIMED_OUT", "delivery.timeout.ms has passed")
            return
        self.at(self.now + backoff, self._producer_send, b.index)

    def _producer_backoff(self, b: Batch, error: str, quiet: bool = False) -> None:
        backoff = min(
            self.cfg.retry_backoff_ms * (2 ** min(b.retries_used, 10)), self.cfg.retry_backoff_max_ms
        )
        if b.retries_used >= self.cfg.retries or self.now + backoff > b.deadline:
            why = (
                "retries are exhausted"
                if b.retries_used >= self.cfg.retries
                else "delivery.timeout.ms has passed"
            )
            self._producer_fail(b, error, why)
            return
        b.retries_used += 1
        if not quiet:
            self._set_state(b, "backoff")
            self.step(
                "producer_retry",
                "producer",
                f"{error} is retriable: the producer will resend {_fmt_records(b.records)} in {backoff} ms",
                produce=b.index,
            )
        self.at(self.now + backoff, self._producer_send, b.index)

    def _producer_expire(self, idx: int, attempt_id: int) -> None:
        b = self.batches[idx]
        if b.attempt_id != attempt_id or b.state != "awaiting_response" or b.outcome is not None:
            return
        why = "delivery.timeout.ms passed while the request was in flight"
        self._producer_fail(b, "REQUEST_TIMED_OUT", why)

    def _producer_fail(self, b: Batch, error: str, why: str) -> None:
        self.pending_batches -= 1
        b.outcome = "failed"
        self.failed_records.extend(b.records)
        b.error = error
        b.done_ms = self.now
        self._set_state(b, "failed")
        self.step(
            "producer_give_up",
            "producer",
            f"The producer gives up on {_fmt_records(b.records)}: {error} ({why})",
            produce=b.index,
        )
        self._release_held()

    def _producer_error(self, idx: int, attempt_id: int, error: str) -> None:
        b = self.batches[idx]
        if b.attempt_id != attempt_id or b.state != "awaiting_response":
            return
        if b.outcome == "sent":
            return  # acks=0: the client never learns
        self.step(
            "producer_receive",
            "producer",
            f"Producer gets {error} for {_fmt_records(b.records)}",
            produce=idx,
            error=error,
        )
        b.error = error
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
        self.acked_records.extend(b.records)
        b.error = None
        b.offsets = offsets
        b.done_ms = self.now
        self._set_state(b, "acked")
        assert offsets is not None
        self.step(
            "producer_receive",
            "producer",
            f"Producer: {_fmt_records(b.records)} acknowledged at {_fmt_offsets(offsets[0], offsets[-1])}",
            produce=idx,
            offsets=offsets,
        )

    # ---------------------------------------------------------------------------------------
    # leader: the produce path (kafka-semantics.md §2)

    def _acks_valid(self, acks: int | str) -> bool:
        if acks == "min_isr":
            return True  # KIP-926 proposal: the broker is assumed to understand it
        if acks in (-1, 0, 1):
            return True  # ReplicaManager.isValidRequiredAcks (RM 1421-1423)
        return self.prof.accepts_acks_above_one and isinstance(acks, int) and acks > 1

    def _respond(
        self, bid: int, idx: int, attempt_id: int, error: str | None, offsets: list[int] | None
    ) -> None:
        b = self.batches[idx]
        if b.acks == 0:
            return  # acks=0 gets no response (KA 709-728)
        self.send(bid, "producer", self._producer_response, (idx, attempt_id, error, offsets))

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
                f"{who} refuses {_fmt_records(batch.records)}: committed ISR {_fmt_set(br.isr)} has "
                f"{len(br.isr)} < min.insync.replicas {eff}: NOT_ENOUGH_REPLICAS (19), nothing appended",
            )
            return
        existing = br.batch_offsets.get(idx) if batch.idempotent else None
        if existing is not None:
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
            self._append(br, [(epoch, r, idx) for r in batch.records])
            last = br.leo - 1
            if self.quiet:
                self.count_step()
            else:
                self.step(
                    "leader_append",
                    f"broker-{bid}",
                    f"{who} appends {_fmt_records(batch.records)} at {_fmt_offsets(first, last)} "
                    f"(epoch {epoch}); LEO {br.leo}",
                    broker=bid,
                    records=batch.records,
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
        self.at(self.now + self.cfg.request_timeout_ms, self._expire_produce, bid, br.inc, idx, attempt_id)

    def _append(self, br: Broker, entries: list[tuple[int, str, int]]) -> None:
        start = br.leo
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
        if verdict == "":
            if acks == -1 and self.cfg.quorum_acks is not None:
                text = (
                    f"B{br.id}'s HW {br.hw} passed offset {required - 1}: {self.cfg.quorum_acks} "
                    f"replicas have {_fmt_records(b.records)} (the KIP-250 quorum, not every ISR "
                    "member); the request succeeds"
                )
            elif acks == -1:
                text = (
                    f"B{br.id}'s HW {br.hw} passed offset {required - 1}: every ISR member has "
                    f"{_fmt_records(b.records)}; the request succeeds"
                )
            else:
                need = acks if acks != "min_isr" else self.eff_min()
                text = f"{need} replicas have offset {required - 1}: success"
            self._respond(br.id, idx, attempt_id, None, offsets)
            self.step(
                "leader_complete_produce" if acks in (-1, "min_isr") else "leader_ack_count",
                f"broker-{br.id}",
                text,
                broker=br.id,
                produce=idx,
            )
        else:
            self._respond(br.id, idx, attempt_id, verdict, None)
            self.step(
                "leader_complete_produce",
                f"broker-{br.id}",
                f"B{br.id} completes the parked request for {_fmt_records(b.records)} with {verdict}",
                broker=br.id,
                produce=idx,
                error=verdict,
            )

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
            self.step(
                "leader_advance_high_watermark",
                f"broker-{br.id}",
                f"Leader B{br.id} HW {old} -> {candidate}",
                broker=br.id,
            )
        self._check_purgatory(br)

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

    def _order(self, bid: int) -> int:
        return self.replicas.index(bid) if bid in self.replicas else 99

    # ---------------------------------------------------------------------------------------
    # controller (§4.5, §5)

    def _metadata(self) -> dict[str, Any]:
        c = self.ctl
        return {
            "leader": c.leader,
            "leader_epoch": c.leader_epoch,
            "partition_epoch": c.partition_epoch,
            "isr": list(c.isr),
            "recovery": c.recovery,
        }

    def _publish(self, only: int | None = None) -> None:
        meta = self._metadata()
        for bid in self.replicas if only is None else [only]:
            if self.ctl.reg[bid].registered:
                self.send("controller", bid, self._apply_metadata, (bid, meta))

    def _ctl_acceptable(self, bid: int, exclude: set[int]) -> bool:
        r = self.ctl.reg[bid]
        return bid not in exclude and r.registered and not r.fenced and not r.shutting

    def _ctl_alter_partition(
        self, lid: int, leader_epoch: int, partition_epoch: int, new_isr: list[int], direct: bool = False
    ) -> None:
        c = self.ctl
        if not direct:
            reason = None
            if lid != c.leader or leader_epoch != c.leader_epoch:
                reason = "FENCED_LEADER_EPOCH"
            elif partition_epoch != c.partition_epoch:
                reason = "INVALID_UPDATE_VERSION"
            else:
                for r in new_isr:
                    if r not in c.isr and not self._ctl_acceptable(r, set()):
                        reason = "INELIGIBLE_REPLICA"
            if reason is not None:
                self.send("controller", lid, self._leader_alter_rejected, (lid, reason, partition_epoch))
                self.step(
                    "controller_reject_alter_partition",
                    "controller",
                    f"The controller rejects B{lid}'s ISR change to {_fmt_set(new_isr)}: {reason}",
                )
                return
        recovered = c.recovery == "RECOVERING"
        if recovered:
            c.recovery = "RECOVERED"
        old = list(c.isr)
        self._ctl_change(sorted(new_isr, key=self._order), why="alter_partition", force_publish=recovered)
        if direct:
            # ZooKeeper era: the leader's conditional write succeeded; the partition epoch stands for
            # the zkVersion of /brokers/topics/topic/partitions/0/state, and the broker records an
            # isr_change_notification that the controller reads to tell the other brokers
            text = (
                f"ZooKeeper now holds ISR {_fmt_set(old)} -> {_fmt_set(c.isr)} (zkVersion "
                f"{c.partition_epoch}, leader epoch {c.leader_epoch} unchanged); B{lid} records an "
                f"isr_change_notification for the controller"
            )
        else:
            text = (
                f"The controller commits ISR {_fmt_set(old)} -> {_fmt_set(c.isr)} "
                f"(partition epoch {c.partition_epoch}, leader epoch {c.leader_epoch} unchanged)"
            )
        self.step("controller_alter_partition", "controller", text)
        if recovered:
            self.step(
                "controller_recovered",
                f"broker-{lid}",
                f"B{lid}'s first ISR change carries RECOVERED: the partition leaves the RECOVERING state",
            )

    def _leader_alter_rejected(self, lid: int, reason: str, partition_epoch: int) -> None:
        L = self.brokers[lid]
        if L.pending is None or L.partition_epoch != partition_epoch:
            return
        if reason == "INELIGIBLE_REPLICA":
            L.pending = None
            L.maximal = list(L.isr)
            self._maybe_increment_hw(L)

    def _ctl_change(
        self,
        target_isr: list[int],
        *,
        why: str,
        exclude: set[int] | None = None,
        election: str = "online",
        drop_from_elr: int | None = None,
        force_publish: bool = False,
        preferred: int | None = None,
    ) -> None:
        """PartitionChangeBuilder: ELR populate (PCB 539-570), election (PCB 261-289),
        epochs (PReg 255-277)."""
        c = self.ctl
        prof = self.prof
        exclude = exclude or set()
        old_leader, old_isr, old_elr, old_lke = c.leader, list(c.isr), list(c.elr), list(c.lke)
        eff = self.eff_min()
        new_elr = list(c.elr)
        new_lke = list(c.lke)
        if self.cfg.elr:
            if len(target_isr) >= eff:
                new_elr, new_lke = [], []
            else:
                pool = (set(c.elr) | set(c.isr)) - set(target_isr)
                if drop_from_elr is not None:
                    pool.discard(drop_from_elr)
                new_elr = [r for r in self.replicas if r in pool]
        elif drop_from_elr is not None and drop_from_elr in new_elr:
            new_elr.remove(drop_from_elr)

        def acceptable(r: int) -> bool:
            return self._ctl_acceptable(r, exclude)

        leader = NO_LEADER
        how = ""
        if preferred is not None:
            leader, how = preferred, "preferred"
        elif old_leader != NO_LEADER and old_leader in target_isr and acceptable(old_leader):
            leader, how = old_leader, "kept"
        else:
            if self.cfg.largest_leo_election:
                pool_ids = [
                    r
                    for r in self.replicas
                    if acceptable(r) and (r in target_isr or (not target_isr and r in new_elr))
                ]
                if pool_ids:
                    leader = max(pool_ids, key=lambda r: (self.brokers[r].leo, -self._order(r)))
                    how = "largest_leo"
            else:
                for r in self.replicas:
                    if acceptable(r) and (r in target_isr or (not target_isr and r in new_elr)):
                        leader = r
                        how = "elr" if r not in target_isr else "clean"
                        break
            if (
                leader == NO_LEADER
                and self.cfg.elr
                and not target_isr
                and not new_elr
                and len(new_lke) == 1
                and acceptable(new_lke[0])  # unfenced: KAFKA-19522 (the 2024 snapshot skipped this check)
            ):
                leader, how = new_lke[0], "last_known"
            if leader == NO_LEADER and (election == "unclean" or (c.unclean and prof.topic_unclean_config)):
                for r in self.replicas:
                    if acceptable(r):
                        leader, how = r, "unclean"
                        break
        new_isr = list(target_isr)
        new_recovery = c.recovery
        if how == "elr":
            new_isr = [leader]
            new_elr = [r for r in new_elr if r != leader]
        elif how in ("unclean", "last_known"):
            new_isr = [leader]
            new_elr, new_lke = [], []
            if prof.recovering_state:
                new_recovery = "RECOVERING"
            self.unsafe_history = True
        if self.cfg.elr and len(new_isr) >= eff:
            new_elr, new_lke = [], []  # §5.5: back at min ISR, the ELR is cleared
        if not new_isr and not self.cfg.elr:
            new_isr = old_isr  # PCB 446-454: without ELR the last ISR member is never removed
        if self.cfg.elr and leader == NO_LEADER and not new_isr and not new_lke and old_leader != NO_LEADER:
            new_lke = [old_leader]  # PCB 496-507: remember the last leader
        leader_changed = leader != old_leader
        changed = (
            leader_changed
            or new_isr != old_isr
            or new_elr != old_elr
            or new_lke != old_lke
            or new_recovery != c.recovery
            or force_publish
        )
        if not changed:
            return
        if leader_changed:
            c.leader_epoch += 1
        elif (
            prof.epoch_bump_on_controller_shrink
            and why in ("fence", "shutdown", "unclean_restart")
            and len(new_isr) < len(old_isr)
        ):
            c.leader_epoch += 1  # before 3.6 a controller-driven shrink bumped the leader epoch
        c.partition_epoch += 1
        rec: dict[str, Any] = {"partitionId": 0}
        if new_isr != old_isr:
            rec["isr"] = list(new_isr)
        if leader_changed or c.leader_epoch != self._mlog_leader_epoch:
            rec["leader"] = leader  # setting the leader field is what bumps the leader epoch on replay
        if new_elr != old_elr:
            rec["eligibleLeaderReplicas"] = list(new_elr)
        if new_lke != old_lke:
            rec["lastKnownElr"] = list(new_lke)
        if new_recovery != c.recovery:
            rec["leaderRecoveryState"] = new_recovery
        rec["replayed"] = {"leaderEpoch": c.leader_epoch, "partitionEpoch": c.partition_epoch}
        self.mrec("PartitionChangeRecord", **rec)
        self._mlog_leader_epoch = c.leader_epoch
        c.leader, c.isr, c.elr, c.lke, c.recovery = leader, new_isr, new_elr, new_lke, new_recovery
        self._publish()
        if new_elr != old_elr:
            self.step(
                "controller_update_elr",
                "controller",
                f"ELR {_fmt_set(old_elr)} -> {_fmt_set(new_elr)} (ISR {_fmt_set(new_isr)} is "
                f"{'below' if len(new_isr) < eff else 'at or above'} min.insync.replicas {eff})",
            )
        if leader_changed:
            if leader == NO_LEADER:
                self.step(
                    "controller_partition_offline",
                    "controller",
                    f"No replica can lead: the partition is OFFLINE (leader -1, epoch {c.leader_epoch}, "
                    f"ISR {_fmt_set(new_isr)}" + (f", ELR {_fmt_set(new_elr)}" if self.cfg.elr else "") + ")"
                    + (
                        "; unclean.leader.election.enable is set, but KRaft controllers before 3.9 ignore it "
                        "(an admin unclean election still works)"
                        if c.unclean and not prof.topic_unclean_config
                        else ""
                    ),
                )
            else:
                kind, detail = {
                    "clean": ("controller_elect_leader", "the first ISR member in assignment order"),
                    "elr": ("controller_elect_leader", "an eligible leader replica (the ISR was empty)"),
                    "last_known": (
                        "controller_elect_last_known_leader",
                        "the last known leader (ISR and ELR empty), marked unclean",
                    ),
                    "unclean": (
                        "controller_elect_unclean",
                        "UNCLEAN: the first live replica in assignment order, not in the ISR",
                    ),
                    "preferred": ("controller_elect_preferred", "the preferred replica"),
                    "largest_leo": (
                        "controller_elect_largest_leo",
                        "PROPOSAL (KIP-250, not Kafka): the ISR member with the largest LEO",
                    ),
                }[how]
                self.step(
                    kind,
                    "controller",
                    f"The controller elects B{leader} leader at epoch {c.leader_epoch}: {detail}; "
                    f"ISR {_fmt_set(new_isr)}" + (", RECOVERING" if new_recovery == "RECOVERING" else "")
                    + ("" if self.kraft else "; it writes both to ZooKeeper and sends LeaderAndIsr"),
                )

    def _broker_heartbeat(self, bid: int, inc: int) -> None:
        br = self.brokers[bid]
        if br.inc != inc or not br.alive:
            return
        if br.registered:
            self.send(bid, "controller", self._ctl_heartbeat, (bid, inc))
        else:
            self.send(bid, "controller", self._ctl_register, (bid, inc, br.clean_shutdown))
        self.at(self.now + self.cfg.heartbeat_ms, self._broker_heartbeat, bid, inc)

    def _ctl_heartbeat(self, bid: int, inc: int) -> None:
        r = self.ctl.reg[bid]
        if inc != r.inc:
            return
        r.last_hb = self.now
        r.hb_count += 1
        self.at(self.now + self.cfg.session_timeout_ms + 1, self._ctl_session_check, bid, r.hb_count)
        if r.fenced and r.registered and not r.shutting:
            r.fenced = False
            self.mrec("BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=r.epoch, fenced=-1)
            self.step(
                "controller_unfence_broker",
                "controller",
                f"The controller unfences B{bid}"
                if self.kraft
                else f"The controller sees B{bid} registered in ZooKeeper again: it is live",
            )
            self._ctl_broker_available(bid)
        if self.brokers[bid].partition_epoch < self.ctl.partition_epoch and bid in self.replicas:
            self._publish(only=bid)

    def _ctl_broker_available(self, bid: int) -> None:
        """handleBrokerUnfenced (RCM 1338-1350): leaderless partitions retry their election."""
        c = self.ctl
        if c.leader == NO_LEADER and bid in self.replicas:
            self._ctl_change(list(c.isr), why="unfence")

    def _ctl_session_check(self, bid: int, hb_count: int) -> None:
        r = self.ctl.reg[bid]
        if r.fenced or r.hb_count != hb_count:
            return
        r.fenced = True
        self.step(
            "controller_fence_broker",
            "controller",
            (
                f"No heartbeat from B{bid} for broker.session.timeout.ms={self.cfg.session_timeout_ms}: "
                f"the controller fences it"
                if self.prof.alter_partition
                else f"B{bid}'s ZooKeeper session expires (after {self.cfg.session_timeout_ms} ms; the "
                f"engine keeps KRaft's timing, zookeeper.session.timeout.ms was 6000 by default): "
                f"the controller sees it gone"
            ),
            broker=bid,
        )
        c = self.ctl
        if bid in c.isr and bid in self.replicas:
            self._ctl_change([x for x in c.isr if x != bid], why="fence", exclude={bid})
        self.mrec("BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=r.epoch, fenced=1)

    def _ctl_register(self, bid: int, inc: int, clean: bool) -> None:
        c = self.ctl
        r = c.reg[bid]
        if inc <= r.inc and r.registered:
            return
        guarded = self.prof.session_guards_reregistration
        live_session = not r.fenced or self.prof.fenced_keeps_session
        if guarded and live_session and self.now - r.last_hb <= self.cfg.session_timeout_ms:
            return  # CCM 363-372: DUPLICATE_BROKER_REGISTRATION while the old session lives; it retries
        r.registered = True
        r.inc = inc
        r.epoch = max(r.epoch + 1, len(self.mlog))
        self.mrec(
            "RegisterBrokerRecord",
            brokerId=bid,
            brokerEpoch=r.epoch,
            rack=self.brokers[bid].rack,
            fenced=True,
        )
        was_fenced = r.fenced
        r.fenced = guarded or was_fenced  # KRaft: a new registration starts fenced until it heartbeats
        r.shutting = False
        r.last_hb = self.now
        r.hb_count += 1
        self.at(self.now + self.cfg.session_timeout_ms + 1, self._ctl_session_check, bid, r.hb_count)
        unclean_restart = self.cfg.elr and not clean
        self.send("controller", bid, self._broker_registered, (bid, inc))
        self.step(
            "controller_register_broker",
            "controller",
            (
                f"B{bid} registers a new incarnation after {'a clean' if clean else 'an unclean'} shutdown"
                if self.kraft
                else f"B{bid} starts a new ZooKeeper session and registers under /brokers/ids/{bid} after "
                f"{'a clean' if clean else 'an unclean'} shutdown"
            )
            + (
                "; it is removed from the ISR and the ELR" if unclean_restart and bid in c.isr + c.elr else ""
            ),
            broker=bid,
        )
        if bid in self.replicas:
            if unclean_restart and (bid in c.isr or bid in c.elr):
                self._ctl_change(
                    [x for x in c.isr if x != bid], why="unclean_restart", exclude={bid}, drop_from_elr=bid
                )
            elif guarded and bid in c.isr and len(c.isr) > 1:
                self._ctl_change([x for x in c.isr if x != bid], why="fence", exclude={bid})
            self._publish(only=bid)

    def _broker_registered(self, bid: int, inc: int) -> None:
        br = self.brokers[bid]
        if br.inc == inc:
            br.registered = True
            br.clean_shutdown = False

    def _ctl_rebalance_tick(self) -> None:
        c = self.ctl
        pref = self.replicas[0]
        if c.leader != pref and c.leader != NO_LEADER and pref in c.isr and self._ctl_acceptable(pref, set()):
            self._ctl_change(list(c.isr), why="preferred", preferred=pref)
        self.at(self.now + self.cfg.rebalance_interval_ms, self._ctl_rebalance_tick)

    def _ctl_unclean_tick(self) -> None:
        c = self.ctl
        if c.leader == NO_LEADER and c.unclean:
            self._ctl_change(list(c.isr), why="periodic_unclean", election="unclean")
        self.at(self.now + self.cfg.unclean_interval_ms, self._ctl_unclean_tick)

    # ---------------------------------------------------------------------------------------
    # brokers applying metadata (makeLeader / makeFollower)

    def _apply_metadata(self, bid: int, meta: dict[str, Any], quiet: bool = False) -> None:
        br = self.brokers[bid]
        if meta["partition_epoch"] < br.partition_epoch or (
            meta["partition_epoch"] == br.partition_epoch and not quiet
        ):
            return
        leader = meta["leader"]
        was_leader = br.role == "leader"
        old_leader = br.leader_id
        new_epoch = meta["leader_epoch"] != br.leader_epoch
        br.partition_epoch = meta["partition_epoch"]
        br.leader_epoch = meta["leader_epoch"]
        br.leader_id = leader
        if leader == bid:
            had_pending = br.pending
            br.isr = list(meta["isr"])
            br.maximal = list(br.isr)
            br.pending = None
            br.pending_isr = []
            if not was_leader or new_epoch:
                self._become_leader(br, meta, was_leader, quiet)
            elif had_pending is not None:
                self.step(
                    "leader_commit_isr",
                    f"broker-{bid}",
                    f"B{bid} learns its ISR change is committed: ISR {_fmt_set(br.isr)}",
                    broker=bid,
                )
            self._maybe_increment_hw(br)
            self._check_purgatory(br)
            return
        if was_leader:
            br.role = "none"
            self._check_purgatory(br)  # P: completeDelayedOperationsWhenNotPartitionLeader
            self._fail_parked_fetches(br)
            br.fstate = {}
        br.isr = list(meta["isr"])
        br.maximal = list(br.isr)
        br.pending = None
        if leader == NO_LEADER:
            br.role = "none"
            br.fetch_gen += 1
            br.fetch_inflight = False
            return
        br.role = "follower"
        become = leader != old_leader or was_leader
        if become:
            if not self.prof.leader_epochs:
                if br.hw < br.leo:
                    self._truncate(
                        br,
                        br.hw,
                        "high_watermark",
                        kind="follower_truncate_to_hw",
                        text=f"Historic rule (before KIP-101): B{bid} cuts its log back to its own "
                        f"HW {br.hw}, deleting {_fmt_records([x[1] for x in br.log[br.hw :]])}",
                    )
            br.fetch_gen += 1
            br.fetch_inflight = False
        self._follower_fetch(bid)  # before the step, so its snapshot shows the first fetch in flight
        if become and not quiet:
            self.step(
                "follower_become",
                f"broker-{bid}",
                f"B{bid} now follows B{leader} (leader epoch {br.leader_epoch})",
                broker=bid,
            )

    def _become_leader(self, br: Broker, meta: dict[str, Any], was_leader: bool, quiet: bool) -> None:
        """Partition.makeLeader (P 733-822)."""
        epoch = meta["leader_epoch"]
        br.role = "leader"
        br.epoch_start = br.leo
        br.answered = set()
        if self.prof.leader_epochs:
            # LEFC.assign: a new leader records (epoch, LEO) even before it writes in the epoch
            br.cache = [c for c in br.cache if c[0] < epoch and c[1] < br.leo] + [[epoch, br.leo]]
        if not was_leader:
            br.fstate = {f: FollowerState(self.now, f in br.isr) for f in self.replicas if f != br.id}
            br.fetch_gen += 1
            br.fetch_inflight = False
        br.last_hold = -1
        if not quiet:
            self.step(
                "leader_become",
                f"broker-{br.id}",
                f"B{br.id} becomes leader at epoch {epoch}; the epoch starts at offset {br.leo}; its HW is "
                f"{br.hw}; it waits for every ISR follower to fetch before the HW can move",
                broker=br.id,
            )
            if self.prof.leader_epochs:
                self.step(
                    "leader_epoch_cache",
                    f"broker-{br.id}",
                    f"B{br.id}'s leader-epoch cache gains epoch {epoch} -> start offset {br.leo}: "
                    f"{_fmt_cache(br.cache)}",
                    broker=br.id,
                )

    # ---------------------------------------------------------------------------------------
    # faults and admin actions

    def slow(self, bid: int, ms: int | None) -> None:
        """A straggler episode starts or ends: each fetch of this follower takes `ms` longer
        (None: back to the broker's configured fetch_delay_ms)."""
        br = self.brokers[bid]
        ms = self.cfg.fetch_delays.get(bid, 0) if ms is None else ms
        br.fetch_delay_ms = ms
        self.step(
            "broker_slow",
            "operator",
            f"B{bid}'s fetches now take {ms} ms longer (a slow disk or network)"
            if ms
            else f"B{bid}'s fetches are back to normal speed",
            broker=bid,
        )

    def writeback(self, bid: int) -> None:
        """The operating system writes a broker's dirty pages to disk on its own (outside Kafka)."""
        br = self.brokers[bid]
        if br.alive and br.flushed < br.leo:
            br.flushed = br.leo
            self.step(
                "broker_flush",
                "operator",
                f"The OS writes B{bid}'s page cache back to disk: flushed up to offset {br.leo}",
                broker=bid,
            )

    def crash(self, bid: int, lose_unflushed: bool, power: bool = False, lose_disk: bool = False) -> None:
        br = self.brokers[bid]
        if not br.alive:
            if power and lose_unflushed and br.leo > br.flushed:
                # The process is gone but the machine was up: its unflushed records were still in
                # the OS page cache, and a power cut takes them (a clean shutdown flushed first).
                lost = br.leo - br.flushed
                self.unsafe_history = True
                self.step(
                    "broker_power_loss",
                    "operator",
                    f"B{bid} is already down, and now its machine loses power; {lost} unflushed "
                    "record(s) in its page cache are gone",
                    broker=bid,
                )
                self._truncate(
                    br,
                    br.flushed,
                    "power_loss",
                    kind="broker_power_loss",
                    text=f"B{bid}'s log now ends at its flushed offset {br.flushed}",
                )
                return
            self._ignored(bid, f"B{bid} is not running, so there is nothing to crash")
            return
        br.status = "crashed"
        br.inc += 1
        br.clean_shutdown = False
        for entry in br.parked:
            if self.linked(bid, "producer"):
                self.at(
                    self.now + NETWORK_DELAY_MS, self._producer_error, entry[0], entry[1], "NETWORK_EXCEPTION"
                )
        br.parked = []
        for fid, (gen, _o, _at, _until) in br.parked_fetch.items():
            if self.linked(bid, fid):
                self.at(self.now + NETWORK_DELAY_MS, self._fetch_failed, fid, self.brokers[fid].inc, gen)
        br.parked_fetch = {}
        kind = "broker_power_loss" if power else "broker_crash"
        lost = br.leo - br.flushed if lose_unflushed else 0
        self.step(
            kind,
            "operator",
            (f"B{bid} loses power" if power else f"B{bid}'s process crashes")
            + (
                f"; {lost} unflushed record(s) in its page cache are gone"
                if lost
                else ("; its page cache survives" if not lose_unflushed else "")
            ),
            broker=bid,
        )
        if lose_disk:
            self.unsafe_history = True
            if br.log:
                self._truncate(
                    br,
                    0,
                    "disk_lost",
                    kind="broker_crash",
                    text=f"B{bid}'s disk is destroyed: its whole log is gone",
                )
            br.cache = []
        elif lose_unflushed:
            self.unsafe_history = True
            if lost:
                self._truncate(
                    br,
                    br.flushed,
                    "power_loss",
                    kind="broker_power_loss",
                    text=f"B{bid}'s log now ends at its flushed offset {br.flushed}",
                )

    def power_loss(self, ids: list[int]) -> None:
        for bid in ids:
            self.crash(bid, True, power=True)

    def _ignored(self, bid: int, why: str) -> None:
        self.step("operator_ignored", "operator", why + "; the action changes nothing", broker=bid)

    def shutdown(self, bid: int) -> None:
        br = self.brokers[bid]
        if not br.alive:
            self._ignored(bid, f"B{bid} is not running, so it cannot shut down")
            return
        self.send(
            bid,
            "controller",
            self._ctl_controlled_shutdown,
            (bid,),
            on_lost=(self._finish_shutdown, bid, br.inc),
        )
        self.step("broker_shutdown", "operator", f"B{bid} begins a controlled shutdown", broker=bid)
        # if the controller cannot be reached, the broker gives up waiting and stops anyway
        self.at(self.now + self.cfg.session_timeout_ms, self._finish_shutdown, bid, br.inc)

    def _ctl_controlled_shutdown(self, bid: int) -> None:
        c = self.ctl
        r = c.reg[bid]
        r.shutting = True
        delay = 0
        if c.leader == bid and bid in self.replicas:
            # §D.6: record the shutdown, move leadership away, and answer SHUTDOWN_NOW only once
            # every active broker has replayed that change (one more hop for them to fetch it)
            self.mrec(
                "BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=r.epoch, inControlledShutdown=1
            )
            self.step(
                "controller_controlled_shutdown",
                "controller",
                f"B{bid} asks to shut down while it leads: the controller marks it in controlled shutdown "
                "and moves leadership away first",
                broker=bid,
            )
            self._ctl_change([x for x in c.isr if x != bid], why="shutdown", exclude={bid})
            delay = NETWORK_DELAY_MS
        # a broker that leads nothing gets SHUTDOWN_NOW at once (BHM 405-432)
        self.at(self.now + delay, self._ctl_shutdown_now, bid, self.brokers[bid].inc)

    def _ctl_shutdown_now(self, bid: int, inc: int) -> None:
        self.send("controller", bid, self._finish_shutdown, (bid, inc))

    def _finish_shutdown(self, bid: int, inc: int) -> None:
        br = self.brokers[bid]
        if br.inc != inc or not br.alive:
            return
        br.flushed = br.leo
        br.status = "shutdown"
        br.inc += 1
        br.clean_shutdown = True
        for entry in br.parked:
            self.at(
                self.now + NETWORK_DELAY_MS, self._producer_error, entry[0], entry[1], "NETWORK_EXCEPTION"
            )
        br.parked = []
        br.parked_fetch = {}
        c = self.ctl
        r = c.reg[bid]
        r.fenced = True
        self.step(
            "broker_shutdown",
            "operator",
            f"B{bid} has flushed its log to offset {br.leo} and stopped (clean shutdown)",
            broker=bid,
        )
        # on SHUTDOWN_NOW the controller writes the fencing records: ISR changes first (RCM 1546-1548)
        if bid in c.isr and bid in self.replicas:
            self._ctl_change([x for x in c.isr if x != bid], why="shutdown", exclude={bid})
        self.mrec("BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=r.epoch, fenced=1)

    def restart(self, bid: int) -> None:
        br = self.brokers[bid]
        if br.alive:
            self._ignored(
                bid,
                f"B{bid} is still running (a controlled shutdown takes a round trip to the "
                "controller), so it cannot restart yet",
            )
            return
        br.status = "running"
        br.inc += 1
        br.hw = min(br.hw, br.leo)  # UL 288-300: the checkpointed HW is clamped to the recovered LEO
        br.cache = [c for c in br.cache if c[1] <= br.leo]
        br.role = "none"
        br.leader_id = NO_LEADER
        br.partition_epoch = -1
        br.leader_epoch = -1
        br.isr, br.maximal, br.pending, br.fstate = [], [], None, {}
        br.parked, br.parked_fetch = [], {}
        br.fetch_inflight = False
        br.fetching = True
        br.registered = False
        self.step(
            "broker_restart",
            "operator",
            f"B{bid} starts and recovers its log: LEO {br.leo}, HW {br.hw}, flushed {br.flushed}",
            broker=bid,
        )
        self.at(self.now, self._broker_heartbeat, bid, br.inc)

    def stop_fetching(self, bid: int, on: bool) -> None:
        br = self.brokers[bid]
        br.fetching = on
        if on:
            self.step("broker_resume_fetching", "operator", f"B{bid} fetches again", broker=bid)
            self._follower_fetch(bid)
        else:
            # a stuck fetcher processes nothing more: the fetch in flight is abandoned too
            br.fetch_gen += 1
            br.fetch_inflight = False
            self.step(
                "broker_stop_fetching",
                "operator",
                f"B{bid} stops fetching (still alive and "
                + ("heartbeating)" if self.kraft else "its ZooKeeper session lives)"),
                broker=bid,
            )

    def isolate(self, bid: int, parties: list[Any] | None, heal: bool) -> None:
        if parties is None:
            parties = ["controller", "producer"] + [b for b in self.brokers if b != bid]
        pairs = {frozenset((bid, p)) for p in parties}
        names = ", ".join(("B" + str(p)) if isinstance(p, int) else p for p in parties)
        if heal:
            self.cut -= pairs
            self.step(
                "network_heal", "operator", f"The network between B{bid} and {names} is restored", broker=bid
            )
            br = self.brokers[bid]
            if br.alive and "controller" in parties and br.pending is not None and br.role == "leader":
                self.send(
                    bid,
                    "controller",
                    self._ctl_alter_partition,
                    (bid, br.leader_epoch, br.partition_epoch, list(br.pending_isr)),
                )
            if br.alive and br.role == "follower" and not br.fetch_inflight:
                self._follower_fetch(bid)
        else:
            self.cut |= pairs
            self.step(
                "network_isolate", "operator", f"The network between B{bid} and {names} is cut", broker=bid
            )

    def set_config(self, key: str, value: Any) -> None:
        c = self.ctl
        self.step("config_set", "operator", f"An operator sets {key}={str(value).lower()}")
        self.mrec("ConfigRecord", resourceType="TOPIC", resourceName="topic", name=key, value=value)
        if key == "unclean.leader.election.enable":
            c.unclean = bool(value)
            # KRaft does not elect at once on this change (TC 166-170); the periodic check or an
            # admin election does. Brokers fenced or unfenced later elect uncleanly at once.
        elif key == "min.insync.replicas":
            c.min_isr = int(value)
            # ref: kafka-semantics.md §3.1. A config change is not a high-watermark trigger: in
            # Partition.scala (commit 1eb7644, 2024) maybeIncrementLeaderHW is called from makeLeader,
            # updateFollowerFetchState, appendRecordsToLeader and the ISR-commit path only, and the
            # broker's TopicConfigHandler.updateLogConfig (ConfigHandler.scala) only swaps the log
            # config. The new value is read at the next of those (and by parked produces when next
            # checked).
            if self.cfg.elr:
                # ref: KAFKA-16540 (PR #18148, 4.0): with ELR on, the controller answers every
                # min.insync.replicas update with a ClearElrRecord for the topic, even one that sets
                # the same value (noted in PR #20237's review; the 4.1 operations docs say so for the
                # cluster default). Replaying it empties eligibleLeaderReplicas and lastKnownElr and
                # changes (bumps the epoch of) only partitions where either was non-empty (KAFKA-18649,
                # PR #18708). A leader applies such a change through makeLeader, which does run
                # maybeIncrementLeaderHW (Partition.scala 822, commit 1eb7644): one hop later.
                self.mrec("ClearElrRecord", topicName="topic")
                if c.elr or c.lke:
                    old_elr, old_lke = list(c.elr), list(c.lke)
                    c.elr, c.lke = [], []
                    c.partition_epoch += 1
                    self._publish()
                    self.step(
                        "controller_update_elr",
                        "controller",
                        f"min.insync.replicas was set, so the controller clears the topic's ELR "
                        f"{_fmt_set(old_elr)} and last known ELR {_fmt_set(old_lke)} (ClearElrRecord; "
                        f"it does so even when the value is unchanged); partition epoch {c.partition_epoch}",
                    )
        elif key == "flush.messages":
            self.flush_messages = value

    def elect(self, kind: str) -> None:
        c = self.ctl
        if kind == "unclean":
            if c.leader != NO_LEADER:
                self.step(
                    "controller_admin_election",
                    "controller",
                    f"Admin unclean election: ELECTION_NOT_NEEDED, B{c.leader} already leads",
                )
                return
            self.step(
                "controller_admin_election",
                "controller",
                "Admin unclean election (kafka-leader-election.sh --election-type unclean)",
            )
            self._ctl_change(list(c.isr), why="admin", election="unclean")
            if c.leader == NO_LEADER:
                self.step(
                    "controller_admin_election",
                    "controller",
                    "ELIGIBLE_LEADERS_NOT_AVAILABLE: no live replica can lead",
                )
        else:
            pref = self.replicas[0]
            if c.leader == pref:
                self.step(
                    "controller_admin_election",
                    "controller",
                    f"Admin preferred election: ELECTION_NOT_NEEDED, B{pref} already leads",
                )
            elif pref in c.isr and self._ctl_acceptable(pref, set()):
                self._ctl_change(list(c.isr), why="preferred", preferred=pref)
            else:
                self.step(
                    "controller_admin_election",
                    "controller",
                    f"Admin preferred election: PREFERRED_LEADER_NOT_AVAILABLE (B{pref} is not a live "
                    "ISR member)",
                )

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
                if f not in _HOUSEKEEPING:
                    return False
        return True

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
        oldest first. Cheap enough for a snapshot per step: the queue holds a few dozen events."""
        deliver = Sim._deliver
        out: list[tuple[int, int, dict[str, Any]]] = []
        for t, seq, owner, fn, d in self.clock.q:
            if owner is self and fn.__func__ is deliver:
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
            if b.outcome is None
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
            },
        }
        if self.part2:
            part["log_start_offset"] = self.log_start
        if self.clients is not None:
            out.update(self.clients.snapshot())
        return out

    def contract_partition(self) -> dict[str, Any]:
        """This partition as the contract's part 2 reports it: the leader's offsets and log."""
        c = self.ctl
        leader = self.brokers.get(c.leader) if c.leader != NO_LEADER else None
        log = leader.log if leader is not None else []
        entries = []
        for off in range(self.log_start, len(log)):
            _epoch, record, bidx = log[off]
            batch = self.batches[bidx] if bidx >= 0 else None
            entries.append(
                {
                    "offset": off,
                    "key": batch.key if batch is not None else None,
                    "record": record,
                    "timestamp_ms": batch.first_send if batch is not None else None,
                    "control": None,
                }
            )
        hw = leader.hw if leader is not None else 0
        return {
            "partition": self.partition,
            "leader": c.leader if c.leader != NO_LEADER else None,
            "hw": hw,
            "leo": len(log),
            "lso": hw,
            "log_start_offset": self.log_start,
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
            if b.outcome == "acked":
                acked.extend(b.records)
        if c.leader != NO_LEADER:
            L = self.brokers[c.leader]
            leader_records = [r for (_e, r, _b) in L.log]
            lost = self.lost_acked(acked)
            visible = leader_records[: L.hw]
            counts: dict[str, int] = {}
            for r in leader_records:
                counts[r] = counts.get(r, 0) + 1
            dups = [r for r, n in counts.items() if n > 1]
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


# Steps about a broker or the operator, which every partition's simulation emits identically; with
# several partitions they are kept once (from partition 0). Steps that carry records are per partition.
# steps of the consumers and the admin client (engine/consumers.py), not of one partition's replicas
CLIENT_KIND_PREFIXES = ("consumer_", "group_", "admin_")
BROKER_LEVEL_KINDS = frozenset(
    {
        "broker_crash",
        "broker_power_loss",
        "broker_shutdown",
        "broker_restart",
        "broker_stop_fetching",
        "broker_resume_fetching",
        "broker_slow",
        "network_isolate",
        "network_heal",
        "config_set",
        "operator_ignored",
        "controller_fence_broker",
        "controller_unfence_broker",
        "controller_register_broker",
        "broker_flush",
    }
)


def run(
    cfg: Config,
    limits: Limits,
    *,
    steps: bool,
    at_step: int | None,
    check_invariants: bool,
    all_views: bool = False,
) -> dict[str, Any]:
    """Run a resolved scenario: every partition's simulation on one clock, then the result."""
    parts = _partition_configs(cfg)
    multi = len(parts) > 1
    clock = Clock(limits, cfg.max_sim_ms)
    used = RunUse()  # one result-size budget for the whole run
    sims = [
        Sim(
            c,
            limits,
            record=steps,
            at_step=at_step,
            check_invariants=check_invariants,
            used=used,
            clock=clock,
            partition=p,
            shares_clock=multi,
        )
        for p, c in enumerate(parts)
    ]
    if all_views:
        for sim in sims:
            sim.views = []
    clients = None
    if cfg.consumers or any(a.do in CLIENT_ACTIONS or getattr(a, "consumer", None) for a in cfg.actions):
        clients = Clients(
            cfg.consumers,
            clock,
            sims,
            topic=cfg.topic_name,
            initial_rebalance_delay_ms=cfg.timing.group_initial_rebalance_delay_ms,
            offsets_partitions=cfg.timing.offsets_topic_num_partitions,
            offsets_retention_ms=cfg.timing.offsets_retention_ms,
        )
        for sim in sims:
            sim.part2 = True
        sims[0].clients = clients
        clock.sims = sims  # part-2 runs may last days: skip the idle stretches
    for sim in sims:
        sim.start()
    action_t_ms = _drive(cfg, clock, sims, clients)
    clock.budget.check()
    for sim in sims:
        sim.now = clock.now
    results = [sim.result() for sim in sims]
    if clients is not None:
        part2 = [sim.contract_partition() for sim in sims]
    # The pending events hold bound methods of the sims, a reference cycle that only a full GC
    # pass would free (a pause inside some later run); dropping them lets refcounting free it now.
    clock.q.clear()
    if not multi:
        out = results[0]
        if steps:
            out["action_t_ms"] = action_t_ms
    else:
        out = _merge_partitions(
            cfg, clock, sims, results, action_t_ms, steps=steps, at_step=at_step, check=check_invariants
        )
    if clients is not None:
        out.update(clients.result())
        if multi:
            for entry, extra in zip(out["partitions"], part2, strict=True):
                entry.update(extra)
        else:
            out["partitions"] = part2
    return out


def _partition_of(action: Any, partitions: int) -> int:
    """KafkaProducer.partition for one produce: the partition it names; else its key's murmur2
    hash over every partition of the topic (partitioner.partition_for_key); a keyless produce goes
    to partition 0 (the sticky partitioner is not modelled yet)."""
    if action.partition is not None:
        return action.partition
    if action.key is not None:
        return partition_for_key(action.key.encode("utf-8"), partitions)
    return 0


def _partition_configs(cfg: Config) -> list[Config]:
    """One configuration per partition: its replicas. Partitions of one topic replicate
    independently; what they share is the brokers and the clock, and the heartbeat phases, which
    come from the same seed, so fencing happens at the same time everywhere."""
    if len(cfg.assignments) <= 1:
        return [cfg]
    return [dataclasses.replace(cfg, replicas=list(asg), assignments=[list(asg)]) for asg in cfg.assignments]


def _drive(cfg: Config, clock: Clock, sims: list[Sim], clients: Clients | None) -> list[int]:
    """Run the scenario's actions in order; returns the simulated time at which each began.

    A produce goes to its partition's simulation; every other action reaches every partition at
    the same millisecond; advance and settle run the one clock."""
    n = len(sims)
    one = sims[0] if n == 1 else None
    produced = 0
    starts: list[int] = []
    for i, a in enumerate(cfg.actions):
        now = clock.now
        for sim in sims:
            sim.action = i
            sim.now = now
        starts.append(now)
        do = a.do
        if do == "produce":
            if one is not None:
                one.produce(a, len(one.batches))
                continue
            if a.records is None:  # name records across the topic, not per partition
                named = [f"m{produced + k}" for k in range(a.count)]
                a = a.model_copy(update={"records": named, "count": None})
            produced += len(a.records)
            sim = sims[_partition_of(a, n)]
            sim.produce(a, len(sim.batches))
        elif do == "advance":
            clock.run_until(now + a.ms)
        elif do == "settle":
            if one is not None:
                done = one.settled_after_failover if a.through_failover else one.settled
            elif a.through_failover:
                def done() -> bool:
                    return all(sim.settled_after_failover() for sim in sims)
            else:
                def done() -> bool:
                    return all(sim.settled() for sim in sims)
            if not done():
                clock.run_until(now + a.max_ms, stop=done)
        elif clients is not None and (do in CLIENT_ACTIONS or getattr(a, "consumer", None) is not None):
            _client_action(clients, a)
        else:
            for sim in sims:
                _apply(sim, cfg, i, a)
            if clock.stale:
                clock.refresh_stale()
    return starts


CLIENT_ACTIONS = frozenset({"subscribe", "assign", "poll", "commit", "seek", "stall", "delete_records"})


def _client_action(clients: Clients, a: Any) -> None:
    """An action of a consumer's application, or the admin client's DeleteRecords."""
    do = a.do
    clients.now = clients.clock.now
    if do == "delete_records":
        clients.delete_records(a.partition, a.offset)
    elif do == "subscribe":
        clients.subscribe(a.consumer)
    elif do == "assign":
        clients.assign(a.consumer, a.partitions)
    elif do == "poll":
        clients.poll(a.consumer, a.max_records, a.timeout_ms)
    elif do == "commit":
        clients.commit(a.consumer, a.offsets, a.async_)
    elif do == "seek":
        clients.seek(a.consumer, a.partition, a.offset)
    elif do == "stall":
        clients.stall(a.consumer, a.ms)
    elif do == "crash":
        clients.crash(a.consumer)
    elif do == "shutdown":
        clients.shutdown(a.consumer)
    elif do == "restart":
        clients.restart(a.consumer)
    else:  # pragma: no cover - the scenario model admits nothing else
        raise ScenarioError([{"path": "actions", "message": f"unknown action {do!r}"}])


def _apply(sim: Sim, cfg: Config, i: int, a: Any) -> None:
    """A fault or operator action, as one partition's simulation sees it."""
    do = a.do
    if do == "crash":
        sim.crash(a.broker, a.lose_unflushed, lose_disk=a.lose_disk)
    elif do == "power_loss":
        ids = a.brokers if a.brokers is not None else [b for b, r in cfg.brokers if r == a.rack]
        sim.power_loss(ids)
    elif do == "shutdown":
        sim.shutdown(a.broker)
    elif do == "restart":
        sim.restart(a.broker)
    elif do in ("stop_fetching", "resume_fetching"):
        sim.stop_fetching(a.broker, do == "resume_fetching")
    elif do in ("isolate", "heal"):
        sim.isolate(a.broker, a.from_, do == "heal")
    elif do == "set":
        sim.set_config(a.key, a.value)
    elif do == "elect":
        sim.elect(a.type)
    elif do == "writeback":
        sim.writeback(a.broker)
    elif do == "slow":
        sim.slow(a.broker, a.ms)
    else:  # pragma: no cover - the scenario model admits nothing else
        raise ScenarioError([{"path": f"actions[{i}].do", "message": f"unknown action {do!r}"}])


def _merged_view(views: list[dict[str, Any]]) -> dict[str, Any]:
    """A several-partition view: partition 0's snapshot, plus every partition's under `partitions`,
    at the time of the latest of them (each partition's snapshot is as of its own latest step)."""
    return {**views[0], "t_ms": max(v["t_ms"] for v in views), "partitions": views}


def _merge_partitions(
    cfg: Config,
    clock: Clock,
    sims: list[Sim],
    results: list[dict[str, Any]],
    action_t_ms: list[int],
    *,
    steps: bool,
    at_step: int | None,
    check: bool,
) -> dict[str, Any]:
    """One result for a several-partition run: steps in the order they happened, each partition's
    own result under `partitions`, the produce list in the scenario's order."""
    step_count = clock.steps
    out_views: list[dict[str, Any]] | None = None
    if sims[0].views is not None:
        # the state after step k: each partition's latest snapshot taken at or before step k
        counts = [0] * len(sims)
        out_views = []
        for k in range(step_count + 1):
            if k == step_count:
                out_views.append(_merged_view([r["final"] for r in results]))
                continue
            for p, sim in enumerate(sims):
                tags = sim.view_steps
                while counts[p] + 1 < len(tags) and tags[counts[p] + 1] <= k:
                    counts[p] += 1
            out_views.append(_merged_view([sim.views[counts[p]] for p, sim in enumerate(sims)]))  # type: ignore[index]
    produce: list[dict[str, Any]] = []
    taken = [0] * len(sims)
    for a in cfg.actions:
        if a.do != "produce":
            continue
        p = _partition_of(a, len(sims))
        produce.append({**results[p]["produce"][taken[p]], "partition": p})
        taken[p] += 1
    first = results[0]
    out: dict[str, Any] = {
        "version": 1,
        "final": first["final"],
        "produce": produce,
        "acked_records": [rec for pr in produce if pr.get("outcome") == "acked" for rec in pr["records"]],
        "lost_acked_records": [x for r in results for x in r["lost_acked_records"]],
        "visible_records": [x for r in results for x in r["visible_records"]],
        "duplicate_records": [x for r in results for x in r["duplicate_records"]],
        "step_count": step_count,
        "profile": first["profile"],
        "proposals": first["proposals"],
        "seed": first["seed"],
        "partitions": [
            {
                "partition": p,
                "replicas": sim.replicas,
                "final": r["final"],
                "view": r.get("view"),
                "acked_records": r["acked_records"],
                "lost_acked_records": r["lost_acked_records"],
                "visible_records": r["visible_records"],
                "duplicate_records": r["duplicate_records"],
            }
            for p, (sim, r) in enumerate(zip(sims, results, strict=True))
        ],
    }
    if steps:
        merged = []
        for p, r in enumerate(results):
            for st in r["steps"]:
                entry = dict(st)
                if "consumer" in st or st["kind"].startswith(CLIENT_KIND_PREFIXES):
                    # the consumers' actor narrates through partition 0; its texts name their
                    # partitions, and `partition_id` says which one a step is about, if any one
                    entry["partition"] = st.get("partition_id")
                    merged.append(entry)
                    continue
                shared = st["kind"] in BROKER_LEVEL_KINDS and "records" not in st
                entry["partition"] = None if shared else p
                if not shared:
                    entry["text"] = f"P{p}: {st['text']}"
                merged.append(entry)
        merged.sort(key=lambda st: st["i"])
        out["steps"] = merged
        out["action_t_ms"] = action_t_ms
    if at_step is not None:
        views = [r["final"] if at_step >= step_count else r["view"] for r in results]
        for part, v in zip(out["partitions"], views, strict=True):
            part["view"] = v
        out["view"] = _merged_view(views)
    if check:
        out["violations"] = [f"partition {p}: {v}" for p, r in enumerate(results) for v in r["violations"]]
    if out_views is not None:
        out["views"] = out_views
    return out
