"""Log compaction and tombstones (kafka-clients-logs.md §D, the scenarios of §F.D worked end to
end, and the misconceptions of §G 14-16), reproduced through `engine.simulate` with scenarios in
the contract's words and assertions on the contract's result fields and the steps' kinds.

Conventions (as in test_clients_canonical.py, whose builders this file reuses):

 1. §F.D's "equal record sizes, 4 records per segment": each produce is one keyed record of
    `bytes` = 100 and `segment.bytes` = 400. The roll check counts the incoming batch (§A.3), so
    the fifth record rolls: segments hold offsets 0-3, 4-7, 8-11, ...
 2. The cleaner thread checks every log.cleaner.backoff.ms (15 s) from the broker's start
    (t = 0). A pass takes no simulated time, so passes happen at multiples of 15 s: the first
    check after the writes that make a log cleanable. The tests `advance` past the next check.
 3. §F.D's "T1", "T2" are those check times; the tombstone horizon is T + delete.retention.ms.
 4. A "reader from 0" is a consumer without a group, assigned the partition, auto.offset.reset
    earliest, polling after the pass. A "caught-up reader" polls after each round of writes.
"""

from __future__ import annotations

import random

import pytest
from test_clients_canonical import (
    DAY,
    HOUR,
    SEC,
    advance,
    assign,
    consumer,
    mark,
    offsets,
    part,
    poll,
    run,
    seek,
    settle,
    story,
    upto,
)
from test_clients_canonical import produce as _produce

from engine import simulate

BACKOFF = 15 * SEC  # log.cleaner.backoff.ms
SIZE = 100  # bytes per one-record batch (convention 1)
COMPACT = {"cleanup.policy": "compact", "segment.bytes": 4 * SIZE}


def w(key: str | None, value: str | None) -> dict:
    """One record `key=value` (value None: a tombstone) as one produce of SIZE bytes."""
    return _produce(value, key=key, size=SIZE)  # type: ignore[arg-type]


def writes(*pairs: str) -> list[dict]:
    """'K1=a' is a record, 'K1=' a tombstone."""
    out = []
    for p in pairs:
        k, _, v = p.partition("=")
        out.append(w(k, v or None))
    return out


def kv(r: dict) -> list[tuple[int, str, str | None]]:
    """The leader's log as (offset, key, value) rows."""
    return [(e["offset"], e["key"], e["record"]) for e in part(r)["log"]]


def steps(r: dict, kind: str) -> list[dict]:
    return [s for s in r["steps"] if s["kind"] == kind]


def layout(r: dict) -> list[tuple[int, int]]:
    return [(s["base_offset"], s["next_offset"]) for s in part(r)["segments"]]


READER = consumer("r", group=None, reset="earliest")
S0_S1_S2 = ["K1=a", "K2=b", "K1=c", "K3=d", "K2=e", "K1=", "K4=f", "K3=g", "K2=h", "K5=i"]


def fd_story(*extra: dict, topic: dict | None = None) -> dict:
    """§F.D's writes (S0, S1, S2 active), then the pass at T1, then the further writes."""
    return story(
        *writes(*S0_S1_S2), settle(), mark("written"),
        advance(BACKOFF), mark("T1"),
        *writes("K1=j", "K2=k", "K6=l"), settle(), advance(BACKOFF), mark("ratio 0.5"),
        *writes("K3=m", "K2=n", "K7=o", "K8=p"), settle(), advance(BACKOFF), mark("T2"),
        *extra,
        topic={**COMPACT, **(topic or {})}, consumers=(READER,),
    )  # fmt: skip


# ============================================================================ §F.D pass 1


def test_FD_writes_three_segments_none_cleaned_before_the_first_check():
    """§F.D writes: S0 = 0-3, S1 = 4-7, S2 (active) = 8-9; nothing cleaned before the cleaner's
    first check, the cleaner point is the log start (no checkpoint yet, §D.3)."""
    r = upto(fd_story(), "written", steps=True)
    assert layout(r) == [(0, 4), (4, 8), (8, 10)]
    assert part(r)["cleaner_point"] == 0
    assert [o for o, _k, _v in kv(r)] == list(range(10))
    assert kv(r)[5] == (5, "K1", None), "a tombstone: key set, record null"
    assert not steps(r, "cleaner_offset_map")


