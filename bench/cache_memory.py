"""Memory held by the result caches after crafted requests (issue 9: caches bounded by bytes).

Requests for distinct heavy scenarios fill the caches: each names a heavy scene (largest
replication factor), a new seed (so nothing is shared with an earlier request) and the most
injected faults a URL may carry. The process's resident memory is printed before, during and
after, with the caches' own estimated byte counts. Settings.simulate_cache_bytes bounds them.

Run: `.venv/bin/python bench/cache_memory.py [--requests 40] [--faults 20] [--cache-mb 96] [--kinds 1]`.
Copied into an older checkout, it runs there too (without the byte figures), for a before/after.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # before bench/engine.py

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402

# (scene, knobs) whose all-steps replays are the largest (estimated bytes per page). With 20
# faults, d3's unbalanced-racks beat on 6 partitions holds ~49 MB of per-step states, d4's
# power-cut beats ~6-7 MB, the rest 1.5-4 MB; entry-count caches kept 24 of the heaviest.
HEAVY = [
    ("d3", "beat=unbalanced-racks&partitions=6&flush.messages=10000"),
    ("d4", "beat=site-power-cut&partitions=6&replication.factor=5&flush.messages=10000"),
    ("05", "replication.factor=5"),
    ("04a", "replication.factor=5"),
]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def crafted(n: int, faults: int, kinds: int) -> str:
    scene, knobs = HEAVY[n % kinds]
    # isolate a broker, run until quiet, heal, run until quiet, ...: every fault plays out in full
    verbs = ("isolate:{b}", "quiet", "heal:{b}", "quiet")
    injected = "&".join(f"a={verbs[i % 4].format(b=1 + i % 3)}@{5 + 7 * i}" for i in range(faults))
    return f"/scenes/{scene}?{knobs}&seed={1000 + n}&step=40&{injected}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--faults", type=int, default=20)
    parser.add_argument("--cache-mb", type=int, default=None)
    parser.add_argument("--every", type=int, default=8)
    parser.add_argument(
        "--kinds", type=int, default=len(HEAVY), help="use the first K heavy scenes (1: the heaviest only)"
    )
    args = parser.parse_args(argv)
    fields = {f.name for f in dataclasses.fields(Settings)}
    chosen: dict[str, int] = {}
    if "simulate_cache_bytes" in fields and args.cache_mb is not None:
        chosen["simulate_cache_bytes"] = args.cache_mb * 1024 * 1024
    chosen["max_injected_actions"] = max(args.faults, Settings().max_injected_actions)
    settings = Settings(**chosen)
    bound = getattr(settings, "simulate_cache_bytes", None)
    app = create_app(settings)
    client = TestClient(app)
    client.get("/scenes/05")
    what = f"{bound // 2**20} MB" if bound else "none (entry counts only)"
    print(f"cache byte bound: {what}; after one page: RSS {rss_mb():.0f} MB")
    peak = 0.0
    for n in range(args.requests):
        status = client.get(crafted(n, args.faults, max(1, min(args.kinds, len(HEAVY))))).status_code
        peak = max(peak, rss_mb())
        if n % args.every == args.every - 1:
            info = app.state.simulator.cache_info() if hasattr(app.state, "simulator") else {}
            held = sum(c.get("bytes", 0) for c in info.values() if isinstance(c, dict)) / 2**20
            extra = f", caches hold ~{held:.0f} MB (estimated)" if bound else ""
            print(f"  after {n + 1:3d} crafted requests (last {status}): RSS {rss_mb():.0f} MB{extra}")
    print(f"peak RSS {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
