"""Version profiles: where Kafka's replication behaviour changed, one switch per change.

Each flag names a behaviour and the release that introduced it, following the version matrix
of ../shared/reference/kafka-semantics.md §12 and kafka-claims-verified.md. The simulator asks
the profile, never the version string, so a new profile is a new row here, not new ifs.

What the historic profiles keep from the modern controller (a simplification, stated so the UI
can say it): brokers heartbeat to one controller with KRaft's timings, because the ZooKeeper
session mechanics of 0.8/0.10 fence a dead broker on a similar time scale. One difference is
kept because the KIP-101 stories depend on it: a restarted broker is live again at once (its
ZooKeeper registration is accepted), so it can rejoin as a follower while still in the ISR.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# Integer.MAX_VALUE: the retries default from 2.1, and what an idempotent client picks when unset
RETRIES_MAX = 2_147_483_647


@dataclass(frozen=True)
class Profile:
    version: str
    label: str
    description: str
    # producer defaults (acks all and idempotence from 3.0, KIP-679; retries MAX from 2.1)
    acks_default: str
    idempotence_available: bool
    idempotence_default: bool
    retries_default: int
    # broker defaults
    unclean_default: bool  # false from 0.11 (KIP-106)
    lag_time_default_ms: int  # 10 000 until 2.4, 30 000 from 2.5
    # produce path
    accepts_acks_above_one: bool  # 0.8 only (KIP-1 / KAFKA-1697 in 0.9)
    effective_min_isr_cap: bool  # min(min.insync.replicas, RF) from 3.7 (KAFKA-15583)
    hw_freeze_under_min_isr: bool  # from 3.7 (KAFKA-15583)
    # followers and the ISR
    leader_epochs: bool  # epoch-based truncation from 0.11 (KIP-101), diverging epochs (KIP-279, 2.8)
    isr_by_caught_up_time: (
        bool  # lastCaughtUpTimeMs from 0.9 (KAFKA-1546); 0.8 uses last fetch + lag messages
    )
    isr_check_half_lag: bool  # shrink check every lag/2 from 0.10.2 (KAFKA-4485)
    caught_up_counts_for_hw: bool  # caught-up non-ISR followers hold the HW from 0.10.2 (KAFKA-4485)
    fenced_not_eligible: bool  # fenced/shutting-down replicas do not hold the HW from 3.6 (KAFKA-15021)
    alter_partition: (
        bool  # leader ISR changes go through AlterPartition with a maximal ISR from 2.7 (KIP-497)
    )
    # controller
    epoch_bump_on_controller_shrink: bool  # controller-driven ISR shrink bumps the leader epoch before 3.6
    recovering_state: bool  # LeaderRecoveryState RECOVERING after unclean election from 3.2 (KIP-704)
    elr_available: (
        bool  # ELR (KIP-966): feature eligible.leader.replicas.version, default 1 on new 4.1 clusters
    )
    periodic_unclean_check: bool  # unclean.leader.election.interval.ms task (3.9 deferred, 4.0 periodic)
    session_guards_reregistration: bool  # KRaft refuses a new incarnation while the old session lives
    kip279: bool = True  # 2.0: the leader answers the largest epoch <= the one asked, the follower iterates
    # 2.1 (KAFKA-7128): a follower joins the ISR only once it also reaches the leader's epoch start
    # offset; 1.1's Partition.maybeExpandIsr checks the HW alone
    isr_join_needs_epoch_start: bool = True
    # 4.x keeps a cleanly shut-down broker's session until it expires, so it cannot re-register
    # for about broker.session.timeout.ms (kafka-claims-verified.md N4); 3.9 did not
    fenced_keeps_session: bool = False
    # the controller elects uncleanly on its own when the topic allows it: ZooKeeper-era controllers
    # did, KRaft ignored the setting before 3.9 (KAFKA-12670; kafka-claims-verified.md claim 8), so
    # a KRaft 3.6 cluster only elects uncleanly through the admin API
    topic_unclean_config: bool = True
    # the smallest segment.bytes the broker accepts: LegacyRecord.RECORD_OVERHEAD_V0 (14) until 4.0
    # raised it to 1 MiB (KIP-1030); the scenario accepts smaller sizes (scenes scale sizes down)
    # and says so in its notes
    min_segment_bytes: int = 14
    # 4.0 (KAFKA-17927): a producer whose idempotence is on by default refuses
    # max.in.flight.requests.per.connection > 5 (ConfigException); before, idempotence was silently
    # switched off
    idempotence_refuses_max_in_flight: bool = False
    # 4.0 (KIP-1106, KAFKA-18013): the consumer accepts auto.offset.reset=by_duration:<ISO-8601>;
    # 3.x's ConfigDef.ValidString takes only latest, earliest and none (ConsumerConfig 517-522 at
    # tag 3.9.0) and throws ConfigException for anything else
    by_duration_reset: bool = False
    # transactions (kafka-eos-kraft §B.7): 2.7 split the stale-epoch error (KIP-588's error split,
    # KAFKA-10687; Errors.java at 2.7.0): coordinators answer PRODUCER_FENCED (90), fatal, and a
    # produce gets INVALID_PRODUCER_EPOCH (47), now abortable. Before, 47 was the only name, from
    # coordinators and leaders alike, and the client raised it as a fatal ProducerFencedException
    # (Errors.java and Sender.java 612-616 at tag 1.1.0)
    producer_fenced_split: bool = True
    # 2.5 (KIP-447): sendOffsetsToTransaction with the consumer's group metadata (the generation
    # fence) and the consumer's requireStable offset fetch (UNSTABLE_OFFSET_COMMIT)
    kip447: bool = True


# Each profile is written as the one before it plus what changed, so the file reads as the
# version matrix of kafka-semantics.md §12.
_V0_8 = Profile(
    version="0.8",
    label="Kafka 0.8 (historic)",
    description="History, not today's Kafka: acks=N accepted, ISR by last fetch and lag in messages, "
    "followers truncate to their own high watermark, no leader epochs, unclean election on.",
    acks_default="1",
    idempotence_available=False,
    idempotence_default=False,
    retries_default=0,
    unclean_default=True,
    lag_time_default_ms=10_000,
    accepts_acks_above_one=True,
    effective_min_isr_cap=False,
    hw_freeze_under_min_isr=False,
    leader_epochs=False,
    isr_by_caught_up_time=False,
    isr_check_half_lag=False,
    caught_up_counts_for_hw=False,
    fenced_not_eligible=False,
    alter_partition=False,
    epoch_bump_on_controller_shrink=True,
    recovering_state=False,
    elr_available=False,
    periodic_unclean_check=False,
    session_guards_reregistration=False,
)
_V0_10 = replace(
    _V0_8,
    version="0.10",
    label="Kafka 0.10 (historic)",
    description="History, not today's Kafka: acks>1 rejected (error 21), ISR by time since caught up, "
    "followers still truncate to their own high watermark, unclean election on by default.",
    accepts_acks_above_one=False,  # 0.9 (KIP-1, KAFKA-1697)
    isr_by_caught_up_time=True,  # 0.9 (KAFKA-1546)
    isr_check_half_lag=True,  # 0.10.2 (KAFKA-4485)
    caught_up_counts_for_hw=True,  # 0.10.2 (KAFKA-4485)
)
_V1_1 = replace(
    _V0_10,
    version="1.1",
    label="Kafka 1.1 (historic)",
    description="History, not today's Kafka: leader epochs exist (KIP-101, 0.11) but a leader that does "
    "not know the follower's epoch answers with the start of its next epoch (fixed by KIP-279 in 2.0); "
    "a follower joins the ISR once it reaches the HW, even below the leader's epoch start (KAFKA-7128 came "
    "in 2.1); no AlterPartition, no high-watermark freeze, unclean election off by default.",
    idempotence_available=True,  # 0.11 (KIP-98)
    producer_fenced_split=False,  # 2.7 (KAFKA-10687)
    kip447=False,  # 2.5 (KIP-447)
    unclean_default=False,  # 0.11 (KIP-106)
    leader_epochs=True,  # 0.11 (KIP-101)
    kip279=False,
    isr_join_needs_epoch_start=False,  # 2.1 (KAFKA-7128)
)
_V3_6 = replace(
    _V1_1,
    version="3.6",
    label="Kafka 3.6",
    description="Leader epochs and diverging-epoch truncation; no high-watermark freeze under min ISR; "
    "no effective-min cap (min.insync.replicas > RF refuses every acks=all write); no ELR; the KRaft "
    "controller ignores unclean.leader.election.enable (only an admin unclean election works).",
    acks_default="all",  # 3.0 (KIP-679)
    idempotence_default=True,  # 3.0 (KIP-679)
    retries_default=RETRIES_MAX,  # 2.1
    lag_time_default_ms=30_000,  # 2.5
    kip279=True,  # 2.0
    isr_join_needs_epoch_start=True,  # 2.1 (KAFKA-7128)
    alter_partition=True,  # 2.7 (KIP-497)
    producer_fenced_split=True,  # 2.7 (KAFKA-10687)
    kip447=True,  # 2.5 (KIP-447)
    recovering_state=True,  # 3.2 (KIP-704)
    fenced_not_eligible=True,  # 3.6 (KAFKA-15021)
    epoch_bump_on_controller_shrink=False,  # 3.6 (KAFKA-15021)
    session_guards_reregistration=True,  # KRaft: no new incarnation while the old session lives
    topic_unclean_config=False,  # KRaft before 3.9 (KAFKA-12670)
)
_V4_1 = replace(
    _V3_6,
    version="4.1",
    label="Kafka 4.1",
    description="Today's Kafka: high watermark frozen under min ISR, effective min ISR = "
    "min(min.insync.replicas, RF), eligible leader replicas on by default for new clusters.",
    effective_min_isr_cap=True,  # 3.7 (KAFKA-15583)
    hw_freeze_under_min_isr=True,  # 3.7 (KAFKA-15583)
    elr_available=True,  # 4.0 available, 4.1 default on new clusters (KIP-966)
    periodic_unclean_check=True,  # 3.9 deferred, 4.0 periodic (KAFKA-12670, KAFKA-17793)
    fenced_keeps_session=True,  # 4.1 (KAFKA-19130 took back the quick re-registration)
    topic_unclean_config=True,  # 3.9 (KAFKA-12670)
    min_segment_bytes=1_048_576,  # 4.0 (KIP-1030)
    idempotence_refuses_max_in_flight=True,  # 4.0 (KAFKA-17927)
    by_duration_reset=True,  # 4.0 (KIP-1106)
)

PROFILES: dict[str, Profile] = {p.version: p for p in (_V0_8, _V0_10, _V1_1, _V3_6, _V4_1)}

DEFAULT_VERSION = "4.1"
