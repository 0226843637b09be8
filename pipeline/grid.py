"""The grids the job runs: every point is a plain dict of knobs, named by Kafka's config keys
where Kafka has one. `shipped` is what data/curves/ holds; `smoke` is a tiny slice for tests.

Sizes: the shipped grid was sized to finish within ten minutes on two cores (bench/pipeline.py).
"""

from __future__ import annotations

import itertools
import json
import zlib

LATENCY_QUANTILES = (0.5, 0.99, 0.999, 0.9999)

# lognormal follower fetch delay (the body): median and sigma, in ms
BODY_MEDIAN_MS = 3.0
BODY_SIGMA = 0.8


def _latency(rfs, min_isrs, lags, stragglers, loads, lanes, requests):
    for rf, mi, lag, (q, s_ms), load in itertools.product(rfs, min_isrs, lags, stragglers, loads):
        if mi > rf:
            continue
        yield {
            "kind": "latency",
            "replication.factor": rf,
            "min.insync.replicas": mi,
            "replica.lag.time.max.ms": lag,
            "straggler_q": q,
            "straggler_ms": s_ms,
            "load_rps": load,
            "body_median_ms": BODY_MEDIAN_MS,
            "body_sigma": BODY_SIGMA,
            "lanes": lanes,
            "requests": requests,
        }


def _loss(rfs, min_isrs, afrs, repairs, domains, uncleans, trials):
    for rf, mi, afr, rep, dom, unclean in itertools.product(rfs, min_isrs, afrs, repairs, domains, uncleans):
        if mi > rf:
            continue
        rate, blast, rack_aware, flush = dom
        yield {
            "kind": "loss",
            "replication.factor": rf,
            "min.insync.replicas": mi,
            "afr": afr,
            "repair_h": rep,
            "power_events_per_year": rate,
            "blast_racks": blast,
            "rack_aware": rack_aware,
            "flush.messages": 1 if flush else None,
            "unclean.leader.election.enable": unclean,
            "trials": trials,
        }


# (power events per year, racks each takes down, rack-aware placement, flush every message)
DOMAINS_SHIPPED = [
    (0.0, 0, True, False),
    (0.0, 0, False, False),
    (1.0, 1, True, False),
    (1.0, 1, False, False),
    (1.0, 1, True, True),
    (1.0, 1, False, True),
    (1.0, 3, True, False),
    (1.0, 3, True, True),
]

STRAGGLERS_SHIPPED = [(0.0, 0)] + [(q, s) for s in (2000, 20000) for q in (1e-4, 1e-3, 1e-2)]


def shipped() -> list[dict]:
    pts = list(
        _latency((2, 3, 4, 5), (1, 2), (10000, 30000), STRAGGLERS_SHIPPED, (100, 1000, 5000), 2048, 128)
    )
    pts += list(
        _loss((1, 2, 3, 4, 5), (1, 2), (0.01, 0.04, 0.10), (24, 168), DOMAINS_SHIPPED, (False, True), 30000)
    )
    return pts


def smoke() -> list[dict]:
    pts = list(_latency((3,), (2,), (10000,), [(0.0, 0), (1e-3, 20000)], (1000,), 256, 64))
    pts += list(
        _loss(
            (1, 2, 3), (1,), (0.10,), (720,), [(0.0, 0, True, False), (1.0, 3, True, False)], (False,), 20000
        )
    )
    return pts


GRIDS = {"shipped": shipped, "smoke": smoke}


def point_key(point: dict) -> str:
    """Canonical text of a point's knobs (sample sizes excluded), used for its seed."""
    knobs = {k: v for k, v in point.items() if k not in ("lanes", "requests", "trials")}
    return json.dumps(knobs, sort_keys=True)


def point_seed(master_seed: int, point: dict) -> int:
    """The seed one point's sampler uses: stable across runs, grids and machines."""
    return (int(master_seed) * 1_000_003 + zlib.crc32(point_key(point).encode())) % 2**63
