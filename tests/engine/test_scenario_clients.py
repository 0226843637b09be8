"""Part 2 of the scenario contract (../shared/design/scenario-contract-clients.md): parsing,
defaults and validation of the topic's log settings, the part-2 timings, `producers`,
`consumers` and the client and admin actions. Nothing here runs the simulator: `resolve` is what
these fields meet first, and every problem must come back as a {"path", "message"} pair."""

from __future__ import annotations

import copy
import dataclasses

import pytest

import engine
from engine.clients_spec import (
    ASSIGNOR_CLASSES,
    ConsumerConfig,
    ProducerConfig,
    Timing,
    by_duration_ns,
    java_duration_ns,
)
from engine.profiles import RETRIES_MAX
from engine.scenario import (
    LIMITS,
    MAX_CONSUMERS,
    MAX_PARTITIONS,
    MAX_PRODUCERS,
    MAX_SIM_MS,
    MAX_SIM_MS_LONG,
    Config,
    Limits,
    ScenarioError,
    parse,
    resolve,
    uses_long_time,
)
from engine.segments import LONG_MAX, LogConfig

DAY_MS = 24 * 3_600_000

# The contract's example, section by section (scenario-contract-clients.md, "Scenario additions")
CONTRACT_EXAMPLE = {
    "topic": {
        "name": "orders",
        "partitions": 3,
        "replication.factor": 1,
        "cleanup.policy": "delete",
        "segment.bytes": 1073741824,
        "segment.ms": 604800000,
        "retention.ms": 604800000,
        "retention.bytes": -1,
        "min.cleanable.dirty.ratio": 0.5,
        "delete.retention.ms": 86400000,
        "min.compaction.lag.ms": 0,
        "max.compaction.lag.ms": 9223372036854775807,
    },
    "timing": {
        "log.retention.check.interval.ms": 300000,
        "log.cleaner.backoff.ms": 15000,
        "group.initial.rebalance.delay.ms": 3000,
        "offsets.topic.num.partitions": 50,
        "offsets.retention.minutes": 10080,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
    },
    "producers": [
        {
            "id": "app",
            "enable.idempotence": True,
            "acks": "all",
            "max.in.flight.requests.per.connection": 5,
            "transactional.id": None,
            "transaction.timeout.ms": 60000,
            "partitioner.ignore.keys": False,
        }
    ],
    "consumers": [
        {
            "id": "c0",
            "group.id": "g",
            "auto.offset.reset": "latest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 5000,
            "partition.assignment.strategy": ["range", "cooperative-sticky"],
            "group.instance.id": None,
            "session.timeout.ms": 45000,
            "heartbeat.interval.ms": 3000,
            "max.poll.interval.ms": 300000,
            "max.poll.records": 500,
            "isolation.level": "read_uncommitted",
            "loop_ms": None,
        }
    ],
}


def cfg_of(doc: dict) -> Config:
    return resolve(parse(doc))


def problems_of(doc: dict) -> list[dict[str, str]]:
    with pytest.raises(ScenarioError) as info:
        resolve(parse(doc))
    problems = info.value.problems
    assert problems and all(set(p) == {"path", "message"} and p["message"] for p in problems)
    return problems


def the_problem(doc: dict, path: str) -> str:
    """The message of the problem at exactly `path` (there must be one)."""
    problems = problems_of(doc)
    found = [p["message"] for p in problems if p["path"] == path]
    assert found, f"no problem at {path}: {problems}"
    return found[0]


def with_consumers(*consumers: dict, actions: list | None = None, **extra) -> dict:
    return {"consumers": list(consumers), "actions": actions or [], **extra}


def group_consumers(*ids: str, group: str = "g") -> list[dict]:
    return [{"id": i, "group.id": group} for i in ids]


# ----------------------------------------------------------------------------------- defaults


def test_a_part1_scenario_gets_every_part2_default():
    cfg = cfg_of({"actions": [{"do": "produce", "records": ["a"]}]})
    assert cfg.topic_name == "t"
    assert cfg.log == LogConfig()
    assert (cfg.log.segment_bytes, cfg.log.segment_ms) == (1_073_741_824, 604_800_000)
    assert (cfg.log.retention_ms, cfg.log.retention_bytes) == (604_800_000, -1)
    assert cfg.log.cleanup_policy == "delete"
    assert cfg.log.min_cleanable_dirty_ratio == 0.5
    assert cfg.log.delete_retention_ms == 86_400_000
    assert (cfg.log.min_compaction_lag_ms, cfg.log.max_compaction_lag_ms) == (0, LONG_MAX)
    assert cfg.timing == Timing(
        log_retention_check_interval_ms=300_000,
        log_cleaner_backoff_ms=15_000,
        group_initial_rebalance_delay_ms=3_000,
        group_min_session_timeout_ms=6_000,
        group_max_session_timeout_ms=1_800_000,
        offsets_topic_num_partitions=50,
        offsets_retention_minutes=10_080,
        transaction_abort_timed_out_transaction_cleanup_interval_ms=10_000,
        transaction_max_timeout_ms=900_000,
    )
    assert cfg.timing.offsets_retention_ms == 7 * DAY_MS
    assert cfg.producers == (
        ProducerConfig(
            id="producer",
            acks=-1,
            enable_idempotence=True,
            retries=RETRIES_MAX,
            request_timeout_ms=30_000,
            delivery_timeout_ms=120_000,
            retry_backoff_ms=100,
            retry_backoff_max_ms=1_000,
            max_in_flight_requests_per_connection=5,
            transactional_id=None,
            transaction_timeout_ms=60_000,
            partitioner_ignore_keys=False,
            metadata_max_age_ms=300_000,
        ),
    )
    assert cfg.consumers == ()
    assert cfg.added_assignments == []
    assert cfg.notes == []
    assert cfg.max_sim_ms == MAX_SIM_MS


def test_a_part1_producer_is_the_producer_named_producer_with_the_flat_fields():
    cfg = cfg_of(
        {
            "producer": {
                "acks": 1,
                "retries": 3,
                "request.timeout.ms": 5_000,
                "delivery.timeout.ms": 20_000,
                "retry.backoff.ms": 50,
            }
        }
    )
    (p,) = cfg.producers
    assert p.id == "producer"
    assert (p.acks, p.enable_idempotence, p.retries) == (1, False, 3)  # defaulted idempotence: off
    flat = (
        cfg.acks,
        cfg.idempotent,
        cfg.retries,
        cfg.request_timeout_ms,
        cfg.delivery_timeout_ms,
        cfg.retry_backoff_ms,
        cfg.retry_backoff_max_ms,
    )
    assert flat == (
        p.acks,
        p.enable_idempotence,
        p.retries,
        p.request_timeout_ms,
        p.delivery_timeout_ms,
        p.retry_backoff_ms,
        p.retry_backoff_max_ms,
    )


