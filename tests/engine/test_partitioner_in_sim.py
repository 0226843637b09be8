"""The producer's partitioner inside a run (engine/producers.py, engine/sim.py `_drive`): records
without a key follow the profile's keyless partitioner, and `add_partitions` grows the topic on
the run's clock while the producer keeps hashing over the old count until its metadata refresh.

Canonical scenarios reproduced (../shared/reference/kafka-clients-logs.md §F.C):
- C2, growing from 3 to 4 partitions: which keys move, old records stay, new ones move only after
  the producer's metadata refresh (metadata.max.age.ms, or at once for a partition it names);
- C3, keyless records on 3.3+: consecutive records stay on one partition until batch.size bytes
  went there, then the next partition is drawn at random (it may be the same), deterministic for
  a seed.
And part 1 stays as it was: keyless records on one partition go to it with no partitioner step.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from engine import ScenarioError, simulate
from engine.clients_spec import ProducerConfig
from engine.partitioner import keyed_partition
from engine.producers import BATCH_SIZE, ProducerProc
from engine.scenario import parse, resolve
from engine.segments import batch_size_bytes
from engine.state import ProducerSession

# §F.C C1/C2 and the §C.2 table: each key's partition with 3 and with 4 partitions
C2_KEYS = {"alice": (0, 1), "bob": (0, 2), "carol": (2, 2), "key-1": (0, 0), "key-0": (1, 1)}


def keyed(key: str, record: str, **extra: Any) -> dict[str, Any]:
    return {"do": "produce", "records": [record], "key": key, **extra}


def keyless(record: str, **extra: Any) -> dict[str, Any]:
    return {"do": "produce", "records": [record], **extra}


def where(result: dict[str, Any]) -> dict[str, int]:
    """record -> the partition its produce went to."""
    return {rec: pr["partition"] for pr in result["produce"] for rec in pr["records"]}


def steps_of(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in result["steps"] if s["kind"] == kind]


def log_of(result: dict[str, Any], p: int) -> list[str]:
    return [e["record"] for e in result["partitions"][p]["final"]["brokers"]["1"]["log"]]


def c2_scenario(**producer: Any) -> dict[str, Any]:
    """C2: five keys on 3 partitions, the topic grows to 4, the same keys before and after the
    producer's metadata refresh (RF=1 on one broker, so partition p's log is broker 1's)."""
    actions = [keyed(k, f"{k}.1") for k in C2_KEYS]
    actions += [{"do": "settle"}, {"do": "add_partitions", "count": 4}]
    actions += [keyed(k, f"{k}.2") for k in C2_KEYS]  # before the refresh: still 3 partitions
    actions += [{"do": "settle"}, {"do": "advance", "ms": 300_000}]
    actions += [keyed(k, f"{k}.3") for k in C2_KEYS]  # after it: 4 partitions
    actions += [{"do": "settle"}]
    return {
        "brokers": [{"id": 1}],
        "topic": {"partitions": 3, "replication.factor": 1},
        "producer": producer,
        "actions": actions,
    }


# ------------------------------------------------------------------------------------- F.C C2


