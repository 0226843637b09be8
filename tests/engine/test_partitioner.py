"""The producer's partitioner (engine/partitioner.py) against Kafka's own numbers: UtilsTest's
murmur2 vectors, BuiltInPartitionerTest replayed pick for pick, the reference table of keys and
partition counts (kafka-clients-logs.md §C.2), the share of keys that move when partitions are
added (§C.4), and the canonical scenarios C1-C4 of §F.C."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.partitioner import (
    KeylessPartitioner,
    choose_partition,
    generation_for,
    keyed_partition,
    load_stats,
    murmur2,
    partition_for_key,
    serialize_key,
    slow_partitions,
    to_positive,
    weighted_pick,
)


class Counting(random.Random):
    """A generator that draws 0, 1, 2 ...: Kafka's tests replace the partitioner's random int with
    such a counter (BuiltInPartitionerTest.SequentialPartitioner.randomPartition), and Kafka takes
    it modulo the range as `randrange` does here."""

    def __init__(self) -> None:
        super().__init__(0)
        self.next = 0

    def randrange(self, start, stop=None, step=1):  # only randrange(n) and randrange(a, b) occur
        n = start if stop is None else stop - start
        value = self.next % n
        self.next += 1
        return value


# Kafka: clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2 (all six cases)
UTILS_TEST_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    bytes([ord("a"), ord("b"), ord("c")]): 479470107,
}

# kafka-clients-logs.md §C.2: key: (signed murmur2, partition with 3, 4, 6, 8, 12 partitions)
TABLE = {
    "": (275646681, 0, 1, 3, 1, 9),
    "a": (-1563381124, 1, 0, 4, 4, 4),
    "b": (-1853091852, 2, 0, 2, 4, 8),
    "alice": (1951417749, 0, 1, 3, 5, 9),
    "bob": (-2048144690, 0, 2, 0, 6, 6),
    "carol": (271431602, 2, 2, 2, 2, 2),
    "user-1": (1404122828, 2, 0, 2, 4, 8),
    "user-2": (-324981792, 2, 0, 2, 0, 8),
    "user-3": (1141442267, 2, 3, 5, 3, 11),
    "key-0": (29210041, 1, 1, 1, 1, 1),
    "key-1": (193331640, 0, 0, 0, 0, 0),
    "key-2": (852269702, 2, 2, 2, 6, 2),
    "key-3": (-1839136101, 2, 3, 5, 3, 11),
    "key-4": (647367033, 0, 1, 3, 1, 9),
    "key-5": (-1698326880, 2, 0, 2, 0, 8),
    "key-6": (-758453868, 2, 0, 2, 4, 8),
    "key-7": (713419675, 1, 3, 1, 3, 7),
    "key-8": (-1340033413, 1, 3, 1, 3, 7),
    "key-9": (-1335190451, 0, 1, 3, 5, 9),
}


@pytest.fixture(scope="module")
def hashes_of_100k_keys():
    return [to_positive(murmur2(f"key-{i}".encode())) for i in range(100_000)]


# --- keyed records -------------------------------------------------------------------------------


@pytest.mark.parametrize("data, expected", UTILS_TEST_VECTORS.items())
def test_murmur2_matches_kafkas_utils_test_vectors(data, expected):
    assert murmur2(data) == expected


@pytest.mark.parametrize("key", TABLE)
def test_keys_land_where_the_reference_table_says(key):
    hashed, *partitions = TABLE[key]
    assert murmur2(serialize_key(key)) == hashed
    for count, expected in zip((3, 4, 6, 8, 12), partitions, strict=True):
        assert keyed_partition(serialize_key(key), count) == expected, (key, count)


def test_to_positive_masks_the_sign_bit_rather_than_taking_the_absolute_value():
    assert to_positive(-1563381124) == 584102524 != abs(-1563381124)
    assert to_positive(-(2**31)) == 0  # Math.abs would stay negative here


def test_the_key_is_hashed_as_utf8_bytes():
    assert serialize_key("é") == b"\xc3\xa9" and serialize_key(None) is None
    # "1" as StringSerializer writes it and 1 as IntegerSerializer does are different keys
    assert murmur2(b"1") != murmur2((1).to_bytes(4, "big"))


def test_partition_for_key_is_the_same_function():
    assert partition_for_key is keyed_partition


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(key=st.binary(max_size=64), count=st.integers(1, 64))
def test_a_key_always_maps_to_the_same_partition_within_range(key, count):
    first = keyed_partition(key, count)
    assert 0 <= first < count
    assert all(keyed_partition(bytes(key), count) == first for _ in range(3))
    assert murmur2(key) == murmur2(bytes(key)) and -(2**31) <= murmur2(key) < 2**31


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(key=st.binary(max_size=64), count=st.integers(1, 32), factor=st.integers(2, 4))
def test_multiplying_the_partition_count_moves_a_key_only_within_its_residue(key, count, factor):
    """§C.4: when N' is a multiple of N a key in p stays in p or moves to p + k*N, never elsewhere."""
    assert keyed_partition(key, count * factor) % count == keyed_partition(key, count)


