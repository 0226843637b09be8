"""The scenario contract (version 1): parsing, validation and defaults.

A scenario is the whole input of a simulation (docs/scenario-format.md). This
module turns untrusted JSON into a `Scenario` and then into a `Config` in which every default
has been filled in from the chosen version profile, so the simulator never has to ask "was this
given?". Every problem becomes a `{"path", "message"}` pair; nothing here raises anything but
`ScenarioError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .clients_spec import (
    ASSIGNOR_CLASSES,
    DEFAULT_PRODUCER_ID,
    DEFAULT_TOPIC,
    MAX_IN_FLIGHT_IDEMPOTENT,
    RETRY_BACKOFF_MAX_MS,
    ConsumerConfig,
    ProducerConfig,
    Timing,
    assignor_short_name,
    by_duration_ns,
)
from .profiles import PROFILES, RETRIES_MAX, Profile
from .segments import INT_MAX, LONG_MAX, LogConfig

# Caps for untrusted input. Trusted callers (benchmarks, the offline pipeline) may pass their own.
MAX_ACTIONS = 500
MAX_SIM_MS = 3_600_000  # one simulated hour
# Scenarios written against part 2 (they define `producers` or `consumers`, or set a log or part-2
# timing key) may run ten simulated days: offset expiry (offsets.retention.minutes, 7 days) and
# tombstone horizons need more than a week. The engine skips idle time there; the event cap
# (MAX_EVENTS) still bounds the work. Part-1-only scenarios keep the hour: the part-1 engine steps
# through every fetch and heartbeat, so days of it would only run into the event cap.
MAX_SIM_MS_LONG = 10 * 24 * 3_600_000
MAX_STEPS = 20_000
MAX_EVENTS = 2_000_000
MAX_RECORDS_PER_PRODUCE = 1_000
# records x replicas in one run: about 60 MB of engine state at the cap (issue 9: 499 produces of
# 1,000 records on 9 replicas peaked at 1.69 GB)
MAX_RECORD_COPIES = 200_000
MAX_RECORD_CHARS = 64
MAX_BROKERS = 9
MAX_BROKER_ID = 1_000
MAX_PARTITIONS = 12  # topic.partitions and add_partitions' count
MAX_PRODUCERS = 8
MAX_CONSUMERS = 12
MAX_CLIENT_ID_CHARS = 32


@dataclass(frozen=True)
class Limits:
    max_actions: int = MAX_ACTIONS
    max_sim_ms: int = MAX_SIM_MS
    max_sim_ms_long: int = MAX_SIM_MS_LONG  # see MAX_SIM_MS_LONG for which scenarios get it
    max_steps: int = MAX_STEPS
    max_events: int = MAX_EVENTS
    max_records_per_produce: int = MAX_RECORDS_PER_PRODUCE
    max_record_copies: int = MAX_RECORD_COPIES

    def as_dict(self) -> dict[str, int]:
        return {
            "max_actions": self.max_actions,
            "max_sim_ms": self.max_sim_ms,
            "max_steps": self.max_steps,
            "max_events": self.max_events,
            "max_records_per_produce": self.max_records_per_produce,
            "max_record_copies": self.max_record_copies,
            "max_brokers": MAX_BROKERS,
            "max_record_chars": MAX_RECORD_CHARS,
            "max_sim_ms_long": self.max_sim_ms_long,
            "max_partitions": MAX_PARTITIONS,
            "max_producers": MAX_PRODUCERS,
            "max_consumers": MAX_CONSUMERS,
        }

    def sim_ms_cap(self, long: bool) -> int:
        """The simulated-time cap of one scenario: `max_sim_ms`, or for a part-2 scenario the
        larger of it and `max_sim_ms_long` (a caller that raised max_sim_ms raises both)."""
        return max(self.max_sim_ms, self.max_sim_ms_long) if long else self.max_sim_ms


DEFAULT_LIMITS = Limits()
LIMITS = DEFAULT_LIMITS.as_dict()


class ScenarioError(Exception):
    """An invalid scenario. `problems` is a list of {"path", "message"} dicts."""

    def __init__(self, problems: list[dict[str, str]]):
        super().__init__("; ".join(f"{p['path']}: {p['message']}" for p in problems))
        self.problems = problems

    def to_json(self) -> dict[str, Any]:
        return {"error": "invalid_scenario", "problems": self.problems}


def problem(path: str, message: str) -> ScenarioError:
    return ScenarioError([{"path": path, "message": message}])


# --------------------------------------------------------------------------------------------
# pydantic models of the JSON document


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


PosInt = Annotated[int, Field(ge=1)]
Ms = Annotated[int, Field(ge=1, le=MAX_SIM_MS)]
# part-2 durations are Kafka ints or longs; the simulated-time cap bounds what a run can reach
IntMs = Annotated[int, Field(ge=1, le=INT_MAX)]
LongMs = Annotated[int, Field(ge=1, le=LONG_MAX)]
# a producer's or consumer's `id` (it names the process in steps and results); references to one
# in actions are any string, checked in resolve() so a wrong name gets a message that lists the
# right ones
CLIENT_ID_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
ClientId = Annotated[str, Field(min_length=1, max_length=MAX_CLIENT_ID_CHARS, pattern=CLIENT_ID_RE)]
ClientRef = Annotated[str, Field(min_length=1, max_length=64)]
# transactional.id, group.id, group.instance.id: Kafka's non-empty strings
KafkaName = Annotated[str, Field(min_length=1, max_length=64)]


class BrokerSpec(_Strict):
    """One broker of the cluster."""

    id: Annotated[int, Field(ge=0, le=MAX_BROKER_ID)] = Field(
        description="The broker's node id (`node.id`); steps and results name the broker by it.",
        examples=[1],
    )
    rack: Annotated[str, Field(min_length=1, max_length=32)] | None = Field(
        None,
        description="The broker's rack (`broker.rack`): the striped placer spreads replicas over racks, "
        "and `power_loss` can name a rack. null: no rack.",
        examples=["a"],
    )
    # not a Kafka config: extra time each fetch of this broker takes (a slow disk or link)
    fetch_delay_ms: Annotated[int, Field(ge=0, le=60_000)] = Field(
        0,
        description="Not a Kafka config: every fetch this broker sends as a follower takes this many "
        "milliseconds longer (a slow disk or link); the `slow` action changes it during a run.",
    )


class TopicSpec(_Strict):
    """The scenario's one topic."""

    replicas: list[Annotated[int, Field(ge=0, le=MAX_BROKER_ID)]] | None = Field(
        None,
        description="The broker ids holding partition 0, preferred leader first. Only for a topic of one "
        "partition; null: the striped placer picks replication.factor brokers.",
        examples=[[1, 2, 3]],
    )
    replication_factor: Annotated[int, Field(ge=1, le=MAX_BROKERS)] | None = Field(
        None,
        alias="replication.factor",
        description="How many replicas each partition has; must equal the length of `replicas` when both "
        "are given. null: 3, or the broker count when there are fewer brokers.",
    )
    partitions: Annotated[int, Field(ge=1, le=MAX_PARTITIONS)] = Field(
        1,
        description="How many partitions the topic starts with (numbered from 0); with more than one, give "
        "replication.factor instead of replicas.",
    )
    min_insync_replicas: Annotated[int, Field(ge=1, le=MAX_BROKERS + 1)] | None = Field(
        None,
        alias="min.insync.replicas",
        description="The fewest in-sync replicas an acks=all write needs; below it the leader answers "
        "NOT_ENOUGH_REPLICAS. null: Kafka's default.",
    )
    unclean_leader_election_enable: bool | None = Field(
        None,
        alias="unclean.leader.election.enable",
        description="Whether the controller may elect a replica outside the ISR when no in-sync replica is "
        "left (data loss for availability). null: the profile's default.",
    )
    flush_messages: Annotated[int, Field(ge=1)] | None = Field(
        None,
        alias="flush.messages",
        description="The broker forces its log to disk after this many appended records; unflushed records "
        "die with the page cache on a power loss. null: Kafka's default, never (the OS writes back).",
    )
    quorum_required_acks: Annotated[int, Field(ge=1, le=MAX_BROKERS)] | None = Field(
        None,
        alias="quorum.required.acks",
        description="A proposal, not Kafka (KIP-250): an acks=all write completes once this many replicas "
        "have it. null: off (Kafka's rule).",
    )
    # part 2: the topic's name and its log settings (segments.LogConfig holds the defaults)
    name: Annotated[str, Field(max_length=300)] | None = Field(
        None,
        description="The topic's name (Kafka's topic name rules apply). null: the default name.",
        examples=["orders"],
    )
    cleanup_policy: Annotated[str, Field(max_length=40)] | None = Field(
        None,
        alias="cleanup.policy",
        description='What happens to old segments: "delete" (retention), "compact" (keep the newest record '
        'per key) or "compact,delete". null: Kafka\'s default.',
        examples=["compact"],
    )
    # 14 bytes (LegacyRecord.RECORD_OVERHEAD_V0) was Kafka's minimum before 4.0 raised it to 1 MiB;
    # smaller than the profile's minimum is accepted with a note (scenes scale sizes down)
    segment_bytes: Annotated[int, Field(ge=14, le=INT_MAX)] | None = Field(
        None,
        alias="segment.bytes",
        description="The active segment rolls before an append would make it larger than this. Values "
        "below the profile's minimum are accepted with a note in the result. null: Kafka's default.",
    )
    segment_ms: LongMs | None = Field(
        None,
        alias="segment.ms",
        description="The active segment rolls once a batch's timestamp is this much newer than the "
        "segment's first. null: Kafka's default.",
    )
    retention_ms: Annotated[int, Field(ge=-1, le=LONG_MAX)] | None = Field(
        None,
        alias="retention.ms",
        description="A closed segment whose newest record is older than this is deleted (-1: never). "
        "null: Kafka's default.",
    )
    retention_bytes: Annotated[int, Field(ge=-1, le=LONG_MAX)] | None = Field(
        None,
        alias="retention.bytes",
        description="Oldest closed segments are deleted while the partition is larger than this (-1: no "
        "size limit). null: Kafka's default.",
    )
    min_cleanable_dirty_ratio: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None,
        alias="min.cleanable.dirty.ratio",
        description="The log cleaner compacts a log once the dirty part is more than this share of it. "
        "null: Kafka's default.",
    )
    delete_retention_ms: Annotated[int, Field(ge=0, le=LONG_MAX)] | None = Field(
        None,
        alias="delete.retention.ms",
        description="How long a tombstone survives after the cleaner first passes it. null: Kafka's default.",
    )
    min_compaction_lag_ms: Annotated[int, Field(ge=0, le=LONG_MAX)] | None = Field(
        None,
        alias="min.compaction.lag.ms",
        description="A record younger than this is never compacted away. null: Kafka's default.",
    )
    max_compaction_lag_ms: LongMs | None = Field(
        None,
        alias="max.compaction.lag.ms",
        description="A dirty record older than this makes the log cleanable whatever the dirty ratio. "
        "null: Kafka's default.",
    )


