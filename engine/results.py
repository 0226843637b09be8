"""The typed shapes of the result's part-2 fields (scenario-contract-clients.md, "Result additions").

The engine builds these dictionaries and the app reads them; naming their fields here once lets a
type checker catch a reader that expects a field the engine does not write. Values are JSON-ready
(partition numbers as string keys where the contract uses objects).
"""

from __future__ import annotations

from typing import TypedDict


class SegmentInfo(TypedDict):
    base_offset: int
    next_offset: int
    bytes: int


class LogEntry(TypedDict):
    offset: int
    key: str | None
    record: str | None
    timestamp_ms: int | None
    producer_id: int  # -1 for a batch from a producer without idempotence
    producer_epoch: int
    sequence: int
    control: str | None  # "COMMIT" / "ABORT" for transaction markers (issue 12); None for data


class PartitionResult(TypedDict):
    partition: int
    leader: int | None
    hw: int
    leo: int
    lso: int  # the last stable offset: the HW until transactions exist
    log_start_offset: int
    cleaner_point: int  # the leader's first dirty offset (engine/compaction.py)
    segments: list[SegmentInfo]
    log: list[LogEntry]


class PolledRecord(TypedDict):
    partition: int
    offset: int
    key: str | None
    record: str | None


class PollResult(TypedDict):
    consumer: str
    records: list[PolledRecord]
    error: str | None


class CommitResult(TypedDict):
    consumer: str
    offsets: dict[str, int]
    outcome: str  # "ok" | "error"
    error: str | None


class ReceivedRecord(TypedDict):
    partition: int
    offset: int
    record: str | None


class ConsumerError(TypedDict):
    t_ms: int
    error: str


class Downtime(TypedDict):
    from_ms: int
    to_ms: int
    why: str  # "revoked" (eager revocation to assignment), "unassigned" (owns nothing), "stalled"


class ConsumerResult(TypedDict):
    alive: bool
    member_id: str | None
    generation: int
    assigned: list[int]
    position: dict[str, int]
    received: list[ReceivedRecord]
    errors: list[ConsumerError]
    # consumer groups (issue 12): when the live member processed nothing, and for how long
    downtime: list[Downtime]
    downtime_ms: int


class GenerationRecord(TypedDict):
    generation: int
    t_ms: int
    assignment: dict[str, list[int]]
    # consumer groups (issue 12)
    leader: str | None
    protocol: str | None  # the assignor voted for this generation
    reason: str  # what started the rebalance


class GroupResult(TypedDict):
    state: str  # the classic coordinator's state names: Empty, PreparingRebalance, ..., Dead
    generation: int
    protocol: str  # "eager" | "cooperative"
    leader: str | None
    members: dict[str, list[int]]
    committed: dict[str, int]
    coordinator: int | None
    offsets_partition: int
    history: list[GenerationRecord]
    # consumer groups (issue 12)
    assignor: str | None  # the assignor the last join phase voted for
    rebalances: int  # completed generations that assigned partitions to members


class ProducerResult(TypedDict):
    producer_id: int  # -1 without idempotence
    epoch: int  # -1 without idempotence
    transaction_state: str | None  # the coordinator's state names; None for a non-transactional producer
    fenced: bool
    alive: bool  # the process runs (not crashed or closed since its last start)


class ClientsResult(TypedDict):
    polls: list[PollResult]
    commits: list[CommitResult]
    consumers: dict[str, ConsumerResult]
    groups: dict[str, GroupResult]
