"""The idempotent producer's canonical scenarios, kafka-eos-kraft.md §E.A, through
`engine.simulate` alone. A1 (ack lost, batch retried) and A5 (the leader fails after writing) are
in test_lost_response.py; A4 (a restarted producer gets a new producer id, its resend is a
duplicate) is test_producer_processes.py::test_A4_a_restarted_producer_gets_a_new_pid_and_its_
resend_is_a_duplicate.
This file holds A2, A3, A6 and the first-batch hole (§A.3).
"""

from __future__ import annotations

from engine import simulate

SEC = 1_000


def run(actions: list[dict], **producer: object) -> dict:
    return simulate(
        {
            "topic": {"replication.factor": 3, "min.insync.replicas": 2},
            "producers": [{"id": "app", "acks": "all", **producer}],
            "consumers": [],
            "actions": actions,
        },
        steps=True,
    )


def batch(name: str, n: int = 5, **extra: object) -> dict:
    return {"do": "produce", "producer": "app", "records": [f"{name}{i}" for i in range(n)], **extra}


def log(r: dict) -> list[str]:
    return [e["record"] for e in r["partitions"][0]["log"]]


def kinds(r: dict) -> list[str]:
    return [s["kind"] for s in r["steps"]]


def b(name: str, n: int = 5) -> list[str]:
    return [f"{name}{i}" for i in range(n)]


# ---------------------------------------------------------------------------------------------
# A2: transient failure with two batches in flight. B0 (seq 5-9) fails without being written and
# B1 (seq 10-14) is already in flight. The reference's failure is NOT_ENOUGH_REPLICAS; both
# batches go to the same leader here, so B0's request is lost in a cut between the producer and
# the leader instead (REQUEST_TIMED_OUT after request.timeout.ms), healed before B1 is sent. The
# producer has written seq 0-4 first, so the leader holds its state.

A2 = [
    batch("w"),  # seq 0-4, offsets 0-4
    {"do": "settle"},
    {"do": "isolate", "broker": 1, "from": ["producer"]},
    batch("b0-"),  # seq 5-9: lost
    {"do": "advance", "ms": 10},
    {"do": "heal", "broker": 1, "from": ["producer"]},
    batch("b1-"),  # seq 10-14: in flight while B0 waits for its timeout
    {"do": "settle", "max_ms": 120 * SEC},
]


def test_A2_idempotent_B1_gets_OUT_OF_ORDER_and_waits_for_B0_order_kept():
    r = run(A2, **{"enable.idempotence": True})
    assert log(r) == b("w") + b("b0-") + b("b1-")
    assert [p["offsets"] for p in r["produce"]] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14]]
    assert "leader_reject_out_of_order" in kinds(r)
    assert "producer_bump_epoch" not in kinds(r)  # not a real gap: B0 was still unanswered
    assert [e["sequence"] for e in r["partitions"][0]["log"]] == list(range(15))


def test_A2_non_idempotent_with_5_in_flight_B1_lands_first_reordered():
    r = run(A2, **{"enable.idempotence": False})
    assert log(r) == b("w") + b("b1-") + b("b0-")
    assert [p["offsets"][0] for p in r["produce"]] == [0, 10, 5]


def test_A2_without_prior_state_the_first_batch_hole_lets_B1_in_first():
    """§A.3 "first-batch hole": a producer id the leader has no state for may start at any
    sequence, so B1 (seq 5-9) is accepted before B0 (seq 0-4); B0's retry is then out of order and
    is retried until delivery.timeout.ms runs out."""
    r = run(A2[2:], **{"enable.idempotence": True})
    assert log(r)[:5] == b("b1-")
    assert "b0-0" not in log(r)
    b0 = r["produce"][0]
    assert b0["outcome"] in ("failed", "pending")  # never written; given up at delivery.timeout.ms
    assert "leader_reject_out_of_order" in kinds(r)


# ---------------------------------------------------------------------------------------------
# A3: the retry of a batch older than the broker's five-batch window. B0's acknowledgement is
# lost; B1-B5 are appended meanwhile; B0's retry is not recognised (the cache holds B1-B5) and its
# sequence 0 is not 29 + 1: OUT_OF_ORDER_SEQUENCE_NUMBER, not a duplicate's success.

