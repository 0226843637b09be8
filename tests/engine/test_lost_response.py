"""A produce whose response is lost (the scenario's `lose_response`), per kafka-eos-kraft.md.

Ground truth: §E.A **A1, "ack lost, batch retried"**: the leader appends B0 (5 records, seq 0-4),
the response is lost, the request times out after request.timeout.ms (30 s) and the client
retries B0 unchanged. Idempotent: the leader finds (epoch 0, seq 0-4) among its last five batches
and answers NONE with base offset 0: one copy, the callback reports offset 0 (§A.3). Not
idempotent: the retry is appended at 5-9, two copies, the callback reports 5. The same row is in
§A's table ("Batch written, ack lost, retried"). A5 ("the leader fails after writing"): the retry
goes to the new leader, which built the producer's state as a follower. acks=0 has no response to
lose (a problem).
"""

from __future__ import annotations

import pytest

from engine import ScenarioError, simulate

RECORDS = ["a", "b", "c", "d", "e"]


def lost_response_run(idempotent: bool, **producer: object) -> dict:
    return simulate(
        {
            "topic": {"replication.factor": 3, "min.insync.replicas": 2},
            "producers": [{"id": "app1", "acks": "all", "enable.idempotence": idempotent, **producer}],
            "consumers": [],
            "actions": [
                {"do": "produce", "producer": "app1", "records": RECORDS, "lose_response": True},
                {"do": "settle"},
            ],
        },
        steps=True,
    )


def kinds(r: dict) -> list[str]:
    return [s["kind"] for s in r["steps"]]


def test_A1_idempotent_retry_after_a_lost_response_keeps_one_copy_and_reports_offset_0():
    r = lost_response_run(True)
    log = [(e["offset"], e["record"], e["sequence"]) for e in r["partitions"][0]["log"]]
    assert log == [(i, rec, i) for i, rec in enumerate(RECORDS)]  # one copy, seq 0-4
    (p,) = r["produce"]
    assert (p["outcome"], p["offsets"], p["attempts"]) == ("acked", [0, 1, 2, 3, 4], 2)
    assert r["duplicate_records"] == []
    k = kinds(r)
    assert k.index("leader_response_lost") < k.index("leader_dedupe_idempotent")
    # the retry comes request.timeout.ms (30 s) after the first send, not sooner
    lost = next(s for s in r["steps"] if s["kind"] == "leader_response_lost")
    retry = next(s for s in r["steps"] if s["kind"] == "producer_retry")
    assert retry["t_ms"] - lost["t_ms"] >= 30_000 - 10


def test_A1_non_idempotent_retry_after_a_lost_response_writes_two_copies_and_reports_5():
    r = lost_response_run(False)
    assert [e["record"] for e in r["partitions"][0]["log"]] == RECORDS + RECORDS
    (p,) = r["produce"]
    assert (p["outcome"], p["offsets"], p["attempts"]) == ("acked", [5, 6, 7, 8, 9], 2)
    assert sorted(r["duplicate_records"]) == sorted(RECORDS)
    assert "leader_dedupe_idempotent" not in kinds(r)


def test_only_the_first_answer_is_lost_and_a_short_request_timeout_retries_sooner():
    r = lost_response_run(True, **{"request.timeout.ms": 5000})
    assert kinds(r).count("leader_response_lost") == 1
    lost = next(s for s in r["steps"] if s["kind"] == "leader_response_lost")
    retry = next(s for s in r["steps"] if s["kind"] == "producer_retry")
    assert 5000 - 10 <= retry["t_ms"] - lost["t_ms"] < 30_000


def test_acks_0_has_no_response_to_lose():
    with pytest.raises(ScenarioError) as err:
        simulate(
            {
                "topic": {"replication.factor": 3},
                "producers": [{"id": "app1", "acks": 0}],
                "consumers": [],
                "actions": [{"do": "produce", "producer": "app1", "records": ["a"], "lose_response": True}],
            }
        )
    assert "lose_response" in str(err.value.to_json())


def test_A5_the_leader_fails_after_writing_and_the_retry_to_the_new_leader_is_a_duplicate():
    """§E.A A5: B0 is written on L1 and replicated to the ISR; L1 crashes before its answer
    reaches the client (here: the answer is lost, then L1 crashes). The client retries to the new
    leader L2, which built the producer's state as a follower: a duplicate, NONE with the original
    offsets, one copy."""
    r = simulate(
        {
            "topic": {"replication.factor": 3, "min.insync.replicas": 2},
            "producers": [{"id": "app1", "acks": "all", "enable.idempotence": True}],
            "consumers": [],
            "actions": [
                {"do": "produce", "producer": "app1", "records": RECORDS, "lose_response": True},
                {"do": "advance", "ms": 200},
                {"do": "crash", "broker": 1},
                {"do": "settle"},
            ],
        },
        steps=True,
    )
    part = r["partitions"][0]
    assert part["leader"] != 1
    assert [e["record"] for e in part["log"]] == RECORDS  # one copy
    (p,) = r["produce"]
    assert (p["outcome"], p["offsets"]) == ("acked", [0, 1, 2, 3, 4])
    dedupe = next(s for s in r["steps"] if s["kind"] == "leader_dedupe_idempotent")
    assert dedupe["text"].startswith(f"B{part['leader']} ")  # the new leader recognised it
