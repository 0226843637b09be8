"""Engine benchmarks (issue 2). Prints figures; asserts nothing.

(a) 10,000 acks=all produces on RF=3, each followed by settle: engine events per second and
    wall time, on one core (the engine is single-threaded).
(b) Replaying a 500-step scene scenario to its last step, as the web app does on every request:
    milliseconds per replay (median and p99 of repeated runs).
(c) Eight simulated days of a retained topic (issue 10): a record an hour on RF=3 with
    retention.ms = 1 day and hourly segments, a consumer group reading every six hours, then the
    group left Empty until its offsets expire. Wall time (target <= 1 s) and how much simulated
    time the idle skips covered.
(d) Twelve partitions on one clock with three consumers (issue 10): keyed produces with settle,
    each consumer polling its four partitions: engine events per second (target >= 200,000).
(e) A consumer group (issue 12): ten poll-loop members on twelve partitions under keyed
    traffic, then a rolling restart (each member closed, restarted and settled in turn), once
    eager (range) and once cooperative (cooperative-sticky): events per second, wall time,
    rebalances and the members' summed downtime.
(f) Log compaction (issue 12): a compacted topic on RF=3, 200 keys updated one record every 90 s
    for about five simulated days (every 50th update a tombstone), 100-record segments, the
    cleaner on its 15 s grid: cleaner passes, events per second and wall time.

Run: python bench/engine.py [--produces N] [--repeats N] [--only a|b|c|d|e|f]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import _gc_paused as engine_gc_paused  # noqa: E402
from engine import cluster, sim  # noqa: E402
from engine import scenario as sc_mod  # noqa: E402

TARGET_EVENTS_PER_S = 200_000
TARGET_REPLAY_MS = 20.0
TARGET_EIGHT_DAYS_S = 1.0
HOUR = 3_600_000
DAY = 24 * HOUR
BIG = sc_mod.Limits(
    max_actions=10_000, max_sim_ms=10**12, max_sim_ms_long=10**12, max_steps=10**9, max_events=10**9
)


def run_counting(sc: dict, limits: sc_mod.Limits = BIG) -> tuple[dict, cluster.Clock, float]:
    """simulate() a trusted scenario; also return its clock (events, idle skips) and wall time."""
    from engine import simulate

    clocks: list[cluster.Clock] = []
    original = cluster.Clock

    class Counted(original):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            clocks.append(self)

    cluster.Clock = Counted  # type: ignore[misc]
    try:
        t0 = time.perf_counter()
        r = simulate(sc, limits=limits)
        wall = time.perf_counter() - t0
    finally:
        cluster.Clock = original  # type: ignore[misc]
    return r, clocks[-1], wall


def bench_eight_days() -> None:
    actions: list[dict] = [{"do": "subscribe", "consumer": "c0"}]
    for h in range(8 * 24):
        actions += [{"do": "produce", "records": [f"h{h}"]}, {"do": "settle"}]
        if h % 6 == 5:
            actions += [{"do": "poll", "consumer": "c0", "timeout_ms": 5_000}]
            actions += [{"do": "commit", "consumer": "c0"}]
        actions.append({"do": "advance", "ms": HOUR - 1_000 if h % 6 != 5 else HOUR - 7_000})
    actions += [{"do": "shutdown", "consumer": "c0"}, {"do": "advance", "ms": 7 * DAY + HOUR}]
    sc = {
        "topic": {"replication.factor": 3, "retention.ms": DAY, "segment.ms": HOUR},
        "consumers": [
            {"id": "c0", "group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False}
        ],
        "actions": actions,
    }
    r, clock, wall = run_counting(sc)
    simulated = clock.now / DAY
    p0 = r["partitions"][0]
    print(
        f"(c) {simulated:.1f} simulated days on RF=3 ({len(actions)} actions): wall {wall:.3f} s "
        f"(target <= {TARGET_EIGHT_DAYS_S:.0f} s); {clock.events:,} events; {clock.skips} idle skips "
        f"covered {clock.skipped_ms / DAY:.1f} days; log start {p0['log_start_offset']}, "
        f"{len(p0['segments'])} segments left; group g's offsets {r['groups']['g']['committed'] or 'expired'}"
    )


def bench_twelve_partitions(rounds: int) -> None:
    """Two shapes of the same traffic: a settle after every produce (as scenes run) and one after
    each round of 48 (fetches then carry many records, so there are fewer, heavier events)."""
    keys = [f"user-{i}" for i in range(48)]
    consumers = [{"id": f"c{i}", "auto.offset.reset": "earliest"} for i in range(3)]
    for settle_every, shape in ((1, "settle after each produce"), (48, "settle after each round of 48")):
        actions: list[dict] = [
            {"do": "assign", "consumer": f"c{i}", "partitions": list(range(4 * i, 4 * i + 4))}
            for i in range(3)
        ]
        n = 0
        for _ in range(rounds):
            for j, k in enumerate(keys):
                actions.append({"do": "produce", "records": [f"r{n}"], "key": k})
                n += 1
                if (j + 1) % settle_every == 0:
                    actions.append({"do": "settle"})
            actions += [{"do": "poll", "consumer": f"c{i}", "timeout_ms": 100} for i in range(3)]
        topic = {"replication.factor": 3, "partitions": 12}
        sc = {"topic": topic, "consumers": consumers, "actions": actions}
        r, clock, wall = run_counting(sc)
        got = sum(len(c["received"]) for c in r["consumers"].values())
        print(
            f"(d) 12 partitions, RF=3, 3 consumers, {n} keyed records, {shape}: {clock.events:,} events "
            f"in {wall:.3f} s = {clock.events / wall:,.0f} events/s (target >= {TARGET_EVENTS_PER_S:,}), "
            f"{n / wall:,.0f} records/s; {got} records polled"
        )


def bench_compaction(updates: int) -> None:
    from engine.actors import cleaner

    passes = 0
    original = cleaner.clean

    def counted(*a, **kw):
        nonlocal passes
        passes += 1
        return original(*a, **kw)

    actions: list[dict] = []
    for i in range(updates):
        value = None if i % 50 == 49 else f"v{i}"
        actions.append({"do": "produce", "records": [value], "key": f"K{i % 200}", "bytes": 100})
        actions.append({"do": "advance", "ms": 90_000})
    topic = {"replication.factor": 3, "cleanup.policy": "compact", "segment.bytes": 10_000}
    limits = sc_mod.Limits(**{**BIG.__dict__, "max_actions": len(actions)})
    plain = [{**a, "records": [a["records"][0] or f"d{i}"]} if a["do"] == "produce" else a
             for i, a in enumerate(actions)]  # the same traffic on a delete topic, for comparison
    deleting = {"topic": {**topic, "cleanup.policy": "delete"}, "actions": plain}
    _r, base_clock, base_wall = run_counting(deleting, limits)
    cleaner.clean = counted  # type: ignore[assignment]
    try:
        r, clock, wall = run_counting({"topic": topic, "actions": actions}, limits)
    finally:
        cleaner.clean = original  # type: ignore[assignment]
    p0 = r["partitions"][0]
    tombstones = sum(1 for e in p0["log"] if e["record"] is None)
    print(
        f"(f) compaction, RF=3: {updates} keyed updates over {clock.now / DAY:.1f} simulated days "
        f"({len(actions)} actions): {passes} cleaner passes (3 replicas), {clock.events:,} events in "
        f"{wall:.3f} s = {clock.events / wall:,.0f} events/s; log {len(p0['log'])} records "
        f"({tombstones} tombstones) in {len(p0['segments'])} segments, cleaner point {p0['cleaner_point']}, "
        f"LEO {p0['leo']}; the same traffic on a delete topic: {base_clock.events:,} events in "
        f"{base_wall:.3f} s"
    )
def bench_group_rolling_restart(rounds: int) -> None:
    ids = [f"c{i}" for i in range(10)]
    for strategy in (["range"], ["cooperative-sticky"]):
        consumers = [
            {"id": c, "group.id": "g", "auto.offset.reset": "earliest", "loop_ms": 100,
             "partition.assignment.strategy": strategy}
            for c in ids
        ]  # fmt: skip
        actions: list[dict] = [{"do": "subscribe", "consumer": c} for c in ids] + [{"do": "settle"}]
        n = 0
        for c in ids:
            for _ in range(rounds):
                actions.append({"do": "produce", "records": [f"r{n}"], "key": f"user-{n % 48}"})
                n += 1
            actions += [
                {"do": "settle"},
                {"do": "shutdown", "consumer": c},
                {"do": "settle"},
                {"do": "restart", "consumer": c},
                {"do": "subscribe", "consumer": c},
                {"do": "settle"},
            ]
        topic = {"replication.factor": 3, "partitions": 12}
        r, clock, wall = run_counting({"topic": topic, "consumers": consumers, "actions": actions})
        g = r["groups"]["g"]
        formed = g["history"][0]["t_ms"]  # downtime from the group's first generation on
        spans = [d for c in r["consumers"].values() for d in c["downtime"]]
        down = sum(max(0, d["to_ms"] - max(d["from_ms"], formed)) for d in spans)
        got = sum(len(c["received"]) for c in r["consumers"].values())
        print(
            f"(e) group of 10 on 12 partitions, {strategy[0]}, rolling restart, {n} keyed records: "
            f"{clock.events:,} events in {wall:.3f} s = {clock.events / wall:,.0f} events/s; "
            f"{g['generation']} generations, {clock.now / 1000:.1f} simulated s, members' downtime after "
            f"the group formed {down / 1000:.1f} s in all; {got} records polled"
        )


def bench_produces(n: int) -> None:
    actions = []
    for i in range(n):
        actions.append({"do": "produce", "records": [f"r{i}"]})
        actions.append({"do": "settle"})
    limits = sc_mod.Limits(max_actions=2 * n + 10, max_sim_ms=10**12, max_steps=10**9, max_events=10**9)
    scenario = sc_mod.parse(
        {"topic": {"min.insync.replicas": 2}, "producer": {"acks": "all"}, "actions": actions}, limits
    )
    cfg = sc_mod.resolve(scenario, limits)
    s = sim.Sim(cfg, limits, record=False, at_step=None, check_invariants=False)
    t0 = time.perf_counter()
    with engine_gc_paused():  # as engine.simulate does
        s.start()
        for a in cfg.actions:
            if a.do == "produce":
                s.produce(a, len(s.batches))
            else:
                s.run_until(s.now + a.max_ms, stop=s.settled)
    wall = time.perf_counter() - t0
    s.clock.q.clear()  # as engine.simulate does: free the run by refcounting, not in a later GC pass
    acked = sum(1 for b in s.batches if b.outcome == "acked")
    print(
        f"(a) {n} acks=all produces with settle on RF=3: {s.events} engine events, {s.nsteps} steps, "
        f"{acked} acked"
    )
    print(
        f"    wall {wall:.3f} s; {s.events / wall:,.0f} events/s (target >= {TARGET_EVENTS_PER_S:,}); "
        f"{n / wall:,.0f} produces/s"
    )


def scene_like_scenario(target_steps: int) -> dict:
    """A scene-shaped scenario: writes, a follower crash, a leader crash, restarts, until ~target steps."""
    actions: list[dict] = []
    i = 0
    while True:
        actions += [
            {"do": "produce", "records": [f"a{i}", f"b{i}"]},
            {"do": "settle"},
            {"do": "crash", "broker": 3},
            {"do": "advance", "ms": 10_000},
            {"do": "produce", "records": [f"c{i}"]},
            {"do": "settle"},
            {"do": "restart", "broker": 3},
            {"do": "advance", "ms": 12_000},
            {"do": "settle"},
            {"do": "crash", "broker": 1},
            {"do": "advance", "ms": 10_000},
            {"do": "produce", "records": [f"d{i}"]},
            {"do": "settle"},
            {"do": "restart", "broker": 1},
            {"do": "advance", "ms": 12_000},
            {"do": "settle"},
        ]
        i += 1
        sc = {"topic": {"min.insync.replicas": 2}, "actions": actions}
        r = sim_run(sc, steps=False)
        if r["step_count"] >= target_steps or i > 50:
            return sc


def sim_run(sc: dict, **kw):
    from engine import simulate

    return simulate(sc, **kw)


def bench_replay(repeats: int) -> None:
    from engine import simulate

    sc = scene_like_scenario(500)
    total = simulate(sc)["step_count"]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = simulate(sc, steps=True, at_step=total)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    print(
        f"(b) replay a {total}-step scene scenario ({len(sc['actions'])} actions) to its last step "
        f"with steps and view: median {statistics.median(times):.2f} ms, p99 {p99:.2f} ms"
        f" over {repeats} runs (target <= {TARGET_REPLAY_MS:.0f} ms); {len(r['steps'])} steps returned"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--produces", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=100, help="(d): rounds of 48 keyed produces")
    ap.add_argument("--updates", type=int, default=5_000, help="(f): keyed updates to a compacted topic")
    ap.add_argument("--group-records", type=int, default=100, help="(e): keyed records before each restart")
    ap.add_argument("--only", choices=["a", "b", "c", "d", "e", "f"], help="run one benchmark")
    args = ap.parse_args(argv)
    runs = {
        "a": lambda: bench_produces(args.produces),
        "b": lambda: bench_replay(args.repeats),
        "c": bench_eight_days,
        "d": lambda: bench_twelve_partitions(args.rounds),
        "e": lambda: bench_group_rolling_restart(args.group_records),
        "f": lambda: bench_compaction(args.updates),
    }
    for key, fn in runs.items():
        if args.only in (None, key):
            fn()
            gc.collect()  # each measurement starts from a clean heap
    return 0


if __name__ == "__main__":
    sys.exit(main())
