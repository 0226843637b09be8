"""Consumers, their committed offsets and their groups, on the cluster's one clock.

Added for consumer groups (issue 12), the names other code may rely on:

- Step kinds (engine/steps.py), one per protocol message or decision: consumer_join_group,
  group_member_id_required, group_prepare_rebalance, group_initial_delay, group_join_complete,
  group_member_dropped, consumer_leader_assign, consumer_sync_group, group_sync_complete,
  consumer_revoke, consumer_partitions_lost, consumer_join (onPartitionsAssigned, as before),
  consumer_heartbeat_rebalance, consumer_heartbeat_error, consumer_poll_timeout, consumer_stall,
  consumer_metadata_change,
  group_member_left, group_member_expired, group_static_rejoin, consumer_fenced.
- Result fields beyond the contract: `consumers[id].downtime` (the intervals, `from_ms`, `to_ms`,
  `why`, in which the live member processed nothing: "revoked" from an eager revocation until its
  assignment, "unassigned" while it owned nothing, "stalled" while its application did not poll)
  and `consumers[id].downtime_ms` (their union's length); `groups[g].rebalances` (completed
  generations), `groups[g].history[i]` gains `leader`, `protocol` (the assignor) and `reason`;
  `groups[g].partition_idle_ms` (per partition, how long it had no member processing it while
  the group had members).

The contract's part 2 (scenario-contract-clients.md): `subscribe`, `assign`, `poll`, `commit`,
`seek`, `stall`, a consumer's crash, restart and `close()`, and the admin `delete_records`. A
consumer reads the leader's log of each partition it owns, up to the high watermark, from its
*position*; what the group has *committed* lives apart, with the coordinator (engine/offsets.py
holds the offset rules, engine/groups.py the assignors and the protocol vote). Every request
takes one network hop each way, while the cluster keeps running on the same clock.

The classic group protocol (kafka-clients-logs §E.2-E.8) runs message by message: JoinGroup
(with MEMBER_ID_REQUIRED for a new dynamic member), the coordinator's join phase, the leader's
assignment computed on the client, SyncGroup, heartbeats from a background thread, LeaveGroup.
Client side, the application thread drives the join (only inside `poll()`): an explicit-poll
consumer handles the coordinator's answers during its `poll` actions, a `loop_ms` consumer at
once (its application sits in poll() between batches) unless it is stalled; heartbeat answers
are handled by the heartbeat thread at any time. Commits are checked by the broker with the
(member id, generation) the client holds at that moment (kafka-eos-kraft §C.1).

Not modelled: the coordinator's own `__consumer_offsets` replicas (the coordinator is the first
running broker of the offsets partition's stripe; when it moves, the new one has the group's
state at once), KIP-848 groups (refused) and several topics per group. Transactions are
engine/transactions.py's; this module's fetch asks it for the read_committed bound (the LSO) and
drops aborted and control records.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import transactions as txn
from .clients_spec import BY_DURATION, ConsumerConfig
from .groups import COOPERATIVE, Member, Subscription, select_protocol
from .groups import assign as run_assignor
from .offsets import NO_OFFSET, Commit, Coordinator, Group, coordinator_of, offsets_partition_for
from .results import ClientsResult, GroupResult
from .segments import reset_timestamp

if TYPE_CHECKING:
    from .sim import Clock, Sim

HOP_MS = 1  # one network hop, as NETWORK_DELAY_MS in the replication engine
OFFSETS_RETENTION_CHECK_MS = 600_000  # offsets.retention.check.interval.ms
FETCH_MAX_WAIT_MS = 500  # fetch.max.wait.ms: how long a broker holds an empty fetch
# request.timeout.ms, the consumer's default (ConsumerConfig 573-578 on the 4.0 branch): also how
# long a reset waits before it sends ListOffsets again for a partition that got no offset
REQUEST_TIMEOUT_MS = 30_000
# metadata.max.age.ms, the consumer's default (CommonClientConfigs): how often a client refreshes
# its view of the topic, which is how the group leader notices new partitions (§C.4)
METADATA_MAX_AGE_MS = 300_000


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
    assigned: list[int] = field(default_factory=list)
    position: dict[int, int] = field(default_factory=dict)  # the next offset poll() returns
    # partitions whose by_duration reset got no offset (AWAIT_RESET in SubscriptionState), each
    # with the time the client may send its next ListOffsets for it
    awaiting_reset: dict[int, int] = field(default_factory=dict)
    next_auto_commit_ms: int = 0
    loop_inc: int = -1  # the incarnation whose poll loop is running (loop_ms)
    received: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    # the classic group protocol, client side (AbstractCoordinator, ConsumerCoordinator)
    cstate: str = "none"  # "none" | "joining" (a JoinGroup sent or parked) | "syncing"
    need_rejoin: bool = False  # rejoin at the next poll() (requestRejoin)
    inbox: list[tuple[Any, ...]] = field(default_factory=list)  # answers waiting for poll()
    in_poll: bool = False  # a `poll` action of this consumer is running
    stalled_until: int = -1  # the application does not poll before this time (stall)
    last_poll_ms: int = 0  # the poll timer max.poll.interval.ms counts from
    hb_epoch: int = 0  # bumps when the heartbeat thread stops: its older ticks end
    hb_on: bool = False
    fenced: bool = False  # a fatal group error: the process is unusable
    fatal: str = "FENCED_INSTANCE_ID"  # which one (or INCONSISTENT_GROUP_PROTOCOL)
    assignor: str | None = None  # the assignor the coordinator selected
    previous: list[int] = field(default_factory=list)  # the last assignment (sticky user data)
    # (member id, generation) the client held when its poll timer expired: a later commit still
    # carries them (kafka-eos-kraft §E.C C1)
    stale: tuple[str, int] | None = None
    # consumer.groupMetadata(): (member id, generation) of the last completed join. Java's
    # ConsumerCoordinator sets it in onJoinComplete only (CC 351), so a member that left on its poll
    # timer still hands out the old pair (kafka-eos-kraft §E.B B5)
    group_metadata: tuple[str | None, int] = (None, -1)
    changes: int = 0  # bumps on every change a waiting poll() must look at
    meta_partitions: int = 0  # the topic's partition count in this client's metadata
    meta_next_ms: int = 0  # its next metadata refresh
    leader_of: int | None = None  # as group leader: the partition count its assignment used
    downtime: list[dict[str, Any]] = field(default_factory=list)
    down: dict[str, int] = field(default_factory=dict)  # open downtime intervals: why -> since

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
        self.minted: dict[str, int] = {}  # member ids minted per consumer
        self.joined = 0  # members added to groups so far (the first added leads)
        self.in_flight = 0  # group requests and answers on the network
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
        if not c.assigned and c.group is not None:
            self._down(c, "unassigned", True)
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
        """One KafkaConsumer.poll(): the group (join, sync, rejoin, without blocking on them),
        positions, auto-commit, then a fetch that waits (the cluster running) until records arrive,
        the group changes the partitions, or the deadline passes. A `poll` action that returns
        nothing says so in one step, with the reason (`explicit`); a poll loop's tick that finds
        nothing stays silent, or idle loops would flood the steps."""
        cid = c.id
        started = self.clock.now
        if not c.alive or c.mode is None:
            entry["error"] = "IllegalStateException"
            why = "is not running" if not c.alive else "has neither subscribed nor assigned partitions"
            self._error(c, entry["error"], f"{cid}.poll() throws: the consumer {why}")
            return
        if c.mode == "subscribe" and c.group is None:
            entry["error"] = "InvalidGroupIdException"
            self._error(c, entry["error"], f"{cid}.poll() throws: subscribe() needs a group.id")
            return
        if c.fenced:
            entry["error"] = c.fatal
            self._error(c, entry["error"], f"{cid}.poll() throws: {c.fatal} ended this consumer")
            return
        c.in_poll = explicit
        c.last_poll_ms = self.clock.now
        try:
            self._poll_loop(c, entry, max_records, deadline, explicit, started)
        finally:
            c.in_poll = False
            c.last_poll_ms = self.clock.now
            if explicit and c.mode == "subscribe":
                self._watch_poll_timer(c)

    def _poll_loop(
        self,
        c: ConsumerProc,
        entry: dict[str, Any],
        max_records: int | None,
        deadline: int,
        explicit: bool,
        started: int,
    ) -> None:
        limit = max_records or c.spec.max_poll_records
        while True:
            if c.mode == "subscribe":
                self._ensure_active(c)
                if c.fenced:
                    entry["error"] = c.fatal
                    return
            if any(self._initializing(c, p) for p in c.assigned):
                error = self._init_positions(c)
                if error is not None:
                    entry["error"] = error
                    return
            self._maybe_auto_commit(c)
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
                # the client wakes earlier when a reset may send its ListOffsets again, or when
                # the group changes what it owns
                now = self.clock.now
                retry = [t for t in c.awaiting_reset.values() if t > now]
                wait_until = min(deadline, now + FETCH_MAX_WAIT_MS, *retry)
                seen = c.changes
                self.run_to(wait_until, stop=lambda c=c, seen=seen: c.changes != seen or self._has_data(c))
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
        if c.mode == "subscribe" and c.cstate != "none":
            # ConsumerCoordinator.sendOffsetCommitRequest: generationIfStable() is null while the
            # client is between JoinGroup and SyncGroup's answer, so the commit is not sent and
            # fails with RebalanceInProgressException (kafka-eos-kraft §E.C C2)
            entry.update(outcome="error", error="REBALANCE_IN_PROGRESS")
            self._error(
                c,
                "REBALANCE_IN_PROGRESS",
                f"{cid}'s commit is not sent: it is in the middle of a rebalance ("
                f"{'JoinGroup' if c.cstate == 'joining' else 'SyncGroup'} unanswered), so it throws "
                "RebalanceInProgressException; it can commit again after poll()",
                request="OffsetCommit",  # refused before it is sent, still the commit's error
            )
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
        """The application is busy for `ms`: no poll() (a loop consumer's loop waits), while the
        heartbeat thread keeps the membership alive until max.poll.interval.ms runs out."""
        c = self.consumers[cid]
        if c.alive:
            c.stalled_until = self.clock.now + ms
            self._down(c, "stalled", True)
            self.step(
                "consumer_stall",
                cid,
                f"{cid}'s application is busy for {ms} ms: no poll(); its heartbeat thread keeps "
                f"running (max.poll.interval.ms={c.spec.max_poll_interval_ms})",
                consumer=cid,
                ms=ms,
            )
            if c.mode == "subscribe":
                self._watch_poll_timer(c)
        self.run_to(self.clock.now + ms)
        if c.alive and c.stalled_until <= self.clock.now:
            self._down(c, "stalled", False)

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
        if member is not None and c.group is not None:
            self._heartbeats_stopped(c.group, member)

    def shutdown(self, cid: str) -> None:
        c = self.consumers[cid]
        if not c.alive:
            return
        if c.group is not None and c.spec.enable_auto_commit and c.position and not c.fenced:
            self._send_commit(c, dict(c.position), wait=True, why="close() auto-commit")
        member = c.member_id
        if c.assigned and c.mode == "subscribe":
            self._revoke(c, list(c.assigned), "close()")
        self._stop(c)
        c.status = "closed"
        left = ""
        if member is not None and c.group is not None and not c.fenced:
            if self._leave(c, member, f"{cid} closed"):
                left = f"; it sends LeaveGroup to group {c.group!r}"
            else:
                left = (
                    f"; a static member sends no LeaveGroup: its partitions wait for it until "
                    f"session.timeout.ms={c.spec.session_timeout_ms} passes"
                )
        self.step("consumer_close", cid, f"{cid}.close(){left}", consumer=cid)

    def restart(self, cid: str) -> None:
        c = self.consumers[cid]
        if c.alive:
            return
        self._start(c)
        self._start_loop(c)
        if c.mode == "subscribe" and c.group is not None:
            self._down(c, "unassigned", True)  # the new process owns nothing until it joins
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
        if not c.alive or c.incarnation != incarnation or c.fenced:
            return  # a fenced application got FencedInstanceIdException: its loop is over
        if self.clock.now < c.stalled_until:  # the application is busy: the loop waits
            # one ms past the stall, so that the action right after a `stall` (the application's
            # next call, e.g. its commitSync) comes before its next poll()
            self.at(c.stalled_until + 1, self._loop_tick, cid, incarnation)
            return
        self._down(c, "stalled", False)
        self._drain(c)
        self.in_tick = True
        try:
            self._poll(c, {"consumer": cid, "records": [], "error": None}, None, self.clock.now)
        finally:
            self.in_tick = False
        self.at(self.clock.now + c.spec.loop_ms, self._loop_tick, cid, incarnation)  # type: ignore[operator]

    def quiet_for_skip(self) -> bool:  # noqa: C901 - one test per kind of pending work
        """True when every poll loop would only find nothing (Clock.skip_idle): each looping consumer
        has its partitions and positions, and its auto-commits change nothing that matters (off, or
        a live classic group, whose offsets never expire and whose commits repeat the same offsets);
        and the groups settled (groups_settled), every member of every group heartbeating."""
        if not self.groups_settled():
            return False
        for c in self.consumers.values():
            if c.alive and self.clock.now < c.stalled_until:
                return False  # its poll timer and its loop's wake-up must happen at their time
            if c.alive and c.mode == "subscribe" and c.meta_partitions != len(self.sims):
                return False  # its metadata refresh must see the new partitions at its own time
            if c.spec.loop_ms is None or not c.alive or c.mode is None:
                continue
            if c.mode == "subscribe" and c.group is not None and not c.fenced:
                if c.member_id is None or c.inbox:  # the rest of its rebalance: groups_settled
                    return False
            # a partition whose by_duration reset found nothing would find nothing again in a
            # quiet stretch: the time asked for only moves later, and no record arrives
            if any(self._initializing(c, p) for p in c.assigned) or self._has_data(c):
                return False
            if c.spec.enable_auto_commit and c.group is not None:
                if c.mode != "subscribe" or self._committed(c.group) != _keyed(c.position):
                    return False
        for g in self.coordinator.groups.values():
            if g.protocol != "classic":
                continue
            # with every member's process alive, groups_settled has found the group Stable
            for m in g.members.values():
                owner = self.consumers[m.consumer]
                if not owner.alive or owner.member_id != m.member_id or not owner.hb_on:
                    return False
        return True

    def has_groups(self) -> bool:
        return any(c.group is not None and c.mode == "subscribe" for c in self.consumers.values())

    def groups_settled(self) -> bool:
        """Every group with live members is Stable and none of its live members (whose
        application polls on its own: a poll loop) still has a rebalance to do, and no group
        request or answer is on the network."""
        if self.in_flight:
            return False
        for g in self.coordinator.groups.values():
            if g.protocol != "classic" or not g.members:
                continue
            if not any(self.consumers[m.consumer].alive for m in g.members.values()):
                continue
            if g.state != "Stable":
                return False
        for c in self.consumers.values():
            if c.alive and c.mode == "subscribe" and c.group is not None and c.spec.loop_ms is not None:
                if not c.fenced and (c.cstate != "none" or c.need_rejoin or c.generation < 0):
                    return False
        return True

    def moved_args(self, fn: Any, args: tuple[Any, ...], delta: int) -> tuple[Any, ...]:
        return args  # a poll loop's or heartbeat thread's tick carries no time

    def shift_clocks(self, delta: int) -> None:
        """Move the consumers' timers with an idle skip (Clock.skip_idle): auto-commit, resets,
        the poll timers of looping consumers and the members' session timers (every member is
        heartbeating, or the skip would not happen)."""
        for c in self.consumers.values():
            c.next_auto_commit_ms += delta
            c.awaiting_reset = {p: t + delta for p, t in c.awaiting_reset.items()}
            if c.spec.loop_ms is not None:
                c.last_poll_ms += delta
        for g in self.coordinator.groups.values():
            if g.protocol == "classic":
                for m in g.members.values():
                    m.deadline_ms += delta

    # ---------------------------------------------------------------------------------------
    # the classic group protocol, client side (AbstractCoordinator, ConsumerCoordinator)

    def _in_poll(self, c: ConsumerProc) -> bool:
        """The application thread is inside poll(), so it handles the coordinator's answers now: a
        `poll` action that is running, or a poll loop whose application is not stalled."""
        return c.in_poll or (c.spec.loop_ms is not None and self.clock.now >= c.stalled_until)

    def _send(self, fn: Any, *args: Any) -> None:
        """A request to the coordinator: it arrives one hop later."""
        self.in_flight += 1
        self.at(self.clock.now + HOP_MS, self._arrive, fn, args)

    def _arrive(self, fn: Any, args: tuple[Any, ...]) -> None:
        self.in_flight -= 1
        fn(*args)

    def _reply(self, c: ConsumerProc | str, incarnation: int, msg: tuple[Any, ...]) -> None:
        cid = c if isinstance(c, str) else c.id
        self.in_flight += 1
        self.at(self.clock.now + HOP_MS, self._client_recv, cid, incarnation, msg)

    def _client_recv(self, cid: str, incarnation: int, msg: tuple[Any, ...]) -> None:
        self.in_flight -= 1
        c = self.consumers[cid]
        if not c.alive or c.incarnation != incarnation or c.fenced:
            return
        if msg[0] == "heartbeat" or self._in_poll(c):
            self._handle(c, msg)
        else:
            c.inbox.append(msg)

    def _drain(self, c: ConsumerProc) -> None:
        while c.inbox and not c.fenced:
            self._handle(c, c.inbox.pop(0))

    def _ensure_active(self, c: ConsumerProc) -> None:
        """`ConsumerCoordinator.poll`'s group part, without blocking: handle what has arrived, then
        send a JoinGroup if the member has none in flight and needs one."""
        self._drain(c)
        self._refresh_metadata(c)
        if c.fenced or c.cstate != "none":
            return
        if c.member_id is not None and c.generation >= 0 and not c.need_rejoin:
            return
        if self.coordinator_broker(c.group) is None:  # type: ignore[arg-type]
            return
        self._join_prepare(c)
        self._send_join(c)

    def _refresh_metadata(self, c: ConsumerProc) -> None:
        """The client's metadata refresh every metadata.max.age.ms. Only the group leader compares
        the partition count with the one its assignment used (ConsumerCoordinator's
        assignmentSnapshot): a change makes it rejoin, so the group is assigned the new partitions."""
        now = self.clock.now
        if now < c.meta_next_ms:
            return
        c.meta_next_ms = now + METADATA_MAX_AGE_MS
        c.meta_partitions = len(self.sims)
        if c.leader_of is not None and c.leader_of != c.meta_partitions and not c.need_rejoin:
            c.need_rejoin = True
            self.step(
                "consumer_metadata_change",
                c.id,
                f"{c.id}'s metadata refresh (every metadata.max.age.ms={METADATA_MAX_AGE_MS}) shows "
                f"{self.topic} with {c.meta_partitions} partitions, not {c.leader_of}: as group leader "
                "it rejoins so that the group is assigned them",
                consumer=c.id,
            )

    def _join_prepare(self, c: ConsumerProc) -> None:
        """`ConsumerCoordinator.onJoinPrepare` (CC 786-809): a synchronous auto-commit while the
        generation is still valid, then eager revokes everything it owns; cooperative keeps its
        partitions (one topic: nothing leaves the subscription); a member without a valid
        generation has lost its partitions."""
        if c.generation >= 0 and c.spec.enable_auto_commit and c.position and c.member_id is not None:
            self._send_commit(c, dict(c.position), wait=False, why="auto-commit before rejoining")
        if not c.assigned:
            return
        if c.generation < 0:
            self._lose(c, f"{c.id} has no valid generation any more")
        elif c.spec.rebalance_protocol != COOPERATIVE:
            self._revoke(c, list(c.assigned), "eager: everything, before JoinGroup")

    def _send_join(self, c: ConsumerProc) -> None:
        c.cstate = "joining"
        c.changes += 1
        self._hb_stop(c)
        owned = tuple(c.assigned) if c.spec.rebalance_protocol == COOPERATIVE else ()
        who = f"member id {c.member_id}" if c.member_id else "no member id yet"
        gen = f", generation {c.generation}" if c.generation >= 0 else ""
        owns = f", owns {_names(owned)}" if owned else ""
        static = f", group.instance.id {c.spec.group_instance_id}" if c.spec.group_instance_id else ""
        self.step(
            "consumer_join_group",
            c.id,
            f"{c.id} sends JoinGroup to group {c.group!r} ({who}{static}{gen}; assignors "
            f"{', '.join(c.spec.partition_assignment_strategy)}{owns})",
            consumer=c.id,
        )
        self._send(
            self._coord_join,
            c.group,
            c.id,
            c.incarnation,
            c.member_id,
            owned,
            tuple(c.previous),
            c.generation,
        )

    def _handle(self, c: ConsumerProc, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "join":
            self._on_join_response(c, *msg[1:])
        elif kind == "sync":
            self._on_sync_response(c, *msg[1:])
        else:
            self._on_heartbeat_response(c, *msg[1:])

    def _on_join_response(
        self,
        c: ConsumerProc,
        error: str | None,
        member_id: str | None,
        generation: int,
        assignor: str | None,
        leader: str | None,
        subs: list[Subscription] | None,
    ) -> None:
        if c.cstate != "joining":
            return
        c.changes += 1
        if error == "MEMBER_ID_REQUIRED":
            c.member_id = member_id
            self._send_join(c)
            return
        c.cstate = "none"
        if error is not None:
            self._member_error(c, error, "JoinGroup")
            return
        c.member_id = member_id
        c.generation = generation
        c.assignor = assignor
        c.stale = None
        c.cstate = "syncing"
        self._hb_start(c)
        assignments = None
        c.leader_of = None
        if subs is not None:
            partitions = c.meta_partitions
            c.leader_of = partitions
            assignments = run_assignor(assignor, subs, partitions)  # type: ignore[arg-type]
            owners = sorted(assignments.items())
            said = "; ".join(f"{self.member_owner.get(m, m)} {_names(ps) or 'nothing'}" for m, ps in owners)
            self.step(
                "consumer_leader_assign",
                c.id,
                f"{c.id} leads generation {generation}: it runs the {assignor} assignor over "
                f"{_count(partitions, 'partition')} and {_count(len(subs), 'member')}: {said}",
                consumer=c.id,
            )
        role = "with every member's assignment" if assignments is not None else "and waits for the leader's"
        self.step(
            "consumer_sync_group",
            c.id,
            f"{c.id} sends SyncGroup for generation {generation} {role}",
            consumer=c.id,
        )
        self._send(self._coord_sync, c.group, c.id, c.incarnation, c.member_id, generation, assignments)

    def _on_sync_response(
        self, c: ConsumerProc, error: str | None, assignment: list[int], generation: int
    ) -> None:
        if c.cstate != "syncing":
            return
        c.cstate = "none"
        c.changes += 1
        if error is not None:
            self._member_error(c, error, "SyncGroup")
            return
        # onJoinComplete (CC 382-425): revoke what was owned and is not assigned (cooperative only:
        # eager owns nothing here), then take the rest
        c.group_metadata = (c.member_id, generation)
        new = sorted(assignment)
        revoked = [p for p in c.assigned if p not in new]
        if revoked:
            self._revoke(c, revoked, "cooperative: only what moves, after SyncGroup")
            c.need_rejoin = True
        else:
            c.need_rejoin = False
        added = [p for p in new if p not in c.assigned]
        c.assigned = new
        c.previous = list(new)
        for p in added:
            c.position.pop(p, None)
            c.awaiting_reset.pop(p, None)
        c.next_auto_commit_ms = self.clock.now + c.spec.auto_commit_interval_ms
        self._down(c, "revoked", False)
        self._down(c, "unassigned", not new)
        again = "; it rejoins to let its revoked partitions move" if revoked else ""
        gained = f", newly {_names(added)}" if added and added != new else ""
        self.step(
            "consumer_join",
            c.id,
            f"Group {c.group!r} generation {generation}: {c.id} owns "
            f"{_names(new) or 'nothing'}{gained}{again}",
            consumer=c.id,
        )

    def _on_heartbeat_response(self, c: ConsumerProc, error: str | None, generation: int) -> None:
        if error is None or generation != c.generation or c.cstate == "joining":
            return
        c.changes += 1
        if error == "REBALANCE_IN_PROGRESS":
            if not c.need_rejoin:
                c.need_rejoin = True
                self.step(
                    "consumer_heartbeat_rebalance",
                    c.id,
                    f"{c.id}'s heartbeat (generation {generation}) gets REBALANCE_IN_PROGRESS: it "
                    "rejoins at its next poll()",
                    consumer=c.id,
                )
            return
        self._member_error(c, error, "Heartbeat")

    def _member_error(self, c: ConsumerProc, error: str, request: str) -> None:
        """What the client does with a group error (AbstractCoordinator's response handlers)."""
        if error == "INCONSISTENT_GROUP_PROTOCOL":
            c.fenced, c.fatal = True, error
            c.errors.append({"t_ms": self.clock.now, "error": error})
            self.step(
                "consumer_error",
                c.id,
                f"{c.id}'s JoinGroup gets INCONSISTENT_GROUP_PROTOCOL: none of its assignors "
                f"({', '.join(c.spec.partition_assignment_strategy)}) is one every member of group "
                f"{c.group!r} supports; poll() throws",
                consumer=c.id,
                error=error,
                request="JoinGroup",
            )
            return
        if error == "FENCED_INSTANCE_ID":
            c.fenced, c.fatal = True, error
            self._hb_stop(c)
            if c.assigned:
                self._lose(c, "it was fenced")
            c.errors.append({"t_ms": self.clock.now, "error": error})
            self.step(
                "consumer_fenced",
                c.id,
                f"{c.id}'s {request} gets FENCED_INSTANCE_ID: another process holds "
                f"group.instance.id {c.spec.group_instance_id!r}; this one stops for good",
                consumer=c.id,
                error=error,
                request=request,
            )
            return
        if error in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
            c.generation = -1
            if error == "UNKNOWN_MEMBER_ID":
                c.member_id = None
        c.need_rejoin = True
        self._hb_stop(c)
        kind = "consumer_heartbeat_error" if request == "Heartbeat" else "consumer_error"
        self.step(
            kind,
            c.id,
            f"{c.id}'s {request} gets {error}: it rejoins at its next poll()",
            consumer=c.id,
            error=error,
            request=request,
        )

    def _revoke(self, c: ConsumerProc, partitions: list[int], why: str) -> None:
        """onPartitionsRevoked: the partitions stop being processed; their positions go."""
        self._release(c, partitions, "revoked" if why.startswith("eager") else "unassigned")
        self.step(
            "consumer_revoke",
            c.id,
            f"{c.id} revokes {_names(partitions)} ({why})",
            consumer=c.id,
            partitions=list(partitions),
        )

    def _lose(self, c: ConsumerProc, why: str) -> None:
        lost = list(c.assigned)
        self._release(c, lost)
        self.step(
            "consumer_partitions_lost",
            c.id,
            f"{c.id} loses {_names(lost)}: {why}",
            consumer=c.id,
            partitions=lost,
        )

    def _release(self, c: ConsumerProc, partitions: list[int], down: str = "unassigned") -> None:
        for p in partitions:
            c.position.pop(p, None)
            c.awaiting_reset.pop(p, None)
        c.assigned = [p for p in c.assigned if p not in partitions]
        c.changes += 1
        if c.alive and c.mode == "subscribe" and not c.assigned:
            self._down(c, down, True)

    # the heartbeat thread: a heartbeat every heartbeat.interval.ms, and the poll timer

    def _hb_start(self, c: ConsumerProc) -> None:
        if not c.hb_on:
            c.hb_on = True
            c.hb_epoch += 1
            self.at(self.clock.now + c.spec.heartbeat_interval_ms, self._hb_tick, c.id, c.hb_epoch)

    def _hb_stop(self, c: ConsumerProc) -> None:
        if c.hb_on:
            c.hb_on = False
            c.hb_epoch += 1

    def _hb_tick(self, cid: str, epoch: int) -> None:
        c = self.consumers[cid]
        if not c.alive or c.hb_epoch != epoch or not c.hb_on:
            return
        if self._poll_expired(c):
            return
        if self.coordinator_broker(c.group) is not None:  # type: ignore[arg-type]
            self._send(self._coord_heartbeat, c.group, cid, c.incarnation, c.member_id, c.generation)
        self.at(self.clock.now + c.spec.heartbeat_interval_ms, self._hb_tick, cid, epoch)

    def _watch_poll_timer(self, c: ConsumerProc) -> None:
        """Wake the heartbeat thread when the poll timer would expire (an event at its own time,
        which an idle skip does not move)."""
        if c.member_id is not None and not c.fenced:
            self.at(c.last_poll_ms + c.spec.max_poll_interval_ms + 1, self._poll_timer, c.id, c.incarnation)

    def _poll_timer(self, cid: str, incarnation: int) -> None:
        c = self.consumers[cid]
        if c.alive and c.incarnation == incarnation and c.hb_on:
            self._poll_expired(c)

    def _poll_expired(self, c: ConsumerProc) -> bool:
        """The heartbeat thread's poll-timer check (AC 1147-1188): after max.poll.interval.ms
        without poll() a dynamic member sends LeaveGroup; a static one only stops heartbeating, so
        its session timeout removes it. Either way the client forgets its generation."""
        if self._in_poll(c) and c.stalled_until <= self.clock.now:
            return False
        if self.clock.now - c.last_poll_ms <= c.spec.max_poll_interval_ms:
            return False
        member = c.member_id
        self._hb_stop(c)
        if member is None:
            return True
        left = self._leave(c, member, f"{c.id}'s poll timer expired")
        if left:
            what = "its heartbeat thread sends LeaveGroup"
        else:
            what = "it is static, so it sends no LeaveGroup and stops heartbeating"
        c.stale = (member, c.generation)
        c.member_id = None if left else c.member_id
        c.generation = -1
        c.need_rejoin = True
        c.changes += 1
        self.step(
            "consumer_poll_timeout",
            c.id,
            f"{c.id} has not called poll() for max.poll.interval.ms={c.spec.max_poll_interval_ms}: {what}",
            consumer=c.id,
        )
        return True

    def _leave(self, c: ConsumerProc, member: str, why: str) -> bool:
        """`AbstractCoordinator.maybeLeaveGroup` (close() or the poll timer): a dynamic member
        sends LeaveGroup (True); a static one sends none and only stops heartbeating, so its
        session timeout removes it (KIP-345)."""
        if c.spec.group_instance_id is not None:
            self._heartbeats_stopped(c.group, member)  # type: ignore[arg-type]
            return False
        self._send(self._coord_leave, c.group, member, why)
        return True

    # ---------------------------------------------------------------------------------------
    # the classic group protocol, coordinator side (GroupMetadataManager, ClassicGroup)

    def _group(self, gid: str) -> Group:
        g = self.coordinator.groups.get(gid)
        if g is None:
            g = self.coordinator.groups[gid] = Group(gid, state_since_ms=self.clock.now)
        if g.protocol != "classic":  # a simple group's offsets carry over to the classic group
            g.protocol = "classic"
        g.subscribed = {self.topic}
        return g

    def _mint(self, cid: str) -> str:
        """A new member id, derived from the consumer's id so members sort as their ids do (the
        contract's rule; Kafka's is client.id or group.instance.id, then a UUID)."""
        n = self.minted.get(cid, 0) + 1
        self.minted[cid] = n
        member = f"{cid}-{n}"
        self.member_owner[member] = cid
        return member

    def _coord_join(
        self,
        gid: str,
        cid: str,
        incarnation: int,
        member_id: str | None,
        owned: tuple[int, ...],
        previous: tuple[int, ...],
        generation: int,
    ) -> None:
        """`GroupMetadataManager.classicGroupJoin` (GMM 4198-4421)."""
        c = self.consumers[cid]
        if self.coordinator_broker(gid) is None:
            answer = ("join", "COORDINATOR_NOT_AVAILABLE", member_id, -1, None, None, None)
            self._reply(cid, incarnation, answer)
            return
        g = self._group(gid)
        spec = c.spec
        instance = spec.group_instance_id
        others = [m for m in g.members.values() if m.consumer != cid]
        joining = Member("", cid, incarnation, instance, spec.partition_assignment_strategy, 0, 0, 0)
        if others and select_protocol([*others, joining]) is None:
            # ClassicGroup.supportsProtocols: no assignor in common with the group's members
            answer = ("join", "INCONSISTENT_GROUP_PROTOCOL", member_id, -1, None, None, None)
            self._reply(cid, incarnation, answer)
            return
        if member_id is None and instance is not None and instance in g.instances:
            self._static_rejoin(g, c, incarnation, owned, previous)
            return
        if member_id is None and instance is None:
            member = self._mint(cid)
            g.pending.add(member)
            self.step(
                "group_member_id_required",
                "coordinator",
                f"Group {gid!r}: a new member; the coordinator answers MEMBER_ID_REQUIRED with "
                f"member id {member}",
                consumer=cid,
            )
            self._reply(cid, incarnation, ("join", "MEMBER_ID_REQUIRED", member, -1, None, None, None))
            return
        if member_id is None:  # a new static member: no MEMBER_ID_REQUIRED round trip
            member_id = self._mint(cid)
            g.instances[instance] = member_id  # type: ignore[index]
        elif member_id in g.pending:
            g.pending.discard(member_id)
        elif member_id not in g.members:
            error = "UNKNOWN_MEMBER_ID"
            if instance is not None and g.instances.get(instance) not in (None, member_id):
                error = "FENCED_INSTANCE_ID"
            self._reply(cid, incarnation, ("join", error, member_id, -1, None, None, None))
            return
        m = g.members.get(member_id)
        if m is None:
            self.joined += 1
            m = g.members[member_id] = Member(
                member_id,
                cid,
                incarnation,
                instance,
                spec.partition_assignment_strategy,
                spec.max_poll_interval_ms,
                spec.session_timeout_ms,
                self.joined,
            )
            if g.leader is None:
                g.leader = member_id
            changed = True
            why = f"{cid} joins"
        else:
            changed = m.metadata() != (spec.partition_assignment_strategy, owned)
            why = f"{cid} rejoins" + (" with new metadata (what it owns changed)" if changed else "")
        m.incarnation = incarnation
        m.protocols = spec.partition_assignment_strategy
        m.owned, m.previous, m.owned_generation = owned, previous, generation
        if g.state == "PreparingRebalance":
            m.awaiting_join = True
            if g.in_initial_delay:
                g.delay_joined = True
            self._try_complete_join(g)
        elif g.state == "Empty" or changed or member_id == g.leader:
            m.awaiting_join = True
            self._prepare_rebalance(g, why)
        else:
            # Stable or CompletingRebalance, a follower with unchanged metadata: the current
            # generation again (GMM 4387-4421)
            self._join_reply(g, m)

    def _static_rejoin(
        self, g: Group, c: ConsumerProc, incarnation: int, owned: tuple[int, ...], previous: tuple[int, ...]
    ) -> None:
        """A known group.instance.id joins with an empty member id: a new member id replaces the old
        one, which is fenced from now on (GMM 5098-5204). In a Stable group whose selected assignor
        the member still supports there is no rebalance: it gets its old assignment back."""
        instance = c.spec.group_instance_id
        old_id = g.instances[instance]  # type: ignore[index]
        # g.instances only names members of the group: _coord_join adds the member it maps,
        # _remove drops the mapping with the member
        m = g.members.pop(old_id)
        new_id = self._mint(c.id)
        g.instances[instance] = new_id  # type: ignore[index]
        m.member_id, m.consumer, m.incarnation = new_id, c.id, incarnation
        m.protocols = c.spec.partition_assignment_strategy
        m.rebalance_timeout_ms = c.spec.max_poll_interval_ms
        m.session_timeout_ms = c.spec.session_timeout_ms
        m.owned, m.previous = owned, previous
        if g.leader == old_id:
            g.leader = new_id
        g.members[new_id] = m
        self._touch(g, m)
        keeps = g.state == "Stable" and g.selected in m.protocols
        if keeps:
            self.step(
                "group_static_rejoin",
                "coordinator",
                f"Group {g.group_id!r}: static member {instance!r} is back as {new_id} (member id "
                f"{old_id} is fenced from now on); the group is Stable, so no rebalance: it gets "
                f"{_names(m.assignment) or 'nothing'} again, generation {g.generation}",
                consumer=c.id,
            )
            self._join_reply(g, m)
            return
        self.step(
            "group_static_rejoin",
            "coordinator",
            f"Group {g.group_id!r}: static member {instance!r} is back as {new_id} (member id "
            f"{old_id} is fenced from now on); the group is {g.state}, so it rebalances",
            consumer=c.id,
        )
        m.awaiting_join = True
        if g.state == "PreparingRebalance":
            self._try_complete_join(g)
        else:
            self._prepare_rebalance(g, f"static member {instance!r} came back while {g.state}")

    def _join_reply(self, g: Group, m: Member) -> None:
        """A JoinGroup answer with the current generation (the leader also gets the members)."""
        subs = None
        if m.member_id == g.leader and g.state != "Stable":
            subs = self._subscriptions(g)
        self._reply(
            m.consumer,
            m.incarnation,
            ("join", None, m.member_id, g.generation, g.selected, g.leader, subs),
        )

    def _subscriptions(self, g: Group) -> list[Subscription]:
        return [
            Subscription(m.member_id, m.instance_id, m.owned, m.previous, m.owned_generation)
            for m in sorted(g.members.values(), key=lambda m: m.order)
        ]

    def _prepare_rebalance(self, g: Group, why: str) -> None:
        """`prepareRebalance` (GMM 4799-4888): PreparingRebalance; a first rebalance of an Empty
        group waits group.initial.rebalance.delay.ms (restarted while members keep arriving, up to
        the rebalance timeout), the others wait until every member rejoined or the rebalance
        timeout (the members' largest max.poll.interval.ms) passes."""
        gid = g.group_id
        if g.state == "CompletingRebalance":
            for m in g.members.values():
                m.assignment = ()
                if m.awaiting_sync:
                    m.awaiting_sync = False
                    answer = ("sync", "REBALANCE_IN_PROGRESS", [], g.generation)
                    self._reply(m.consumer, m.incarnation, answer)
        was_empty = g.state == "Empty"
        g.set_state("PreparingRebalance", self.clock.now)
        g.join_token += 1
        token = g.join_token
        timeout = max((m.rebalance_timeout_ms for m in g.members.values()), default=0)
        g.rebalance_reason = why
        if was_empty:
            delay = min(self.initial_delay_ms, timeout)
            g.in_initial_delay = True
            g.delay_joined = False
            wait = (
                f"it waits group.initial.rebalance.delay.ms={self.initial_delay_ms} for more members"
            )
            self.at(self.clock.now + delay, self._initial_delay_over, gid, token, max(timeout - delay, 0))
        else:
            g.in_initial_delay = False
            wait = (
                f"it waits for every member to rejoin, at most the rebalance timeout of {timeout} ms "
                "(max.poll.interval.ms)"
            )
            self.at(self.clock.now + timeout, self._join_timeout, gid, token)
        self.step(
            "group_prepare_rebalance",
            "coordinator",
            f"Group {gid!r} is PreparingRebalance ({why}): {wait}",
        )
        self._try_complete_join(g)

    def _initial_delay_over(self, gid: str, token: int, remaining: int) -> None:
        g = self.coordinator.groups.get(gid)
        if g is None or g.join_token != token or g.state != "PreparingRebalance":
            return
        if g.delay_joined and remaining > 0:
            g.delay_joined = False
            delay = min(self.initial_delay_ms, remaining)
            self.step(
                "group_initial_delay",
                "coordinator",
                f"Group {gid!r}: members joined during the initial delay, so it waits another {delay} ms",
            )
            self.at(self.clock.now + delay, self._initial_delay_over, gid, token, max(remaining - delay, 0))
            return
        g.in_initial_delay = False
        self._complete_join(g)

    def _join_timeout(self, gid: str, token: int) -> None:
        g = self.coordinator.groups.get(gid)
        if g is not None and g.join_token == token and g.state == "PreparingRebalance":
            self._complete_join(g)

    def _try_complete_join(self, g: Group) -> None:
        if g.state != "PreparingRebalance" or g.in_initial_delay:
            return
        if g.pending or not all(m.awaiting_join for m in g.members.values()):
            return
        self._complete_join(g)

    def _complete_join(self, g: Group) -> None:
        """`completeClassicGroupJoin` (GMM 4466-4558): dynamic members that did not rejoin are
        removed (static ones stay), the generation goes up by one, the assignor is voted, every
        rejoined member gets its answer (the leader with everyone's subscription)."""
        gid = g.group_id
        g.join_token += 1
        g.pending.clear()
        for m in list(g.members.values()):
            if not m.awaiting_join and m.instance_id is None:
                self._remove(g, m)
                self.step(
                    "group_member_dropped",
                    "coordinator",
                    f"Group {gid!r}: {m.member_id} ({m.consumer}) did not rejoin within the rebalance "
                    "timeout: removed",
                    consumer=m.consumer,
                )
        if g.members and not any(m.awaiting_join for m in g.members.values()):
            # only static members that did not rejoin are left: no generation without a member to
            # answer; wait another rebalance timeout, until their sessions expire (GMM 4472-4485)
            timeout = max(m.rebalance_timeout_ms for m in g.members.values())
            self.at(self.clock.now + timeout, self._join_timeout, gid, g.join_token)
            return
        g.generation += 1
        reason = g.rebalance_reason
        if not g.members:
            g.set_state("Empty", self.clock.now)
            g.leader = None
            self._history(g, reason)
            self.step(
                "group_join_complete",
                "coordinator",
                f"Group {gid!r} has no members left: generation {g.generation}, Empty",
            )
            self._schedule_offsets_cleanup()
            return
        joined = [m for m in g.members.values() if m.awaiting_join]
        if g.leader not in g.members or not g.members[g.leader].awaiting_join:
            # maybeElectNewJoinedLeader: the leader must be a member that rejoined
            g.leader = min(joined, key=lambda m: m.order).member_id
        g.selected = select_protocol(g.members.values())
        g.set_state("CompletingRebalance", self.clock.now)
        names = ", ".join(sorted(m.consumer for m in g.members.values()))
        leader = g.members[g.leader].consumer
        self.step(
            "group_join_complete",
            "coordinator",
            f"Group {gid!r} completes the join: generation {g.generation}, members {names}, leader "
            f"{leader}, assignor {g.selected} (voted); CompletingRebalance, waiting for the leader's "
            "SyncGroup",
        )
        for m in g.members.values():
            if m.awaiting_join:
                m.awaiting_join = False
                self._touch(g, m, watch=True)
                self._join_reply(g, m)

    def _coord_sync(
        self,
        gid: str,
        cid: str,
        incarnation: int,
        member_id: str,
        generation: int,
        assignments: dict[str, list[int]] | None,
    ) -> None:
        """`classicGroupSync` (GMM 5263-5343)."""
        g = self.coordinator.groups.get(gid)
        error = self._member_check(g, member_id, generation, self.consumers[cid].spec.group_instance_id)
        if g is None or error is not None or g.state == "PreparingRebalance":
            self._reply(cid, incarnation, ("sync", error or "REBALANCE_IN_PROGRESS", [], generation))
            return
        m = g.members[member_id]
        self._touch(g, m)
        if g.state == "Stable":
            self._reply(cid, incarnation, ("sync", None, list(m.assignment), generation))
            return
        m.awaiting_sync = True
        if member_id != g.leader or assignments is None:
            return
        for other in g.members.values():
            other.assignment = tuple(assignments.get(other.member_id, ()))
        g.set_state("Stable", self.clock.now)
        self._history(g, g.rebalance_reason)
        ordered = sorted(g.members.values(), key=lambda o: o.member_id)
        said = "; ".join(f"{o.consumer} {_names(o.assignment) or 'nothing'}" for o in ordered)
        self.step(
            "group_sync_complete",
            "coordinator",
            f"Group {gid!r} stores the leader's assignment for generation {g.generation} ({said}) "
            "and answers every member: Stable",
        )
        for other in ordered:
            if other.awaiting_sync:
                other.awaiting_sync = False
                answer = ("sync", None, list(other.assignment), g.generation)
                self._reply(other.consumer, other.incarnation, answer)

    def _member_check(
        self, g: Group | None, member_id: str | None, generation: int, instance: str | None
    ) -> str | None:
        """The checks Heartbeat and SyncGroup share (GMM 5272-5278, 5584-5603)."""
        if g is None or g.state in ("Empty", "Dead"):
            return "UNKNOWN_MEMBER_ID"
        return g.validate_member(member_id, generation, instance)

    def _coord_heartbeat(
        self, gid: str, cid: str, incarnation: int, member_id: str | None, generation: int
    ) -> None:
        """`classicGroupHeartbeat` (GMM 5534-5603): also resets the member's session timer."""
        if self.coordinator_broker(gid) is None:
            return  # lost: the client will find the next coordinator
        g = self.coordinator.groups.get(gid)
        error = self._member_check(g, member_id, generation, self.consumers[cid].spec.group_instance_id)
        if error is None:
            self._touch(g, g.members[member_id])  # type: ignore[arg-type,union-attr]
            if g.state == "PreparingRebalance":  # type: ignore[union-attr]
                error = "REBALANCE_IN_PROGRESS"
        self._reply(cid, incarnation, ("heartbeat", error, generation))

    def _coord_leave(self, gid: str, member_id: str, why: str) -> None:
        """`classicGroupLeave`: the member goes at once and the group rebalances."""
        g = self.coordinator.groups.get(gid)
        if g is None or member_id not in g.members:
            return
        m = g.members[member_id]
        self._remove(g, m)
        self.step(
            "group_member_left",
            "coordinator",
            f"Group {gid!r}: LeaveGroup from {member_id} ({why}); the member is removed",
            consumer=m.consumer,
        )
        self._member_gone(g, f"{m.consumer} left")

    def _heartbeats_stopped(self, gid: str, member_id: str) -> None:
        """The member's heartbeats stop without a LeaveGroup: its session timer runs out at its
        deadline (an event at its own time)."""
        g = self.coordinator.groups.get(gid)
        m = g.members.get(member_id) if g is not None else None
        if m is not None:
            self.at(max(m.deadline_ms, self.clock.now), self._session_check, gid, member_id)

    def _touch(self, g: Group, m: Member, *, watch: bool = False) -> None:
        """Reset the member's session timer; with `watch`, also wake at its end in case no
        heartbeat comes (a member that never answers its JoinGroup response)."""
        m.deadline_ms = self.clock.now + m.session_timeout_ms
        if watch:
            self.at(m.deadline_ms, self._session_check, g.group_id, m.member_id)

    def _session_check(self, gid: str, member_id: str) -> None:
        g = self.coordinator.groups.get(gid)
        m = g.members.get(member_id) if g is not None else None
        if m is None or m.awaiting_join or self.clock.now < m.deadline_ms:
            return
        self._remove(g, m)  # type: ignore[arg-type]
        static = f" (static member {m.instance_id!r})" if m.instance_id else ""
        self.step(
            "group_member_expired",
            "coordinator",
            f"No heartbeat from member {member_id} ({m.consumer}){static} for session.timeout.ms="
            f"{m.session_timeout_ms}: the coordinator removes it",
            consumer=m.consumer,
        )
        self._member_gone(g, f"{m.consumer}'s session timed out")  # type: ignore[arg-type]

    def _remove(self, g: Group, m: Member) -> None:
        g.members.pop(m.member_id, None)
        if m.instance_id is not None and g.instances.get(m.instance_id) == m.member_id:
            del g.instances[m.instance_id]
        if g.leader == m.member_id:
            g.leader = None

    def _member_gone(self, g: Group, why: str) -> None:
        if g.state in ("Stable", "CompletingRebalance"):
            self._prepare_rebalance(g, why)
        elif g.state == "PreparingRebalance":
            if not g.members and not g.in_initial_delay:
                self._complete_join(g)
            else:
                self._try_complete_join(g)

    def _history(self, g: Group, reason: str) -> None:
        ordered = sorted(g.members.values(), key=lambda m: m.member_id)
        leader = g.members[g.leader].consumer if g.leader in g.members else None
        self.history.setdefault(g.group_id, []).append(
            {
                "generation": g.generation,
                "t_ms": self.clock.now,
                "assignment": {m.consumer: list(m.assignment) for m in ordered},
                "leader": leader,
                "protocol": g.selected if g.members else None,
                "reason": reason,
            }
        )

    # ---------------------------------------------------------------------------------------
    # inside poll()

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
        if c.mode == "subscribe" and (c.generation < 0 or c.cstate != "none"):
            return  # not a stable member: Kafka's asynchronous commit would fail, nothing is stored
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
        """A fetch from a cleaned log: the records that survived, from `pos` up to the HW. A fetch
        that reads up to the HW moves the position there, past the removed offsets at its end, as
        the client's does: a cleaned batch keeps its last offset and the consumer goes on from the
        last fetched batch's next offset (`CompletedFetch.nextFetchedRecord`); the cleaner keeps the
        last batch below its cleaner point, so removed offsets never end a log below the HW."""
        n = 0
        off = pos
        while off < hw and n < room:
            if off not in gone:
                got.append((p, off, log[off]))
                n += 1
            off += 1
        if off >= hw:  # else max.poll.records stopped it: the position follows the last record
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
        if c.mode == "subscribe" and not c.assigned and (c.generation < 0 or c.cstate != "none"):
            g = c.group
            if self.coordinator_broker(g) is None:  # type: ignore[arg-type]
                return f"it cannot join group {g!r}: no running broker can coordinate it"
            group = self.coordinator.groups.get(g)  # type: ignore[arg-type]
            if group is not None and group.in_initial_delay:
                wait = (
                    f"a new group waits group.initial.rebalance.delay.ms ({self.initial_delay_ms} ms) "
                    "for more members"
                )
            elif group is not None and group.state == "PreparingRebalance":
                wait = (
                    "the coordinator waits for every member to rejoin (a crashed one until its "
                    "session times out)"
                )
            else:
                wait = f"the group is {group.state if group else 'not created yet'}"
            return f"it is still joining group {g!r} and has no partitions yet ({wait})"
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
            self._error(c, "COORDINATOR_NOT_AVAILABLE", f"{c.id}'s {why} fails: no coordinator is running",
                        request="OffsetCommit")
            return "COORDINATOR_NOT_AVAILABLE"
        self.run_to(self.clock.now + HOP_MS)
        tps = {(self.topic, p): o for p, o in offsets.items()}
        member, generation = c.member_id, c.generation
        if member is None and c.stale is not None:
            member, generation = c.stale
        if c.mode == "subscribe" and member is not None:
            error = self.coordinator.commit(
                c.group,  # type: ignore[arg-type]
                tps,
                self.clock.now,
                member=member,
                generation=generation,
                instance=c.spec.group_instance_id,
            )
            g = self.coordinator.groups.get(c.group)  # type: ignore[arg-type]
            if error is None and g is not None and member in g.members:
                self._touch(g, g.members[member])  # a commit counts as a heartbeat (OMM 456-466)
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
            self._error(c, error, f"{c.id}'s {why} of {said} fails: {error}", request="OffsetCommit")
        if wait:
            self.run_to(self.clock.now + HOP_MS)
        return error

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
        """A new process. What _stop already cleared (member id, generation, positions, the
        inbox, the rebalance state, the heartbeat thread) is not cleared again here; the rest is
        what a stopped process keeps for the views and a new one starts without."""
        if not c.alive:
            c.alive = True
            c.status = "running"
            c.incarnation += 1
            c.group_metadata = (None, -1)  # a new process has joined nothing yet
            c.need_rejoin = False
            c.fenced = False
            c.stalled_until = -1
            c.stale = None
            c.previous = []
            c.last_poll_ms = self.clock.now
            c.meta_partitions = len(self.sims)  # a new process fetches the topic's metadata
            c.meta_next_ms = self.clock.now + METADATA_MAX_AGE_MS
            c.leader_of = None

    def _stop(self, c: ConsumerProc) -> None:
        """The process ends (crash or close()): its membership, positions and rebalance go."""
        c.alive = False
        c.member_id = None
        c.generation = -1
        c.position = {}
        c.awaiting_reset = {}
        c.inbox = []
        c.cstate = "none"
        self._hb_stop(c)
        if c.mode == "subscribe":
            c.assigned = []
        for why in list(c.down):
            self._down(c, why, False)

    def _down(self, c: ConsumerProc, why: str, on: bool) -> None:
        """Open or close one of the member's downtime intervals (`consumers[id].downtime`)."""
        now = self.clock.now
        if on:
            c.down.setdefault(why, now)
            return
        since = c.down.pop(why, None)
        if since is not None and now > since:
            c.downtime.append({"from_ms": since, "to_ms": now, "why": why})

    def _error(self, c: ConsumerProc, error: str, text: str, partition: int | None = None,
               request: str | None = None) -> None:
        c.errors.append({"t_ms": self.clock.now, "error": error})
        extra: dict[str, Any] = {"consumer": c.id, "error": error}
        if partition is not None:
            extra["partition_id"] = partition
        if request is not None:  # the group request the error answers (OffsetCommit, JoinGroup, ...)
            extra["request"] = request
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
                    # the client's side of a rebalance (issue 12): "none", "joining" (JoinGroup
                    # sent), "syncing" (SyncGroup sent); rejoin pending; application stalled
                    "rebalance": c.cstate,
                    "needs_rejoin": c.need_rejoin,
                    "stalled": c.alive and self.clock.now < c.stalled_until,
                    "static": c.spec.group_instance_id is not None,
                    **self._timers(c),
                    **self._downtime(c),
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
            members: dict[str, list[int]] = {}
            for m in sorted(g.members.values(), key=lambda m: m.member_id, reverse=True):
                # the coordinator's view: what the last SyncGroup gave each member (a consumer
                # that restarted before its old member expired shows the old one by member id)
                members[m.member_id if m.consumer in members else m.consumer] = list(m.assignment)
            members = dict(sorted(members.items()))
            specs = [self.consumers[m.consumer].spec for m in g.members.values()]
            cooperative = bool(specs) and all(s.rebalance_protocol == COOPERATIVE for s in specs)
            leader = g.members[g.leader].consumer if g.leader in g.members else None
            out[gid] = {
                "state": g.state,
                "generation": g.generation,
                "protocol": "cooperative" if cooperative else "eager",
                "leader": leader,
                "members": members,
                "committed": self._committed(gid),
                "coordinator": self.coordinator_broker(gid),
                "offsets_partition": offsets_partition_for(gid, self.offsets_partitions),
                "history": list(self.history.get(gid, [])),
                "assignor": g.selected,
                "rebalances": sum(1 for h in self.history.get(gid, []) if h["assignment"]),
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
                    **self._downtime(c),
                }
                for cid, c in self.consumers.items()
            },
            "groups": self.groups(),
        }

    def _timers(self, c: ConsumerProc) -> dict[str, int | None]:
        """The two timers that catch a failed member, for a view: when max.poll.interval.ms runs
        out without poll() (the client's heartbeat thread) and when session.timeout.ms runs out
        without a heartbeat (the coordinator), or None when not running."""
        poll_deadline = session_deadline = None
        if c.alive and c.mode == "subscribe" and c.hb_on:
            stalled = self.clock.now < c.stalled_until
            if c.spec.loop_ms is None or stalled:
                poll_deadline = c.last_poll_ms + c.spec.max_poll_interval_ms
        g = self.coordinator.groups.get(c.group) if c.group else None
        member = c.member_id or (c.stale[0] if c.stale else None)
        if g is not None and member in g.members:
            session_deadline = g.members[member].deadline_ms
        return {"poll_deadline_ms": poll_deadline, "session_deadline_ms": session_deadline}

    def _downtime(self, c: ConsumerProc) -> dict[str, Any]:
        """`downtime` (closed intervals, and the open ones up to now) and their union's length."""
        now = self.clock.now
        spans = [dict(d) for d in c.downtime]
        spans += [{"from_ms": t, "to_ms": now, "why": why} for why, t in c.down.items()]  # still open
        spans.sort(key=lambda d: (d["from_ms"], d["to_ms"]))
        total, reach = 0, None
        for d in spans:
            lo = d["from_ms"] if reach is None else max(d["from_ms"], reach)
            if d["to_ms"] > lo:
                total += d["to_ms"] - lo
            reach = d["to_ms"] if reach is None else max(reach, d["to_ms"])
        return {"downtime": spans, "downtime_ms": total}


    # ---------------------------------------------------------------------------------------
    # KIP-447 (engine/transactions.py): the group coordinator's side of a transactional offset commit

    def check_txn_commit(self, group_id: str, member: str | None, generation: int,
                         instance: str | None = None) -> str | None:
        """TxnOffsetCommit's member and generation check, as for a commit (ClassicGroup
        .validateOffsetCommit with isTransactional: CompletingRebalance is not refused)."""
        g = self.coordinator.groups.get(group_id)
        if g is None:
            return None if generation < 0 else "ILLEGAL_GENERATION"
        if member is None and generation < 0 and instance is None:
            # no member id, generation or instance: refused only on a NON-transactional commit to
            # a non-empty group (kafka-eos-kraft §C.1 rule 5); a transactional one is accepted
            return None
        # rule 4: a static instance (FENCED_INSTANCE_ID), the member, the generation
        return g.validate_member(member, generation, instance)

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


def _names(partitions: Any) -> str:
    """Partitions as the steps name them: "P0, P1"."""
    return ", ".join(f"P{p}" for p in partitions)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
