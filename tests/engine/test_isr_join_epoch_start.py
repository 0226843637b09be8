"""ISR expansion and the leader's epoch start (kafka-semantics.md §4.3, version matrix).

Since 2.1 (KAFKA-7128, "Follower has to catch up to offset within current leader epoch to join
ISR") the leader adds a follower only when its LEO has reached both the HW and the start offset of
the leader's current epoch (Partition.maybeExpandIsr, P 1061-1066). Kafka 1.1's maybeExpandIsr
(Partition.scala 368-391 at tag 1.1.0) checks the HW alone, so a follower behind a new leader's
lagging HW could join the ISR before it had the records between that HW and the epoch start.
"""

from __future__ import annotations

import pytest
from scenario_builders import (
    advance,
    crash,
    produce,
    resume_fetching,
    run,
    scenario,
    settle,
    steps_of,
    stop_fetching,
)


def _story(version: str) -> dict:
    """B3 stops with a, b (LEO 2) and is shrunk out after c; B1 crashes before B2 learns HW 3;
    B2 leads from offset 3 (epoch start 3) with HW 2, held there by slow B4; B3 resumes."""
    return scenario(
        produce("a"), settle(), produce("b"), settle(), stop_fetching(3), produce("c"), advance(3_000),
        {"do": "slow", "broker": 4, "ms": 3_000}, crash(1), advance(10_000),
        resume_fetching(3), advance(5_000),
        kafka_version=version, brokers=(1, 2, 3, 4), replicas=[1, 2, 3, 4], acks=1, lag_ms=2_000,
        unclean=False,
    )


def _join(version: str) -> tuple[dict, int]:
    r = run(_story(version), steps=True, all_views=True)
    become = next(s for s in steps_of(r, "leader_become") if s["broker"] == 2)
    assert "the epoch starts at offset 3; its HW is 2" in become["text"]
    join = next(s for s in steps_of(r, "leader_expand_isr") if "B3 reached" in s["text"])
    return join, r["views"][join["i"]]["brokers"]["3"]["reported_leo"]


@pytest.mark.parametrize("version", ["3.6", "4.1"])
def test_kafka_7128_follower_joins_only_after_reaching_the_epoch_start(version):
    """§4.3 (P 1061-1066): B3's first fetch (offset 2) reaches the HW 2 but not the epoch start 3,
    so B2 adds it only after its next fetch reports offset 3."""
    join, leo = _join(version)
    assert leo == 3 and "the epoch start 3" in join["text"]


def test_kafka_7128_in_1_1_a_follower_joins_at_the_hw_below_the_epoch_start():
    """Before 2.1 (1.1.0 Partition.maybeExpandIsr): B3 joins on its first fetch, at LEO 2, below
    B2's epoch start 3 -- the gap KAFKA-7128 closed."""
    join, leo = _join("1.1")
    assert leo == 2 and "epoch start" not in join["text"]
