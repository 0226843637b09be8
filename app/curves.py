"""Read data/curves/ (written by the offline pipeline) for the web app. Imports neither pyspark
nor numpy, and lives with the app so the image, which carries no pipeline/, has it.

    >>> from app import curves
    >>> pt = curves.latency(**{"replication.factor": 3, "min.insync.replicas": 2,
    ...                        "replica.lag.time.max.ms": 30000, "straggler_q": 0.001})
    >>> pt["series"]["acks_all"]["p999"]   # [value, ci95 low, ci95 high] in ms, or None
    >>> pt["series"]["acks_all"]["n"], pt["knobs"], pt["seed"], pt["source_commit"]

Each answer is the *nearest stored grid point* (knobs compared on a log scale where they span
decades), never an interpolation, so what is shown is what was simulated, with the sample
count and interval behind it. `exact` says whether every asked knob matched.
File layout and field meanings: data/curves/schema.json.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

CURVES_DIR = Path(__file__).resolve().parent.parent / "data" / "curves"
SCHEMA_VERSION = 1
LOG_KNOBS = frozenset({"straggler_q", "straggler_ms", "load_rps", "afr", "repair_h", "power_events_per_year"})
LATENCY_MODES = ("acks_1", "acks_all", "quorum", "acks_min_isr")


@lru_cache(maxsize=4)
def load(kind: str, directory: str | None = None) -> dict:
    """The whole document for `kind` ("latency" or "loss"), cached."""
    path = Path(directory or CURVES_DIR) / f"{kind}.json"
    doc = json.loads(path.read_text())
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path}: schema_version {doc.get('schema_version')}, expected {SCHEMA_VERSION}")
    return doc


def _distance(asked: dict, knobs: dict) -> float:
    d = 0.0
    for key, want in asked.items():
        have = knobs.get(key)
        if want is None or have is None or isinstance(want, bool) or isinstance(want, str):
            d += 0.0 if want == have else 1e6
            continue
        if key in LOG_KNOBS:
            d += (math.log10(max(want, 1e-9)) - math.log10(max(have, 1e-9))) ** 2
        else:
            scale = abs(want) if want else 1.0
            d += ((want - have) / scale) ** 2
    return d


def nearest(kind: str, directory: str | None = None, **knobs) -> dict:
    """The stored point of `kind` nearest to the given knobs (unknown knobs are an error)."""
    doc = load(kind, directory)
    pts = doc["points"]
    allowed = set(pts[0]["knobs"])
    unknown = set(knobs) - allowed
    if unknown:
        raise KeyError(f"unknown knobs for {kind}: {sorted(unknown)}; known: {sorted(allowed)}")
    best = min(pts, key=lambda p: _distance(knobs, p["knobs"]))
    exact = all(best["knobs"].get(k) == v for k, v in knobs.items())
    return {"exact": exact, "source_commit": doc["source_commit"], "grid": doc["grid"], **best}


def latency(directory: str | None = None, **knobs) -> dict:
    """Latency percentiles at the nearest grid point: `series[mode][p50|p99|p999|p9999]` is
    [ms, ci95 low, ci95 high]; modes acks_1, acks_all, quorum (KIP-250, 2 of RF), acks_min_isr
    (KIP-926), and end-to-end e2e_leader / e2e_follower (when a consumer reading from the leader
    / from a follower can see the record); `n`, `n_eff`, `timeout_frac` per series."""
    pt = nearest("latency", directory, **knobs)
    pt["series"] = pt.pop("latency_ms")
    return pt


def loss(directory: str | None = None, **knobs) -> dict:
    """Loss and availability at the nearest grid point: p_loss_year, p_unavailable_year and
    p_all_down_instant as {"k", "p", "ci95": [lo, hi]} over `trials` partition-years, and
    `closed_form` (p, p^RF, per-year rate) where failures are independent, else None."""
    return nearest("loss", directory, **knobs)


def axis(kind: str, knob: str, directory: str | None = None) -> list:
    """The distinct values a knob takes in the stored grid (for building chart axes)."""
    return sorted({p["knobs"][knob] for p in load(kind, directory)["points"]}, key=lambda v: (v is None, v))
