"""Entry point of the offline job: run a grid of curve points on Spark and write data/curves/.

    python -m pipeline run [--grid shipped|smoke] [--master local[2]] [--out data/curves] [--seed N]
    spark-submit --master <url> pipeline/main.py run ...       (the same job on a cluster)

The SparkSession is created here and nowhere else; `run_points` is the only Spark transform: it
takes a DataFrame of points and plain values and returns a DataFrame of records.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file by spark-submit: make `pipeline` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline import grid as grids  # noqa: E402
from pipeline.output import write_curves  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
LOG4J2 = Path(__file__).resolve().parent / "log4j2.properties"
DEFAULT_MASTER = "local[2]"  # the machines are shared: two cores, few partitions
DEFAULT_SEED = 20240611
POINTS_PER_TASK = 8  # ~25 ms of Python task overhead each, against ~0.3 s of work per point


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a grid on Spark and write the curves")
    run.add_argument(
        "--grid", choices=sorted(grids.GRIDS), default="shipped", help="which grid (default shipped)"
    )
    run.add_argument(
        "--master",
        default=None,
        help=f"Spark master URL (default {DEFAULT_MASTER}; under spark-submit, its --master is used)",
    )
    run.add_argument("--out", default=str(REPO_ROOT / "data" / "curves"), help="output directory")
    run.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"master seed (default {DEFAULT_SEED})")
    run.add_argument(
        "--partitions", type=int, default=None, help="Spark partitions (default: points / 8, 2-64)"
    )
    run.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    return ap


def quiet_spark_env() -> None:
    """Environment Spark must see before its JVM starts (see ../shared/design/environment.md)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def spark_session(master: str | None, app: str = "build-kafka-curves"):
    quiet_spark_env()
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(app)
    if master:
        b = b.master(master)
    elif not os.environ.get("SPARK_ENV_LOADED"):  # not under spark-submit, which sets the master
        b = b.master(DEFAULT_MASTER)
    java_opts = f"-Dlog4j2.configurationFile=file:{LOG4J2}"
    b = (
        b.config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
    )
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # ship the package to executors that do not share this file system
    if not spark.sparkContext.master.startswith("local"):
        spark.sparkContext.addPyFile(str(_zip_package()))
    return spark


def _zip_package() -> Path:
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="pipeline-"))
    base = shutil.make_archive(str(tmp / "pipeline"), "zip", root_dir=REPO_ROOT, base_dir="pipeline")
    return Path(base)


def run_points(points_df, master_seed: int):
    """Evaluate every point (a DataFrame with a JSON `point` column) into a DataFrame of records
    (`record`, JSON). Pure function of its inputs: each point seeds its own generator."""
    from pyspark.sql.types import StringType, StructField, StructType

    def evaluate_partition(rows):
        from pipeline.points import evaluate

        for row in rows:
            yield (json.dumps(evaluate(json.loads(row.point), master_seed)),)

    schema = StructType([StructField("record", StringType(), False)])
    return points_df.rdd.mapPartitions(evaluate_partition).toDF(schema)


def source_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "pipeline"], cwd=REPO_ROOT, capture_output=True, text=True
        ).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def collect_with_progress(spark, df, total_points: int, per_task: list[int], show: bool) -> list[dict]:
    """Collect on a worker thread while the main thread draws a tqdm bar (on stderr) from
    Spark's status tracker: a task's points count when the task completes."""
    from tqdm import tqdm

    result: dict[str, object] = {}

    def work() -> None:
        try:
            spark.sparkContext.setJobGroup("curves", "curve points")
            result["rows"] = df.collect()
        except BaseException as e:  # re-raised on the main thread
            result["error"] = e

    th = threading.Thread(target=work, daemon=True)
    th.start()
    tracker = spark.sparkContext.statusTracker()
    with tqdm(total=total_points, unit="pt", disable=not show, file=sys.stderr, desc="curves") as bar:
        done = 0
        while th.is_alive():
            th.join(0.5)
            finished = 0
            for jid in tracker.getJobIdsForGroup("curves"):
                job = tracker.getJobInfo(jid)
                for sid in job.stageIds if job else []:
                    st = tracker.getStageInfo(sid)
                    if st:
                        finished += st.numCompletedTasks
            pts = sum(per_task[: min(finished, len(per_task))])
            if pts > done:
                bar.update(pts - done)
                done = pts
        bar.update(total_points - done)
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return [json.loads(r.record) for r in result["rows"]]  # type: ignore[union-attr]


def run(args: argparse.Namespace, spark=None) -> dict:
    points = grids.GRIDS[args.grid]()
    n_parts = args.partitions or max(2, min(64, len(points) // POINTS_PER_TASK))
    n_parts = min(n_parts, len(points))
    # a fixed shuffle spreads heavy and light points over the tasks; parallelize cuts slices
    order = np.random.default_rng(args.seed).permutation(len(points))
    points = [points[i] for i in order]
    per_task = [(i + 1) * len(points) // n_parts - i * len(points) // n_parts for i in range(n_parts)]
    own = spark is None
    if own:
        spark = spark_session(args.master)
    t0 = time.perf_counter()
    try:
        rdd = spark.sparkContext.parallelize([(json.dumps(p),) for p in points], n_parts)
        df = spark.createDataFrame(rdd, "point string")
        recs = collect_with_progress(
            spark, run_points(df, args.seed), len(points), per_task, not args.no_progress
        )
    finally:
        if own:
            spark.stop()
    wall = time.perf_counter() - t0
    meta = {"grid": args.grid, "seed": args.seed, "source_commit": source_commit(), "wall_s": round(wall, 1)}
    write_curves(Path(args.out), recs, meta)
    return {"points": len(recs), "wall_s": wall, **meta}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        info = run(args)
        print(f"wrote {info['points']} points to {args.out} in {info['wall_s']:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