A3 = [batch("b0-", lose_response=True), *[batch(f"b{k}-") for k in range(1, 6)], {"do": "settle"}]


def test_A3_a_retry_older_than_five_batches_is_out_of_order_not_a_duplicate():
    r = run(A3, **{"enable.idempotence": True})
    k = kinds(r)
    assert "leader_dedupe_idempotent" not in k
    reject = next(s for s in r["steps"] if s["kind"] == "leader_reject_out_of_order")
    assert "b0-0" in reject["text"] and "29" in reject["text"]
    # the log holds each of B0-B5 once: B0 at 0-4, B1-B5 after it
    assert log(r) == [rec for k in range(6) for rec in b(f"b{k}-")]
    assert [p["outcome"] for p in r["produce"][1:]] == ["acked"] * 5
    # not the next sequence after the last acknowledged one (29): the client keeps retrying, it
    # does not bump its epoch (TransactionManager 959-964)
    assert "producer_bump_epoch" not in k


def test_A3_within_five_batches_the_retry_is_a_duplicate():
    actions = [batch("b0-", lose_response=True), *[batch(f"b{k}-") for k in range(1, 5)], {"do": "settle"}]
    r = run(actions, **{"enable.idempotence": True})
    assert "leader_dedupe_idempotent" in kinds(r)
    assert r["produce"][0]["offsets"] == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------------------------------------
# A6: delivery timeout with an unknown outcome (idempotent, not transactional). B0's answer is
# lost and delivery.timeout.ms (30 s here) expires while it is in flight. The producer wrote "w"
# first so that the leader holds its state.


def a6(*middle: dict) -> dict:
    actions = [
        batch("w", 1),
        {"do": "settle"},
        batch("a", lose_response=True),
        *middle,
        {"do": "advance", "ms": 40 * SEC},
        batch("c", 1),
        {"do": "settle"},
    ]
    return run(actions, **{"delivery.timeout.ms": 30 * SEC, "request.timeout.ms": 30 * SEC})


def test_A6_every_in_flight_batch_expired_the_producer_bumps_its_own_epoch_to_1():
    r = a6()
    a, c = r["produce"][1], r["produce"][2]
    assert (a["outcome"], a["error"]) == ("failed", "REQUEST_TIMED_OUT")
    assert "producer_bump_epoch" in kinds(r)
    last = r["partitions"][0]["log"][-1]
    assert (last["record"], last["producer_epoch"], last["sequence"]) == ("c0", 1, 0)
    assert c["producer_epoch"] == 1 and c["outcome"] == "acked"
    assert r["producers"]["app"]["epoch"] == 1


def test_A6_a_later_batch_acknowledged_proves_the_expired_one_was_written_no_bump():
    r = a6(batch("b"))
    assert "producer_bump_epoch" not in kinds(r)
    assert log(r) == ["w0"] + b("a") + b("b") + ["c0"]  # a is in the log although it "failed"
    assert r["partitions"][0]["log"][-1]["producer_epoch"] == 0


def test_A6_a_new_batch_waits_while_the_sequence_is_unresolved_then_goes_out_under_the_bumped_epoch():
    """§A.6 (RecordAccumulator 851-855): new batches are held back while the partition's sequence
    is unresolved. A expired in flight; B is still in flight when C is produced, so C waits; B
    expires too, every in-flight batch did (§E.A A6), the producer bumps its epoch to 1 and C goes
    out at epoch 1, sequence 0."""
    actions = [
        batch("w", 1),
        {"do": "settle"},
        batch("a", lose_response=True),
        {"do": "advance", "ms": 10 * SEC},
        batch("b", lose_response=True),
        {"do": "advance", "ms": 25 * SEC},
        batch("c", 1),
        {"do": "settle"},
    ]
    r = run(actions, **{"delivery.timeout.ms": 30 * SEC, "request.timeout.ms": 30 * SEC})
    k = kinds(r)
    assert "producer_hold" in k
    assert k.index("producer_bump_epoch") < max(i for i, x in enumerate(k) if x == "producer_send")
    c = r["produce"][3]
    assert (c["outcome"], c["producer_epoch"]) == ("acked", 1)
    last = r["partitions"][0]["log"][-1]
    assert (last["record"], last["producer_epoch"], last["sequence"]) == ("c0", 1, 0)