def test_consumer_defaults_are_kafka_4_defaults():
    cfg = cfg_of(with_consumers({"id": "c0", "group.id": "g"}))
    assert cfg.consumers == (
        ConsumerConfig(
            id="c0",
            group_id="g",
            auto_offset_reset="latest",
            enable_auto_commit=True,
            auto_commit_interval_ms=5_000,
            partition_assignment_strategy=("range", "cooperative-sticky"),
            group_instance_id=None,
            session_timeout_ms=45_000,
            heartbeat_interval_ms=3_000,
            max_poll_interval_ms=300_000,
            max_poll_records=500,
            isolation_level="read_uncommitted",
            loop_ms=None,
            group_protocol="classic",
        ),
    )
    assert cfg.consumers[0].rebalance_protocol == "eager"  # range is eager only


def test_a_consumer_without_a_group_does_not_auto_commit():
    (c,) = cfg_of(with_consumers({"id": "solo"})).consumers
    assert c.group_id is None and c.enable_auto_commit is False


def test_the_contract_example_resolves_to_its_own_values():
    cfg = cfg_of(CONTRACT_EXAMPLE)
    assert cfg.topic_name == "orders" and len(cfg.assignments) == 3
    assert cfg.log == LogConfig()  # the example spells out the defaults
    assert cfg.timing == Timing()
    (app,) = cfg.producers
    assert app.id == "app" and app.acks == -1 and app.enable_idempotence and not app.transactional
    (c0,) = cfg.consumers
    assert c0 == ConsumerConfig(id="c0", group_id="g")
    assert cfg.max_sim_ms == MAX_SIM_MS_LONG


