"""Committed offsets: where a group's offsets live, what the coordinator accepts, when they expire,
and what a consumer's position and auto-commit mean.

Pure and clock-free (time is passed in). The rules paraphrase Kafka 4.x's group coordinator
(`GroupCoordinatorService`, `OffsetMetadataManager`, `ClassicGroup`) and the classic
`KafkaConsumer` (`ConsumerCoordinator`, `SubscriptionState`); each function names the one it follows.

Simplifications: the coordinator's group state survives its moves (the new leader of the offsets
partition rebuilds it from the log); a commit is accepted or refused at once (no
request in flight); auto-commit's asynchronous commit lands before the `poll()` that sent it
returns; a group is "classic" (subscribe) or "simple" (assign, admin tools), never KIP-848.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

NO_OFFSET = -1
OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions
DAY_MS = 24 * 3600 * 1000

TopicPartition = tuple[str, int]
GroupState = Literal["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


def java_string_hash(s: str) -> int:
    """Java's `String.hashCode`: s[0]*31^(n-1) + ... over UTF-16 code units, as a signed int."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """`Utils.abs`: the absolute value, except that Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(1 << 31) else abs(n)


def offsets_partition_for(group_id: str, partitions: int = OFFSETS_TOPIC_PARTITIONS) -> int:
    """`GroupCoordinatorService.partitionFor`: which `__consumer_offsets` partition holds a group
    (its leader is the group's coordinator): abs(groupId.hashCode()) % the topic's partitions. Not
    murmur2."""
    return kafka_abs(java_string_hash(group_id)) % partitions


def coordinator_of(
    group_id: str, brokers: list[int], alive: Any, partitions: int = OFFSETS_TOPIC_PARTITIONS
) -> int | None:
    """The group's coordinator: the leader of its `__consumer_offsets` partition, modelled as the
    first running broker (`alive(broker)`) of that partition's stripe of up to three of the sorted
    `brokers` (the partition's replicas); None when none of them runs."""
    k = offsets_partition_for(group_id, partitions)
    n = len(brokers)
    for j in range(min(3, n)):
        bid = brokers[(k + j) % n]
        if alive(bid):
            return bid
    return None


@dataclass(frozen=True)
class Commit:
    offset: int
    commit_ms: int
    metadata: str = ""


@dataclass
class Group:
    group_id: str
    protocol: Literal["classic", "simple"] = "classic"
    state: GroupState = "Empty"
    state_since_ms: int = 0
    generation: int = 0
    # member id -> its record (engine/groups.Member); only membership is read here
    members: Any = field(default_factory=dict)
    subscribed: set[str] = field(default_factory=set)  # topics its members subscribe to
    offsets: dict[TopicPartition, Commit] = field(default_factory=dict)
    instances: dict[str, str] = field(default_factory=dict)  # group.instance.id -> its member id now
    # the classic protocol's state (engine/consumers.py drives it)
    leader: str | None = None  # the member id of the group leader
    selected: str | None = None  # the assignor the last join phase voted for
    pending: set[str] = field(default_factory=set)  # ids handed out with MEMBER_ID_REQUIRED
    in_initial_delay: bool = False  # a new group's first join waits group.initial.rebalance.delay.ms
    delay_joined: bool = False  # a member joined during the initial delay: it waits once more
    join_token: int = 0  # bumps on every join phase start and end: the older join timers end
    rebalance_reason: str = ""  # what started the rebalance in progress

    def validate_member(self, member: str | None, generation: int, instance: str | None = None) -> str | None:
        """`ClassicGroup.validateMember`, then the generation (kafka-eos-kraft §C.1 rule 4), the
        checks OffsetCommit, TxnOffsetCommit, SyncGroup and Heartbeat share: a static instance the
        group does not know, or mapped to another member id, first; then the member id; then the
        generation."""
        if instance is not None:
            if instance not in self.instances:
                return "UNKNOWN_MEMBER_ID"
            if self.instances[instance] != member:
                return "FENCED_INSTANCE_ID"
        if member not in self.members:
            return "UNKNOWN_MEMBER_ID"
        if generation != self.generation:
            return "ILLEGAL_GENERATION"
        return None

    def set_state(self, state: GroupState, now_ms: int) -> None:
        if state != self.state:
            self.state, self.state_since_ms = state, now_ms


