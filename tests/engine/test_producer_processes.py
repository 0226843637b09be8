"""Several producer processes, and a producer's crash, close() and restart (contract part 2).

Ground truth: kafka-eos-kraft.md §A.1 (every InitProducerId answers a fresh producer id, epoch 0;
idempotence never spans sessions) and its canonical scenario §E.A A4 (a restarted producer gets a
new PID, so resending writes duplicates); the contract's crash/shutdown/restart rows (a producer
crash loses its in-flight requests; a restart is a new process); KafkaProducer.close() waits for
what was already handed to send(). C2 (two producers splitting a key across partitions) is in
test_clients_canonical.py.
"""

from __future__ import annotations

import pytest

from engine import ScenarioError, simulate


def scenario(*actions: dict, producers: list[dict] | None = None, **topic: object) -> dict:
    sc: dict = {
        "topic": {"replication.factor": 3, **topic},
        "producers": producers or [{"id": "app1"}, {"id": "app2"}],
        "consumers": [],
        "actions": list(actions),
    }
    return sc


def produce(*records: str, producer: str = "app1", **extra: object) -> dict:
    return {"do": "produce", "records": list(records), "producer": producer, **extra}


def log(r: dict, p: int = 0) -> list[tuple[str, int, int, int]]:
    entries = r["partitions"][p]["log"]
    return [(e["record"], e["producer_id"], e["producer_epoch"], e["sequence"]) for e in entries]


def test_A1_each_producer_process_gets_its_own_producer_id_and_numbers_its_sequences_from_0():
    """§A.1: each idempotent process gets a fresh PID from InitProducerId; the leader keeps one
    producer state per PID, so two producers' sequences never clash in one partition."""
    r = simulate(
        scenario(
            produce("a0", "a1"),
            produce("b0"),
            produce("a2"),
            produce("b1", "b2", producer="app2"),
            {"do": "settle"},
        )
    )
    assert log(r) == [
        ("a0", 1000, 0, 0),
        ("a1", 1000, 0, 1),
        ("b0", 1000, 0, 2),
        ("a2", 1000, 0, 3),
        ("b1", 1001, 0, 0),
        ("b2", 1001, 0, 1),
    ]
    assert [(p["producer"], p["producer_id"], p["outcome"]) for p in r["produce"]] == [
        ("app1", 1000, "acked"),
        ("app1", 1000, "acked"),
        ("app1", 1000, "acked"),
        ("app2", 1001, "acked"),
    ]
    assert r["producers"]["app2"] == {
        "producer_id": 1001,
        "epoch": 0,
        "transaction_state": None,
        "fenced": False,
        "alive": True,
    }


def test_a_producer_without_idempotence_asks_for_no_producer_id():
    """§A.1: only an idempotent producer sends InitProducerId; its batches carry producer id -1."""
    r = simulate(
        scenario(
            produce("a0"),
            produce("b0", producer="app2"),
            {"do": "settle"},
            producers=[{"id": "app1", "enable.idempotence": False}, {"id": "app2"}],
        )
    )
    assert log(r) == [("a0", -1, -1, -1), ("b0", 1000, 0, 0)]
    assert r["producers"]["app1"]["producer_id"] == -1


def test_A4_a_restarted_producer_gets_a_new_pid_and_its_resend_is_a_duplicate():
    """§E.A A4: the process crashes with its batch on the wire; the leader still appends it, and
    nobody hears the answer. The new process gets a new PID and epoch 0; the broker has no state
    for it and accepts its sequence 0, so the application's resend of the same payload is written
    a second time. (Records are unique names in a scenario: the resend is `order-1 again`.)"""
    r = simulate(
        scenario(
            produce("order-0"),
            {"do": "settle"},
            produce("order-1"),
            {"do": "crash", "producer": "app1"},
            {"do": "advance", "ms": 1_000},
            {"do": "restart", "producer": "app1"},
            produce("order-1 again"),
            {"do": "settle"},
            producers=[{"id": "app1"}],
        ),
        steps=True,
    )
    assert log(r) == [("order-0", 1000, 0, 0), ("order-1", 1000, 0, 1), ("order-1 again", 1001, 0, 0)]
    assert [p["outcome"] for p in r["produce"]] == ["acked", "crashed", "acked"]
    assert r["producers"]["app1"]["producer_id"] == 1001 and r["producers"]["app1"]["alive"]
    kinds = [s["kind"] for s in r["steps"]]
    assert kinds.count("producer_crash") == 1 and kinds.count("producer_restart") == 1
    crash = next(s for s in r["steps"] if s["kind"] == "producer_crash")
    assert "1 batch already sent may still be written" in crash["text"]
    restart = next(s for s in r["steps"] if s["kind"] == "producer_restart")
    assert "producer id 1001" in restart["text"]
    # the leader appended order-1 after the crash: the request was already on the wire
    append = next(s for s in r["steps"] if s["kind"] == "leader_append" and "order-1" in s["text"])
    assert append["t_ms"] > crash["t_ms"]