def test_FD_pass_1_first_cleaning_of_a_new_compacted_topic():
    """§F.D pass 1: no checkpoint, first dirty 0, first uncleanable 8 (the active segment), ratio
    8/8 = 1.0 > 0.5; map K1->5, K2->4, K3->7, K4->6; S0 and S1 are full so not merged; S0 keeps
    nothing (an empty segment at base 0 stays), S1 keeps 4-7 with the tombstone stamped T1 + 24h;
    cleaner point 8, log start still 0."""
    r = upto(fd_story(), "T1", steps=True)
    (m,) = steps(r, "cleaner_offset_map")
    assert m["t_ms"] == BACKOFF, "the first check after the roll"
    assert m["offset_map"] == {"K1": 5, "K2": 4, "K3": 7, "K4": 6}
    assert m["ratio"] == 1.0
    (rw,) = steps(r, "cleaner_rewrite")
    assert rw["removed"] == [0, 1, 2, 3] and rw["kept"] == 4
    assert rw["groups"] == [[0], [4]], "full segments are not merged"
    assert "segments 0 and 4 again" in rw["text"]
    assert rw["horizon_ms"] == BACKOFF + DAY, "horizon = T1 + delete.retention.ms"
    assert "stays at least 1 day from now" in rw["text"]
    assert layout(r) == [(0, 0), (4, 8), (8, 10)], "the emptied segment at base 0 stays"
    assert [s["bytes"] for s in part(r)["segments"]] == [0, 400, 200]
    assert part(r)["cleaner_point"] == 8 and part(r)["log_start_offset"] == 0
    assert kv(r) == [(4, "K2", "e"), (5, "K1", None), (6, "K4", "f"), (7, "K3", "g"),
                     (8, "K2", "h"), (9, "K5", "i")]  # fmt: skip


def test_FD_reader_from_0_after_pass_1_sees_K2_twice():
    """§F.D / §D.5: a reader from 0 after pass 1 gets 4 K2=e, 5 K1=null, 6 K4=f, 7 K3=g, 8 K2=h,
    9 K5=i: K2 twice, because offset 8 is in the uncleaned active segment (§G 14: at least one
    value per key, not exactly one)."""
    sc = fd_story()
    cut = dict(sc)
    cut["actions"] = sc["actions"][: sc.marks["T1"]] + [assign("r", 0), poll("r")]
    r = run(cut)
    got = r["polls"][-1]["records"]
    assert [(x["offset"], x["key"], x["record"]) for x in got] == [
        (4, "K2", "e"), (5, "K1", None), (6, "K4", "f"), (7, "K3", "g"), (8, "K2", "h"), (9, "K5", "i")
    ]  # fmt: skip


# ============================================================================ §F.D the ratio


def test_FD_ratio_exactly_one_half_is_not_cleaned():
    """§F.D more writes: 10 K1=j, 11 K2=k fill S2, 12 K6=l rolls S3. Dirty = S2 (400 bytes),
    clean = S0' + S1' (0 + 400). Ratio 0.5 is not > 0.5: no pass; the check says so."""
    r = upto(fd_story(), "ratio 0.5", steps=True)
    assert len(steps(r, "cleaner_offset_map")) == 1, "only pass 1"
    (chk,) = steps(r, "cleaner_check")
    assert chk["t_ms"] == 2 * BACKOFF and chk["ratio"] == 0.5
    assert "0.50" in chk["text"] and "not above" in chk["text"]
    assert part(r)["cleaner_point"] == 8


def test_FD_pass_2_two_dirty_segments_to_one_clean():
    """§F.D pass 2: 13 K3=m, 14 K2=n, 15 K7=o fill S3, 16 K8=p rolls S4: dirty 8, clean 4, ratio
    0.67. Map over [8,16): K2->14, K5->9, K1->10, K6->12, K3->13, K7->15. S0' (empty) merges with
    S1' (0 + 4 <= 4) at base 0 keeping only 6 K4=f (the tombstone at 5 is superseded by K1=j);
    S2 -> 9, 10; S3 -> 12-15; active 16. Cleaner point 16."""
    r = upto(fd_story(), "T2", steps=True)
    maps = steps(r, "cleaner_offset_map")
    assert len(maps) == 2 and maps[1]["t_ms"] == 3 * BACKOFF
    assert maps[1]["offset_map"] == {"K2": 14, "K5": 9, "K1": 10, "K6": 12, "K3": 13, "K7": 15}
    assert round(maps[1]["ratio"], 2) == 0.67
    rw = steps(r, "cleaner_rewrite")[1]
    assert rw["groups"][0] == [0, 4] and "0 + 4 (merged into one at 0)" in rw["text"]
    assert sorted(rw["removed"]) == [4, 5, 7, 8, 11]
    assert layout(r) == [(0, 7), (8, 11), (12, 16), (16, 17)]
    assert part(r)["cleaner_point"] == 16


def test_FD_reader_from_0_after_pass_2_one_value_per_key_with_gaps():
    """§F.D: a reader from 0 after pass 2 reads offsets 6, 9, 10, 12, 13, 14, 15, 16: one value
    per key plus K8 in the active segment; a fetch at 0 starts at 6 (§D.4: offsets never change,
    the log start stays 0; §G 16)."""
    r = run(fd_story(assign("r", 0), poll("r")))
    got = r["polls"][-1]["records"]
    assert offsets(got) == [6, 9, 10, 12, 13, 14, 15, 16]
    assert [x["key"] for x in got] == ["K4", "K5", "K1", "K6", "K3", "K2", "K7", "K8"]
    assert part(r)["log_start_offset"] == 0
    assert r["consumers"]["r"]["position"] == {"0": 17}


