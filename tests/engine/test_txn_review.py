"""A review of the transactions engine against kafka-eos-kraft.md: the cases test_txn_canonical.py
does not name. The LSO with several open transactions (§B.5), the LSO and read_committed across a
leader change (§A.4, §B.5: the new leader rebuilds its producer state, open transactions included,
from its own log), the stale-epoch errors of a pre-2.7 broker (§B.7), and the captions of the
fence (§E.B B2).

The scenarios are B1/B2/B4's shapes, in the contract's words, run through `engine.simulate` alone.
"""

from __future__ import annotations

import pytest

from engine import ScenarioError, simulate

READ_COMMITTED = {"id": "rc", "isolation.level": "read_committed", "auto.offset.reset": "earliest"}
TWO_TXN = [{"id": "A", "transactional.id": "tA"}, {"id": "B", "transactional.id": "tB"}, {"id": "plain"}]
ONE_TXN = [{"id": "A", "transactional.id": "tA"}, {"id": "plain"}]


def run(actions: list[dict], producers: list[dict], *, consumers: list[dict] | None = None,
        **extra: object) -> dict:
    return simulate(
        {
            "topic": {"partitions": 1, "replication.factor": 3, "min.insync.replicas": 2},
            "producers": producers,
            "consumers": [READ_COMMITTED] if consumers is None else consumers,
            "actions": actions,
            **extra,
        },
        steps=True,
        check_invariants=True,
    )


def call(do: str, producer: str) -> dict:
    return {"do": do, "producer": producer}


def send(records: list[str], producer: str) -> dict:
    return {"do": "produce", "producer": producer, "partition": 0, "records": records}


def poll() -> dict:
    return {"do": "poll", "consumer": "rc", "timeout_ms": 1000}


SETTLE = {"do": "settle"}


def log(r: dict) -> list[tuple]:
    return [(e["offset"], e["record"], e["control"]) for e in r["partitions"][0]["log"]]


def polled(r: dict, i: int) -> list[tuple[int, str]]:
    return [(x["offset"], x["record"]) for x in r["polls"][i]["records"]]


def kinds(r: dict) -> list[str]:
    return [s["kind"] for s in r["steps"]]


# ---------------------------------------------------------------------------------------------
# §B.5: the LSO is the first offset of the EARLIEST open transaction. A opens at 0, B at 1, A
# writes 2, a plain producer 3.

TWO_OPEN = [
    call("init_transactions", "A"),
    call("init_transactions", "B"),
    call("begin_transaction", "A"),
    call("begin_transaction", "B"),
    send(["a0"], "A"),
    SETTLE,
    send(["b1"], "B"),
    SETTLE,
    send(["a2"], "A"),
    send(["n3"], "plain"),
    SETTLE,
    {"do": "assign", "consumer": "rc", "partitions": [0]},
    poll(),  # 0
]


def test_B5_LSO_two_open_transactions_hold_it_at_the_first_ones_first_offset():
    r = run(TWO_OPEN, TWO_TXN)
    assert (r["partitions"][0]["hw"], r["partitions"][0]["lso"]) == (4, 0)
    assert polled(r, 0) == []


def test_B5_LSO_the_first_commits_and_the_lso_stops_at_the_second_open_transaction():
    r = run([*TWO_OPEN, call("commit_transaction", "A"), SETTLE, poll()], TWO_TXN)
    assert log(r)[4] == (4, None, "COMMIT")
    assert (r["partitions"][0]["hw"], r["partitions"][0]["lso"]) == (5, 1)  # B still open at 1
    assert polled(r, 1) == [(0, "a0")]
    assert r["consumers"]["rc"]["position"] == {"0": 1}
    # then B aborts: b1 is dropped by the client, a2 (A's, committed) and n3 come through
    r = run([*TWO_OPEN, call("commit_transaction", "A"), SETTLE, poll(),
             call("abort_transaction", "B"), SETTLE, poll()], TWO_TXN)
    assert log(r)[5] == (5, None, "ABORT")
    assert r["partitions"][0]["lso"] == 6
    assert polled(r, 2) == [(2, "a2"), (3, "n3")]
    assert r["consumers"]["rc"]["position"] == {"0": 6}


