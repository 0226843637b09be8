"""One producer process as the run driver sees it: the partition count its metadata shows, its
keyless partitioner, and the partition each produce goes to (`KafkaProducer.partition`).

engine/partitioner.py holds the rules (murmur2, the three keyless generations); this module
applies them to one producer inside a run (engine/sim.py `_drive`), on the run's clock:

- The choice is made when the produce action runs, from what the producer knows then: the
  partition count of its latest metadata refresh and, for a record without a key, which of those
  partitions have a leader in its metadata and how many batches wait in each partition's queue
  (its accumulator). The draws come from one `random.Random` per producer seeded from the
  scenario's seed and the producer's id, so a run is a function of its seed, and nothing here
  depends on whether steps are recorded.
- The partitions `add_partitions` creates reach the producer at its next periodic refresh: Kafka
  refreshes metadata once it is `metadata.max.age.ms` old, here every metadata.max.age.ms from the
  producer's start (the scenario's start); a refresh at the very millisecond the partitions are
  created counts as before them, so the next one is the first to see them. A produce that names a
  partition the producer does not know yet refreshes at once (`KafkaProducer.waitOnMetadata`).
  Simplification: the refreshes the engine's producer makes after an error such as
  NOT_LEADER_OR_FOLLOWER update that partition's leader only, not the partition count (in Kafka
  every metadata response carries the count).
- A keyless batch counts its on-disk size toward `batch.size` (16384, Kafka's default; not a
  scenario key): the produce's `bytes` when given, else the exact size of an uncompressed v2
  batch of its records (segments.batch_size_bytes; each record's value is its name, in UTF-8).
  A produce is one batch, closed when the action ends. After the append, `allBatchesFull` holds
  only if that batch reached batch.size, so a smaller batch does not switch at once: the switch
  happens when the next keyless record arrives and finds the batch closed
  (`RecordAccumulator.partitionChanged` completes the switch it disabled), or at once at twice
  batch.size (`BuiltInPartitioner.updatePartitionInfo`). Either way the draw uses the producer's
  view at that moment.
- Profiles up to 2.3 spread keyless records round-robin, one record per partition: a keyless
  produce of several records on a topic of several partitions is refused there (engine/__init__),
  since a produce here is one batch on one partition. KIP-480's sticky generation (2.4-3.2) is
  applied as a produce-is-a-new-batch producer would see it (each batch moves the stickiness), but
  no profile is in that range today.
- Queue lengths count the batches of this partition that wait in this producer (backing off, held
  behind one, or waiting for a leader); another producer's queues are its own.
- A restart (`restart`) is a new process: a new session (engine/state.py `ProducerSession`), fresh
  metadata (it knows every partition the topic has now, and counts metadata.max.age.ms from its
  start), a fresh sticky partition, no keys seen. A process that is not running refreshes nothing.
- Simplification: every producer reads a partition's leader from one shared view
  (`Sim.producer_leader`), so a leader change reaches all producers at once.
"""

from __future__ import annotations

import heapq
import random
from typing import TYPE_CHECKING, Any

from .clients_spec import ProducerConfig
from .partitioner import (
    Generation,
    KeylessPartitioner,
    choose_partition,
    keyed_partition,
    load_stats,
    serialize_key,
)
from .results import ProducerResult
from .segments import batch_size_bytes
from .state import ProducerSession

if TYPE_CHECKING:  # pragma: no cover - typing only (sim imports this module)
    from .sim import Clock, Sim

BATCH_SIZE = 16_384  # producer batch.size (ProducerConfig, PC 381): the sticky switch threshold
NO_LEADER = -1  # sim.NO_LEADER: the producer's metadata names no leader for the partition
KEYS_TOLD = 6  # how many of its keys a metadata refresh step names


def _fmt_parts(parts: list[int]) -> str:
    return ", ".join(f"P{p}" for p in parts)