@pytest.mark.parametrize(
    "before, after, percent_moved",
    [(3, 4, 74.9), (4, 5, 80.1), (4, 8, 50.1), (6, 12, 50.0), (3, 6, 49.9), (10, 11, 90.8)],
)
def test_the_share_of_keys_that_move_matches_the_reference(hashes_of_100k_keys, before, after, percent_moved):
    """kafka-clients-logs.md §C.4: 100,000 keys key-i."""
    moved = sum(h % before != h % after for h in hashes_of_100k_keys)
    assert round(100 * moved / len(hashes_of_100k_keys), 1) == percent_moved


# --- KafkaProducer.partition: the order of decisions (§C.1) --------------------------------------


def test_an_explicit_partition_wins_over_the_key_and_over_ignore_keys():
    assert choose_partition(num_partitions=3, key="carol", partition=1) == 1
    assert choose_partition(num_partitions=3, key="carol", partition=0, ignore_keys=True) == 0
    with pytest.raises(ValueError):
        choose_partition(num_partitions=3, partition=3)


def test_ignore_keys_sends_keyed_records_where_keyless_ones_go():
    keyless = KeylessPartitioner("built-in", num_partitions=3)
    rng = random.Random(4)
    picks = {
        choose_partition(num_partitions=3, key=k, ignore_keys=True, keyless=keyless, rng=rng)
        for k in ("carol", "alice", "bob")
    }
    assert picks == {keyless.current}


def test_a_keyed_record_is_not_rerouted_around_a_partition_without_a_leader():
    assert choose_partition(num_partitions=3, key="carol", available=[0, 1]) == 2


def test_a_keyless_record_needs_the_keyless_state():
    with pytest.raises(ValueError):
        choose_partition(num_partitions=3, key=None)


# --- §F.C canonical scenarios ----------------------------------------------------------------


def test_FC1_keyed_records_on_three_partitions():
    """§F.C C1: alice → p0, bob → p0, carol → p2, key-1 → p0, key-0 → p1, every time."""
    expected = {"alice": 0, "bob": 0, "carol": 2, "key-1": 0, "key-0": 1}
    for _ in range(3):
        assert {k: choose_partition(num_partitions=3, key=k) for k in expected} == expected


def test_FC1_an_empty_key_is_hashed_not_treated_as_no_key():
    """§C.1: murmur2 of zero bytes is 275646681, so "" always goes to p0 of 3."""
    assert choose_partition(num_partitions=3, key="") == 0


def test_FC2_growing_from_three_to_four_partitions_moves_some_keys(hashes_of_100k_keys):
    """§F.C C2: under 4 partitions alice → p1 and bob → p2 move; carol, key-1 and key-0 stay;
    74.9% of 100,000 keys move."""
    keys = ("alice", "bob", "carol", "key-1", "key-0")
    before = {k: choose_partition(num_partitions=3, key=k) for k in keys}
    after = {k: choose_partition(num_partitions=4, key=k) for k in keys}
    assert after == {"alice": 1, "bob": 2, "carol": 2, "key-1": 0, "key-0": 1}
    assert [k for k in keys if before[k] != after[k]] == ["alice", "bob"]
    moved = sum(h % 3 != h % 4 for h in hashes_of_100k_keys)
    assert round(100 * moved / len(hashes_of_100k_keys), 1) == 74.9


def test_FC3_keyless_records_stick_until_batch_size_bytes_then_draw_again():
    """§F.C C3: with batch.size 16384 and ~110 bytes a record, about 150 records go to one
    partition before the switch; the next draw may be the same partition."""
    rng = random.Random(7)
    keyless = KeylessPartitioner("built-in", num_partitions=3)
    runs = []
    run_length = 0
    for _ in range(3000):
        run_partition = keyless.partition(rng, [0, 1, 2])
        run_length += 1
        before = len(keyless.switches)
        keyless.after_append(rng, 110, [0, 1, 2])
        if len(keyless.switches) != before:
            runs.append((run_partition, run_length))
            run_length = 0
    assert {length for _, length in runs} == {149}  # ceil(16384 / 110)
    draws = keyless.switches
    assert any(a == b for a, b in zip(draws, draws[1:], strict=False)), "the same partition may come again"
    assert set(draws) == {0, 1, 2}