def test_B5_LSO_the_later_transaction_committing_first_does_not_move_it():
    r = run([*TWO_OPEN, call("commit_transaction", "B"), SETTLE, poll()], TWO_TXN)
    assert log(r)[4] == (4, None, "COMMIT")
    assert r["partitions"][0]["lso"] == 0  # A, open since 0, still holds everything back
    assert polled(r, 1) == []
    assert r["producers"]["B"]["transaction_state"] == "CompleteCommit"
    assert r["producers"]["A"]["transaction_state"] == "Ongoing"


# ---------------------------------------------------------------------------------------------
# §A.4 + §B.5: a leader change. B1 leads P0; A's transaction writes a0, a1 at 0-1 (replicated:
# acks=all), a plain producer n2; B1 crashes; the controller elects another ISR member, which
# rebuilds A's open transaction from its own log.

OPEN = [
    call("init_transactions", "A"),
    call("begin_transaction", "A"),
    send(["a0", "a1"], "A"),
    SETTLE,
    send(["n2"], "plain"),
    SETTLE,
    {"do": "assign", "consumer": "rc", "partitions": [0]},
    poll(),  # 0
]
LEADER = 1
FAILOVER = [{"do": "crash", "broker": LEADER}, {"do": "advance", "ms": 15_000}]


def test_A4_B5_the_new_leader_rebuilds_the_open_transaction_and_holds_the_lso():
    r = run([*OPEN, *FAILOVER, poll()], ONE_TXN)
    p = r["partitions"][0]
    assert p["leader"] not in (LEADER, -1)
    assert (p["hw"], p["lso"]) == (3, 0)  # the transaction open since 0 still holds the LSO
    assert polled(r, 0) == [] and polled(r, 1) == []


def test_A4_B5_after_the_leader_change_the_transaction_goes_on_and_its_marker_lands_on_the_new_leader():
    r = run([*OPEN, *FAILOVER, send(["a3"], "A"), SETTLE, call("commit_transaction", "A"), SETTLE, poll()],
            ONE_TXN)
    assert log(r) == [(0, "a0", None), (1, "a1", None), (2, "n2", None), (3, "a3", None), (4, None, "COMMIT")]
    assert r["partitions"][0]["lso"] == 5
    assert polled(r, 1) == [(0, "a0"), (1, "a1"), (2, "n2"), (3, "a3")]
    assert r["consumers"]["rc"]["position"] == {"0": 5}
    marker = next(s for s in r["steps"] if s["kind"] == "leader_write_txn_marker")
    assert marker["actor"] != f"broker-{LEADER}"


def test_A4_B5_read_committed_after_an_abort_on_the_new_leader_drops_the_aborted_records():
    r = run([*OPEN, *FAILOVER, call("abort_transaction", "A"), SETTLE, poll()], ONE_TXN)
    assert log(r)[3] == (3, None, "ABORT")
    assert polled(r, 1) == [(2, "n2")]
    assert r["consumers"]["rc"]["position"] == {"0": 4}


def test_B4_the_leader_crashes_with_the_marker_in_flight_and_the_coordinator_retries_to_the_new_leader():
    """commitTransaction() returned (PrepareCommit); the leader crashes before the marker's acks=all
    answer: the coordinator retries WriteTxnMarkers until a leader answers, then CompleteCommit."""
    r = run([*OPEN, call("commit_transaction", "A"), {"do": "crash", "broker": LEADER}, SETTLE, poll()],
            ONE_TXN)
    assert [e for e in log(r) if e[2]] == [(3, None, "COMMIT")]  # one marker, not two
    assert r["producers"]["A"]["transaction_state"] == "CompleteCommit"
    assert r["partitions"][0]["leader"] != LEADER
    assert polled(r, 1) == [(0, "a0"), (1, "a1"), (2, "n2")]


