"""Which partition a producer sends a record to: keys hashed exactly as Kafka hashes them, and the
three generations of behaviour for records without a key.

Pure functions and small state machines, with no clock and no global randomness: a keyless pick
draws from the `random.Random` the caller passes (the run's seeded generator), so a scenario's
result stays a function of its seed.

The order of decisions is `KafkaProducer.partition` (clients, 3.3+): an explicit partition on the
record wins; otherwise a non-null serialized key is hashed, unless `partitioner.ignore.keys` is
set; otherwise the keyless logic of the client's generation picks:

- up to 2.3, `DefaultPartitioner` went round the available partitions one record at a time;
- 2.4 to 3.2 (KIP-480), `StickyPartitionCache` stays on one partition until a new batch is made
  for it, then moves to a random available partition other than the current one;
- 3.3 and later (KIP-794), `BuiltInPartitioner` stays until at least `batch.size` bytes went to the
  partition (and its queue holds only full batches), or unconditionally at twice that, then draws
  the next partition at random, the current one included, weighted toward shorter queues when
  `partitioner.adaptive.partitioning.enable` is on (the default).

Simplifications: the bytes a keyless record adds to its batch are the caller's to estimate (Kafka
counts the batch's estimated size growth, record overhead included); the custom
`partitioner.class` is not modelled; `partitioner.availability.timeout.ms` is the caller's list of
available partitions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

MURMUR2_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF

Generation = Literal["round-robin", "sticky", "built-in"]


def _signed32(n: int) -> int:
    n &= _MASK32
    return n - (1 << 32) if n & 0x80000000 else n


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit MurmurHash2 of `data`, as the signed Java int it returns
    (`org.apache.kafka.common.utils.Utils.murmur2`): seed 0x9747b28c, 4-byte little-endian words,
    then the 1 to 3 byte tail, then the final mix."""
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
    """`Utils.toPositive`: the low 31 bits (n & 0x7fffffff), which is not the absolute value."""
    return n & 0x7FFFFFFF


def serialize_key(key: str | bytes | None) -> bytes | None:
    """The key's bytes as `StringSerializer` writes them (UTF-8); None stays None (no key). An
    empty string is an empty key, which is hashed like any other."""
    if key is None or isinstance(key, bytes):
        return key
    return key.encode("utf-8")


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """`BuiltInPartitioner.partitionForKey`: toPositive(murmur2(key)) % the topic's partition count
    (all partitions, available or not: a keyed record is never rerouted around an offline one)."""
    if num_partitions < 1:
        raise ValueError("a topic has at least one partition")
    return to_positive(murmur2(key)) % num_partitions


def generation_for(client_version: str) -> Generation:
    """Which keyless behaviour a client of this version has ("0.10", "2.4", "3.6", "4.1" ...)."""
    major, minor = (int(p) for p in client_version.split(".")[:2])
    if (major, minor) < (2, 4):
        return "round-robin"
    if (major, minor) < (3, 3):
        return "sticky"
    return "built-in"


def weighted_pick(rng: random.Random, candidates: list[int], queue_lengths: dict[int, int]) -> int:
    """`BuiltInPartitioner.nextPartition` with adaptive partitioning: each candidate weighs
    (longest queue + 1) - its queue length, batches waiting in the accumulator; the pick samples
    the cumulative table. Equal queues make the pick uniform."""
    lengths = [queue_lengths.get(p, 0) for p in candidates]
    top = max(lengths) + 1
    weights = [top - n for n in lengths]
    ticket = rng.randrange(sum(weights))
    for partition, weight in zip(candidates, weights, strict=True):
        if ticket < weight:
            return partition
        ticket -= weight
    raise AssertionError("unreachable: the ticket is below the total weight")


