"""The scenario contract, part 2 (../shared/design/scenario-contract-clients.md): the resolved,
frozen settings of the producers, the consumers and the broker timings the simulator reads.

`scenario.resolve` builds these from a parsed scenario; the simulator reads them and never asks
"was this given?". Every default lives here, once, as a dataclass default: Kafka 4.x's value
(../shared/reference/kafka-clients-logs.md §1, kafka-eos-kraft.md §A.5). The topic's log settings
are `segments.LogConfig`, which holds its own defaults the same way.

Field names are Kafka's config keys with dots as underscores (`session.timeout.ms` is
`session_timeout_ms`), as in `segments.LogConfig`; `id` and `loop_ms` are the contract's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .offsets import DAY_MS, OFFSETS_TOPIC_PARTITIONS
from .segments import RetentionSchedule

DEFAULT_TOPIC = "t"  # topic.name
DEFAULT_PRODUCER_ID = "producer"  # the id of part 1's single `producer`
# the most in-flight requests an idempotent producer may have (ProducerConfig; 1 in 0.11)
MAX_IN_FLIGHT_IDEMPOTENT = 5

# The producer's retry backoff ceiling (`retry.backoff.max.ms`, 1000 since 3.7, KIP-580); not a
# scenario key.
RETRY_BACKOFF_MAX_MS = 1_000

# partition.assignment.strategy: Kafka's assignor names (ConsumerPartitionAssignor.name()) and the
# classes a Java client configures; a scenario may give either, Config holds the short names.
ASSIGNOR_CLASSES: dict[str, str] = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}
# The rebalance protocols each assignor supports, preferred first (supportedProtocols(): EAGER
# only unless overridden; CooperativeStickyAssignor adds COOPERATIVE, CSA 66-69). The classic
# consumer uses the newest protocol every assignor in its list supports (CC 209-233).
ASSIGNOR_PROTOCOLS: dict[str, tuple[str, ...]] = {
    "range": ("eager",),
    "roundrobin": ("eager",),
    "sticky": ("eager",),
    "cooperative-sticky": ("cooperative", "eager"),
}
_BY_CLASS = {cls: short for short, cls in ASSIGNOR_CLASSES.items()}


def assignor_short_name(name: str) -> str | None:
    """"range" for "range" or "org.apache.kafka.clients.consumer.RangeAssignor"; None if unknown."""
    if name in ASSIGNOR_CLASSES:
        return name
    return _BY_CLASS.get(name)


# auto.offset.reset's values. `by_duration:<duration>` is Kafka 4.0's (KIP-1106, KAFKA-18013):
# AutoOffsetResetStrategy.fromString (clients/.../consumer/internals/AutoOffsetResetStrategy.java
# 62-99 on the 4.0 branch at 4ae6814, the code 4.0.0 shipped) takes the three names as they are
# (lower case only), refuses a bare "by_duration" (67-68), and hands what follows
# "by_duration:" to java.time.Duration.parse, refusing a negative result (85-95).
RESET_NAMES = ("earliest", "latest", "none")
BY_DURATION = "by_duration"
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_NANOS = 1_000_000_000
# java.time.Duration's grammar (Duration.Lazy.PATTERN, JDK 8-21): ISO-8601 PnDTnHnMn.nS, days of
# exactly 24 hours, letters in either case, an optional sign before P and before every number,
# up to 9 fraction digits after '.' or ','
_JAVA_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def java_duration_ns(text: str) -> int:
    """`java.time.Duration.parse(text)`, in nanoseconds; ValueError where Java throws
    DateTimeParseException: no match, a "T" with no time part after it, no part at all, or a
    value (or a sum on the way) outside a long number of seconds."""
    m = _JAVA_DURATION.fullmatch(text)
    # the JDK checks the "T" group against an upper-case 'T' only (Duration.charMatch)
    if m is None or m.group(3) == "T" or all(m.group(i) is None for i in (2, 4, 5, 6)):
        raise ValueError(f"{text!r} is not an ISO-8601 duration")

    def seconds_of(group: int, unit: int) -> int:
        given = m.group(group)
        if given is None:
            return 0
        value = int(given)  # Long.parseLong, then Math.multiplyExact
        if not _LONG_MIN <= value <= _LONG_MAX or not _LONG_MIN <= value * unit <= _LONG_MAX:
            raise ValueError(f"{text!r} overflows a Duration")
        return value * unit

    total = 0
    for group, unit in ((6, 1), (5, 60), (4, 3_600), (2, 86_400)):  # Math.addExact, innermost first
        total += seconds_of(group, unit)
        if not _LONG_MIN <= total <= _LONG_MAX:
            raise ValueError(f"{text!r} overflows a Duration")
    fraction = m.group(7) or ""
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    if m.group(6) is not None and m.group(6).startswith("-"):
        nanos = -nanos  # the fraction takes the seconds' sign
    ns = total * _NANOS + nanos
    if m.group(1) == "-":
        ns = -ns
    if not _LONG_MIN <= ns // _NANOS <= _LONG_MAX:  # Duration.ofSeconds / negated()
        raise ValueError(f"{text!r} overflows a Duration")
    return ns


def by_duration_ns(value: str) -> int | None:
    """The duration of an `auto.offset.reset` value in nanoseconds: None for earliest, latest and
    none; ValueError with Kafka's own words for a value `AutoOffsetResetStrategy.fromString`
    refuses (which the scenario reports as Kafka's ConfigException)."""
    if value in RESET_NAMES:
        return None
    if value == BY_DURATION:
        raise ValueError("<:duration> part is missing in by_duration auto offset reset strategy")
    if not value.startswith(BY_DURATION + ":"):
        raise ValueError(f"Unknown auto offset reset strategy: {value}")
    text = value[len(BY_DURATION) + 1 :]
    try:
        ns = java_duration_ns(text)
    except ValueError as exc:
        why = f"Unable to parse duration string in by_duration offset reset strategy: {exc}"
        raise ValueError(why) from None
    if ns < 0:  # Duration.isNegative: seconds < 0, so -PT0.5S is negative too
        raise ValueError("Negative duration is not supported in by_duration offset reset strategy")
    return ns


@dataclass(frozen=True)
class Timing:
    """The part-2 broker timings (`timing` in the scenario). The part-1 ones (replica lag, fetch
    wait, broker session ...) stay as flat fields of `Config`."""

    log_retention_check_interval_ms: int = RetentionSchedule.interval_ms  # 300000
    log_cleaner_backoff_ms: int = 15_000
    group_initial_rebalance_delay_ms: int = 3_000
    # the broker's bounds on a consumer's session.timeout.ms (JoinGroup answers
    # INVALID_SESSION_TIMEOUT outside them); the scenario refuses such a consumer up front
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    offsets_topic_num_partitions: int = OFFSETS_TOPIC_PARTITIONS  # 50
    offsets_retention_minutes: int = 7 * DAY_MS // 60_000  # 10080
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    # InitProducerId answers INVALID_TRANSACTION_TIMEOUT when transaction.timeout.ms is above it
    transaction_max_timeout_ms: int = 900_000

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000


@dataclass(frozen=True)
class ProducerConfig:
    """One producer process, every value resolved the way `KafkaProducer`'s constructor would
    (acks, retries and idempotence depend on each other and on the version profile)."""

    id: str
    acks: int | str  # -1, 0, 1, or "min_isr" (KIP-926 proposal)
    enable_idempotence: bool  # what the client ends up with, not what was asked
    retries: int
    request_timeout_ms: int = 30_000
    delivery_timeout_ms: int = 120_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = RETRY_BACKOFF_MAX_MS
    max_in_flight_requests_per_connection: int = 5
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000
    partitioner_ignore_keys: bool = False
    # how old the producer's metadata may get before it refreshes it (ProducerConfig,
    # CommonClientConfigs.METADATA_MAX_AGE_CONFIG): the longest a producer keeps hashing keys over a
    # topic's old partition count after partitions are added (kafka-clients-logs.md §C.4)
    metadata_max_age_ms: int = 300_000

    @property
    def transactional(self) -> bool:
        return self.transactional_id is not None


@dataclass(frozen=True)
class ConsumerConfig:
    """One consumer process (the classic `KafkaConsumer`)."""

    id: str
    group_id: str | None = None  # None: manual assignment only, no group commits
    auto_offset_reset: str = "latest"  # "earliest", "latest", "none" or "by_duration:<ISO-8601>" (4.0)
    # by_duration's duration in nanoseconds (java.time.Duration's resolution), resolved from
    # auto_offset_reset by the scenario; None for the other three
    reset_duration_ns: int | None = None
    enable_auto_commit: bool = True  # resolved to False when there is no group.id (as Kafka does)
    auto_commit_interval_ms: int = 5_000
    partition_assignment_strategy: tuple[str, ...] = ("range", "cooperative-sticky")  # short names
    group_instance_id: str | None = None  # set: a static member
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000  # also the classic rebalance timeout
    max_poll_records: int = 500
    isolation_level: str = "read_uncommitted"  # or "read_committed"
    loop_ms: int | None = None  # not Kafka: poll() every loop_ms while subscribed; None: on `poll` only
    group_protocol: str = "classic"  # "consumer" (KIP-848) is refused until it is built

    @property
    def rebalance_protocol(self) -> str:
        """"cooperative" when every assignor in the list supports it, else "eager" (what this
        member can do; the group's protocol is the one all its members share)."""
        if not self.partition_assignment_strategy:
            return "eager"
        common = set.intersection(*(set(ASSIGNOR_PROTOCOLS[a]) for a in self.partition_assignment_strategy))
        return "cooperative" if "cooperative" in common else "eager"