class ControllerSpec(_Strict):
    """The KRaft controller's settings."""

    eligible_leader_replicas_version: Literal[0, 1] | None = Field(
        None,
        alias="eligible.leader.replicas.version",
        description="The feature level that switches eligible leader replicas (ELR, KIP-966) on (1) or "
        "off (0). null: on where the profile has ELR (4.1), else off.",
    )
    election: Literal["kafka", "largest_leo"] = Field(
        "kafka",
        description='How the controller picks a new leader: "kafka" (Kafka\'s rule: the first live replica, '
        'in replica order, that is in the ISR or ELR) or the proposal "largest_leo" (KIP-250): the one with '
        "the longest log.",
    )
    auto_leader_rebalance_enable: bool = Field(
        True,
        alias="auto.leader.rebalance.enable",
        description="The controller moves leadership back to the preferred replica every "
        "leader.imbalance.check.interval.seconds.",
    )


AcksValue = Literal["all", "-1", "0", "1", "min.insync.replicas"] | Literal[-1, 0, 1]


class ProducerSpec(_Strict):
    """Settings of the producer (part 1's single `producer`, or one entry of `producers`)."""

    acks: AcksValue | None = Field(
        None,
        description='How many replicas must have a batch before the leader answers: 0 (no answer), 1 (the '
        'leader), "all"/-1 (the ISR), or the proposal "min.insync.replicas" (KIP-926). null: the '
        "profile's default (all with idempotence).",
    )
    enable_idempotence: bool | None = Field(
        None,
        alias="enable.idempotence",
        description="The producer numbers its batches so a retry is never written twice; needs acks=all "
        "and retries > 0. null: the profile's default, switched off silently where Kafka does.",
    )
    retries: Annotated[int, Field(ge=0, le=RETRIES_MAX)] | None = Field(
        None,
        description="How many times a failed batch is sent again (within delivery.timeout.ms). null: the "
        "profile's default.",
    )
    request_timeout_ms: Ms | None = Field(
        None,
        alias="request.timeout.ms",
        description="How long the producer waits for an answer before it treats a request as failed. null: "
        "Kafka's default.",
    )
    delivery_timeout_ms: Ms | None = Field(
        None,
        alias="delivery.timeout.ms",
        description="How long after a batch is sent the producer gives up on it; at least "
        "request.timeout.ms. null: Kafka's default.",
    )
    retry_backoff_ms: Annotated[int, Field(ge=1, le=60_000)] | None = Field(
        None,
        alias="retry.backoff.ms",
        description=f"The first wait before a retry; it doubles per attempt up to {RETRY_BACKOFF_MAX_MS} ms "
        "(retry.backoff.max.ms, not a scenario key). null: Kafka's default.",
    )
    # part 2 (also accepted on the part-1 `producer` object)
    max_in_flight_requests_per_connection: Annotated[int, Field(ge=1, le=INT_MAX)] | None = Field(
        None,
        alias="max.in.flight.requests.per.connection",
        description="How many unanswered requests the producer keeps per broker; an idempotent producer "
        f"allows at most {MAX_IN_FLIGHT_IDEMPOTENT}. null: Kafka's default.",
    )
    transactional_id: KafkaName | None = Field(
        None,
        alias="transactional.id",
        description="Makes the producer transactional: it must call init_transactions and writes inside "
        "transactions; the id survives restarts and fences older instances. null: not transactional.",
        examples=["pay-tx"],
    )
    transaction_timeout_ms: IntMs | None = Field(
        None,
        alias="transaction.timeout.ms",
        description="The coordinator aborts a transaction left open this long; at most "
        "timing.transaction.max.timeout.ms. null: Kafka's default.",
    )
    partitioner_ignore_keys: bool | None = Field(
        None,
        alias="partitioner.ignore.keys",
        description="The partitioner treats keyed records like keyless ones instead of hashing the key. "
        "null: Kafka's default (false).",
    )
    # Kafka's type is a long, at least 0 (0: the metadata is always stale, refreshed at every send)
    metadata_max_age_ms: Annotated[int, Field(ge=0, le=LONG_MAX)] | None = Field(
        None,
        alias="metadata.max.age.ms",
        description="How often the producer refreshes its metadata, and so how late it learns of added "
        "partitions (0: at every send). null: Kafka's default.",
    )


class ProducerItem(ProducerSpec):
    """One entry of `producers`: a producer process."""

    id: ClientId = Field(
        description="The producer's name: actions refer to it, and steps and results use it.",
        examples=["app"],
    )


# "earliest", "latest", "none", or from Kafka 4.0 "by_duration:<ISO-8601 duration>": checked in
# resolve() (clients_spec.by_duration_ns), where the version profile is known
AutoOffsetReset = Annotated[str, Field(min_length=1, max_length=100)]


class ConsumerSpec(_Strict):
    """One entry of `consumers`: a consumer process (the classic KafkaConsumer)."""

    id: ClientId = Field(
        description="The consumer's name: actions refer to it; its group member ids are derived from it.",
        examples=["c0"],
    )
    group_id: KafkaName | None = Field(
        None,
        alias="group.id",
        description="The consumer group it joins on `subscribe` and commits to. null: no group; only "
        "`assign` and no commits.",
        examples=["g"],
    )
    auto_offset_reset: AutoOffsetReset | None = Field(
        None,
        alias="auto.offset.reset",
        description='Where to start without a committed offset: "earliest", "latest", "none" (an error) or, '
        'on 4.1, "by_duration:<ISO-8601 duration>". null: Kafka\'s default.',
        examples=["earliest", "by_duration:PT1H"],
    )
    enable_auto_commit: bool | None = Field(
        None,
        alias="enable.auto.commit",
        description="poll() commits the positions every auto.commit.interval.ms. null: Kafka's default, "
        "and false without a group.id.",
    )
    auto_commit_interval_ms: Annotated[int, Field(ge=0, le=INT_MAX)] | None = Field(
        None,
        alias="auto.commit.interval.ms",
        description="How often auto-commit commits. null: Kafka's default.",
    )
    partition_assignment_strategy: list[Annotated[str, Field(max_length=100)]] | None = Field(
        None,
        alias="partition.assignment.strategy",
        max_length=len(ASSIGNOR_CLASSES),
        description='The assignors this member supports, preferred first: "range", "roundrobin", "sticky", '
        '"cooperative-sticky" or their Java class names. null: Kafka\'s default.',
        examples=[["cooperative-sticky"]],
    )
    group_instance_id: KafkaName | None = Field(
        None,
        alias="group.instance.id",
        description="Makes the consumer a static member: a restart within session.timeout.ms gets its "
        "partitions back without a rebalance. null: a dynamic member.",
    )
    session_timeout_ms: IntMs | None = Field(
        None,
        alias="session.timeout.ms",
        description="The coordinator removes a member it has not heard from for this long; must lie "
        "within the group.min/max.session.timeout.ms of timing. null: Kafka's default.",
    )
    heartbeat_interval_ms: IntMs | None = Field(
        None,
        alias="heartbeat.interval.ms",
        description="How often the heartbeat thread reports to the coordinator; below session.timeout.ms. "
        "null: Kafka's default.",
    )
    max_poll_interval_ms: IntMs | None = Field(
        None,
        alias="max.poll.interval.ms",
        description="A member that does not call poll() for this long leaves its group; also the "
        "rebalance timeout. null: Kafka's default.",
    )
    max_poll_records: IntMs | None = Field(
        None,
        alias="max.poll.records",
        description="The most records one poll() returns. null: Kafka's default.",
    )
    isolation_level: Literal["read_uncommitted", "read_committed"] | None = Field(
        None,
        alias="isolation.level",
        description="read_committed reads only up to the last stable offset and skips aborted records. "
        "null: Kafka's default.",
    )
    loop_ms: Annotated[int, Field(ge=1, le=MAX_SIM_MS_LONG)] | None = Field(
        None,
        description="Not a Kafka config: the application calls poll() every loop_ms while subscribed (a "
        "steady poll loop). null: it polls only on `poll` actions.",
        examples=[100],
    )
    group_protocol: Literal["classic", "consumer"] | None = Field(
        None,
        alias="group.protocol",
        description='The group protocol: "classic" is simulated; "consumer" (KIP-848) is refused for now. '
        "null: classic.",
    )