def test_FD_a_caught_up_reader_sees_every_record_in_order():
    """§D.5 guarantee 1: a consumer that reads the head before it is cleaned sees every record,
    in order, with consecutive offsets, tombstone included."""
    sc = story(
        assign("r", 0),
        *writes(*S0_S1_S2), settle(), poll("r"), advance(BACKOFF),
        *writes("K1=j", "K2=k", "K6=l"), settle(), poll("r"), advance(BACKOFF),
        *writes("K3=m", "K2=n", "K7=o", "K8=p"), settle(), poll("r"), advance(BACKOFF),
        topic=COMPACT, consumers=(READER,),
    )  # fmt: skip
    r = run(sc, steps=True)
    assert len(steps(r, "cleaner_offset_map")) == 2
    got = r["consumers"]["r"]["received"]
    assert [x["offset"] for x in got] == list(range(17))
    assert got[5]["record"] is None


def test_FD_offsets_strictly_increase_and_never_change():
    """§D.4 and §G 16: cleaning removes records, never renumbers them or moves the log start."""
    before = upto(fd_story(), "written")
    after = run(fd_story())
    old = {e["offset"]: (e["key"], e["record"]) for e in part(before)["log"]}
    rows = kv(after)
    assert [o for o, _k, _v in rows] == sorted({o for o, _k, _v in rows})
    for o, k, v in rows:
        if o in old:
            assert old[o] == (k, v)


# ============================================================================ §F.D tombstones


def tombstone_story(retention: int = DAY) -> dict:
    """§F.D tombstone expiry: K9=x then K9=null, no later K9. Pass A (first check) keeps and
    stamps the tombstone; pass B (before the horizon) keeps it; after the horizon, pass C
    (triggered by the ratio again) drops it."""
    fill = [f"F{i}=f{i}" for i in range(4)]
    more = [f"G{i}=g{i}" for i in range(8)]
    return story(
        *writes("K9=x", "K9=", "A=a1", "B=b1", "C=c1"), settle(), advance(BACKOFF), mark("A"),
        assign("r", 0), poll("r"), mark("read between"),
        *writes(*fill), settle(), advance(BACKOFF), mark("B"),
        advance(retention),
        *writes(*more), settle(), advance(BACKOFF), mark("C"),
        topic={**COMPACT, "delete.retention.ms": retention}, consumers=(READER,),
    )  # fmt: skip


def test_FD_tombstone_kept_by_the_first_pass_with_a_horizon():
    """§F.D: the first pass that keeps the tombstone stamps horizon T_A + delete.retention.ms;
    K9=x is removed (superseded) and the tombstone stays."""
    r = upto(tombstone_story(), "A", steps=True)
    (rw,) = steps(r, "cleaner_rewrite")
    assert rw["t_ms"] == BACKOFF and rw["removed"] == [0]
    assert "tombstone at 1 stays at least 1 day" in rw["text"] and rw["horizon_ms"] == BACKOFF + DAY
    assert (1, "K9", None) in kv(r)


def test_FD_a_reader_between_the_passes_sees_the_tombstone():
    r = upto(tombstone_story(), "read between")
    assert [(x["offset"], x["key"], x["record"]) for x in r["polls"][-1]["records"]][:1] == [(1, "K9", None)]


def test_FD_a_pass_before_the_horizon_keeps_the_tombstone():
    """§F.D: any pass before the horizon keeps it (and does not stamp it again)."""
    r = upto(tombstone_story(), "B", steps=True)
    assert len(steps(r, "cleaner_rewrite")) == 2
    assert "tombstone" not in steps(r, "cleaner_rewrite")[1]["text"], "already stamped"
    assert (1, "K9", None) in kv(r)
    assert not steps(r, "cleaner_tombstone_expired")


def test_FD_the_first_pass_after_the_horizon_drops_the_tombstone():
    """§F.D and §G 15: the tombstone goes at the first pass at or after T_A + 24h, which the ratio
    has to trigger; a reader from the start afterwards never sees K9."""
    sc = tombstone_story()
    sc["actions"] += [seek("r", 0, 0), poll("r")]
    r = run(sc, steps=True)
    (gone,) = steps(r, "cleaner_tombstone_expired")
    assert gone["removed"] == [1] and gone["t_ms"] >= BACKOFF + DAY
    assert all(k != "K9" for _o, k, _v in kv(r))
    assert all(x["key"] != "K9" for x in r["polls"][-1]["records"])


def test_G15_the_tombstone_outlives_delete_retention_ms_after_its_write_without_a_pass():
    """§G 15: a tombstone does not vanish delete.retention.ms after it was written: with no pass
    after the horizon (nothing dirty enough), it stays for days."""
    sc = story(
        *writes("K9=x", "K9=", "A=a1", "B=b1", "C=c1"), settle(), advance(BACKOFF), advance(3 * DAY),
        topic={**COMPACT, "delete.retention.ms": HOUR}, consumers=(READER,),
    )  # fmt: skip
    r = run(sc, steps=True)
    assert (1, "K9", None) in kv(r)
    assert len(steps(r, "cleaner_offset_map")) == 1


# ============================================================================ §F.D null key, idempotence