def test_FC3_a_queue_with_a_part_full_batch_delays_the_switch_up_to_twice_batch_size():
    """§F.C C3 / §C.3: the switch waits for the queue to hold only full batches, up to 2 x batch.size."""
    rng = random.Random(1)
    keyless = KeylessPartitioner("built-in", num_partitions=3, batch_size=1000)
    keyless.partition(rng, [0, 1, 2])
    for _ in range(19):  # 1,900 bytes, the queue still holding a part-full batch
        keyless.after_append(rng, 100, [0, 1, 2], queue_only_full_batches=False)
    assert len(keyless.switches) == 1
    keyless.after_append(rng, 100, [0, 1, 2], queue_only_full_batches=False)  # 2,000 = 2 x batch.size
    assert len(keyless.switches) == 2


def test_FC3_adaptive_weights_follow_the_source_example():
    """BuiltInPartitioner.updatePartitionLoadStats's own comment: queues 0, 3, 1 give weights
    4, 1, 3, so draws 0-3 pick the first, 4 the second, 5-7 the third."""
    assert load_stats(3, [0, 1, 2], {0: 0, 1: 3, 2: 1}) == ([0, 1, 2], [4, 1, 3])
    rng = Counting()
    assert [weighted_pick(rng, [0, 1, 2], {0: 0, 1: 3, 2: 1}) for _ in range(8)] == [0, 0, 0, 0, 1, 2, 2, 2]


def test_FC3_a_slow_brokers_partition_gets_less_keyless_traffic():
    """§F.C C3: with adaptive partitioning a partition whose queue is longer is drawn less; with it
    off the draw is uniform."""
    queues = {0: 0, 1: 4, 2: 0}  # p1's leader is slow: its batches pile up
    counts = {True: [0, 0, 0], False: [0, 0, 0]}
    for adaptive in (True, False):
        rng = random.Random(5)
        keyless = KeylessPartitioner("built-in", num_partitions=3, batch_size=1, adaptive=adaptive)
        for _ in range(30_000):
            counts[adaptive][keyless.partition(rng, [0, 1, 2], queues)] += 1
            keyless.after_append(rng, 1, [0, 1, 2], queue_lengths=queues)
    adaptive_share, uniform_share = counts[True][1] / 30_000, counts[False][1] / 30_000
    assert abs(adaptive_share - 1 / 11) < 0.01  # weights 5, 1, 5
    assert abs(uniform_share - 1 / 3) < 0.01


def test_FC4_the_partitioner_keeps_one_keys_records_in_one_partition_so_order_is_per_partition():
    """§F.C C4 / §C.5: Kafka orders records only within a partition. The partitioner's part is that
    every record of a key, and every keyless record of one sticky run, lands in one partition, so
    its order there is append order; the retry reordering C4 describes (idempotence off, batch 1
    retried after batch 2 succeeds) happens after the partition is chosen and is the engine's
    (tests/engine/test_producer_order.py)."""
    records = [("bob", i) for i in range(20)] + [("alice", i) for i in range(20)]
    log: dict[int, list[tuple[str, int]]] = {0: [], 1: [], 2: []}
    for key, seq in records:
        log[choose_partition(num_partitions=3, key=key)].append((key, seq))
    for key in ("bob", "alice"):
        homes = [p for p, rows in log.items() if any(k == key for k, _ in rows)]
        assert len(homes) == 1
        assert [s for k, s in log[homes[0]] if k == key] == list(range(20))
    keyless = KeylessPartitioner("built-in", num_partitions=3, batch_size=1000)
    rng = random.Random(2)
    run = []
    for _ in range(9):  # 900 bytes, below batch.size: one sticky run
        run.append(keyless.partition(rng, [0, 1, 2]))
        keyless.after_append(rng, 100, [0, 1, 2])
    assert len(set(run)) == 1 and len(keyless.switches) == 1


# --- Kafka's BuiltInPartitionerTest, replayed with a counting generator ---------------------------
# clients/src/test/java/org/apache/kafka/clients/producer/internals/BuiltInPartitionerTest.java


def test_kafka_testStickyPartitioning():
    keyless = KeylessPartitioner("built-in", num_partitions=3, batch_size=3)
    rng = Counting()
    first = keyless.partition(rng, [0, 1, 2])
    for _ in range(3):
        assert keyless.partition(rng, [0, 1, 2]) == first
        keyless.after_append(rng, 1, [0, 1, 2])
    assert keyless.partition(rng, [0, 1, 2]) != first
    one = KeylessPartitioner("built-in", num_partitions=1, batch_size=1)
    for _ in range(10):  # switching works with one partition: it is always p0
        assert one.partition(rng, [0]) == 0
        one.after_append(rng, 1, [0])