class TimingSpec(_Strict):
    """Broker and controller timings."""

    replica_lag_time_max_ms: Ms | None = Field(
        None,
        alias="replica.lag.time.max.ms",
        description="A follower not caught up with the leader for this long leaves the ISR. null: the "
        "profile's default.",
    )
    replica_lag_max_messages: PosInt | None = Field(
        None,
        alias="replica.lag.max.messages",
        description="0.8 only: a follower this many records behind leaves the ISR. null: Kafka 0.8's "
        "default.",
    )
    replica_fetch_wait_max_ms: Ms | None = Field(
        None,
        alias="replica.fetch.wait.max.ms",
        description="How long a follower's fetch waits at the leader when there is nothing new; below "
        "replica.lag.time.max.ms. null: Kafka's default.",
    )
    replica_fetch_backoff_ms: Ms | None = Field(
        None,
        alias="replica.fetch.backoff.ms",
        description="How long a follower waits before fetching again after a failed fetch. null: Kafka's "
        "default.",
    )
    broker_session_timeout_ms: Ms | None = Field(
        None,
        alias="broker.session.timeout.ms",
        description="The controller fences a broker whose last heartbeat is older than this. null: Kafka's "
        "default.",
    )
    broker_heartbeat_interval_ms: Ms | None = Field(
        None,
        alias="broker.heartbeat.interval.ms",
        description="How often a broker heartbeats to the controller; below broker.session.timeout.ms. "
        "null: Kafka's default.",
    )
    unclean_leader_election_interval_ms: Ms | None = Field(
        None,
        alias="unclean.leader.election.interval.ms",
        description="How often the controller looks for offline partitions to elect uncleanly (where the "
        "profile checks periodically). null: Kafka's default.",
    )
    leader_imbalance_check_interval_seconds: Annotated[int, Field(ge=1, le=3600)] | None = Field(
        None,
        alias="leader.imbalance.check.interval.seconds",
        description="How often the controller moves leadership back to preferred replicas. null: Kafka's "
        "default.",
    )
    # part 2 (clients_spec.Timing holds the defaults)
    log_retention_check_interval_ms: LongMs | None = Field(
        None,
        alias="log.retention.check.interval.ms",
        description="How often a broker deletes segments past retention. null: Kafka's default.",
    )
    log_cleaner_backoff_ms: LongMs | None = Field(
        None,
        alias="log.cleaner.backoff.ms",
        description="How often the log cleaner looks for a log to compact. null: Kafka's default.",
    )
    group_initial_rebalance_delay_ms: Annotated[int, Field(ge=0, le=INT_MAX)] | None = Field(
        None,
        alias="group.initial.rebalance.delay.ms",
        description="A new group waits this long for more members before its first rebalance completes. "
        "null: Kafka's default.",
    )
    group_min_session_timeout_ms: IntMs | None = Field(
        None,
        alias="group.min.session.timeout.ms",
        description="The smallest session.timeout.ms the coordinator accepts; lower it to scale a scene's "
        "timeouts down. null: Kafka's default.",
    )
    group_max_session_timeout_ms: IntMs | None = Field(
        None,
        alias="group.max.session.timeout.ms",
        description="The largest session.timeout.ms the coordinator accepts. null: Kafka's default.",
    )
    offsets_topic_num_partitions: Annotated[int, Field(ge=1, le=INT_MAX)] | None = Field(
        None,
        alias="offsets.topic.num.partitions",
        description="Partitions of __consumer_offsets: a group's coordinator is the leader of the one its "
        "id hashes to. null: Kafka's default.",
    )
    offsets_retention_minutes: Annotated[int, Field(ge=1, le=INT_MAX)] | None = Field(
        None,
        alias="offsets.retention.minutes",
        description="How long an empty group's committed offsets are kept. null: Kafka's default.",
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: IntMs | None = Field(
        None,
        alias="transaction.abort.timed.out.transaction.cleanup.interval.ms",
        description="How often the transaction coordinator aborts transactions past their timeout. null: "
        "Kafka's default.",
    )
    transaction_max_timeout_ms: IntMs | None = Field(
        None,
        alias="transaction.max.timeout.ms",
        description="The largest transaction.timeout.ms a producer may ask for. null: Kafka's default.",
    )


RecordName = Annotated[str, Field(min_length=1, max_length=MAX_RECORD_CHARS)]
BrokerId = Annotated[int, Field(ge=0, le=MAX_BROKER_ID)]


PartitionNo = Annotated[int, Field(ge=0, le=MAX_PARTITIONS - 1)]
# simulated durations: bounded here only by Java's long; resolve() holds them to the scenario's
# simulated-time cap and says which cap applies
SimMs = Annotated[int, Field(ge=0, le=LONG_MAX)]
# partition number (a string, as JSON object keys are) -> offset
OffsetMap = dict[Annotated[str, Field(max_length=8)], Annotated[int, Field(ge=0, le=LONG_MAX)]]


class Produce(_Strict):
    """The producer sends one batch."""

    do: Literal["produce"] = Field(description="Send one batch of records.")
    # a null entry is a tombstone (the produce needs a key)
    records: list[RecordName | None] | None = Field(
        None,
        description="The records' values, unique across the scenario; null is a tombstone (needs a key). "
        "Give either records or count.",
        examples=[["a", "b"]],
    )
    count: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="Send this many records named m<N>, N counting every record produced before. Give "
        "either records or count.",
        examples=[3],
    )
    acks: Literal["all", "min.insync.replicas"] | Annotated[int, Field(ge=-32768, le=32767)] | None = Field(
        None,
        description="This batch's acks, any 16-bit number as a hand-built client could send (the broker "
        "decides). null: the producer's acks.",
    )
    key: Annotated[str, Field(max_length=MAX_RECORD_CHARS)] | None = Field(
        None,
        description="The records' key: the partitioner hashes it, compaction keeps the newest record per "
        "key. null: no key.",
        examples=["K1"],
    )
    partition: Annotated[int, Field(ge=0, le=MAX_PARTITIONS - 1)] | None = Field(
        None,
        description="The partition to write to. null: the producer's partitioner decides (partition 0 on "
        "a topic of one partition).",
    )
    produce_version: Annotated[int, Field(ge=0, le=11)] | None = Field(
        None,
        description="The Produce request version a client would use; accepted, and not used by the "
        "simulator.",
    )
    # part 2
    producer: ClientRef | None = Field(
        None,
        description="The id of the producer that sends it. null: the only producer (required when there "
        "are several).",
    )
    bytes_: Annotated[int, Field(ge=1, le=INT_MAX)] | None = Field(
        None,
        alias="bytes",
        description="The batch's size on disk, overheads included (segment and retention arithmetic). "
        "null: the exact size of the batch in Kafka's record format v2.",
    )
    timestamp_ms: Annotated[int, Field(ge=0, le=LONG_MAX)] | None = Field(
        None,
        description="The records' CreateTime, which segment.ms and retention.ms compare. null: the "
        "simulated now.",
    )
    lose_response: bool = Field(
        False,
        description="The leader handles the request but its first answer never arrives, so the producer "
        "times out and retries.",
    )


class Advance(_Strict):
    """Let simulated time pass."""

    do: Literal["advance"] = Field(description="Run the cluster for a while.")
    ms: SimMs = Field(description="How many milliseconds to run.", examples=[10_000])


class Settle(_Strict):
    """Run until the cluster is quiet."""

    do: Literal["settle"] = Field(
        description="Run until no produce is pending, every live fetching follower has the leader's log "
        "end and every group with live members is Stable."
    )
    max_ms: SimMs = Field(60_000, description="Stop after this many milliseconds even if not settled.")
    # not in the contract: first wait until the controller has replaced (fenced) a leader that
    # crashed, stopped or lost the controller, so a late fault plays out ("run until quiet")
    through_failover: bool = Field(
        False,
        description="First keep running while the controller still names a leader that is down or cut "
        "off, until it is replaced or the partition goes offline.",
    )


class Crash(_Strict):
    """A broker, consumer or producer process crashes (exactly one of the three)."""

    do: Literal["crash"] = Field(description="A process stops at once, without any goodbye.")
    broker: BrokerId | None = Field(None, description="The broker that crashes.")
    consumer: ClientRef | None = Field(None, description="The consumer that crashes (it sends nothing more).")
    producer: ClientRef | None = Field(
        None, description="The producer that crashes; its unanswered batches end as crashed."
    )
    lose_unflushed: bool = Field(
        False, description="Brokers only: the page cache is lost too, so records not yet flushed are gone."
    )
    # not in the contract's list: the disk is destroyed too (flushed data included); the broker
    # comes back empty, as after a disk replacement
    lose_disk: bool = Field(
        False, description="Brokers only: the disk is destroyed too; the broker restarts with an empty log."
    )


class Lifecycle(_Strict):
    """shutdown / restart of a broker, a consumer or a producer (exactly one of the three)."""

    do: Literal["shutdown", "restart"] = Field(
        description="shutdown: a clean stop (a broker moves leadership first, a client calls close()); "
        "restart: a stopped process starts again."
    )
    broker: BrokerId | None = Field(None, description="The broker to stop or start.")
    consumer: ClientRef | None = Field(None, description="The consumer to stop or start.")
    producer: ClientRef | None = Field(
        None, description="The producer to stop or start; a restart is a new process with a new producer id."
    )


class PowerLoss(_Strict):
    """Several brokers lose power at once."""

    do: Literal["power_loss"] = Field(
        description="The named brokers crash at the same instant and lose their unflushed records."
    )
    brokers: list[BrokerId] | None = Field(
        None, description="The brokers that lose power.", examples=[[1, 2]]
    )
    rack: Annotated[str, Field(min_length=1, max_length=32)] | None = Field(
        None, description="Every broker in this rack loses power. Give either brokers or rack."
    )


class BrokerAction(_Strict):
    """A follower stops or resumes fetching, or the OS writes a broker's pages to disk."""

    do: Literal["stop_fetching", "resume_fetching", "writeback"] = Field(
        description="stop_fetching / resume_fetching: the broker stays up and heartbeating but stops "
        "(resumes) fetching as a follower; writeback: the OS writes its dirty pages to disk."
    )
    broker: BrokerId = Field(description="The broker.")


