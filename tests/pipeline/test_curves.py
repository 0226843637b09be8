"""The job end to end on local Spark (smoke grid), the reader, reproducibility, and the
analytic checks the curves must pass."""

import argparse
import json

import numpy as np
import pytest

from app import curves
from pipeline import grid, latency, loss, points
from pipeline.stats import clopper_pearson, weighted_quantiles


@pytest.fixture(scope="module")
def smoke_dir(spark, tmp_path_factory):
    from pipeline.main import run

    out = tmp_path_factory.mktemp("curves")
    args = argparse.Namespace(
        grid="smoke", master=None, out=str(out), seed=11, partitions=2, no_progress=True
    )
    info = run(args, spark=spark)
    assert info["points"] == len(grid.smoke())
    return out


def test_smoke_grid_writes_both_files_with_provenance(smoke_dir):
    for kind in ("latency", "loss"):
        doc = json.loads((smoke_dir / f"{kind}.json").read_text())
        assert doc["schema_version"] == curves.SCHEMA_VERSION
        assert doc["seed"] == 11 and doc["grid"] == "smoke" and len(doc["source_commit"]) >= 40
        for p in doc["points"]:
            assert isinstance(p["seed"], int)


def test_reader_answers_at_the_nearest_point(smoke_dir):
    pt = curves.latency(str(smoke_dir), **{"replication.factor": 3, "straggler_q": 0.002})
    assert pt["knobs"]["straggler_q"] == 0.001 and not pt["exact"]
    s = pt["series"]["acks_all"]
    assert s["n"] > 0 and s["p999"][1] <= s["p999"][0] <= s["p999"][2]
    lo = curves.loss(str(smoke_dir), **{"replication.factor": 2, "power_events_per_year": 0.0})
    assert lo["closed_form"]["p_all_down_instant"] == pytest.approx(lo["closed_form"]["p"] ** 2)
    with pytest.raises(KeyError):
        curves.loss(str(smoke_dir), colour="red")


def test_a_point_regenerates_from_its_recorded_seed(smoke_dir):
    doc = json.loads((smoke_dir / "latency.json").read_text())
    stored = doc["points"][1]
    again = points.evaluate(stored["knobs"], doc["seed"])
    assert again["seed"] == stored["seed"]
    for mode, s in stored["latency_ms"].items():
        for q in ("p50", "p99", "p999"):
            v, lo, hi = s[q]
            assert lo <= again["latency_ms"][mode][q][0] <= hi


def test_monte_carlo_agrees_with_p_to_the_rf_under_independence():
    """Where the Monte Carlo can resolve it (expected count >= 20), the closed form sits in the
    95 % interval, both the all-down-at-an-instant probability p^RF and the per-year rate."""
    checked = 0
    for rf, afr, repair_h in [(1, 0.10, 24), (1, 0.04, 168), (2, 0.10, 720), (2, 0.10, 168), (3, 0.10, 720)]:
        n = 100_000
        r = loss.simulate(
            np.random.default_rng(rf * 7 + int(repair_h)),
            n,
            rf=rf,
            min_isr=1,
            afr=afr,
            repair_h=repair_h,
            power_per_year=0.0,
            blast_racks=0,
            rack_aware=True,
            unclean=False,
            flush_every=False,
        )
        cf = loss.closed_form(rf=rf, afr=afr, repair_h=repair_h)
        for k, p in [(r["all_down_instant"], cf["p_all_down_instant"]), (r["lost"], cf["p_loss_year"])]:
            if p * n >= 20:
                lo, hi = clopper_pearson(k, n)
                assert lo <= p <= hi, (rf, afr, repair_h, k, p)
                checked += 1
    assert checked >= 5


def _p999(mode, **kw):
    res, w = latency.sample_point(
        np.random.default_rng(5),
        lanes=1024,
        requests=96,
        body_median_ms=3.0,
        body_sigma=0.8,
        load_rps=1000,
        **kw,
    )
    v = res[mode].astype(float).ravel()
    return weighted_quantiles(np.where(v < 0, np.inf, v), np.repeat(w, 96), [0.999])["quantiles"][0.999][0]


@pytest.mark.parametrize("rf", [3, 5])
def test_acks_all_tail_is_never_below_quorum(rf):
    kw = dict(rf=rf, min_isr=2, lag_ms=10000, straggler_q=1e-3, straggler_ms=20000)
    assert _p999("acks_all", **kw) >= _p999("quorum", **kw)


def test_p999_jumps_to_the_straggler_scale_at_one_in_a_thousand():
    """RF=3 acks=all waits on a straggler with chance ~2q: below 0.1 % the P999 stays at the
    body's scale (tens of ms); above it, it is seconds (the stall or the shrink)."""
    kw = dict(rf=3, min_isr=2, lag_ms=10000, straggler_ms=20000)
    below = _p999("acks_all", straggler_q=1e-4, **kw)  # waits ~0.02 % of the time
    above = _p999("acks_all", straggler_q=2e-3, **kw)  # ~0.4 %
    assert below < 200
    assert above > 1000
