"""Memory held by the result caches after crafted requests (issue 9: caches bounded by bytes).

Requests for distinct heavy scenarios (a long beat, many injected faults, a new seed each time,
so nothing is shared) fill the caches; the process's resident memory is printed before, during
and after, with the caches' own byte counts. Settings.simulate_cache_bytes bounds the caches.

Run: `.venv/bin/python bench/cache_memory.py [--requests 40] [--scene d3]`.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # before bench/engine.py

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--scene", default="d3")
    parser.add_argument("--cache-mb", type=int, default=Settings().simulate_cache_bytes // (1024 * 1024))
    args = parser.parse_args(argv)
    app = create_app(Settings(simulate_cache_bytes=args.cache_mb * 1024 * 1024))
    client = TestClient(app)
    client.get(f"/scenes/{args.scene}")
    print(f"cache bound {args.cache_mb} MB; after one page: RSS {rss_mb():.0f} MB")
    faults = "&".join(f"a=isolate:{1 + i % 3}@{5 + 3 * i}" for i in range(10))
    peak = 0.0
    for n in range(args.requests):
        status = client.get(f"/scenes/{args.scene}?seed={1000 + n}&step=40&{faults}").status_code
        peak = max(peak, rss_mb())
        if n % 10 == 9:
            info = app.state.simulator.cache_info()
            held = sum(c["bytes"] for c in info.values()) / 2**20
            print(f"  after {n + 1:3d} crafted requests (last {status}): RSS {rss_mb():.0f} MB, "
                  f"caches hold ~{held:.0f} MB (estimated)")  # fmt: skip
    print(f"peak RSS {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
