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


# ---------------------------------------------------------------------------------------------
# B2: zombie fencing. Instance A of tx-A reaches epoch 3 the way a real one would (three earlier
# processes, each initTransactions() bumping the epoch), opens a transaction with p0 records at
# 0-4 (the reference's 100-104, shifted) and p1, and freezes; instance B calls initTransactions().

TWO = [{"id": "A", "transactional.id": T}, {"id": "B", "transactional.id": T}]
EPOCH_3 = [
    a
    for _ in range(3)
    for a in (
        call("init_transactions", "A"), {"do": "crash", "producer": "A"}, {"do": "restart", "producer": "A"}
    )
] + [call("init_transactions", "A")]
B2_OPEN = [
    *EPOCH_3,
    call("begin_transaction", "A"),
    send(["w0", "w1", "w2", "w3", "w4"], 0, "A"),
    send(["x"], 1, "A"),
    {"do": "settle"},
]
B2 = [*B2_OPEN, call("init_transactions", "B"), {"do": "settle"}]
B2_CONSUMER = [{"id": "rc", **READ_COMMITTED}]


def b2(*rest: dict) -> dict:
    return run([*B2, *rest], partitions=3, producers=TWO, consumers=B2_CONSUMER)


def test_B2_the_zombie_holds_epoch_3_with_an_ongoing_transaction():
    r = run(B2_OPEN, partitions=3, producers=TWO, consumers=[])
    a = r["producers"]["A"]
    assert (a["epoch"], a["transaction_state"], a["fenced"]) == (3, "Ongoing", False)


def test_B2_a_new_instance_fences_to_4_aborts_with_markers_at_epoch_4_and_gets_epoch_5():
    r = b2({"do": "assign", "consumer": "rc", "partitions": [0]}, poll("rc"))
    k = kinds(r)
    assert "txn_fence_epoch" in k
    # B is answered CONCURRENT_TRANSACTIONS first, and retries
    assert k.index("txn_concurrent_transactions") < k.index("txn_complete") < len(k) - 1
    assert log(r, 0)[5] == (5, None, "ABORT")
    assert part(r, 0)["log"][5]["producer_epoch"] == 4
    assert part(r, 1)["log"][1]["control"] == "ABORT" and part(r, 1)["log"][1]["producer_epoch"] == 4
    a, b = r["producers"]["A"], r["producers"]["B"]
    assert b["producer_id"] == a["producer_id"]  # the same producer id: only the epoch moves
    assert (b["epoch"], b["transaction_state"], b["fenced"]) == (5, "Empty", False)
    assert a["fenced"] is True
    assert part(r, 0)["lso"] == 6  # past the ABORT marker at 5
    assert polled(r, 0) == []  # read_committed skips 0-4 (and the marker)
    assert r["consumers"]["rc"]["position"] == {"0": 6}


def test_B2_the_zombies_send_gets_the_abortable_INVALID_PRODUCER_EPOCH_and_its_abort_PRODUCER_FENCED():
    r = b2(
        send(["late"], 0, "A"),
        {"do": "settle"},
        call("abort_transaction", "A"),
        call("begin_transaction", "A"),
    )
    late = next(p for p in r["produce"] if p["records"] == ["late"])
    assert (late["outcome"], late["error"]) == ("failed", "INVALID_PRODUCER_EPOCH")
    assert "leader_reject_invalid_epoch" in kinds(r)
    assert all(e["record"] != "late" for e in part(r, 0)["log"])
    abort, begin = r["transactions"][-2:]
    assert (abort["action"], abort["error"]) == ("abort_transaction", "PRODUCER_FENCED")
    assert begin["error"] == "PRODUCER_FENCED"  # fatal: every later call fails with it


def test_B2_the_zombies_commit_gets_PRODUCER_FENCED():
    r = b2(call("commit_transaction", "A"))
    assert r["transactions"][-1] == {
        "producer": "A", "action": "commit_transaction", "outcome": "error", "error": "PRODUCER_FENCED"
    }
    assert "txn_producer_fenced" in kinds(r)


def test_B2_TV1_the_zombies_send_to_a_new_partition_is_fenced_at_AddPartitionsToTxn():
    r = b2(send(["y"], 2, "A"), {"do": "settle"})
    y = next(p for p in r["produce"] if p["records"] == ["y"])
    assert (y["outcome"], y["error"]) == ("failed", "PRODUCER_FENCED")
    assert part(r, 2)["log"] == []


