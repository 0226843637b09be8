"""Random part-2 scenarios (consumers, producers, segments, retention, keys, add_partitions) through the
engine: counts runs that raise anything but ScenarioError/BudgetExceeded (a 500 in the app) and the
slowest run. Prints figures; asserts nothing (tests/engine has the rules).

Run: `.venv/bin/python bench/fuzz_clients.py --seed 1 --count 1000`.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import BudgetExceeded, ScenarioError, simulate  # noqa: E402

R = random.Random(0)


def action(cons, prods, nparts):
    c = R.choice(cons) if cons else "c0"
    pr = R.choice(prods)
    kinds = [
        "produce",
        "produce",
        "produce",
        "settle",
        "advance",
        "subscribe",
        "assign",
        "poll",
        "poll",
        "commit",
        "seek",
        "stall",
        "crash",
        "restart",
        "shutdown",
        "delete_records",
        "crash_b",
        "restart_b",
        "add_partitions",
        "crash_p",
        "restart_p",
        "shutdown_p",
    ]
    k = R.choice(kinds)
    if k == "produce":
        a = {"do": "produce", "records": [f"r{R.randrange(10**9)}" for _ in range(R.randint(1, 5))]}
        if len(prods) > 1:
            a["producer"] = pr
        if R.random() < 0.5:
            a["key"] = R.choice(["alice", "bob", "carol", "x", ""])
        if R.random() < 0.3:
            a["bytes"] = R.choice([1, 100, 5000, 2_000_000])
        if R.random() < 0.2:
            a["timestamp_ms"] = R.randrange(0, 10**9)
        return a
    if k == "settle":
        return {"do": "settle", "max_ms": R.choice([0, 100, 60000])}
    if k == "advance":
        return {"do": "advance", "ms": R.choice([0, 1, 1000, 600000, 3600000, 86400000])}
    if k == "subscribe":
        return {"do": "subscribe", "consumer": c}
    if k == "assign":
        return {"do": "assign", "consumer": c, "partitions": R.sample(range(nparts), R.randint(0, nparts))}
    if k == "poll":
        return {
            "do": "poll",
            "consumer": c,
            "timeout_ms": R.choice([0, 10, 1000, 60000]),
            **({"max_records": R.randint(1, 5)} if R.random() < 0.5 else {}),
        }
    if k == "commit":
        return {
            "do": "commit",
            "consumer": c,
            **({"offsets": {str(R.randrange(nparts)): R.randrange(0, 100)}} if R.random() < 0.5 else {}),
            "async": R.random() < 0.3,
        }
    if k == "seek":
        return {
            "do": "seek",
            "consumer": c,
            "partition": R.randrange(nparts),
            "offset": R.choice([0, 5, 1000, "beginning", "end"]),
        }
    if k == "stall":
        return {"do": "stall", "consumer": c, "ms": R.choice([1, 1000, 50000])}
    if k in ("crash", "restart", "shutdown"):
        return {"do": k, "consumer": c}
    if k in ("crash_p", "restart_p", "shutdown_p"):
        return {"do": k[:-2], "producer": pr}
    if k == "delete_records":
        return {"do": "delete_records", "partition": R.randrange(nparts), "offset": R.choice([-1, 0, 3, 100])}
    if k == "crash_b":
        return {"do": "crash", "broker": R.choice([1, 2, 3])}
    if k == "restart_b":
        return {"do": "restart", "broker": R.choice([1, 2, 3])}
    return {"do": "add_partitions", "count": min(12, nparts + R.randint(1, 3))}


def scenario() -> dict:
    nparts = R.choice([1, 1, 2, 3])
    cons = [f"c{i}" for i in range(R.randint(0, 3))]
    consumers = []
    for cid in cons:
        d: dict = {"id": cid, "auto.offset.reset": R.choice(["earliest", "latest", "none"])}
        if R.random() < 0.7:
            d["group.id"] = R.choice(["g", "h", cid])
        else:
            d["enable.auto.commit"] = False
        if R.random() < 0.3:
            d["loop_ms"] = R.choice([1, 100, 5000])
        consumers.append(d)
    topic: dict = {"partitions": nparts, "replication.factor": R.choice([1, 2, 3])}
    if R.random() < 0.5:
        topic["segment.bytes"] = R.choice([100, 1000, 1048576])
    if R.random() < 0.5:
        topic["retention.ms"] = R.choice([-1, 1000, 3600000])
    if R.random() < 0.3:
        topic["retention.bytes"] = R.choice([-1, 100, 10000])
    producers = [{"id": f"p{i}"} for i in range(R.randint(1, 3))]
    for p in producers:
        if R.random() < 0.3:
            p["enable.idempotence"] = False
        if R.random() < 0.3:
            p["acks"] = R.choice([0, 1, "all"])
    prods = [p["id"] for p in producers]
    return {
        "topic": topic,
        "producers": producers,
        "consumers": consumers,
        "actions": [action(cons, prods, nparts) for _ in range(R.randint(1, 25))],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=500)
    args = ap.parse_args(argv)
    R.seed(args.seed)
    crashes, refused, slowest, total = 0, 0, 0.0, time.perf_counter()
    for n in range(args.count):
        sc = scenario()
        t0 = time.perf_counter()
        try:
            simulate(
                sc, steps=R.random() < 0.5, all_views=R.random() < 0.2, check_invariants=R.random() < 0.3
            )
        except (ScenarioError, BudgetExceeded):
            refused += 1
        except Exception:
            crashes += 1
            print(f"CRASH in run {n}: {sc}")
            traceback.print_exc()
        slowest = max(slowest, time.perf_counter() - t0)
    print(
        f"{args.count} random part-2 scenarios (seed {args.seed}): {crashes} crashes (target 0), "
        f"{refused} refused with a reason (4xx), slowest run {slowest:.2f} s with the default caps, "
        f"{time.perf_counter() - total:.1f} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
