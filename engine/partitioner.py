"""Which partition a producer sends a record to: keys hashed exactly as Kafka hashes them, and the
three generations of behaviour for records without a key.

Pure functions and small state machines, with no clock and no global randomness: a keyless pick
draws from the `random.Random` the caller passes (the run's seeded generator), so a scenario's
result stays a function of its seed. Kafka draws `toPositive(ThreadLocalRandom.nextInt()) % n`
where this module calls `rng.randrange(n)`: the same choice, and a generator that counts 0, 1, 2 ...
reproduces Kafka's own partitioner tests pick for pick.

The order of decisions is `KafkaProducer.partition` (clients 3.3+): an explicit partition on the
record wins; otherwise a non-null serialized key is hashed over all the topic's partitions, unless
`partitioner.ignore.keys` is set; otherwise the keyless logic of the client's generation picks:

- up to 2.3, `DefaultPartitioner` went round the available partitions one record at a time;
- 2.4 to 3.2 (KIP-480), `StickyPartitionCache` stays on one partition until a new batch is made
  for it, then moves to a random available partition other than the current one;
- 3.3 and later (KIP-794), `BuiltInPartitioner` stays until at least `batch.size` bytes went to the
  partition (and its queue holds only full batches), or unconditionally at twice that, then draws
  the next partition at random, the current one included, weighted toward shorter queues when
  `partitioner.adaptive.partitioning.enable` is on (the default).

Simplifications: the bytes a keyless record adds to its batch are the caller's to estimate (Kafka
counts the growth of the batch's estimated size, record overhead included); queue lengths and the
partitions `partitioner.availability.timeout.ms` excludes are the caller's snapshot at the moment
of a switch (Kafka refreshes them on each pass of the sender thread); a custom `partitioner.class`
is not modelled.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

MURMUR2_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF

Generation = Literal["round-robin", "sticky", "built-in"]


def _signed32(n: int) -> int:
    """The Java int `Utils.murmur2` returns: the low 32 bits read as two's complement."""
    n &= _MASK32
    return n - (1 << 32) if n & 0x80000000 else n


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit MurmurHash2 of `data`, as the signed Java int it returns
    (`org.apache.kafka.common.utils.Utils.murmur2`, unchanged since 0.8.2): seed 0x9747b28c, 4-byte
    little-endian words, then the 1 to 3 byte tail, then the final mix."""
    length = len(data)
    h = (MURMUR2_SEED ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return _signed32(h)


def to_positive(n: int) -> int:
    """`Utils.toPositive` (clients, all versions): the low 31 bits (n & 0x7fffffff), which is not
    the absolute value."""
    return n & 0x7FFFFFFF


def serialize_key(key: str | bytes | None) -> bytes | None:
    """The key's bytes as `StringSerializer.serialize` writes them (UTF-8, its default encoding);
    None stays None (no key). An empty string is an empty key, which is hashed like any other."""
    if key is None or isinstance(key, bytes):
        return key
    return key.encode("utf-8")


@functools.lru_cache(maxsize=4096)  # a pure function, asked again for every record with a known key
def keyed_partition(key: bytes, num_partitions: int) -> int:
    """`BuiltInPartitioner.partitionForKey` (3.3+; the same formula as `DefaultPartitioner.partition`
    before it): toPositive(murmur2(key)) % the topic's partition count. All partitions count,
    available or not: a keyed record is never rerouted around an offline one."""
    if num_partitions < 1:
        raise ValueError("a topic has at least one partition")
    return to_positive(murmur2(key)) % num_partitions


partition_for_key = keyed_partition  # the name Kafka's method has; the engine imports it


def generation_for(client_version: str) -> Generation:
    """Which keyless behaviour a client of this version has ("0.10", "2.4", "3.6", "4.1" ...):
    `DefaultPartitioner` round-robin up to 2.3, KIP-480's `StickyPartitionCache` from 2.4.0,
    KIP-794's `BuiltInPartitioner` from 3.3.0."""
    major, minor = (int(p) for p in client_version.split(".")[:2])
    if (major, minor) < (2, 4):
        return "round-robin"
    if (major, minor) < (3, 3):
        return "sticky"
    return "built-in"


def slow_partitions(
    leaders: Mapping[int, int | None],
    node_ready_ms: Mapping[int, int],
    node_drain_ms: Mapping[int, int],
    timeout_ms: int,
) -> frozenset[int]:
    """The partitions `partitioner.availability.timeout.ms` takes out of the adaptive draw
    (`RecordAccumulator.partitionReady` with `updateNodeLatencyStats`, 3.3+): those whose leader
    has had data ready but not drained for longer than the timeout. 0, the default, turns it off.

    `leaders` maps each partition to its leader broker (None: no leader); the node maps hold, per
    broker, the last time it had data ready to send and the last time it could be drained."""
    if timeout_ms <= 0:
        return frozenset()
    return frozenset(
        p
        for p, node in leaders.items()
        if node is not None
        and node in node_ready_ms
        and node_ready_ms[node] - node_drain_ms.get(node, 0) > timeout_ms
    )


