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
    crash,
    heal,
    isolate,
    mark,
    part,
    produce,
    restart,
    resume_fetching,
    run,
    scenario,
    settle,
    shutdown,
    steps_of,
    stop_fetching,
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


# A fourth replica lets the stale leader's ISR change keep min.insync.replicas=3 members.
FOUR = (1, 2, 3, 4)


@pytest.mark.parametrize("version", ZK_ERA)
def test_s14_zombie_leader_cannot_ack_acks_all_by_shrinking_alone(version):
    """S14 / §4.4, the issue's "1.1, acks=all, min.insync.replicas 3, unclean off lost 9 acked
    records": leader B1 loses ZooKeeper (the controller) but still reaches its followers and the
    producer. Its session expires, B2 (which had stopped fetching, so it lacks x1..x9) is elected
    and B3, B4 truncate to it. B1 then finds B2 out of sync; before the fix its ISR shrink went
    through without ZooKeeper, so B1 acked x1..x9 on ISR {1,3,4}, and they were lost. Now the write
    fails, the ISR stays {1,2,3,4} on B1, its HW cannot pass B2, and nothing acked is lost."""
    records = [f"x{i}" for i in range(1, 10)]
    sc = scenario(
        produce("a"), settle(),
        stop_fetching(2), isolate(1, ["controller"]), produce(*records),
        advance(FENCE_MS), mark("elected"),
        advance(30_000), mark("late"),
        kafka_version=version, brokers=FOUR, replicas=list(FOUR), min_isr=3, unclean=False,
        acks="all" if version != "0.8" else -1, retries=MAX_INT,
    )
    elected = upto(sc, "elected")
    assert part(elected)["leader"] == 2 and sorted(part(elected)["isr"]) == [2, 3, 4]
    late = upto(sc, "late", steps=True)
    assert sorted(part(late)["isr"]) == [2, 3, 4], "the zombie leader must not write ISR {1,3,4}"
    assert not steps_of(late, "leader_shrink_isr", broker=1)
    assert steps_of(late, "leader_isr_write_failed", broker=1)
    assert late["lost_acked_records"] == []
    done_by_b1 = [s for s in steps_of(late, "leader_complete_produce") if s["text"].startswith("B1's")]
    assert len(done_by_b1) == 1, "B1 acknowledges only a, never x1..x9"
    r = run(sc)
    assert r["lost_acked_records"] == []


def _stale_leader_story(version: str) -> dict:
    """B4 drops out of the ISR; B1 loses ZooKeeper for 3 s (its session survives), during which
    B2 and B3 shut down and the controller writes ISR {1}; B1 comes back with cached ISR
    {1,2,3} and a stale zkVersion, and B4 catches up at once."""
    return scenario(
        produce("a"), settle(),
        stop_fetching(4), produce("b"), advance(20_000), mark("four_out"),
        isolate(1, ["controller"]), shutdown(2), shutdown(3), advance(3_000), mark("shut"),
        heal(1, ["controller"]), resume_fetching(4), advance(10), mark("expand"),
        advance(10_000),
        kafka_version=version, brokers=FOUR, replicas=list(FOUR), min_isr=1, unclean=False, retries=MAX_INT,
    )


@pytest.mark.parametrize("version", ZK_ERA)
def test_s4_4_stale_zkversion_leader_does_not_put_shut_down_brokers_back(version):
    """§4.4 (ZooKeeper era), the issue's "a stale leader puts two shut-down brokers back into the
    ISR": B1's expansion to {1,2,3,4} is a conditional write on a zkVersion the controller has
    since moved on; ZooKeeper refuses it ("Cached zkVersion ... not equal to that in zookeeper,
    skip updating ISR"), B1 keeps its cached ISR and the real ISR stays {1}. Once the controller's
    LeaderAndIsr brings B1 the current zkVersion, it adds B4 properly: ISR {1,4}."""
    sc = _stale_leader_story(version)
    four_out = upto(sc, "four_out")
    assert sorted(part(four_out)["isr"]) == [1, 2, 3]
    shut = upto(sc, "shut")
    assert part(shut)["isr"] == [1], "the controller removed the shut-down brokers"
    expand = upto(sc, "expand", steps=True)
    assert part(expand)["isr"] == [1], "B1's stale write must not put B2 and B3 back"
    failed = steps_of(expand, "leader_isr_write_failed", broker=1)
    assert failed and "Cached zkVersion" in failed[-1]["text"] and "skip updating ISR" in failed[-1]["text"]
    r = run(sc)
    assert sorted(part(r)["isr"]) == [1, 4]
    assert not ({2, 3} & set(part(r)["isr"]))


KRAFT_WORDS = ("broker.session.timeout.ms", "The controller commits ISR", "AlterPartition", "metadata log",
               "heartbeating", "registers a new incarnation", "unfences")


@pytest.mark.parametrize("version", ZK_ERA)
def test_zk_era_steps_speak_zookeeper(version):
    """§4.4 / S14 in the ZooKeeper era's own words: sessions expire (not broker.session.timeout.ms),
    the leader writes the ISR to ZooKeeper with its zkVersion (no AlterPartition, no controller
    commit), the controller sends LeaderAndIsr, and each step names and links the 1.1.0 code."""
    from engine.steps import ZK_ERA_TAG, step_kind

    sc = scenario(
        produce("a"), settle(), stop_fetching(3), produce("b"), advance(25_000),
        resume_fetching(3), advance(2_000), crash(1), advance(FENCE_MS), restart(1), advance(REJOIN_MS),
        kafka_version=version,
    )
    r = run(sc, steps=True, all_views=True)
    texts = [s["text"] for s in r["steps"]]
    for word in KRAFT_WORDS:
        assert not [t for t in texts if word in t], word
    kinds = {s["kind"] for s in r["steps"]}
    assert {"leader_shrink_isr", "leader_expand_isr", "controller_alter_partition",
            "controller_fence_broker", "controller_elect_leader"} <= kinds
    for s in r["steps"]:
        k = step_kind(s["kind"], kraft=False)
        assert s["code"] == k.code
        for word in KRAFT_WORDS:
            assert word not in k.summary, (s["kind"], word)
        if k.url and s["kind"] in ("leader_shrink_isr", "controller_fence_broker", "controller_elect_leader"):
            assert f"/blob/{ZK_ERA_TAG}/" in k.url
    assert any("ZooKeeper" in t and "zkVersion" in t for t in texts)
    assert any("sends LeaderAndIsr" in t for t in texts)
    labels = [m["label"] for v in r["views"] for m in v.get("messages", []) if m["kind"] == "metadata"]
    assert labels and all(lb.startswith("LeaderAndIsr: ") for lb in labels)


def test_kraft_steps_keep_kraft_words():
    """The same story on 4.1 still speaks KRaft (AlterPartition, the controller's commit)."""
    from engine.steps import STEP_KINDS, step_kind

    sc = scenario(
        produce("a"), settle(), stop_fetching(3), produce("b"), advance(50_000), kafka_version="4.1"
    )
    r = run(sc, steps=True)
    assert any("The controller commits ISR" in s["text"] for s in r["steps"])
    assert all(s["code"] == STEP_KINDS[s["kind"]].code == step_kind(s["kind"]).code for s in r["steps"])