def test_B2_variant_an_idle_zombie_is_fenced_with_one_bump_and_no_markers():
    idle = [*EPOCH_3, call("init_transactions", "B"), {"do": "settle"}]
    r = run(idle, producers=TWO, consumers=[])
    assert (r["producers"]["B"]["epoch"], r["producers"]["A"]["fenced"]) == (4, True)
    assert "leader_write_txn_marker" not in kinds(r) and "txn_fence_epoch" not in kinds(r)


def test_B2_variant_a_zombie_that_already_called_commit_wins_and_the_new_instance_gets_epoch_4():
    committing = [*B2_OPEN, call("commit_transaction", "A"), call("init_transactions", "B"), {"do": "settle"}]
    r = run(committing, partitions=3, producers=TWO, consumers=[])
    assert r["transactions"][-2]["outcome"] == "committed"
    assert "txn_concurrent_transactions" in kinds(r)
    assert log(r, 0)[5] == (5, None, "COMMIT")  # A's transaction commits
    assert r["producers"]["B"]["epoch"] == 4


# ---------------------------------------------------------------------------------------------
# B3: transaction timeout. A's transaction gets its first partition at t=3 ms (InitProducerId and
# AddPartitionsToTxn take a hop each way) and writes p0 offset 0 (the reference's 50); another
# producer appends 1-10; A stalls.

B3 = [
    call("init_transactions", "A"),
    call("begin_transaction", "A"),
    send(["t"], 0, "A"),
    {"do": "settle"},
    {"do": "produce", "producer": "plain", "partition": 0, "records": [f"n{i}" for i in range(1, 11)]},
    {"do": "settle"},
    {"do": "assign", "consumer": "rc", "partitions": [0]},
    poll("rc"),
]
B3_PRODUCERS = [{"id": "A", "transactional.id": T}, {"id": "plain"}]


def b3(*rest: dict) -> dict:
    return run([*B3, *rest], producers=B3_PRODUCERS, consumers=[{"id": "rc", **READ_COMMITTED}])


def test_B3_an_open_transaction_holds_the_lso_and_hides_other_producers_records():
    r = b3()
    assert (part(r)["hw"], part(r)["lso"]) == (11, 0)
    assert polled(r, 0) == []


def test_B3_the_first_sweep_after_the_timeout_fences_and_aborts_within_60_to_70_s():
    r = b3({"do": "advance", "ms": 75_000}, poll("rc"))
    started = next(s for s in r["steps"] if s["kind"] == "txn_add_partitions")["t_ms"]
    swept = next(s for s in r["steps"] if s["kind"] == "txn_timeout_abort")["t_ms"]
    assert 60_000 < swept - started <= 70_000
    assert swept % 10_000 == 0  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    assert log(r)[11] == (11, None, "ABORT") and part(r)["log"][11]["producer_epoch"] == 1
    assert part(r)["lso"] == 12
    assert polled(r, 1) == [(i, f"n{i}") for i in range(1, 11)]  # 51-60 in the reference; not 50
    assert r["producers"]["A"]["fenced"] is True


def test_B3_before_the_sweep_the_lso_is_still_stuck():
    r = b3({"do": "advance", "ms": 60_000}, poll("rc"))
    assert part(r)["lso"] == 0 and polled(r, 1) == []


def test_B3_a_later_commit_fails_with_PRODUCER_FENCED():
    r = b3({"do": "advance", "ms": 75_000}, call("commit_transaction", "A"))
    assert r["transactions"][-1]["error"] == "PRODUCER_FENCED"


def test_B3_a_send_first_gets_INVALID_PRODUCER_EPOCH_then_the_abort_fails_fatally():
    r = b3(
        {"do": "advance", "ms": 75_000}, send(["u"], 0, "A"), {"do": "settle"}, call("abort_transaction", "A")
    )
    u = next(p for p in r["produce"] if p["records"] == ["u"])
    assert u["error"] == "INVALID_PRODUCER_EPOCH"
    assert r["transactions"][-1]["error"] == "PRODUCER_FENCED"


def test_B3_the_cleanup_interval_and_the_timeout_come_from_the_scenario():
    r = run(
        [*B3, {"do": "advance", "ms": 20_000}],
        producers=[{"id": "A", "transactional.id": T, "transaction.timeout.ms": 5_000}, {"id": "plain"}],
        consumers=[{"id": "rc", **READ_COMMITTED}],
        timing={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 2_000},
    )
    swept = next(s for s in r["steps"] if s["kind"] == "txn_timeout_abort")["t_ms"]
    assert swept == 6_000  # the first 2 s tick after 3 ms + 5 s


