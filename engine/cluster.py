"""The run: every partition's simulation on one clock, the scenario's actions in order, one result.

`run` builds a `Sim` per partition (engine/sim.py) on one `Clock` (engine/clock.py), the consumers
and their coordinator (engine/consumers.py) and the producer's partitioner (engine/producers.py),
drives the actions, and merges what the partitions did into the contract's result.
"""

from __future__ import annotations

import dataclasses
import heapq
from typing import Any

from .clock import Clock, RunUse
from .consumers import Clients
from .partitioner import generation_for
from .producers import ProducerProc
from .scenario import TXN_ACTIONS, Config, Limits, ScenarioError
from .sim import _WAKEUPS, Sim
from .state import BROKER_LEVEL_KINDS, CLIENT_KIND_PREFIXES, FIRST_PRODUCER_ID, TOPIC_KINDS, ProducerSession
from .transactions import Transactions

_CLIENT_TICKS = (Clients._loop_tick, Clients._hb_tick)


def _shiftable(owner: Any, fn: Any) -> bool:
    """An event an idle skip moves with the clock: a quiet partition's housekeeping, a poll loop's
    tick or a heartbeat thread's (the skip happens only when every loop would find nothing and
    every group is Stable)."""
    if owner.__class__ is Sim:
        return fn.__func__ not in _WAKEUPS
    return fn.__func__ in _CLIENT_TICKS


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
    clock = Clock(limits, cfg.max_sim_ms)
    try:
        return _run(
            cfg,
            limits,
            clock,
            steps=steps,
            at_step=at_step,
            check_invariants=check_invariants,
            all_views=all_views,
        )
    finally:
        _release(clock)


def _release(clock: Clock) -> None:
    """Break the reference cycles that hold a finished (or failed) run, so that refcounting frees
    it at once: the pending events hold bound methods of the sims and the consumers, which hold
    the clock, clock.owner is the last event's owner, and part-2 runs add clock.sims and
    sims[0].clients. Left alone, the whole run (logs,
    batches, the parsed actions) waits for a GC pass to walk it, and since the collector is off
    during a run, everything in it is young: the first allocation after the run pays for that."""
    clock.q.clear()
    clock.stale.clear()
    clock.owner = None
    for sim in clock.sims:
        sim.clients = None
    clock.sims = []