# ---------------------------------------------------------------------------------------------
# §B.7 per version: before 2.7 there was no PRODUCER_FENCED (90). The coordinator answered a stale
# epoch with INVALID_PRODUCER_EPOCH (47), the leader too, and the client raised 47 as a fatal
# ProducerFencedException wherever it came from (Errors.java, Sender.java 612-616 at tag 1.1.0).

ZOMBIE = [{"id": "A", "transactional.id": "tA"}, {"id": "B", "transactional.id": "tA"}]
B2_SHORT = [
    call("init_transactions", "A"),
    call("begin_transaction", "A"),
    send(["w"], "A"),
    SETTLE,
    call("init_transactions", "B"),
    SETTLE,
    send(["late"], "A"),
    SETTLE,
    call("abort_transaction", "A"),
]


@pytest.mark.parametrize(
    ("version", "send_error", "abort_error"),
    [
        ("4.1", "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"),  # abortable send, fatal abort
        ("3.6", "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"),
        ("1.1", "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_EPOCH"),  # 47 is fatal: the abort fails too
    ],
)
def test_B7_E_B2_the_zombies_errors_per_version(version: str, send_error: str, abort_error: str):
    r = run(B2_SHORT, ZOMBIE, consumers=[], kafka_version=version)
    late = next(p for p in r["produce"] if p["records"] == ["late"])
    assert (late["outcome"], late["error"]) == ("failed", send_error)
    assert r["transactions"][-1]["error"] == abort_error


def test_B7_before_2_7_the_coordinator_fences_a_zombie_commit_with_INVALID_PRODUCER_EPOCH():
    actions = [*B2_SHORT[:6], call("commit_transaction", "A")]
    r = run(actions, ZOMBIE, consumers=[], kafka_version="1.1")
    assert r["transactions"][-1]["error"] == "INVALID_PRODUCER_EPOCH"
    fenced = next(s for s in r["steps"] if s["kind"] == "txn_producer_fenced")
    assert "INVALID_PRODUCER_EPOCH, fatal" in fenced["text"] and "PRODUCER_FENCED" not in fenced["text"]


def test_B8_before_2_5_send_offsets_to_transaction_is_refused_not_run_with_KIP_447s_fence():
    actions = [
        call("init_transactions", "A"),
        call("begin_transaction", "A"),
        {"do": "subscribe", "consumer": "c"},
        {"do": "send_offsets_to_transaction", "producer": "A", "consumer": "c", "offsets": {"0": 0}},
    ]
    with pytest.raises(ScenarioError) as err:
        run(actions, ONE_TXN, consumers=[{"id": "c", "group.id": "g"}], kafka_version="1.1")
    assert "KIP-447" in str(err.value.to_json())


# ---------------------------------------------------------------------------------------------
# §E.B B2's captions: the epoch the new instance gets fences every older one (the fence epoch
# itself was never handed out), and the client retries after a backoff, not on a signal.


def test_E_B2_captions_say_which_epochs_are_fenced_and_how_the_new_instance_retries():
    r = run(B2_SHORT[:6], ZOMBIE, consumers=[])
    inits = [s["text"] for s in r["steps"] if s["kind"] == "txn_init_producer_id"]
    assert "epoch 1 -> 2" in inits[-1] and "older epoch is fenced" in inits[-1]
    assert "holding epoch 1" not in inits[-1]  # nobody ever held the fence epoch 1
    answer = next(s["text"] for s in r["steps"] if s["kind"] == "txn_concurrent_transactions")
    assert "backs off and asks again" in answer


# ---------------------------------------------------------------------------------------------
# §B.4 step 8: a new transaction can start while the last one's markers are being written; its
# AddPartitionsToTxn gets CONCURRENT_TRANSACTIONS until CompleteCommit, then goes through.