Party = Literal["controller", "producer"] | BrokerId


class Slow(_Strict):
    """A straggler episode."""

    do: Literal["slow"] = Field(description="Change how much longer this broker's fetches take.")
    broker: BrokerId = Field(description="The broker.")
    ms: Annotated[int, Field(ge=0, le=60_000)] | None = Field(
        None, description="The extra time per fetch (0 ends the episode). null: back to its fetch_delay_ms."
    )


class Isolate(_Strict):
    """Cut or restore network links."""

    do: Literal["isolate", "heal"] = Field(
        description="isolate cuts the network between the broker and the parties; heal restores it."
    )
    broker: BrokerId = Field(description="The broker whose links change (up or down).")
    from_: list[Party] | None = Field(
        None,
        alias="from",
        description='The other side: "controller", "producer" or broker ids. null: everything.',
        examples=[["controller"]],
    )


class SetConfig(_Strict):
    """A dynamic topic config change."""

    do: Literal["set"] = Field(description="Change a topic config while the cluster runs.")
    key: Literal["unclean.leader.election.enable", "min.insync.replicas", "flush.messages"] = Field(
        description="The config to change."
    )
    value: bool | int | None = Field(
        description="The new value: true/false, a whole number, or null (flush.messages only: never)."
    )


class Elect(_Strict):
    """An admin leader election."""

    do: Literal["elect"] = Field(
        description="Ask the controller for an election, as kafka-leader-election.sh does."
    )
    type: Literal["unclean", "preferred"] = Field(
        description="unclean: any live replica may become leader whatever the topic config; preferred: "
        "move leadership to the first replica."
    )


# ---- part 2: transactions, consumers, topic administration


# the calls of the transactional producer API, as actions (engine/transactions.py runs them)
TXN_ACTIONS = frozenset(
    {"init_transactions", "begin_transaction", "commit_transaction", "abort_transaction",
     "send_offsets_to_transaction"}
)


class TransactionAction(_Strict):
    """A call of the transactional producer API."""

    do: Literal["init_transactions", "begin_transaction", "commit_transaction", "abort_transaction"] = Field(
        description="initTransactions() (get the producer id and a new epoch, fencing older instances), "
        "beginTransaction(), commitTransaction() or abortTransaction()."
    )
    producer: ClientRef | None = Field(
        None,
        description="The transactional producer. null: the only producer (required when there are several).",
    )


class SendOffsetsToTransaction(_Strict):
    """Not in the contract's action table, added for KIP-447 (issue 12, engine/transactions.py):
    `producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata())`. `consumer` is the
    consumer whose group metadata (group id, member id, generation) goes with the offsets;
    `offsets` (`{"0": 5}`) defaults to that consumer's positions. The offsets become the group's
    committed offsets only when the transaction commits; a stale generation is fenced."""

    do: Literal["send_offsets_to_transaction"] = Field(
        description="sendOffsetsToTransaction(): the consumer's offsets are committed only if the "
        "transaction commits (KIP-447)."
    )
    producer: ClientRef | None = Field(
        None,
        description="The transactional producer. null: the only producer (required when there are several).",
    )
    consumer: ClientRef = Field(
        description="The consumer whose group metadata (group, member id, generation) goes with the offsets."
    )
    offsets: OffsetMap | None = Field(
        None,
        description="Partition number (as a string) to the offset to commit. null: the consumer's positions.",
        examples=[{"0": 5}],
    )


class Subscribe(_Strict):
    """A consumer subscribes."""

    do: Literal["subscribe"] = Field(
        description="subscribe(): the consumer starts if it is not running and joins its group."
    )
    consumer: ClientRef = Field(description="The consumer (it needs a group.id).")
    topics: list[Annotated[str, Field(max_length=300)]] | None = Field(
        None, description="The topics, which can only be the scenario's topic. null: the topic."
    )


class Assign(_Strict):
    """A consumer takes partitions itself."""

    do: Literal["assign"] = Field(description="assign(): manual assignment, no group.")
    consumer: ClientRef = Field(description="The consumer.")
    partitions: list[PartitionNo] = Field(description="The partitions it reads.", examples=[[0]])


class Poll(_Strict):
    """One poll() call."""

    do: Literal["poll"] = Field(
        description="poll(timeout): the cluster runs until the call returns records or the timeout "
        "passes; inside it the consumer joins its group, fetches and auto-commits."
    )
    consumer: ClientRef = Field(description="The consumer.")
    max_records: Annotated[int, Field(ge=1, le=INT_MAX)] | None = Field(
        None, description="The most records this call returns. null: the consumer's max.poll.records."
    )
    timeout_ms: SimMs = Field(1_000, description="How long poll() may wait for records.")


class Commit(_Strict):
    """A consumer commits offsets."""

    do: Literal["commit"] = Field(description="commitSync() (or commitAsync()) to the consumer's group.")
    consumer: ClientRef = Field(description="The consumer (it needs a group.id).")
    offsets: OffsetMap | None = Field(
        None,
        description="Partition number (as a string) to the offset to commit. null: the current positions.",
        examples=[{"0": 3}],
    )
    async_: bool = Field(False, alias="async", description="commitAsync() instead of commitSync().")


class Seek(_Strict):
    """A consumer moves its position."""

    do: Literal["seek"] = Field(description="seek(): set where the consumer reads next in one partition.")
    consumer: ClientRef = Field(description="The consumer.")
    partition: PartitionNo = Field(description="The partition.")
    offset: Annotated[int, Field(ge=0, le=LONG_MAX)] | Literal["beginning", "end"] = Field(
        description='The new position: an offset, "beginning" or "end".', examples=[0, "beginning"]
    )


class Stall(_Strict):
    """A consumer's application is busy."""

    do: Literal["stall"] = Field(
        description="The application does not call poll() for a while; the heartbeat thread keeps running."
    )
    consumer: ClientRef = Field(description="The consumer.")
    ms: Annotated[int, Field(ge=1, le=LONG_MAX)] = Field(description="How long the application is busy.")


class AddPartitions(_Strict):
    """The topic grows."""

    do: Literal["add_partitions"] = Field(
        description="kafka-topics --alter --partitions: new, empty partitions; records already written stay."
    )
    count: Annotated[int, Field(ge=1, le=INT_MAX)] = Field(  # the new total; resolve() checks the cap
        description="The new total number of partitions (more than now)."
    )


class DeleteRecords(_Strict):
    """The admin deleteRecords call."""

    do: Literal["delete_records"] = Field(
        description="deleteRecords(): move a partition's log start offset forward."
    )
    partition: PartitionNo = Field(description="The partition.")
    # -1 is DeleteRecordsRequest.HIGH_WATERMARK: delete everything below the high watermark
    offset: Annotated[int, Field(ge=-1, le=LONG_MAX)] = Field(
        description="Delete every record below this offset; -1: below the high watermark."
    )


_ACTION_MODELS = (
    Produce,
    Advance,
    Settle,
    Crash,
    PowerLoss,
    Lifecycle,
    BrokerAction,
    Slow,
    Isolate,
    SetConfig,
    Elect,
    TransactionAction,
    SendOffsetsToTransaction,
    Subscribe,
    Assign,
    Poll,
    Commit,
    Seek,
    Stall,
    AddPartitions,
    DeleteRecords,
)
Action = Annotated[
    Produce
    | Advance
    | Settle
    | Crash
    | PowerLoss
    | Lifecycle
    | BrokerAction
    | Slow
    | Isolate
    | SetConfig
    | Elect
    | TransactionAction
    | SendOffsetsToTransaction
    | Subscribe
    | Assign
    | Poll
    | Commit
    | Seek
    | Stall
    | AddPartitions
    | DeleteRecords,
    Field(discriminator="do"),
]


class Scenario(_Strict):
    """One simulation: the cluster, the clients and the actions to run."""

    version: Literal[1] = Field(1, description="The format's version; 1 is the only one.")
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = Field(
        0,
        description="Seeds the run's random choices (heartbeat phases, the keyless partitioner): the same "
        "scenario and seed give the same result.",
    )
    kafka_version: Literal["0.8", "0.10", "1.1", "3.6", "4.1"] = Field(
        "4.1",
        description="The behaviour profile: which Kafka release's rules and defaults the run follows.",
    )
    brokers: list[BrokerSpec] | None = Field(
        None,
        description=f"The cluster's brokers (1 to {MAX_BROKERS}). null: brokers 1, 2 and 3 without racks.",
    )
    topic: TopicSpec = Field(default_factory=TopicSpec, description="The one topic and its configs.")
    controller: ControllerSpec = Field(
        default_factory=ControllerSpec, description="The controller's settings."
    )
    producer: ProducerSpec = Field(
        default_factory=ProducerSpec,
        description='The one producer, named "producer"; give producers instead for several.',
    )
    timing: TimingSpec = Field(
        default_factory=TimingSpec, description="Broker, controller and coordinator timings."
    )
    # part 2: the client processes (their caps are checked in resolve(), with the caps stated)
    producers: list[ProducerItem] | None = Field(
        None,
        description=f"Several producer processes, each with an id (at most {MAX_PRODUCERS}); not together "
        "with producer. null: the one producer.",
    )
    consumers: list[ConsumerSpec] | None = Field(
        None, description=f"Consumer processes, each with an id (at most {MAX_CONSUMERS}). null: none."
    )
    actions: list[Action] = Field(
        default_factory=list,
        description="What happens, in order: each object's `do` names the action (see the action tables).",
    )

    @field_validator("brokers")
    @classmethod
    def _brokers_nonempty(cls, v: list[BrokerSpec] | None) -> list[BrokerSpec] | None:
        if v is not None and not (1 <= len(v) <= MAX_BROKERS):
            raise ValueError(f"a cluster has 1 to {MAX_BROKERS} brokers")
        return v


