"""Transactions, per kafka-eos-kraft.md §B, with its canonical scenarios §E.B (B1-B5), each run
through `engine.simulate` alone with a scenario in the contract's words and assertions on the
contract's result fields (and step kinds where the order of events is the point).

The engine runs the TV1 protocol (every release before 4.0): the reference's TV1 numbers are the
expected ones. Producer ids are the engine's (1000, 1001, ...), not the reference's illustrative
3000; epochs and offsets are the reference's.

"Prefix" runs: to see the state in the middle of a story, the same scenario is run with its
action list cut at a mark (the engine is a pure function of the scenario).
"""

from __future__ import annotations

import pytest

from engine import ScenarioError, simulate

T = "tx-A"
READ_COMMITTED = {"isolation.level": "read_committed", "auto.offset.reset": "earliest"}


def run(actions: list[dict], *, partitions: int = 1, producers: list[dict] | None = None,
        consumers: list[dict] | None = None, **extra: object) -> dict:
    scenario = {
        "topic": {"partitions": partitions, "replication.factor": 3, "min.insync.replicas": 2},
        "producers": producers or [{"id": "app", "transactional.id": T}],
        "consumers": consumers if consumers is not None else [
            {"id": "rc", **READ_COMMITTED},
            {"id": "ru", "auto.offset.reset": "earliest"},
        ],
        "actions": actions,
        **extra,
    }
    return simulate(scenario, steps=True, check_invariants=True)


def kinds(r: dict) -> list[str]:
    return [s["kind"] for s in r["steps"]]


def part(r: dict, p: int = 0) -> dict:
    return r["partitions"][p]


def log(r: dict, p: int = 0) -> list[tuple]:
    return [(e["offset"], e["record"], e["control"]) for e in part(r, p)["log"]]


def polled(r: dict, i: int) -> list[tuple[int, str]]:
    return [(rec["offset"], rec["record"]) for rec in r["polls"][i]["records"]]


def poll(consumer: str, ms: int = 1000) -> dict:
    return {"do": "poll", "consumer": consumer, "timeout_ms": ms}


def send(records: list[str], partition: int = 0, producer: str = "app") -> dict:
    return {"do": "produce", "producer": producer, "partition": partition, "records": records}


def call(do: str, producer: str = "app") -> dict:
    return {"do": do, "producer": producer}


ASSIGN = [
    {"do": "assign", "consumer": "rc", "partitions": [0]},
    {"do": "assign", "consumer": "ru", "partitions": [0]},
]


# ---------------------------------------------------------------------------------------------
# B1: the happy path


B1 = [
    call("init_transactions"),  # 0
    call("begin_transaction"),  # 1
    send(["a"], 0),  # 2
    send(["b"], 0),  # 3
    send(["c"], 1),  # 4
    {"do": "settle"},  # 5
    *ASSIGN,  # 6, 7
    poll("rc"),  # 8
    poll("ru"),  # 9
    call("commit_transaction"),  # 10  <- the "commit returned" mark is after this
    {"do": "settle"},  # 11
    poll("rc"),  # 12
    call("begin_transaction"),  # 13
    send(["d"], 0),  # 14
    {"do": "settle"},  # 15
]


def test_B1_init_gives_a_new_transactional_id_a_producer_id_and_epoch_0():
    r = run(B1[:1], partitions=2)
    assert r["producers"]["app"]["producer_id"] >= 0
    assert (r["producers"]["app"]["epoch"], r["producers"]["app"]["transaction_state"]) == (0, "Empty")
    assert r["transactions"] == [
        {"producer": "app", "action": "init_transactions", "outcome": "ok", "error": None}
    ]


def test_B1_begin_sends_nothing_and_the_first_partition_starts_the_transaction():
    r = run(B1[:2], partitions=2)
    assert r["producers"]["app"]["transaction_state"] == "Empty"  # beginTransaction() is local
    assert "txn_add_partitions" not in kinds(r)
    r = run(B1[:6], partitions=2)
    k = kinds(r)
    # AddPartitionsToTxn before the first produce to each partition, once per partition
    assert k.count("txn_add_partitions") == 2
    assert k.index("txn_add_partitions") < k.index("producer_send")
    assert r["producers"]["app"]["transaction_state"] == "Ongoing"
    assert log(r, 0) == [(0, "a", None), (1, "b", None)] and log(r, 1) == [(0, "c", None)]
    assert [e["sequence"] for e in part(r, 0)["log"]] == [0, 1]


def test_B1_before_the_commit_read_committed_gets_nothing_and_read_uncommitted_gets_a_and_b():
    r = run(B1[:10], partitions=2)
    assert (part(r)["hw"], part(r)["lso"]) == (2, 0)
    assert polled(r, 0) == []
    assert polled(r, 1) == [(0, "a"), (1, "b")]
    assert "consumer_held_at_lso" in kinds(r)


def test_B1_commit_returns_at_prepare_commit_before_any_marker_exists():
    r = run(B1[:11], partitions=2)  # cut right after commitTransaction() returned
    assert r["transactions"][-1] == {
        "producer": "app", "action": "commit_transaction", "outcome": "committed", "error": None
    }
    assert r["producers"]["app"]["transaction_state"] == "PrepareCommit"
    assert part(r)["lso"] == 0  # no marker is below the HW yet
    full = run(B1[:12], partitions=2)
    k = kinds(full)
    assert k.index("txn_prepare") < k.index("leader_write_txn_marker") < k.index("txn_complete")


