"""Stale fetches (kafka-semantics.md §3.3 and §4.3): the leader's record of a follower's LEO
comes from that follower's fetches, so a fetch the follower abandoned, or one sent by an earlier
incarnation of a restarted follower, must never move it backwards. Kafka fences a fetch-state
update that carries a stale broker epoch (Replica.updateFetchStateOrThrow, KIP-903), and handles
the requests of one connection in order.
"""

from __future__ import annotations

import pytest
from scenario_builders import (
    advance,
    crash,
    produce,
    restart,
    resume_fetching,
    run,
    scenario,
    settle,
    stop_fetching,
)


def _reported(views: list[dict], b: int) -> list[int]:
    out = []
    for v in views:
        brokers = v.get("brokers") or v["partitions"][0]["brokers"]
        rep = brokers[str(b)]["reported_leo"] if str(b) in brokers else brokers[b]["reported_leo"]
        if rep is not None:
            out.append(rep)
    return out


def _never_backwards(seq: list[int]) -> bool:
    return all(b >= a for a, b in zip(seq, seq[1:], strict=False))


@pytest.mark.parametrize("version", ["1.1", "4.1"])
def test_s3_3_abandoned_fetch_does_not_move_the_followers_leo_back(version):
    """§3.3/§4.3: B3's slow fetch is abandoned by stop_fetching; after it resumes and catches up,
    the abandoned fetch (an older offset) arrives and must not be applied."""
    sc = scenario(
        produce("a"), settle(),
        {"do": "slow", "broker": 3, "ms": 3_000}, advance(700),
        stop_fetching(3), {"do": "slow", "broker": 3, "ms": 0},
        produce("b"), produce("c"), advance(50),
        resume_fetching(3), advance(5_000),
        kafka_version=version,
    )
    r = run(sc, steps=True, all_views=True)
    assert _never_backwards(_reported(r["views"], 3))


@pytest.mark.parametrize("version", ["1.1", "4.1"])
def test_s4_3_fetch_from_an_earlier_incarnation_is_not_applied(version):
    """§4.3: a follower's slow fetch is in flight when it crashes and restarts; the fetch of the
    old incarnation arrives after the new incarnation's fetches and must not be applied."""
    sc = scenario(
        produce("a"), settle(),
        {"do": "slow", "broker": 3, "ms": 3_000}, advance(700),
        crash(3), restart(3), {"do": "slow", "broker": 3, "ms": 0},
        produce("b"), produce("c"), advance(20_000),
        kafka_version=version,
    )
    r = run(sc, steps=True, all_views=True)
    assert _never_backwards(_reported(r["views"], 3))


@pytest.mark.parametrize("version", ["1.1", "4.1"])
def test_s3_3_abandoned_fetch_arriving_first_is_handled_but_its_answer_discarded(version):
    """§3.3: B3's slow fetch (sent at 504 ms, 3 s on the wire) is abandoned by stop_fetching. It
    still reaches the leader before anything newer, and Kafka handles it like any fetch (the
    leader notes the fetch); the stopped fetcher discards the answer, so B3 does not append b."""
    sc = scenario(
        produce("a"), settle(),
        {"do": "slow", "broker": 3, "ms": 3_000}, advance(700),
        stop_fetching(3), produce("b", acks=1), advance(5_000),
        kafka_version=version,
    )
    r = run(sc, steps=True)
    stop = next(s["t_ms"] for s in r["steps"] if s["kind"] == "broker_stop_fetching")
    b3 = r["final"]["brokers"]["3"]
    assert b3["last_fetch_ms"] > stop + 2_000, "the leader handled the abandoned fetch when it arrived"
    assert [e["record"] for e in b3["log"]] == ["a"], "its answer (carrying b) was discarded"
    assert b3["reported_leo"] == 1