# --------------------------------------------------------------------------------------------
# the resolved configuration the simulator runs on


@dataclass
class Config:
    """A scenario with every default filled in. The flat producer fields (acks ... retry_backoff_max_ms)
    are those of `producers[0]`, as part 1's single producer had them."""

    profile: Profile
    seed: int
    brokers: list[tuple[int, str | None]]
    fetch_delays: dict[int, int]
    replicas: list[int]
    min_isr: int
    unclean: bool
    flush_messages: int | None
    quorum_acks: int | None  # KIP-250 proposal
    elr: bool
    largest_leo_election: bool  # KIP-250 proposal
    auto_rebalance: bool
    acks: int | str  # -1, 0, 1, or "min_isr" (KIP-926 proposal)
    idempotent: bool
    retries: int
    request_timeout_ms: int
    delivery_timeout_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    lag_time_ms: int
    lag_max_messages: int
    fetch_wait_ms: int
    fetch_backoff_ms: int
    session_timeout_ms: int
    heartbeat_ms: int
    unclean_interval_ms: int
    rebalance_interval_ms: int
    actions: list[Any]
    proposals: list[str] = field(default_factory=list)
    assignments: list[list[int]] = field(default_factory=list)  # replicas of every partition
    # ---- part 2 (scenario-contract-clients.md); a part-1 scenario gets the defaults
    topic_name: str = DEFAULT_TOPIC
    log: LogConfig = field(default_factory=LogConfig)  # the topic's log settings, for segments.py
    timing: Timing = field(default_factory=Timing)  # part-2 broker timings
    producers: tuple[ProducerConfig, ...] = ()  # in scenario order; part 1's `producer` is ("producer",)
    consumers: tuple[ConsumerConfig, ...] = ()  # in scenario order
    # replicas of the partitions add_partitions creates, in partition order (partition
    # len(assignments) + k), placed by the same striped placer
    added_assignments: list[list[int]] = field(default_factory=list)
    max_sim_ms: int = MAX_SIM_MS  # this scenario's simulated-time cap (Limits.sim_ms_cap)
    notes: list[str] = field(default_factory=list)  # what the result's `notes` should say
    # the scenario uses part 2 (clients, log settings or their actions): the simulator keeps
    # segments and reports the contract's part-2 result fields
    part2: bool = False


_ACTION_TAGS = frozenset(
    tag for model in _ACTION_MODELS for tag in get_args(model.model_fields["do"].annotation)
)


def _is_union_branch(part: str) -> bool:
    """pydantic names the branch of a union it tried (literal[...], int, constrained-int, ...)."""
    return part.startswith(("function-", "literal[", "constrained-", "list[", "nullable[")) or part in {
        "int",
        "str",
        "bool",
        "float",
        "none",
    }


def _loc_to_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _ACTION_TAGS and out.endswith("]"):
            continue  # the discriminated union's tag is already in the action itself
        elif _is_union_branch(part):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "$"


def _clean_message(msg: str) -> str:
    msg = msg.replace("Input should be", "must be").replace("Extra inputs are not permitted", "unknown field")
    if msg.startswith("String should match pattern") and CLIENT_ID_RE in msg:
        return "an id is letters, digits, '.', '_' and '-', starting with a letter or a digit"
    if msg.startswith("Input tag "):
        tag = msg.split("'")[1] if "'" in msg else "?"
        return f"unknown action {tag!r}; known actions: {', '.join(sorted(_ACTION_TAGS))}"
    return msg


def parse(data: Any, limits: Limits = DEFAULT_LIMITS) -> Scenario:
    """Validate a JSON value (already decoded) as a scenario."""
    if not isinstance(data, dict):
        raise problem("$", "a scenario is a JSON object")
    actions = data.get("actions")
    if isinstance(actions, list) and len(actions) > limits.max_actions:
        raise problem("actions", f"{len(actions)} actions is more than the limit of {limits.max_actions}")
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as exc:
        by_path: dict[str, list[str]] = {}
        for err in exc.errors(include_url=False):
            path = _loc_to_path(err["loc"])
            msg = _clean_message(err["msg"])
            msgs = by_path.setdefault(path, [])
            if msg not in msgs:
                msgs.append(msg)
        # a union field reports one message per branch: say them as alternatives
        problems = [{"path": path, "message": "; or ".join(msgs)} for path, msgs in by_path.items()]
        raise ScenarioError(problems[:50]) from None
    return sc


def parse_json_text(text: str | bytes, limits: Limits = DEFAULT_LIMITS) -> Scenario:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise problem("$", f"not valid JSON: {exc}") from None
    return parse(data, limits)


def _acks_number(value: Any) -> int | str:
    if value in ("all", "-1", -1):
        return -1
    if value in ("0", 0):
        return 0
    if value in ("1", 1):
        return 1
    if value == "min.insync.replicas":
        return "min_isr"
    return int(value)


Problems = list[dict[str, str]]


def _dc_default(cls: type, name: str) -> Any:
    """A dataclass field's default: the one place a part-2 default is written down."""
    return next(f.default for f in fields(cls) if f.name == name)


def _given(spec: BaseModel, cls: type) -> dict[str, Any]:
    """The values `spec` was given for `cls`'s fields (same names), nulls left to `cls`'s defaults."""
    return {f.name: v for f in fields(cls) if (v := getattr(spec, f.name, None)) is not None}


def _resolve_producer(p: ProducerSpec, pid: str, path: str, prof: Profile, bad: Any) -> ProducerConfig:
    """One producer's settings as `KafkaProducer`'s constructor settles them: part 1's `producer`
    (path "producer") and every entry of `producers` (path "producers[i]") go through here."""
    txn = p.transactional_id
    # a transactional.id asks for idempotence when enable.idempotence is not given (0.11-2.x:
    # idempotenceEnabled() was true with transactions; 3.0+: on by default anyway)
    implied = p.enable_idempotence is None and txn is not None
    asks = p.enable_idempotence or implied
    # With enable.idempotence=true and acks or retries left unset, the client picks acks=all and
    # retries=Integer.MAX_VALUE itself (KafkaProducer.configureAcks / configureRetries, 0.11-2.x);
    # from 2.1 and 3.0 those are the defaults anyway.
    acks_raw = p.acks if p.acks is not None else ("all" if asks else prof.acks_default)
    acks = _acks_number(acks_raw)
    if p.enable_idempotence and not prof.idempotence_available:
        bad(
            f"{path}.enable.idempotence",
            f"the idempotent producer does not exist in Kafka {prof.version} (it arrived in 0.11)",
        )
    if txn is not None and not prof.idempotence_available:
        bad(
            f"{path}.transactional.id",
            f"transactions do not exist in Kafka {prof.version} (they arrived in 0.11)",
        )
    if p.enable_idempotence and acks != -1:
        bad(
            f"{path}.enable.idempotence",
            "Must set acks to all in order to use the idempotent producer (Kafka's ConfigException)",
        )
    retries = p.retries if p.retries is not None else (RETRIES_MAX if asks else prof.retries_default)
    if p.enable_idempotence and retries == 0:
        bad(f"{path}.retries", "the idempotent producer needs retries > 0")
    in_flight = p.max_in_flight_requests_per_connection
    if in_flight is None:
        in_flight = _dc_default(ProducerConfig, "max_in_flight_requests_per_connection")
    if p.enable_idempotence and in_flight > MAX_IN_FLIGHT_IDEMPOTENT:
        bad(
            f"{path}.max.in.flight.requests.per.connection",
            f"Must set max.in.flight.requests.per.connection to at most {MAX_IN_FLIGHT_IDEMPOTENT} to use "
            "the idempotent producer (Kafka's ConfigException)",
        )
    if p.enable_idempotence is None:
        # defaulted idempotence is silently switched off when acks is not all (ProducerConfig 556-598)
        idempotent = (prof.idempotence_default or implied) and acks == -1 and retries > 0
        if idempotent and in_flight > MAX_IN_FLIGHT_IDEMPOTENT:
            if prof.idempotence_refuses_max_in_flight:
                bad(
                    f"{path}.max.in.flight.requests.per.connection",
                    f"idempotence is on by default, and from Kafka 4.0 the client refuses more than "
                    f"{MAX_IN_FLIGHT_IDEMPOTENT} in-flight requests with it (KAFKA-17927); set at most "
                    f"{MAX_IN_FLIGHT_IDEMPOTENT}, or enable.idempotence=false",
                )
            idempotent = False  # before 4.0: silently switched off
    else:
        idempotent = p.enable_idempotence
    if txn is not None and prof.idempotence_available and not idempotent:
        why = (
            "enable.idempotence is false"
            if p.enable_idempotence is False
            else "acks is not all"
            if acks != -1
            else "retries is 0"
            if retries == 0
            else f"max.in.flight.requests.per.connection is above {MAX_IN_FLIGHT_IDEMPOTENT}"
        )
        bad(
            f"{path}.transactional.id",
            f"Cannot set a transactional.id without also enabling idempotence (Kafka's ConfigException; "
            f"here {why})",
        )
    request_timeout = p.request_timeout_ms or _dc_default(ProducerConfig, "request_timeout_ms")
    delivery_timeout = p.delivery_timeout_ms or _dc_default(ProducerConfig, "delivery_timeout_ms")
    if delivery_timeout < request_timeout:
        bad(f"{path}.delivery.timeout.ms", "delivery.timeout.ms must be at least request.timeout.ms")
    return ProducerConfig(
        **{
            **_given(p, ProducerConfig),  # the settings taken as given
            "id": pid,
            "acks": acks,
            "enable_idempotence": idempotent,
            "retries": retries,
            "request_timeout_ms": request_timeout,
            "delivery_timeout_ms": delivery_timeout,
        }
    )


