"""Theory of operation: the produce-latency kernel, vectorised over many independent partitions.

The engine (engine/sim.py) is the product's one semantics; this module re-derives, in numpy, the
part of it that decides *when a produce request completes*, so that millions of requests can be
simulated per second. tests/pipeline/test_kernel_vs_engine.py proves the two agree: exactly on
deterministic scenarios, and by a two-sample Kolmogorov-Smirnov test on sampled ones.

The engine's rules that matter here (docs/simulator.md "The timing model", kafka-semantics.md):

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
  counting. A removed follower rejoins (maybeExpandIsr, kafka-semantics.md 4.3) at its first
  fetch whose offset reaches the leader's HW at that moment (the HW, not the LEO: under a HW
  frozen by min.insync.replicas, its first fetch after the stall), and counts for the HW from
  then on (the maximal ISR); the expansion commits ALTER_PARTITION_RTT_MS later, which can
  unfreeze the HW and make it jump.

So a straggler whose fetches stall for S ms gates every acks=all request until
min(its own ack, the shrink commit), and the shrink comes at the first check more than
replica.lag.time.max.ms after it was last caught up: between 1x and 1.5x the lag after the stall.

Times are integer milliseconds (int64). Arrays are shaped [lanes, followers, ...]; one lane is
one partition with its own follower delays, observed over the same request arrival times.

sample_point's requests are a window of a steady stream (PeriodicAppends) that goes on after
it: the window's completions do not depend on the appends after it (a record is acked by the
first fetch carrying it), but a follower's fetch answers after the window's last append do, so
`e2e_follower` replays the follower's loop against the continuing stream instead of letting it
wait out the idle long-poll (follower_visible_steady; tests/pipeline/test_follower_view.py
checks it against fetch_loop run over a longer stream).

Speed: each step of fetch_loop is a handful of whole-array operations over every (lane,
follower) with a lookup table for the leader's LEO; acks are a scatter and a running max;
only followers whose consecutive fetches are more than the lag apart go through the ISR
tick check; only (lane, request) pairs still waiting at a shrink go through the ISR-change
rules, and those by intervals of constant ISR state rather than by every candidate instant;
a lane whose rejoin the HW moves earlier recomputes only the requests still waiting then.

Where this kernel simplifies (ties and edges): several appends in the same millisecond as a
fetch arrival are ordered "fetch first" (and a HW advance at the very millisecond of a removed
follower's fetch comes before it); a follower leaves and rejoins the ISR at most once; no
AlterPartition in flight delays another follower's change. Outside its model: a produce the
engine refuses before the append (acks=all while the committed ISR is below
min.insync.replicas: NOT_ENOUGH_REPLICAS, then the producer's retry) is appended at once here.
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
    time the leader answered it. Shapes [lanes, followers, fetches] (every row has as many).
    `final_offset` [lanes, followers] is what the follower holds after the last answer."""

    arrive_ms: np.ndarray
    offset: np.ndarray
    answer_ms: np.ndarray
    final_offset: np.ndarray | None = None


def _in_window(send: np.ndarray, ep0p1: np.ndarray, ep_len: np.ndarray) -> np.ndarray:
    """ep0 < send <= ep0 + ep_len, as one unsigned comparison (ep0p1 = ep0 + 1)."""
    return (send - ep0p1).view(np.uint64) < ep_len.view(np.uint64)