def test_FC2_growing_3_to_4_keys_move_only_after_the_producers_metadata_refresh():
    """§F.C C2: under 4 partitions alice -> p1 and bob -> p2 move; carol (p2), key-1 (p0) and key-0
    (p1) stay. Until the producer's metadata refresh (metadata.max.age.ms = 5 min from its start)
    it keeps hashing over 3, so the second round lands where the first did."""
    r = simulate(c2_scenario(), steps=True)
    placed = where(r)
    for key, (under3, under4) in C2_KEYS.items():
        assert placed[f"{key}.1"] == under3 == keyed_partition(key.encode(), 3), key
        assert placed[f"{key}.2"] == under3, f"{key}: the producer still knows 3 partitions"
        assert placed[f"{key}.3"] == under4 == keyed_partition(key.encode(), 4), key
    assert all(pr["outcome"] == "acked" for pr in r["produce"])
    # old records stay where they were written: nothing is re-hashed or moved
    assert log_of(r, 0) == ["alice.1", "bob.1", "key-1.1", "alice.2", "bob.2", "key-1.2", "key-1.3"]
    assert log_of(r, 1) == ["key-0.1", "key-0.2", "alice.3", "key-0.3"]
    assert log_of(r, 2) == ["carol.1", "carol.2", "bob.3", "carol.3"]
    assert log_of(r, 3) == []  # no key of these hashes to p3 under 4 partitions
    # the steps: the operator's CreatePartitions, then the producer's refresh at 300000 ms
    (create,) = steps_of(r, "admin_create_partitions")
    (refresh,) = steps_of(r, "producer_metadata_refresh")
    assert create["partition"] is None and refresh["partition"] is None
    assert "from 3 to 4 partitions" in create["text"] and "P3 on B1" in create["text"]
    assert refresh["t_ms"] == 300_000 and "metadata.max.age.ms=300000" in refresh["text"]
    assert "'alice' P0 -> P1" in refresh["text"] and "'bob' P0 -> P2" in refresh["text"]
    assert "'carol' stays on P2" in refresh["text"] and "'key-0' stays on P1" in refresh["text"]
    sent = {s["text"].split(" ")[3]: s["t_ms"] for s in steps_of(r, "producer_send")}
    assert sent["alice.2"] < refresh["t_ms"] < sent["alice.3"] == r["action_t_ms"][-6]


def test_FC2_a_shorter_metadata_max_age_moves_keys_sooner():
    """metadata.max.age.ms = 60000: the refresh comes one minute after the producer's start, so a
    producer sends alice to p0 at 59 s and to p1 at 61 s."""
    actions = [
        keyed("alice", "a1"),
        {"do": "add_partitions", "count": 4},
        {"do": "advance", "ms": 59_000},
        keyed("alice", "a2"),
        {"do": "advance", "ms": 2_000},
        keyed("alice", "a3"),
        {"do": "settle"},
    ]
    sc = {
        "brokers": [{"id": 1}],
        "topic": {"partitions": 3, "replication.factor": 1},
        "producer": {"metadata.max.age.ms": 60_000},
        "actions": actions,
    }
    r = simulate(sc, steps=True)
    assert where(r) == {"a1": 0, "a2": 0, "a3": 1}
    assert [s["t_ms"] for s in steps_of(r, "producer_metadata_refresh")] == [60_000]


def test_FC2_a_produce_naming_a_new_partition_refreshes_the_producers_metadata_at_once():
    """KafkaProducer.waitOnMetadata: a record for a partition the producer does not know makes it
    ask for metadata at once, and from then on keys hash over the new count too."""
    actions = [
        {"do": "add_partitions", "count": 4},
        keyed("alice", "a0"),
        {"do": "produce", "records": ["x"], "partition": 3},
        keyed("alice", "a1"),
        {"do": "settle"},
    ]
    sc = {"brokers": [{"id": 1}], "topic": {"partitions": 3, "replication.factor": 1}, "actions": actions}
    r = simulate(sc, steps=True)
    assert where(r) == {"a0": 0, "x": 3, "a1": 1}
    (refresh,) = steps_of(r, "producer_metadata_refresh")
    assert refresh["t_ms"] == 0 and "P3 is not in the producer's metadata" in refresh["text"]
    assert log_of(r, 3) == ["x"]


def test_FC2_partitions_created_later_are_absent_not_empty_before_they_exist():
    """A partition add_partitions creates at step k is None in every view before k (absent), an
    empty partition from k on; the result lists every partition with the time it was created, and
    an at_step result before its creation gives it no view."""
    sc = c2_scenario()
    r = simulate(sc, steps=True, all_views=True)
    create = steps_of(r, "admin_create_partitions")[0]["i"]
    assert [p["partition"] for p in r["partitions"]] == [0, 1, 2, 3]
    created_at = steps_of(r, "admin_create_partitions")[0]["t_ms"]
    assert [p["created_ms"] for p in r["partitions"]] == [0, 0, 0, created_at]
    for k, view in enumerate(r["views"]):
        parts = view["partitions"]
        assert len(parts) == 4, "one entry per partition the topic has at the end, in order"
        assert (parts[3] is None) == (k < create), k
        assert all(p is not None for p in parts[:3])
    new = r["views"][create]["partitions"][3]
    assert new["t_ms"] == created_at and new["partition"]["leader"] == 1 and new["partition"]["isr"] == [1]
    assert new["brokers"]["1"]["log"] == [] and new["ledger"]["acked"] == []
    for k in (0, create - 1, create, create + 1, r["step_count"]):
        one = simulate(sc, at_step=k)
        assert one["view"] == r["views"][k], k
        assert [p["view"] for p in one["partitions"]] == r["views"][k]["partitions"], k
    assert simulate(sc, at_step=create - 1)["partitions"][3]["view"] is None


