"""The kernels against the engine, the product's one semantics.

Latency: exact equality of `done_ms - sent_ms` on deterministic scenarios (fixed per-follower
fetch delays, straggler episodes that end by the follower catching up or by the ISR shrink),
then a two-sample Kolmogorov-Smirnov test on sampled ones. Loss: the decision "an acknowledged
write was lost / the partition is online at the end" on deterministic failure timelines.
"""

import numpy as np
import pytest
from scipy.stats import ks_2samp

import engine
from pipeline import latency as K
from pipeline import loss as L

MODES = {
    "acks_all": ("all", None),
    "quorum": ("all", 2),
    "acks_min_isr": ("min.insync.replicas", None),
    "acks_1": (1, None),
}


def engine_latencies(mode, delays, produce_at, *, lag_ms=30000, min_isr=2, slow=None, seed=1):
    """Run the engine: followers with fixed fetch delays, produces at the given times, an
    optional straggler episode (broker, from_ms, stall_ms). Returns done_ms - sent_ms (-1 if not acked)."""
    acks, quorum = MODES[mode]
    brokers = [{"id": 1}] + [{"id": i + 2, "fetch_delay_ms": d} for i, d in enumerate(delays)]
    events = [(t, 0, None) for t in produce_at]
    if slow:
        b, t, ms = slow
        events += [(t, 1, ("slow", b, ms)), (t + ms, 1, ("slow", b, delays[b - 2]))]
    actions, now = [], 0
    for t, _, what in sorted(events, key=lambda e: (e[0], e[1])):
        if t > now:
            actions.append({"do": "advance", "ms": t - now})
            now = t
        if what is None:
            actions.append({"do": "produce", "records": [f"r{len(actions)}"]})
        else:
            actions.append({"do": "slow", "broker": what[1], "ms": what[2]})
    actions.append({"do": "advance", "ms": 80000})
    topic = {"replicas": [b["id"] for b in brokers], "min.insync.replicas": min_isr}
    sc = {
        "version": 1,
        "seed": seed,
        "brokers": brokers,
        "topic": topic,
        "producer": {"acks": acks, "enable.idempotence": acks == "all"},
        "timing": {"replica.lag.time.max.ms": lag_ms},
        "actions": actions,
    }
    if quorum:
        topic["quorum.required.acks"] = quorum
        sc["controller"] = {"election": "largest_leo"}
    res = engine.simulate(sc)
    return [p["done_ms"] - p["sent_ms"] if p["outcome"] == "acked" else -1 for p in res["produce"]]


def kernel_latencies(delays, produce_at, *, lag_ms=30000, min_isr=2, slow=None):
    foll = len(delays)
    body = np.array([delays], dtype=np.int64)
    stall_from = np.full((1, foll), K.NEVER_MS)
    stall = np.zeros((1, foll), dtype=np.int64)
    if slow:
        b, t, ms = slow
        stall_from[0, b - 2], stall[0, b - 2] = t, ms
    append = np.array(produce_at) + K.NETWORK_DELAY_MS
    return K.simulate(
        append, body, np.array([0]), stall_from, stall, rf=foll + 1, min_isr=min_isr, lag_ms=lag_ms
    )


DETERMINISTIC = [
    # idle follower fetches parked at the leader, and fetches caught in flight (t=1520, 1601)
    ((5, 20), [1000, 1520, 1600, 1601, 1603, 2400], None, 30000),
    ((5, 20, 7), [1000, 1010, 1300, 5000], None, 30000),
    ((0, 0, 0, 0), [700, 701, 702, 5000], None, 10000),
    ((40, 2), [100, 150, 200, 250, 300, 350, 400], None, 30000),
    # a straggler stalls 60 s: acks=all waits for the shrink at the first check > lag (10 s)
    ((5, 20), [2000, 2500, 3000, 9000], (3, 1000, 60000), 10000),
    # a 20 s stall: shrink, then the follower catches up and holds the HW again
    ((3, 9), [2000, 2500, 3000, 9000, 12000, 16000, 30000], (3, 1000, 20000), 10000),
    # a stall shorter than the lag ends by the follower's own fetch
    ((3, 9, 4), [2000, 2300, 4000, 6500], (2, 1500, 4000), 30000),
    ((3, 9, 4), [20000, 26000, 40000], (4, 12000, 45000), 30000),
]


@pytest.mark.parametrize("delays,produce_at,slow,lag_ms", DETERMINISTIC)
def test_latency_kernel_equals_engine(delays, produce_at, slow, lag_ms):
    got = kernel_latencies(delays, produce_at, lag_ms=lag_ms, slow=slow)
    for mode in MODES:
        want = engine_latencies(mode, delays, produce_at, lag_ms=lag_ms, slow=slow)
        assert got[mode][0].tolist() == want, (mode, delays, produce_at, slow)


def test_kernel_sees_the_shrink_not_the_stall():
    """The stall outlasts the lag, so completion is the shrink's: check at 15 000 ms (first
    check more than 10 s after the follower was last caught up at 543), commit +2, answer +1."""
    [lat] = engine_latencies("acks_all", (5, 20), [2000], lag_ms=10000, slow=(3, 1000, 60000))
    assert lat == 15003 - 2000
    assert kernel_latencies((5, 20), [2000], lag_ms=10000, slow=(3, 1000, 60000))["acks_all"][0, 0] == lat