def _leo_lookup(a: np.ndarray):
    """x -> number of appends strictly before x (np.searchsorted(a, x, "left")) for sorted
    integer append times: a table over a's span when it is short, else a binary search."""
    if a.size == 0 or int(a[-1]) - int(a[0]) > 1 << 22:
        return lambda x: np.searchsorted(a, x, side="left")
    lo = int(a[0])
    table = np.searchsorted(a, np.arange(lo, int(a[-1]) + 2, dtype=np.int64), side="left")
    top = table.size - 1

    def leo(x: np.ndarray) -> np.ndarray:
        return table.take(np.clip(x - lo, 0, top))

    return leo


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

    One step of the loop advances every (lane, follower) by one fetch, so the work is a fixed
    handful of whole-array operations per fetch; the rows are written into preallocated
    fetch-major buffers and transposed once at the end.
    """
    a = np.asarray(append_ms, dtype=np.int64)
    n = a.size
    body = np.asarray(body_ms, dtype=np.int64)
    lanes, foll = body.shape
    rows = lanes * foll
    a_pad = np.append(a, NEVER_MS)  # a_pad[o] is the append of record o+1 (NEVER once all are in)
    ep0p1 = np.asarray(stall_from_ms, dtype=np.int64).ravel() + 1
    ep_len = np.ascontiguousarray(np.asarray(stall_ms, dtype=np.int64).ravel())
    body = np.ascontiguousarray(body.ravel())
    hop_body = body + NETWORK_DELAY_MS
    hop_extra = ep_len - body  # added to the body while a send is inside the episode
    any_ep = bool((ep_len > 0).any())

    def arrival(send: np.ndarray) -> np.ndarray:
        r = send + hop_body
        if any_ep:
            r += np.where(_in_window(send, ep0p1, ep_len), hop_extra, 0)
        return r

    leo_before = _leo_lookup(a)
    cap = 256  # grown by doubling; np.empty does not touch the pages it does not use
    arr_buf = np.empty((cap, rows), dtype=np.int64)
    off_buf = np.empty((cap, rows), dtype=np.int64)
    ans_buf = np.empty((cap, rows), dtype=np.int64)
    r = arrival(np.repeat(np.asarray(origin_ms, dtype=np.int64), foll))
    o = np.zeros(rows, dtype=np.int64)
    extra = tail_fetches
    m = 0
    while True:
        if m == cap:
            cap *= 2
            grow = (arr_buf, off_buf, ans_buf)
            arr_buf, off_buf, ans_buf = (np.concatenate([b, np.empty_like(b)]) for b in grow)
        nxt = a_pad.take(o)
        rw = r + fetch_wait_ms
        t_ans = ans_buf[m]
        # records waiting: answered at once; else parked until the next append or the wait bound
        np.minimum(np.maximum(nxt, r), rw, out=t_ans)
        o_new = np.where(nxt < r, leo_before(r), o + (nxt < rw))
        arr_buf[m] = r
        off_buf[m] = o
        m += 1
        r = arrival(t_ans + NETWORK_DELAY_MS)
        o = o_new
        if o.min() >= n:
            if extra == 0:
                break
            extra -= 1
    shape = (lanes, foll, m)

    def rows_major(buf: np.ndarray) -> np.ndarray:
        # times stay below NEVER_MS: every fetch takes a finite delay, every answer a finite wait
        return np.ascontiguousarray(buf[:m].T).reshape(shape)

    return FetchTrace(rows_major(arr_buf), rows_major(off_buf), rows_major(ans_buf), o.reshape(lanes, foll))


def _rowwise_searchsorted(sorted_rows: np.ndarray, values: np.ndarray, side: str) -> np.ndarray:
    """searchsorted per row: sorted_rows [R, M] (each row nondecreasing), values [R, K]."""
    rows, m = sorted_rows.shape
    span = np.int64(2**41)
    base = (np.arange(rows, dtype=np.int64) * span)[:, None]
    flat = (np.minimum(sorted_rows, span - 1) + base).ravel()
    idx = np.searchsorted(flat, (np.minimum(values, span - 1) + base).ravel(), side=side)
    return idx.reshape(values.shape) - (np.arange(rows, dtype=np.int64) * m)[:, None]


def ack_times(trace: FetchTrace, n: int) -> np.ndarray:
    """[L, F, n]: when the leader learns the follower holds record k (1-based k = index + 1).

    Record k is acked by the first fetch whose offset reaches k. Offsets never decrease, so
    each fetch that carries a larger offset than the one before acks the records in between:
    write its arrival at the first of them and carry it forward (arrivals only increase).
    """
    lanes, foll, m = trace.offset.shape
    rows = lanes * foll
    off = trace.offset.reshape(rows, m)
    arr = trace.arrive_ms.reshape(rows, m)
    prev = np.empty_like(off)
    prev[:, 0] = 0
    prev[:, 1:] = off[:, :-1]
    rise = np.nonzero((off > prev).ravel())[0]
    first = np.full((rows, n + 1), -1, dtype=np.int64)
    row_of = rise // m
    first.ravel()[row_of * (n + 1) + prev.ravel()[rise]] = arr.ravel()[rise]
    ack = np.maximum.accumulate(first[:, :n], axis=1)
    held = off[:, -1:]  # records beyond the last offset carried were never acked
    if (held < n).any():
        ack = np.where(np.arange(1, n + 1) <= held, ack, NEVER_MS)
    return ack.reshape(lanes, foll, n)


@dataclass
class IsrWindows:
    """The ISR changes of each follower (see isr_windows). out_ms [L, F]: the shrink's commit
    (NEVER_MS: never out of sync). back_ms [L, F]: its rejoin (it is in the maximal ISR again);
    `rejoin` refines it once the leader's HW is known. rows [P]: the flat (lane * F + follower)
    rows that can leave the ISR, with their fetches: arrive_ms, offset [P, M] and caught [P, M]
    (caught up, so the leader's HW counts it again)."""

    out_ms: np.ndarray
    back_ms: np.ndarray
    rows: np.ndarray
    arrive_ms: np.ndarray
    offset: np.ndarray
    caught: np.ndarray

    def rejoin(self, hw_ms: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        """back_ms[lanes] [K, F] under the leader's HW history hw_ms [K, n] (when the HW passes
        each record): the first fetch after the shrink's commit whose offset reaches the HW at
        its arrival (maybeExpandIsr, P 1061-1066: the threshold is the HW, not the LEO; the
        epoch start is 0, the leader never changes), or that is caught up."""
        foll = self.out_ms.shape[1]
        back = self.back_ms[lanes]  # a copy: fancy indexing
        pos = np.full(self.out_ms.size, -1, dtype=np.int64)
        k = np.asarray(lanes, dtype=np.int64)
        pos[(k[:, None] * foll + np.arange(foll)).ravel()] = np.arange(k.size * foll)
        at = pos[self.rows]
        sel = np.nonzero(at >= 0)[0]
        if sel.size == 0:
            return back
        k_of = at[sel]
        arr = self.arrive_ms[sel]
        # the HW passes records in order: record k is below the HW from the least done time of k on
        hw = np.minimum.accumulate(np.asarray(hw_ms)[k_of // foll][:, ::-1], axis=1)[:, ::-1]
        hw_at = _rowwise_searchsorted(hw, arr, "right")  # the HW at each arrival (advances first)
        out = self.out_ms.ravel()[self.rows[sel]]
        ok = (arr > out[:, None]) & (self.caught[sel] | (self.offset[sel] >= hw_at))
        idx = np.argmax(ok, axis=1)
        got = np.where((out < NEVER_MS) & ok.any(axis=1), arr[np.arange(sel.size), idx], NEVER_MS)
        back.ravel()[k_of] = got
        return back


def isr_windows(
    trace: FetchTrace, append_ms: np.ndarray, origin_ms: np.ndarray, lag_ms: int, until_ms: int
) -> IsrWindows:
    """When each follower stops and starts counting again.

    out_ms: the shrink's commit (NEVER_MS if the follower is never out of sync by until_ms).
    back_ms: a first guess of the rejoin, the first fetch after that at which it is caught up
    again (the engine's rule, IsrWindows.rejoin, needs the HW and can only be earlier).

    Every fetch carries at least the LEO the previous fetch saw, so lastCaughtUpTime is never
    older than the previous fetch's arrival (or the start): a follower can only fall out of
    sync if two consecutive fetch arrivals are more than the lag apart. Only those rows (the
    long stragglers) go through the tick-by-tick check; the others never leave the ISR.
    """
    lanes, foll, m = trace.offset.shape
    rows = lanes * foll
    arr_all = trace.arrive_ms.reshape(rows, m)
    origin_all = np.repeat(np.asarray(origin_ms, dtype=np.int64), foll)
    out_ms = np.full(rows, NEVER_MS, dtype=np.int64)
    back_ms = np.full(rows, NEVER_MS, dtype=np.int64)
    gap = arr_all[:, 0] - origin_all
    if m > 1:
        gap = np.maximum(gap, (arr_all[:, 1] - origin_all))
    if m > 2:
        gap = np.maximum(gap, (arr_all[:, 2:] - arr_all[:, :-2]).max(axis=1))
    sel = np.nonzero(gap > lag_ms)[0]
    if sel.size == 0:
        empty = np.empty((0, m), dtype=np.int64)
        return IsrWindows(
            out_ms.reshape(lanes, foll), back_ms.reshape(lanes, foll), sel, empty, empty, empty.astype(bool)
        )
    half = lag_ms // 2
    n_ticks = max(1, (until_ms - int(origin_all.min())) // half + 2)
    a = np.asarray(append_ms, dtype=np.int64)
    arr = arr_all[sel]
    off = trace.offset.reshape(rows, m)[sel]
    origin = origin_all[sel]
    p = sel.size
    leo_at_arrival = np.searchsorted(a, arr, side="left")
    prev_arr = np.concatenate([origin[:, None], arr[:, :-1]], axis=1)
    prev_leo = np.concatenate([np.full((p, 1), -1), leo_at_arrival[:, :-1]], axis=1)
    # Replica.updateFetchState: caught up now, or as of the previous fetch
    cand = np.where(off >= leo_at_arrival, arr, np.where(off >= prev_leo, prev_arr, -NEVER_MS))
    lcu = np.maximum.accumulate(np.maximum(cand, origin[:, None]), axis=1)

    ticks = np.arange(1, n_ticks, dtype=np.int64)
    tick_ms = origin[:, None] + ticks[None, :] * half  # [P, J]
    last = _rowwise_searchsorted(arr, tick_ms, "left") - 1  # last fetch that arrived before the tick
    safe = np.maximum(last, 0)
    st_leo = np.where(last >= 0, np.take_along_axis(off, safe, axis=1), -1)
    st_lcu = np.where(last >= 0, np.take_along_axis(lcu, safe, axis=1), origin[:, None])
    leo_tick = np.searchsorted(a, tick_ms, side="left")
    out_of_sync = (st_leo < leo_tick) & (tick_ms - st_lcu > lag_ms) & (tick_ms <= until_ms)
    first = np.argmax(out_of_sync, axis=1)
    has = out_of_sync.any(axis=1)
    o_ms = np.where(has, tick_ms[np.arange(p), first] + ALTER_PARTITION_RTT_MS, NEVER_MS)
    caught = (off >= leo_at_arrival) | (arr - lcu <= lag_ms)
    after = caught & (arr > o_ms[:, None])
    back_idx = np.argmax(after, axis=1)
    out_ms[sel] = o_ms
    back_ms[sel] = np.where(has & after.any(axis=1), arr[np.arange(p), back_idx], NEVER_MS)
    return IsrWindows(out_ms.reshape(lanes, foll), back_ms.reshape(lanes, foll), sel, arr, off, caught)


def _order_stats(x: np.ndarray) -> list[np.ndarray]:
    """x [L, F, n] -> [k-th smallest over axis 1 for k in 0..F-1], each [L, n]."""
    return _sorted_elementwise([x[:, i, :] for i in range(x.shape[1])])


def completions(
    append_ms: np.ndarray,
    ack: np.ndarray,
    win: IsrWindows,
    *,
    rf: int,
    min_isr: int,
    quorum: int,
) -> dict[str, np.ndarray]:
    """Completion time [L, n] of each request under every ack rule (NEVER_MS: never).

    Without an ISR change the rules are order statistics of the ack times. A request that every
    rule completes before its lane's first shrink commits is decided by them too; only the
    others (lane, request) go through `_completions_isr_changes`.

    A removed follower rejoins when its offset reaches the leader's HW, which is what the rules
    compute (acks=all's completions are the HW; under KIP-250 the quorum's are), so a lane with
    a shrink alternates: completions under a guess of the rejoins, rejoins under their HW
    (IsrWindows.rejoin), until the rejoins stop moving. The first guess (caught up to the LEO)
    is never earlier than the truth, and the HW before the earliest wrong rejoin is already
    right, so each round settles at least one more rejoin: one round for a lone straggler, and
    a second to check it. acks=min.insync.replicas has no HW of its own: acks=all's rejoins.
    """
    a = np.asarray(append_ms, dtype=np.int64)[None, :]
    lanes, foll, n = ack.shape
    eff_min = min(min_isr, rf)
    srt = _order_stats(ack)  # fastest follower first
    q_need = min(quorum, rf) - 1  # followers a quorum needs besides the leader
    m_need = eff_min - 1
    out = {
        "acks_1": np.broadcast_to(a, (lanes, n)).copy(),
        "acks_all": srt[-1].copy(),
        "quorum": srt[q_need - 1].copy() if q_need > 0 else np.broadcast_to(a, (lanes, n)).copy(),
        "acks_min_isr": srt[m_need - 1].copy() if m_need > 0 else np.broadcast_to(a, (lanes, n)).copy(),
    }
    first_out = win.out_ms.min(axis=1)
    changed = np.nonzero(first_out < NEVER_MS)[0]
    if changed.size == 0:
        return out
    kw = dict(rf=rf, min_isr=min_isr, quorum=quorum)

    def slow(mode: str, sub: np.ndarray, back: np.ndarray, done: np.ndarray, since: np.ndarray) -> np.ndarray:
        """Completions [len(sub), n] of lanes changed[sub] with rejoins back [len(sub), F]:
        `done` (their completions under other rejoins) kept before `since` [len(sub)], where
        the two agree on every follower's state."""
        lane_ids = changed[sub]
        done = done.copy()
        li, ki = np.nonzero(done >= since[:, None])
        if li.size:
            got = _completions_isr_changes(
                a[0, ki], ack[lane_ids[li], :, ki], win.out_ms[lane_ids], back, modes=(mode,), lane=li, **kw
            )
            done[li, ki] = got[mode]
        return done

    back_all = None
    for mode in ("acks_all", "quorum"):
        back = win.back_ms[changed]
        # the order statistics hold for requests done before any shrink
        done = slow(mode, np.arange(changed.size), back, out[mode][changed], first_out[changed])
        todo = np.arange(changed.size)
        for _round in range(foll + 2):
            new = win.rejoin(done[todo], changed[todo])
            moved = new != back[todo]
            keep = moved.any(axis=1)
            todo, new, old = todo[keep], new[keep], back[todo][keep]
            if todo.size == 0:
                break
            since = np.where(moved[keep], np.minimum(new, old), NEVER_MS).min(axis=1)
            back[todo] = new
            done[todo] = slow(mode, todo, new, done[todo], since)
        out[mode][changed] = done
        if mode == "acks_all":
            back_all = back
    every = np.arange(changed.size)
    out["acks_min_isr"][changed] = slow(
        "acks_min_isr", every, back_all, out["acks_min_isr"][changed], first_out[changed]
    )
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
    modes: tuple[str, ...] = ("acks_all", "quorum", "acks_min_isr"),
    lane: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Per (lane, request) pair: append_ms [P], ack [P, F] -> completion [P]. out_ms and
    back_ms are [lanes, F], indexed by `lane` [P] (default: one lane per pair, [P, F]).

    A follower's ISR state changes only at its shrink commit (out), its rejoin (back: it is in
    the maximal ISR again) and the rejoin's commit (back + the AlterPartition round trip), so
    those instants cut time into at most 3F + 1 intervals of constant state: which followers
    are removed, how large the committed ISR is. Within one, a rule is met from the moment the
    followers it needs (all the remaining ones, or the k fastest of them) have acked: the
    earliest completion is the least, over the intervals, of max(interval start, append, that
    ack time) when it falls inside the interval. Every such instant is an append, an ack or a
    state change, the engine's own candidate instants.
    """
    a = np.asarray(append_ms, dtype=np.int64)
    pairs, foll = ack.shape
    if lane is None:
        lane = np.arange(pairs)
    eff_min = min(min_isr, rf)
    big = np.int64(2**62)
    # per lane: the intervals and the state in each (small arrays)
    back_commit = back_ms + ALTER_PARTITION_RTT_MS
    cuts = np.sort(np.concatenate([out_ms, back_ms, back_commit], axis=1), axis=1)  # [Lc, 3F]
    nl = cuts.shape[0]
    lo = np.concatenate([np.full((nl, 1), -big), cuts], axis=1)  # [Lc, J]
    hi = np.concatenate([cuts, np.full((nl, 1), big)], axis=1)
    t = lo[:, :, None]
    removed = (out_ms[:, None, :] <= t) & (t < back_ms[:, None, :])  # [Lc, J, F]
    committed_out = (out_ms[:, None, :] <= t) & (t < back_commit[:, None, :])
    not_frozen = rf - committed_out.sum(axis=2) >= eff_min  # [Lc, J]
    members = foll - removed.sum(axis=2) + 1  # the maximal ISR, leader included
    k_quorum = np.where(members >= quorum, quorum, members) - 1  # followers needed besides the leader
    acks = [np.ascontiguousarray(ack[:, f]) for f in range(foll)]
    best = {m: np.full(pairs, NEVER_MS, dtype=np.int64) for m in modes}
    for j in range(lo.shape[1]):
        start = np.maximum(lo[lane, j], a)
        end = hi[lane, j]
        rem = [removed[lane, j, f] for f in range(foll)]
        if "acks_all" in modes:
            need = np.maximum.reduce([np.where(rem[f], -big, acks[f]) for f in range(foll)]) if foll else -big
            _take_earliest(best["acks_all"], np.maximum(start, need), end, not_frozen[lane, j])
        if "quorum" in modes or "acks_min_isr" in modes:
            # a removed follower's ack never counts: push it past every instant
            srt = _sorted_elementwise([np.where(rem[f], big, acks[f]) for f in range(foll)])
        if "quorum" in modes:
            need = _kth(srt, k_quorum[lane, j], big)
            _take_earliest(best["quorum"], np.maximum(start, need), end, not_frozen[lane, j])
        if "acks_min_isr" in modes:
            need = _kth(srt, np.full(pairs, eff_min - 1), big)
            _take_earliest(best["acks_min_isr"], np.maximum(start, need), end, None)
    return {"acks_1": a.copy(), **best}


# comparators (i, j): put the smaller of v[i], v[j] in v[i]; each network sorts its size
_NETWORKS = {
    0: [],
    1: [],
    2: [(0, 1)],
    3: [(0, 1), (1, 2), (0, 1)],
    4: [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)],
}


def _sorted_elementwise(v: list[np.ndarray]) -> list[np.ndarray]:
    """Sort a few equal-length vectors elementwise (ascending), by a small sorting network."""
    if len(v) not in _NETWORKS:
        s = np.sort(np.stack(v), axis=0)
        return list(s)
    v = list(v)
    for i, j in _NETWORKS[len(v)]:
        v[i], v[j] = np.minimum(v[i], v[j]), np.maximum(v[i], v[j])
    return v


def _kth(srt: list[np.ndarray], k: np.ndarray, big: np.int64) -> np.ndarray:
    """srt: F vectors ascending elementwise; k [P] followers needed: the k-th smallest, -big if
    k <= 0 (big if fewer than k remain)."""
    got = np.full(k.shape, -big, dtype=np.int64)
    for i, v in enumerate(srt):
        got = np.where(k == i + 1, v, got)
    return np.where(k > len(srt), big, got)


def _take_earliest(best: np.ndarray, when: np.ndarray, end: np.ndarray, ok: np.ndarray | None) -> None:
    """best = min(best, when) where `when` falls before the interval's end (and ok)."""
    fits = when < end
    if ok is not None:
        fits &= ok
    np.minimum(best, np.where(fits, when, NEVER_MS), out=best)


def follower_visible(trace: FetchTrace, hw_ms: np.ndarray, follower: int = 0) -> np.ndarray:
    """[L, n]: when `follower` learns a HW that covers the record (consumers reading from it,
    KIP-392): the first answer it gets that was sent after the leader's HW advanced, plus a hop.
    A fetch answered at the very instant of the advance carries the old HW (P 1526-1531)."""
    ans = trace.answer_ms[:, follower, :]
    idx = _rowwise_searchsorted(ans, hw_ms, "right")
    m = ans.shape[1]
    got = np.take_along_axis(ans, np.minimum(idx, m - 1), axis=1)
    return np.where((idx < m) & (hw_ms < NEVER_MS), got + NETWORK_DELAY_MS, NEVER_MS)


class PeriodicAppends:
    """The steady stream a sample observes a window of: append i at floor(i * step_ms), for
    every i >= 0 (sample_point's first `requests` appends are its first terms)."""

    def __init__(self, step_ms: float):
        self.step = float(step_ms)
        self.gap_max = int(np.ceil(self.step))  # consecutive appends are floor or ceil(step) apart
        self.gap_min = int(np.floor(self.step))

    def at(self, i: np.ndarray) -> np.ndarray:
        return np.floor(np.asarray(i, dtype=np.int64) * self.step).astype(np.int64)

    def count_before(self, x: np.ndarray) -> np.ndarray:
        """Number of appends strictly before x (the leader's LEO at x, `searchsorted left`)."""
        x = np.asarray(x, dtype=np.int64)
        c = np.maximum(np.ceil(x / self.step), 0).astype(np.int64)
        # the float quotient is at most one off either way
        c = np.where((c > 0) & (self.at(c - 1) >= x), c - 1, c)
        return np.where(self.at(c) < x, c + 1, c)


def follower_visible_steady(
    trace: FetchTrace,
    hw_ms: np.ndarray,
    stream: PeriodicAppends,
    n: int,
    body_ms: np.ndarray,
    origin_ms: np.ndarray,
    stall_from_ms: np.ndarray,
    stall_ms: np.ndarray,
    follower: int = 0,
    fetch_wait_ms: int = FETCH_WAIT_MS,
) -> np.ndarray:
    """follower_visible for a window of n requests out of a steady stream that goes on.

    The trace saw only the window's n appends, so once they are all in, a caught-up follower
    waits out the idle long-poll (fetch_wait_ms) where the steady stream's next append would
    have answered it. The HW times (ack times, shrinks) of the window's records do not depend
    on later appends: a record is acked by the first fetch carrying it, and such a fetch left
    before any later append could change its answer. Only the follower's answers do, and only
    from the first answer at or after append n onwards. So a request whose learning answer is
    not before append n is replayed: the follower's loop restarts from its last answer before
    append n, against the unending stream, until its first answer after the HW advance.

    The replay jumps over whole runs of fetches. While each answer comes back at once (the
    follower holds all appends before its last answer and a fetch round trip 2 + body covers
    the largest gap between appends), answers are 2 + body apart; while each fetch is parked
    and woken (the smallest gap covers the round trip), answers fall on the appends. One of the
    two holds for every body; a run stops before a fetch sent inside the straggler episode,
    which is stepped one fetch at a time like fetch_loop.
    """
    ans = trace.answer_ms[:, follower, :]
    offs = trace.offset[:, follower, :]
    lanes, m = ans.shape
    hw_ms = np.asarray(hw_ms, dtype=np.int64)
    a_next = int(stream.at(n))  # append n: the first the window did not see
    # the follower's state after its last answer before append n: next send time, offset held
    j = (ans < a_next).sum(axis=1) - 1
    jj = np.maximum(j, 0)
    rows = np.arange(lanes)
    last = np.where(j >= 0, ans[rows, jj], -NEVER_MS)
    s0 = np.where(j >= 0, last + NETWORK_DELAY_MS, np.asarray(origin_ms, dtype=np.int64))
    # what it holds after answer j is what fetch j + 1 carries (after the last: final_offset)
    held = np.where(jj + 1 < m, offs[rows, np.minimum(jj + 1, m - 1)], trace.final_offset[:, follower])
    o0 = np.where(j >= 0, held, 0)
    valid = hw_ms < NEVER_MS
    replay = valid & (hw_ms >= last[:, None])  # no answer of the window comes after the advance
    out = np.full(hw_ms.shape, NEVER_MS, dtype=np.int64)
    sl, sk = np.nonzero(valid & ~replay)
    if sl.size:  # the first answer after the advance is in the trace (and before `last`)
        span = np.int64(2**41)
        flat = (ans + (np.arange(lanes, dtype=np.int64) * span)[:, None]).ravel()
        idx = np.searchsorted(flat, hw_ms[sl, sk] + sl * span, side="right")
        out[sl, sk] = flat[idx] - sl * span + NETWORK_DELAY_MS
    lane, req = np.nonzero(replay)
    if lane.size == 0:
        return out
    # requests of one lane whose HW advanced at the same instant share the replay
    hw_p = hw_ms[lane, req]
    start = np.ones(lane.size, dtype=bool)
    start[1:] = (lane[1:] != lane[:-1]) | (hw_p[1:] != hw_p[:-1])
    group = np.cumsum(start) - 1
    lane_g = lane[start]
    out[lane, req] = _replay_follower(
        hw_p[start],
        s0[lane_g],
        o0[lane_g],
        stream,
        lane_g,
        body_ms,
        stall_from_ms,
        stall_ms,
        follower,
        fetch_wait_ms,
    )[group]
    return out


def _replay_follower(
    hw: np.ndarray,
    s: np.ndarray,
    o: np.ndarray,
    stream: PeriodicAppends,
    lane: np.ndarray,
    body_ms: np.ndarray,
    stall_from_ms: np.ndarray,
    stall_ms: np.ndarray,
    follower: int,
    fetch_wait_ms: int,
) -> np.ndarray:
    """From a follower's next send s with offset o, against the unending stream: its first
    answer after hw, plus a hop (see follower_visible_steady). All arrays [P]."""
    s = s.copy()
    o = o.copy()
    d = np.asarray(body_ms, dtype=np.int64)[lane, follower]
    ep0 = np.asarray(stall_from_ms, dtype=np.int64)[lane, follower]
    ep_len = np.asarray(stall_ms, dtype=np.int64)[lane, follower]
    ep1 = ep0 + ep_len
    period = 2 * NETWORK_DELAY_MS + d  # send -> arrival -> answer -> next send, answered at once
    regime_now = stream.gap_max <= period  # data always waiting at the next arrival
    regime_woken = (stream.gap_min >= period) & (stream.gap_max < fetch_wait_ms)
    big = np.int64(2**62)

    result = np.full(lane.size, NEVER_MS, dtype=np.int64)
    act = np.arange(lane.size)
    for _ in range(100_000):
        if act.size == 0:
            break
        sa, oa, da, ha = s[act], o[act], d[act], hw[act]
        e0, e1, per = ep0[act], ep1[act], period[act]
        stalled = (sa > e0) & (sa <= e1)
        delay = np.where(stalled, ep_len[act], da)
        r = sa + NETWORK_DELAY_MS + delay
        nxt = stream.at(oa)
        data_now = nxt < r
        woken = ~data_now & (nxt < r + fetch_wait_ms)
        # one exact step, as fetch_loop
        t1 = np.where(data_now, r, np.where(woken, nxt, r + fetch_wait_ms))
        o1 = np.where(data_now, stream.count_before(r), np.where(woken, oa + 1, oa))

        # run A: answers r, r + period, ... (index i); the send producing answer i >= 1 is
        # answer i-1 + 1; stop at the first answer past the HW or before an episode send
        run_a = ~stalled & data_now & regime_now[act]
        i_hw = np.where(r > ha, 0, (ha - r) // per + 1)
        u = e0 - r - NETWORK_DELAY_MS
        k = np.where(u >= 0, u // per + 1, 0)  # first k with r + k*per + 1 > ep0
        hit = r + k * per + NETWORK_DELAY_MS <= e1
        i_ep = np.where(hit, k + 1, big)
        ia = np.minimum(i_hw, i_ep - 1)
        ta = r + ia * per

        # run B: answers at appends oa, oa+1, ... (index i); the send producing answer i >= 1
        # is append oa+i-1 + 1
        run_b = ~stalled & woken & regime_woken[act]
        i_hw_b = np.maximum(stream.count_before(ha + 1) - oa, 0)
        kb = np.maximum(stream.count_before(e0), oa)  # first append index >= ep0 from oa on
        hit_b = stream.at(kb) + NETWORK_DELAY_MS <= e1
        i_ep_b = np.where(hit_b, kb - oa + 1, big)
        ib = np.minimum(i_hw_b, i_ep_b - 1)
        tb = stream.at(oa + ib)

        t_new = np.where(run_a, ta, np.where(run_b, tb, t1))
        o_new = np.where(run_a, stream.count_before(ta), np.where(run_b, oa + ib + 1, o1))
        done = t_new > ha
        result[act[done]] = t_new[done] + NETWORK_DELAY_MS
        keep = ~done
        s[act] = t_new + NETWORK_DELAY_MS
        o[act] = o_new
        act = act[keep]
    else:  # pragma: no cover - every step moves at least one fetch on
        raise RuntimeError("follower replay did not converge")
    return result


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
    stream: PeriodicAppends | None = None,
) -> dict[str, np.ndarray]:
    """Latencies [L, n] (done_ms - sent_ms, as the engine reports them) for every ack mode, plus
    end-to-end visibility: `e2e_leader` (HW covers the record) and `e2e_follower`.

    Without `stream` the appends are all there is (the engine's scenario: exact). With it, the
    appends are the first terms of that steady stream, which goes on after them: the follower's
    view then does not wait out an idle long-poll at the end (follower_visible_steady)."""
    a = np.asarray(append_ms, dtype=np.int64)
    trace = fetch_loop(a, body_ms, origin_ms, stall_from_ms, stall_ms)
    ack = ack_times(trace, a.size)
    until = int(min(trace.arrive_ms.max(), NEVER_MS - 1))
    win = isr_windows(trace, a, origin_ms, lag_ms, until)
    done = completions(a, ack, win, rf=rf, min_isr=min_isr, quorum=quorum)
    sent = a[None, :] - NETWORK_DELAY_MS
    res = {}
    for mode, c in done.items():
        # the producer hears one hop after completion; a parked request expires at the timeout
        lat = c + NETWORK_DELAY_MS - sent
        res[mode] = np.where(c - a[None, :] > REQUEST_TIMEOUT_MS, -1, lat)
    hw_all = done["acks_all"]
    res["e2e_leader"] = np.where(hw_all < NEVER_MS, hw_all - sent, -1)
    if stream is None:
        vis = follower_visible(trace, hw_all)
    else:
        vis = follower_visible_steady(
            trace, hw_all, stream, a.size, body_ms, origin_ms, stall_from_ms, stall_ms
        )
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
        append,
        body,
        origin,
        stall_from,
        stall,
        rf=rf,
        min_isr=min_isr,
        lag_ms=lag_ms,
        quorum=quorum,
        stream=PeriodicAppends(step),
    )
    return res, weight