def test_FC2_a_fault_after_add_partitions_lands_on_old_and_new_partitions_at_one_millisecond():
    """The new partitions start in step with the running ones (one set of broker heartbeats, one
    controller): when B1 dies after the topic grew, the controller fences it and moves the
    leadership of every partition B1 led, old (P0) and new (P3), at the same millisecond."""
    actions = [
        {"do": "produce", "records": ["a"], "partition": 0},
        {"do": "advance", "ms": 1_234},
        {"do": "add_partitions", "count": 5},
        {"do": "produce", "records": ["x"], "partition": 3},
        {"do": "settle"},
        {"do": "crash", "broker": 1},
        {"do": "settle", "through_failover": True},
        {"do": "produce", "records": ["y"], "partition": 3},
        {"do": "settle"},
    ]
    sc = {"topic": {"partitions": 3, "replication.factor": 3, "min.insync.replicas": 2}, "actions": actions}
    r = simulate(sc, steps=True, check_invariants=True)
    assert r["violations"] == [] and r["lost_acked_records"] == []
    (fence,) = steps_of(r, "controller_fence_broker")
    elections = steps_of(r, "controller_elect_leader")
    assert {s["partition"] for s in elections} == {0, 3}  # the partitions B1 led
    assert {s["t_ms"] for s in elections} == {fence["t_ms"]}
    assert where(r) == {"a": 0, "x": 3, "y": 3} and r["acked_records"] == ["a", "x", "y"]
    assert r["partitions"][3]["final"]["partition"]["leader"] == 2


def test_a_consumer_assigned_a_new_partition_reads_it():
    sc = {
        "brokers": [{"id": 1}],
        "topic": {"partitions": 2, "replication.factor": 1},
        "consumers": [{"id": "c0", "auto.offset.reset": "earliest"}],
        "actions": [
            {"do": "add_partitions", "count": 3},
            {"do": "produce", "records": ["n0", "n1"], "partition": 2},
            {"do": "settle"},
            {"do": "assign", "consumer": "c0", "partitions": [2]},
            {"do": "poll", "consumer": "c0", "timeout_ms": 2_000},
        ],
    }
    r = simulate(sc)
    assert [(x["partition"], x["record"]) for x in r["polls"][0]["records"]] == [(2, "n0"), (2, "n1")]
    assert [p["partition"] for p in r["partitions"]] == [0, 1, 2]


@pytest.mark.parametrize(
    ("actions", "path", "words"),
    [
        ([{"do": "crash", "broker": 1}, {"do": "add_partitions", "count": 4}], "actions[1].do", "crash"),
        (
            [{"do": "set", "key": "min.insync.replicas", "value": 2}, {"do": "add_partitions", "count": 4}],
            "actions[1].do",
            "set",
        ),
    ],
)
def test_add_partitions_after_what_a_new_partition_cannot_replay_is_refused(actions, path, words):
    sc = {"topic": {"partitions": 3}, "consumers": [{"id": "c0", "group.id": "g"}], "actions": actions}
    with pytest.raises(ScenarioError) as e:
        simulate(sc)
    (p,) = e.value.problems
    assert p["path"] == path and "not simulated yet" in p["message"] and words in p["message"]