def test_latency_kernel_matches_engine_in_distribution():
    """Delays drawn from one lognormal; one produce at a random phase of the fetch loops."""
    rng = np.random.default_rng(2024)
    n = 250
    delays = np.maximum(np.rint(3 * np.exp(0.8 * rng.standard_normal((n, 2)))), 0).astype(int)
    at = rng.integers(1000, 1600, size=n)
    eng = {m: [] for m in ("acks_all", "quorum")}
    for d, t in zip(delays, at, strict=True):
        for m in eng:
            eng[m] += engine_latencies(m, tuple(int(x) for x in d), [int(t)])
    # the kernel: its own draws from the same distribution, many lanes at once; shifting the
    # engine's start (origin) is the same as producing at a random time
    kn = 4000
    kd = np.maximum(np.rint(3 * np.exp(0.8 * rng.standard_normal((kn, 2)))), 0).astype(np.int64)
    origin = -rng.integers(1000, 1600, size=kn)
    res = K.simulate(
        np.array([1]),
        kd,
        origin,
        np.full((kn, 2), K.NEVER_MS),
        np.zeros((kn, 2), dtype=np.int64),
        rf=3,
        min_isr=2,
        lag_ms=30000,
    )
    for m, sample in eng.items():
        assert ks_2samp(sample, res[m][:, 0]).pvalue > 0.01, m


# --- loss: decide() against the engine's lost_acked_records / final.partition.online ---------


def engine_timeline(rf, timeline, *, unclean, flush_every, min_isr=1):
    """Replay (t, "down"/"up", replicas, destroys_disk) in the engine, one record after each event."""
    actions = [{"do": "produce", "records": ["r0"]}, {"do": "settle"}]
    for i, (_t, kind, reps, destroys) in enumerate(timeline):
        ids = [r + 1 for r in reps]
        if kind == "down" and destroys:
            actions += [{"do": "crash", "broker": b, "lose_unflushed": True} for b in ids]
        elif kind == "down":
            actions.append({"do": "power_loss", "brokers": ids})
        else:
            actions += [{"do": "restart", "broker": b} for b in ids]
        actions += [{"do": "advance", "ms": 20000}, {"do": "produce", "records": [f"r{i + 1}"]}]
        actions.append({"do": "advance", "ms": 20000})
    actions.append({"do": "advance", "ms": 130000})
    sc = {
        "version": 1,
        "seed": 3,
        "brokers": [{"id": i + 1} for i in range(rf)],
        "topic": {
            "replicas": list(range(1, rf + 1)),
            "min.insync.replicas": min_isr,
            "unclean.leader.election.enable": unclean,
            "flush.messages": 1 if flush_every else None,
        },
        "controller": {"eligible.leader.replicas.version": 0},
        "timing": {"unclean.leader.election.interval.ms": 10000},
        "actions": actions,
    }
    res = engine.simulate(sc)
    return bool(res["lost_acked_records"]), res["final"]["partition"]["online"]


D, U = "down", "up"
TIMELINES = [
    # (rf, timeline, unclean, flush_every)
    (3, [(1, D, (1,), True), (2, U, (1,), True)], False, False),  # one disk lost, repaired
    (3, [(1, D, (1,), True), (2, D, (2,), True), (3, U, (1, 2), True)], False, False),  # two of three
    (2, [(1, D, (0,), True), (2, D, (1,), True), (3, U, (0,), True), (4, U, (1,), True)], False, False),
    (2, [(1, D, (0,), True), (2, D, (1,), True), (3, U, (1,), True)], False, False),  # last ISR back empty
    (3, [(1, D, (0, 1, 2), False), (2, U, (0, 1, 2), False)], False, False),  # S13: power loss, no flush
    (3, [(1, D, (0, 1, 2), False), (2, U, (0, 1, 2), False)], False, True),  # same, flush.messages=1
    (3, [(1, D, (0, 1), False), (2, U, (0, 1), False)], False, False),  # one replica keeps power
    # unclean: the ISR shrinks to B2, B2 dies, B1 returns: elected (lossy) or kept offline
    (2, [(1, D, (0,), False), (2, D, (1,), False), (3, U, (0,), False)], True, True),
    (2, [(1, D, (0,), False), (2, D, (1,), False), (3, U, (0,), False)], False, True),
    (3, [(1, D, (2,), False), (2, D, (0, 1), False), (3, U, (2,), False)], True, True),
    (3, [(1, D, (2,), False), (2, D, (0, 1), False), (3, U, (2,), False)], False, True),
]


@pytest.mark.parametrize("rf,timeline,unclean,flush_every", TIMELINES)
def test_loss_decision_equals_engine(rf, timeline, unclean, flush_every):
    want_lost, want_online = engine_timeline(rf, timeline, unclean=unclean, flush_every=flush_every)
    got = L.decide(timeline, rf=rf, min_isr=1, unclean=unclean, flush_every=flush_every)
    assert (got["lost"], got["online"]) == (want_lost, want_online)


def test_rf2_frozen_high_watermark_rejoin_matches_engine():
    """RF=2, min.insync.replicas=2: the shrink leaves the ISR below min, the HW freezes until the
    straggler rejoins. The engine (maybeExpandIsr) takes it back at its first fetch after the
    stall, whose offset already reaches the frozen HW (not the LEO), then the HW jumps."""
    delays, at, slow = (5,), [2000, 2500, 3000, 9000, 25000], (2, 1000, 20000)
    got = kernel_latencies(delays, at, lag_ms=10000, slow=slow)
    want = engine_latencies("acks_min_isr", delays, at, lag_ms=10000, slow=slow)
    assert got["acks_min_isr"][0].tolist() == want
    for mode in ("acks_all", "quorum"):
        assert got[mode][0].tolist() == engine_latencies(mode, delays, at, lag_ms=10000, slow=slow), mode
