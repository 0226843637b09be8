"""The producer's partitioner (engine/partitioner.py) against Kafka's own numbers: UtilsTest's
murmur2 vectors, the reference table of keys and partition counts (kafka-clients-logs.md §C.2),
and the canonical scenarios C1-C3 of §F.C."""

import random

import pytest

from engine.partitioner import (
    KeylessPartitioner,
    choose_partition,
    generation_for,
    murmur2,
    partition_for_key,
    to_positive,
    weighted_pick,
)

# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2
UTILS_TEST_VECTORS = {"21": -973932308, "foobar": -790332482, "abc": 479470107}

# key: (signed murmur2, partition with 3, 4, 6, 8, 12 partitions)
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


@pytest.mark.parametrize("key, expected", UTILS_TEST_VECTORS.items())
def test_murmur2_matches_kafkas_utils_test_vectors(key, expected):
    assert murmur2(key.encode()) == expected


@pytest.mark.parametrize("key", TABLE)
def test_keys_land_where_the_reference_table_says(key):
    hashed, *partitions = TABLE[key]
    assert murmur2(key.encode()) == hashed
    for count, expected in zip((3, 4, 6, 8, 12), partitions, strict=True):
        assert partition_for_key(key.encode(), count) == expected, (key, count)


def test_to_positive_masks_the_sign_bit_rather_than_taking_the_absolute_value():
    assert to_positive(-1563381124) == 584102524 != abs(-1563381124)


def test_C1_keyed_records_on_three_partitions():
    """§F.C C1: alice → p0, bob → p0, carol → p2, key-1 → p0, key-0 → p1, every time."""
    expected = {"alice": 0, "bob": 0, "carol": 2, "key-1": 0, "key-0": 1}
    for _ in range(3):
        assert {k: choose_partition(num_partitions=3, key=k) for k in expected} == expected


def test_C1_an_empty_key_is_hashed_not_treated_as_no_key():
    assert choose_partition(num_partitions=3, key="") == 0  # murmur2(b"") = 275646681


def test_C2_growing_from_three_to_four_partitions_moves_some_keys():
    """§F.C C2: under 4 partitions alice → p1 and bob → p2 move; carol, key-1 and key-0 stay."""
    keys = ("alice", "bob", "carol", "key-1", "key-0")
    before = {k: choose_partition(num_partitions=3, key=k) for k in keys}
    after = {k: choose_partition(num_partitions=4, key=k) for k in before}
    assert after == {"alice": 1, "bob": 2, "carol": 2, "key-1": 0, "key-0": 1}
    assert [k for k in before if before[k] != after[k]] == ["alice", "bob"]


def test_C2_about_three_quarters_of_keys_move_from_three_to_four():
    keys = [f"key-{i}".encode() for i in range(100_000)]
    moved = sum(partition_for_key(k, 3) != partition_for_key(k, 4) for k in keys)
    assert round(100 * moved / len(keys), 1) == 74.9


def test_an_explicit_partition_wins_over_the_key_and_ignore_keys_makes_keys_keyless():
    assert choose_partition(num_partitions=3, key="carol", partition=1) == 1
    keyless = KeylessPartitioner("built-in", num_partitions=3)
    rng = random.Random(4)
    picks = {choose_partition(num_partitions=3, key="carol", ignore_keys=True, keyless=keyless, rng=rng)}
    assert picks == {keyless.current}
    with pytest.raises(ValueError):
        choose_partition(num_partitions=3, partition=3)


def test_C3_built_in_keyless_records_stick_until_batch_size_bytes_then_draw_again():
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
    repeats = [a == b for a, b in zip(draws, draws[1:], strict=False)]
    assert any(repeats), "the same partition may be drawn again"
    assert set(draws) == {0, 1, 2}


def test_C3_a_queue_with_a_part_full_batch_delays_the_switch_up_to_twice_batch_size():
    rng = random.Random(1)
    keyless = KeylessPartitioner("built-in", num_partitions=3, batch_size=1000)
    keyless.partition(rng, [0, 1, 2])
    for _ in range(19):  # 1,900 bytes, the queue still holding a part-full batch
        keyless.after_append(rng, 100, [0, 1, 2], queue_only_full_batches=False)
    assert len(keyless.switches) == 1
    keyless.after_append(rng, 100, [0, 1, 2], queue_only_full_batches=False)  # 2,000 = 2 x batch.size
    assert len(keyless.switches) == 2


def test_C3_adaptive_weights_follow_the_source_example():
    """BuiltInPartitioner's own example: queues 0, 3, 1 give weights 4, 1, 3 (4/8, 1/8, 3/8)."""
    rng = random.Random(11)
    counts = {0: 0, 1: 0, 2: 0}
    n = 80_000
    for _ in range(n):
        counts[weighted_pick(rng, [0, 1, 2], {0: 0, 1: 3, 2: 1})] += 1
    for p, share in zip((0, 1, 2), (4 / 8, 1 / 8, 3 / 8), strict=True):
        assert abs(counts[p] / n - share) < 0.01, (p, counts)


def test_sticky_2_4_moves_to_another_available_partition_on_a_new_batch():
    rng = random.Random(3)
    keyless = KeylessPartitioner("sticky", num_partitions=3)
    first = keyless.partition(rng, [0, 1, 2])
    for _ in range(50):
        previous = keyless.current
        keyless.on_new_batch(rng, [0, 1, 2], previous)
        assert keyless.current != previous
    keyless.on_new_batch(rng, [first], keyless.current)  # one partition available: it stays there
    assert keyless.current == first


def test_round_robin_before_2_4_goes_round_the_available_partitions():
    rng = random.Random(5)
    keyless = KeylessPartitioner("round-robin", num_partitions=3)
    picks = [keyless.partition(rng, [0, 2]) for _ in range(6)]
    assert sorted(set(picks)) == [0, 2] and all(a != b for a, b in zip(picks, picks[1:], strict=False))
    # no partition available: round all three
    assert sorted(keyless.partition(rng, []) for _ in range(3)) == [0, 1, 2]


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
            keyless.after_append(rng, 300, list(range(6)), queue_lengths={0: 2, 3: 1})
        return out

    assert picks(42) == picks(42) != picks(43)