def test_resolved_settings_are_frozen():
    cfg = cfg_of(CONTRACT_EXAMPLE)
    for obj, attr in (
        (cfg.producers[0], "acks"),
        (cfg.consumers[0], "group_id"),
        (cfg.timing, "log_cleaner_backoff_ms"),
        (cfg.log, "segment_bytes"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, attr, None)
    assert isinstance(cfg.producers, tuple) and isinstance(cfg.consumers, tuple)


# ------------------------------------------------------------------------ every key, by its alias

TOPIC_KEYS = [
    ("name", "orders.v2_x-1", "topic_name", "orders.v2_x-1"),
    ("segment.bytes", 2_000_000, "log.segment_bytes", 2_000_000),
    ("segment.ms", 3_600_000, "log.segment_ms", 3_600_000),
    ("retention.ms", -1, "log.retention_ms", -1),
    ("retention.bytes", 5_000_000, "log.retention_bytes", 5_000_000),
    ("min.cleanable.dirty.ratio", 0.25, "log.min_cleanable_dirty_ratio", 0.25),
    ("delete.retention.ms", 1_000, "log.delete_retention_ms", 1_000),
    ("min.compaction.lag.ms", 5_000, "log.min_compaction_lag_ms", 5_000),
    ("max.compaction.lag.ms", 60_000, "log.max_compaction_lag_ms", 60_000),
    ("cleanup.policy", "compact", "log.cleanup_policy", "compact"),
]
TIMING_KEYS = [
    ("log.retention.check.interval.ms", 1_000, "log_retention_check_interval_ms"),
    ("log.cleaner.backoff.ms", 2_000, "log_cleaner_backoff_ms"),
    ("group.initial.rebalance.delay.ms", 0, "group_initial_rebalance_delay_ms"),
    ("group.min.session.timeout.ms", 1_000, "group_min_session_timeout_ms"),
    ("group.max.session.timeout.ms", 60_000, "group_max_session_timeout_ms"),
    ("offsets.topic.num.partitions", 3, "offsets_topic_num_partitions"),
    ("offsets.retention.minutes", 1_440, "offsets_retention_minutes"),
    (
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        1_000,
        "transaction_abort_timed_out_transaction_cleanup_interval_ms",
    ),
    ("transaction.max.timeout.ms", 60_000, "transaction_max_timeout_ms"),
]
PRODUCER_KEYS = [
    ("acks", 1, "acks", 1),
    ("enable.idempotence", False, "enable_idempotence", False),
    ("retries", 7, "retries", 7),
    ("request.timeout.ms", 10_000, "request_timeout_ms", 10_000),
    ("delivery.timeout.ms", 90_000, "delivery_timeout_ms", 90_000),
    ("retry.backoff.ms", 250, "retry_backoff_ms", 250),
    ("max.in.flight.requests.per.connection", 1, "max_in_flight_requests_per_connection", 1),
    ("transactional.id", "tx-1", "transactional_id", "tx-1"),
    ("transaction.timeout.ms", 10_000, "transaction_timeout_ms", 10_000),
    ("partitioner.ignore.keys", True, "partitioner_ignore_keys", True),
    ("metadata.max.age.ms", 60_000, "metadata_max_age_ms", 60_000),
    ("metadata.max.age.ms", 0, "metadata_max_age_ms", 0),
]
CONSUMER_KEYS = [
    ("group.id", "other", "group_id", "other"),
    ("auto.offset.reset", "earliest", "auto_offset_reset", "earliest"),
    ("auto.offset.reset", "none", "auto_offset_reset", "none"),
    ("enable.auto.commit", False, "enable_auto_commit", False),
    ("auto.commit.interval.ms", 1_000, "auto_commit_interval_ms", 1_000),
    ("partition.assignment.strategy", ["roundrobin"], "partition_assignment_strategy", ("roundrobin",)),
    ("group.instance.id", "i3", "group_instance_id", "i3"),
    ("session.timeout.ms", 10_000, "session_timeout_ms", 10_000),
    ("heartbeat.interval.ms", 1_000, "heartbeat_interval_ms", 1_000),
    ("max.poll.interval.ms", 20_000, "max_poll_interval_ms", 20_000),
    ("max.poll.records", 10, "max_poll_records", 10),
    ("isolation.level", "read_committed", "isolation_level", "read_committed"),
    ("loop_ms", 100, "loop_ms", 100),
    ("group.protocol", "classic", "group_protocol", "classic"),
]


def _attr(obj, dotted: str):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize(("key", "value", "attr", "expected"), TOPIC_KEYS, ids=[k[0] for k in TOPIC_KEYS])
def test_every_topic_key_lands_in_its_field(key, value, attr, expected):
    assert _attr(cfg_of({"topic": {key: value}}), attr) == expected


@pytest.mark.parametrize(("key", "value", "attr"), TIMING_KEYS, ids=[k[0] for k in TIMING_KEYS])
def test_every_timing_key_lands_in_its_field(key, value, attr):
    assert getattr(cfg_of({"timing": {key: value}}).timing, attr) == value


@pytest.mark.parametrize(
    ("key", "value", "attr", "expected"), PRODUCER_KEYS, ids=[k[0] for k in PRODUCER_KEYS]
)
def test_every_producer_key_lands_in_its_field(key, value, attr, expected):
    # idempotence needs acks=all, retries > 0 and at most 5 in flight: switch it off where a key
    # conflicts, so each key is seen on its own
    base = {"enable.idempotence": False} if key in ("acks", "retries") else {}
    (p,) = cfg_of({"producers": [{"id": "app", **base, key: value}]}).producers
    assert getattr(p, attr) == expected
    # the part-1 producer object takes the same keys
    (q,) = cfg_of({"producer": {**base, key: value}}).producers
    assert getattr(q, attr) == expected and q.id == "producer"


@pytest.mark.parametrize(
    ("key", "value", "attr", "expected"), CONSUMER_KEYS, ids=[f"{k[0]}={k[1]}" for k in CONSUMER_KEYS]
)
def test_every_consumer_key_lands_in_its_field(key, value, attr, expected):
    (c,) = cfg_of(with_consumers({"id": "c0", "group.id": "g", key: value})).consumers
    assert getattr(c, attr) == expected


@pytest.mark.parametrize(
    "spelling", ["compact,delete", "delete,compact", "compact, delete", " delete , compact"]
)
def test_both_cleanup_policies_have_one_spelling(spelling):
    log = cfg_of({"topic": {"cleanup.policy": spelling}}).log
    assert log.cleanup_policy == "compact,delete" and log.compact and log.delete


@pytest.mark.parametrize("policy", ["", "none", "compact,compact", "delete,", "Compact", "compact;delete"])
def test_unknown_cleanup_policies_are_refused(policy):
    assert "cleanup policy" in the_problem({"topic": {"cleanup.policy": policy}}, "topic.cleanup.policy")


# ------------------------------------------------------------------------------ assignor names


@pytest.mark.parametrize(("short", "cls"), list(ASSIGNOR_CLASSES.items()))
def test_assignor_class_names_become_short_names(short, cls):
    (c,) = cfg_of(
        with_consumers({"id": "c0", "group.id": "g", "partition.assignment.strategy": [cls]})
    ).consumers
    assert c.partition_assignment_strategy == (short,)


def test_kafka_default_strategy_in_class_names_is_the_default():
    classes = [
        "org.apache.kafka.clients.consumer.RangeAssignor",
        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
    ]
    (c,) = cfg_of(
        with_consumers({"id": "c0", "group.id": "g", "partition.assignment.strategy": classes})
    ).consumers
    assert c.partition_assignment_strategy == ConsumerConfig("x").partition_assignment_strategy


def test_cooperative_sticky_alone_rebalances_cooperatively():
    (c,) = cfg_of(
        with_consumers({"id": "c0", "group.id": "g", "partition.assignment.strategy": ["cooperative-sticky"]})
    ).consumers
    assert c.rebalance_protocol == "cooperative"


@pytest.mark.parametrize("name", ["Range", "RangeAssignor", "uniform", "org.example.MyAssignor"])
def test_unknown_assignors_are_refused_with_the_known_names(name):
    doc = with_consumers({"id": "c0", "group.id": "g", "partition.assignment.strategy": ["range", name]})
    msg = the_problem(doc, "consumers[0].partition.assignment.strategy[1]")
    assert name in msg and "cooperative-sticky" in msg and ASSIGNOR_CLASSES["range"] in msg


def test_an_assignor_named_twice_is_refused_even_in_two_spellings():
    doc = with_consumers(
        {"id": "c0", "group.id": "g", "partition.assignment.strategy": ["range", ASSIGNOR_CLASSES["range"]]}
    )
    assert "twice" in the_problem(doc, "consumers[0].partition.assignment.strategy[1]")


def test_a_group_member_needs_an_assignor():
    doc = with_consumers({"id": "c0", "group.id": "g", "partition.assignment.strategy": []})
    assert "at least one" in the_problem(doc, "consumers[0].partition.assignment.strategy")
    (c,) = cfg_of(
        with_consumers({"id": "c0", "partition.assignment.strategy": []})
    ).consumers  # no group: fine
    assert c.partition_assignment_strategy == ()


# --------------------------------------------------------------------------- producer/producers


def test_producer_and_producers_together_are_refused():
    doc = {"producer": {"acks": "all"}, "producers": [{"id": "app"}]}
    msg = the_problem(doc, "producer")
    assert "producers" in msg and "not both" in msg
    assert problems_of({"producer": {}, "producers": [{"id": "app"}]})  # even an empty producer object


def test_an_empty_producers_list_is_refused():
    assert "at least one" in the_problem({"producers": []}, "producers")


def test_producers_are_resolved_in_order_each_like_the_part1_producer():
    cfg = cfg_of(
        {"producers": [{"id": "a"}, {"id": "b", "acks": 1}, {"id": "c", "enable.idempotence": False}]}
    )
    assert [p.id for p in cfg.producers] == ["a", "b", "c"]
    a, b, c = cfg.producers
    assert (a.acks, a.enable_idempotence) == (-1, True)
    assert (b.acks, b.enable_idempotence) == (1, False)  # defaulted idempotence: silently off
    assert (c.acks, c.enable_idempotence) == (-1, False)
    assert (cfg.acks, cfg.idempotent) == (a.acks, a.enable_idempotence)  # flat fields: producers[0]


def test_producer_problems_carry_the_producer_path():
    doc = {"producers": [{"id": "a"}, {"id": "b", "enable.idempotence": True, "acks": 1}]}
    assert "acks to all" in the_problem(doc, "producers[1].enable.idempotence")
    doc = {"producers": [{"id": "a", "request.timeout.ms": 60_000, "delivery.timeout.ms": 30_000}]}
    assert the_problem(doc, "producers[0].delivery.timeout.ms")
    doc = {"producers": [{"id": "a", "enable.idempotence": True, "retries": 0}]}
    assert the_problem(doc, "producers[0].retries")


def test_more_than_five_in_flight_with_idempotence():
    explicit = {
        "producers": [{"id": "a", "enable.idempotence": True, "max.in.flight.requests.per.connection": 6}]
    }
    assert "at most 5" in the_problem(explicit, "producers[0].max.in.flight.requests.per.connection")
    defaulted = {"producers": [{"id": "a", "max.in.flight.requests.per.connection": 6}]}
    assert "KAFKA-17927" in the_problem(defaulted, "producers[0].max.in.flight.requests.per.connection")
    (p,) = cfg_of({**defaulted, "kafka_version": "3.6"}).producers  # before 4.0: silently off
    assert p.enable_idempotence is False and p.max_in_flight_requests_per_connection == 6
    (q,) = cfg_of(
        {"producers": [{"id": "a", "enable.idempotence": False, "max.in.flight.requests.per.connection": 6}]}
    ).producers
    assert q.enable_idempotence is False


def test_a_transactional_id_asks_for_idempotence():
    (p,) = cfg_of({"kafka_version": "1.1", "producers": [{"id": "a", "transactional.id": "tx"}]}).producers
    assert (p.acks, p.enable_idempotence, p.retries, p.transactional) == (-1, True, RETRIES_MAX, True)
    for conflict, why in (
        ({"enable.idempotence": False}, "enable.idempotence is false"),
        ({"acks": 1}, "acks is not all"),
        ({"retries": 0}, "retries is 0"),
    ):
        doc = {"producers": [{"id": "a", "transactional.id": "tx", **conflict}]}
        msg = the_problem(doc, "producers[0].transactional.id")
        assert "Cannot set a transactional.id without also enabling idempotence" in msg and why in msg
    old = {"kafka_version": "0.10", "producers": [{"id": "a", "transactional.id": "tx"}]}
    assert "0.11" in the_problem(old, "producers[0].transactional.id")


def test_two_producers_may_share_a_transactional_id():
    # the zombie-fencing story: two instances of one transactional application
    cfg = cfg_of(
        {"producers": [{"id": "old", "transactional.id": "tx"}, {"id": "new", "transactional.id": "tx"}]}
    )
    assert [p.transactional_id for p in cfg.producers] == ["tx", "tx"]


# ------------------------------------------------------------------------------------ ids


def test_duplicate_ids_are_refused():
    assert "twice" in the_problem({"producers": [{"id": "a"}, {"id": "a"}]}, "producers[1].id")
    assert "twice" in the_problem(with_consumers(*group_consumers("c0", "c0")), "consumers[1].id")
    doc = {"producers": [{"id": "app"}], "consumers": [{"id": "app"}]}
    assert "producer" in the_problem(doc, "consumers[0].id")


@pytest.mark.parametrize("bad_id", ["", "c 0", "-c", "c/0", "é", "x" * 33])
def test_ids_are_short_safe_strings(bad_id):
    assert problems_of(with_consumers({"id": bad_id}))
    assert problems_of({"producers": [{"id": bad_id}]})


def test_an_id_is_required():
    assert the_problem(with_consumers({"group.id": "g"}), "consumers[0].id")
    assert the_problem({"producers": [{"acks": "all"}]}, "producers[0].id")


@pytest.mark.parametrize("good_id", ["c0", "C-1", "app.v2", "x_y", "9", "x" * 32])
def test_safe_ids_are_accepted(good_id):
    assert cfg_of(with_consumers({"id": good_id})).consumers[0].id == good_id


# --------------------------------------------------------------------------- consumer validation


def test_the_kip848_protocol_is_refused_for_now():
    msg = the_problem(
        with_consumers({"id": "c0", "group.id": "g", "group.protocol": "consumer"}),
        "consumers[0].group.protocol",
    )
    assert "KIP-848" in msg and "not built" in msg


def test_auto_commit_without_a_group_is_refused():
    msg = the_problem(
        with_consumers({"id": "c0", "enable.auto.commit": True}), "consumers[0].enable.auto.commit"
    )
    assert "group id (null)" in msg


def test_a_static_member_needs_a_group():
    assert the_problem(
        with_consumers({"id": "c0", "group.instance.id": "i0"}), "consumers[0].group.instance.id"
    )


def test_heartbeat_must_be_below_the_session_timeout():
    doc = with_consumers(
        {"id": "c0", "group.id": "g", "session.timeout.ms": 6_000, "heartbeat.interval.ms": 6_000}
    )
    assert "Heartbeat must be set lower" in the_problem(doc, "consumers[0].heartbeat.interval.ms")


def test_session_timeout_within_the_brokers_bounds():
    low = with_consumers(
        {"id": "c0", "group.id": "g", "session.timeout.ms": 5_999, "heartbeat.interval.ms": 1_000}
    )
    assert "INVALID_SESSION_TIMEOUT" in the_problem(low, "consumers[0].session.timeout.ms")
    high = with_consumers({"id": "c0", "group.id": "g", "session.timeout.ms": 1_800_001})
    assert "1800000" in the_problem(high, "consumers[0].session.timeout.ms")
    scaled = {**low, "timing": {"group.min.session.timeout.ms": 1_000}}  # a scene scales timeouts down
    assert cfg_of(scaled).consumers[0].session_timeout_ms == 5_999
    crossed = {"timing": {"group.min.session.timeout.ms": 10_000, "group.max.session.timeout.ms": 9_000}}
    assert the_problem(crossed, "timing.group.min.session.timeout.ms")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("PT10M", 600),
        ("pt10m", 600),  # java.time.Duration takes its letters in either case
        ("P1D", 86_400),
        ("P1DT2H3M4.5S", 93_784.5),
        ("PT0.5S", 0.5),
        ("PT1,25S", 1.25),
        ("PT0S", 0),
        ("-PT-1H", 3_600),  # the sign before P negates the whole
        ("PT-1H30M", -1_800),
        ("PT-0.5S", -0.5),  # the fraction takes the seconds' sign
        ("P1Dt", 86_400),  # the JDK's "T with nothing after it" check looks for an upper-case T only
    ],
)
def test_java_duration_grammar(text, seconds):
    assert java_duration_ns(text) == int(seconds * 1_000_000_000)