def test_B4_step_8_the_next_transactions_add_partitions_waits_on_CONCURRENT_TRANSACTIONS():
    actions = [
        call("init_transactions", "A"),
        call("begin_transaction", "A"),
        send(["a"], "A"),
        call("commit_transaction", "A"),  # returns at PrepareCommit
        call("begin_transaction", "A"),
        send(["c"], "A"),
        SETTLE,
    ]
    r = run(actions, ONE_TXN, consumers=[])
    steps = [(s["kind"], s["text"]) for s in r["steps"]]
    k = [kind for kind, _ in steps]
    busy = k.index("txn_concurrent_transactions")
    assert "AddPartitionsToTxn(P0)" in steps[busy][1] and "PrepareCommit" in steps[busy][1]
    assert busy < k.index("txn_complete") < len(k) - 1 - k[::-1].index("txn_add_partitions")
    assert log(r) == [(0, "a", None), (1, None, "COMMIT"), (2, "c", None)]
    assert r["producers"]["A"]["transaction_state"] == "Ongoing"
    c = r["partitions"][0]["log"][2]
    assert (c["producer_epoch"], c["sequence"]) == (0, 1)  # TV1: same epoch, the sequence goes on


# ---------------------------------------------------------------------------------------------
# Known gaps, strict: each mark goes when the engine learns it.


def NOT_YET(why: str) -> pytest.MarkDecorator:  # noqa: N802 - reads as a marker
    return pytest.mark.xfail(reason=why, strict=True, raises=(AssertionError, ScenarioError))


@NOT_YET("TV2 (KIP-890 part 2, the default of a 4.0+ cluster and client) is not simulated: TV1 numbers")
def test_G9_E_B1_TV2_on_4_1_the_commit_bumps_the_epoch_and_the_next_transaction_starts_at_sequence_0():
    actions = [
        call("init_transactions", "A"),
        call("begin_transaction", "A"),
        send(["a", "b"], "A"),
        call("commit_transaction", "A"),
        SETTLE,
        call("begin_transaction", "A"),
        send(["d"], "A"),
        SETTLE,
    ]
    r = run(actions, ONE_TXN, consumers=[], kafka_version="4.1")
    marker, d = r["partitions"][0]["log"][2], r["partitions"][0]["log"][3]
    assert marker["producer_epoch"] == 1  # EndTxn(epoch 0) -> PrepareCommit at epoch 1
    assert (d["producer_epoch"], d["sequence"]) == (1, 0)


FIRST_BATCH_HOLE = [  # test_idempotence_canonical.py's A2 with no prior write (§A.3)
    {"do": "isolate", "broker": 1, "from": ["producer"]},
    {"do": "produce", "producer": "app", "partition": 0, "records": ["b0"]},  # seq 0: lost
    {"do": "advance", "ms": 10},
    {"do": "heal", "broker": 1, "from": ["producer"]},
    {"do": "produce", "producer": "app", "partition": 0, "records": ["b1"]},  # seq 1: first to arrive
    {"do": "settle", "max_ms": 120_000},
]


@NOT_YET("a pre-2.5 leader's UNKNOWN_PRODUCER_ID (before KIP-360) is not simulated: any sequence is accepted")
def test_G1_G3_a_1_1_leader_refuses_an_unknown_producer_id_above_sequence_0_no_first_batch_hole():
    """§A.3 / §G.3: 'a pid the broker has no state for may start at any sequence' is KIP-360's rule
    (2.5). A 1.1 leader answered UNKNOWN_PRODUCER_ID (ProducerStateManager.checkSequence at tag
    1.1.0), and its client reset the in-flight sequences and retried: b0 then b1, in order."""
    r = run(FIRST_BATCH_HOLE, [{"id": "app", "enable.idempotence": True, "acks": "all"}], consumers=[],
            kafka_version="1.1")
    assert "UNKNOWN_PRODUCER_ID" in {s.get("error") for s in r["steps"]}
    assert [e["record"] for e in r["partitions"][0]["log"]] == ["b0", "b1"]


