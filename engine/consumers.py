"""Consumers, their committed offsets and the group coordinator, on the cluster's one clock.

The contract's part 2 (scenario-contract-clients.md) for issue 10: `subscribe`, `assign`, `poll`,
`commit`, `seek`, `stall`, a consumer's crash, restart and `close()`, and the admin
`delete_records`. A consumer reads the leader's log of each partition it owns, up to the high
watermark, from its *position*; what the group has *committed* lives apart, with the coordinator
(engine/offsets.py holds the coordinator's rules). Every call that goes over the network takes
one network hop each way, while the cluster keeps running on the same clock.

What is not modelled yet (issue 12): groups with several members and rebalancing (a second
member of a group is refused with a clear problem), the coordinator's own `__consumer_offsets`
replicas (the coordinator is the first running broker of the offsets partition's stripe, and
moving it is instant), `max.poll.interval.ms`, transactions and `read_committed`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import transactions as txn
from .clients_spec import BY_DURATION, ConsumerConfig
from .offsets import NO_OFFSET, Commit, Coordinator, Group, coordinator_of, offsets_partition_for
from .results import ClientsResult, GroupResult
from .scenario import problem
from .segments import reset_timestamp

if TYPE_CHECKING:
    from .sim import Clock, Sim

HOP_MS = 1  # one network hop, as NETWORK_DELAY_MS in the replication engine
OFFSETS_RETENTION_CHECK_MS = 600_000  # offsets.retention.check.interval.ms
FETCH_MAX_WAIT_MS = 500  # fetch.max.wait.ms: how long a broker holds an empty fetch
# request.timeout.ms, the consumer's default (ConsumerConfig 573-578 on the 4.0 branch): also how
# long a reset waits before it sends ListOffsets again for a partition that got no offset
REQUEST_TIMEOUT_MS = 30_000


@dataclass
class ConsumerProc:
    """One consumer process: what `SubscriptionState` and `ConsumerCoordinator` hold."""

    spec: ConsumerConfig
    alive: bool = False
    status: str = "idle"  # "idle" (never started) | "running" | "crashed" | "closed"
    mode: str | None = None  # "subscribe" | "assign" | None (neither yet)
    incarnation: int = 0  # bumps on every start and stop: stale timers check it
    member_id: str | None = None
    generation: int = -1
    join_ready_ms: int | None = None  # when the coordinator completes the JoinGroup it sent
    assigned: list[int] = field(default_factory=list)
    position: dict[int, int] = field(default_factory=dict)  # the next offset poll() returns
    # partitions whose by_duration reset got no offset (AWAIT_RESET in SubscriptionState), each
    # with the time the client may send its next ListOffsets for it
    awaiting_reset: dict[int, int] = field(default_factory=dict)
    next_auto_commit_ms: int = 0
    loop_inc: int = -1  # the incarnation whose poll loop is running (loop_ms)
    received: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def group(self) -> str | None:
        return self.spec.group_id


class Clients:
    """Every consumer of the scenario and the coordinator of their groups."""

    def __init__(
        self,
        consumers: tuple[ConsumerConfig, ...],
        clock: Clock,
        sims: list[Sim],
        *,
        topic: str,
        initial_rebalance_delay_ms: int,
        offsets_partitions: int,
        offsets_retention_ms: int,
    ) -> None:
        self.clock = clock
        self.sims = sims
        self.now = 0  # the clock sets it when one of this actor's events runs
        self.topic = topic
        self.initial_delay_ms = initial_rebalance_delay_ms
        self.offsets_partitions = offsets_partitions
        self.coordinator = Coordinator(retention_ms=offsets_retention_ms)
        self.consumers = {c.id: ConsumerProc(c) for c in consumers}
        self.polls: list[dict[str, Any]] = []
        self.commits: list[dict[str, Any]] = []
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.member_owner: dict[str, str] = {}  # member id -> consumer id
        self.expiry: dict[str, int] = {}  # a crashed member id -> when its session times out
        self.cleanup_at: int | None = None  # the queued offsets-expiry check that can expire something
        self.in_tick = False  # a poll loop's tick is running (see run_to)
        self.brokers = sorted(sims[0].brokers)

    # ---------------------------------------------------------------------------------------
    # plumbing: the clock, steps, the partitions' leaders

    def at(self, t: int, fn: Any, *args: Any) -> None:
        clock = self.clock
        heapq.heappush(clock.q, (t, clock.tick(), self, fn, args))

    def run_to(self, t: int, stop: Any = None) -> None:
        """The application waits (inside a blocking call) while the cluster runs until t. Inside a
        poll loop's tick (an event of the clock) nothing can wait: the call's network hops take no
        simulated time, a simplification of milliseconds against the loop's period."""
        if self.in_tick:
            return
        if t > self.clock.now:
            self.clock.run_until(t, stop)
        self.now = self.clock.now

    def step(self, kind: str, actor: str, text: str, **extra: Any) -> None:
        narrator = self.sims[0]
        narrator.now = self.clock.now
        narrator.step(kind, actor, text, **extra)

    def read_view(self, p: int) -> tuple[int, int, int, list[Any]] | None:
        """(log start offset, HW, LEO, log) of partition p's leader, or None with no leader."""
        sim = self.sims[p]
        lid = sim.ctl.leader
        leader = sim.brokers.get(lid)
        if leader is None or not leader.alive or leader.role != "leader":
            return None
        return sim.log_start_offset(), leader.hw, leader.leo, leader.log

    def coordinator_broker(self, group: str) -> int | None:
        """The leader of the group's `__consumer_offsets` partition (GroupCoordinatorService
        .partitionFor): here the first running broker of that partition's stripe."""
        brokers = self.sims[0].brokers
        return coordinator_of(group, self.brokers, lambda b: brokers[b].alive, self.offsets_partitions)

    # ---------------------------------------------------------------------------------------
    # the application's calls

    def subscribe(self, cid: str) -> None:
        c = self.consumers[cid]
        self._start(c)
        c.mode = "subscribe"
        self._start_loop(c)
        where = f"group {c.group!r}" if c.group else "no group.id: poll() will fail"
        self.step("consumer_subscribe", cid, f"{cid} subscribes to {self.topic} ({where})", consumer=cid)

    def assign(self, cid: str, partitions: list[int]) -> None:
        c = self.consumers[cid]
        self._start(c)
        c.mode = "assign"
        self._start_loop(c)
        c.assigned = sorted(set(partitions))
        c.position = {p: c.position[p] for p in c.assigned if p in c.position}
        c.awaiting_reset = {p: t for p, t in c.awaiting_reset.items() if p in c.assigned}
        names = ", ".join(f"P{p}" for p in c.assigned) or "nothing"
        self.step("consumer_assign", cid, f"{cid} assigns itself {names} (no group membership)", consumer=cid)

    def poll(self, cid: str, max_records: int | None, timeout_ms: int) -> None:
        c = self.consumers[cid]
        entry: dict[str, Any] = {"consumer": cid, "records": [], "error": None}
        self.polls.append(entry)
        self._poll(c, entry, max_records, self.clock.now + timeout_ms, explicit=True)

    def _poll(
        self,
        c: ConsumerProc,
        entry: dict[str, Any],
        max_records: int | None,
        deadline: int,
        *,
        explicit: bool = False,
    ) -> None:
        """One KafkaConsumer.poll(): membership, positions, auto-commit, then a fetch that waits
        (the cluster running) until records arrive or the deadline passes. A `poll` action that
        returns nothing says so in one step, with the reason (`explicit`); a poll loop's tick that
        finds nothing stays silent, or idle loops would flood the steps."""
        cid = c.id
        started = self.clock.now
        if not c.alive or c.mode is None:
            entry["error"] = "IllegalStateException"
            why = "is not running" if not c.alive else "has neither subscribed nor assigned partitions"
            self._error(c, entry["error"], f"{cid}.poll() throws: the consumer {why}")
            return
        if c.mode == "subscribe" and c.member_id is None:
            if c.group is None:
                entry["error"] = "InvalidGroupIdException"
                self._error(c, entry["error"], f"{cid}.poll() throws: subscribe() needs a group.id")
                return
            if not self._join(c, deadline):
                self.run_to(deadline)
                if explicit:
                    self._empty_poll(c, started)
                return
        if any(self._initializing(c, p) for p in c.assigned):
            error = self._init_positions(c)
            if error is not None:
                entry["error"] = error
                return
        self._maybe_auto_commit(c)
        limit = max_records or c.spec.max_poll_records
        while True:
            self._retry_resets(c)
            self.run_to(self.clock.now + HOP_MS)  # the fetch reaches the leaders
            got, error = self._fetch(c, limit)
            if error is not None:
                entry["error"] = error
                return
            if got:
                self.run_to(self.clock.now + HOP_MS)  # and the records come back
                self._deliver(c, got, entry)
                return
            if self.clock.now < deadline:
                # the brokers hold an empty fetch until data arrives or fetch.max.wait.ms passes;
                # the client wakes earlier when a reset may send its ListOffsets again
                now = self.clock.now
                retry = [t for t in c.awaiting_reset.values() if t > now]
                wait_until = min(deadline, now + FETCH_MAX_WAIT_MS, *retry)
                self.run_to(wait_until, stop=lambda c=c: self._has_data(c))
            if self.clock.now >= deadline:
                if explicit:
                    self._empty_poll(c, started)
                return

    def commit(self, cid: str, offsets: dict[str, int] | None, is_async: bool) -> None:
        c = self.consumers[cid]
        chosen = {int(k): v for k, v in offsets.items()} if offsets is not None else dict(c.position)
        entry: dict[str, Any] = {"consumer": cid, "offsets": _keyed(chosen), "outcome": "ok", "error": None}
        self.commits.append(entry)
        if not c.alive:
            entry.update(outcome="error", error="IllegalStateException")
            self._error(c, "IllegalStateException", f"{cid}.commit fails: the consumer is not running")
            return
        if c.group is None:
            entry.update(outcome="error", error="InvalidGroupIdException")
            self._error(c, "InvalidGroupIdException", f"{cid} cannot commit: it has no group.id")
            return
        error = self._send_commit(
            c, chosen, wait=not is_async, why="commitAsync" if is_async else "commitSync"
        )
        if error is not None:
            entry.update(outcome="error", error=error)

    def seek(self, cid: str, partition: int, offset: int | str) -> None:
        c = self.consumers[cid]
        if not c.alive or partition not in c.assigned:
            self._error(
                c,
                "IllegalStateException",
                f"{cid}.seek() throws: P{partition} is not assigned to this consumer",
            )
            return
        view = self.read_view(partition)
        if offset == "beginning" or offset == "end":
            if view is None:
                self._error(c, "LEADER_NOT_AVAILABLE", f"{cid} cannot look up the {offset} of P{partition}")
                return
            self.run_to(self.clock.now + 2 * HOP_MS)  # ListOffsets to the leader and back
            view = self.read_view(partition) or view
            target = view[0] if offset == "beginning" else view[1]
        else:
            target = int(offset)
        before = c.position.get(partition)
        c.position[partition] = target
        c.awaiting_reset.pop(partition, None)  # a seek ends a pending reset (SubscriptionState.seek)
        was = "" if before is None else f" (was {before})"
        self.step(
            "consumer_seek",
            cid,
            f"{cid} seeks P{partition} to offset {target}{was}",
            consumer=cid,
            partition_id=partition,
        )

    def stall(self, cid: str, ms: int) -> None:
        # the application is busy: no poll(), while the heartbeat thread keeps the membership
        self.run_to(self.clock.now + ms)

    def crash(self, cid: str) -> None:
        c = self.consumers[cid]
        if not c.alive:
            return
        member = c.member_id
        self._stop(c)
        c.status = "crashed"
        self.step(
            "consumer_crash",
            cid,
            f"{cid}'s process dies: no commit, no LeaveGroup; its position is gone",
            consumer=cid,
        )
        if member is not None:
            self.expiry[member] = self.clock.now + c.spec.session_timeout_ms
            self.at(self.expiry[member], self._session_expired, cid, member)

    def shutdown(self, cid: str) -> None:
        c = self.consumers[cid]
        if not c.alive:
            return
        if c.group is not None and c.spec.enable_auto_commit and c.position:
            self._send_commit(c, dict(c.position), wait=True, why="close() auto-commit")
        member = c.member_id
        self._stop(c)
        c.status = "closed"
        left = ""
        if member is not None and c.group is not None:
            self._leave(c.group, member)
            left = f"; it leaves group {c.group!r}"
        self.step("consumer_close", cid, f"{cid}.close(){left}", consumer=cid)

    def restart(self, cid: str) -> None:
        c = self.consumers[cid]
        if c.alive:
            return
        self._start(c)
        self._start_loop(c)
        self.step(
            "consumer_restart", cid, f"{cid} starts again: a new process, no position yet", consumer=cid
        )

    def delete_records(self, partition: int, offset: int) -> None:
        """The admin client's deleteRecords, answered by the partition's leader."""
        sim = self.sims[partition]
        before = sim.log_start_offset()
        self.run_to(self.clock.now + HOP_MS)
        low, error = sim.delete_records(offset)
        self.run_to(self.clock.now + HOP_MS)
        upto = "the HW" if offset == -1 else str(offset)
        if error is not None:
            text = f"DeleteRecords(P{partition}, before {upto}) fails with {error}"
        else:
            text = f"DeleteRecords moves P{partition}'s log start offset {before} -> {low}"
        self.step("admin_delete_records", "admin", text, partition_id=partition)

    # ---------------------------------------------------------------------------------------
    # the poll loop (loop_ms): the application calls poll() every loop_ms while it runs

    def _start_loop(self, c: ConsumerProc) -> None:
        if c.spec.loop_ms is not None and c.mode is not None and c.loop_inc != c.incarnation:
            c.loop_inc = c.incarnation
            self.at(self.clock.now, self._loop_tick, c.id, c.incarnation)

    def _loop_tick(self, cid: str, incarnation: int) -> None:
        c = self.consumers[cid]
        if not c.alive or c.incarnation != incarnation:
            return
        self.in_tick = True
        try:
            self._poll(c, {"consumer": cid, "records": [], "error": None}, None, self.clock.now)
        finally:
            self.in_tick = False
        self.at(self.clock.now + c.spec.loop_ms, self._loop_tick, cid, incarnation)  # type: ignore[operator]

    def quiet_for_skip(self) -> bool:
        """True when every poll loop would only find nothing (Clock.skip_idle): each looping consumer
        has its partitions and positions, and its auto-commits change nothing that matters (off, or
        a live classic group, whose offsets never expire and whose commits repeat the same offsets)."""
        for c in self.consumers.values():
            if c.spec.loop_ms is None or not c.alive or c.mode is None:
                continue
            if c.mode == "subscribe" and c.member_id is None:
                return False
            # a partition whose by_duration reset found nothing would find nothing again in a
            # quiet stretch: the time asked for only moves later, and no record arrives
            if any(self._initializing(c, p) for p in c.assigned) or self._has_data(c):
                return False
            if c.spec.enable_auto_commit and c.group is not None:
                if c.mode != "subscribe" or self._committed(c.group) != _keyed(c.position):
                    return False
        return True

    def moved_args(self, fn: Any, args: tuple[Any, ...], delta: int) -> tuple[Any, ...]:
        return args  # a poll loop's tick carries no time

    def shift_clocks(self, delta: int) -> None:
        """Move the poll loops' timers with an idle skip (Clock.skip_idle)."""
        for c in self.consumers.values():
            c.next_auto_commit_ms += delta
            c.awaiting_reset = {p: t + delta for p, t in c.awaiting_reset.items()}

    # ---------------------------------------------------------------------------------------
    # inside poll()

    def _join(self, c: ConsumerProc, deadline: int) -> bool:
        """JoinGroup and SyncGroup, as far as the deadline allows; True once the member has its
        partitions. A new (Empty) group waits group.initial.rebalance.delay.ms before it completes
        its first join, so that more members can arrive; a group that still lists a crashed member
        waits until the coordinator drops it (session.timeout.ms after its last heartbeat)."""
        group = self.coordinator.groups.get(c.group)  # type: ignore[arg-type]
        gone = []
        if group is not None and group.protocol == "classic":
            for m in group.members:
                owner = self.consumers[self.member_owner[m]]
                if owner.alive and owner.member_id == m:
                    raise problem(
                        "consumers",
                        f"group {c.group!r} already has a live member: several members and "
                        "rebalancing are not simulated yet (issue 12)",
                    )
                gone.append(self.expiry[m])
        if self.coordinator_broker(c.group) is None:  # type: ignore[arg-type]
            return False
        if c.join_ready_ms is None:
            if gone:
                c.join_ready_ms = max(max(gone), self.clock.now + HOP_MS) + HOP_MS
            else:
                c.join_ready_ms = self.clock.now + HOP_MS + self.initial_delay_ms + HOP_MS
        if c.join_ready_ms > deadline:
            return False
        self.run_to(c.join_ready_ms)
        self.run_to(self.clock.now + 2 * HOP_MS)  # SyncGroup: the leader's assignment comes back
        g = self.coordinator.groups.get(c.group)  # type: ignore[arg-type]
        if g is None:
            g = self.coordinator.groups[c.group] = Group(c.group, state_since_ms=self.clock.now)  # type: ignore[arg-type,index]
        g.protocol = "classic"
        g.generation += 1
        g.members = {self._member_id(c)}
        g.subscribed = {self.topic}
        g.set_state("Stable", self.clock.now)
        c.member_id = self._member_id(c)
        c.generation = g.generation
        c.join_ready_ms = None
        c.assigned = list(range(len(self.sims)))
        c.position = {}
        c.awaiting_reset = {}
        c.next_auto_commit_ms = self.clock.now + c.spec.auto_commit_interval_ms
        self.history.setdefault(c.group, []).append(  # type: ignore[arg-type]
            {"generation": g.generation, "t_ms": self.clock.now, "assignment": {c.id: list(c.assigned)}}
        )
        names = ", ".join(f"P{p}" for p in c.assigned)
        self.step(
            "consumer_join",
            c.id,
            f"Group {c.group!r} generation {g.generation}: {c.id} owns {names}",
            consumer=c.id,
        )
        return True

    def _member_id(self, c: ConsumerProc) -> str:
        """Derived from the consumer's id, so members sort as their ids do (the contract's rule)."""
        member = f"{c.id}-{c.incarnation}"
        self.member_owner[member] = c.id
        return member

    def _init_positions(self, c: ConsumerProc) -> str | None:
        """OffsetFetch for a group member, then auto.offset.reset for partitions without one."""
        missing = [p for p in c.assigned if self._initializing(c, p)]
        committed: dict[int, int] = {}
        txns = self.sims[0].txn
        if c.group is not None and txns is not None and not txns.offsets_stable(c.id, c.group, missing):
            return None  # KIP-447: UNSTABLE_OFFSET_COMMIT; no position yet, the next poll asks again
        if c.group is not None:
            self.run_to(self.clock.now + 2 * HOP_MS)
            committed = {p: self.coordinator.fetch(c.group, (self.topic, p)) for p in missing}
            found = {p: o for p, o in committed.items() if o != NO_OFFSET}
            for p, o in found.items():
                c.position[p] = o
            said = ", ".join(f"P{p} {o}" for p, o in found.items()) or "none"
            self.step(
                "consumer_fetch_offsets",
                c.id,
                f"{c.id} fetches the committed offsets of group {c.group!r}: {said}",
                consumer=c.id,
            )
        for p in missing:
            if p in c.position:
                continue
            error = self._reset(c, p, f"no committed offset for P{p}", "NoOffsetForPartitionException")
            if error is not None:
                return error
        return None

    @staticmethod
    def _initializing(c: ConsumerProc, p: int) -> bool:
        """p has no position and no reset pending: poll() looks up its committed offset first."""
        return p not in c.position and p not in c.awaiting_reset

    def _reset(self, c: ConsumerProc, p: int, why: str, error: str) -> str | None:
        """auto.offset.reset for partition p; with `none`, poll() throws `error` instead.

        The client sends ListOffsets with `segments.reset_timestamp` (EARLIEST, LATEST, or for
        `by_duration:D` now minus D) and the leader answers with `SegmentedLog.list_offsets`.

        A by-time lookup can have no answer: no record at or after the time (or the first one is
        at or past the high watermark), and the broker answers offset -1 (ReplicaManager.scala
        1435-1456, KafkaApis.scala 754-760). Kafka 4.0's consumer then does not fall back to
        `latest` or to the log end: it leaves the partition without a position, awaiting reset
        (OffsetFetcherUtils.handleListOffsetResponse keeps only offsets other than -1, lines
        113-124; onSuccessfulResponseForResettingPositions seeks only those, 305-321), so poll()
        returns nothing from it; the send set the next allowed try to now + request.timeout.ms
        (OffsetFetcher.java 221, SubscriptionState.partitionsNeedingReset 856-858), and the next
        try asks with a new now minus D, so it lands on the first record that arrives meanwhile.
        Files at the 4.0 branch, 4ae6814, the code 4.0.0 shipped: clients/.../consumer/internals/
        and core/src/main/scala/kafka/server/. The first miss is a step; the quiet retries are not.
        """
        spec = c.spec
        policy = spec.auto_offset_reset
        if policy == "none":
            self._error(
                c, error, f"{c.id}.poll() throws {error}: {why} and auto.offset.reset=none", partition=p
            )
            return error
        if self.read_view(p) is None:
            return None  # retried at the next poll, once the partition has a leader
        timestamp = reset_timestamp(policy, self.clock.now, spec.reset_duration_ns)
        sent = self.clock.now
        self.run_to(self.clock.now + 2 * HOP_MS)  # ListOffsets to the leader and back
        answer = self.sims[p].list_offsets(timestamp, spec.isolation_level)
        if answer is None:
            return None  # the leader went away meanwhile: retried at the next poll
        duration = policy[len(BY_DURATION) + 1 :] if spec.reset_duration_ns is not None else ""
        asked = f"the first offset with a timestamp at or after {timestamp} (now minus {duration})"
        if answer.offset < 0:  # by_duration only: EARLIEST and LATEST always have an answer
            first_miss = p not in c.awaiting_reset
            c.awaiting_reset[p] = sent + REQUEST_TIMEOUT_MS
            if first_miss:
                view = self.read_view(p)
                hw = f" {view[1]}" if view is not None else ""
                self.step(
                    "consumer_reset_offset",
                    c.id,
                    f"{c.id}: {why}; auto.offset.reset={policy} asks P{p}'s leader for {asked}: there "
                    f"is none below the high watermark{hw}, so P{p} gets no position and {c.id} asks "
                    f"again every request.timeout.ms ({REQUEST_TIMEOUT_MS} ms)",
                    consumer=c.id,
                    partition_id=p,
                    offset=None,
                    policy=policy,
                )
            return None
        c.awaiting_reset.pop(p, None)
        target = answer.offset
        c.position[p] = target
        where = {"earliest": "the log start offset", "latest": "the high watermark"}.get(policy, asked)
        self.step(
            "consumer_reset_offset",
            c.id,
            f"{c.id}: {why}; auto.offset.reset={policy} puts P{p}'s position at {where}, {target}",
            consumer=c.id,
            partition_id=p,
            offset=target,
            policy=policy,
        )
        return None

    def _retry_resets(self, c: ConsumerProc) -> None:
        """Send ListOffsets again for the partitions whose by_duration reset found nothing, once
        their retry time has come (SubscriptionState.partitionsNeedingReset skips them until then)."""
        now = self.clock.now
        for p in [p for p, t in c.awaiting_reset.items() if t <= now]:
            self._reset(c, p, f"P{p} still has no position", "NoOffsetForPartitionException")

    def _maybe_auto_commit(self, c: ConsumerProc) -> None:
        if c.group is None or not c.spec.enable_auto_commit or self.clock.now < c.next_auto_commit_ms:
            return
        c.next_auto_commit_ms = self.clock.now + c.spec.auto_commit_interval_ms
        if c.position:
            self._send_commit(c, dict(c.position), wait=False, why="auto-commit")

    def _fetch(self, c: ConsumerProc, limit: int) -> tuple[list[tuple[int, int, Any]], str | None]:
        """What the leaders answer: (partition, offset, log entry) up to `limit`, or an error."""
        got: list[tuple[int, int, Any]] = []
        for p in c.assigned:
            if len(got) >= limit or p not in c.position:
                continue
            view = self.read_view(p)
            if view is None:
                continue
            log_start, hw, leo, log = view
            pos = c.position[p]
            if pos < log_start or pos > leo:
                side = f"below the log start offset {log_start}" if pos < log_start else f"past the LEO {leo}"
                self.step(
                    "consumer_out_of_range",
                    c.id,
                    f"{c.id}'s fetch of P{p} at offset {pos} gets OFFSET_OUT_OF_RANGE: {side}",
                    consumer=c.id,
                    partition_id=p,
                )
                c.position.pop(p)
                error = self._reset(c, p, f"offset {pos} is out of range", "OFFSET_OUT_OF_RANGE")
                if error is not None:
                    return [], error
                continue
            sim = self.sims[p]
            gone = sim.cleaned_away()
            if gone:  # a compacted log: the cleaner's gaps are skipped, the position moves past them
                self._fetch_compacted(c, p, pos, hw, log, gone, limit - len(got), got)
                continue
            if not sim.has_txn:
                end = min(hw, pos + limit - len(got))
                got.extend((p, off, log[off]) for off in range(pos, end))
                continue
            # transactions (engine/transactions.py): read_committed stops at the LSO; control
            # records, and aborted ones under read_committed, never reach the application
            isolation = c.spec.isolation_level
            bound = txn.fetch_bound(sim, isolation)
            assert bound is not None
            records, nxt, dropped = txn.read(sim, pos, bound, limit - len(got), isolation)
            got.extend((p, off, entry) for off, entry in records)
            if dropped:
                c.position[p] = nxt
                self.step(
                    "consumer_skip_txn_records",
                    c.id,
                    f"{c.id}'s fetch of P{p} gets {txn.describe_dropped(sim, dropped)}: the client drops "
                    f"{'them' if len(dropped) != 1 else 'it'} and its position moves past",
                    consumer=c.id,
                    partition_id=p,
                )
            if isolation == "read_committed" and nxt >= bound and bound < hw and sim.txn is not None:
                sim.txn.tell_held(c.id, p, bound, hw)
        return got, None

    def _fetch_compacted(self, c: ConsumerProc, p: int, pos: int, hw: int, log: list[Any], gone: set[int],
                         room: int, got: list[tuple[int, int, Any]]) -> None:
        """A fetch from a cleaned log: the records that survived, from `pos` up to the HW. When
        only removed offsets are left below the HW, the position moves to the HW, as the client's
        does past a batch the cleaner emptied."""
        n = 0
        off = pos
        while off < hw and n < room:
            if off not in gone:
                got.append((p, off, log[off]))
                n += 1
            off += 1
        if n == 0 and off >= hw:
            c.position[p] = hw

    def _has_data(self, c: ConsumerProc) -> bool:
        for p in c.assigned:
            view = self.read_view(p)
            if view is not None and p in c.position and view[1] > c.position[p]:
                sim = self.sims[p]
                if not sim.has_txn or c.spec.isolation_level != "read_committed":
                    return True
                bound = txn.fetch_bound(sim, "read_committed")  # the LSO
                if bound is not None and bound > c.position[p]:
                    return True
        return False

    def _empty_poll(self, c: ConsumerProc, started: int) -> None:
        """One step for a `poll` action that returns no records, with why, from the state now."""
        self.step(
            "consumer_poll_empty",
            c.id,
            f"{c.id}.poll() returns nothing after its {self.clock.now - started} ms timeout: "
            f"{self._why_empty(c)}",
            consumer=c.id,
        )

    def _why_empty(self, c: ConsumerProc) -> str:
        if c.mode == "subscribe" and c.member_id is None:
            g = c.group
            if self.coordinator_broker(g) is None:  # type: ignore[arg-type]
                return f"it cannot join group {g!r}: no running broker can coordinate it"
            group = self.coordinator.groups.get(g)  # type: ignore[arg-type]
            if group is not None and group.members:
                wait = "the coordinator still waits for a crashed member's session to time out"
            else:
                wait = (
                    f"a new group waits group.initial.rebalance.delay.ms ({self.initial_delay_ms} ms) "
                    "for more members"
                )
            at = f", at {c.join_ready_ms} ms" if c.join_ready_ms is not None else ""
            return f"it is still joining group {g!r} and has no partitions yet ({wait}{at})"
        if not c.assigned:
            return "no partitions are assigned to it"
        caught_up: list[str] = []
        others: list[str] = []
        for p in c.assigned:
            view = self.read_view(p)
            if p in c.awaiting_reset:
                others.append(
                    f"P{p} has no position: auto.offset.reset={c.spec.auto_offset_reset} found no record "
                    "that recent below the high watermark"
                )
            elif p not in c.position and c.group and txn.pending_offsets(self.sims[0], c.group, p):
                others.append(f"P{p} has no position yet: a transaction holds pending offsets for it")
            elif p not in c.position:
                others.append(f"P{p} has no position yet: it had no leader to ask")
            elif view is None:
                others.append(f"P{p} has no leader to fetch from")
            else:
                _start, hw, leo, _log = view
                pos = c.position[p]
                lso = txn.fetch_bound(self.sims[p], c.spec.isolation_level) if self.sims[p].has_txn else hw
                if lso is not None and lso < hw and pos >= lso:
                    others.append(
                        f"P{p} is held at the last stable offset {lso}: read_committed reads nothing past "
                        f"an open transaction's first record (HW {hw})"
                    )
                elif pos < hw:
                    others.append(f"P{p}'s records from {pos} became readable only as the timeout ran out")
                elif leo > hw:
                    others.append(
                        f"P{p} is caught up at the high watermark {hw}; offsets {hw}-{leo - 1} are "
                        "written but not yet on every in-sync replica, so not readable"
                    )
                else:
                    caught_up.append(f"P{p} at {hw}")
        if caught_up:
            others.insert(0, f"caught up at the high watermark ({', '.join(caught_up)})")
        return "; ".join(others)

    def _deliver(self, c: ConsumerProc, got: list[tuple[int, int, Any]], entry: dict[str, Any]) -> None:
        for p, off, (_epoch, record, bidx) in got:
            batch = self.sims[p].batches[bidx] if bidx >= 0 else None
            rec = {"partition": p, "offset": off, "key": batch.key if batch else None, "record": record}
            entry["records"].append(rec)
            c.received.append({"partition": p, "offset": off, "record": record})
            c.position[p] = max(c.position.get(p, 0), off + 1)  # a fetch may have moved it past markers
        narrator = self.sims[0]
        if narrator.quiet:  # nothing reads the step's text: count it, as step() would
            narrator.now = self.clock.now
            narrator.count_step()
            return
        n = len(got)
        shown = [f"P{p}:{off} {'a tombstone' if rec is None else rec}" for p, off, (_e, rec, _b) in got[:6]]
        listed = ", ".join(shown) + (f", ... ({n} records)" if n > 6 else "")
        moved = ", ".join(f"P{p} -> {c.position[p]}" for p in sorted({g[0] for g in got}))
        self.step(
            "consumer_poll",
            c.id,
            f"{c.id}.poll() returns {listed}; position {moved}",
            consumer=c.id,
            records=[g[2][1] for g in got],
            got=[[p, off] for p, off, _entry in got],
        )

    # ---------------------------------------------------------------------------------------
    # the coordinator's side

    def _send_commit(self, c: ConsumerProc, offsets: dict[int, int], *, wait: bool, why: str) -> str | None:
        coordinator = self.coordinator_broker(c.group)  # type: ignore[arg-type]
        if coordinator is None:
            self._error(c, "COORDINATOR_NOT_AVAILABLE", f"{c.id}'s {why} fails: no coordinator is running")
            return "COORDINATOR_NOT_AVAILABLE"
        self.run_to(self.clock.now + HOP_MS)
        tps = {(self.topic, p): o for p, o in offsets.items()}
        if c.mode == "subscribe" and c.member_id is not None:
            error = self.coordinator.commit(
                c.group,
                tps,
                self.clock.now,
                member=c.member_id,  # type: ignore[arg-type]
                generation=c.generation,
            )
        else:
            error = self.coordinator.commit(c.group, tps, self.clock.now)  # type: ignore[arg-type]
        said = ", ".join(f"P{p} {o}" for p, o in sorted(offsets.items())) or "nothing"
        self._schedule_offsets_cleanup()
        if error is None:
            if offsets:
                text = (
                    f"{c.id}'s {why} stores offsets {said} for group {c.group!r} "
                    f"(the next offsets to read) on coordinator B{coordinator}"
                )
            else:  # no position yet (nothing fetched): the commit carries no offset at all
                text = f"{c.id}'s {why} has no position to store: group {c.group!r} commits nothing"
            self.step("consumer_commit", c.id, text, consumer=c.id)
        else:
            self._error(c, error, f"{c.id}'s {why} of {said} fails: {error}")
        if wait:
            self.run_to(self.clock.now + HOP_MS)
        return error

    def _session_expired(self, cid: str, member: str) -> None:
        c = self.consumers[cid]
        g = self.coordinator.groups.get(c.group) if c.group else None
        if g is None or member not in g.members:
            return
        self._leave(c.group, member)  # type: ignore[arg-type]
        self.step(
            "group_member_expired",
            "coordinator",
            f"No heartbeat from member {member} ({cid}'s crashed process) for "
            f"session.timeout.ms={c.spec.session_timeout_ms}: the coordinator removes it; group "
            f"{c.group!r} is {g.state}",
            consumer=cid,
        )

    def _leave(self, group_id: str, member: str) -> None:
        g = self.coordinator.groups[group_id]
        g.members.discard(member)
        if not g.members:
            g.set_state("Empty", self.clock.now)
            self._schedule_offsets_cleanup()

    def _schedule_offsets_cleanup(self) -> None:
        """Queue the first offsets-retention check (every offsets.retention.check.interval.ms,
        10 min, from the coordinator's start) at which some offset is old enough to expire: a
        classic group's once it has been Empty for offsets.retention.minutes, a simple group's
        that long after each commit (OMM 862-902, CG 943-967). Checks before it change nothing."""
        retention = self.coordinator.retention_ms
        due: int | None = None
        for g in self.coordinator.groups.values():
            if not g.offsets:
                continue
            if g.protocol == "simple":
                t = min(c.commit_ms for c in g.offsets.values()) + retention
            elif g.state == "Empty":
                t = g.state_since_ms + retention
            else:
                continue
            due = t if due is None else min(due, t)
        if due is None:
            return
        every = OFFSETS_RETENTION_CHECK_MS
        t = max(every, -(-max(due, self.clock.now + 1) // every) * every)
        if self.cleanup_at is not None and self.cleanup_at <= t:
            return
        self.cleanup_at = t
        self.at(t, self._offsets_cleanup, t)

    def _offsets_cleanup(self, t: int) -> None:
        if self.cleanup_at != t:
            return
        self.cleanup_at = None
        for gid, tp in self.coordinator.expire(self.clock.now):
            g = self.coordinator.groups[gid]
            since = "became Empty" if g.protocol == "classic" else "was committed"
            self.step(
                "group_offsets_expired",
                "coordinator",
                f"Group {gid!r}'s committed offset for P{tp[1]} expires: it {since} "
                f"offsets.retention.minutes={self.coordinator.retention_ms // 60_000} ago",
            )
        self._schedule_offsets_cleanup()

    # ---------------------------------------------------------------------------------------
    # helpers

    def _start(self, c: ConsumerProc) -> None:
        if not c.alive:
            c.alive = True
            c.status = "running"
            c.incarnation += 1
            c.member_id = None
            c.join_ready_ms = None
            c.position = {}
            c.awaiting_reset = {}

    def _stop(self, c: ConsumerProc) -> None:
        c.alive = False
        c.member_id = None
        c.generation = -1
        c.join_ready_ms = None
        c.position = {}
        c.awaiting_reset = {}
        if c.mode == "subscribe":
            c.assigned = []

    def _error(self, c: ConsumerProc, error: str, text: str, partition: int | None = None) -> None:
        c.errors.append({"t_ms": self.clock.now, "error": error})
        extra: dict[str, Any] = {"consumer": c.id, "error": error}
        if partition is not None:
            extra["partition_id"] = partition
        self.step("consumer_error", c.id, text, **extra)

    # ---------------------------------------------------------------------------------------
    # results

    def snapshot(self) -> dict[str, Any]:
        return {
            "consumers": {
                cid: {
                    "alive": c.alive,
                    "status": c.status,
                    "mode": c.mode,
                    "group": c.group,
                    "member_id": c.member_id,
                    "generation": c.generation,
                    "assigned": list(c.assigned),
                    "position": _keyed(c.position),
                    "committed": self._committed(c.group) if c.group else {},
                }
                for cid, c in self.consumers.items()
            },
            "groups": self.groups(),
        }

    def _committed(self, group: str) -> dict[str, int]:
        g = self.coordinator.groups.get(group)
        if g is None:
            return {}
        return {str(p): commit.offset for (_t, p), commit in sorted(g.offsets.items())}

    def groups(self) -> dict[str, GroupResult]:
        out: dict[str, GroupResult] = {}
        for gid, g in sorted(self.coordinator.groups.items()):
            owners = sorted(self.member_owner[m] for m in g.members if m in self.member_owner)
            members = {cid: list(self.consumers[cid].assigned) for cid in owners}
            out[gid] = {
                "state": g.state,
                "generation": g.generation,
                "protocol": "eager",
                "leader": next(iter(members), None),
                "members": members,
                "committed": self._committed(gid),
                "coordinator": self.coordinator_broker(gid),
                "offsets_partition": offsets_partition_for(gid, self.offsets_partitions),
                "history": list(self.history.get(gid, [])),
            }
        return out

    def result(self) -> ClientsResult:
        return {
            "polls": self.polls,
            "commits": self.commits,
            "consumers": {
                cid: {
                    "alive": c.alive,
                    "member_id": c.member_id,
                    "generation": c.generation,
                    "assigned": list(c.assigned),
                    "position": _keyed(c.position),
                    "received": c.received,
                    "errors": c.errors,
                }
                for cid, c in self.consumers.items()
            },
            "groups": self.groups(),
        }


    # ---------------------------------------------------------------------------------------
    # KIP-447 (engine/transactions.py): the group coordinator's side of a transactional offset commit

    def check_txn_commit(self, group_id: str, member: str | None, generation: int) -> str | None:
        """TxnOffsetCommit's member and generation check, as for a commit (ClassicGroup
        .validateOffsetCommit with isTransactional: CompletingRebalance is not refused)."""
        g = self.coordinator.groups.get(group_id)
        if g is None:
            return None if generation < 0 else "ILLEGAL_GENERATION"
        if member is None:
            return "UNKNOWN_MEMBER_ID" if g.members else None
        if member not in g.members:
            return "UNKNOWN_MEMBER_ID"
        if generation != g.generation:
            return "ILLEGAL_GENERATION"
        return None

    def apply_txn_offsets(self, group_id: str, offsets: dict[int, int], now: int) -> None:
        """The COMMIT marker reached the group's __consumer_offsets partition: its pending
        transactional offsets become the group's committed offsets (OMM 1051-1100)."""
        g = self.coordinator.groups.get(group_id)
        if g is None:
            g = self.coordinator.groups[group_id] = Group(group_id, protocol="simple", state_since_ms=now)
        for p, o in offsets.items():
            g.offsets[(self.topic, p)] = Commit(o, now)
        self._schedule_offsets_cleanup()


def _keyed(offsets: dict[int, int]) -> dict[str, int]:
    """Offsets by partition, keyed by the partition number as a string (JSON object keys)."""
    return {str(p): o for p, o in sorted(offsets.items())}