@pytest.mark.parametrize(
    "text", ["", "1h", "PT", "P1DT", "P", "PT1H2H", "P1W", "P1Y", "PT1.0000000001S", "P106751991167301D"]
)
def test_java_duration_refusals(text):
    with pytest.raises(ValueError):
        java_duration_ns(text)


def test_by_duration_resolves_on_4_1_only():
    doc = with_consumers({"id": "c0", "group.id": "g", "auto.offset.reset": "by_duration:PT1H"})
    c = cfg_of(doc).consumers[0]
    assert c.auto_offset_reset == "by_duration:PT1H"
    assert c.reset_duration_ns == by_duration_ns("by_duration:PT1H") == 3_600 * 1_000_000_000
    earliest = cfg_of(with_consumers({"id": "c0", "auto.offset.reset": "earliest"})).consumers[0]
    assert earliest.reset_duration_ns is None
    old = {**doc, "kafka_version": "3.6"}
    assert "KIP-1106" in the_problem(old, "consumers[0].auto.offset.reset")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("auto.offset.reset", "smallest"),
        ("auto.offset.reset", "by_duration:1h"),
        ("auto.offset.reset", "by_duration:-PT1H"),
        ("isolation.level", "READ_COMMITTED"),
        ("loop_ms", 0),
        ("loop_ms", MAX_SIM_MS_LONG + 1),
        ("max.poll.records", 0),
        ("session.timeout.ms", "45s"),
        ("group.id", ""),
        ("partition.assignment.strategy", "range"),
        ("colour", "blue"),
    ],
)
def test_bad_consumer_values_are_refused_at_their_path(key, value):
    problems = problems_of(with_consumers({"id": "c0", "group.id": "g", key: value}))
    assert any(p["path"] == f"consumers[0].{key}" for p in problems), problems