def test_FD_a_record_without_a_key_fails_with_invalid_record():
    """§D.1 / §F.D: producing (key=null, value=v) to a compacted topic fails the whole request with
    INVALID_RECORD; nothing is appended."""
    r = run(story(w(None, "v"), settle(), w("K", "ok"), settle(), topic=COMPACT), steps=True)
    bad = r["produce"][0]
    assert bad["outcome"] == "failed" and bad["error"] == "INVALID_RECORD"
    (rej,) = steps(r, "leader_reject_invalid_record")
    assert "Compacted topic cannot accept message without key" in rej["text"]
    assert kv(r) == [(0, "K", "ok")]


def test_a_record_without_a_key_is_fine_on_a_delete_topic():
    r = run(story(w(None, "v"), settle()))
    assert r["produce"][0]["outcome"] == "acked"


@pytest.mark.parametrize("idempotent", [True, False])
def test_FD_an_active_idempotent_producers_last_batch_stays_as_an_empty_batch(idempotent):
    """§F.D idempotent producers / §D.4 batch rules: producer P's last batch (K1=a at 0) is
    superseded by Q's K1=b; P is still active, so its batch stays empty (the batch header only,
    61 bytes here). Without idempotence there is no producer state to keep: the batch goes."""
    p = {"id": "p", "enable.idempotence": idempotent}
    q = {"id": "q"}
    acts = [_produce("a", key="K1", size=SIZE, producer="p"), settle()]
    later = [("K1", "b"), ("K2", "c"), ("K3", "d"), ("K4", "e")]
    acts += [_produce(v, key=k, size=SIZE, producer="q") for k, v in later]
    acts += [settle(), advance(BACKOFF)]
    r = run(story(*acts, topic=COMPACT, producers=(p, q)), steps=True)
    assert 0 not in [o for o, _k, _v in kv(r)]
    first = part(r)["segments"][0]
    assert first["base_offset"] == 0
    if idempotent:
        assert first["bytes"] == 61 + 3 * SIZE
    else:
        assert first["bytes"] == 3 * SIZE


# ============================================================================ §F.D compact,delete


def kept_k1_story(policy: str) -> dict:
    """§F.D compact,delete: K1 written once on day 0; other keys later; retention.ms = 7 days."""
    return story(
        *writes("K1=a", "K2=b", "K3=c", "K4=d", "K2=e"), settle(), advance(BACKOFF), mark("cleaned"),
        advance(7 * DAY), mark("day 7"),
        assign("r", 0), poll("r"),
        topic={**COMPACT, "cleanup.policy": policy, "retention.ms": 7 * DAY}, consumers=(READER,),
    )  # fmt: skip


def test_FD_compact_delete_a_key_vanishes_without_a_tombstone():
    """§F.D: under compact,delete, K1=a (its key's latest value, kept by compaction) goes with its
    whole segment once the segment's newest record is older than retention.ms; time retention runs
    from the cleaner thread (every 15 s), not from the 5-minute retention task."""
    r = run(kept_k1_story("compact,delete"), steps=True)
    assert (0, "K1", "a") in kv(upto(kept_k1_story("compact,delete"), "cleaned"))
    dels = steps(r, "broker_delete_segments")
    assert dels and dels[0]["t_ms"] % BACKOFF == 0
    assert dels[0]["t_ms"] - 7 * DAY < BACKOFF + 100, "the first cleaner check after 7 days"
    assert part(r)["log_start_offset"] > 0
    assert all(x["key"] != "K1" for x in r["polls"][-1]["records"])


def test_FD_compact_alone_keeps_the_key_forever():
    r = run(kept_k1_story("compact"), steps=True)
    assert not steps(r, "broker_delete_segments")
    assert r["polls"][-1]["records"][0]["key"] == "K1"


# ============================================================================ §D.3 timing and lags


def test_D3_the_cleaner_checks_every_log_cleaner_backoff_ms():
    sc = story(*writes(*S0_S1_S2), settle(), advance(10 * SEC),
               topic=COMPACT, timing={"log.cleaner.backoff.ms": 2 * SEC})
    r = run(sc, steps=True)
    (m,) = steps(r, "cleaner_offset_map")
    assert m["t_ms"] == 2 * SEC


def test_D3_the_active_segment_is_never_cleaned():
    """However long one waits, records in the active segment stay (§D.3, LCM 657-658)."""
    r = run(story(*writes("K=a", "K=b", "K=c"), settle(), advance(2 * DAY), topic=COMPACT), steps=True)
    assert [v for _o, _k, v in kv(r)] == ["a", "b", "c"]
    assert not steps(r, "cleaner_offset_map")
    assert part(r)["cleaner_point"] == 0


def test_D3_min_compaction_lag_holds_young_segments_back():
    """min.compaction.lag.ms = 1 h: a rolled segment whose newest record is younger than an hour is
    uncleanable; the check after the roll says so, and the pass comes at the first check once the
    hour has passed."""
    sc = story(*writes(*S0_S1_S2), settle(), advance(2 * HOUR),
               topic={**COMPACT, "min.compaction.lag.ms": HOUR})
    r = run(sc, steps=True)
    (chk,) = steps(r, "cleaner_check")
    assert chk["t_ms"] == BACKOFF and "min.compaction.lag.ms" in chk["text"]
    (m,) = steps(r, "cleaner_offset_map")
    assert m["t_ms"] == HOUR, "S0 and S1's newest CreateTime is 0: cleanable once now - 1 h >= 0"