def _resolve_producers(sc: Scenario, prof: Profile, bad: Any) -> list[ProducerConfig]:
    if sc.producers is None:
        return [_resolve_producer(sc.producer, DEFAULT_PRODUCER_ID, "producer", prof, bad)]
    if "producer" in sc.model_fields_set:
        bad(
            "producer",
            'give either producer (one producer, whose id is "producer") or producers (a list of '
            "producers, each with its own id), not both",
        )
    if not sc.producers:
        bad(
            "producers",
            'producers needs at least one producer; leave it out for one producer named "producer"',
        )
    if len(sc.producers) > MAX_PRODUCERS:
        bad("producers", f"{len(sc.producers)} producers is more than the limit of {MAX_PRODUCERS}")
        return []
    _unique_ids("producers", [p.id for p in sc.producers], bad)
    return [_resolve_producer(p, p.id, f"producers[{i}]", prof, bad) for i, p in enumerate(sc.producers)]


def _unique_ids(where: str, ids: list[str], bad: Any) -> None:
    seen: set[str] = set()
    for i, pid in enumerate(ids):
        if pid in seen:
            bad(f"{where}[{i}].id", f"id {pid!r} is used twice; every {where[:-1]} needs its own id")
        seen.add(pid)


def _resolve_timing(tm: TimingSpec, bad: Any) -> Timing:
    timing = Timing(**_given(tm, Timing))
    if timing.group_min_session_timeout_ms > timing.group_max_session_timeout_ms:
        bad(
            "timing.group.min.session.timeout.ms",
            "group.min.session.timeout.ms must not be larger than group.max.session.timeout.ms",
        )
    return timing


def _resolve_auto_offset_reset(value: str, path: str, prof: Profile, bad: Any) -> int | None:
    """auto.offset.reset as the consumer's constructor validates it: the duration of a
    by_duration value in nanoseconds, or None. A value the profile's client refuses is a problem
    at `path`, in Kafka's words (ConfigException)."""
    kafka_says = (
        "The value must be either 'earliest', 'latest', 'none' or of the format "
        "'by_duration:<PnDTnHnMn.nS.>' (Kafka's ConfigException)"
    )
    try:
        ns = by_duration_ns(value)
    except ValueError as exc:
        bad(path, f'{exc}. {kafka_says}; e.g. "by_duration:PT1H" (one hour) or "by_duration:P1D"')
        return None
    if ns is not None and not prof.by_duration_reset:
        bad(
            path,
            f"{value!r} needs Kafka 4.0 (KIP-1106, auto.offset.reset=by_duration); Kafka "
            f"{prof.version}'s consumer refuses it: Invalid value {value} for configuration "
            "auto.offset.reset: String must be one of: latest, earliest, none (ConfigException). "
            'Use "earliest" or "latest", or the 4.1 profile',
        )
        return None
    return ns


def _resolve_consumer(c: ConsumerSpec, path: str, timing: Timing, prof: Profile, bad: Any) -> ConsumerConfig:
    given = _given(c, ConsumerConfig)
    if c.auto_offset_reset is not None:
        ns = _resolve_auto_offset_reset(c.auto_offset_reset, f"{path}.auto.offset.reset", prof, bad)
        if ns is not None:
            given["reset_duration_ns"] = ns
    if c.group_protocol == "consumer":
        bad(
            f"{path}.group.protocol",
            'group.protocol "consumer" (KIP-848, the new consumer group protocol) is not built yet; '
            'use "classic", the default in Kafka 4.x',
        )
    if c.partition_assignment_strategy is not None:
        names: list[str] = []
        for j, name in enumerate(c.partition_assignment_strategy):
            short = assignor_short_name(name)
            if short is None:
                bad(
                    f"{path}.partition.assignment.strategy[{j}]",
                    f"unknown assignor {name!r}; use {', '.join(ASSIGNOR_CLASSES)} or their class names "
                    f"(e.g. {ASSIGNOR_CLASSES['range']})",
                )
            elif short in names:
                bad(
                    f"{path}.partition.assignment.strategy[{j}]",
                    f"{name!r} names the {short} assignor twice",
                )
            else:
                names.append(short)
        given["partition_assignment_strategy"] = tuple(names)
    if c.group_id is None:
        # ConsumerConfig.maybeOverrideEnableAutoCommit: no group, no auto-commit
        if c.enable_auto_commit:
            bad(
                f"{path}.enable.auto.commit",
                "enable.auto.commit cannot be set to true when default group id (null) is used (Kafka's "
                "InvalidConfigurationException); give the consumer a group.id",
            )
        given["enable_auto_commit"] = False
        if c.group_instance_id is not None:
            bad(
                f"{path}.group.instance.id",
                "group.instance.id makes a static group member; it needs a group.id",
            )
    else:
        if c.partition_assignment_strategy == []:
            bad(
                f"{path}.partition.assignment.strategy",
                "Must configure at least one partition assigner class name to partition.assignment.strategy "
                "configuration property (Kafka's IllegalStateException)",
            )
    cfg = ConsumerConfig(**given)
    if cfg.group_id is not None:
        if cfg.heartbeat_interval_ms >= cfg.session_timeout_ms:
            bad(
                f"{path}.heartbeat.interval.ms",
                "Heartbeat must be set lower than the session timeout (Kafka's IllegalArgumentException): "
                f"heartbeat.interval.ms {cfg.heartbeat_interval_ms} >= "
                f"session.timeout.ms {cfg.session_timeout_ms}",
            )
        low, high = timing.group_min_session_timeout_ms, timing.group_max_session_timeout_ms
        if not low <= cfg.session_timeout_ms <= high:
            bad(
                f"{path}.session.timeout.ms",
                "the broker answers this consumer's JoinGroup with INVALID_SESSION_TIMEOUT: "
                f"session.timeout.ms must be from group.min.session.timeout.ms ({low}) to "
                f"group.max.session.timeout.ms ({high}); set those in timing to scale a scene's timeouts",
            )
    return cfg


def _resolve_consumers(
    sc: Scenario, timing: Timing, producer_ids: list[str], prof: Profile, bad: Any
) -> list[ConsumerConfig]:
    if sc.consumers is None:
        return []
    if len(sc.consumers) > MAX_CONSUMERS:
        bad("consumers", f"{len(sc.consumers)} consumers is more than the limit of {MAX_CONSUMERS}")
        return []
    _unique_ids("consumers", [c.id for c in sc.consumers], bad)
    for i, c in enumerate(sc.consumers):
        if c.id in producer_ids:
            bad(f"consumers[{i}].id", f"{c.id!r} is also a producer's id; give each process its own id")
    return [_resolve_consumer(c, f"consumers[{i}]", timing, prof, bad) for i, c in enumerate(sc.consumers)]


# Kafka's internal topics, which the engine models itself
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__cluster_metadata")
_TOPIC_NAME_RE = re.compile(r"[a-zA-Z0-9._-]+")


def _topic_name_problem(name: str) -> str | None:
    """org.apache.kafka.common.internals.Topic.validate, in its own words."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > 249:
        return f"Topic name is illegal, it can't be longer than 249 characters ({len(name)})"
    if not _TOPIC_NAME_RE.fullmatch(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, '
            "'.', '_' and '-'"
        )
    if name in INTERNAL_TOPICS:
        return (
            f"{name} is one of Kafka's internal topics, which the engine models itself; "
            "name the topic otherwise"
        )
    return None


def _resolve_log(t: TopicSpec, prof: Profile, bad: Any, notes: list[str]) -> LogConfig:
    given = _given(t, LogConfig)
    if t.cleanup_policy is not None:
        parts = [part.strip() for part in t.cleanup_policy.split(",")]
        if set(parts) - {"delete", "compact"} or len(set(parts)) != len(parts):
            bad(
                "topic.cleanup.policy",
                f'{t.cleanup_policy!r} is not a cleanup policy; use "delete", "compact" or "compact,delete"',
            )
            given.pop("cleanup_policy")
        else:
            given["cleanup_policy"] = "compact,delete" if len(parts) == 2 else parts[0]
    log = LogConfig(**given)
    if log.min_compaction_lag_ms > log.max_compaction_lag_ms:
        bad(
            "topic.min.compaction.lag.ms",
            f"conflict topic config setting max.compaction.lag.ms ({log.max_compaction_lag_ms}) < "
            f"min.compaction.lag.ms ({log.min_compaction_lag_ms}) (Kafka's InvalidConfigurationException)",
        )
    if log.segment_bytes < prof.min_segment_bytes:
        notes.append(
            f"topic.segment.bytes={log.segment_bytes} is below Kafka {prof.version}'s minimum of "
            f"{prof.min_segment_bytes} bytes; the simulator accepts it so that a scene can scale sizes down"
        )
    return log


# part-2 keys that make a scenario a "long" one (Limits.sim_ms_cap): log settings and timings
_LOG_KEYS = frozenset(f.name for f in fields(LogConfig))
_TIMING_KEYS = frozenset(f.name for f in fields(Timing))


_PART2_ACTIONS = frozenset(
    {"subscribe", "assign", "poll", "commit", "seek", "stall", "add_partitions", "delete_records"}
) | TXN_ACTIONS  # transactions: their result fields are part 2's


def uses_long_time(sc: Scenario) -> bool:
    """True when the scenario may run MAX_SIM_MS_LONG: it defines producers or consumers, or sets
    a log setting of the topic (segments, retention, compaction) or a part-2 timing."""
    return (
        sc.producers is not None
        or sc.consumers is not None
        or bool(sc.topic.model_fields_set & _LOG_KEYS)
        or bool(sc.timing.model_fields_set & _TIMING_KEYS)
    )


def _check_transactional_calls(actions: list[Any], producers: list[ProducerConfig], bad: Any) -> None:
    """The order of a transactional producer's calls, as its application makes them (Kafka's
    TransactionManager throws IllegalStateException otherwise): initTransactions() once per
    process, then begin / send... / commit or abort; a send only inside a transaction. What
    happens at run time (a fence, a timeout) is the engine's: a call the application makes in the
    right order may still fail there, with Kafka's error in `transactions`."""
    by_id = {pc.id: pc for pc in producers}
    state: dict[str, str] = {pc.id: "new" for pc in producers if pc.transactional}
    for i, a in enumerate(actions):
        name = getattr(a, "producer", None)
        if name is None and (a.do == "produce" or a.do in TXN_ACTIONS):
            name = producers[0].id if len(producers) == 1 else None
        pc = by_id.get(name) if name is not None else None
        if pc is None or not pc.transactional:
            continue
        path = f"actions[{i}]"
        now = state[pc.id]
        if a.do == "restart":
            state[pc.id] = "new"
        elif a.do == "init_transactions":
            if now != "new":
                bad(path, f"producer {pc.id!r} already called initTransactions() in this process")
            state[pc.id] = "ready"
        elif now == "new" and (a.do == "produce" or a.do in TXN_ACTIONS):
            bad(path, f"producer {pc.id!r} has a transactional.id: call init_transactions first")
        elif a.do == "begin_transaction":
            if now == "in":
                bad(path, f"producer {pc.id!r} is already in a transaction: commit or abort it first")
            state[pc.id] = "in"
        elif a.do in ("produce", "send_offsets_to_transaction") and now != "in":
            bad(path, f"a transactional producer sends only inside a transaction: begin_transaction first "
                f"(producer {pc.id!r})")
        elif a.do in ("commit_transaction", "abort_transaction"):
            state[pc.id] = "done"


