"""Q&A search: SQLite FTS5 against bm25s on the learner questions (issue 8). Prints figures.

For each backend: top-1 and top-3 accuracy over tests/scenes/qa_questions.toml (a question
counts when one of its expected answers is among the first 1 or 3 results), the median and p99
query latency over every question repeated, the index build time, and the questions each one
misses in its top three.

Run: python bench/qa_search.py [--repeats N] [--misses]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import qa  # noqa: E402

QUESTIONS = ROOT / "tests" / "scenes" / "qa_questions.toml"


def load() -> list[dict]:
    with QUESTIONS.open("rb") as fh:
        return tomllib.load(fh)["q"]


def measure(backend: str, questions: list[dict], repeats: int) -> dict:
    t0 = time.perf_counter()
    qa._index(backend)
    build_ms = (time.perf_counter() - t0) * 1000
    top1 = top3 = 0
    misses = []
    for q in questions:
        ids = [h.qa.id for h in qa.search(q["text"], limit=3, backend=backend)]
        want = set(q["expect"])
        top1 += bool(ids[:1] and ids[0] in set(q.get("first", q["expect"])))
        if want & set(ids):
            top3 += 1
        else:
            misses.append((q["text"], ids))
    times = []
    qa.search("warm up the spelling vocabulary", backend=backend)
    for _ in range(repeats):
        for q in questions:
            t = time.perf_counter()
            qa.search(q["text"], limit=5, backend=backend)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"n": len(questions), "top1": top1, "top3": top3, "build_ms": build_ms,
            "p50_ms": statistics.median(times), "p99_ms": times[int(len(times) * 0.99) - 1], "misses": misses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args(argv)
    questions = load()
    for backend in qa.BACKENDS:
        r = measure(backend, questions, args.repeats)
        print(f"{backend:6} top-1 {r['top1']}/{r['n']} ({100 * r['top1'] / r['n']:.1f} %)  "
              f"top-3 {r['top3']}/{r['n']} ({100 * r['top3'] / r['n']:.1f} %)  "
              f"latency p50 {r['p50_ms']:.2f} ms p99 {r['p99_ms']:.2f} ms  build {r['build_ms']:.0f} ms")
        if args.misses:
            for text, ids in r["misses"]:
                print(f"    miss: {text!r} -> {ids}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