def test_D3_max_compaction_lag_forces_a_pass_whatever_the_ratio():
    """max.compaction.lag.ms = 1 h: after pass 1, S2 is dirty and S1' clean (ratio 0.5, not
    enough), but once S2's first batch is more than an hour old the cleaner cleans anyway."""
    sc = fd_story(advance(2 * HOUR), topic={"max.compaction.lag.ms": HOUR})
    sc["actions"] = sc["actions"][: sc.marks["ratio 0.5"]] + [advance(2 * HOUR)]
    r = run(sc, steps=True)
    maps = steps(r, "cleaner_offset_map")
    assert len(maps) == 2
    assert maps[1]["ratio"] == 0.5 and "max.compaction.lag.ms" in maps[1]["text"]
    assert HOUR < maps[1]["t_ms"] < HOUR + 2 * BACKOFF + 100


def test_D3_a_tombstone_can_be_the_only_change_and_is_kept_while_latest():
    r = run(story(*writes("K=a", "K=", "X=x1", "Y=y1", "Z=z1"), settle(), advance(BACKOFF), topic=COMPACT))
    assert kv(r)[0] == (1, "K", None)


# ============================================================================ views and invariants


def test_the_view_at_each_step_shows_the_cleaned_log():
    """The per-step snapshot (engine/actors/observe.py) shows the leader's log without the removed
    offsets from the rewrite step on, and the cleaner point."""
    sc = upto_actions(fd_story(), "T1")
    r = simulate(sc, steps=True, all_views=True)
    k = next(s["i"] for s in r["steps"] if s["kind"] == "cleaner_rewrite")
    before, after = r["views"][k - 1], r["views"][k]
    assert [e["offset"] for e in before["brokers"]["1"]["log"]] == list(range(10))
    assert [e["offset"] for e in after["brokers"]["1"]["log"]] == [4, 5, 6, 7, 8, 9]
    assert before["partition"]["cleaner_point"] == 0 and after["partition"]["cleaner_point"] == 8


def upto_actions(sc: dict, name: str) -> dict:
    cut = dict(sc)
    cut["actions"] = sc["actions"][: sc.marks[name]]
    return cut


@pytest.mark.parametrize("seed", range(12))
def test_invariants_over_random_compaction_schedules(seed):
    """Random keyed writes, tombstones and waits on a compacted topic (some with compact,delete,
    lags and a small ratio): offsets strictly increase, log start <= LSO <= HW <= LEO, and every
    key's latest value below the cleaner point survives (its latest tombstone too, until its
    horizon); the engine's own invariants hold after every step."""
    rng = random.Random(seed)
    keys = [f"K{i}" for i in range(rng.randint(2, 8))]
    topic = {**COMPACT, "min.cleanable.dirty.ratio": rng.choice([0.01, 0.3, 0.5, 0.9])}
    if rng.random() < 0.3:
        topic["min.compaction.lag.ms"] = rng.choice([SEC, 30 * SEC])
    if rng.random() < 0.3:
        topic["delete.retention.ms"] = rng.choice([SEC, 60 * SEC])
    replicated = seed % 3 == 0  # RF=3, with a follower that crashes and comes back
    down = False
    acts: list[dict] = []
    for _ in range(rng.randint(20, 60)):
        roll = rng.random()
        if roll < 0.7:
            acts.append(w(rng.choice(keys), None if rng.random() < 0.15 else f"v{len(acts)}"))
        elif roll < 0.85:
            acts.append(advance(rng.choice([SEC, BACKOFF, 40 * SEC])))
        elif roll < 0.93 or not replicated:
            acts.append(settle())
        else:
            acts.append({"do": "restart" if down else "crash", "broker": 2})
            down = not down
    if down:
        acts += [{"do": "restart", "broker": 2}, advance(20 * SEC)]
    acts += [settle(), advance(BACKOFF)]
    sc = story(*acts, topic=topic, brokers=(1, 2, 3) if replicated else (1,), rf=3 if replicated else 1)
    r = simulate(dict(sc), check_invariants=True, steps=True)
    assert r["violations"] == []
    p = part(r)
    assert p["log_start_offset"] <= p["lso"] <= p["hw"] <= p["leo"]
    offs = [e["offset"] for e in p["log"]]
    assert offs == sorted(set(offs))
    latest: dict[str, tuple[int, str | None]] = {}
    produced = [a for a in sc["actions"] if a["do"] == "produce"]  # one result per produce, in order
    for a, pr in zip(produced, r["produce"], strict=True):
        if pr["outcome"] == "acked":
            latest[a["key"]] = (pr["offsets"][0], pr["records"][0])
    present = {e["offset"]: (e["key"], e["record"]) for e in p["log"]}
    expired = {o for s in r["steps"] if s["kind"] == "cleaner_tombstone_expired" for o in s["removed"]}
    for k, (o, v) in latest.items():
        if o in expired:
            assert v is None
            continue
        assert present.get(o) == (k, v), f"{k}'s latest value at {o} must survive"