# --------------------------------------------------------------------------------- topic values


@pytest.mark.parametrize("name", ["t", "orders", "a.b_c-D9", "x" * 249, "..a", "_x"])
def test_legal_topic_names(name):
    assert cfg_of({"topic": {"name": name}}).topic_name == name


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("", "empty"),
        (".", '"." or ".."'),
        ("..", '"." or ".."'),
        ("x" * 250, "249"),
        ("a b", "ASCII alphanumerics"),
        ("é", "ASCII alphanumerics"),
        ("a/b", "ASCII alphanumerics"),
        ("__consumer_offsets", "internal"),
        ("__transaction_state", "internal"),
    ],
)
def test_illegal_topic_names(name, words):
    assert words in the_problem({"topic": {"name": name}}, "topic.name")


def test_segment_bytes_below_the_4x_minimum_is_accepted_with_a_note():
    cfg = cfg_of({"topic": {"segment.bytes": 1_000}})
    assert cfg.log.segment_bytes == 1_000
    (note,) = cfg.notes
    assert "segment.bytes=1000" in note and "1048576" in note
    assert cfg_of({"topic": {"segment.bytes": 1_048_576}}).notes == []
    assert cfg_of({"kafka_version": "3.6", "topic": {"segment.bytes": 1_000}}).notes == []  # 14 bytes then
    assert the_problem({"topic": {"segment.bytes": 13}}, "topic.segment.bytes")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("retention.ms", -2),
        ("retention.bytes", -2),
        ("segment.ms", 0),
        ("min.cleanable.dirty.ratio", 1.5),
        ("min.cleanable.dirty.ratio", -0.1),
        ("delete.retention.ms", -1),
        ("min.compaction.lag.ms", -1),
        ("max.compaction.lag.ms", 0),
        ("segment.bytes", 2**31),
        ("cleanup.policy", ["compact"]),
    ],
)
def test_out_of_range_log_settings_are_refused(key, value):
    problems = problems_of({"topic": {key: value}})
    assert any(p["path"] == f"topic.{key}" for p in problems), problems


def test_min_compaction_lag_above_max_is_refused():
    doc = {"topic": {"cleanup.policy": "compact", "min.compaction.lag.ms": 10, "max.compaction.lag.ms": 5}}
    assert "max.compaction.lag.ms (5) < min.compaction.lag.ms (10)" in the_problem(
        doc, "topic.min.compaction.lag.ms"
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("log.retention.check.interval.ms", 0),
        ("offsets.topic.num.partitions", 0),
        ("offsets.retention.minutes", 0),
        ("group.initial.rebalance.delay.ms", -1),
        ("transaction.abort.timed.out.transaction.cleanup.interval.ms", 0),
        ("log.cleaner.backoff.ms", 0),
    ],
)
def test_out_of_range_timings_are_refused(key, value):
    problems = problems_of({"timing": {key: value}})
    assert any(p["path"] == f"timing.{key}" for p in problems), problems


# ----------------------------------------------------------------------------------- actions


TWO_CONSUMERS = group_consumers("c0", "c1")


def test_an_unknown_consumer_is_named_with_the_known_ones():
    doc = with_consumers(
        *TWO_CONSUMERS, actions=[{"do": "advance", "ms": 1}] * 3 + [{"do": "subscribe", "consumer": "c9"}]
    )
    assert the_problem(doc, "actions[3].consumer") == "no consumer named 'c9'; the scenario defines c0, c1"
    none = {"actions": [{"do": "poll", "consumer": "c0"}]}
    assert (
        the_problem(none, "actions[0].consumer")
        == "no consumer named 'c0'; the scenario defines no consumers"
    )


@pytest.mark.parametrize(
    "action",
    [
        {"do": "subscribe", "consumer": "c9"},
        {"do": "assign", "consumer": "c9", "partitions": [0]},
        {"do": "poll", "consumer": "c9"},
        {"do": "commit", "consumer": "c9"},
        {"do": "seek", "consumer": "c9", "partition": 0, "offset": 0},
        {"do": "stall", "consumer": "c9", "ms": 10},
        {"do": "crash", "consumer": "c9"},
        {"do": "restart", "consumer": "c9"},
        {"do": "shutdown", "consumer": "c9"},
    ],
    ids=lambda a: a["do"],
)
def test_every_consumer_reference_is_checked(action):
    doc = with_consumers(*TWO_CONSUMERS, actions=[action])
    assert "no consumer named 'c9'" in the_problem(doc, "actions[0].consumer")


@pytest.mark.parametrize(
    "action",
    [
        {"do": "produce", "records": ["a"], "producer": "p9"},
        {"do": "init_transactions", "producer": "p9"},
        {"do": "begin_transaction", "producer": "p9"},
        {"do": "commit_transaction", "producer": "p9"},
        {"do": "abort_transaction", "producer": "p9"},
        {"do": "crash", "producer": "p9"},
        {"do": "restart", "producer": "p9"},
        {"do": "shutdown", "producer": "p9"},
    ],
    ids=lambda a: a["do"],
)
def test_every_producer_reference_is_checked(action):
    doc = {"producers": [{"id": "a", "transactional.id": "tx"}, {"id": "b"}], "actions": [action]}
    assert the_problem(doc, "actions[0].producer") == "no producer named 'p9'; the scenario defines a, b"