def test_A6_a_batch_that_expires_after_a_retriable_error_is_unresolved_too_so_the_next_batch_gets_through():
    """§A.6 / §E.A A6: a sent batch that expires on the client leaves its sequence unresolved,
    whatever its last attempt was answered (Sender marks every expired batch in retry unresolved,
    TM 739-745). A is refused with NOT_ENOUGH_REPLICAS until delivery.timeout.ms; nothing else is
    in flight, so the producer bumps its epoch to 1 and C goes in at epoch 1, sequence 0. Before,
    C's sequence 6 could never follow the leader's 0: OUT_OF_ORDER_SEQUENCE_NUMBER until it expired."""
    actions = [
        batch("w", 1),
        {"do": "settle"},
        {"do": "crash", "broker": 2},
        {"do": "crash", "broker": 3},
        {"do": "advance", "ms": 60 * SEC},
        batch("a"),
        {"do": "advance", "ms": 60 * SEC},
        {"do": "restart", "broker": 2},
        {"do": "restart", "broker": 3},
        {"do": "settle"},
        batch("c", 1),
        {"do": "settle"},
    ]
    r = run(actions, **{"delivery.timeout.ms": 30 * SEC, "request.timeout.ms": 10 * SEC})
    a, c = r["produce"][1], r["produce"][2]
    assert (a["outcome"], a["error"]) == ("failed", "NOT_ENOUGH_REPLICAS")
    assert "producer_bump_epoch" in kinds(r)
    assert (c["outcome"], c["producer_epoch"]) == ("acked", 1)
    last = r["partitions"][0]["log"][-1]
    assert (last["record"], last["producer_epoch"], last["sequence"]) == ("c0", 1, 0)


def test_A6_two_partitions_expiring_together_bump_the_producers_epoch_once():
    """§A.6 / §E.A A6 with two partitions: the epoch is the producer's, and Kafka bumps it once
    (TransactionManager.bumpIdempotentEpochAndResetIdIfNeeded) for every partition whose sequence
    is unresolved. x on P0 and y on P1 expire at the same millisecond; P0's check bumps the epoch
    to 1 and P1's takes that epoch and restarts its sequence, so the next records of both
    partitions go in at epoch 1, sequence 0 (before, P1 bumped it again, to 2)."""
    r = simulate({
        "topic": {"partitions": 2, "replication_factor": 2, "min.insync.replicas": 2},
        "producers": [{"id": "app"}],
        "actions": [
            {"do": "produce", "records": ["a"], "partition": 0},
            {"do": "produce", "records": ["b"], "partition": 1},
            {"do": "settle"},
            {"do": "crash", "broker": 2},  # in both partitions' replicas: each ISR falls below 2
            {"do": "advance", "ms": 20_000},
            {"do": "produce", "records": ["x"], "partition": 0},
            {"do": "produce", "records": ["y"], "partition": 1},
            {"do": "advance", "ms": 130_000},  # past delivery.timeout.ms (120 s)
            {"do": "restart", "broker": 2},
            {"do": "settle"},
            {"do": "produce", "records": ["z"], "partition": 0},
            {"do": "produce", "records": ["w"], "partition": 1},
            {"do": "settle"},
        ],
    }, steps=True)
    x, y, z, w = r["produce"][2:]
    assert (x["outcome"], y["outcome"]) == ("failed", "failed")
    bumps = [s["text"] for s in r["steps"] if s["kind"] == "producer_bump_epoch"]
    assert len(bumps) == 2 and "bumps its epoch to 1" in bumps[0] and "already 1" in bumps[1]
    assert [(p["outcome"], p["producer_epoch"]) for p in (z, w)] == [("acked", 1), ("acked", 1)]