def load_stats(
    num_partitions: int,
    available: Iterable[int],
    queue_lengths: Mapping[int, int] | None,
    slow: Iterable[int] = (),
) -> tuple[list[int], list[int]] | None:
    """`BuiltInPartitioner.updatePartitionLoadStats` fed by `RecordAccumulator.partitionReady`
    (3.3+): the partitions the adaptive draw picks from and each one's weight, or None when Kafka
    draws uniformly instead.

    Kafka weighs only once every partition of the topic has had a batch queue (`queue_lengths`
    then names them all; a queue's length is its batches waiting in the accumulator), only
    partitions with a leader (`available`), and not the `slow` ones; a topic of one partition,
    or nothing left after the exclusions, means uniform. Each weight is (longest queue + 1) - its
    queue's length: queues 0, 3, 1 give 4, 1, 3."""
    if queue_lengths is None or num_partitions < 2:
        return None
    if any(p not in queue_lengths for p in range(num_partitions)):
        return None
    excluded = set(slow)
    kept = [p for p in sorted(set(available)) if p not in excluded]
    if not kept:
        return None
    lengths = [queue_lengths[p] for p in kept]
    top = max(lengths) + 1
    return kept, [top - n for n in lengths]


def weighted_pick(rng: random.Random, candidates: list[int], queue_lengths: Mapping[int, int]) -> int:
    """`BuiltInPartitioner.nextPartition` with load stats (3.3+): each candidate weighs
    (longest queue + 1) - its queue length; a draw below the total weight picks the first
    candidate whose running sum exceeds it (Kafka's binary search of its cumulative frequency
    table). Equal queues make the pick uniform. A candidate missing from `queue_lengths` has an
    empty queue."""
    lengths = [queue_lengths.get(p, 0) for p in candidates]
    top = max(lengths) + 1
    return _draw(rng, candidates, [top - n for n in lengths])


def _draw(rng: random.Random, candidates: list[int], weights: list[int]) -> int:
    """The weighted branch of `BuiltInPartitioner.nextPartition` (3.3+): a draw below the total
    weight, then the first candidate whose running sum of weights exceeds it."""
    ticket = rng.randrange(sum(weights))
    for partition, weight in zip(candidates, weights, strict=True):
        if ticket < weight:
            return partition
        ticket -= weight
    raise AssertionError("unreachable: the ticket is below the total weight")


