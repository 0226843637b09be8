"""Benchmark the curve pipeline on this machine.

    python bench/pipeline.py [--skip-grid] [--grid shipped]

Prints: (1) simulated produce requests per second per core in the latency kernel (one process,
one typical point, best of 5 wall times; every request is evaluated under all four ack rules
and both end-to-end views); (2) Spark's overhead: the same latency points on local[2] against
one plain process, as a ratio of wall times, and per core; (3) the wall time of the whole grid
on local[2]. Each line ends with the 1-minute load average (the machines are shared: on two
cores, a load above 2 means the figures are slower than the code).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from pipeline import grid, latency, main, points  # noqa: E402

CORES = 2


def kernel_rate(repeats: int = 5) -> float:
    kw = dict(
        rf=3,
        min_isr=2,
        lag_ms=30000,
        load_rps=1000,
        body_median_ms=3.0,
        body_sigma=0.8,
        straggler_q=1e-3,
        straggler_ms=20000,
        lanes=4096,
        requests=128,
    )
    latency.sample_point(np.random.default_rng(0), **{**kw, "lanes": 256})  # warm up
    best = float("inf")
    for i in range(repeats):
        t = time.perf_counter()
        latency.sample_point(np.random.default_rng(i), **kw)
        best = min(best, time.perf_counter() - t)
    return kw["lanes"] * kw["requests"] / best


def spark_overhead(n_points: int = 48) -> tuple[float, float]:
    pts = [p for p in grid.shipped() if p["kind"] == "latency"][:n_points]
    t = time.perf_counter()
    for p in pts:
        points.evaluate(p, 1)
    plain = time.perf_counter() - t
    spark = main.spark_session("local[2]", app="bench")
    try:
        rdd = spark.sparkContext.parallelize([(__import__("json").dumps(p),) for p in pts], 4)
        df = spark.createDataFrame(rdd, "point string")
        main.run_points(df, 1).count()  # start the Python workers once
        t = time.perf_counter()
        main.run_points(df, 1).collect()
        on_spark = time.perf_counter() - t
    finally:
        spark.stop()
    return plain, on_spark


def load_avg() -> str:
    return f"[load {os.getloadavg()[0]:.2f}]"


def main_(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-grid", action="store_true", help="do not time the whole grid")
    ap.add_argument("--grid", default="shipped", choices=sorted(grid.GRIDS), help="grid to time")
    args = ap.parse_args(argv)
    rate = kernel_rate()
    print(
        f"latency kernel: {rate / 1e6:.2f} M simulated produce requests/s on one core "
        f"({rate * 6 / 1e6:.1f} M request-evaluations/s over 4 ack rules + 2 end-to-end views) {load_avg()}"
    )
    plain, on_spark = spark_overhead()
    print(
        f"48 latency points: one plain process {plain:.1f} s, Spark local[{CORES}] {on_spark:.1f} s; "
        f"speed-up {plain / on_spark:.2f}x, Spark overhead per core {on_spark * CORES / plain:.2f}x "
        f"{load_avg()}"
    )
    if not args.skip_grid:
        with tempfile.TemporaryDirectory() as out:
            ns = argparse.Namespace(
                grid=args.grid,
                master="local[2]",
                out=out,
                seed=main.DEFAULT_SEED,
                partitions=None,
                no_progress=False,
            )
            info = main.run(ns)
        print(
            f"{args.grid} grid: {info['points']} points in {info['wall_s']:.0f} s "
            f"on local[{CORES}] {load_avg()}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