class ProducerProc:
    """One producer process: what its metadata shows and how it picks partitions."""

    def __init__(
        self,
        config: ProducerConfig,
        session: ProducerSession,
        *,
        sims: list[Sim],
        clock: Clock,
        seed: int,
        generation: Generation,
        topic: str,
    ) -> None:
        self.config = config
        self.id = config.id
        self.session = session  # the process running now (a restart replaces it)
        self.generation = generation
        self.sims = sims  # every partition of the topic so far (the run's list, which grows)
        self.clock = clock
        self.topic = topic
        self.known = len(sims)  # the partition count in its metadata
        self.keyless = KeylessPartitioner(generation, self.known, batch_size=BATCH_SIZE)
        self.rng = random.Random(f"partitioner:{seed}:{config.id}")
        self.keys: dict[str, None] = {}  # keys it has hashed, in first-sent order
        self.refresh_at: int | None = None  # its next refresh, while it misses partitions
        self.started_ms = 0  # its process start, from which metadata.max.age.ms counts
        self.now = 0  # the clock sets it when the refresh event runs

    def restart(self, session: ProducerSession) -> None:
        """The process starts again as `session`: at start it fetches the topic's metadata."""
        self.session = session
        self.known = len(self.sims)
        self.keyless = KeylessPartitioner(self.generation, self.known, batch_size=BATCH_SIZE)
        self.keys = {}
        self.refresh_at = None
        self.started_ms = session.started_ms
        pc = self.config
        if pc.transactional:
            who = (
                f"no producer id until initTransactions(), which gives transactional.id "
                f"{pc.transactional_id!r} its old producer id with a higher epoch"
            )
        elif session.pid >= 0:
            who = f"producer id {session.pid} (InitProducerId), epoch 0, every sequence from 0"
        else:
            who = "no producer id (enable.idempotence is off)"
        n = self.known
        text = (
            f"{self.id} starts again: a new process with {who}; its metadata shows {n} "
            f"partition{'s' if n != 1 else ''} of {self.topic}"
        )
        if pc.enable_idempotence:
            text += ". Brokers cannot tell its records from the old process's: a resend is a new write"
        self.sims[0].tell("producer_restart", self.id, text)

    def result(self) -> ProducerResult:
        """The contract's `producers[id]`: the session running now (or the last one)."""
        s = self.session
        return {
            "producer_id": s.pid,
            "epoch": s.epoch if s.pid >= 0 else -1,
            "transaction_state": None,  # no transactional.id runs yet (issue 12)
            "fenced": False,
            "alive": s.alive,
        }

    # ---------------------------------------------------------------------------------------
    # metadata

    def partitions_added(self, now: int) -> None:
        """The topic has new partitions: the producer sees them at its next periodic refresh."""
        if self.refresh_at is not None or not self.session.alive:
            return  # that refresh will see these too; a process that is down refreshes nothing
        age = self.config.metadata_max_age_ms
        start = self.started_ms
        self.refresh_at = now if age == 0 else start + ((now - start) // age + 1) * age
        clock = self.clock
        heapq.heappush(clock.q, (self.refresh_at, clock.tick(), self, self._periodic_refresh, ()))

    def _periodic_refresh(self) -> None:
        if self.refresh_at is not None and self.clock.now >= self.refresh_at and self.session.alive:
            self._refresh(None)

    def _refresh(self, asked: int | None) -> None:
        """A metadata update: the producer now knows every partition the topic has. `asked` is
        the partition a produce named that it did not know (None: the periodic refresh)."""
        self.refresh_at = None
        old, new = self.known, len(self.sims)
        if new == old:
            return
        self.known = new
        self.keyless.num_partitions = new
        age = self.config.metadata_max_age_ms
        if asked is None:
            why = f"The producer's metadata is as old as metadata.max.age.ms={age} allows: it refreshes it"
        else:
            why = (
                f"P{asked} is not in the producer's metadata ({old} partition{'s' if old != 1 else ''}): "
                "send() asks for a metadata update at once"
            )
        text = f"{why} and sees {new} partitions of {self.topic} (it knew {old})"
        if self.keys and not self.config.partitioner_ignore_keys:
            told = list(self.keys)[:KEYS_TOLD]
            moves = []
            for key in told:
                raw = serialize_key(key)
                assert raw is not None
                a, b = keyed_partition(raw, old), keyed_partition(raw, new)
                moves.append(f"{key!r} P{a} -> P{b}" if a != b else f"{key!r} stays on P{a}")
            more = " ..." if len(self.keys) > KEYS_TOLD else ""
            text += f". Keys now hash over {new}: {', '.join(moves)}{more}; records already written stay"
        else:
            text += f"; keys now hash over {new}"
        narrator = self.sims[0]
        narrator.now = self.clock.now
        narrator.tell("producer_metadata_refresh", self.id, text, partitions=new)

    # ---------------------------------------------------------------------------------------
    # choosing the partition

    def _view(self) -> tuple[list[int], dict[int, int]]:
        """The partitions with a leader in the producer's metadata, and each queue's length in
        batches for the partitions that have had a queue (RecordAccumulator.partitionReady)."""
        parts = self.sims[: self.known]
        available = [p for p, sim in enumerate(parts) if sim.producer_leader != NO_LEADER]
        me = self.session
        queues = {
            p: sum(1 for i in sim.unsendable if sim.batches[i].session is me)
            for p, sim in enumerate(parts)
            if me in sim.senders
        }
        return available, queues

    def choose(self, action: Any) -> int:
        """The partition this produce goes to, decided now (KafkaProducer.partition, C.1)."""
        now = self.clock.now
        if self.refresh_at is not None and self.refresh_at <= now:
            self._refresh(None)
        if action.partition is not None and action.partition >= self.known:
            self._refresh(action.partition)
        kl = self.keyless
        keyless = action.partition is None and (action.key is None or self.config.partitioner_ignore_keys)
        if action.partition is None and not keyless:
            self.keys.setdefault(action.key, None)
        # only the keyless partitioner reads the view (and the 2.4-3.2 sticky cache, which hears of
        # every new batch): a keyed record's partition is its key's hash, so skip building it
        available, queues = self._view() if keyless or kl.generation == "sticky" else ([], {})
        if keyless and kl.generation == "built-in" and kl.current is not None:
            if kl.produced_bytes >= kl.batch_size:
                # the batch that reached batch.size is closed now: the switch it deferred happens
                old, produced = kl.current, kl.produced_bytes
                kl.after_append(self.rng, 0, available, queue_only_full_batches=True, queue_lengths=queues)
                self._tell_switch(old, produced, "deferred", available, queues)
        first = kl.current is None
        p = choose_partition(
            num_partitions=self.known,
            key=action.key,
            partition=action.partition,
            ignore_keys=self.config.partitioner_ignore_keys,
            keyless=kl if keyless else None,
            rng=self.rng if keyless else None,
            available=available,
            queue_lengths=queues,
        )
        if kl.generation == "sticky":
            # 2.4-3.2: a record that would open a batch on the sticky partition moves the
            # stickiness first (DefaultPartitioner.onNewBatch); every produce here opens one
            kl.on_new_batch(self.rng, available, p)
            if keyless:
                assert kl.current is not None
                p = kl.current
        if keyless and first and kl.generation == "built-in":
            self._tell_first(p, available, queues)
        return p

    def after_produce(self, action: Any, partition: int, records: list[str]) -> None:
        """Count a keyless batch's bytes toward batch.size; switch if it is full, or at 2x."""
        kl = self.keyless
        keyless = action.partition is None and (action.key is None or self.config.partitioner_ignore_keys)
        if not keyless or kl.generation != "built-in":
            return
        nbytes = action.bytes_
        if nbytes is None:
            ts = action.timestamp_ms if action.timestamp_ms is not None else self.clock.now
            key = serialize_key(action.key)
            nbytes = batch_size_bytes([(ts, key, None if r is None else r.encode("utf-8")) for r in records])
        available, queues = self._view()
        produced = kl.produced_bytes + nbytes
        before = len(kl.switches)
        full = nbytes >= kl.batch_size
        kl.after_append(self.rng, nbytes, available, queue_only_full_batches=full, queue_lengths=queues)
        if len(kl.switches) > before:
            self._tell_switch(partition, produced, "full" if full else "twice", available, queues)

    # ---------------------------------------------------------------------------------------
    # narration

    def _how(self, available: list[int], queues: dict[int, int]) -> str:
        kl = self.keyless
        stats = load_stats(self.known, available, queues) if kl.adaptive else None
        if stats is None:
            pool = sorted(available) or list(range(self.known))
            return f"at random among {_fmt_parts(pool)}"
        parts, weights = stats
        if len(set(weights)) == 1:  # equal queues: uniform (BuiltInPartitioner keeps no load stats)
            return f"at random among {_fmt_parts(parts)}"
        shown = ", ".join(f"P{p} {w}" for p, w in zip(parts, weights, strict=True))
        return f"weighted toward shorter queues: {shown}"

    def _tell_first(self, p: int, available: list[int], queues: dict[int, int]) -> None:
        sim = self.sims[p]
        text = (
            f"No key: the built-in partitioner (KIP-794) draws the partition to stick to "
            f"({self._how(available, queues)}): P{p}. Records without a key go there until it has had "
            f"at least batch.size={self.keyless.batch_size} bytes"
        )
        sim.tell("producer_sticky_partition", self.id, text)

    def _tell_switch(
        self, old: int, produced: int, why: str, available: list[int], queues: dict[int, int]
    ) -> None:
        kl = self.keyless
        new = kl.current
        assert new is not None
        size = kl.batch_size
        reason = {
            "full": "and its batch is full",
            "deferred": "and the batch that passed batch.size is closed",
            "twice": "twice batch.size, so it switches with a batch still open",
        }[why]
        text = (
            f"P{old} has had {produced} bytes of records without a key (batch.size={size}) {reason}: "
            f"the built-in partitioner draws the next partition to stick to "
            f"({self._how(available, queues)}; it may draw the same one): P{new}"
        )
        self.sims[new].tell("producer_sticky_partition", self.id, text)
