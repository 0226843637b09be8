"""Transactional invariants over random schedules (kafka-eos-kraft.md §A, §B; the contract's
`log_start_offset <= lso <= hw <= leo`).

Each schedule mixes transactions of one transactional.id run by two instances (A, and B, which
fences A when it calls initTransactions()), a plain idempotent producer, a read_committed and a
read_uncommitted consumer, broker crashes and restarts (one broker down at a time, RF 3,
min.insync.replicas 2) and waits long enough for the coordinator's timeout sweep. Whatever
happens, after every step:

- the engine's own checker finds nothing (it checks log start <= LSO <= HW <= LEO on the leader);

and at the end:

- the same order holds on every partition of the result;
- no record is written twice: every producer here keeps one process (one producer id) and has
  idempotence, so a retry is never a second copy (§A.3);
- the read_committed consumer never got an aborted record, a record of a transaction still open,
  or a control record (§B.5).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import simulate

T = "tx-A"
PARTITIONS = 2


@st.composite
def schedules(draw: st.DrawFn) -> dict:
    actions: list[dict] = [{"do": "init_transactions", "producer": "A"}]
    for c in ("rc", "ru"):
        actions.append({"do": "assign", "consumer": c, "partitions": list(range(PARTITIONS))})
    down: int | None = None
    b_started = False
    n = 0

    def records(k: int) -> list[str]:
        nonlocal n
        out = [f"r{n + i}" for i in range(k)]
        n += k
        return out

    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["txn", "txn", "plain", "fault", "wait", "poll", "fence"]))
        if kind == "txn":
            who = "B" if b_started and draw(st.booleans()) else "A"
            actions.append({"do": "begin_transaction", "producer": who})
            for _ in range(draw(st.integers(1, 3))):
                actions.append({"do": "produce", "producer": who, "partition": draw(st.integers(0, 1)),
                                "records": records(draw(st.integers(1, 3)))})
                if draw(st.booleans()):
                    # 75 s: past transaction.timeout.ms, the coordinator aborts it meanwhile
                    actions.append({"do": "advance", "ms": draw(st.sampled_from([5, 200, 3_000, 75_000]))})
            end = draw(st.sampled_from(["commit_transaction", "abort_transaction", "commit_transaction"]))
            actions.append({"do": end, "producer": who})
        elif kind == "plain":
            actions.append({"do": "produce", "producer": "plain", "partition": draw(st.integers(0, 1)),
                            "records": records(1)})
        elif kind == "fault":
            if down is None:
                down = draw(st.integers(1, 3))
                actions.append({"do": "crash", "broker": down})
            else:
                actions.append({"do": "restart", "broker": down})
                down = None
        elif kind == "wait":
            actions.append({"do": "advance", "ms": draw(st.sampled_from([1_000, 30_000, 75_000]))})
        elif kind == "poll":
            actions.append({"do": "poll", "consumer": draw(st.sampled_from(["rc", "ru"])), "timeout_ms": 500})
        elif not b_started:
            actions.append({"do": "init_transactions", "producer": "B"})
            b_started = True
    if draw(st.booleans()):  # leave one transaction open at the end
        actions.append({"do": "begin_transaction", "producer": "A"})
        actions.append({"do": "produce", "producer": "A", "partition": 0, "records": records(1)})
    if down is not None:
        actions.append({"do": "restart", "broker": down})
    actions += [
        {"do": "settle", "max_ms": 60_000},
        {"do": "poll", "consumer": "rc", "timeout_ms": 2_000},
        {"do": "poll", "consumer": "ru", "timeout_ms": 2_000},
    ]
    return {
        "topic": {"partitions": PARTITIONS, "replication.factor": 3, "min.insync.replicas": 2},
        "producers": [
            {"id": "A", "transactional.id": T},
            {"id": "B", "transactional.id": T},
            {"id": "plain"},
        ],
        "consumers": [
            {"id": "rc", "isolation.level": "read_committed", "auto.offset.reset": "earliest"},
            {"id": "ru", "auto.offset.reset": "earliest"},
        ],
        "actions": actions,
    }


def not_readable_committed(log: list[dict], txn_pids: set[int]) -> set[int]:
    """Offsets a read_committed reader must never get: markers, and records of transactions that
    ended with ABORT or have not ended (no marker after them from their producer id)."""
    out = set()
    for i, e in enumerate(log):
        if e["control"] is not None:
            out.add(e["offset"])
        elif e["producer_id"] in txn_pids:
            marker = next((m["control"] for m in log[i + 1 :]
                           if m["control"] is not None and m["producer_id"] == e["producer_id"]), None)
            if marker != "COMMIT":
                out.add(e["offset"])
    return out


@settings(max_examples=40, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(schedules())
def test_transactions_keep_their_invariants_on_random_schedules(sc):
    r = simulate(sc, check_invariants=True)
    story = [a["do"] + "".join(f" {a[k]}" for k in ("producer", "broker", "partition") if k in a)
             for a in sc["actions"]]
    assert r["violations"] == [], story
    for p in r["partitions"]:
        assert p["log_start_offset"] <= p["lso"] <= p["hw"] <= p["leo"], (p, story)
    assert r["duplicate_records"] == [], story
    txn_pids = {r["producers"][x]["producer_id"] for x in ("A", "B")} - {-1}
    got = r["consumers"]["rc"]["received"]
    for p in r["partitions"]:
        forbidden = not_readable_committed(p["log"], txn_pids)
        seen = {x["offset"] for x in got if x["partition"] == p["partition"]}
        assert not seen & forbidden, (p["partition"], sorted(seen & forbidden), story)
    assert all(x["record"] is not None for c in r["consumers"].values() for x in c["received"])