def test_a_group_that_subscribed_before_add_partitions_is_simulated():
    """Issue 12 lifted the refusal: the group leader's metadata refresh rebalances the group onto
    the new partitions (test_clients_canonical.py's C2 has the story)."""
    sc = {
        "topic": {"partitions": 3},
        "consumers": [{"id": "c0", "group.id": "g", "loop_ms": 1_000}],
        "actions": [{"do": "subscribe", "consumer": "c0"}, {"do": "add_partitions", "count": 4},
                    {"do": "advance", "ms": 310_000}],
    }  # fmt: skip
    assert simulate(sc)["groups"]["g"]["members"] == {"c0": [0, 1, 2, 3]}


def test_metadata_max_age_ms_takes_kafkas_default_and_refuses_negative_values():
    (pc,) = resolve(parse({})).producers
    assert pc.metadata_max_age_ms == 300_000 == ProducerConfig("x", -1, True, 1).metadata_max_age_ms
    with pytest.raises(ScenarioError) as e:
        resolve(parse({"producer": {"metadata.max.age.ms": -1}}))
    assert e.value.problems[0]["path"] == "producer.metadata.max.age.ms"


# ------------------------------------------------------------------------------------- F.C C3


def c3_scenario(n: int, nbytes: int | None, seed: int = 7, **topic: Any) -> dict[str, Any]:
    actions = [keyless(f"r{i}", **({"bytes": nbytes} if nbytes else {})) for i in range(n)]
    return {
        "seed": seed,
        "brokers": [{"id": 1}],
        "topic": {"partitions": 3, "replication.factor": 1, **topic},
        "actions": [*actions, {"do": "settle"}],
    }


def runs(partitions: list[int]) -> list[tuple[int, int]]:
    """(partition, how many consecutive produces went there)."""
    out: list[tuple[int, int]] = []
    for p in partitions:
        if out and out[-1][0] == p:
            out[-1] = (p, out[-1][1] + 1)
        else:
            out.append((p, 1))
    return out


def test_FC3_keyless_records_stick_to_one_partition_until_batch_size_bytes_then_draw_again():
    """§F.C C3 (3.3+ defaults, batch.size 16384): batches of 4096 bytes, so the fourth brings the
    partition to 16384 bytes. That batch is not full, so the switch waits for the next keyless
    record (RecordAccumulator.partitionChanged): a draw before produce 0, 4, 8, 12, each for the
    four produces that follow, at random among the three partitions, the current one included."""
    r = simulate(c3_scenario(16, 4096), steps=True)
    placed = [pr["partition"] for pr in r["produce"]]
    draws = steps_of(r, "producer_sticky_partition")
    assert len(draws) == 4
    assert [placed[i] for i in (0, 4, 8, 12)] == [s["partition"] for s in draws]
    assert all(placed[i] == placed[i - i % 4] for i in range(16)), placed
    assert "No key" in draws[0]["text"] and "at random among P0, P1, P2" in draws[0]["text"]
    for s in draws[1:]:
        assert "has had 16384 bytes" in s["text"] and "batch.size=16384" in s["text"]
        assert "it may draw the same one" in s["text"]
    # each draw comes before the send of the first record it places
    sends = [s for s in r["steps"] if s["kind"] == "producer_send"]
    for k, draw in enumerate(draws):
        first = next(s for s in sends if f"sends r{4 * k} " in s["text"])
        assert draw["i"] < first["i"] and draw["partition"] == first["partition"]
    # the logs: each partition got whole runs, in order
    for p in range(3):
        assert log_of(r, p) == [f"r{i}" for i in range(16) if placed[i] == p]


def test_FC3_a_full_batch_switches_as_soon_as_it_is_appended():
    """A batch of batch.size bytes is full: allBatchesFull holds right after the append, so the
    partitioner draws at once, after that batch's send."""
    r = simulate(c3_scenario(4, BATCH_SIZE), steps=True)
    draws = steps_of(r, "producer_sticky_partition")
    assert len(draws) == 5  # the first pick, then one after each of the four batches
    assert all("its batch is full" in s["text"] for s in draws[1:])
    placed = [pr["partition"] for pr in r["produce"]]
    assert [s["partition"] for s in draws[:4]] == placed