def resolve(sc: Scenario, limits: Limits = DEFAULT_LIMITS) -> Config:
    """Fill every default from the version profile and check what pydantic cannot."""
    prof = PROFILES[sc.kafka_version]
    problems: list[dict[str, str]] = []
    notes: list[str] = []

    def bad(path: str, message: str) -> None:
        problems.append({"path": path, "message": message})

    brokers = [(b.id, b.rack) for b in sc.brokers] if sc.brokers else [(1, None), (2, None), (3, None)]
    ids = [b for b, _ in brokers]
    if len(set(ids)) != len(ids):
        bad("brokers", "broker ids must be unique")
    id_set = set(ids)

    t = sc.topic
    if (
        t.replicas is not None
        and t.replication_factor is not None
        and len(t.replicas) != t.replication_factor
    ):
        bad("topic.replication.factor", "replication.factor must equal the length of topic.replicas")
    rf_for_layout = 0
    if t.replicas is not None and t.partitions > 1:
        bad(
            "topic.replicas",
            "with several partitions give topic.replication.factor and let the striped "
            "placer assign every partition",
        )
    if t.replicas is not None:
        replicas = list(t.replicas)
        if not replicas:
            bad("topic.replicas", "a partition needs at least one replica")
        if len(set(replicas)) != len(replicas):
            bad("topic.replicas", "a broker can hold only one replica of a partition")
        for i, r in enumerate(replicas):
            if r not in id_set:
                bad(f"topic.replicas[{i}]", f"broker {r} is not in the cluster")
    else:
        rf = t.replication_factor if t.replication_factor is not None else min(3, len(brokers))
        if rf > len(brokers):
            bad(
                "topic.replication.factor",
                f"replication factor {rf} is larger than the number of brokers ({len(brokers)})",
            )
            replicas = ids
        else:
            replicas = striped_placement(brokers, rf)
            rf_for_layout = rf
    assignments = [replicas] + [striped_placement(brokers, rf_for_layout, p) for p in range(1, t.partitions)]

    topic_name = t.name if t.name is not None else DEFAULT_TOPIC
    if (why := _topic_name_problem(topic_name)) is not None:
        bad("topic.name", why)
    log = _resolve_log(t, prof, bad, notes)

    min_isr = t.min_insync_replicas if t.min_insync_replicas is not None else 1
    unclean = t.unclean_leader_election_enable
    if unclean is None:
        unclean = prof.unclean_default

    c = sc.controller
    elr_version = c.eligible_leader_replicas_version
    if elr_version is None:
        elr_version = 1 if prof.elr_available else 0
    if elr_version == 1 and not prof.elr_available:
        bad(
            "controller.eligible.leader.replicas.version",
            f"Kafka {prof.version} has no eligible leader replicas (ELR arrived in 4.0)",
        )

    producers = _resolve_producers(sc, prof, bad)
    producer_ids = [p.id for p in producers]

    tm = sc.timing
    lag = tm.replica_lag_time_max_ms or prof.lag_time_default_ms
    fetch_wait = tm.replica_fetch_wait_max_ms or 500
    if fetch_wait >= lag:
        bad("timing.replica.fetch.wait.max.ms", "must be smaller than replica.lag.time.max.ms")
    session = tm.broker_session_timeout_ms or 9_000
    heartbeat = tm.broker_heartbeat_interval_ms or 2_000
    if heartbeat >= session:
        bad("timing.broker.heartbeat.interval.ms", "must be smaller than broker.session.timeout.ms")
    timing = _resolve_timing(tm, bad)

    consumers = _resolve_consumers(sc, timing, producer_ids, prof, bad)
    consumer_ids = [c.id for c in consumers]

    proposals: list[str] = []
    if t.quorum_required_acks is not None or c.election == "largest_leo":
        proposals.append("KIP-250")
        if t.quorum_required_acks is not None and t.quorum_required_acks > len(replicas):
            bad("topic.quorum.required.acks", "quorum.required.acks cannot exceed the replication factor")
    if any(p.acks == "min_isr" for p in producers):
        proposals.append("KIP-926")

    long = uses_long_time(sc)
    sim_cap = limits.sim_ms_cap(long)
    cap_hint = (
        ""
        if long or limits.max_sim_ms_long <= limits.max_sim_ms
        else f" ({limits.max_sim_ms_long} ms for a scenario with producers, consumers or log settings)"
    )

    def within_cap(where: str, ms: int) -> None:
        if ms > sim_cap:
            bad(where, f"{ms} ms is more than the simulated-time limit of {sim_cap} ms{cap_hint}")

    def consumer_ref(where: str, name: str) -> ConsumerConfig | None:
        for cc in consumers:
            if cc.id == name:
                return cc
        known = ", ".join(consumer_ids) or "no consumers"
        bad(where, f"no consumer named {name!r}; the scenario defines {known}")
        return None

    def producer_ref(path: str, name: str | None) -> ProducerConfig | None:
        if name is None:
            if len(producers) == 1:
                return producers[0]
            if producers:
                bad(
                    f"{path}.producer",
                    f"the scenario has {len(producers)} producers ({', '.join(producer_ids)}); say which one",
                )
            return None
        for pc in producers:
            if pc.id == name:
                return pc
        if producer_ids:
            bad(
                f"{path}.producer",
                f"no producer named {name!r}; the scenario defines {', '.join(producer_ids)}",
            )
        return None

    def needs_group(where: str, cc: ConsumerConfig | None) -> None:
        if cc is not None and cc.group_id is None:
            bad(
                where,
                f"consumer {cc.id!r} has no group.id: To use the group management or offset commit APIs, "
                "you must provide a valid group.id in the consumer configuration (Kafka's "
                "InvalidGroupIdException)",
            )

    n_parts = t.partitions  # add_partitions grows it

    def partition_ref(where: str, partition: int) -> None:
        if partition >= n_parts:
            bad(where, f"the topic has {n_parts} partition(s), numbered from 0")

    def offsets_ref(path: str, offsets: dict[str, int] | None) -> None:
        for key in offsets or {}:
            if not re.fullmatch(r"0|[1-9][0-9]*", key):
                bad(f"{path}.offsets.{key}", 'offsets maps partition numbers ("0", "1", ...) to offsets')
            else:
                partition_ref(f"{path}.offsets.{key}", int(key))

    added_assignments: list[list[int]] = []
    actions = list(sc.actions)
    total_ms = 0
    records_seen: set[str] = set()
    produced = 0
    down: dict[str, str] = {}  # producers crashed or shut down and not restarted: why
    for i, a in enumerate(actions):
        path = f"actions[{i}]"
        if a.do == "produce":
            if (a.records is None) == (a.count is None):
                bad(path, "give either records or count")
                continue
            if a.partition is not None:
                partition_ref(f"{path}.partition", a.partition)
            sender = producer_ref(path, a.producer)
            if sender is not None and sender.id in down:
                bad(
                    f"{path}.producer" if a.producer is not None else path,
                    f"producer {sender.id!r} is not running ({down[sender.id]}); restart it before it "
                    "sends again",
                )
            if a.lose_response:
                acks = _acks_number(a.acks) if a.acks is not None else sender.acks if sender else None
                if acks == 0:
                    bad(f"{path}.lose_response", "with acks=0 the leader sends no response to lose")
            n = len(a.records) if a.records is not None else a.count
            if n > limits.max_records_per_produce:
                bad(
                    f"{path}.records",
                    f"{n} records is more than the limit of {limits.max_records_per_produce}",
                )
                continue
            # a `count` produce names its records m<N>, N counting every record produced before it
            # (sim.produce); those names must not collide with explicit ones either
            names = a.records if a.records is not None else [f"m{produced + k}" for k in range(n)]
            for j, r in enumerate(names):
                if r is None:  # a tombstone
                    if a.key is None:
                        bad(f"{path}.records[{j}]", "a null record is a tombstone, which needs a key")
                    continue
                if r in records_seen:
                    where = f"{path}.records[{j}]" if a.records is not None else f"{path}.count"
                    bad(where, f"record {r!r} appears twice; records must be unique (count names its "
                        "records m0, m1, ... by the number of records produced before it)")
                records_seen.add(r)
            produced += n
            # any integer acks is accepted here: a hand-built client may send anything, and the
            # broker decides (INVALID_REQUIRED_ACKS)
        elif a.do in ("crash", "shutdown", "restart"):
            named = [k for k in ("broker", "consumer", "producer") if getattr(a, k) is not None]
            if len(named) != 1:
                bad(path, f"{a.do} needs exactly one of broker, consumer or producer"
                    + (f" (it names {' and '.join(named)})" if named else ""))
            elif a.broker is not None:
                if a.broker not in id_set:
                    bad(f"{path}.broker", f"broker {a.broker} is not in the cluster")
            elif a.consumer is not None:
                consumer_ref(f"{path}.consumer", a.consumer)
            else:
                pc = producer_ref(path, a.producer)
                if pc is not None and a.do == "restart":
                    down.pop(pc.id, None)
                elif pc is not None:
                    how = (
                        f"it crashed at {path}: a dead process sends nothing"
                        if a.do == "crash"
                        else f"it was shut down at {path}: send() after close() throws Kafka's "
                        "IllegalStateException"
                    )
                    down.setdefault(pc.id, how)
            if a.do == "crash" and a.broker is None:
                for flag in ("lose_unflushed", "lose_disk"):
                    if getattr(a, flag):
                        bad(f"{path}.{flag}", "only a broker has a page cache and a disk to lose")
        elif a.do in (
            "stop_fetching",
            "resume_fetching",
            "writeback",
            "isolate",
            "heal",
            "slow",
        ):
            if a.broker not in id_set:
                bad(f"{path}.broker", f"broker {a.broker} is not in the cluster")
            if a.do in ("isolate", "heal") and a.from_:
                for j, party in enumerate(a.from_):
                    if isinstance(party, int) and party not in id_set:
                        bad(f"{path}.from[{j}]", f"broker {party} is not in the cluster")
                    if party == a.broker:
                        bad(f"{path}.from[{j}]", "a broker cannot be cut off from itself")
        elif a.do == "power_loss":
            if (a.brokers is None) == (a.rack is None):
                bad(path, "give either brokers or rack")
            elif a.brokers is not None:
                for j, b in enumerate(a.brokers):
                    if b not in id_set:
                        bad(f"{path}.brokers[{j}]", f"broker {b} is not in the cluster")
            elif a.rack not in {r for _, r in brokers}:
                bad(f"{path}.rack", f"no broker is in rack {a.rack!r}")
        elif a.do == "advance":
            within_cap(f"{path}.ms", a.ms)
            total_ms += a.ms
        elif a.do == "settle":
            within_cap(f"{path}.max_ms", a.max_ms)
        elif a.do == "set":
            if a.key == "unclean.leader.election.enable" and not isinstance(a.value, bool):
                bad(f"{path}.value", "unclean.leader.election.enable takes true or false")
            if a.key == "min.insync.replicas" and (
                isinstance(a.value, bool)
                or not isinstance(a.value, int)
                or not 1 <= a.value <= MAX_BROKERS + 1
            ):
                bad(f"{path}.value", f"min.insync.replicas takes a whole number from 1 to {MAX_BROKERS + 1}")
            if (
                a.key == "flush.messages"
                and a.value is not None
                and (isinstance(a.value, bool) or not isinstance(a.value, int) or a.value < 1)
            ):
                bad(f"{path}.value", "flush.messages takes a positive whole number or null")
        elif a.do in TXN_ACTIONS:
            pc = producer_ref(path, a.producer)
            if pc is not None and not pc.transactional:
                bad(
                    f"{path}.producer" if a.producer is not None else path,
                    f"producer {pc.id!r} has no transactional.id: Transactional method invoked on a "
                    "non-transactional producer (Kafka's IllegalStateException)",
                )
            if a.do == "send_offsets_to_transaction":
                needs_group(f"{path}.consumer", consumer_ref(f"{path}.consumer", a.consumer))
                offsets_ref(path, a.offsets)
        elif a.do == "subscribe":
            needs_group(f"{path}.consumer", consumer_ref(f"{path}.consumer", a.consumer))
            if a.topics is not None:
                if not a.topics:
                    bad(f"{path}.topics", "subscribe to at least one topic (an empty list means unsubscribe)")
                for j, topic in enumerate(a.topics):
                    if topic != topic_name:
                        bad(
                            f"{path}.topics[{j}]",
                            f"no topic {topic!r}; the scenario has one topic, {topic_name!r}",
                        )
        elif a.do == "assign":
            consumer_ref(f"{path}.consumer", a.consumer)
            for j, partition in enumerate(a.partitions):
                partition_ref(f"{path}.partitions[{j}]", partition)
                if partition in a.partitions[:j]:
                    bad(f"{path}.partitions[{j}]", f"partition {partition} appears twice")
        elif a.do == "poll":
            consumer_ref(f"{path}.consumer", a.consumer)
            within_cap(f"{path}.timeout_ms", a.timeout_ms)
        elif a.do == "commit":
            needs_group(f"{path}.consumer", consumer_ref(f"{path}.consumer", a.consumer))
            offsets_ref(path, a.offsets)
        elif a.do == "seek":
            consumer_ref(f"{path}.consumer", a.consumer)
            partition_ref(f"{path}.partition", a.partition)
        elif a.do == "stall":
            consumer_ref(f"{path}.consumer", a.consumer)
            within_cap(f"{path}.ms", a.ms)
        elif a.do == "add_partitions":
            # CreatePartitions' checks (InvalidPartitionsException), then the partitions cap
            if a.count == n_parts:
                bad(f"{path}.count", f"Topic already has {n_parts} partitions.")
            elif a.count < n_parts:
                bad(f"{path}.count", f"Topic currently has {n_parts} partitions, which is higher than the "
                    f"requested {a.count}.")
            elif a.count > MAX_PARTITIONS:
                bad(f"{path}.count", f"{a.count} partitions is more than the limit of {MAX_PARTITIONS}")
            else:
                rf = len(replicas)
                added_assignments += [striped_placement(brokers, rf, p) for p in range(n_parts, a.count)]
                n_parts = a.count
        elif a.do == "delete_records":
            partition_ref(f"{path}.partition", a.partition)
    if total_ms > sim_cap:
        bad(
            "actions",
            f"the actions ask for {total_ms} ms of simulated time (advance + settle max_ms); "
            f"the limit is {sim_cap} ms{cap_hint}; use fewer or shorter advance/settle actions",
        )
    # every record is copied to every replica of its partition, and each copy is held in memory
    # for the whole run: bound the copies, not only the records per produce
    if produced * len(replicas) > limits.max_record_copies:
        bad(
            "actions",
            f"the scenario produces {produced} records on {len(replicas)} replicas "
            f"({produced * len(replicas)} copies); at most {limits.max_record_copies} fit in one run; "
            "produce fewer records or use fewer replicas",
        )
    _check_transactional_calls(actions, producers, bad)
    if problems:
        raise ScenarioError(problems[:50])

    first = producers[0]
    return Config(
        profile=prof,
        seed=sc.seed,
        brokers=brokers,
        fetch_delays={b.id: b.fetch_delay_ms for b in (sc.brokers or []) if b.fetch_delay_ms},
        replicas=replicas,
        min_isr=min_isr,
        unclean=unclean,
        flush_messages=t.flush_messages,
        quorum_acks=t.quorum_required_acks,
        elr=elr_version == 1,
        largest_leo_election=c.election == "largest_leo",
        auto_rebalance=c.auto_leader_rebalance_enable,
        acks=first.acks,
        idempotent=first.enable_idempotence,
        retries=first.retries,
        request_timeout_ms=first.request_timeout_ms,
        delivery_timeout_ms=first.delivery_timeout_ms,
        retry_backoff_ms=first.retry_backoff_ms,
        retry_backoff_max_ms=first.retry_backoff_max_ms,
        lag_time_ms=lag,
        lag_max_messages=tm.replica_lag_max_messages or 4_000,
        fetch_wait_ms=fetch_wait,
        fetch_backoff_ms=tm.replica_fetch_backoff_ms or 1_000,
        session_timeout_ms=session,
        heartbeat_ms=heartbeat,
        unclean_interval_ms=tm.unclean_leader_election_interval_ms or 300_000,
        rebalance_interval_ms=(tm.leader_imbalance_check_interval_seconds or 300) * 1_000,
        actions=actions,
        proposals=proposals,
        assignments=assignments,
        topic_name=topic_name,
        log=log,
        timing=timing,
        producers=tuple(producers),
        consumers=tuple(consumers),
        added_assignments=added_assignments,
        max_sim_ms=sim_cap,
        notes=notes,
        part2=long or any(a.do in _PART2_ACTIONS for a in sc.actions),
    )