def test_D4_a_rewritten_batch_keeps_its_base_and_last_offsets():
    """MR 296-300 (§D.4): a batch that loses records keeps the original base and last offsets (the
    last sequence survives); its records keep their offsets, so the batch has gaps."""
    from engine.compaction import clean, cleanable_offsets
    from engine.segments import LogConfig, SegmentedLog

    log = SegmentedLog.create(LogConfig(cleanup_policy="compact", segment_bytes=300))
    log.append([(0, "K1", "a"), (0, "K2", "b"), (0, "K1", "c")], 100, 0)  # offsets 0-2
    log.append([(0, "K2", "d"), (0, "K3", "e"), (0, "K3", "f")], 100, 0)  # offsets 3-5
    log.append([(0, "K9", "z")], 100, 0)
    log.append([(0, "K9", "y")], 100, 0)  # rolls: the first three batches are cleanable
    log.update_high_watermark(log.log_end_offset)
    c = cleanable_offsets(log, 1)
    assert (c.first_dirty, c.first_uncleanable, c.ratio) == (0, 7, 1.0)
    done = clean(log, c, 1)
    batches = [b for s in log.segments[:-1] for b in s.batches]
    assert [(b.base_offset, b.last_offset, [r.offset for r in b.records]) for b in batches] == [
        (0, 2, [2]), (3, 5, [3, 5]), (6, 6, [6])
    ]
    assert sorted(done.superseded) == [0, 1, 4] and done.cleaner_point == 7
    assert log.segments[0].next_offset == 7, "the segment still ends where it ended"


# ============================================================================ review fixes (i12-rcomp)


def test_D4_grouping_keeps_a_merged_segments_offsets_within_32_bits_of_its_first_base():
    """§D.4 step 2, `groupSegmentsBySize` (LCl 976-1002): segments merge while the merged one's
    offsets fit 32 bits from ITS base. Kafka builds the group in reverse, so `group.last` (LCl 992)
    is the group's first segment: 0 and 2^30 merge (last offset 2^31 - 1), but the segment at 2^31
    does not join them (its last offset is 2^31 + 99 past base 0), even though it is within 2^31
    of the segment at 2^30."""
    from engine.compaction import _group_by_size
    from engine.segments import LogConfig, Segment

    cfg = LogConfig(cleanup_policy="compact")
    segs = [Segment(base, 0, size_bytes=10) for base in (0, 2**30, 2**31)]
    groups = _group_by_size(segs, cfg, 2**31 + 100)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 2**30], [2**31]]


def test_D2_truncation_moves_the_cleaner_checkpoint_to_the_active_segments_base():
    """§D.2 (the checkpoint, LCM 452-465) with LogManager.truncateTo (LM 752-759, 926-929): a
    truncation below the active segment (a follower after an unclean election) moves the cleaner
    checkpoint to the base offset of the segment left active, not to the truncation offset; the
    next check then counts that segment as dirty and never as clean."""
    from engine.compaction import clean, cleanable_offsets, first_dirty_offset
    from engine.segments import LogConfig, SegmentedLog

    log = SegmentedLog.create(LogConfig(cleanup_policy="compact", segment_bytes=4 * SIZE))
    for i in range(13):  # segments 0-3, 4-7, 8-11, active 12
        log.append([(0, f"K{i % 5}", f"v{i}")], SIZE, 0)
    log.update_high_watermark(log.log_end_offset)
    clean(log, cleanable_offsets(log, 1), 1)
    assert log.cleaner_checkpoint == 12
    log.truncate_to(10, 2)
    assert log.segments[-1].base_offset == 8
    assert log.cleaner_checkpoint == 8 and first_dirty_offset(log) == 8
    c = cleanable_offsets(log, 3)
    assert c.clean_bytes == sum(s.size_bytes for s in log.segments[:-1]), "the active segment is not clean"


def test_D3_the_cleaner_never_passes_the_high_watermark():
    """§D.3 cleanable range, item 1 (LCM 654-655): the first uncleanable offset is at most the last
    stable offset, which is at most the high watermark. RF=2 with the follower not fetching and
    acks=1: the leader holds §F.D's three segments but its HW stays 0, so the check after the roll
    finds nothing cleanable and says why; the pass comes at the first check after the ISR shrinks
    and the HW reaches 10."""
    sc = story(
        {"do": "stop_fetching", "broker": 2}, *[dict(a, acks=1) for a in writes(*S0_S1_S2)],
        advance(5 * BACKOFF),
        brokers=(1, 2), rf=2, topic={**COMPACT, "min.insync.replicas": 1},
    )  # fmt: skip
    r = run(sc, steps=True)
    (chk,) = steps(r, "cleaner_check")
    assert chk["t_ms"] == BACKOFF and chk["cleaner_point"] == 0
    assert "last stable offset" in chk["text"] and "high watermark 0" in chk["text"]
    hw_at = next(s["t_ms"] for s in r["steps"] if s["kind"] == "leader_advance_high_watermark")
    (m,) = steps(r, "cleaner_offset_map")
    assert hw_at < m["t_ms"] <= hw_at + BACKOFF
    assert m["offset_map"] == {"K1": 5, "K2": 4, "K3": 7, "K4": 6}


