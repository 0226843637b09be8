"""Injected faults: what one URL with many `a=VERB:BROKER@STEP` faults costs on a cold cache.

Each injected fault forks the scenario: the app finds the action running at the fault's step
and where the fault landed. Before issue 9 that took a binary search of prefix replays (about
six engine runs per fault, ~305 for 50 faults); now every step names its action, so it takes
one run of each forked scenario. Prints, per fault count, the engine runs and the cold and warm
time of one page. Copied into an older checkout it runs there too, for a before/after.

Run: `.venv/bin/python bench/inject.py [--scene d1] [--counts 1 5 10 20 50]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

# the repository first: bench/engine.py would otherwise shadow the engine package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

import engine  # noqa: E402
from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402

RUNS = [0]
_simulate = engine.simulate


def counted_simulate(*args, **kwargs):
    RUNS[0] += 1
    return _simulate(*args, **kwargs)


engine.simulate = counted_simulate  # the app looks it up on the module at each call

VERBS = ("isolate", "heal", "stop", "resume")


def url(scene: str, count: int) -> str:
    faults = "&".join(f"a={VERBS[i % len(VERBS)]}:{1 + i % 3}@{3 + 2 * i}" for i in range(count))
    return f"/scenes/{scene}?{faults}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="d1")
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 5, 10, 20, 50])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"scene {args.scene}: one page with N injected faults (cold = a new app, no cached runs)")
    for count in args.counts:
        colds, warms = [], []
        for _ in range(args.repeats):
            client = TestClient(create_app(Settings(max_injected_actions=max(count, 20))))
            RUNS[0] = 0
            started = time.perf_counter()
            status = client.get(url(args.scene, count)).status_code
            colds.append(time.perf_counter() - started)
            runs = RUNS[0]
            started = time.perf_counter()
            client.get(url(args.scene, count))
            warms.append(time.perf_counter() - started)
        cold, warm = statistics.median(colds) * 1000, statistics.median(warms) * 1000
        print(f"  N={count:3d}: status {status}, {runs:4d} engine runs, cold median {cold:7.1f} ms, "
              f"warm median {warm:6.1f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