def test_the_part1_producer_answers_to_producer():
    doc = {
        "producer": {"transactional.id": "tx"},
        "actions": [
            {"do": "init_transactions", "producer": "producer"},
            {"do": "begin_transaction"},
            {"do": "produce", "records": ["a"], "producer": "producer"},
            {"do": "commit_transaction"},
            {"do": "crash", "producer": "producer"},
            {"do": "restart", "producer": "producer"},
        ],
    }
    assert cfg_of(doc).producers[0].transactional_id == "tx"


def test_with_several_producers_an_action_says_which():
    doc = {
        "producers": [{"id": "a", "transactional.id": "x"}, {"id": "b", "transactional.id": "y"}],
        "actions": [{"do": "produce", "records": ["r"]}, {"do": "init_transactions"}],
    }
    problems = problems_of(doc)
    assert {p["path"] for p in problems} == {"actions[0].producer", "actions[1].producer"}
    assert "say which one" in problems[0]["message"] and "a, b" in problems[0]["message"]
    doc["actions"] = [  # a transactional producer sends inside a transaction (engine/transactions.py)
        {"do": "init_transactions", "producer": "b"},
        {"do": "begin_transaction", "producer": "b"},
        {"do": "produce", "records": ["r"], "producer": "b"},
        {"do": "init_transactions", "producer": "a"},
    ]
    assert cfg_of(doc).actions[2].producer == "b"


@pytest.mark.parametrize(
    "do", ["init_transactions", "begin_transaction", "commit_transaction", "abort_transaction"]
)
def test_transactions_need_a_transactional_producer(do):
    doc = {"producers": [{"id": "app"}], "actions": [{"do": do, "producer": "app"}]}
    assert "non-transactional producer" in the_problem(doc, "actions[0].producer")
    assert "non-transactional" in the_problem({"actions": [{"do": do}]}, "actions[0]")


def test_produce_part2_fields_parse():
    doc = {
        "topic": {"partitions": 2, "replication.factor": 1},
        "actions": [
            {
                "do": "produce",
                "records": ["v1", None],
                "key": "K1",
                "bytes": 1_000,
                "timestamp_ms": 5,
                "lose_response": True,
                "partition": 1,
            },
            {"do": "produce", "records": [None], "key": "K1"},
            {"do": "produce", "records": ["v2"], "key": None},
        ],
    }
    a = cfg_of(doc).actions[0]
    assert (a.records, a.key, a.bytes_, a.timestamp_ms, a.lose_response) == (
        ["v1", None],
        "K1",
        1_000,
        5,
        True,
    )


def test_a_tombstone_needs_a_key():
    doc = {"actions": [{"do": "produce", "records": ["a", None]}]}
    assert "tombstone" in the_problem(doc, "actions[0].records[1]")


def test_losing_a_response_needs_a_response():
    doc = {"actions": [{"do": "produce", "records": ["a"], "acks": 0, "lose_response": True}]}
    assert the_problem(doc, "actions[0].lose_response")
    doc = {"producer": {"acks": 0}, "actions": [{"do": "produce", "records": ["a"], "lose_response": True}]}
    assert the_problem(doc, "actions[0].lose_response")


@pytest.mark.parametrize(
    ("field", "value"), [("bytes", 0), ("timestamp_ms", -1), ("lose_response", "yes"), ("producer", "")]
)
def test_bad_produce_fields(field, value):
    problems = problems_of({"actions": [{"do": "produce", "records": ["a"], field: value}]})
    assert any(p["path"] == f"actions[0].{field}" for p in problems), problems


def test_subscribe_and_commit_need_a_group():
    doc = with_consumers(
        {"id": "solo"},
        actions=[
            {"do": "subscribe", "consumer": "solo"},
            {"do": "commit", "consumer": "solo"},
            {"do": "assign", "consumer": "solo", "partitions": [0]},
            {"do": "poll", "consumer": "solo"},
        ],
    )
    problems = problems_of(doc)
    assert [p["path"] for p in problems] == ["actions[0].consumer", "actions[1].consumer"]
    assert all("group.id" in p["message"] for p in problems)


def test_subscribe_names_the_topic():
    doc = with_consumers(
        *TWO_CONSUMERS,
        topic={"name": "orders"},
        actions=[
            {"do": "subscribe", "consumer": "c0", "topics": ["orders"]},
            {"do": "subscribe", "consumer": "c1"},
        ],
    )
    assert cfg_of(doc).actions[1].topics is None
    doc["actions"] = [{"do": "subscribe", "consumer": "c0", "topics": ["orders", "t"]}]
    assert "'orders'" in the_problem(doc, "actions[0].topics[1]")
    doc["actions"] = [{"do": "subscribe", "consumer": "c0", "topics": []}]
    assert the_problem(doc, "actions[0].topics")


def test_partition_references_follow_the_partition_count():
    doc = with_consumers(
        *TWO_CONSUMERS,
        topic={"partitions": 2, "replication.factor": 3},
        actions=[
            {"do": "assign", "consumer": "c0", "partitions": [0, 2]},
            {"do": "seek", "consumer": "c0", "partition": 3, "offset": "end"},
            {"do": "commit", "consumer": "c0", "offsets": {"1": 5, "4": 2}},
            {"do": "delete_records", "partition": 2, "offset": 3},
            {"do": "produce", "records": ["a"], "partition": 2},
            {"do": "add_partitions", "count": 5},
            {"do": "assign", "consumer": "c1", "partitions": [2, 3, 4]},
            {"do": "seek", "consumer": "c1", "partition": 4, "offset": "beginning"},
            {"do": "commit", "consumer": "c1", "offsets": {"4": 0}},
            {"do": "delete_records", "partition": 4, "offset": -1},
            {"do": "produce", "records": ["b"], "partition": 4},
        ],
    )
    problems = problems_of(doc)
    assert [p["path"] for p in problems] == [
        "actions[0].partitions[1]",
        "actions[1].partition",
        "actions[2].offsets.4",
        "actions[3].partition",
        "actions[4].partition",
    ]
    assert all(p["message"] == "the topic has 2 partition(s), numbered from 0" for p in problems)