def test_FC3_the_default_size_of_a_batch_is_its_exact_v2_size():
    """Without `bytes`, a keyless batch counts the size of an uncompressed v2 batch of its records
    (each value the record's name): 16384 bytes take this many one-record batches."""
    each = batch_size_bytes([(0, None, b"r00")])
    n = -(-BATCH_SIZE // each)  # produces until the partition has had batch.size bytes
    r = simulate(_named(n + 1), steps=True)
    placed = [pr["partition"] for pr in r["produce"]]
    assert len(set(placed[:n])) == 1, "one sticky run up to batch.size"
    draws = steps_of(r, "producer_sticky_partition")
    assert len(draws) == 2 and f"has had {n * each} bytes" in draws[1]["text"]


def _named(n: int) -> dict[str, Any]:
    """n one-record keyless produces whose records all have 3-character names (r00 ... r99, s00 ...)."""
    names = [f"{'rstuvwxyz'[i // 100]}{i % 100:02d}" for i in range(n)]
    return {
        "seed": 7,
        "brokers": [{"id": 1}],
        "topic": {"partitions": 3, "replication.factor": 1},
        "actions": [*(keyless(x) for x in names), {"do": "settle"}],
    }


def test_FC3_the_draws_are_a_function_of_the_seed():
    """Deterministic for a seed (the same partitions with or without recorded steps, and at any
    at_step); other seeds draw other partitions."""
    sc = c3_scenario(16, 4096)
    placed = [pr["partition"] for pr in simulate(sc)["produce"]]
    assert placed == [pr["partition"] for pr in simulate(sc, steps=True)["produce"]]
    assert placed == [pr["partition"] for pr in simulate(sc, at_step=5)["produce"]]
    assert simulate(sc)["step_count"] == simulate(sc, steps=True)["step_count"]
    firsts = {simulate(c3_scenario(1, 4096, seed=s))["produce"][0]["partition"] for s in range(12)}
    assert firsts == {0, 1, 2}
    patterns = set()
    for seed in range(6):
        placed = [pr["partition"] for pr in simulate(c3_scenario(16, 4096, seed=seed))["produce"]]
        assert [n for _, n in runs(placed)] in ([4, 4, 4, 4], [4, 4, 8], [4, 8, 4], [8, 4, 4], [8, 8],
                                                [4, 12], [12, 4], [16])
        patterns.add(tuple(placed))
    assert len(patterns) > 1


def test_FC3_keyed_records_do_not_move_the_sticky_partition_and_ignore_keys_makes_them_keyless():
    """Only keyless appends count toward batch.size (KafkaProducer passes no partition info for a
    keyed record); with partitioner.ignore.keys a keyed record is keyless."""
    actions = []
    for i in range(8):
        actions.append(keyless(f"n{i}", bytes=4096))
        actions.append(keyed("alice", f"a{i}", bytes=4096))
    sc = {"seed": 3, "brokers": [{"id": 1}], "topic": {"partitions": 3, "replication.factor": 1},
          "actions": [*actions, {"do": "settle"}]}
    placed = where(simulate(sc))
    assert {placed[f"a{i}"] for i in range(8)} == {0}  # alice -> p0 under 3 partitions
    keyless_parts = [placed[f"n{i}"] for i in range(8)]
    assert keyless_parts[:4] == [keyless_parts[0]] * 4 and keyless_parts[4:] == [keyless_parts[4]] * 4
    ignoring = simulate({**sc, "producer": {"partitioner.ignore.keys": True}})
    sticky = [pr["partition"] for pr in ignoring["produce"]]
    assert sticky[:4] == [sticky[0]] * 4  # n0 a0 n1 a1: 16384 bytes, all keyless now


def test_FC3_adaptive_partitioning_weighs_toward_shorter_queues():
    """BIP 241-308: once every partition has had a queue, the draw weighs each partition
    (longest queue + 1) - its queue length. P1's leader B2 is down (not fenced yet), so its three
    batches wait in the producer's queue: weights P0 4, P1 1, P2 4."""
    actions = [{"do": "produce", "records": [f"p{p}"], "partition": p} for p in range(3)]
    actions += [{"do": "settle"}, {"do": "crash", "broker": 2}]
    actions += [{"do": "produce", "records": [f"q{k}"], "partition": 1} for k in range(3)]
    actions += [{"do": "advance", "ms": 100}, keyless("k0", bytes=BATCH_SIZE), keyless("k1")]
    sc = {
        "brokers": [{"id": 1}, {"id": 2}, {"id": 3}],
        "topic": {"partitions": 3, "replication.factor": 1},
        "actions": actions,
    }
    r = simulate(sc, steps=True)
    draws = steps_of(r, "producer_sticky_partition")
    assert len(draws) == 2, "the first pick, then a switch after the full batch k0"
    for s in draws:
        assert "weighted toward shorter queues: P0 4, P1 1, P2 4" in s["text"], s["text"]
    assert r["partitions"][1]["final"]["producer"]["in_flight"][0]["state"] == "waiting_for_leader"


def test_round_robin_before_2_4_sends_one_record_per_partition_in_turn():
    """§C.3: up to 2.3, DefaultPartitioner sends keyless records round-robin from a random start."""
    actions = [keyless(f"r{i}") for i in range(7)] + [{"do": "settle"}]
    sc = {"kafka_version": "1.1", "brokers": [{"id": 1}], "topic": {"partitions": 3, "replication.factor": 1},
          "actions": actions}
    r = simulate(sc, steps=True)
    placed = [pr["partition"] for pr in r["produce"]]
    assert all(placed[i + 1] == (placed[i] + 1) % 3 for i in range(6)), placed
    assert steps_of(r, "producer_sticky_partition") == []
    with pytest.raises(ScenarioError) as e:
        simulate({**sc, "actions": [{"do": "produce", "count": 3}]})
    assert e.value.problems[0]["path"] == "actions[0]" and "round-robin" in e.value.problems[0]["message"]


def test_kip480_sticky_generation_moves_on_every_new_batch():
    """2.4-3.2 (no profile today): every produce here opens a batch, which moves the stickiness to
    another available partition (StickyPartitionCache.nextPartition), keyed batches included."""
    sims = [SimpleNamespace(producer_leader=1, unsendable=set(), batches=[], senders=set()) for _ in range(3)]
    clock = SimpleNamespace(now=0, q=[], tick=iter(range(1, 100)).__next__)
    pc = ProducerConfig("app", -1, True, 1)
    session = ProducerSession(pc, 1000, 0)
    proc = ProducerProc(pc, session, sims=sims, clock=clock, seed=1, generation="sticky", topic="t")  # type: ignore[arg-type]
    picks = [proc.choose(SimpleNamespace(partition=None, key=None)) for _ in range(10)]
    assert all(a != b for a, b in zip(picks, picks[1:], strict=False)), picks
    assert proc.choose(SimpleNamespace(partition=None, key="alice")) == 0
    assert isinstance(proc.rng, random.Random)


# ----------------------------------------------------------------------------- part 1 unchanged


def test_part1_keyless_records_on_one_partition_are_unchanged():
    """One partition: keyless records go to it exactly as before (the same steps and result as
    naming partition 0), with no partitioner step and no draw."""
    actions = [{"do": "produce", "records": ["a", "b"]}, {"do": "crash", "broker": 1},
               {"do": "produce", "count": 3}, {"do": "settle", "through_failover": True}]
    named = [{**a, "partition": 0} if a["do"] == "produce" else a for a in actions]
    plain = simulate({"actions": actions}, steps=True)
    assert plain == simulate({"actions": named}, steps=True)
    assert "partitions" not in plain and not steps_of(plain, "producer_sticky_partition")


def test_steps_stay_in_order_with_add_partitions_and_sticky_draws():
    sc = c2_scenario()
    sc["actions"] = [keyless(f"n{i}", bytes=8192) for i in range(5)] + sc["actions"]
    r = simulate(sc, steps=True)
    assert [s["i"] for s in r["steps"]] == list(range(1, r["step_count"] + 1))
    times = [s["t_ms"] for s in r["steps"]]
    assert times == sorted(times)
    kinds = {s["kind"] for s in r["steps"]}
    assert {"admin_create_partitions", "producer_metadata_refresh", "producer_sticky_partition"} <= kinds