def striped_placement(brokers: list[tuple[int, str | None]], rf: int, partition: int = 0) -> list[int]:
    """StripedReplicaPlacer (SRP 34-117) with a fixed start instead of a random one, so a scene's
    layout is the same on every load. Racks are visited round-robin, the starting rack shifts by one
    per partition, and inside a rack the broker index shifts by one per partition: with racks A, B, C
    of three brokers each that gives A0,B0,C0 / B1,C1,A1 / C2,A2,B2. Without racks every broker is
    its own rack, so the stripe is 1,2,3 / 2,3,1 / ... . A lone broker in its own rack gets a
    replica of nearly every partition, which is why Kafka calls unequal racks a user error."""
    if all(rack is None for _, rack in brokers):
        groups = [[b] for b, _ in sorted(brokers)]
    else:
        by_rack: dict[str, list[int]] = {}
        for b, rack in sorted(brokers):
            by_rack.setdefault(rack or "", []).append(b)
        groups = [by_rack[name] for name in sorted(by_rack)]
    out: list[int] = []
    first = partition % len(groups)
    for round_ in range(max(len(g) for g in groups)):
        for k in range(len(groups)):
            members = groups[(first + k) % len(groups)]
            if round_ >= len(members):
                continue
            b = members[(partition + round_) % len(members)]
            if b not in out:
                out.append(b)
            if len(out) == rf:
                return out
    return out
