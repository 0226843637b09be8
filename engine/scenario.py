"""The scenario contract (version 1): parsing, validation and defaults.

A scenario is the whole input of a simulation (see ../shared/design/scenario-contract.md). This
module turns untrusted JSON into a `Scenario` and then into a `Config` in which every default
has been filled in from the chosen version profile, so the simulator never has to ask "was this
given?". Every problem becomes a `{"path", "message"}` pair; nothing here raises anything but
`ScenarioError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .profiles import PROFILES, RETRIES_MAX, Profile

# Caps for untrusted input. Trusted callers (benchmarks, the offline pipeline) may pass their own.
MAX_ACTIONS = 500
MAX_SIM_MS = 3_600_000  # one simulated hour
MAX_STEPS = 20_000
MAX_EVENTS = 2_000_000
MAX_RECORDS_PER_PRODUCE = 1_000
# records x replicas in one run: about 60 MB of engine state at the cap (issue 9: 499 produces of
# 1,000 records on 9 replicas peaked at 1.69 GB)
MAX_RECORD_COPIES = 200_000
MAX_RECORD_CHARS = 64
MAX_BROKERS = 9
MAX_BROKER_ID = 1_000
MAX_PARTITIONS = 12
MAX_CONSUMERS = 12


@dataclass(frozen=True)
class Limits:
    max_actions: int = MAX_ACTIONS
    max_sim_ms: int = MAX_SIM_MS
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
        }


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


class BrokerSpec(_Strict):
    id: Annotated[int, Field(ge=0, le=MAX_BROKER_ID)]
    rack: Annotated[str, Field(min_length=1, max_length=32)] | None = None
    # not a Kafka config: extra time each fetch of this broker takes (a slow disk or link)
    fetch_delay_ms: Annotated[int, Field(ge=0, le=60_000)] = 0


class TopicSpec(_Strict):
    replicas: list[Annotated[int, Field(ge=0, le=MAX_BROKER_ID)]] | None = None
    replication_factor: Annotated[int, Field(ge=1, le=MAX_BROKERS)] | None = Field(
        None, alias="replication.factor"
    )
    partitions: Annotated[int, Field(ge=1, le=MAX_PARTITIONS)] = 1
    min_insync_replicas: Annotated[int, Field(ge=1, le=MAX_BROKERS + 1)] | None = Field(
        None, alias="min.insync.replicas"
    )
    unclean_leader_election_enable: bool | None = Field(None, alias="unclean.leader.election.enable")
    flush_messages: Annotated[int, Field(ge=1)] | None = Field(None, alias="flush.messages")
    quorum_required_acks: Annotated[int, Field(ge=1, le=MAX_BROKERS)] | None = Field(
        None, alias="quorum.required.acks"
    )


class ControllerSpec(_Strict):
    eligible_leader_replicas_version: Literal[0, 1] | None = Field(
        None, alias="eligible.leader.replicas.version"
    )
    election: Literal["kafka", "largest_leo"] = "kafka"
    auto_leader_rebalance_enable: bool = Field(True, alias="auto.leader.rebalance.enable")


AcksValue = Literal["all", "-1", "0", "1", "min.insync.replicas"] | Literal[-1, 0, 1]


class ProducerSpec(_Strict):
    acks: AcksValue | None = None
    enable_idempotence: bool | None = Field(None, alias="enable.idempotence")
    retries: Annotated[int, Field(ge=0, le=RETRIES_MAX)] | None = None
    request_timeout_ms: Ms | None = Field(None, alias="request.timeout.ms")
    delivery_timeout_ms: Ms | None = Field(None, alias="delivery.timeout.ms")
    retry_backoff_ms: Annotated[int, Field(ge=1, le=60_000)] | None = Field(None, alias="retry.backoff.ms")


class TimingSpec(_Strict):
    replica_lag_time_max_ms: Ms | None = Field(None, alias="replica.lag.time.max.ms")
    replica_lag_max_messages: PosInt | None = Field(None, alias="replica.lag.max.messages")
    replica_fetch_wait_max_ms: Ms | None = Field(None, alias="replica.fetch.wait.max.ms")
    replica_fetch_backoff_ms: Ms | None = Field(None, alias="replica.fetch.backoff.ms")
    broker_session_timeout_ms: Ms | None = Field(None, alias="broker.session.timeout.ms")
    broker_heartbeat_interval_ms: Ms | None = Field(None, alias="broker.heartbeat.interval.ms")
    unclean_leader_election_interval_ms: Ms | None = Field(None, alias="unclean.leader.election.interval.ms")
    leader_imbalance_check_interval_seconds: Annotated[int, Field(ge=1, le=3600)] | None = Field(
        None, alias="leader.imbalance.check.interval.seconds"
    )


RecordName = Annotated[str, Field(min_length=1, max_length=MAX_RECORD_CHARS)]
BrokerId = Annotated[int, Field(ge=0, le=MAX_BROKER_ID)]


class Produce(_Strict):
    do: Literal["produce"]
    records: list[RecordName] | None = None
    count: Annotated[int, Field(ge=1)] | None = None
    acks: Literal["all", "min.insync.replicas"] | Annotated[int, Field(ge=-32768, le=32767)] | None = None
    key: Annotated[str, Field(max_length=MAX_RECORD_CHARS)] | None = None
    partition: Annotated[int, Field(ge=0, le=MAX_PARTITIONS - 1)] | None = None
    produce_version: Annotated[int, Field(ge=0, le=11)] | None = None


class Advance(_Strict):
    do: Literal["advance"]
    ms: Annotated[int, Field(ge=0, le=MAX_SIM_MS)]


class Settle(_Strict):
    do: Literal["settle"]
    max_ms: Annotated[int, Field(ge=0, le=MAX_SIM_MS)] = 60_000
    # not in the contract: first wait until the controller has replaced (fenced) a leader that
    # crashed, stopped or lost the controller, so a late fault plays out ("run until quiet")
    through_failover: bool = False


ClientId = Annotated[str, Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9._-]+$")]


class ConsumerSpec(_Strict):
    """One consumer process (contract part 2). Rebalancing protocols come with part 2's groups."""

    id: ClientId
    group_id: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(None, alias="group.id")
    auto_offset_reset: Literal["earliest", "latest", "none"] = Field("latest", alias="auto.offset.reset")
    enable_auto_commit: bool = Field(True, alias="enable.auto.commit")
    auto_commit_interval_ms: Ms = Field(5_000, alias="auto.commit.interval.ms")
    max_poll_records: Annotated[int, Field(ge=1, le=MAX_RECORDS_PER_PRODUCE)] = Field(
        500, alias="max.poll.records"
    )


