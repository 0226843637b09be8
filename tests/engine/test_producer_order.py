"""A partition's batches leave the producer in order (kafka-clients-logs.md §C.5, §F.C C4): a batch
waiting to be retried goes back to the front of the partition's queue (RecordAccumulator.reenqueue)
and the drain skips the partition while that batch backs off (drainBatchesForOneNode), so a batch
produced meanwhile waits behind it. Before this rule the engine logged x, b, a; Kafka logs x, a, b."""

import pytest

from tests.engine.scenario_builders import advance, crash, log_rows, produce, restart, run, scenario, settle


def story(idempotence: bool) -> dict:
    return scenario(
        produce("x"),
        settle(),
        crash(2),
        crash(3),
        advance(40_000),  # the ISR shrinks to {1}: acks=all writes are refused (NOT_ENOUGH_REPLICAS)
        produce("a"),
        advance(300),  # a is backing off before its retry
        produce("b"),
        restart(2),
        settle(),
        min_isr=2,
        idempotence=idempotence,
        acks="all",
    )


@pytest.mark.parametrize("idempotence", [True, False])
def test_a_batch_produced_during_a_retry_backoff_waits_behind_it(idempotence):
    result = run(story(idempotence), steps=True)
    assert [record for _, _, record in log_rows(result, 1)] == ["x", "a", "b"]
    kinds = [(s["kind"], s.get("produce")) for s in result["steps"]]
    assert ("producer_hold", 2) in kinds  # b (the third batch) waited behind a
    # whenever b is sent, a was sent just before it or is already acknowledged: never while a backs off
    sends = [s["produce"] for s in result["steps"] if s["kind"] == "producer_send" and s["produce"] in (1, 2)]
    assert sends[0] == 1 and all(p == 1 for p, q in zip(sends, sends[1:], strict=False) if q == 2)
    assert [b["outcome"] for b in result["produce"]] == ["acked", "acked", "acked"]


def test_a_held_batch_still_fails_at_its_delivery_timeout():
    sc = story(True)
    sc["producer"]["delivery.timeout.ms"] = 5_000
    sc["producer"]["request.timeout.ms"] = 4_000
    sc["actions"] = sc["actions"][:8] + [advance(30_000)]  # nobody restarts: a and b time out
    result = run(sc, steps=True)
    outcomes = [(b["outcome"], b.get("error")) for b in result["produce"]]
    assert outcomes[1][0] == "failed" and outcomes[2][0] == "failed"
    b = result["produce"][2]
    assert b["done_ms"] - b["sent_ms"] <= 5_000


def test_several_held_batches_each_leave_once_and_in_order():
    """Two batches produced during one retry backoff: once the retried batch goes, each held one is
    sent exactly once, in order (an earlier version sent the last of them twice in the same ms)."""
    sc = scenario(
        produce("x"), settle(), crash(2), crash(3), advance(40_000), produce("a"), advance(300),
        produce("b"), produce("c"), restart(2), settle(),
        min_isr=2, idempotence=True, acks="all",
    )  # fmt: skip
    result = run(sc, steps=True)
    assert [record for _, _, record in log_rows(result, 1)] == ["x", "a", "b", "c"]
    sends = [(s["t_ms"], s["produce"]) for s in result["steps"] if s["kind"] == "producer_send"]
    assert len(sends) == len(set(sends)), "a batch was sent twice in the same millisecond"
    attempts = {b["records"][0]: b["attempts"] for b in result["produce"]}
    assert sum(attempts.values()) == len(sends)


def test_kip360_a_real_gap_bumps_the_producer_epoch_and_restarts_the_sequence():
    """kafka-eos-kraft.md §A.3: the leader's state says sequence 0 was the last, the next batch
    carries 2 (sequence 1 was acknowledged by a leader that then lost it): OUT_OF_ORDER_SEQUENCE_NUMBER
    with no earlier batch unanswered is a real gap, so the producer bumps its epoch and sends again
    from sequence 0, which a new epoch must start at (ProducerAppendInfo 112-143)."""
    from engine import simulate

    sc = {
        "brokers": [{"id": 1}, {"id": 2}],
        "topic": {"replication.factor": 2, "min.insync.replicas": 1, "unclean.leader.election.enable": True},
        "producer": {"acks": "all"},
        "actions": [
            {"do": "produce", "records": ["m0"]},
            {"do": "settle"},
            {"do": "stop_fetching", "broker": 2},
            {"do": "produce", "records": ["m1"]},
            {"do": "settle"},  # B2 leaves the ISR; m1 is acknowledged by B1 alone
            {"do": "crash", "broker": 1},
            {"do": "resume_fetching", "broker": 2},
            {"do": "settle", "through_failover": True},  # B2, without m1, is elected uncleanly
            {"do": "produce", "records": ["m2"]},
            {"do": "settle"},
        ],
    }
    r = simulate(sc, steps=True)
    kinds = [s["kind"] for s in r["steps"]]
    assert "leader_reject_out_of_order" in kinds and "producer_bump_epoch" in kinds
    assert kinds.index("leader_reject_out_of_order") < kinds.index("producer_bump_epoch")
    assert r["produce"][-1]["outcome"] == "acked" and r["produce"][-1]["offsets"] == [1]
    assert r["produce"][-1]["attempts"] == 2