@dataclass
class Coordinator:
    """The offsets a coordinator holds for its groups (`OffsetMetadataManager`)."""

    retention_ms: int = 7 * DAY_MS  # offsets.retention.minutes, 10080
    groups: dict[str, Group] = field(default_factory=dict)

    def commit(
        self,
        group_id: str,
        offsets: dict[TopicPartition, int],
        now_ms: int,
        *,
        member: str | None = None,
        generation: int = -1,
        instance: str | None = None,
    ) -> str | None:
        """`OffsetMetadataManager.commitOffset` after `ClassicGroup.validateOffsetCommit` (checks in
        the order of Kafka's, CG 823-864): None when accepted, else the error code. The offset
        value itself is never checked: not against the log, not against the previous commit (a
        commit may go backwards), not against who owns the partition. Last write wins."""
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                return "GROUP_ID_NOT_FOUND"
            group = self.groups[group_id] = Group(group_id, protocol="simple", state_since_ms=now_ms)
        elif group.state == "Dead":
            return "COORDINATOR_NOT_AVAILABLE"
        elif generation < 0 and member is None:
            if group.state != "Empty":
                return "UNKNOWN_MEMBER_ID"
        else:
            error = group.validate_member(member, generation, instance)
            if error is not None:
                return error
            if group.state == "CompletingRebalance":
                return "REBALANCE_IN_PROGRESS"
        for tp, offset in offsets.items():
            group.offsets[tp] = Commit(offset, now_ms)
        return None

    def fetch(self, group_id: str, tp: TopicPartition) -> int:
        """`OffsetMetadataManager.fetchOffsets`: the last committed offset, or -1 (no error) when
        there is none."""
        group = self.groups.get(group_id)
        commit = group.offsets.get(tp) if group else None
        return commit.offset if commit else NO_OFFSET

    def expire(self, now_ms: int) -> list[tuple[str, TopicPartition]]:
        """`OffsetMetadataManager.cleanupExpiredOffsets` (every offsets.retention.check.interval.ms):
        a topic the group still subscribes to never expires; a classic group's offsets expire
        retention after the group became Empty (not after the commit), and never in a rebalance; a
        Stable classic group's offsets of topics it dropped expire retention after their commit; a
        simple group's offsets expire retention after each commit."""
        gone = []
        for group in self.groups.values():
            for tp, commit in list(group.offsets.items()):
                if tp[0] in group.subscribed and group.protocol == "classic" and group.state != "Empty":
                    continue
                if group.protocol == "simple":
                    since = commit.commit_ms
                elif group.state == "Empty":
                    since = group.state_since_ms
                elif group.state == "Stable":
                    since = commit.commit_ms
                else:
                    continue
                if now_ms - since >= self.retention_ms:
                    del group.offsets[tp]
                    gone.append((group.group_id, tp))
        return gone


@dataclass
class Consumer:
    """One classic consumer's view of its partitions (`SubscriptionState`, `ConsumerCoordinator`).

    The position is the next offset `poll()` returns; it moves when `poll()` returns records, not
    when the application finishes them. The committed offset is the next offset to read too (the
    last processed + 1), kept by the coordinator, apart from the position."""

    group_id: str
    auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    next_auto_commit_ms: int = 0

    def assigned(self, now_ms: int, tps: dict[TopicPartition, int]) -> None:
        """Assignment done: positions come from the committed offsets (or the reset policy, the
        caller's), and the auto-commit timer restarts (`ConsumerCoordinator.onJoinComplete`)."""
        self.positions = dict(tps)
        self.next_auto_commit_ms = now_ms + self.auto_commit_interval_ms

    def poll(
        self, coordinator: Coordinator, now_ms: int, returned: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int] | None:
        """`KafkaConsumer.poll`: first, if auto-commit is on and its interval has passed, commit
        the positions the previous poll reached (`maybeAutoCommitOffsetsAsync`); then hand the
        application `returned[tp]` records per partition and move each position past them.
        Returns what it committed, if anything."""
        committed = None
        if self.auto_commit and now_ms >= self.next_auto_commit_ms:
            committed = dict(self.positions)
            coordinator.commit(self.group_id, committed, now_ms)
            self.next_auto_commit_ms = now_ms + self.auto_commit_interval_ms
        for tp, count in returned.items():
            self.positions[tp] = self.positions.get(tp, 0) + count
        return committed

    def commit_sync(
        self, coordinator: Coordinator, now_ms: int, offsets: dict[TopicPartition, int] | None = None
    ) -> str | None:
        """`commitSync()`: with no argument, the positions of every assigned partition
        (`SubscriptionState.allConsumed`)."""
        chosen = dict(self.positions) if offsets is None else offsets
        return coordinator.commit(self.group_id, chosen, now_ms)