def test_FD_pass_captions_say_what_stays_empty():
    """§F.D pass 1 in words: S0 keeps nothing and stays as an empty segment; the tombstone's batch
    gets its horizon from this pass's time. §F.D idempotent producers: the superseded last batch of
    an active idempotent producer stays as an empty batch, and the caption says why."""
    r = upto(fd_story(), "T1", steps=True)
    (rw,) = steps(r, "cleaner_rewrite")
    assert "segment 0 is left empty" in rw["text"]
    assert "stays at least 1 day from now (delete.retention.ms)" in rw["text"]  # counted from this pass
    p = {"id": "p", "enable.idempotence": True}
    acts = [_produce("a", key="K1", size=SIZE, producer="p"), settle()]
    acts += [_produce(v, key=k, size=SIZE, producer="q") for k, v in [("K1", "b"), ("K2", "c"), ("K3", "d"),
                                                                      ("K4", "e")]]
    r = run(story(*acts, settle(), advance(BACKOFF), topic=COMPACT, producers=(p, {"id": "q"})), steps=True)
    (rw,) = steps(r, "cleaner_rewrite")
    assert "1 is dropped because a later record has the same key (offset 0)" in rw["text"]
    assert "the batch at 0 stays with no records" in rw["text"] and "idempotent producer" in rw["text"]


def late_follower_story(wait: int) -> dict:
    """§F.D tombstone expiry on RF=3: B3 is down before any write, the leader (and B2) clean with
    the tombstone's horizon at T_A + 24 h; B3 comes back `wait` after pass A and catches up."""
    fill = [f"F{i}=f{i}" for i in range(4)]
    return story(
        {"do": "crash", "broker": 3},
        *writes("K9=x", "K9=", "A=a1", "B=b1", "C=c1"), settle(), advance(BACKOFF), mark("A"),
        *writes(*fill), settle(), advance(wait),
        {"do": "restart", "broker": 3}, advance(20 * SEC), settle(), mark("back"),
        brokers=(1, 2, 3), rf=3, topic={**COMPACT, "min.insync.replicas": 1},
    )  # fmt: skip


def broker_log(r: dict, bid: int) -> list[tuple[int, str, str | None]]:
    view = r["final"]
    return [(e["offset"], e["key"], e["record"]) for e in view["brokers"][str(bid)]["log"]]


def test_D4_a_follower_catching_up_copies_the_leaders_cleaned_batches_with_their_horizon():
    """§D.4 (the horizon lives in the batch header, MR 186-205) and §D.5: a fetch returns the
    leader's batches as they are on its disk, so a follower that catches up after the leader's pass
    gets the cleaned log (K9=x is not copied) and the tombstone's batch with the leader's horizon,
    T_A + 24 h; its own first pass does not stamp the tombstone again a day later."""
    r = run(late_follower_story(HOUR), steps=True)
    assert (0, "K9", "x") not in broker_log(r, 3)
    assert (1, "K9", None) in broker_log(r, 3)
    b3 = [s for s in steps(r, "cleaner_rewrite") if s["broker"] == 3]
    assert all(s["stamped"] == [] for s in b3), "the horizon came with the batch"


def test_FD_a_follower_catching_up_after_the_tombstone_expired_never_sees_K9():
    """§F.D tombstone expiry: after the pass that drops the tombstone, a reader from the start never
    sees K9; that holds for a follower that catches up afterwards and then leads too (in Kafka it
    fetches the leader's cleaned log, so the tombstone cannot come back with a fresh horizon)."""
    more = [f"G{i}=g{i}" for i in range(8)]
    sc = late_follower_story(BACKOFF)
    cut = sc.marks["back"] - 4  # before the restart: add the day and pass C while B3 is down
    sc["actions"][cut:cut] = [advance(DAY), *writes(*more), settle(), advance(BACKOFF)]
    r = run(sc, steps=True)
    assert [s["broker"] for s in steps(r, "cleaner_tombstone_expired")] == [1, 2]
    assert all(k != "K9" for _o, k, _v in broker_log(r, 3))
    assert not [s for s in steps(r, "cleaner_rewrite") if s["broker"] == 3 and s["stamped"]]


def test_D4_grouping_stops_when_the_merged_indexes_would_not_fit_segment_index_bytes():
    """§D.4 step 2 (LCl 985-988): a run of segments merges while the sum of their sizes fits
    segment.bytes AND the sums of their offset-index and time-index sizes (8 and 12 bytes an entry)
    each fit segment.index.bytes. With 80 index bytes, two segments of 4 entries each fit as offset
    indexes (64 bytes) but not as time indexes (96 bytes), so they stay apart; with 100 they merge."""
    from engine.compaction import _group_by_size
    from engine.segments import LogConfig, Segment

    segs = [Segment(base, 0, size_bytes=10, offset_index_entries=4, time_index_entries=4) for base in (0, 40)]
    for index_bytes, expected in ((80, [[0], [40]]), (100, [[0, 40]])):
        cfg = LogConfig(cleanup_policy="compact", segment_index_bytes=index_bytes)
        assert [[s.base_offset for s in g] for g in _group_by_size(segs, cfg, 80)] == expected


