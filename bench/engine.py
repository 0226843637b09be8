"""Engine benchmarks (issue 2). Prints figures; asserts nothing.

(a) 10,000 acks=all produces on RF=3, each followed by settle: engine events per second and
    wall time, on one core (the engine is single-threaded).
(b) Replaying a 500-step scene scenario to its last step, as the web app does on every request:
    milliseconds per replay (median and p99 of repeated runs).

Run: python bench/engine.py [--produces N] [--repeats N]
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
from engine import scenario as sc_mod  # noqa: E402
from engine import sim  # noqa: E402

TARGET_EVENTS_PER_S = 200_000
TARGET_REPLAY_MS = 20.0


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
    args = ap.parse_args(argv)
    bench_produces(args.produces)
    gc.collect()  # each measurement starts from a clean heap
    bench_replay(args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