def test_add_partitions_places_the_new_partitions():
    cfg = cfg_of(
        {
            "topic": {"partitions": 2, "replication.factor": 3},
            "actions": [{"do": "add_partitions", "count": 3}, {"do": "add_partitions", "count": 5}],
        }
    )
    assert len(cfg.assignments) == 2
    assert cfg.added_assignments == [[3, 1, 2], [1, 2, 3], [2, 3, 1]]  # partitions 2, 3, 4, striped


def test_add_partitions_only_grows_within_the_cap():
    doc = {
        "topic": {"partitions": 3, "replication.factor": 1},
        "actions": [{"do": "add_partitions", "count": 3}],
    }
    assert the_problem(doc, "actions[0].count") == "Topic already has 3 partitions."
    doc["actions"] = [{"do": "add_partitions", "count": 2}]
    assert "higher than the requested 2" in the_problem(doc, "actions[0].count")
    doc["actions"] = [{"do": "add_partitions", "count": MAX_PARTITIONS + 1}]
    assert str(MAX_PARTITIONS) in the_problem(doc, "actions[0].count")
    doc["actions"] = [{"do": "add_partitions", "count": MAX_PARTITIONS}]
    assert len(cfg_of(doc).added_assignments) == MAX_PARTITIONS - 3


def test_commit_offsets_are_partition_numbers():
    doc = with_consumers(
        *TWO_CONSUMERS, actions=[{"do": "commit", "consumer": "c0", "offsets": {"x": 1, "01": 2}}]
    )
    assert [p["path"] for p in problems_of(doc)] == ["actions[0].offsets.x", "actions[0].offsets.01"]
    doc["actions"] = [{"do": "commit", "consumer": "c0", "offsets": {"0": -1}}]
    assert problems_of(doc)
    doc["actions"] = [
        {"do": "commit", "consumer": "c0", "offsets": {"0": 5}, "async": True},
        {"do": "commit", "consumer": "c1"},
    ]
    first, second = cfg_of(doc).actions
    assert (first.offsets, first.async_, second.offsets, second.async_) == ({"0": 5}, True, None, False)


def test_poll_defaults_and_seek_offsets():
    doc = with_consumers(
        *TWO_CONSUMERS,
        actions=[
            {"do": "poll", "consumer": "c0"},
            {"do": "poll", "consumer": "c0", "max_records": 3, "timeout_ms": 0},
            {"do": "seek", "consumer": "c0", "partition": 0, "offset": 7},
        ],
    )
    poll, poll2, seek = cfg_of(doc).actions
    assert (poll.timeout_ms, poll.max_records) == (1_000, None)
    assert (poll2.timeout_ms, poll2.max_records) == (0, 3)
    assert seek.offset == 7
    for bad in (
        {"do": "poll", "consumer": "c0", "max_records": 0},
        {"do": "seek", "consumer": "c0", "partition": 0, "offset": -1},
        {"do": "stall", "consumer": "c0", "ms": 0},
        {"do": "delete_records", "partition": 0, "offset": -2},
    ):
        assert problems_of(with_consumers(*TWO_CONSUMERS, actions=[bad]))


def test_crash_restart_shutdown_name_exactly_one_process():
    base = with_consumers(*TWO_CONSUMERS, producers=[{"id": "app"}])
    for do in ("crash", "restart", "shutdown"):
        for target in ({"broker": 1}, {"consumer": "c1"}, {"producer": "app"}):
            doc = copy.deepcopy(base) | {"actions": [{"do": do, **target}]}
            cfg_of(doc)
        for targets in ({}, {"broker": 1, "consumer": "c0"}, {"consumer": "c0", "producer": "app"}):
            doc = copy.deepcopy(base) | {"actions": [{"do": do, **targets}]}
            assert "exactly one of broker, consumer or producer" in the_problem(doc, "actions[0]")
    doc = copy.deepcopy(base) | {"actions": [{"do": "crash", "consumer": "c0", "lose_unflushed": True}]}
    assert "only a broker" in the_problem(doc, "actions[0].lose_unflushed")
    doc = copy.deepcopy(base) | {"actions": [{"do": "stop_fetching", "consumer": "c0"}]}
    assert problems_of(doc)  # the other broker actions still take a broker only


def test_unknown_actions_list_the_new_ones():
    msg = the_problem({"actions": [{"do": "unsubscribe", "consumer": "c0"}]}, "actions[0]")
    for tag in (
        "subscribe",
        "assign",
        "poll",
        "commit",
        "seek",
        "stall",
        "init_transactions",
        "begin_transaction",
        "commit_transaction",
        "abort_transaction",
        "add_partitions",
        "delete_records",
    ):
        assert tag in msg


# ---------------------------------------------------------------------------------------- caps


def test_limits_report_the_new_caps():
    assert LIMITS["max_consumers"] == MAX_CONSUMERS == 12
    assert LIMITS["max_producers"] == MAX_PRODUCERS == 8
    assert LIMITS["max_partitions"] == MAX_PARTITIONS == 12
    assert LIMITS["max_sim_ms"] == MAX_SIM_MS
    assert LIMITS["max_sim_ms_long"] == MAX_SIM_MS_LONG >= 8 * DAY_MS
    assert engine.LIMITS == LIMITS


def test_client_counts_are_capped():
    doc = {"producers": [{"id": f"p{i}"} for i in range(MAX_PRODUCERS + 1)]}
    assert f"limit of {MAX_PRODUCERS}" in the_problem(doc, "producers")
    assert len(cfg_of({"producers": doc["producers"][:-1]}).producers) == MAX_PRODUCERS
    doc = with_consumers(*({"id": f"c{i}"} for i in range(MAX_CONSUMERS + 1)))
    assert f"limit of {MAX_CONSUMERS}" in the_problem(doc, "consumers")
    assert (
        len(cfg_of(with_consumers(*({"id": f"c{i}"} for i in range(MAX_CONSUMERS)))).consumers)
        == MAX_CONSUMERS
    )


def _advance_days(days: float, **extra) -> dict:
    return {"actions": [{"do": "advance", "ms": int(days * DAY_MS)}], **extra}


@pytest.mark.parametrize(
    "extra",
    [
        {"consumers": [{"id": "c0"}]},
        {"producers": [{"id": "app"}]},
        {"topic": {"retention.ms": 60_000}},
        {"topic": {"segment.bytes": 1_048_576}},
        {"topic": {"cleanup.policy": "compact"}},
        {"timing": {"offsets.retention.minutes": 1}},
    ],
    ids=["consumers", "producers", "retention.ms", "segment.bytes", "cleanup.policy", "offsets.retention"],
)
def test_part2_scenarios_may_run_eight_days_and_more(extra):
    cfg = cfg_of(_advance_days(8, **extra))
    assert cfg.max_sim_ms == MAX_SIM_MS_LONG
    assert cfg_of(
        _advance_days(5, **extra)
        | {"actions": [{"do": "advance", "ms": 5 * DAY_MS}, {"do": "advance", "ms": 5 * DAY_MS}]}
    )
    over = _advance_days(10, **extra)
    over["actions"].append({"do": "advance", "ms": 1})
    assert str(MAX_SIM_MS_LONG) in the_problem(over, "actions")