def test_B1_markers_take_an_offset_on_every_partition_and_the_lso_moves_past_them():
    r = run(B1[:13], partitions=2)
    assert log(r, 0) == [(0, "a", None), (1, "b", None), (2, None, "COMMIT")]
    assert log(r, 1) == [(0, "c", None), (1, None, "COMMIT")]
    assert (part(r, 0)["hw"], part(r, 0)["lso"]) == (3, 3)
    assert (part(r, 1)["hw"], part(r, 1)["lso"]) == (2, 2)
    assert r["producers"]["app"]["transaction_state"] == "CompleteCommit"
    assert polled(r, 2) == [(0, "a"), (1, "b")]
    assert r["consumers"]["rc"]["position"] == {"0": 3}
    marker = next(e for e in part(r)["log"] if e["control"])
    assert (marker["producer_epoch"], marker["record"]) == (0, None)


def test_B1_TV1_the_next_transaction_keeps_epoch_0_and_continues_the_sequence():
    r = run(B1, partitions=2)
    d = next(e for e in part(r)["log"] if e["record"] == "d")
    assert (d["offset"], d["producer_epoch"], d["sequence"]) == (3, 0, 2)
    assert r["producers"]["app"]["epoch"] == 0


def test_B1_polls_never_return_control_records():
    r = run([*B1, {"do": "commit_transaction", "producer": "app"}, {"do": "settle"}, poll("rc"), poll("ru")],
            partitions=2)
    for p in r["polls"]:
        assert all(rec["record"] is not None for rec in p["records"])
    assert [x["offset"] for x in r["consumers"]["ru"]["received"]] == [0, 1, 3]


def test_a_transaction_with_no_partition_ends_on_the_client():
    r = run([call("init_transactions"), call("begin_transaction"), call("commit_transaction")])
    assert r["transactions"][-1]["outcome"] == "committed"
    assert "txn_end_local" in kinds(r) and "txn_prepare" not in kinds(r)


# ---------------------------------------------------------------------------------------------
# B4: what each isolation level sees

PRODUCERS_B4 = [{"id": "app", "transactional.id": T}, {"id": "plain"}]
B4 = [
    call("init_transactions"),  # 0
    send(["n0", "n1"], producer="plain"),  # 1: offsets 0-1
    {"do": "settle"},
    call("begin_transaction"),  # 3
    send(["t2", "t3"]),  # 4: offsets 2-3
    {"do": "settle"},
    send(["n4"], producer="plain"),  # 6: offset 4
    {"do": "settle"},
    *ASSIGN,  # 8, 9
    poll("rc"),  # 10
    poll("ru"),  # 11
]


def b4(*rest: dict, consumers: list[dict] | None = None) -> dict:
    return run([*B4, *rest], producers=PRODUCERS_B4, consumers=consumers)


def test_B4_read_committed_stops_at_the_first_open_transaction_even_for_later_plain_records():
    r = b4()
    assert (part(r)["hw"], part(r)["lso"]) == (5, 2)
    assert polled(r, 0) == [(0, "n0"), (1, "n1")]
    assert polled(r, 1) == [(0, "n0"), (1, "n1"), (2, "t2"), (3, "t3"), (4, "n4")]


def test_B4_end_offsets_under_read_committed_report_the_lso():
    latest = [{"id": "rc", "isolation.level": "read_committed", "auto.offset.reset": "latest"},
              {"id": "ru", "auto.offset.reset": "latest"}]
    r = b4(consumers=latest)
    assert r["consumers"]["rc"]["position"] == {"0": 2}  # seekToEnd / endOffsets: the LSO
    assert r["consumers"]["ru"]["position"] == {"0": 5}  # the HW


def test_B4_commit_read_committed_then_gets_2_3_4_and_its_position_is_6():
    r = b4(call("commit_transaction"), {"do": "settle"}, poll("rc"))
    assert log(r)[5] == (5, None, "COMMIT")
    assert polled(r, 2) == [(2, "t2"), (3, "t3"), (4, "n4")]
    assert r["consumers"]["rc"]["position"] == {"0": 6}


def test_B4_abort_read_committed_gets_only_4_the_client_drops_2_and_3():
    r = b4(call("abort_transaction"), {"do": "settle"}, poll("rc"))
    assert r["transactions"][-1]["outcome"] == "aborted"
    assert log(r)[5] == (5, None, "ABORT")
    assert polled(r, 2) == [(4, "n4")]
    assert r["consumers"]["rc"]["position"] == {"0": 6}
    assert "consumer_skip_txn_records" in kinds(r)
    # the broker sends the aborted records: the read_uncommitted consumer already had them
    assert [x["record"] for x in r["consumers"]["ru"]["received"]] == ["n0", "n1", "t2", "t3", "n4"]
    assert r["producers"]["app"]["transaction_state"] == "CompleteAbort"


# ---------------------------------------------------------------------------------------------
# the order of a transactional application's calls


@pytest.mark.parametrize(
    ("actions", "says"),
    [
        ([send(["a"])], "init_transactions first"),
        ([call("init_transactions"), send(["a"])], "begin_transaction first"),
        ([call("init_transactions"), call("begin_transaction"), call("begin_transaction")], "already in a"),
        ([call("init_transactions"), call("init_transactions")], "already called"),
    ],
)
def test_a_transactional_producer_calls_in_kafkas_order(actions: list[dict], says: str):
    with pytest.raises(ScenarioError) as err:
        run(actions)
    assert says in str(err.value.to_json())