def test_kafka_unavailablePartitionsTest():
    rng = random.Random(9)
    a = KeylessPartitioner("built-in", num_partitions=3, batch_size=1)  # p1 has no leader
    picks = []
    for _ in range(101):
        picks.append(a.partition(rng, [0, 2]))
        a.after_append(rng, 1, [0, 2])
    assert 1 not in picks and len(set(picks)) == 2
    b = KeylessPartitioner("built-in", num_partitions=2, batch_size=1)  # p0 has no leader
    for _ in range(101):
        assert b.partition(rng, [1]) == 1
        b.after_append(rng, 1, [1])
    c = KeylessPartitioner("built-in", num_partitions=1, batch_size=1)  # no partition has a leader
    assert c.partition(rng, []) == 0
    c.after_append(rng, 1, [])
    assert c.partition(rng, []) == 0


def test_kafka_adaptivePartitionsTest():
    """Queues 5, 0, 3, 0, 1: weights 6 - queue; two cycles of the 21 draws give exactly twice each."""
    queues = {0: 5, 1: 0, 2: 3, 3: 0, 4: 1}
    keyless = KeylessPartitioner("built-in", num_partitions=5, batch_size=1)
    rng = Counting()
    frequencies = [0] * 5
    for _ in range(21 * 2):
        frequencies[keyless.partition(rng, [0, 1, 2, 3, 4], queues)] += 1
        keyless.after_append(rng, 1, [0, 1, 2, 3, 4], queue_lengths=queues)
    assert frequencies == [2 * (6 - queues[p]) for p in range(5)]


def test_kafka_testStickyBatchSizeMoreThatZero_as_the_producer_reads_it():
    """BuiltInPartitioner refuses 0, but KafkaProducer passes max(1, batch.size): 0 behaves as 1."""
    keyless = KeylessPartitioner("built-in", num_partitions=3, batch_size=0)
    assert keyless.batch_size == 1
    keyless.partition(random.Random(1), [0, 1, 2])
    keyless.after_append(random.Random(1), 1, [0, 1, 2])
    assert len(keyless.switches) == 2


# --- when Kafka weighs and when it draws uniformly ----------------------------------------------


def test_load_stats_wait_until_every_partition_has_had_a_batch_queue():
    assert load_stats(3, [0, 1, 2], {0: 2, 1: 0}) is None  # p2 never had a batch: uniform
    assert load_stats(3, [0, 1, 2], None) is None
    assert load_stats(1, [0], {0: 3}) is None  # one partition: nothing to weigh


def test_load_stats_leave_out_leaderless_and_slow_partitions():
    queues = {0: 1, 1: 0, 2: 2, 3: 0}
    assert load_stats(4, [0, 2, 3], queues) == ([0, 2, 3], [2, 1, 3])  # p1 has no leader
    assert load_stats(4, [0, 1, 2, 3], queues, slow={2}) == ([0, 1, 3], [1, 2, 2])
    assert load_stats(4, [0, 1, 2, 3], queues, slow={0, 1, 2, 3}) is None  # none left: uniform


def test_slow_partitions_follow_partitioner_availability_timeout_ms():
    leaders = {0: 1, 1: 2, 2: 3, 3: None}
    ready = {1: 10_000, 2: 10_000, 3: 10_000}
    drained = {1: 9_900, 2: 2_000, 3: 8_000}
    assert slow_partitions(leaders, ready, drained, 0) == frozenset()  # the default: off
    assert slow_partitions(leaders, ready, drained, 5_000) == {1}  # broker 2 not drained for 8 s
    assert slow_partitions(leaders, ready, drained, 1_000) == {1, 2}


def test_a_slow_partition_is_not_drawn_while_adaptive_is_on_and_ignored_when_it_is_off():
    queues = {0: 0, 1: 0, 2: 0}
    for adaptive, expected in ((True, {0, 2}), (False, {0, 1, 2})):
        rng = random.Random(6)
        keyless = KeylessPartitioner("built-in", num_partitions=3, batch_size=1, adaptive=adaptive)
        picks = set()
        for _ in range(300):
            picks.add(keyless.partition(rng, [0, 1, 2], queues, slow={1}))
            keyless.after_append(rng, 1, [0, 1, 2], queue_lengths=queues, slow={1})
        assert picks == expected


# --- the older generations ------------------------------------------------------------------------