def _run(
    cfg: Config,
    limits: Limits,
    clock: Clock,
    *,
    steps: bool,
    at_step: int | None,
    check_invariants: bool,
    all_views: bool,
) -> dict[str, Any]:
    parts = _partition_configs(cfg)
    # add_partitions makes a run of one partition a run of several
    multi = len(parts) > 1 or bool(cfg.added_assignments)
    used = RunUse()  # one result-size budget for the whole run
    clients: Clients | None = None

    def make(p: int, c: Config) -> Sim:
        sim = Sim(
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
        if all_views:
            sim.views = []
        if cfg.part2:
            sim.part2 = True
        return sim

    sims = [make(p, c) for p, c in enumerate(parts)]
    if cfg.part2:
        clock.sims = sims  # part-2 runs may last days: skip the idle stretches
        clock.shiftable = _shiftable
        clients = Clients(
            cfg.consumers,
            clock,
            sims,
            topic=cfg.topic_name,
            initial_rebalance_delay_ms=cfg.timing.group_initial_rebalance_delay_ms,
            offsets_partitions=cfg.timing.offsets_topic_num_partitions,
            offsets_retention_ms=cfg.timing.offsets_retention_ms,
        )
        sims[0].clients = clients
    for sim in sims:
        sim.start()
    born = [(0, 0)] * len(sims)  # (step, ms) at which each partition was created
    action_t_ms, chosen, producers, txns = _drive(cfg, clock, sims, clients, make, born)
    clock.budget.check()
    for sim in sims:
        sim.now = clock.now
    results = [sim.result() for sim in sims]
    if clients is not None:
        part2 = [sim.contract_partition() for sim in sims]
    if not multi:
        out = results[0]
        if steps:
            out["action_t_ms"] = action_t_ms
    else:
        out = _merge_partitions(
            cfg,
            clock,
            sims,
            results,
            action_t_ms,
            chosen,
            born,
            steps=steps,
            at_step=at_step,
            check=check_invariants,
        )
    if clients is not None:
        out.update(clients.result())
        out["producers"] = {pid: producer.result() for pid, producer in producers.items()}
        out["transactions"] = txns.entries if txns is not None else []
        if txns is not None:
            for pid, producer in producers.items():
                txns.producer_result(producer.session, out["producers"][pid])
        out["notes"] = list(cfg.notes)
        if multi:
            for entry, extra in zip(out["partitions"], part2, strict=True):
                entry.update(extra)
        else:
            out["partitions"] = part2
    return out


def _partition_configs(cfg: Config) -> list[Config]:
    """One configuration per partition: its replicas. Partitions of one topic replicate
    independently; what they share is the brokers and the clock, and the heartbeat phases, which
    come from the same seed, so fencing happens at the same time everywhere."""
    if len(cfg.assignments) <= 1:
        return [cfg]
    return [dataclasses.replace(cfg, replicas=list(asg), assignments=[list(asg)]) for asg in cfg.assignments]


def _drive(
    cfg: Config,
    clock: Clock,
    sims: list[Sim],
    clients: Clients | None,
    make: Any,
    born: list[tuple[int, int]],
) -> tuple[list[int], list[int], dict[str, ProducerProc], Transactions | None]:
    """Run the scenario's actions in order; returns the simulated time at which each began, the
    partition each produce went to, and the producer processes.

    A produce goes to the partition its producer picks (engine/producers.py); every other action
    reaches every partition at the same millisecond; advance and settle run the one clock;
    add_partitions adds partitions to `sims` (and `born`) as it runs."""
    one = sims[0] if len(sims) == 1 and not cfg.added_assignments else None
    generation = generation_for(cfg.profile.version)
    pids = PidAllocator()
    producers = {
        pc.id: ProducerProc(
            pc,
            pids.session(pc, 0),
            sims=sims,
            clock=clock,
            seed=cfg.seed,
            generation=generation,
            topic=cfg.topic_name,
        )
        for pc in cfg.producers
    }
    txns = Transactions(cfg, clock, sims, pids) if any(pc.transactional for pc in cfg.producers) else None
    if txns is not None:
        txns.groups = clients
    produced = 0
    starts: list[int] = []
    chosen: list[int] = []
    for i, a in enumerate(cfg.actions):
        now = clock.now
        for sim in sims:
            sim.action = i
            sim.now = now
        starts.append(now)
        do = a.do
        if do == "produce":
            producer = producers[a.producer or cfg.producers[0].id]
            session = producer.session
            txn = txns is not None and producer.config.transactional
            if one is not None:
                refused = txns.before_send(session, 0) if txn else None  # type: ignore[union-attr]
                one.now = clock.now
                one.produce(a, len(one.batches), session, refused)
                if txn:
                    txns.sent(session, 0, len(one.batches) - 1)  # type: ignore[union-attr]
                chosen.append(0)
                continue
            if a.records is None:  # name records across the topic, not per partition
                named = [f"m{produced + k}" for k in range(a.count)]
                a = a.model_copy(update={"records": named, "count": None})
            produced += len(a.records)
            p = producer.choose(a)
            chosen.append(p)
            sim = sims[p]
            # a transactional send to a partition new to the transaction waits for AddPartitionsToTxn
            refused = txns.before_send(session, p) if txn else None  # type: ignore[union-attr]
            sim.now = clock.now
            sim.produce(a, len(sim.batches), session, refused)
            if txn:
                txns.sent(session, p, len(sim.batches) - 1)  # type: ignore[union-attr]
            producer.after_produce(a, p, a.records)
        elif do in TXN_ACTIONS:
            assert txns is not None  # the scenario refuses these for a producer without transactional.id
            _txn_action(txns, producers[a.producer or cfg.producers[0].id], a)
        elif do == "advance":
            clock.run_until(now + a.ms)
        elif do == "settle":
            if one is not None:
                done = one.settled_after_failover if a.through_failover else one.settled
            else:
                done = _all_settled(sims, a.through_failover, clock)
            if clients is not None and clients.has_groups():
                done = _and_groups_stable(done, clients)
            if not done():
                clock.run_until(now + a.max_ms, stop=done)
        elif do == "add_partitions":
            _add_partitions(cfg, clock, sims, a.count, make, born, i)
            for producer in producers.values():
                producer.partitions_added(clock.now)
        elif getattr(a, "producer", None) is not None:  # crash, shutdown or restart of a producer
            _producer_lifecycle(producers[a.producer], a.do, sims, pids)
        elif clients is not None and (do in CLIENT_ACTIONS or getattr(a, "consumer", None) is not None):
            _client_action(clients, a)
        else:
            for sim in sims:
                _apply(sim, cfg, i, a)
            if clock.stale:
                clock.refresh_stale()
    return starts, chosen, producers, txns


def _txn_action(txns: Transactions, producer: ProducerProc, a: Any) -> None:
    """A transactional call of a producer's application (engine/transactions.py)."""
    do = a.do
    txns.now = txns.clock.now
    if do == "init_transactions":
        txns.init_transactions(producer)
    elif do == "begin_transaction":
        txns.begin_transaction(producer)
    elif do in ("commit_transaction", "abort_transaction"):
        txns.end_transaction(producer, do == "commit_transaction")
    else:
        txns.send_offsets(producer, a.consumer, a.offsets)


class PidAllocator:
    """The producer ids InitProducerId hands out in this run, in the order the sessions start:
    1000, 1001, ... (a broker takes them from a block the controller allocates; the numbers
    themselves mean nothing). A producer without idempotence asks for none: its id is -1."""

    def __init__(self) -> None:
        self.next = FIRST_PRODUCER_ID

    def session(self, pc: Any, now: int) -> ProducerSession:
        """A producer process starting: an idempotent one gets its id now; a transactional one
        only from initTransactions() (the coordinator's, the same for every instance)."""
        pid = -1
        if pc.enable_idempotence and not pc.transactional:
            pid = self.allocate()
        return ProducerSession(pc, pid, now)

    def allocate(self) -> int:
        pid, self.next = self.next, self.next + 1
        return pid


def _producer_lifecycle(producer: ProducerProc, do: str, sims: list[Sim], pids: PidAllocator) -> None:
    """A producer process crashes, is closed, or starts again (contract part 2, crash / shutdown /
    restart with `producer`). The scenario refuses a produce from a producer that is not running;
    crashing or closing one that is not running, or restarting one that runs, changes nothing."""
    session = producer.session
    clock = producer.clock
    narrator = sims[0]
    narrator.now = clock.now
    if do == "restart":
        if session.alive:
            return
        producer.restart(pids.session(session.config, clock.now))
        return
    if not session.alive:
        return
    if do == "shutdown":
        # KafkaProducer.close() blocks until every batch already handed to send() is answered or
        # has failed (its timeout is Long.MAX_VALUE): the clock runs until then
        def done() -> bool:
            return not any(sim.unanswered_of(session) for sim in sims)

        waiting = sum(sim.unanswered_of(session) for sim in sims)
        if waiting:
            deadline = max(b.deadline for sim in sims for b in sim.batches if b.session is session)
            clock.run_until(deadline + 1, stop=done)
        session.alive = False
        narrator.now = clock.now
        waited = (
            f"it waits until its {waiting} unanswered batch{'es' if waiting != 1 else ''} "
            f"{'are' if waiting != 1 else 'is'} answered, then the process ends"
            if waiting
            else "nothing is waiting for an answer, so the process ends at once"
        )
        narrator.tell("producer_close", session.id, f"{session.id}.close(): {waited}")
        return
    lost = [sim.producer_crash(session) for sim in sims]
    on_wire = sum(w for w, _ in lost)
    queued = sum(q for _, q in lost)
    session.alive = False
    if on_wire or queued:
        parts = []
        if on_wire:
            parts.append(
                f"{on_wire} batch{'es' if on_wire != 1 else ''} already sent may still be written, "
                "but nobody will hear the answer"
            )
        if queued:
            parts.append(f"{queued} batch{'es' if queued != 1 else ''} still in its memory never leave")
        what = "; ".join(parts)
    else:
        what = "it had no batch waiting for an answer"
    narrator.tell("producer_crash", session.id, f"{session.id}'s process dies: {what}")


def _add_partitions(
    cfg: Config, clock: Clock, sims: list[Sim], count: int, make: Any, born: list[tuple[int, int]], i: int
) -> None:
    """CreatePartitions (`kafka-topics --alter --partitions count`): partitions len(sims) to
    count-1 come into being now, with the replicas resolve() placed for them
    (`cfg.added_assignments`), each a new `Sim` on the run's clock: leader its first replica,
    every replica in its ISR, empty. Existing partitions are not touched: no record moves.

    The step comes first, told once for the topic, and the new partitions exist from that step
    on: a view before it shows them as absent (None), not as empty partitions."""
    old = len(sims)
    first = len(cfg.assignments)
    placed = cfg.added_assignments[old - first : count - first]
    narrator = sims[0]
    layout = "; ".join(
        f"P{old + k} on {', '.join(f'B{b}' for b in replicas)} (leader B{replicas[0]})"
        for k, replicas in enumerate(placed)
    )
    text = (
        f"CreatePartitions: {cfg.topic_name} grows from {old} to {count} partitions: {layout}. "
        f"Records already written stay where they are; producers keep using {old} "
        f"partition{'s' if old != 1 else ''} until their metadata refresh"
    )
    narrator.tell("admin_create_partitions", "admin", text, partitions=count)
    for k, replicas in enumerate(placed):
        sim = make(old + k, dataclasses.replace(cfg, replicas=list(replicas), assignments=[list(replicas)]))
        sim.action = i
        _start_late(sim, clock, sims[0])
        sims.append(sim)
        born.append((clock.steps, clock.now))


def _start_late(sim: Sim, clock: Clock, ref: Sim) -> None:
    """Start a partition's simulation at `clock.now`, in step with the partitions already running.

    Sim.start schedules from time 0, so the new partition starts at 0 and then moves forward by
    now, the way Clock.skip_idle moves a quiet cluster: its events, its message times and the
    times it compares them with. Its periodic events (broker heartbeats, the leaders' ISR check,
    the controller's checks) take the times of `ref`'s, and its controller the brokers' last
    heartbeats, since they are one broker's and one controller's for every partition: a fault
    after this moment then plays out in every partition at the same milliseconds."""
    t0 = clock.now
    sim.now = 0
    sim.start()
    periodic: dict[tuple[Any, tuple[Any, ...]], int] = {}
    for t, _tick, owner, fn, args in clock.q:
        if owner is ref and fn.__func__ in _PERIODIC:
            key = (fn.__func__, args)
            periodic[key] = min(t, periodic.get(key, t))
    moved = []
    for t, tick, owner, fn, args in clock.q:
        if owner is sim:
            f = fn.__func__
            args = sim.moved_args(fn, args, t0)
            t = periodic.get((f, args), t + t0)
        moved.append((t, tick, owner, fn, args))
    heapq.heapify(moved)
    clock.q[:] = moved
    sim.shift_clocks(t0)
    for bid, reg in sim.ctl.reg.items():
        reg.last_hb = ref.ctl.reg[bid].last_hb
    for rec in sim.mlog:
        rec["t_ms"] = t0
    for br in sim.brokers.values():  # an empty segment made now, not at 0 (segment.ms counts from it)
        if br.seg is not None:
            for segment in br.seg.segments:
                segment.created_ms += t0
                segment.last_modified_ms += t0
    sim.now = t0
    # the view Sim.start took is as of time 0: take it again
    if sim.views is not None:
        sim.views[-1] = sim.snapshot()
    if sim.view is not None:
        sim.view = sim.snapshot()


# The periodic events of a partition's simulation that stand for one broker's or the controller's
# timer, shared by every partition (see _start_late)
_PERIODIC = frozenset(
    {Sim._broker_heartbeat, Sim._isr_expiration_tick, Sim._ctl_rebalance_tick, Sim._ctl_unclean_tick}
)


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


def _and_groups_stable(done: Any, clients: Clients) -> Any:
    """settle's stop test with consumer groups (contract part 2): the cluster settled and every
    group with live members Stable, no member in the middle of a rebalance."""
    return lambda: clients.groups_settled() and done()  # the cheap test first


def _all_settled(sims: list[Sim], through_failover: bool, clock: Clock) -> Any:
    """settle's stop test for several partitions: every one settled. It runs after every event, so
    it first asks the partition that was unsettled last time (usually still the one), and does not
    ask at all when the one event since then was another's: whether a partition has settled
    depends on its own state only, which only its own events change (the consumers' and the
    producer's events read partitions and narrate through them, and change nothing it reads)."""
    tests = [sim.settled_after_failover if through_failover else sim.settled for sim in sims]
    # the partition found unsettled last time, and the clock's event count then (None: not asked yet)
    last: list[Any] = [0, None]

    def done() -> bool:
        k, seen = last
        if seen == clock.events - 1 and clock.owner is not sims[k]:
            last[1] = clock.events
            return False
        last[1] = clock.events
        if not tests[k]():
            return False
        for j, test in enumerate(tests):
            if not test():
                last[0] = j
                return False
        return True

    return done


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


def _merged_view(views: list[dict[str, Any] | None]) -> dict[str, Any]:
    """A several-partition view: partition 0's snapshot, plus every partition's under `partitions`,
    at the time of the latest of them (each partition's snapshot is as of its own latest step).
    A partition add_partitions had not created yet at that step is None there: absent, not empty."""
    first = views[0]
    assert first is not None
    return {**first, "t_ms": max(v["t_ms"] for v in views if v is not None), "partitions": views}


def _merge_partitions(
    cfg: Config,
    clock: Clock,
    sims: list[Sim],
    results: list[dict[str, Any]],
    action_t_ms: list[int],
    chosen: list[int],
    born: list[tuple[int, int]],
    *,
    steps: bool,
    at_step: int | None,
    check: bool,
) -> dict[str, Any]:
    """One result for a several-partition run: steps in the order they happened, each partition's
    own result under `partitions`, the produce list in the scenario's order.

    Every list of partitions has one entry per partition the topic has at the end; a partition
    created by add_partitions after step k is None in the views of steps before it (and its
    `view` is None in an at_step result that asks for such a step); its entry gives `created_ms`."""
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
            out_views.append(
                _merged_view(
                    [
                        sim.views[counts[p]] if born[p][0] <= k else None  # type: ignore[index]
                        for p, sim in enumerate(sims)
                    ]
                )
            )
    produce: list[dict[str, Any]] = []
    taken = [0] * len(sims)
    for p in chosen:
        produce.append({**results[p]["produce"][taken[p]], "partition": p})
        taken[p] += 1
    first = results[0]
    out: dict[str, Any] = {
        "version": 1,
        "final": first["final"],
        "produce": produce,
        "acked_records": [  # a tombstone (null) has no name
            rec for pr in produce if pr.get("outcome") == "acked" for rec in pr["records"] if rec is not None
        ],
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
                "created_ms": born[p][1],
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
                kind = st["kind"]
                if "consumer" in st or kind.startswith(CLIENT_KIND_PREFIXES):
                    # the consumers' actor narrates through partition 0; its texts name their
                    # partitions, and `partition_id` says which one a step is about, if any one
                    entry["partition"] = st.get("partition_id")
                    merged.append(entry)
                    continue
                shared = (kind in BROKER_LEVEL_KINDS and "records" not in st) or kind in TOPIC_KINDS
                entry["partition"] = None if shared else p
                if not shared:
                    entry["text"] = f"P{p}: {st['text']}"
                merged.append(entry)
        merged.sort(key=lambda st: st["i"])
        out["steps"] = merged
        out["action_t_ms"] = action_t_ms
    if at_step is not None:
        views = [
            None if at_step < born[p][0] else r["final"] if at_step >= step_count else r["view"]
            for p, r in enumerate(results)
        ]
        for part, v in zip(out["partitions"], views, strict=True):
            part["view"] = v
        out["view"] = _merged_view(views)
    if check:
        out["violations"] = [f"partition {p}: {v}" for p, r in enumerate(results) for v in r["violations"]]
    if out_views is not None:
        out["views"] = out_views
    return out
