"""Theory of operation: the produce-latency kernel, vectorised over many independent partitions.

The engine (engine/sim.py) is the product's one semantics; this module re-derives, in numpy, the
part of it that decides *when a produce request completes*, so that millions of requests can be
simulated per second. tests/pipeline/test_kernel_vs_engine.py proves the two agree: exactly on
deterministic scenarios, and by a two-sample Kolmogorov-Smirnov test on sampled ones.

The engine's rules that matter here (docs/engine-api.md "Timing model", kafka-semantics.md):

- a message takes NETWORK_DELAY_MS; the leader appends the moment a produce arrives, so the
  producer's request sent at t0 is appended at a = t0 + 1;
- each follower runs a fetch loop. A fetch carries the follower's LEO; if the leader has records
  beyond it, the leader answers at once, otherwise it parks the fetch until the next append
  (answered with just that append) or for replica.fetch.wait.max.ms (answered empty). The
  follower sends its next fetch as soon as the answer arrives; the fetch takes
  NETWORK_DELAY_MS + its `fetch_delay_ms` (the delay in force when it is sent);
- the leader learns that a follower holds record k when a fetch carrying an offset >= k
  arrives: that is the follower's *ack time* for k;
- acks=all completes when the HW passes the record: every member of the maximal ISR, and every
  caught-up eligible follower, has acked it (and the committed ISR is not below the effective
  min.insync.replicas, else the HW is frozen). KIP-250's HW is the q-th largest LEO of leader
  plus maximal ISR; KIP-926 (acks=min.insync.replicas) completes once min.insync.replicas
  replicas of the maximal ISR have the record. acks=1 answers at the append;
- the ISR-expiration task runs every replica.lag.time.max.ms / 2 from the engine's start; a
  follower is out of sync when its LEO is below the leader's and it has not been caught up
  for more than replica.lag.time.max.ms (lastCaughtUpTime follows Replica.updateFetchState);
  the shrink is committed by the controller ALTER_PARTITION_RTT_MS later, and only then stops
  counting. A removed follower holds the HW again as soon as it is caught up.

So a straggler whose fetches stall for S ms gates every acks=all request until
min(its own ack, the shrink commit), and the shrink comes at the first check more than
replica.lag.time.max.ms after it was last caught up: between 1x and 1.5x the lag after the stall.

Times are integer milliseconds (int64). Arrays are shaped [lanes, followers, ...]; one lane is
one partition with its own follower delays, observed over the same request arrival times.

Where this kernel simplifies (each is a tie or an edge the curves cannot see): several appends
in the same millisecond as a fetch arrival are ordered "fetch first"; a removed follower is
taken back as soon as it is caught up (the engine also needs its LEO to reach the HW before
the expand, a fetch later); the rejoin's AlterPartition round trip is ALTER_PARTITION_RTT_MS.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NETWORK_DELAY_MS = 1  # engine.sim.NETWORK_DELAY_MS
FETCH_WAIT_MS = 500  # replica.fetch.wait.max.ms default
ALTER_PARTITION_RTT_MS = 2  # leader -> controller -> leader, one hop each
REQUEST_TIMEOUT_MS = 30_000  # request.timeout.ms default: a parked produce expires after this
NEVER_MS = np.int64(2**40)  # a time after every simulated event; small enough to add offsets to

MODES = ("acks_1", "acks_all", "quorum", "acks_min_isr")


@dataclass(frozen=True)
class FetchTrace:
    """Every fetch each (lane, follower) sent, in order: arrival at the leader, offset carried,
    time the leader answered it. Shapes [lanes, followers, fetches]; padding is NEVER_MS."""

    arrive_ms: np.ndarray
    offset: np.ndarray
    answer_ms: np.ndarray


def fetch_loop(
    append_ms: np.ndarray,
    body_ms: np.ndarray,
    origin_ms: np.ndarray,
    stall_from_ms: np.ndarray,
    stall_ms: np.ndarray,
    fetch_wait_ms: int = FETCH_WAIT_MS,
    tail_fetches: int = 2,
) -> FetchTrace:
    """Run every follower's fetch loop until it holds all appends (plus `tail_fetches` more).

    append_ms [n]: sorted append times, shared by every lane. body_ms [L, F]: each follower's
    usual fetch delay. origin_ms [L]: when the engine started (the first fetch is sent then).
    stall_from_ms, stall_ms [L, F]: a straggler episode: a fetch sent at s with
    stall_from < s <= stall_from + stall takes `stall` instead of `body` (the engine's `slow`
    action at stall_from, and back at stall_from + stall). NEVER_MS means no episode.
    """
    a = np.asarray(append_ms, dtype=np.int64)
    n = a.size
    body = np.asarray(body_ms, dtype=np.int64)
    lanes, foll = body.shape
    a_pad = np.append(a, NEVER_MS)  # a_pad[o] is the append of record o+1 (NEVER once all are in)
    ep0 = np.asarray(stall_from_ms, dtype=np.int64).ravel()
    ep_len = np.asarray(stall_ms, dtype=np.int64).ravel()
    ep1 = ep0 + ep_len
    body = body.ravel()

    def delay(send: np.ndarray) -> np.ndarray:
        return np.where((send > ep0) & (send <= ep1), ep_len, body)

    send = np.repeat(np.asarray(origin_ms, dtype=np.int64), foll)
    r = send + NETWORK_DELAY_MS + delay(send)
    o = np.zeros_like(r)
    arrive, offs, answer = [], [], []
    extra = tail_fetches
    while True:
        nxt = a_pad[o]
        data_now = nxt < r  # records were waiting when the fetch arrived
        woken = ~data_now & (nxt < r + fetch_wait_ms)  # parked, then woken by the next append
        t_ans = np.where(data_now, r, np.where(woken, nxt, r + fetch_wait_ms))
        o_new = np.where(data_now, np.searchsorted(a, r, side="left"), np.where(woken, o + 1, o))
        arrive.append(r)
        offs.append(o)
        answer.append(t_ans)
        send = t_ans + NETWORK_DELAY_MS
        r = send + NETWORK_DELAY_MS + delay(send)
        o = o_new
        if (o >= n).all():
            if extra == 0:
                break
            extra -= 1
    shape = (lanes, foll, len(arrive))
    return FetchTrace(
        np.minimum(np.stack(arrive, axis=-1), NEVER_MS).reshape(shape),
        np.stack(offs, axis=-1).reshape(shape),
        np.minimum(np.stack(answer, axis=-1), NEVER_MS).reshape(shape),
    )


def _rowwise_searchsorted(sorted_rows: np.ndarray, values: np.ndarray, side: str) -> np.ndarray:
    """searchsorted per row: sorted_rows [R, M] (each row nondecreasing), values [R, K]."""
    rows, m = sorted_rows.shape
    span = np.int64(2**41)
    base = (np.arange(rows, dtype=np.int64) * span)[:, None]
    flat = (np.minimum(sorted_rows, span - 1) + base).ravel()
    idx = np.searchsorted(flat, (np.minimum(values, span - 1) + base).ravel(), side=side)
    return idx.reshape(values.shape) - (np.arange(rows, dtype=np.int64) * m)[:, None]


def ack_times(trace: FetchTrace, n: int) -> np.ndarray:
    """[L, F, n]: when the leader learns the follower holds record k (1-based k = index + 1)."""
    lanes, foll, m = trace.offset.shape
    rows = trace.offset.reshape(lanes * foll, m)
    k = np.broadcast_to(np.arange(1, n + 1, dtype=np.int64), (lanes * foll, n))
    idx = _rowwise_searchsorted(rows, k, "left")
    arr = trace.arrive_ms.reshape(lanes * foll, m)
    got = np.take_along_axis(arr, np.minimum(idx, m - 1), axis=1)
    return np.where(idx < m, got, NEVER_MS).reshape(lanes, foll, n)


def isr_windows(
    trace: FetchTrace, append_ms: np.ndarray, origin_ms: np.ndarray, lag_ms: int, until_ms: int
) -> tuple[np.ndarray, np.ndarray]:
    """When each follower stops and starts counting again: (out_ms, back_ms), both [L, F].

    out_ms: the shrink's commit (NEVER_MS if the follower is never out of sync by until_ms).
    back_ms: the first fetch after that at which it is caught up again (it holds the HW again).
    """
    a = np.asarray(append_ms, dtype=np.int64)
    lanes, foll, m = trace.offset.shape
    arr = trace.arrive_ms.reshape(lanes * foll, m)
    off = trace.offset.reshape(lanes * foll, m)
    origin = np.repeat(np.asarray(origin_ms, dtype=np.int64), foll)
    leo_at_arrival = np.searchsorted(a, arr, side="left")
    prev_arr = np.concatenate([origin[:, None], arr[:, :-1]], axis=1)
    prev_leo = np.concatenate([np.full((lanes * foll, 1), -1), leo_at_arrival[:, :-1]], axis=1)
    # Replica.updateFetchState: caught up now, or as of the previous fetch
    cand = np.where(off >= leo_at_arrival, arr, np.where(off >= prev_leo, prev_arr, -NEVER_MS))
    lcu = np.maximum.accumulate(np.maximum(cand, origin[:, None]), axis=1)

    half = lag_ms // 2
    ticks = np.arange(1, max(1, (until_ms - int(origin.min())) // half + 2), dtype=np.int64)
    tick_ms = origin[:, None] + ticks[None, :] * half  # [P, J]
    last = _rowwise_searchsorted(arr, tick_ms, "left") - 1  # last fetch that arrived before the tick
    safe = np.maximum(last, 0)
    st_leo = np.where(last >= 0, np.take_along_axis(off, safe, axis=1), -1)
    st_lcu = np.where(last >= 0, np.take_along_axis(lcu, safe, axis=1), origin[:, None])
    leo_tick = np.searchsorted(a, tick_ms, side="left")
    out_of_sync = (st_leo < leo_tick) & (tick_ms - st_lcu > lag_ms) & (tick_ms <= until_ms)
    first = np.argmax(out_of_sync, axis=1)
    has = out_of_sync.any(axis=1)
    out_ms = np.where(has, tick_ms[np.arange(tick_ms.shape[0]), first] + ALTER_PARTITION_RTT_MS, NEVER_MS)
    caught = (off >= leo_at_arrival) | (arr - lcu <= lag_ms)
    after = caught & (arr > out_ms[:, None])
    back_idx = np.argmax(after, axis=1)
    back_ms = np.where(has & after.any(axis=1), arr[np.arange(arr.shape[0]), back_idx], NEVER_MS)
    return out_ms.reshape(lanes, foll), back_ms.reshape(lanes, foll)


def completions(
    append_ms: np.ndarray,
    ack: np.ndarray,
    out_ms: np.ndarray,
    back_ms: np.ndarray,
    *,
    rf: int,
    min_isr: int,
    quorum: int,
) -> dict[str, np.ndarray]:
    """Completion time [L, n] of each request under every ack rule (NEVER_MS: never).

    Lanes in which no follower ever leaves the ISR take the fast path: the rules are then
    order statistics of the ack times. The others go through `_completions_isr_changes`.
    """
    a = np.asarray(append_ms, dtype=np.int64)[None, :]
    lanes, foll, n = ack.shape
    eff_min = min(min_isr, rf)
    srt = np.sort(ack, axis=1)  # [L, F, n], fastest follower first
    q_need = min(quorum, rf) - 1  # followers a quorum needs besides the leader
    m_need = eff_min - 1
    out = {
        "acks_1": np.broadcast_to(a, (lanes, n)).copy(),
        "acks_all": srt[:, -1, :],
        "quorum": srt[:, q_need - 1, :] if q_need > 0 else np.broadcast_to(a, (lanes, n)).copy(),
        "acks_min_isr": srt[:, m_need - 1, :] if m_need > 0 else np.broadcast_to(a, (lanes, n)).copy(),
    }
    changed = np.nonzero((out_ms < NEVER_MS).any(axis=1))[0]
    if changed.size:
        slow = _completions_isr_changes(
            append_ms, ack[changed], out_ms[changed], back_ms[changed], rf=rf, min_isr=min_isr, quorum=quorum
        )
        for mode, c in slow.items():
            out[mode][changed] = c
    return out


def _completions_isr_changes(
    append_ms: np.ndarray,
    ack: np.ndarray,
    out_ms: np.ndarray,
    back_ms: np.ndarray,
    *,
    rf: int,
    min_isr: int,
    quorum: int,
) -> dict[str, np.ndarray]:
    a = np.asarray(append_ms, dtype=np.int64)[None, :]  # [1, n]
    lanes, foll, n = ack.shape
    eff_min = min(min_isr, rf)
    o = out_ms[:, :, None]
    b = back_ms[:, :, None]
    back_commit = b + ALTER_PARTITION_RTT_MS
    # candidate completion instants: the append, any ack, any shrink commit, any rejoin (commit)
    cands = [np.broadcast_to(a, (lanes, n))]
    for i in range(foll):
        cands += [ack[:, i, :], np.broadcast_to(out_ms[:, i, None], (lanes, n))]
        cands += [np.broadcast_to(back_ms[:, i, None], (lanes, n))]
        cands += [np.broadcast_to(back_commit[:, i, :], (lanes, n))]
    cand = np.stack(cands, axis=0)  # [C, L, n]
    cand = np.where(cand >= a[None], cand, NEVER_MS)
    t = cand[:, :, None, :]  # [C, L, 1, n]
    has = ack[None] <= t  # [C, L, F, n]
    removed = (o[None] <= t) & (t < b[None])  # not in the maximal ISR, not caught up
    committed_out = (o[None] <= t) & (t < back_commit[None])
    isr_size = rf - committed_out.sum(axis=2)  # committed ISR, leader included
    not_frozen = isr_size >= eff_min
    in_isr = ~removed  # the maximal ISR: a pending expand already counts

    all_ok = ((has | removed).all(axis=2)) & not_frozen
    members = in_isr.sum(axis=2) + 1
    with_rec = (has & in_isr).sum(axis=2) + 1
    quorum_ok = np.where(members >= quorum, with_rec >= quorum, with_rec >= members) & not_frozen
    min_isr_ok = (has & ~removed).sum(axis=2) + 1 >= eff_min

    def earliest(ok: np.ndarray) -> np.ndarray:
        return np.where(ok, cand, NEVER_MS).min(axis=0)

    return {
        "acks_1": np.broadcast_to(a, (lanes, n)).copy(),
        "acks_all": earliest(all_ok),
        "quorum": earliest(quorum_ok),
        "acks_min_isr": earliest(min_isr_ok),
    }


def follower_visible(trace: FetchTrace, hw_ms: np.ndarray, follower: int = 0) -> np.ndarray:
    """[L, n]: when `follower` learns a HW that covers the record (consumers reading from it,
    KIP-392): the first answer it gets that was sent after the leader's HW advanced, plus a hop.
    A fetch answered at the very instant of the advance carries the old HW (P 1526-1531)."""
    ans = trace.answer_ms[:, follower, :]
    idx = _rowwise_searchsorted(ans, hw_ms, "right")
    m = ans.shape[1]
    got = np.take_along_axis(ans, np.minimum(idx, m - 1), axis=1)
    return np.where((idx < m) & (hw_ms < NEVER_MS), got + NETWORK_DELAY_MS, NEVER_MS)


def simulate(
    append_ms: np.ndarray,
    body_ms: np.ndarray,
    origin_ms: np.ndarray,
    stall_from_ms: np.ndarray,
    stall_ms: np.ndarray,
    *,
    rf: int,
    min_isr: int,
    lag_ms: int,
    quorum: int = 2,
) -> dict[str, np.ndarray]:
    """Latencies [L, n] (done_ms - sent_ms, as the engine reports them) for every ack mode, plus
    end-to-end visibility: `e2e_leader` (HW covers the record) and `e2e_follower`."""
    a = np.asarray(append_ms, dtype=np.int64)
    trace = fetch_loop(a, body_ms, origin_ms, stall_from_ms, stall_ms)
    ack = ack_times(trace, a.size)
    until = int(min(trace.arrive_ms.max(), NEVER_MS - 1))
    out_ms, back_ms = isr_windows(trace, a, origin_ms, lag_ms, until)
    done = completions(a, ack, out_ms, back_ms, rf=rf, min_isr=min_isr, quorum=quorum)
    sent = a[None, :] - NETWORK_DELAY_MS
    res = {}
    for mode, c in done.items():
        # the producer hears one hop after completion; a parked request expires at the timeout
        lat = c + NETWORK_DELAY_MS - sent
        res[mode] = np.where(c - a[None, :] > REQUEST_TIMEOUT_MS, -1, lat)
    hw_all = done["acks_all"]
    res["e2e_leader"] = np.where(hw_all < NEVER_MS, hw_all - sent, -1)
    vis = follower_visible(trace, hw_all)
    res["e2e_follower"] = np.where(vis < NEVER_MS, vis - sent, -1)
    return res


def sample_point(
    rng: np.random.Generator,
    *,
    rf: int,
    min_isr: int,
    lag_ms: int,
    load_rps: float,
    body_median_ms: float,
    body_sigma: float,
    straggler_q: float,
    straggler_ms: int,
    lanes: int,
    requests: int,
    quorum: int = 2,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Sample one grid point: (latencies per mode [lanes, requests], lane weights [lanes]).

    Each lane is a partition whose followers have their own usual fetch delay, lognormal with
    the given median and sigma (rounded to whole ms), observed for `requests` produce requests
    arriving every 1000/load_rps ms. A follower is in a straggler episode a fraction
    `straggler_q` of the time; an episode makes its fetches take `straggler_ms` (the engine's
    `slow`). Episodes are rare, so lanes get one more often than they should (importance
    sampling) and carry the likelihood ratio as their weight: weighted percentiles are unbiased.
    """
    foll = rf - 1
    step = 1000.0 / load_rps
    append = np.floor(np.arange(requests) * step).astype(np.int64)
    span = int(append[-1]) + straggler_ms + FETCH_WAIT_MS + 100  # starts that can touch a request
    half = lag_ms // 2
    origin = -(straggler_ms + FETCH_WAIT_MS + 100) - rng.integers(0, half, size=lanes)
    body = np.rint(body_median_ms * np.exp(body_sigma * rng.standard_normal((lanes, foll))))
    body = np.maximum(body, 0).astype(np.int64)
    p_true = 0.0 if straggler_q <= 0 else -np.expm1(-straggler_q / straggler_ms * span)
    p_sim = max(p_true, 1.0 - 0.5 ** (1.0 / foll)) if p_true > 0 else 0.0
    has_ep = rng.random((lanes, foll)) < p_sim
    start = append[0] - (straggler_ms + FETCH_WAIT_MS + 100) + rng.integers(0, span, size=(lanes, foll))
    stall_from = np.where(has_ep, start, NEVER_MS)
    stall = np.where(has_ep, straggler_ms, 0).astype(np.int64)
    if p_sim > 0:
        w_ep, w_no = p_true / p_sim, (1 - p_true) / (1 - p_sim)
        weight = np.where(has_ep, w_ep, w_no).prod(axis=1)
    else:
        weight = np.ones(lanes)
    res = simulate(
        append, body, origin, stall_from, stall, rf=rf, min_isr=min_isr, lag_ms=lag_ms, quorum=quorum
    )
    return res, weight
