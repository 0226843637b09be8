"""e2e_follower (a consumer reading from a follower, KIP-392) under steady load.

The sampled requests are a window of a steady stream. A follower learns a HW on its next fetch
answer; under load that answer comes within a fetch round trip or an append gap, never after
the idle long-poll (replica.fetch.wait.max.ms), which only an idle partition waits out. The
committed curves once showed e2e_follower P99 ~530 ms at 1000 requests/s because the window's
last requests had no next append: these tests would have caught it.
"""

import math

import numpy as np
import pytest

from pipeline import latency as K
from pipeline.stats import weighted_quantiles


def _steady_inputs(rng, lanes, requests, load_rps, rf=3, stall_ms=0, episode_p=0.0):
    """The inputs sample_point builds, with the follower delays and episodes returned too."""
    foll = rf - 1
    step = 1000.0 / load_rps
    append = np.floor(np.arange(requests) * step).astype(np.int64)
    origin = -(stall_ms + K.FETCH_WAIT_MS + 100) - rng.integers(0, 5000, size=lanes)
    body = np.maximum(np.rint(3.0 * np.exp(0.8 * rng.standard_normal((lanes, foll)))), 0).astype(np.int64)
    has_ep = rng.random((lanes, foll)) < episode_p
    start = rng.integers(-stall_ms - 200, int(append[-1]) + 200, size=(lanes, foll))
    stall_from = np.where(has_ep, start, K.NEVER_MS)
    stall = np.where(has_ep, stall_ms, 0).astype(np.int64)
    return step, append, body, origin, stall_from, stall


@pytest.mark.parametrize("load_rps", [100, 1000, 5000])
def test_follower_learns_within_one_round_trip_of_the_leader(load_rps):
    """Every request, the window's last ones included: the follower's view trails the leader's
    by at most one fetch round trip (2 hops + its fetch delay) plus one gap between appends
    (a parked fetch is answered by the next append), never by the 500 ms long-poll."""
    rng = np.random.default_rng(load_rps)
    step, append, body, origin, stall_from, stall = _steady_inputs(rng, 400, 64, load_rps)
    res = K.simulate(
        append, body, origin, stall_from, stall, rf=3, min_isr=2, lag_ms=30000, stream=K.PeriodicAppends(step)
    )
    lag = res["e2e_follower"] - res["e2e_leader"]
    bound = 2 * K.NETWORK_DELAY_MS + body[:, :1] + math.ceil(step)
    assert (res["e2e_leader"] > 0).all()
    assert (lag >= 2).all()
    assert (lag <= bound).all(), int((lag - bound).max())


def test_follower_p99_does_not_depend_on_the_window_length():
    """The same lanes (same seed, so the same follower delays) observed for 32 or 256 requests
    at 1000 requests/s: the same e2e_follower P99, within the leader's P99 plus a round trip."""
    kw = dict(
        rf=3,
        min_isr=2,
        lag_ms=30000,
        load_rps=1000,
        body_median_ms=3.0,
        body_sigma=0.8,
        straggler_q=0.0,
        straggler_ms=1,
        lanes=1024,
    )
    p99 = {}
    for n in (32, 256):
        res, w = K.sample_point(np.random.default_rng(42), requests=n, **kw)
        ww = np.repeat(w, n)
        for name in ("e2e_leader", "e2e_follower"):
            v = res[name].astype(float).ravel()
            assert (v > 0).all()
            p99[name, n] = weighted_quantiles(v, ww, [0.99])["quantiles"][0.99][0]
    assert abs(p99["e2e_follower", 32] - p99["e2e_follower", 256]) <= 3, p99
    body_p99 = 3.0 * math.exp(0.8 * 2.326)
    for n in (32, 256):
        assert p99["e2e_follower", n] <= p99["e2e_leader", n] + 2 + body_p99 + 1, p99


@pytest.mark.parametrize(
    "load_rps,stall_ms,episode_p",
    [(1000, 0, 0.0), (5000, 2000, 0.5), (100, 2000, 0.5), (1000, 3000, 0.7), (100, 20000, 0.5)],
)
def test_follower_replay_equals_a_longer_simulated_stream(load_rps, stall_ms, episode_p):
    """The replay after the window is what fetch_loop gives when the stream really goes on:
    simulate the same lanes with enough extra appends to cover every HW advance, and read the
    follower's first answer after each of the window's HW advances from that trace. The last
    case stalls past the lag (10 s): the straggler is shrunk out and later rejoins."""
    rng = np.random.default_rng(load_rps + stall_ms)
    n = 40
    step, append, body, origin, stall_from, stall = _steady_inputs(
        rng, 48, n, load_rps, stall_ms=stall_ms, episode_p=episode_p
    )
    res = K.simulate(
        append, body, origin, stall_from, stall, rf=3, min_isr=2, lag_ms=10000, stream=K.PeriodicAppends(step)
    )
    sent = append[None, :] - K.NETWORK_DELAY_MS
    hw = np.where(res["e2e_leader"] >= 0, res["e2e_leader"] + sent, K.NEVER_MS)
    horizon = int(hw[hw < K.NEVER_MS].max()) + 1000
    longer = np.floor(np.arange(int(horizon / step) + 1) * step).astype(np.int64)
    trace = K.fetch_loop(longer, body, origin, stall_from, stall)
    vis = K.follower_visible(trace, hw)
    want = np.where(vis < K.NEVER_MS, vis - sent, -1)
    assert np.array_equal(res["e2e_follower"], want)
    # and the window's own HW advances do not depend on the appends after it
    longer_res = K.simulate(longer, body, origin, stall_from, stall, rf=3, min_isr=2, lag_ms=10000)
    assert np.array_equal(longer_res["e2e_leader"][:, :n], res["e2e_leader"])