def test_a_transaction_timeout_above_the_brokers_maximum_is_refused_by_init():
    r = run([call("init_transactions")],
            producers=[{"id": "app", "transactional.id": T, "transaction.timeout.ms": 900_001}])
    assert r["transactions"][0]["error"] == "INVALID_TRANSACTION_TIMEOUT"


# ---------------------------------------------------------------------------------------------
# B5: consume-transform-produce (KIP-447). c1 (group g) reads in0-in4 from P0; its producer tx
# (transactional.id tx-1) writes an output to P1 and sends the offsets with c1's group metadata.
# In the first stories c1's process dies, its member expires and c2 takes P0 over; the last one
# is the reference's own: c1 stalls past max.poll.interval.ms while c2 is in the group.


B5_CONSUMERS = [
    {"id": "c1", "group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False},
    {"id": "c2", "group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False,
     "isolation.level": "read_committed"},
]
B5_PRODUCERS = [{"id": "tx", "transactional.id": "tx-1"}, {"id": "plain"}]
B5 = [
    {"do": "produce", "producer": "plain", "partition": 0, "records": [f"in{i}" for i in range(5)]},
    {"do": "settle"},
    {"do": "subscribe", "consumer": "c1"},
    poll("c1", 10_000),
    call("init_transactions", "tx"),
    call("begin_transaction", "tx"),
    send(["out"], 1, "tx"),
    {"do": "send_offsets_to_transaction", "producer": "tx", "consumer": "c1", "offsets": {"0": 5}},
    {"do": "crash", "consumer": "c1"},
    {"do": "subscribe", "consumer": "c2"},
    poll("c2", 50_000),  # joins after c1's session times out (45 s), then fetches the offsets
]


def b5(*rest: dict) -> dict:
    return run([*B5, *rest], partitions=2, producers=B5_PRODUCERS, consumers=B5_CONSUMERS)


def p0(records: list[dict]) -> list[tuple[int, str]]:
    return [(x["offset"], x["record"]) for x in records if x["partition"] == 0]


def test_B5_the_offsets_sent_with_the_transaction_are_pending_and_the_new_owner_gets_UNSTABLE_OFFSET_COMMIT():
    r = b5()
    assert r["transactions"][2] == {
        "producer": "tx", "action": "send_offsets_to_transaction", "outcome": "ok", "error": None
    }
    assert "txn_send_offsets" in kinds(r)
    assert r["groups"]["g"]["committed"] == {}  # invisible until the transaction commits
    assert r["groups"]["g"]["generation"] == 2
    assert "consumer_unstable_offsets" in kinds(r)
    assert r["polls"][1]["records"] == []  # c2 has no position for P0 while the offsets are pending


def test_B5_when_c1s_transaction_commits_c2_starts_at_500_no_duplicates():
    r = b5(call("commit_transaction", "tx"), {"do": "settle"}, poll("c2", 5_000))
    assert r["groups"]["g"]["committed"]["0"] == 5  # the reference's 500
    assert p0(r["polls"][2]["records"]) == []
    assert p0(r["consumers"]["c2"]["received"]) == []
    assert [(x["partition"], x["record"]) for x in r["polls"][2]["records"]] == [(1, "out")]


def test_B5_when_c1s_transaction_aborts_c2_reprocesses_and_c1s_output_is_invisible():
    r = b5(call("abort_transaction", "tx"), {"do": "settle"}, poll("c2", 5_000))
    assert r["groups"]["g"]["committed"] == {}
    assert p0(r["polls"][2]["records"]) == [(i, f"in{i}") for i in range(5)]
    assert all(x["record"] != "out" for x in r["consumers"]["c2"]["received"])  # read_committed


def test_B5_the_transactional_commit_is_checked_like_a_commit_member_and_generation():
    """The group coordinator's TxnOffsetCommit check (ClassicGroup.validateOffsetCommit): the
    KIP-447 fence; the end-to-end story is the test below."""
    from engine.consumers import Clients
    from engine.offsets import Group

    clients = Clients.__new__(Clients)
    clients.coordinator = type("C", (), {"groups": {"g": Group("g", generation=6, members={"c2-1"})}})()
    assert clients.check_txn_commit("g", "c2-1", 6) is None
    assert clients.check_txn_commit("g", "c2-1", 5) == "ILLEGAL_GENERATION"
    assert clients.check_txn_commit("g", "c1-1", 5) == "UNKNOWN_MEMBER_ID"
    # no member id and no generation: only a NON-transactional commit to a non-empty group is refused
    # (kafka-eos-kraft §C.1 rule 5), so a transactional one passes
    assert clients.check_txn_commit("g", None, -1) is None


def test_C1_rule_4_a_static_members_transactional_commit_is_checked_by_its_instance():
    """kafka-eos-kraft §C.1 rule 4 applies to TxnOffsetCommit too: groupMetadata() carries the
    group.instance.id, so an old process of a static member whose instance now maps to a newer
    member id is FENCED_INSTANCE_ID, and an instance the group does not know is UNKNOWN_MEMBER_ID."""
    from engine.consumers import Clients
    from engine.offsets import Group

    clients = Clients.__new__(Clients)
    group = Group("g", generation=3, members={"c0-2"}, instances={"c0-host": "c0-2"})
    clients.coordinator = type("C", (), {"groups": {"g": group}})()
    assert clients.check_txn_commit("g", "c0-2", 3, "c0-host") is None
    assert clients.check_txn_commit("g", "c0-1", 2, "c0-host") == "FENCED_INSTANCE_ID"
    assert clients.check_txn_commit("g", None, -1, "other-host") == "UNKNOWN_MEMBER_ID"


def test_B5_a_stale_generation_is_fenced_and_the_application_must_abort():
    """§E.B B5, last case: C1 stalls past max.poll.interval.ms, the group moves to the next
    generation with C2 owning p0; C1's producer then sends offsets with its old generation:
    UNKNOWN_MEMBER_ID (it was removed), abortable; the application aborts, its outputs vanish."""
    consumers = [
        {**B5_CONSUMERS[0], "max.poll.interval.ms": 10_000, "loop_ms": None},
        {**B5_CONSUMERS[1], "loop_ms": 100},
    ]
    actions = [
        *B5[:8],
        {"do": "subscribe", "consumer": "c2"},
        {"do": "stall", "consumer": "c1", "ms": 20_000},
        {"do": "send_offsets_to_transaction", "producer": "tx", "consumer": "c1", "offsets": {"0": 5}},
        call("commit_transaction", "tx"),
        call("abort_transaction", "tx"),
    ]
    r = run(actions, partitions=2, producers=B5_PRODUCERS, consumers=consumers)
    assert r["transactions"][3]["error"] == "UNKNOWN_MEMBER_ID"  # c1 was removed from the group
    assert r["transactions"][4]["outcome"] == "error"
    assert r["transactions"][5]["outcome"] == "aborted"


def test_views_show_the_lso_the_markers_and_both_sides_of_the_transaction_state():
    """What a scene draws step by step (B1's numbers): the LSO in the partition view, a marker in
    the leader's log, the coordinator's state per transactional.id and each producer's."""
    r = simulate(
        {
            "topic": {"partitions": 2},
            "producers": [{"id": "app", "transactional.id": T}],
            "consumers": [],
            "actions": B1[:6] + [call("commit_transaction"), {"do": "settle"}],
        },
        steps=True,
        all_views=True,
    )
    prepare = next(s["i"] for s in r["steps"] if s["kind"] == "txn_prepare")
    during = r["views"][prepare]
    assert during["transactions"][T]["state"] == "PrepareCommit"
    assert during["partitions"][0]["partition"]["lso"] == 0
    assert during["txn_producers"]["app"]["state"] == "COMMITTING_TRANSACTION"  # the answer is on its way
    assert r["views"][-1]["txn_producers"]["app"]["state"] == "READY"
    end = r["views"][-1]
    p0 = end["partitions"][0]
    assert p0["partition"]["lso"] == 3
    leader = p0["brokers"][str(p0["partition"]["leader"])]
    assert [e.get("control") for e in leader["log"]] == [None, None, "COMMIT"]
    assert end["transactions"][T]["state"] == "CompleteCommit"


def test_a_part_1_scenario_with_a_transactional_producer_gets_the_part_2_result():
    r = simulate({
        "producer": {"transactional.id": T},
        "actions": [
            call("init_transactions", "producer"),
            call("begin_transaction", "producer"),
            {"do": "produce", "records": ["a"]},
            call("commit_transaction", "producer"),
            {"do": "settle"},
        ],
    })
    assert [t["outcome"] for t in r["transactions"]] == ["ok", "ok", "committed"]
    assert [e["control"] for e in part(r)["log"]] == [None, "COMMIT"] and part(r)["lso"] == 2