def test_D5_a_tombstone_expires_while_its_key_was_written_again_in_the_active_segment():
    """§D.4/§D.5: the offset map covers only the dirty range, so a tombstone below it whose key was
    written again in the active segment still counts as its key's latest record; past its horizon
    it is dropped. A reader from the start then sees only the later value, and the caption says so
    (it does not claim the key is gone)."""
    sc = story(
        *writes("K9=x", "K9=", "A=a1", "B=b1", "C=c1"), settle(), advance(BACKOFF),
        advance(2 * HOUR), *writes(*[f"F{i}=f{i}" for i in range(8)], "K9=y"), settle(), advance(BACKOFF),
        assign("r", 0), poll("r"),
        topic={**COMPACT, "delete.retention.ms": HOUR}, consumers=(READER,),
    )  # fmt: skip
    r = run(sc, steps=True)
    (gone,) = steps(r, "cleaner_tombstone_expired")
    assert gone["removed"] == [1]
    assert "only the value written after" in gone["text"] and "at all" not in gone["text"]
    assert [(x["offset"], x["record"]) for x in r["polls"][-1]["records"] if x["key"] == "K9"] == [(13, "y")]


def test_FD_an_idempotent_producers_empty_batch_stays_until_the_expiry_check_removes_it():
    """§F.D idempotent producers: the empty batch stays "until P writes again or expires". P's state
    expires at the first periodic check (every producer.id.expiration.check.interval.ms = 10 min,
    UnifiedLog 469-470) that finds its last batch producer.id.expiration.ms (1 day) old: P wrote at
    1 min, so it is still active at day 1 + 5 min and gone from day 1 + 10 min."""
    from engine.compaction import active_producers
    from engine.segments import LogConfig, SegmentedLog

    log = SegmentedLog.create(LogConfig(cleanup_policy="compact"))
    log.append([(60 * SEC, "K1", "a")], SIZE, 60 * SEC, producer_id=7)
    assert active_producers(log, DAY) == {7: 0}
    assert active_producers(log, DAY + 5 * 60 * SEC) == {7: 0}, "no check since it became a day old"
    assert active_producers(log, DAY + 10 * 60 * SEC) == {}


def test_D4_a_truncation_that_empties_a_cleaned_batch_keeps_its_max_timestamp():
    """§D.4 (MR 296-300): a rewritten batch keeps its header, its max timestamp included, even with
    no records left; a truncation (a follower's, `truncate_to`) that cuts such a batch before its
    surviving record leaves an empty batch that still carries that timestamp, so the segment's
    largest timestamp (retention, min.compaction.lag.ms) does not fall back to none."""
    from engine.compaction import clean, cleanable_offsets
    from engine.segments import LogConfig, SegmentedLog

    log = SegmentedLog.create(LogConfig(cleanup_policy="compact", segment_bytes=300))
    log.append([(1, "K1", "a"), (2, "K2", "b"), (5, "K1", "c")], 100, 5)  # offsets 0-2
    log.append([(6, "K2", "d")], 100, 6)
    log.append([(7, "K9", "z")], 100, 7)
    log.append([(8, "K9", "y")], 100, 8)  # rolls
    log.update_high_watermark(log.log_end_offset)
    clean(log, cleanable_offsets(log, 9), 9)
    first = log.segments[0].batches[0]
    assert (first.base_offset, first.last_offset, [r.offset for r in first.records]) == (0, 2, [2])
    log.truncate_to(2, 10)
    cut = log.segments[0].batches[0]
    assert (cut.base_offset, cut.last_offset, cut.records) == (0, 1, ())
    assert cut.max_timestamp_ms == 5 and log.segments[0].largest_timestamp_ms == 5


def test_D5_a_fetch_that_reads_to_the_hw_moves_the_position_past_the_removed_offsets_at_its_end():
    """A cleaned batch keeps its last offset (§D.4, MR 296-300) and the consumer goes on from the
    last fetched batch's next offset (`CompletedFetch.nextFetchedRecord`): a fetch that reads up to
    the high watermark leaves the position there, even when the cleaner removed the offsets before
    it; one that max.poll.records stops leaves it after its last record."""
    from types import SimpleNamespace

    from engine.consumers import Clients

    log = [(0, f"r{i}", -1) for i in range(6)]
    for room, got_offsets, position in ((10, [0, 2], 6), (2, [0, 2], 0), (1, [0], 0)):
        c = SimpleNamespace(position={0: 0})
        got: list = []
        Clients._fetch_compacted(None, c, 0, 0, 6, log, {1, 3, 4, 5}, room, got)  # type: ignore[arg-type]
        assert [off for _p, off, _e in got] == got_offsets
        assert c.position[0] == position, "the caller moves it past the records it delivers"