def test_sticky_2_4_moves_to_another_available_partition_on_a_new_batch():
    rng = random.Random(3)
    keyless = KeylessPartitioner("sticky", num_partitions=3)
    first = keyless.partition(rng, [0, 1, 2])
    for _ in range(50):
        previous = keyless.current
        keyless.on_new_batch(rng, [0, 1, 2], previous)
        assert keyless.current != previous
    keyless.on_new_batch(rng, [first], keyless.current)  # one partition available: it goes there
    assert keyless.current == first


def test_sticky_2_4_redraws_until_the_pick_differs_as_StickyPartitionCache_does():
    """StickyPartitionCache.nextPartition (tag 3.2.0) loops on its random draw; a counting
    generator shows the redraw: from p1 the draws 0, 1, 2 ... give p0, then p2 after skipping p1."""
    rng = Counting()
    keyless = KeylessPartitioner("sticky", num_partitions=3)
    assert keyless.partition(rng, [0, 1, 2]) == 0  # draw 0
    keyless.on_new_batch(rng, [0, 1, 2], 0)  # draw 1: p1
    keyless.on_new_batch(rng, [0, 1, 2], 1)  # draw 2: p2
    keyless.on_new_batch(rng, [0, 1, 2], 2)  # draw 3: p0
    keyless.on_new_batch(rng, [0, 1, 2], 0)  # draw 4: p1
    keyless.on_new_batch(rng, [0, 1, 2], 1)  # draw 5: p2
    assert keyless.switches == [0, 1, 2, 0, 1, 2]
    keyless.current = 0
    rng.next = 3  # draw 3 gives p0, the current one: redrawn, draw 4 gives p1
    keyless.on_new_batch(rng, [0, 1, 2], 0)
    assert keyless.current == 1 and rng.next == 5


def test_sticky_2_4_ignores_a_new_batch_on_another_partition():
    rng = random.Random(8)
    keyless = KeylessPartitioner("sticky", num_partitions=3)
    current = keyless.partition(rng, [0, 1, 2])
    keyless.on_new_batch(rng, [0, 1, 2], (current + 1) % 3)
    assert keyless.current == current and keyless.switches == [current]


def test_sticky_2_4_with_no_available_partition_may_stay_put():
    """StickyPartitionCache.nextPartition: no available partition means a draw over all of them,
    without excluding the old one."""
    rng = Counting()
    keyless = KeylessPartitioner("sticky", num_partitions=3)
    keyless.partition(rng, [])  # draw 0: p0
    rng.next = 3  # draw 3: p0 again
    keyless.on_new_batch(rng, [], 0)
    assert keyless.switches == [0, 0]


def test_round_robin_before_2_4_goes_round_the_available_partitions():
    rng = random.Random(5)
    keyless = KeylessPartitioner("round-robin", num_partitions=3)
    picks = [keyless.partition(rng, [0, 2]) for _ in range(6)]
    assert sorted(set(picks)) == [0, 2] and all(a != b for a, b in zip(picks, picks[1:], strict=False))
    # no partition available: round all three
    assert sorted(keyless.partition(rng, []) for _ in range(3)) == [0, 1, 2]


def test_round_robin_counter_wraps_like_a_java_int():
    """DefaultPartitioner (tag 2.3.0): toPositive(counter++) % n; at 2^31 - 1 the Java int wraps to
    -2^31, whose toPositive is 0, so the sequence restarts from p0 mid-round."""
    keyless = KeylessPartitioner("round-robin", num_partitions=3, counter=2**31 - 2)
    picks = [keyless.partition(random.Random(0), [0, 1, 2]) for _ in range(3)]
    assert picks == [(2**31 - 1) % 3, 0, 1]  # 2^31 - 1 is p1; then p0 again, not p2


@pytest.mark.parametrize("version, generation", [("0.10", "round-robin"), ("2.3", "round-robin"),
                                                 ("2.4", "sticky"), ("3.2", "sticky"),
                                                 ("3.3", "built-in"), ("4.1", "built-in")])  # fmt: skip
def test_each_client_version_has_its_generation(version, generation):
    assert generation_for(version) == generation


def test_the_same_seed_gives_the_same_keyless_picks():
    def picks(seed):
        rng = random.Random(seed)
        keyless = KeylessPartitioner("built-in", num_partitions=6)
        out = []
        for _ in range(2000):
            out.append(keyless.partition(rng, list(range(6))))
            keyless.after_append(rng, 300, list(range(6)), queue_lengths={p: p % 3 for p in range(6)})
        return out

    assert picks(42) == picks(42) != picks(43)