class Subscribe(_Strict):
    do: Literal["subscribe"]
    consumer: ClientId
    topics: list[Annotated[str, Field(min_length=1, max_length=249)]] | None = None


class Assign(_Strict):
    do: Literal["assign"]
    consumer: ClientId
    partitions: list[Annotated[int, Field(ge=0, le=MAX_PARTITIONS - 1)]]


class Poll(_Strict):
    do: Literal["poll"]
    consumer: ClientId
    max_records: Annotated[int, Field(ge=1, le=MAX_RECORDS_PER_PRODUCE)] | None = None
    timeout_ms: Annotated[int, Field(ge=0, le=MAX_SIM_MS)] = 1_000


class Commit(_Strict):
    do: Literal["commit"]
    consumer: ClientId
    offsets: dict[str, Annotated[int, Field(ge=0)]] | None = None
    async_: bool = Field(False, alias="async")


class Seek(_Strict):
    do: Literal["seek"]
    consumer: ClientId
    partition: Annotated[int, Field(ge=0, le=MAX_PARTITIONS - 1)]
    offset: Annotated[int, Field(ge=0)] | Literal["beginning", "end"]


class Stall(_Strict):
    do: Literal["stall"]
    consumer: ClientId
    ms: Annotated[int, Field(ge=0, le=MAX_SIM_MS)]


class DeleteRecords(_Strict):
    do: Literal["delete_records"]
    partition: Annotated[int, Field(ge=0, le=MAX_PARTITIONS - 1)] = 0
    offset: Annotated[int, Field(ge=-1)]  # -1: up to the high watermark, as the admin client allows


class Crash(_Strict):
    do: Literal["crash"]
    broker: BrokerId | None = None
    consumer: ClientId | None = None  # a consumer process crashes instead (it sends nothing)
    lose_unflushed: bool = False
    # not in the contract's list: the disk is destroyed too (flushed data included); the broker
    # comes back empty, as after a disk replacement
    lose_disk: bool = False


class PowerLoss(_Strict):
    do: Literal["power_loss"]
    brokers: list[BrokerId] | None = None
    rack: Annotated[str, Field(min_length=1, max_length=32)] | None = None


