"""The state a partition simulation keeps, actor by actor, and the constants its transitions share.

`Broker` is what one broker process knows about the partition, `Controller` the metadata log's
view of it, `Batch` one producer batch with the producer's own bookkeeping; the transitions that
change them are in engine/actors/ and engine/sim.py.
"""

from __future__ import annotations

from typing import Any

from .segments import SegmentedLog

NETWORK_DELAY_MS = 1
NO_LEADER = -1
NEVER = -(10**12)  # a time long before the scenario starts
REPLICA_SOCKET_TIMEOUT_MS = 30_000  # replica.socket.timeout.ms: a lost fetch is noticed after this
UNKNOWN = -1
MLOG_IN_SNAPSHOT = 40  # newest metadata records carried in a snapshot (the log itself is unbounded)

RETRIABLE = frozenset(
    {
        "NOT_ENOUGH_REPLICAS",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "REQUEST_TIMED_OUT",
        "NOT_LEADER_OR_FOLLOWER",
        "NETWORK_EXCEPTION",
        "LEADER_NOT_AVAILABLE",
        # retried while an earlier batch may still fill the gap (TransactionManager 959-964)
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
    }
)
FIRST_PRODUCER_ID = 1000  # the id InitProducerId gives the run's first idempotent producer session
REFRESH_METADATA = frozenset(
    {"NOT_LEADER_OR_FOLLOWER", "NETWORK_EXCEPTION", "REQUEST_TIMED_OUT", "LEADER_NOT_AVAILABLE"}
)


class ProducerSession:
    """One run of one producer process, shared by every partition it writes to: its settings, the
    producer id InitProducerId gave it (-1 without idempotence), its epoch, and whether it runs.

    A producer's restart is a new session: a new process, so (without a transactional.id) a new
    producer id, epoch 0 and sequences from 0 in every partition; the broker cannot tell its
    retries from the old session's writes (kafka-eos-kraft.md §A). Each partition keeps the
    session's next sequence there (`Sim.sequences`)."""

    __slots__ = ("id", "config", "pid", "epoch", "alive", "started_ms")

    def __init__(self, config: Any, pid: int, started_ms: int) -> None:
        self.id: str = config.id
        self.config = config  # its clients_spec.ProducerConfig
        self.pid = pid
        self.epoch = 0  # bumped by the producer itself when a broker reports a gap (KIP-360)
        self.alive = True
        self.started_ms = started_ms


class FollowerState:
    """The leader's bookkeeping about one follower (Replica.scala 30-55)."""

    __slots__ = ("leo", "last_fetch_leader_leo", "last_fetch_time", "last_caught_up", "last_gen")

    def __init__(self, now: int, in_isr: bool):
        self.leo = UNKNOWN
        self.last_gen = -1  # the follower's number of the newest fetch this leader has handled
        self.last_fetch_leader_leo = UNKNOWN
        self.last_fetch_time = now
        self.last_caught_up = now if in_isr else NEVER


class Broker:
    __slots__ = (
        "id",
        "rack",
        "status",
        "inc",
        "log",
        "hw",
        "flushed",
        "cache",
        "fetching",
        "truncated",
        "role",
        "leader_id",
        "leader_epoch",
        "partition_epoch",
        "isr",
        "maximal",
        "pending",
        "zk_fail",
        "pending_isr",
        "fstate",
        "epoch_start",
        "parked",
        "parked_fetch",
        "fetch_inflight",
        "fetch_gen",
        "registered",
        "clean_shutdown",
        "batch_offsets",
        "last_hold",
        "fetch_delay_ms",
        "answered",
        "seg",
    )

    def __init__(self, bid: int, rack: str | None):
        self.id = bid
        self.rack = rack
        self.status = "running"  # running | crashed | shutdown
        self.inc = 0  # incarnation: bumps on every stop and start; stale events check it
        self.log: list[tuple[int, str, int]] = []  # (leader epoch, record, producer batch index)
        self.hw = 0
        self.flushed = 0
        self.cache: list[list[int]] = []  # leader-epoch cache: [epoch, start offset]
        self.fetching = True
        self.truncated: list[dict[str, Any]] = []
        self.role = "none"  # leader | follower | none
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.isr: list[int] = []
        self.maximal: list[int] = []
        self.pending: str | None = None  # "expand" | "shrink" while an AlterPartition is in flight
        self.zk_fail: tuple[Any, ...] | None = None  # last failed ZooKeeper ISR write (historic profiles)
        self.pending_isr: list[int] = []
        self.fstate: dict[int, FollowerState] = {}
        self.epoch_start = 0
        self.parked: list[
            list[Any]
        ] = []  # produce purgatory: [batch, attempt, required offset, acks, expiry]
        # follower -> (fetch gen, fetch offset, parked at, wait ends at)
        self.parked_fetch: dict[int, tuple[int, int, int, int]] = {}
        self.fetch_inflight = False
        self.fetch_gen = 0
        self.registered = True
        self.clean_shutdown = False
        self.batch_offsets: dict[int, tuple[int, int]] = {}
        self.last_hold = -1
        self.fetch_delay_ms = 0  # not a Kafka config: extra time each of this follower's fetches takes
        self.answered: set[tuple[int, int]] = set()  # pre-KIP-279 epoch answers already narrated
        self.seg: SegmentedLog | None = None  # this replica's segments (part-2 scenarios only)

    @property
    def alive(self) -> bool:
        return self.status == "running"

    @property
    def leo(self) -> int:
        return len(self.log)


