"""Docs pages and the API description: what each costs to serve, cold and warm.

Every `/docs/...` page is Markdown rendered on the server (app/docs.py, cached per process by the
file's mtime and size), and `/openapi.json` and `/api/v1/scenario.schema.json` are generated from
the engine's models. Prints, per address, the first answer's time (cold: the render or the
generation; the very first request of the fresh app also pays for setting up the Markdown
renderer), the median of the next ones (warm), the bytes sent and whether a repeat with its
ETag gets a 304.

Run: `.venv/bin/python bench/docs.py [--repeat 20]`.
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

from app.docs import DocsSite  # noqa: E402
from app.main import create_app  # noqa: E402
from app.openapi import OPENAPI_PATH, SCHEMA_PATH  # noqa: E402
from app.settings import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def addresses() -> list[str]:
    """Every page the app serves at /docs (its own whitelist), then the two API documents."""
    return [page.url for page in DocsSite(ROOT).pages().values()] + [OPENAPI_PATH, SCHEMA_PATH]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="warm requests per address (default 20)")
    args = parser.parse_args(argv)
    client = TestClient(create_app(Settings()))
    print(f"{'address':36} {'cold ms':>8} {'warm ms':>8} {'bytes':>8}  304")
    for path in addresses():
        t0 = time.perf_counter()
        first = client.get(path)
        cold = (time.perf_counter() - t0) * 1000
        if first.status_code != 200:
            print(f"{path:36} answered {first.status_code}")
            return 1
        warm = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            client.get(path)
            warm.append((time.perf_counter() - t0) * 1000)
        etag = first.headers.get("etag")
        again = client.get(path, headers={"If-None-Match": etag}) if etag else None
        print(f"{path:36} {cold:8.1f} {statistics.median(warm):8.2f} {len(first.content):8d}  "
              f"{'yes' if again is not None and again.status_code == 304 else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