class BrokerAction(_Strict):
    do: Literal["shutdown", "restart", "stop_fetching", "resume_fetching", "writeback"]
    broker: BrokerId | None = None
    consumer: ClientId | None = None  # shutdown = close(); restart = a new process (contract part 2)


Party = Literal["controller", "producer"] | BrokerId


class Slow(_Strict):
    do: Literal["slow"]
    broker: BrokerId
    ms: Annotated[int, Field(ge=0, le=60_000)] | None = None  # None: back to the broker's fetch_delay_ms


class Isolate(_Strict):
    do: Literal["isolate", "heal"]
    broker: BrokerId
    from_: list[Party] | None = Field(None, alias="from")


class SetConfig(_Strict):
    do: Literal["set"]
    key: Literal["unclean.leader.election.enable", "min.insync.replicas", "flush.messages"]
    value: bool | int | None


class Elect(_Strict):
    do: Literal["elect"]
    type: Literal["unclean", "preferred"]


Action = Annotated[
    Produce | Advance | Settle | Crash | PowerLoss | BrokerAction | Slow | Isolate | SetConfig | Elect
    | Subscribe | Assign | Poll | Commit | Seek | Stall | DeleteRecords,
    Field(discriminator="do"),
]


class Scenario(_Strict):
    version: Literal[1] = 1
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    kafka_version: Literal["0.8", "0.10", "1.1", "3.6", "4.1"] = "4.1"
    brokers: list[BrokerSpec] | None = None
    topic: TopicSpec = Field(default_factory=TopicSpec)
    controller: ControllerSpec = Field(default_factory=ControllerSpec)
    producer: ProducerSpec = Field(default_factory=ProducerSpec)
    timing: TimingSpec = Field(default_factory=TimingSpec)
    consumers: list[ConsumerSpec] = Field(default_factory=list)
    actions: list[Action] = Field(default_factory=list)

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
    consumers: list[ConsumerSpec] = field(default_factory=list)
    topic_name: str = "t"
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    offsets_topic_partitions: int = 50  # offsets.topic.num.partitions