def test_a_crash_loses_the_batches_still_in_the_producers_memory():
    """The contract: a producer crash loses what it had not sent. With no leader reachable the
    batch waits in the accumulator; after the crash nothing sends it, even once a leader is back."""
    r = simulate(
        scenario(
            {"do": "crash", "broker": 1},
            {"do": "crash", "broker": 2},
            {"do": "crash", "broker": 3},
            produce("stuck"),
            {"do": "advance", "ms": 500},
            {"do": "crash", "producer": "app1"},
            {"do": "restart", "broker": 1},
            {"do": "restart", "broker": 2},
            {"do": "restart", "broker": 3},
            {"do": "advance", "ms": 60_000},
            producers=[{"id": "app1"}],
        ),
        steps=True,
    )
    assert r["produce"][0]["outcome"] == "crashed"
    assert log(r) == []
    crash = next(s for s in r["steps"] if s["kind"] == "producer_crash")
    assert "1 batch still in its memory never leave" in crash["text"]


def test_close_waits_for_the_batches_already_handed_to_send():
    """KafkaProducer.close() returns only when every batch handed to send() has its answer: the
    action after it starts later, and the batch is acknowledged, not lost."""
    r = simulate(
        scenario(
            produce("x"),
            {"do": "shutdown", "producer": "app1"},
            {"do": "advance", "ms": 10},
            producers=[{"id": "app1"}],
        ),
        steps=True,
    )
    assert r["produce"][0]["outcome"] == "acked"
    close = next(s for s in r["steps"] if s["kind"] == "producer_close")
    assert "1 unanswered batch is answered" in close["text"]
    ack = next(s for s in r["steps"] if s["kind"] == "producer_receive")
    assert ack["i"] < close["i"] and r["action_t_ms"][2] >= ack["t_ms"] > 0
    assert r["producers"]["app1"]["alive"] is False


def test_a_producer_that_is_not_running_cannot_send():
    stop = {"do": "shutdown", "producer": "app1"}
    sc = scenario(produce("a"), stop, produce("b"), {"do": "settle"}, producers=[{"id": "app1"}])
    with pytest.raises(ScenarioError) as e:
        simulate(sc)
    (problem,) = e.value.problems
    assert problem["path"] == "actions[2].producer"
    assert "not running (it was shut down at actions[1]: send() after close() throws" in problem["message"]
    sc["actions"].insert(2, {"do": "restart", "producer": "app1"})
    assert [p["outcome"] for p in simulate(sc)["produce"]] == ["acked", "acked"]


def test_one_producers_retry_does_not_hold_back_another_producers_batch():
    """Each producer has its own accumulator: a batch of app1 backing off after
    NOT_ENOUGH_REPLICAS holds back app1's later batches only. app2 (acks=1) is written at once."""
    r = simulate(
        scenario(
            {"do": "crash", "broker": 2},
            {"do": "crash", "broker": 3},
            {"do": "advance", "ms": 40_000},  # both leave the ISR
            produce("a"),
            produce("b", producer="app2"),
            {"do": "advance", "ms": 200},
            producers=[{"id": "app1"}, {"id": "app2", "acks": 1, "enable.idempotence": False}],
            **{"min.insync.replicas": 2},
        ),
        steps=True,
    )
    assert [(p["producer"], p["outcome"]) for p in r["produce"]] == [("app1", "pending"), ("app2", "acked")]
    assert not any(s["kind"] == "producer_hold" for s in r["steps"])
    assert [e["record"] for e in r["partitions"][0]["log"]] == ["b"]
    texts = [s["text"] for s in r["steps"] if s["kind"] == "producer_send"]
    assert texts[0].startswith("Producer app1 sends a") and texts[1].startswith("Producer app2 sends b")


def test_a_restarted_producer_knows_the_partitions_the_topic_has_when_it_starts():
    """A new process fetches metadata at start: partitions added while it was down are known at
    once, and its metadata.max.age.ms counts from its start (C2's app2, §C.4)."""
    r = simulate(
        scenario(
            {"do": "shutdown", "producer": "app1"},
            {"do": "add_partitions", "count": 4},
            {"do": "advance", "ms": 1_000},
            {"do": "restart", "producer": "app1"},
            produce("k", key="alice"),
            {"do": "settle"},
            producers=[{"id": "app1"}],
            partitions=3,
        ),
        steps=True,
    )
    assert r["produce"][0]["partition"] == 1, "alice hashes to p1 of 4 (p0 of 3)"
    assert not any(s["kind"] == "producer_metadata_refresh" for s in r["steps"]), "down: no refresh"
    restart = next(s for s in r["steps"] if s["kind"] == "producer_restart")
    assert "4 partitions" in restart["text"] and restart["partition"] is None