class Registration:
    __slots__ = ("registered", "fenced", "shutting", "inc", "last_hb", "hb_count", "epoch")

    def __init__(self) -> None:
        self.registered = True
        self.fenced = False
        self.shutting = False
        self.inc = 0
        self.last_hb = 0
        self.hb_count = 0
        self.epoch = 0  # broker epoch: the metadata-log offset of its RegisterBrokerRecord


class Controller:
    __slots__ = (
        "reg",
        "leader",
        "leader_epoch",
        "partition_epoch",
        "isr",
        "elr",
        "lke",
        "recovery",
        "unclean",
        "min_isr",
    )

    def __init__(self, brokers: list[int], replicas: list[int], unclean: bool, min_isr: int):
        self.reg = {b: Registration() for b in brokers}
        self.leader = replicas[0]
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.isr = list(replicas)
        self.elr: list[int] = []
        self.lke: list[int] = []
        self.recovery = "RECOVERED"
        self.unclean = unclean
        self.min_isr = min_isr


class Batch:
    __slots__ = (
        "index",
        "records",
        "acks",
        "acks_shown",
        "idempotent",
        "attempts",
        "attempt_id",
        "state",
        "target",
        "first_send",
        "deadline",
        "outcome",
        "error",
        "offsets",
        "done_ms",
        "retries_used",
        "key",
        "timestamp",
        "nbytes",
        "on_disk",
        "seq",
        "pepoch",
        "session",
        "action",
        "lose_response",
        # transactions (engine/transactions.py)
        "txn",
        "control",
    )

    def __init__(
        self,
        index: int,
        records: list[str],
        acks: int | str,
        acks_shown: Any,
        idempotent: bool,
        session: ProducerSession,
    ):
        self.session = session  # the producer process that sent it
        self.action: int | None = None  # the produce action's index in the scenario
        # the scenario's `lose_response`: the leader's first answer to this batch never arrives
        self.lose_response = False
        self.index = index
        self.records = records
        self.acks = acks
        self.acks_shown = acks_shown
        self.idempotent = idempotent
        self.attempts = 0
        self.attempt_id = 0
        self.state = "new"
        self.target = NO_LEADER
        self.first_send = 0
        self.deadline = 0
        self.outcome: str | None = None
        self.error: str | None = None
        self.offsets: list[int] | None = None
        self.done_ms: int | None = None
        self.retries_used = 0
        self.key: str | None = None
        self.timestamp = 0  # CreateTime of its records
        self.nbytes: int | None = None  # its size on disk; None: computed from the records
        self.on_disk: Any = None  # its segments.Batch as first written, shared by replicas at those offsets
        self.seq = -1  # an idempotent batch's base sequence (one per record); -1: none
        self.pepoch = 0  # the producer epoch its sequence belongs to
        # transactions (engine/transactions.py): a batch sent inside a transaction (the produce
        # request's transactional flag), and a transaction marker's kind ("COMMIT" / "ABORT": a
        # control batch the coordinator has a leader write; None for data)
        self.txn = False
        self.control: str | None = None


def _fmt_offsets(first: int, last: int) -> str:
    return f"offset {first}" if first == last else f"offsets {first}-{last}"


TOMBSTONE = "\u2205"  # how a tombstone (a null value, engine/compaction.py) is written for a learner


def record_label(record: str | None) -> str:
    """A record as a caption names it: a tombstone has no value, so it shows as the empty-set sign."""
    return TOMBSTONE if record is None else record


def _fmt_records(records: list[str], limit: int = 6) -> str:
    if None in records:
        if len(records) == 1:
            return "a tombstone"
        records = [record_label(r) for r in records]
    if len(records) <= limit:
        return ", ".join(records)
    return ", ".join(records[:limit]) + f", ... ({len(records)} records)"


def _fmt_cache(cache: list[list[int]]) -> str:
    return "{" + ", ".join(f"e{e}->{start}" for e, start in cache) + "}"


def _fmt_set(ids: list[int]) -> str:
    return "{" + ", ".join(str(i) for i in ids) + "}"


# Steps about a broker or the operator, which every partition's simulation emits identically; with
# several partitions they are kept once (from partition 0). Steps that carry records are per partition.
# steps of the consumers and the admin client (engine/consumers.py), not of one partition's replicas
CLIENT_KIND_PREFIXES = ("consumer_", "group_", "admin_", "txn_")  # txn_: engine/transactions.py
BROKER_LEVEL_KINDS = frozenset(
    {
        "broker_crash",
        "broker_power_loss",
        "broker_shutdown",
        "broker_restart",
        "broker_stop_fetching",
        "broker_resume_fetching",
        "broker_slow",
        "network_isolate",
        "network_heal",
        "config_set",
        "operator_ignored",
        "controller_fence_broker",
        "controller_unfence_broker",
        "controller_register_broker",
        "broker_flush",
    }
)


# Steps about the whole topic, told once by partition 0's simulation: like the broker-level ones
# they carry no partition in a several-partition run
TOPIC_KINDS = frozenset(
    {
        "admin_create_partitions",
        "producer_metadata_refresh",
        # a producer process's life: about every partition it writes to
        "producer_crash",
        "producer_close",
        "producer_restart",
    }
)