_ACTION_TAGS = frozenset(
    {
        "produce",
        "advance",
        "settle",
        "crash",
        "power_loss",
        "shutdown",
        "restart",
        "stop_fetching",
        "resume_fetching",
        "writeback",
        "slow",
        "isolate",
        "heal",
        "set",
        "elect",
        "subscribe",
        "assign",
        "poll",
        "commit",
        "seek",
        "stall",
        "delete_records",
    }
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


def resolve(sc: Scenario, limits: Limits = DEFAULT_LIMITS) -> Config:
    """Fill every default from the version profile and check what pydantic cannot."""
    prof = PROFILES[sc.kafka_version]
    problems: list[dict[str, str]] = []

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

    p = sc.producer
    # With enable.idempotence=true and acks or retries left unset, the client picks acks=all and
    # retries=Integer.MAX_VALUE itself (KafkaProducer.configureAcks / configureRetries, 0.11-2.x);
    # from 2.1 and 3.0 those are the defaults anyway.
    acks_raw = p.acks if p.acks is not None else ("all" if p.enable_idempotence else prof.acks_default)
    acks = _acks_number(acks_raw)
    if p.enable_idempotence and not prof.idempotence_available:
        bad(
            "producer.enable.idempotence",
            f"the idempotent producer does not exist in Kafka {prof.version} (it arrived in 0.11)",
        )
    if p.enable_idempotence and acks != -1:
        bad(
            "producer.enable.idempotence",
            "Must set acks to all in order to use the idempotent producer (Kafka's ConfigException)",
        )
    retries = p.retries if p.retries is not None else (
        RETRIES_MAX if p.enable_idempotence else prof.retries_default
    )
    if p.enable_idempotence and retries == 0:
        bad("producer.retries", "the idempotent producer needs retries > 0")
    if p.enable_idempotence is None:
        # defaulted idempotence is silently switched off when acks is not all (ProducerConfig 556-598)
        idempotent = prof.idempotence_default and acks == -1 and retries > 0
    else:
        idempotent = p.enable_idempotence
    request_timeout = p.request_timeout_ms or 30_000
    delivery_timeout = p.delivery_timeout_ms or 120_000
    if delivery_timeout < request_timeout:
        bad("producer.delivery.timeout.ms", "delivery.timeout.ms must be at least request.timeout.ms")

    tm = sc.timing
    lag = tm.replica_lag_time_max_ms or prof.lag_time_default_ms
    fetch_wait = tm.replica_fetch_wait_max_ms or 500
    if fetch_wait >= lag:
        bad("timing.replica.fetch.wait.max.ms", "must be smaller than replica.lag.time.max.ms")
    session = tm.broker_session_timeout_ms or 9_000
    heartbeat = tm.broker_heartbeat_interval_ms or 2_000
    if heartbeat >= session:
        bad("timing.broker.heartbeat.interval.ms", "must be smaller than broker.session.timeout.ms")

    proposals: list[str] = []
    if t.quorum_required_acks is not None or c.election == "largest_leo":
        proposals.append("KIP-250")
        if t.quorum_required_acks is not None and t.quorum_required_acks > len(replicas):
            bad("topic.quorum.required.acks", "quorum.required.acks cannot exceed the replication factor")
    if acks == "min_isr":
        proposals.append("KIP-926")

    actions = list(sc.actions)
    total_ms = 0
    records_seen: set[str] = set()
    produced = 0
    consumer_ids = [c.id for c in sc.consumers]
    if len(sc.consumers) > MAX_CONSUMERS:
        bad("consumers", f"at most {MAX_CONSUMERS} consumers")
    if len(set(consumer_ids)) != len(consumer_ids):
        bad("consumers", "consumer ids must be unique")
    named = ", ".join(consumer_ids) if consumer_ids else "none"

    def check_partition(where: str, partition: int) -> None:
        if partition >= t.partitions:
            bad(where, f"the topic has {t.partitions} partition(s), numbered from 0")

    for i, a in enumerate(actions):
        path = f"actions[{i}]"
        consumer = getattr(a, "consumer", None)
        if consumer is not None:
            if consumer not in consumer_ids:
                bad(f"{path}.consumer", f"no consumer named {consumer!r}; the scenario defines {named}")
            if getattr(a, "broker", None) is not None:
                bad(path, "give either broker or consumer")
            if a.do in ("stop_fetching", "resume_fetching", "writeback"):
                bad(f"{path}.consumer", f"{a.do} acts on a broker")
            if a.do == "assign":
                for j, part in enumerate(a.partitions):
                    check_partition(f"{path}.partitions[{j}]", part)
            elif a.do == "seek":
                check_partition(f"{path}.partition", a.partition)
            elif a.do == "commit" and a.offsets is not None:
                for key in a.offsets:
                    if not key.isdigit() or int(key) >= t.partitions:
                        bad(f"{path}.offsets", f"{key!r} is not a partition (0 to {t.partitions - 1})")
            elif a.do in ("poll", "stall"):
                total_ms += a.timeout_ms if a.do == "poll" else a.ms
            continue
        if a.do == "delete_records":
            check_partition(f"{path}.partition", a.partition)
            continue
        if a.do == "produce":
            if (a.records is None) == (a.count is None):
                bad(path, "give either records or count")
                continue
            if a.partition is not None and a.partition >= t.partitions:
                bad(f"{path}.partition", f"the topic has {t.partitions} partition(s), numbered from 0")
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
                if r in records_seen:
                    where = f"{path}.records[{j}]" if a.records is not None else f"{path}.count"
                    bad(where, f"record {r!r} appears twice; records must be unique (count names its "
                        "records m0, m1, ... by the number of records produced before it)")
                records_seen.add(r)
            produced += n
            # any integer acks is accepted here: a hand-built client may send anything, and the
            # broker decides (INVALID_REQUIRED_ACKS)
        elif a.do in (
            "crash",
            "shutdown",
            "restart",
            "stop_fetching",
            "resume_fetching",
            "writeback",
            "isolate",
            "heal",
            "slow",
        ):
            if a.broker is None:
                bad(f"{path}.broker", f"{a.do} needs a broker (crash, shutdown, restart: or a consumer)")
            elif a.broker not in id_set:
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
            total_ms += a.ms
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
    if total_ms > limits.max_sim_ms:
        bad(
            "actions",
            f"the actions ask for {total_ms} ms of simulated time (advance + settle max_ms); "
            f"the limit is {limits.max_sim_ms} ms; use fewer or shorter advance/settle actions",
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
    if problems:
        raise ScenarioError(problems[:50])

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
        acks=acks,
        idempotent=idempotent,
        retries=retries,
        request_timeout_ms=request_timeout,
        delivery_timeout_ms=delivery_timeout,
        retry_backoff_ms=p.retry_backoff_ms or 100,
        retry_backoff_max_ms=1_000,
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
        consumers=list(sc.consumers),
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