def test_G3_since_2_5_the_first_batch_hole_lets_b1_in_first():
    r = run(FIRST_BATCH_HOLE, [{"id": "app", "enable.idempotence": True, "acks": "all"}], consumers=[])
    assert [e["record"] for e in r["partitions"][0]["log"]][:1] == ["b1"]


# ---------------------------------------------------------------------------------------------
# §B.4 step 7: a marker is appended with requiredAcks = -1 (KA 2429-2430, 2479-2483). Under
# min.insync.replicas it is refused like any acks=all write and the coordinator retries it;
# commitTransaction() has long returned, the transaction stays PrepareCommit and the LSO stuck.

UNDER_MIN_ISR = [
    call("init_transactions", "A"),
    call("begin_transaction", "A"),
    send(["a"], "A"),
    SETTLE,
    {"do": "crash", "broker": 2},
    {"do": "crash", "broker": 3},
    {"do": "advance", "ms": 40_000},  # both followers leave the ISR
    call("commit_transaction", "A"),
    {"do": "advance", "ms": 5_000},
]


def test_B4_step_7_a_marker_needs_min_insync_replicas_and_the_coordinator_retries_it():
    r = run(UNDER_MIN_ISR, ONE_TXN, consumers=[])
    assert r["transactions"][-1]["outcome"] == "committed"  # the call returned at PrepareCommit
    assert r["producers"]["A"]["transaction_state"] == "PrepareCommit"
    assert log(r) == [(0, "a", None)] and r["partitions"][0]["lso"] == 0
    refused = next(s["text"] for s in r["steps"] if s["kind"] == "leader_reject_not_enough_replicas")
    assert "refuses the COMMIT marker" in refused
    r = run([*UNDER_MIN_ISR, {"do": "restart", "broker": 2}, SETTLE], ONE_TXN, consumers=[])
    assert log(r) == [(0, "a", None), (1, None, "COMMIT")]
    assert (r["partitions"][0]["lso"], r["producers"]["A"]["transaction_state"]) == (2, "CompleteCommit")


def test_B4_step_7_the_marker_is_stamped_by_the_leader_when_it_appends_it():
    """WriteTxnMarkers takes a hop: the coordinator sends at PrepareCommit, the leader builds the
    control batch with its own clock (MemoryRecords.withEndTransactionMarker)."""
    r = run([*OPEN, call("commit_transaction", "A"), SETTLE], ONE_TXN)
    written = next(s["t_ms"] for s in r["steps"] if s["kind"] == "leader_write_txn_marker")
    prepared = next(s["t_ms"] for s in r["steps"] if s["kind"] == "txn_prepare")
    marker = r["partitions"][0]["log"][3]
    assert marker["control"] == "COMMIT" and marker["timestamp_ms"] == written > prepared


# ---------------------------------------------------------------------------------------------
# §E.B B3 vs B2: a fenced request is told what fenced it. After a timeout abort no newer
# instance exists; the coordinator's own sweep moved the epoch on (TC 759-795).


def test_E_B3_a_producer_fenced_by_its_timeout_is_not_told_a_newer_instance_owns_its_id():
    actions = [*OPEN[:4], {"do": "advance", "ms": 75_000}, call("commit_transaction", "A")]
    r = run(actions, ONE_TXN, consumers=[])
    assert r["transactions"][-1]["error"] == "PRODUCER_FENCED"
    fenced = next(s["text"] for s in r["steps"] if s["kind"] == "txn_producer_fenced")
    assert "transaction.timeout.ms" in fenced and "newer instance" not in fenced


def test_E_B2_a_producer_fenced_by_a_new_instance_is_told_so():
    r = run(B2_SHORT[:6] + [call("commit_transaction", "A")], ZOMBIE, consumers=[])
    fenced = next(s["text"] for s in r["steps"] if s["kind"] == "txn_producer_fenced")
    assert "newer instance called initTransactions()" in fenced