@dataclass
class KeylessPartitioner:
    """The keyless state of one producer for one topic, in the client generation it has.

    `available` is the partitions that have a leader in the producer's metadata (all of them when
    none has: Kafka then picks from every partition). For "built-in", call `after_append` with the
    bytes each keyless record added; for "sticky", call `on_new_batch` when the accumulator made a
    new batch for the current partition."""

    generation: Generation
    num_partitions: int
    batch_size: int = 16384
    adaptive: bool = True
    current: int | None = None
    produced_bytes: int = 0
    counter: int | None = None  # round-robin's counter (DefaultPartitioner.nextValue)
    switches: list[int] = field(default_factory=list)  # every partition it stuck to, in order

    def partition(
        self, rng: random.Random, available: list[int], queue_lengths: dict[int, int] | None = None
    ) -> int:
        """The partition the next keyless record goes to."""
        pool = sorted(available) or list(range(self.num_partitions))
        if self.generation == "round-robin":
            # DefaultPartitioner (2.3 and before): a counter from a random start, over the
            # available partitions when any, else over all of them
            if self.counter is None:
                self.counter = rng.randrange(1 << 31)
            else:
                self.counter += 1
            return pool[to_positive(self.counter) % len(pool)]
        if self.current is None:  # the first keyless record picks; later ones stick
            self._switch(rng, pool, queue_lengths, exclude_current=False)
        return self.current  # type: ignore[return-value]

    def on_new_batch(self, rng: random.Random, available: list[int], previous: int) -> None:
        """`StickyPartitionCache.nextPartition` (2.4 to 3.2): a new batch for the sticky partition
        moves the stickiness to a random available partition other than `previous`; with one
        available partition it stays there."""
        if self.generation != "sticky" or previous != self.current:
            return
        pool = sorted(available) or list(range(self.num_partitions))
        self._switch(rng, pool, None, exclude_current=True)

    def after_append(
        self,
        rng: random.Random,
        appended_bytes: int,
        available: list[int],
        *,
        queue_only_full_batches: bool = True,
        queue_lengths: dict[int, int] | None = None,
    ) -> None:
        """`BuiltInPartitioner.updatePartitionInfo` (3.3+): count the bytes; switch once at least
        batch.size went to the current partition and its queue holds only full batches, or
        unconditionally at twice batch.size. The next pick may be the same partition."""
        if self.generation != "built-in":
            return
        self.produced_bytes += appended_bytes
        if self.produced_bytes >= 2 * self.batch_size or (
            self.produced_bytes >= self.batch_size and queue_only_full_batches
        ):
            pool = sorted(available) or list(range(self.num_partitions))
            self._switch(rng, pool, queue_lengths, exclude_current=False)

    def _switch(
        self,
        rng: random.Random,
        pool: list[int],
        queue_lengths: dict[int, int] | None,
        *,
        exclude_current: bool,
    ) -> None:
        candidates = [p for p in pool if not (exclude_current and p == self.current)] or pool
        if self.generation == "built-in" and self.adaptive and queue_lengths:
            self.current = weighted_pick(rng, candidates, queue_lengths)
        else:
            self.current = candidates[rng.randrange(len(candidates))]
        self.produced_bytes = 0
        self.switches.append(self.current)


def choose_partition(
    *,
    num_partitions: int,
    key: str | bytes | None = None,
    partition: int | None = None,
    ignore_keys: bool = False,
    keyless: KeylessPartitioner | None = None,
    rng: random.Random | None = None,
    available: list[int] | None = None,
    queue_lengths: dict[int, int] | None = None,
) -> int:
    """`KafkaProducer.partition`: the record's own partition if it names one; else its key's hash
    unless keys are ignored; else the keyless partitioner's current pick."""
    if partition is not None:
        if not 0 <= partition < num_partitions:
            raise ValueError(f"partition {partition} is not one of the topic's {num_partitions}")
        return partition
    key_bytes = serialize_key(key)
    if key_bytes is not None and not ignore_keys:
        return partition_for_key(key_bytes, num_partitions)
    if keyless is None or rng is None:
        raise ValueError("a record without a key needs the producer's keyless partitioner and generator")
    pool = available if available is not None else list(range(num_partitions))
    return keyless.partition(rng, pool, queue_lengths)