def test_part1_scenarios_keep_the_hour_and_are_told_of_the_long_cap():
    doc = _advance_days(8)
    problems = problems_of(doc)
    assert {p["path"] for p in problems} == {"actions", "actions[0].ms"}
    assert all(str(MAX_SIM_MS) in p["message"] and str(MAX_SIM_MS_LONG) in p["message"] for p in problems)
    named = _advance_days(8, topic={"name": "orders"})  # a name alone is not a log setting
    assert not uses_long_time(parse(named)) and problems_of(named)


@pytest.mark.parametrize(
    "action",
    [
        {"do": "settle", "max_ms": MAX_SIM_MS_LONG + 1},
        {"do": "poll", "consumer": "c0", "timeout_ms": MAX_SIM_MS_LONG + 1},
        {"do": "stall", "consumer": "c0", "ms": MAX_SIM_MS_LONG + 1},
        {"do": "advance", "ms": MAX_SIM_MS_LONG + 1},
    ],
    ids=lambda a: a["do"],
)
def test_single_durations_are_held_to_the_cap(action):
    doc = with_consumers({"id": "c0"}, actions=[action])
    field = next(k for k in ("max_ms", "timeout_ms", "ms") if k in action)
    assert str(MAX_SIM_MS_LONG) in the_problem(doc, f"actions[0].{field}")
    action = {**action, field: MAX_SIM_MS_LONG}
    cfg_of(with_consumers({"id": "c0"}, actions=[action]))


def test_a_budget_and_trusted_limits_move_both_caps():
    doc = _advance_days(8, consumers=[{"id": "c0"}])
    with engine.budget(max_sim_ms=1_000):
        with pytest.raises(ScenarioError, match="1000 ms"):
            engine.simulate(doc)  # refused by resolve(), before anything runs
    assert engine.RunBudget(max_sim_ms=1_000).limits(Limits()).max_sim_ms_long == 1_000
    assert engine.RunBudget(max_steps=5).limits(Limits()).max_sim_ms_long == MAX_SIM_MS_LONG
    trusted = Limits(max_sim_ms=20 * DAY_MS)  # a trusted caller that raises max_sim_ms raises both
    assert resolve(parse(_advance_days(15, consumers=[{"id": "c0"}])), trusted).max_sim_ms == 20 * DAY_MS
    assert Limits().sim_ms_cap(False) == MAX_SIM_MS and Limits().sim_ms_cap(True) == MAX_SIM_MS_LONG


def test_validate_accepts_a_full_part2_scenario():
    doc = copy.deepcopy(CONTRACT_EXAMPLE)
    doc["producers"][0]["transactional.id"] = "tx"
    doc["consumers"].append(
        {"id": "c1", "group.id": "g", "isolation.level": "read_committed", "loop_ms": 100}
    )
    doc["actions"] = [
        {"do": "init_transactions", "producer": "app"},
        {"do": "begin_transaction", "producer": "app"},
        {"do": "produce", "producer": "app", "key": "K1", "records": ["a", None], "bytes": 200},
        {"do": "commit_transaction", "producer": "app"},
        {"do": "subscribe", "consumer": "c0", "topics": ["orders"]},
        {"do": "subscribe", "consumer": "c1"},
        {"do": "poll", "consumer": "c0", "timeout_ms": 5_000},
        {"do": "commit", "consumer": "c0", "offsets": {"0": 1}, "async": True},
        {"do": "stall", "consumer": "c1", "ms": 400_000},
        {"do": "advance", "ms": 8 * DAY_MS},
        {"do": "seek", "consumer": "c0", "partition": 2, "offset": "beginning"},
        {"do": "add_partitions", "count": 4},
        {"do": "delete_records", "partition": 3, "offset": 0},
        {"do": "crash", "consumer": "c0"},
        {"do": "restart", "consumer": "c0"},
        {"do": "shutdown", "consumer": "c1"},
        {"do": "crash", "producer": "app"},
        {"do": "restart", "producer": "app"},
        {"do": "settle"},
    ]
    assert engine.validate(doc)
    cfg = cfg_of(doc)
    assert [c.id for c in cfg.consumers] == ["c0", "c1"] and cfg.producers[0].transactional
    assert cfg.added_assignments == [[1]]


# ------------------------------------------------------------- the engine's promise, part 2 too

RUNNABLE_OR_REFUSED = [
    with_consumers(*TWO_CONSUMERS, actions=[{"do": "crash", "consumer": "c0"}]),
    {"producers": [{"id": "app"}], "actions": [{"do": "restart", "producer": "app"}]},
    with_consumers(*TWO_CONSUMERS, actions=[{"do": "shutdown", "consumer": "c1"}]),
    {"actions": [{"do": "produce", "records": ["a", None], "key": "k"}, {"do": "settle"}]},
    with_consumers(
        *TWO_CONSUMERS, actions=[{"do": "subscribe", "consumer": "c0"}, {"do": "poll", "consumer": "c0"}]
    ),
    {
        "producers": [{"id": "a"}, {"id": "b", "transactional.id": "tx"}],
        "actions": [
            {"do": "init_transactions", "producer": "b"},
            {"do": "produce", "records": ["x"], "producer": "a"},
        ],
    },
    {"topic": {"partitions": 2, "replication.factor": 3}, "actions": [{"do": "add_partitions", "count": 3}]},
    {"actions": [{"do": "produce", "records": ["a"], "bytes": 100, "timestamp_ms": 7}, {"do": "settle"}]},
]


@pytest.mark.parametrize("doc", RUNNABLE_OR_REFUSED, ids=range(len(RUNNABLE_OR_REFUSED)))
def test_a_valid_part2_scenario_runs_or_is_refused_never_a_traceback(doc):
    """engine.simulate raises ScenarioError and nothing else, for part-2 input too, whether or not
    the simulator runs that part yet."""
    try:
        result = engine.simulate(doc)
    except ScenarioError as exc:
        assert exc.problems and all(p["message"] for p in exc.problems)
    else:
        assert isinstance(result, dict)
