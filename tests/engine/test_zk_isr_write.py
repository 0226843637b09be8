"""ZooKeeper-era ISR writes (kafka-semantics.md §4.4 and canonical scenario S14, historic profiles).

Before AlterPartition (KIP-497, 2.7) the leader wrote the ISR to ZooKeeper itself as a
conditional write on its cached zkVersion (Partition.updateIsr and
ReplicationUtils.updateLeaderAndIsr at tag 1.1.0). A leader cut off from ZooKeeper cannot write;
a leader whose cached zkVersion is stale logs "Cached zkVersion ... not equal to that in
zookeeper, skip updating ISR" and keeps its cached ISR. Either way the real ISR is untouched.
"""

from __future__ import annotations

import pytest
from scenario_builders import (
    FENCE_MS,
    REJOIN_MS,
    advance,
    heal,
    isolate,
    mark,
    part,
    produce,
    run,
    scenario,
    settle,
    steps_of,
    upto,
)

ZK_ERA = ("0.8", "0.10", "1.1")
MAX_INT = 2_147_483_647


@pytest.mark.parametrize("version", ZK_ERA)
def test_s14_isolated_zk_era_leader_cannot_shrink_the_real_isr(version):
    """S14 / §4.4: the isolated old leader's ISR shrink fails (no ZooKeeper session); the new
    leader's ISR stays {2,3}, and with acks=all and min.insync.replicas 2 nothing acked is lost."""
    everything = ["controller", 2, 3]
    sc = scenario(
        produce("a"), settle(),
        isolate(1, everything), produce("x"), advance(2_000),
        advance(FENCE_MS), mark("moved"),
        advance(30_000), mark("late"),
        heal(1, everything), advance(REJOIN_MS), settle(), advance(1_000),
        kafka_version=version, min_isr=2, unclean=False, acks="all" if version != "0.8" else -1,
        retries=MAX_INT,
    )
    moved = upto(sc, "moved")
    assert part(moved)["leader"] == 2 and sorted(part(moved)["isr"]) == [2, 3]
    late = upto(sc, "late", steps=True)
    assert sorted(part(late)["isr"]) == [2, 3], "the isolated leader must not write ISR {1}"
    failed = steps_of(late, "leader_isr_write_failed")
    assert failed and "cannot reach ZooKeeper" in failed[0]["text"]
    r = run(sc)
    assert r["lost_acked_records"] == []