@dataclass
class KeylessPartitioner:
    """The keyless state of one producer for one topic, in the client generation it has.

    `available` is the partitions that have a leader in the producer's metadata (when none has,
    Kafka picks among all of them). For "built-in", call `after_append` with the bytes each keyless
    record added; for "sticky", call `on_new_batch` whenever the accumulator is about to make a new
    batch, keyed records' batches included (Kafka's `DefaultPartitioner.onNewBatch` does not look at
    keys). `batch_size` is `batch.size`; 0 means 1, as `KafkaProducer` reads it. `adaptive` is
    `partitioner.adaptive.partitioning.enable`."""

    generation: Generation
    num_partitions: int
    batch_size: int = 16384
    adaptive: bool = True
    current: int | None = None
    produced_bytes: int = 0
    counter: int | None = None  # round-robin's counter (DefaultPartitioner.nextValue)
    switches: list[int] = field(default_factory=list)  # every partition it stuck to, in order

    def __post_init__(self) -> None:
        """`KafkaProducer`'s constructor (3.3+) hands the accumulator max(1, batch.size)."""
        self.batch_size = max(1, self.batch_size)

    def partition(
        self,
        rng: random.Random,
        available: list[int],
        queue_lengths: Mapping[int, int] | None = None,
        *,
        slow: Iterable[int] = (),
    ) -> int:
        """The partition the next keyless record goes to: `DefaultPartitioner.partition` (2.3),
        `StickyPartitionCache.partition` (2.4-3.2) or `BuiltInPartitioner.peekCurrentPartitionInfo`
        (3.3+). The first keyless record of the sticky generations picks; later ones stick."""
        pool = self._pool(available)
        if self.generation == "round-robin":
            # a counter from a random start, taken modulo the available partitions when any
            if self.counter is None:
                self.counter = rng.randrange(1 << 31)
            else:
                self.counter += 1
            return pool[to_positive(self.counter) % len(pool)]
        if self.current is None:
            if self.generation == "sticky":
                self._stick_elsewhere(rng, available)
            else:
                self._draw_next(rng, available, queue_lengths, slow)
        assert self.current is not None
        return self.current

    def on_new_batch(self, rng: random.Random, available: list[int], previous: int) -> None:
        """`StickyPartitionCache.nextPartition` via `DefaultPartitioner.onNewBatch` (2.4 to 3.2): a
        new batch for the sticky partition moves the stickiness to a random available partition
        other than `previous` (the only one if one is available; any partition, `previous`
        included, if none is). A new batch on another partition changes nothing.

        In those versions `KafkaProducer.doSend` first appends with abortOnNewBatch: a record that
        would open a batch on the sticky partition calls this and goes to the new sticky partition
        instead. So the very first keyless record, which finds no batch, already moves once."""
        if self.generation != "sticky" or previous != self.current:
            return
        self._stick_elsewhere(rng, available)

    def after_append(
        self,
        rng: random.Random,
        appended_bytes: int,
        available: list[int],
        *,
        queue_only_full_batches: bool = True,
        queue_lengths: Mapping[int, int] | None = None,
        slow: Iterable[int] = (),
    ) -> None:
        """`BuiltInPartitioner.updatePartitionInfo` (3.3+): count the bytes; switch once at least
        batch.size went to the current partition and its queue holds only full batches
        (`RecordAccumulator.allBatchesFull`), or unconditionally at twice batch.size. The next
        pick may be the same partition."""
        if self.generation != "built-in":
            return
        self.produced_bytes += appended_bytes
        if self.produced_bytes >= 2 * self.batch_size or (
            self.produced_bytes >= self.batch_size and queue_only_full_batches
        ):
            self._draw_next(rng, available, queue_lengths, slow)

    def _pool(self, available: list[int]) -> list[int]:
        """`Cluster.availablePartitionsForTopic`, or `partitionsForTopic` when none is available,
        as every generation's keyless pick falls back."""
        return sorted(available) or list(range(self.num_partitions))

    def _stick_elsewhere(self, rng: random.Random, available: list[int]) -> None:
        """`StickyPartitionCache.nextPartition` (2.4 to 3.2): with several available partitions,
        redraw until the pick differs from the old one."""
        if not available:
            pick = rng.randrange(self.num_partitions)
        elif len(available) == 1:
            pick = available[0]
        else:
            pool = sorted(available)
            pick = pool[rng.randrange(len(pool))]
            while pick == self.current:
                pick = pool[rng.randrange(len(pool))]
        self._stick(pick)

    def _draw_next(
        self,
        rng: random.Random,
        available: list[int],
        queue_lengths: Mapping[int, int] | None,
        slow: Iterable[int],
    ) -> None:
        """`BuiltInPartitioner.nextPartition` (3.3+): weighted by the load stats when adaptive
        partitioning has them, else uniform over the available partitions."""
        stats = load_stats(self.num_partitions, available, queue_lengths, slow) if self.adaptive else None
        if stats is None:
            pool = self._pool(available)
            self._stick(pool[rng.randrange(len(pool))])
        else:
            self._stick(_draw(rng, *stats))

    def _stick(self, partition: int) -> None:
        """A fresh `BuiltInPartitioner.StickyPartitionInfo` (3.3+): the new partition, no bytes yet."""
        self.current = partition
        self.produced_bytes = 0
        self.switches.append(partition)


def choose_partition(
    *,
    num_partitions: int,
    key: str | bytes | None = None,
    partition: int | None = None,
    ignore_keys: bool = False,
    keyless: KeylessPartitioner | None = None,
    rng: random.Random | None = None,
    available: list[int] | None = None,
    queue_lengths: Mapping[int, int] | None = None,
) -> int:
    """`KafkaProducer.partition` (3.3+): the record's own partition if it names one; else its
    key's hash unless `partitioner.ignore.keys`; else the keyless partitioner's current pick.
    A partition outside the topic raises here; in Kafka a negative one fails in the
    `ProducerRecord` constructor and one past the count makes `KafkaProducer.waitOnMetadata` wait
    for metadata that has it, then time out after `max.block.ms`."""
    if partition is not None:
        if not 0 <= partition < num_partitions:
            raise ValueError(f"partition {partition} is not one of the topic's {num_partitions}")
        return partition
    key_bytes = serialize_key(key)
    if key_bytes is not None and not ignore_keys:
        return keyed_partition(key_bytes, num_partitions)
    if keyless is None or rng is None:
        raise ValueError("a record without a key needs the producer's keyless partitioner and generator")
    pool = available if available is not None else list(range(num_partitions))
    return keyless.partition(rng, pool, queue_lengths)
