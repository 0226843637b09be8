"""Evaluate one grid point into the record data/curves/ stores. Pure numpy; Spark only maps it."""

from __future__ import annotations

import numpy as np

from . import latency, loss
from .grid import LATENCY_QUANTILES, point_seed
from .stats import clopper_pearson, weighted_quantiles

QUANTILE_NAMES = {0.5: "p50", 0.99: "p99", 0.999: "p999", 0.9999: "p9999"}
SERIES = ("acks_1", "acks_all", "quorum", "acks_min_isr", "e2e_leader", "e2e_follower")


def evaluate(point: dict, master_seed: int) -> dict:
    seed = point_seed(master_seed, point)
    rng = np.random.default_rng(seed)
    body = latency_record(point, rng) if point["kind"] == "latency" else loss_record(point, rng)
    return {"knobs": point, "seed": seed, **body}


def latency_record(p: dict, rng: np.random.Generator) -> dict:
    res, lane_w = latency.sample_point(
        rng,
        rf=p["replication.factor"],
        min_isr=p["min.insync.replicas"],
        lag_ms=p["replica.lag.time.max.ms"],
        load_rps=p["load_rps"],
        body_median_ms=p["body_median_ms"],
        body_sigma=p["body_sigma"],
        straggler_q=p["straggler_q"],
        straggler_ms=max(p["straggler_ms"], 1),
        lanes=p["lanes"],
        requests=p["requests"],
    )
    # every request counts, e2e_follower included: the kernel treats the requests as a window
    # of a steady stream, so the last ones are not left waiting for an append that never comes
    ww = np.repeat(lane_w, p["requests"])
    out = {}
    for name in SERIES:
        v = res[name].astype(np.float64).ravel()
        timed_out = v < 0
        v = np.where(timed_out, np.inf, v)
        q = weighted_quantiles(v, ww, list(LATENCY_QUANTILES))
        series = {
            "n": q["n"],
            "n_eff": round(q["n_eff"], 1),
            "timeout_frac": float(ww[timed_out].sum() / ww.sum()),
        }
        for qq, (val, lo, hi) in q["quantiles"].items():
            series[QUANTILE_NAMES[qq]] = [_ms(val), _ms(lo), _ms(hi)]
        out[name] = series
    return {"latency_ms": out}


def _ms(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def loss_record(p: dict, rng: np.random.Generator) -> dict:
    rf = p["replication.factor"]
    r = loss.simulate(
        rng,
        p["trials"],
        rf=rf,
        min_isr=p["min.insync.replicas"],
        afr=p["afr"],
        repair_h=p["repair_h"],
        power_per_year=p["power_events_per_year"],
        blast_racks=p["blast_racks"],
        rack_aware=p["rack_aware"],
        unclean=p["unclean.leader.election.enable"],
        flush_every=p["flush.messages"] == 1,
    )
    n = r["trials"]
    rec = {
        "trials": n,
        "p_loss_year": _prop(r["lost"], n),
        "p_unavailable_year": _prop(r["unavailable"], n),
        "unavailable_h_per_year": r["unavailable_h_total"] / n,
        "p_all_down_instant": _prop(r["all_down_instant"], n),
    }
    # the closed form holds only for independent failures and when a single replica's loss
    # cannot lose data on its own (min.insync.replicas does not change whether all copies die)
    if p["power_events_per_year"] == 0:
        rec["closed_form"] = loss.closed_form(rf=rf, afr=p["afr"], repair_h=p["repair_h"])
    else:
        rec["closed_form"] = None
    return rec


def _prop(k: int, n: int) -> dict:
    lo, hi = clopper_pearson(k, n)
    return {"k": int(k), "p": k / n, "ci95": [lo, hi]}
