"""The vocabulary of engine steps.

Every observable event the engine emits has a `kind` from STEP_KINDS. A kind is named actor +
verb, the way the Kafka TLA+ specifications name transitions, and carries the Kafka function it
paraphrases (`code`) with the source file and line range it was read from (see
../shared/reference/kafka-semantics.md §0 for the commit). The UI's pseudocode panel, the event
log and the tests all key on these names, so they are part of the engine's public surface:
renaming one is a breaking change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

KAFKA_SOURCE_COMMIT = "1eb7644349cb07139d6a3c1ad1986979647cac99"
KAFKA_SOURCE_BASE_URL = f"https://github.com/apache/kafka/blob/{KAFKA_SOURCE_COMMIT}/"
# The ZooKeeper-era steps (profiles 0.8, 0.10, 1.1) cite the last release before KIP-500 work began
# to reshape the controller; their line ranges refer to this tag.
ZK_ERA_TAG = "1.1.0"

_P = "core/src/main/scala/kafka/cluster/Partition.scala"
_REP = "core/src/main/scala/kafka/cluster/Replica.scala"
_RM = "core/src/main/scala/kafka/server/ReplicaManager.scala"
_DP = "core/src/main/scala/kafka/server/DelayedProduce.scala"
_AFT = "core/src/main/scala/kafka/server/AbstractFetcherThread.scala"
_RFT = "core/src/main/scala/kafka/server/ReplicaFetcherThread.scala"
_UL = "core/src/main/scala/kafka/log/UnifiedLog.scala"
_PCB = "metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java"
_RCM = "metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java"
_CCM = "metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java"
_QC = "metadata/src/main/java/org/apache/kafka/controller/QuorumController.java"
_KA = "core/src/main/scala/kafka/server/KafkaApis.scala"
_SENDER = "clients/src/main/java/org/apache/kafka/clients/producer/internals/Sender.java"
_RACC = "clients/src/main/java/org/apache/kafka/clients/producer/internals/RecordAccumulator.java"
_LEFC = "storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java"
_KC = "clients/src/main/java/org/apache/kafka/clients/consumer/KafkaConsumer.java"
_CC = "clients/src/main/java/org/apache/kafka/clients/consumer/internals/ConsumerCoordinator.java"
_FC = "clients/src/main/java/org/apache/kafka/clients/consumer/internals/FetchCollector.java"
_SS = "clients/src/main/java/org/apache/kafka/clients/consumer/internals/SubscriptionState.java"
_OMM = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/OffsetMetadataManager.java"
_CG = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/classic/ClassicGroup.java"
_BIP = "clients/src/main/java/org/apache/kafka/clients/producer/internals/BuiltInPartitioner.java"
_META = "clients/src/main/java/org/apache/kafka/clients/Metadata.java"
_KP = "clients/src/main/java/org/apache/kafka/clients/producer/KafkaProducer.java"
_AC = "clients/src/main/java/org/apache/kafka/clients/consumer/internals/AbstractCoordinator.java"
_GMM = "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java"


@dataclass(frozen=True, slots=True)
class StepKind:
    actor: str  # "producer", "broker", "controller", "consumer", "coordinator" or "operator"
    code: str  # the Kafka function this step paraphrases
    path: str  # source file relative to the repository root; "" for a fault with no Kafka code
    lines: str  # line range at `rev` as cited in the reference, "" when none is cited
    summary: str
    rev: str = KAFKA_SOURCE_COMMIT  # the commit or tag `path` and `lines` refer to

    @property
    def url(self) -> str | None:
        """A link to the paraphrased source, or None for faults that have no Kafka code."""
        if not self.path:
            return None
        base = f"https://github.com/apache/kafka/blob/{self.rev}/"
        if not self.lines:
            return f"{base}{self.path}"
        first, _, last = self.lines.partition("-")
        anchor = f"#L{first}" + (f"-L{last}" if last else "")
        return f"{base}{self.path}{anchor}"


STEP_KINDS: dict[str, StepKind] = {
    # producer client
    "producer_send": StepKind(
        "producer",
        "Sender.sendProduceRequest",
        _SENDER,
        "",
        "the producer sends a batch to the broker it believes leads the partition",
    ),
    "producer_receive": StepKind(
        "producer", "Sender.completeBatch", _SENDER, "", "the producer gets the broker's answer for a batch"
    ),
    "producer_retry": StepKind(
        "producer",
        "Sender.reenqueueBatch",
        _SENDER,
        "",
        "a retriable error: the producer will send the batch again after a backoff",
    ),
    "producer_hold": StepKind(
        "producer",
        "RecordAccumulator.drainBatchesForOneNode",
        _RACC,
        "901-904",
        "a partition's batches leave the accumulator in order: one waiting to be retried holds back the rest",
    ),
    "producer_bump_epoch": StepKind(
        "producer",
        "TransactionManager.bumpIdempotentEpochAndResetIdIfNeeded",
        "clients/src/main/java/org/apache/kafka/clients/producer/internals/TransactionManager.java",
        "549-560",
        "KIP-360: an idempotent producer that meets a gap bumps its epoch and restarts its sequences at 0",
    ),
    "producer_give_up": StepKind(
        "producer",
        "Sender.failBatch",
        _SENDER,
        "",
        "the batch is failed to the application (delivery timeout or a fatal error)",
    ),
    # leader, produce path
    "leader_reject_invalid_acks": StepKind(
        "broker",
        "ReplicaManager.appendRecords",
        _RM,
        "814-817",
        "acks other than -1, 0, 1: INVALID_REQUIRED_ACKS, nothing appended",
    ),
    "leader_reject_not_leader": StepKind(
        "broker",
        "Partition.appendRecordsToLeader",
        _P,
        "1375-1404",
        "this broker does not lead the partition: NOT_LEADER_OR_FOLLOWER",
    ),
    "leader_reject_not_enough_replicas": StepKind(
        "broker",
        "Partition.appendRecordsToLeader",
        _P,
        "1384-1387",
        "acks=all and the committed ISR is smaller than the effective min ISR: NOT_ENOUGH_REPLICAS "
        "before the append, so nothing is written",
    ),
    "leader_reject_too_large": StepKind(
        "broker",
        "UnifiedLog.append",
        _UL,
        "874-877",
        "a batch larger than max.message.bytes (MESSAGE_TOO_LARGE) or than segment.bytes "
        "(RECORD_LIST_TOO_LARGE) is refused before the append; the producer does not retry it",
    ),
    "leader_reject_out_of_order": StepKind(
        "broker",
        "ProducerAppendInfo.checkSequence",
        "storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerAppendInfo.java",
        "112-143",
        "an idempotent batch whose first sequence is not the last one plus 1: OUT_OF_ORDER_SEQUENCE_NUMBER",
    ),
    "leader_append": StepKind(
        "broker",
        "Partition.appendRecordsToLeader",
        _P,
        "1389-1393",
        "the leader appends the batch, stamping its leader epoch",
    ),
    "leader_dedupe_idempotent": StepKind(
        "broker",
        "UnifiedLog.analyzeAndValidateProducerState",
        _UL,
        "890-897",
        "an idempotent retry of a batch already in the log: the original "
        "offsets are returned, nothing new is appended",
    ),
    "leader_response_lost": StepKind(
        "operator",
        "(lost response)",
        "",
        "",
        "the leader handled the produce request, but its answer never reaches the producer, "
        "which times out after request.timeout.ms and retries the same batch",
    ),
    "leader_park_produce": StepKind(
        "broker",
        "ReplicaManager.appendRecords",
        _RM,
        "1002-1028",
        "acks=all: the request waits in the produce purgatory for the HW",
    ),
    "leader_complete_produce": StepKind(
        "broker",
        "Partition.checkEnoughReplicasReachOffset",
        _P,
        "1111-1147",
        "a parked acks=all request completes (success or error)",
    ),
    "leader_respond_produce": StepKind(
        "broker",
        "ReplicaManager.appendRecords",
        _RM,
        "1408-1419",
        "acks=1: the leader answers right after its own append",
    ),
    "leader_expire_produce": StepKind(
        "broker",
        "DelayedProduce.onExpiration",
        _DP,
        "120-135",
        "a parked request reaches its timeout: REQUEST_TIMED_OUT",
    ),
    "leader_advance_high_watermark": StepKind(
        "broker",
        "Partition.maybeIncrementLeaderHW",
        _P,
        "1149-1222",
        "the leader's HW moves up to the smallest LEO it must wait for",
    ),
    "leader_hold_high_watermark": StepKind(
        "broker",
        "Partition.maybeIncrementLeaderHW",
        _P,
        "1175-1178",
        "the committed ISR is below min.insync.replicas: the HW is frozen",
    ),
    # leader, fetch and ISR
    "leader_serve_fetch": StepKind(
        "broker",
        "Partition.fetchRecords",
        _P,
        "1463-1472",
        "the leader records the follower's fetch offset as its LEO and sends records",
    ),
    "leader_diverging_epoch": StepKind(
        "broker",
        "Partition.fetchRecords",
        _P,
        "1517-1570",
        "the follower's last epoch ends earlier on the leader: answer DivergingEpoch",
    ),
    "leader_shrink_isr": StepKind(
        "broker",
        "Partition.maybeShrinkIsr",
        _P,
        "1253-1291",
        "a follower is out of sync: AlterPartition is sent to shrink the ISR",
    ),
    "leader_expand_isr": StepKind(
        "broker",
        "Partition.maybeExpandIsr",
        _P,
        "1016-1048",
        "a follower reached the HW and the epoch start: AlterPartition to add it",
    ),
    # ZooKeeper era only (0.8-2.6): the leader wrote the ISR to ZooKeeper itself (before KIP-497)
    "leader_isr_write_failed": StepKind(
        "broker",
        "Partition.updateIsr",
        _P,
        "667-681",
        "the leader's conditional ZooKeeper write of the ISR failed: no session, or the cached "
        "zkVersion is stale; the leader keeps its ISR",
        rev=ZK_ERA_TAG,
    ),
    "leader_commit_isr": StepKind(
        "broker",
        "Partition.handleAlterPartitionUpdate",
        _P,
        "1967-1996",
        "the controller accepted the ISR change: it is now committed",
    ),
    "leader_become": StepKind(
        "broker",
        "Partition.makeLeader",
        _P,
        "778-806",
        "the broker becomes leader: new epoch starts at its LEO; follower LEOs unknown",
    ),
    # follower
    "follower_fetch": StepKind(
        "broker",
        "AbstractFetcherThread.processFetchRequest",
        _AFT,
        "",
        "the follower appends what it fetched and learns the leader's HW",
    ),
    "follower_update_high_watermark": StepKind(
        "broker",
        "ReplicaFetcherThread.processPartitionData",
        _RFT,
        "121-135",
        "follower HW = min(leader HW in the response, own LEO)",
    ),
    "follower_truncate": StepKind(
        "broker",
        "AbstractFetcherThread.truncateOnFetchResponse",
        _AFT,
        "583-633",
        "the follower deletes its log tail after the point where it diverges",
    ),
    "follower_truncate_to_hw": StepKind(
        "broker",
        "AbstractFetcherThread.truncateToHighWatermark (the pre-0.11 rule, kept for logs without epochs)",
        _AFT,
        "235-251",
        "historic rule: the follower cuts its log back to its own HW",
    ),
    "follower_become": StepKind(
        "broker", "Partition.makeFollower", _P, "", "the broker follows a new leader"
    ),
    # brokers and storage
    "broker_flush": StepKind(
        "broker",
        "UnifiedLog.flush",
        _UL,
        "932",
        "flush.messages reached: the log is fsynced up to its LEO",
    ),
    "broker_crash": StepKind(
        "operator",
        "(process crash)",
        "",
        "",
        "the broker process stops; the OS page cache survives a process crash",
    ),
    "broker_power_loss": StepKind(
        "operator", "(power loss)", "", "", "the machine loses power: everything not fsynced is gone"
    ),
    "broker_shutdown": StepKind(
        "operator",
        "BrokerLifecycleManager controlled shutdown",
        _RCM,
        "1363-1373",
        "a clean shutdown: leadership moves away, the log is flushed",
    ),
    "broker_restart": StepKind(
        "operator",
        "LogManager.loadLogs",
        _UL,
        "288-300",
        "the broker starts, recovers its log and clamps its HW to the LEO",
    ),
    "broker_stop_fetching": StepKind(
        "operator",
        "(slow disk or stuck fetcher)",
        "",
        "",
        "the follower stays alive and heartbeats but stops fetching",
    ),
    "broker_slow": StepKind(
        "operator", "(slow follower)", "", "", "a follower's fetches start or stop taking extra time"
    ),
    "leader_answer_epoch_end": StepKind(
        "broker",
        "LeaderEpochFileCache.endOffsetFor (before KIP-279)",
        _LEFC,
        "286-330",
        "before 2.0 a leader that did not know the asked epoch answered with the start of its next epoch",
    ),
    "controller_controlled_shutdown": StepKind(
        "controller",
        "ReplicationControlManager.handleBrokerInControlledShutdown",
        _RCM,
        "1363-1373",
        "a leading broker asks to shut down: it is marked in controlled shutdown and its leaderships move",
    ),
    "operator_ignored": StepKind(
        "operator", "(no effect)", "", "", "an operator action that cannot apply in the current state"
    ),
    "broker_resume_fetching": StepKind("operator", "(fetcher resumes)", "", "", "the follower fetches again"),
    "network_isolate": StepKind(
        "operator", "(network partition)", "", "", "the network between two parties is cut"
    ),
    "network_heal": StepKind("operator", "(network heals)", "", "", "the network is restored"),
    "config_set": StepKind(
        "operator", "IncrementalAlterConfigs", "", "", "an operator changes a dynamic config"
    ),
    # controller
    "controller_register_broker": StepKind(
        "controller",
        "ClusterControlManager.registerBroker",
        _CCM,
        "341-464",
        "a broker registers a new incarnation (unclean restarts leave ISR/ELR)",
    ),
    "controller_unfence_broker": StepKind(
        "controller",
        "ReplicationControlManager.handleBrokerUnfenced",
        _RCM,
        "1338-1350",
        "the broker is unfenced; leaderless partitions retry",
    ),
    "controller_fence_broker": StepKind(
        "controller",
        "ReplicationControlManager.handleBrokerFenced",
        _RCM,
        "1287-1304",
        "no heartbeat for broker.session.timeout.ms: fenced, removed from every ISR",
    ),
    "controller_alter_partition": StepKind(
        "controller",
        "ReplicationControlManager.alterPartition",
        _RCM,
        "1150-1254",
        "the controller validates and commits an ISR change",
    ),
    "controller_reject_alter_partition": StepKind(
        "controller",
        "ReplicationControlManager.alterPartition",
        _RCM,
        "1150-1254",
        "the controller refuses an ISR change",
    ),
    "controller_elect_leader": StepKind(
        "controller",
        "PartitionChangeBuilder.electAnyLeader",
        _PCB,
        "261-289",
        "a clean election: the current leader, else the first ISR member in "
        "assignment order, else an ELR member when the ISR is empty",
    ),
    "controller_elect_last_known_leader": StepKind(
        "controller",
        "PartitionChangeBuilder.canElectLastKnownLeader",
        _PCB,
        "291-320",
        "ISR and ELR empty: the last known leader is elected, marked unclean",
    ),
    "controller_elect_unclean": StepKind(
        "controller",
        "PartitionChangeBuilder.electAnyLeader",
        _PCB,
        "261-289",
        "unclean election: the first live replica in assignment order, in or "
        "out of the ISR; the partition is RECOVERING",
    ),
    "controller_elect_preferred": StepKind(
        "controller",
        "PartitionChangeBuilder.electPreferredLeader",
        _PCB,
        "232-256",
        "leadership moves back to the preferred replica",
    ),
    "controller_elect_largest_leo": StepKind(
        "controller",
        "(KIP-250 proposal, not Kafka)",
        _PCB,
        "261-289",
        "proposal: the live ISR member with the largest LEO leads",
    ),
    "controller_partition_offline": StepKind(
        "controller",
        "PartitionChangeBuilder.build",
        _PCB,
        "261-289",
        "no valid leader: the partition goes offline (leader -1)",
    ),
    "controller_update_elr": StepKind(
        "controller",
        "PartitionChangeBuilder.maybePopulateTargetElr",
        _PCB,
        "539-570",
        "replicas that leave an ISR below min ISR enter the ELR",
    ),
    "controller_admin_election": StepKind(
        "controller",
        "ReplicationControlManager.electLeaders",
        _RCM,
        "1500-1525",
        "an operator asks for an unclean or preferred election (kafka-leader-election.sh)",
    ),
    "controller_recovered": StepKind(
        "broker",
        "Partition.makeLeader (RECOVERING)",
        _P,
        "750-764",
        "the new leader marks the partition RECOVERED in its first AlterPartition",
    ),
    "leader_ack_count": StepKind(
        "broker",
        "Partition.checkEnoughReplicasReachOffset (0.8.2.2, lines 260-297)",
        _P,
        "",
        "historic acks=N: enough ISR members report the offset",
    ),
    "leader_epoch_cache": StepKind(
        "broker",
        "LeaderEpochFileCache.assign",
        _LEFC,
        "105-160",
        "the leader-epoch cache records where an epoch starts",
    ),
    # consumer client and its group coordinator (contract part 2)
    "consumer_subscribe": StepKind(
        "consumer", "KafkaConsumer.subscribe", _KC, "", "the application subscribes; it joins in poll()"
    ),
    "consumer_assign": StepKind(
        "consumer", "KafkaConsumer.assign", _KC, "", "the application picks its partitions: no membership"
    ),
    "consumer_join": StepKind(
        "consumer",
        "ConsumerCoordinator.onJoinComplete",
        _CC,
        "419-420",
        "the join completes: a new generation, the member's partitions, the auto-commit timer restarts",
    ),
    "consumer_fetch_offsets": StepKind(
        "consumer",
        "OffsetMetadataManager.fetchOffsets",
        _OMM,
        "771-776",
        "the consumer asks the coordinator for the group's committed offsets (-1: none)",
    ),
    "consumer_reset_offset": StepKind(
        "consumer",
        "SubscriptionState.resetInitializingPositions",
        _SS,
        "781-794",
        "no usable offset: auto.offset.reset decides the position (earliest: log start, latest: HW, "
        "by_duration:D: the first offset with a timestamp at or after now minus D, if any)",
    ),
    "consumer_out_of_range": StepKind(
        "consumer",
        "FetchCollector.handleInitializeErrors",
        _FC,
        "347-368",
        "the fetch position is below the log start or past the LEO: OFFSET_OUT_OF_RANGE",
    ),
    "consumer_poll": StepKind(
        "consumer",
        "KafkaConsumer.poll",
        _KC,
        "",
        "poll() returns records to the application; the position moves past them",
    ),
    "consumer_poll_empty": StepKind(
        "consumer",
        "KafkaConsumer.poll",
        _KC,
        "",
        "a poll() the application made returns no records once its timeout passes: caught up at the "
        "high watermark, no position yet, or still joining its group",
    ),
    "consumer_auto_commit": StepKind(
        "consumer",
        "ConsumerCoordinator.maybeAutoCommitOffsetsAsync",
        _CC,
        "1157-1165",
        "inside poll(), once the interval has passed: commit the positions the previous poll reached",
    ),
    "consumer_commit": StepKind(
        "consumer",
        "OffsetMetadataManager.commitOffset",
        _OMM,
        "450-513",
        "the coordinator stores the committed offsets; it never checks their values",
    ),
    "consumer_error": StepKind(
        "consumer", "KafkaConsumer (an exception reaches the application)", _KC, "", "a call fails"
    ),
    "consumer_seek": StepKind(
        "consumer", "KafkaConsumer.seek", _KC, "", "the application moves the position"
    ),
    "consumer_crash": StepKind(
        "operator", "(process crash)", "", "", "the consumer dies: it commits nothing, sends no LeaveGroup"
    ),
    "consumer_close": StepKind(
        "consumer",
        "ConsumerCoordinator.close",
        _CC,
        "976-980",
        "close(): a last synchronous auto-commit, then LeaveGroup",
    ),
    "consumer_restart": StepKind(
        "operator", "(process start)", "", "", "a new consumer process starts with no position"
    ),
    "group_member_expired": StepKind(
        "coordinator",
        "ClassicGroup (session timeout)",
        _CG,
        "",
        "no heartbeat for session.timeout.ms: the coordinator removes the member",
    ),
    # consumer groups, the classic protocol message by message (issue 12, engine/consumers.py)
    "consumer_join_group": StepKind(
        "consumer",
        "AbstractCoordinator.sendJoinGroupRequest",
        _AC,
        "",
        "the member sends JoinGroup: its member id (empty the first time), generation, assignors and "
        "owned partitions",
    ),
    "group_member_id_required": StepKind(
        "coordinator",
        "GroupMetadataManager.classicGroupJoinNewDynamicMember",
        _GMM,
        "4244-4272",
        "a new dynamic member gets MEMBER_ID_REQUIRED with the id it must join with (KIP-394)",
    ),
    "group_prepare_rebalance": StepKind(
        "coordinator",
        "GroupMetadataManager.prepareRebalance",
        _GMM,
        "4799-4888",
        "the group moves to PreparingRebalance: it parks JoinGroups until every member has rejoined "
        "(a new group first waits group.initial.rebalance.delay.ms)",
    ),
    "group_initial_delay": StepKind(
        "coordinator",
        "GroupMetadataManager (InitialDelayedJoin)",
        _GMM,
        "4856-4888",
        "members joined during the new group's initial delay: it waits once more",
    ),
    "group_join_complete": StepKind(
        "coordinator",
        "GroupMetadataManager.completeClassicGroupJoin",
        _GMM,
        "4466-4558",
        "the join phase ends: the generation goes up by one, the assignor is voted, the leader gets "
        "every member's subscription; CompletingRebalance",
    ),
    "group_member_dropped": StepKind(
        "coordinator",
        "GroupMetadataManager.completeClassicGroupJoin",
        _GMM,
        "4472-4485",
        "a dynamic member did not rejoin within the rebalance timeout: it is removed",
    ),
    "consumer_leader_assign": StepKind(
        "consumer",
        "ConsumerCoordinator.onLeaderElected",
        _CC,
        "",
        "the group leader runs the assignor on the client and computes every member's partitions",
    ),
    "consumer_sync_group": StepKind(
        "consumer",
        "AbstractCoordinator.sendSyncGroupRequest",
        _AC,
        "",
        "the member sends SyncGroup (the leader's carries every member's assignment)",
    ),
    "group_sync_complete": StepKind(
        "coordinator",
        "GroupMetadataManager.classicGroupSync",
        _GMM,
        "5263-5333",
        "the leader's SyncGroup arrives: the coordinator stores the assignment, answers every member; "
        "Stable",
    ),
    "consumer_revoke": StepKind(
        "consumer",
        "ConsumerCoordinator.onJoinPrepare / onJoinComplete",
        _CC,
        "786-809",
        "onPartitionsRevoked: eager revokes everything before JoinGroup; cooperative revokes only what "
        "moves, after SyncGroup, and rejoins",
    ),
    "consumer_partitions_lost": StepKind(
        "consumer",
        "ConsumerCoordinator.onJoinPrepare",
        _CC,
        "",
        "onPartitionsLost: the member lost its generation, so it no longer owns anything",
    ),
    "consumer_heartbeat_rebalance": StepKind(
        "consumer",
        "GroupMetadataManager.classicGroupHeartbeat",
        _GMM,
        "5534-5603",
        "a heartbeat is answered REBALANCE_IN_PROGRESS: the member rejoins at its next poll()",
    ),
    "consumer_heartbeat_error": StepKind(
        "consumer",
        "GroupMetadataManager.classicGroupHeartbeat",
        _GMM,
        "5584-5603",
        "a heartbeat is refused (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID)",
    ),
    "consumer_poll_timeout": StepKind(
        "consumer",
        "AbstractCoordinator (HeartbeatThread)",
        _AC,
        "1147-1188",
        "no poll() for max.poll.interval.ms: the heartbeat thread sends LeaveGroup (a static member just "
        "stops heartbeating)",
    ),
    "consumer_metadata_change": StepKind(
        "consumer",
        "ConsumerCoordinator.rejoinNeededOrPending",
        _CC,
        "",
        "the group leader's metadata refresh shows a new partition count: it rejoins, the group "
        "reassigns",
    ),
    "consumer_stall": StepKind(
        "operator", "(application busy)", "", "", "the application stops calling poll(); heartbeats go on"
    ),
    "group_member_left": StepKind(
        "coordinator",
        "GroupMetadataManager.classicGroupLeave",
        _GMM,
        "",
        "LeaveGroup: the coordinator removes the member and rebalances",
    ),
    "group_static_rejoin": StepKind(
        "coordinator",
        "GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin",
        _GMM,
        "5098-5204",
        "a static member comes back under a new member id: its old id is fenced; in a Stable group it "
        "gets its old assignment with no rebalance",
    ),
    "consumer_fenced": StepKind(
        "consumer",
        "ConsumerCoordinator (FENCED_INSTANCE_ID)",
        _CC,
        "1356-1375",
        "another process took this group.instance.id: FENCED_INSTANCE_ID is fatal for this one",
    ),
    "broker_delete_segments": StepKind(
        "broker",
        "UnifiedLog.deleteOldSegments",
        _UL,
        "",
        "the retention check deletes whole old segments; the log start offset moves to the first kept",
    ),
    "group_offsets_expired": StepKind(
        "coordinator",
        "OffsetMetadataManager.cleanupExpiredOffsets",
        _OMM,
        "862-902",
        "a committed offset expires: its group has been Empty (or it was committed) for a week",
    ),
    "admin_delete_records": StepKind(
        "operator",
        "UnifiedLog.maybeIncrementLogStartOffset",
        _UL,
        "",
        "DeleteRecords moves the log start offset; reads below it get OFFSET_OUT_OF_RANGE",
    ),
    # the partitioner and the topic's partition count (kafka-clients-logs.md §C.3, §C.4)
    "producer_sticky_partition": StepKind(
        "producer",
        "BuiltInPartitioner.nextPartition",
        _BIP,
        "66-112",
        "records without a key: the producer draws the partition it sticks to (at random, weighted "
        "toward shorter queues) and keeps it until at least batch.size bytes went there (3.3+, KIP-794)",
    ),
    "producer_metadata_refresh": StepKind(
        "producer",
        "Metadata.timeToNextUpdate",
        _META,
        "",
        "the producer refreshes its metadata (every metadata.max.age.ms, or at once for a partition it "
        "does not know) and sees the topic's new partition count: keys now hash over it",
    ),
    # producer processes (contract part 2: crash, shutdown, restart with `producer`)
    "producer_crash": StepKind(
        "operator",
        "(process crash)",
        "",
        "",
        "the producer process dies: what it had not heard back about is gone with it, though a request "
        "already on the wire may still be written",
    ),
    "producer_close": StepKind(
        "producer",
        "KafkaProducer.close",
        _KP,
        "",
        "close() waits until every batch handed to send() is answered or has failed, then the process ends",
    ),
    "producer_restart": StepKind(
        "operator",
        "(process start)",
        "",
        "",
        "a new producer process: with idempotence a new producer id from InitProducerId, epoch 0 and "
        "sequences from 0, so brokers cannot match its resends with the old process's writes",
    ),
    "admin_create_partitions": StepKind(
        "operator",
        "ReplicationControlManager.createPartitions",
        _RCM,
        "",
        "CreatePartitions (kafka-topics --alter --partitions) adds partitions; existing records stay "
        "where they are, and producers learn of the new count at their next metadata refresh",
    ),
}


# Log compaction (engine/compaction.py and engine/actors/cleaner.py). These names are stable:
# scenes build on them.
_LCL = "core/src/main/scala/kafka/log/LogCleaner.scala"
_LCLM = "core/src/main/scala/kafka/log/LogCleanerManager.scala"
_LV = "storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java"
STEP_KINDS.update(
    {
        "cleaner_check": StepKind(
            "broker",
            "LogCleanerManager.grabFilthiestCompactedLog",
            _LCLM,
            "181-225",
            "the log cleaner thread checks a compacted log after a segment rolled: the dirty ratio is "
            "not above min.cleanable.dirty.ratio (or nothing is cleanable yet), so it does not clean "
            "and sleeps log.cleaner.backoff.ms",
        ),
        "cleaner_offset_map": StepKind(
            "broker",
            "Cleaner.buildOffsetMap",
            _LCL,
            "1035-1065",
            "a cleaning pass starts (dirty ratio above the threshold, or max.compaction.lag.ms passed): "
            "the cleaner maps each key of the dirty part to its latest offset",
        ),
        "cleaner_rewrite": StepKind(
            "broker",
            "Cleaner.cleanSegments",
            _LCL,
            "650-718",
            "the cleaner recopies the segments up to the new cleaner point, merging small ones: a record "
            "stays only if it is its key's latest; offsets never change, so the log keeps gaps",
        ),
        "cleaner_tombstone_expired": StepKind(
            "broker",
            "Cleaner.shouldRetainRecord",
            _LCL,
            "905-937",
            "a tombstone whose delete horizon (the first pass that kept it + delete.retention.ms) has "
            "passed is dropped by a later pass",
        ),
        "leader_reject_invalid_record": StepKind(
            "broker",
            "LogValidator.validateKey",
            _LV,
            "594-606",
            "a compacted topic refuses records without a key: the whole request fails with INVALID_RECORD",
        ),
    }
)


# The same steps in a ZooKeeper-era cluster (profiles 0.8, 0.10 and 1.1): the controller there read
# broker liveness from ZooKeeper sessions, elected in PartitionStateMachine and told brokers with
# LeaderAndIsr requests, and a leader changed the ISR by a conditional ZooKeeper write of its own.
# Kinds not listed read the same in both eras. Line ranges are at ZK_ERA_TAG.
_ZK_P = "core/src/main/scala/kafka/cluster/Partition.scala"
_ZK_KC = "core/src/main/scala/kafka/controller/KafkaController.scala"
_ZK_PSM = "core/src/main/scala/kafka/controller/PartitionStateMachine.scala"
_ZK_RU = "core/src/main/scala/kafka/utils/ReplicationUtils.scala"
_ZK_KS = "core/src/main/scala/kafka/server/KafkaServer.scala"
_ZK_KZK = "core/src/main/scala/kafka/zk/KafkaZkClient.scala"


def _zk(kind: str, code: str, path: str, lines: str, summary: str) -> StepKind:
    return replace(STEP_KINDS[kind], code=code, path=path, lines=lines, summary=summary, rev=ZK_ERA_TAG)


ZK_STEP_KINDS: dict[str, StepKind] = {
    "leader_shrink_isr": _zk(
        "leader_shrink_isr",
        "Partition.maybeShrinkIsr",
        _ZK_P,
        "502-529",
        "a follower is out of sync: the leader writes the smaller ISR to ZooKeeper, conditional on "
        "its cached zkVersion, and uses it only if the write succeeds",
    ),
    "leader_expand_isr": _zk(
        "leader_expand_isr",
        "Partition.maybeExpandIsr",
        _ZK_P,
        "368-391",
        "a follower reached the HW: the leader writes the larger ISR to ZooKeeper, conditional on "
        "its cached zkVersion",
    ),
    "controller_alter_partition": _zk(
        "controller_alter_partition",
        "ReplicationUtils.updateLeaderAndIsr",
        _ZK_RU,
        "27-36",
        "ZooKeeper accepts the leader's ISR write (its zkVersion matched); the leader records an ISR "
        "change notification for the controller",
    ),
    "controller_fence_broker": _zk(
        "controller_fence_broker",
        "KafkaController.onBrokerFailure",
        _ZK_KC,
        "395-405",
        "the broker's ZooKeeper session expired: the controller moves its leaderships, removes it "
        "from every ISR in ZooKeeper and sends LeaderAndIsr",
    ),
    "controller_unfence_broker": _zk(
        "controller_unfence_broker",
        "KafkaController.onBrokerStartup",
        _ZK_KC,
        "342-373",
        "the controller sees the broker registered in ZooKeeper again; offline partitions retry "
        "their election",
    ),
    "controller_register_broker": _zk(
        "controller_register_broker",
        "KafkaZkClient.registerBrokerInZk",
        _ZK_KZK,
        "82-86",
        "the broker starts a ZooKeeper session and registers under /brokers/ids",
    ),
    "controller_elect_leader": _zk(
        "controller_elect_leader",
        "PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection",
        _ZK_PSM,
        "438-446",
        "the controller picks the first live ISR member in assignment order, writes leader and ISR "
        "to ZooKeeper and sends LeaderAndIsr",
    ),
    "controller_elect_unclean": _zk(
        "controller_elect_unclean",
        "PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection",
        _ZK_PSM,
        "438-446",
        "no live ISR member and unclean.leader.election.enable: the first live replica in assignment "
        "order leads, in or out of the ISR",
    ),
    "controller_elect_preferred": _zk(
        "controller_elect_preferred",
        "PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection",
        _ZK_PSM,
        "452-454",
        "leadership moves back to the preferred replica",
    ),
    "controller_partition_offline": _zk(
        "controller_partition_offline",
        "PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection",
        _ZK_PSM,
        "438-446",
        "no live ISR member (and no unclean election): the partition goes offline (leader -1)",
    ),
    "controller_controlled_shutdown": _zk(
        "controller_controlled_shutdown",
        "KafkaController.doControlledShutdown",
        _ZK_KC,
        "1030-1073",
        "a leading broker sends ControlledShutdown: the controller moves its leaderships first",
    ),
    "broker_shutdown": _zk(
        "broker_shutdown",
        "KafkaServer.controlledShutdown",
        _ZK_KS,
        "399-473",
        "a clean shutdown: leadership moves away, the log is flushed",
    ),
    "broker_stop_fetching": replace(
        STEP_KINDS["broker_stop_fetching"],
        summary="the follower stays alive (its ZooKeeper session lives) but stops fetching",
    ),
    "leader_become": _zk(
        "leader_become",
        "Partition.makeLeader",
        _ZK_P,
        "252-297",
        "LeaderAndIsr from the controller: the broker becomes leader with the ISR and zkVersion it "
        "carries; the new epoch starts at its LEO",
    ),
    "follower_become": _zk(
        "follower_become",
        "Partition.makeFollower",
        _ZK_P,
        "303-326",
        "LeaderAndIsr from the controller: the broker follows the new leader",
    ),
}


# ---- transactions (issue 12; engine/transactions.py). Paths and lines as cited in the reference's
# §B at the commit above: TC TransactionCoordinator.scala, TMD TransactionMetadata.scala, TSM
# TransactionStateManager.scala, TM the producer's TransactionManager.java, PAI
# ProducerAppendInfo.java, UL UnifiedLog.scala, CF the consumer's CompletedFetch.java.
_TC = "core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala"
_TMD = "core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala"
_TSM = "core/src/main/scala/kafka/coordinator/transaction/TransactionStateManager.scala"
_TM = "clients/src/main/java/org/apache/kafka/clients/producer/internals/TransactionManager.java"
_PAI = "storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerAppendInfo.java"
_CF = "clients/src/main/java/org/apache/kafka/clients/consumer/internals/CompletedFetch.java"
STEP_KINDS.update(
    {
        "txn_init_producer_id": StepKind(
            "coordinator",
            "TransactionCoordinator.handleInitProducerId",
            _TC,
            "109-281",
            "InitProducerId with a transactional.id: the same producer id, the epoch one higher; "
            "older instances holding a lower epoch are fenced",
        ),
        "txn_concurrent_transactions": StepKind(
            "coordinator",
            "TransactionCoordinator.handleInitProducerId",
            _TC,
            "230-241",
            "a transaction of this transactional.id is still being completed: CONCURRENT_TRANSACTIONS, "
            "the client backs off and asks again",
        ),
        "txn_fence_epoch": StepKind(
            "coordinator",
            "TransactionMetadata.prepareFenceProducerEpoch",
            _TMD,
            "257-267",
            "PrepareEpochFence: the coordinator bumps the epoch of an ongoing transaction and aborts it",
        ),
        "txn_begin": StepKind(
            "producer",
            "KafkaProducer.beginTransaction",
            _KP,
            "683-689",
            "beginTransaction() is purely local: nothing is sent, no timer starts",
        ),
        "txn_add_partitions": StepKind(
            "coordinator",
            "TransactionCoordinator.handleAddPartitionsToTransaction",
            _TC,
            "394-443",
            "AddPartitionsToTxn before the first produce to a partition: the transaction becomes "
            "Ongoing and transaction.timeout.ms starts",
        ),
        "txn_prepare": StepKind(
            "coordinator",
            "TransactionCoordinator.endTransaction",
            _TC,
            "692-697",
            "EndTxn: PrepareCommit (or PrepareAbort) is written to __transaction_state and the "
            "coordinator answers at once, before any marker exists",
        ),
        "leader_write_txn_marker": StepKind(
            "broker",
            "KafkaApis.handleWriteTxnMarkersRequest",
            _KA,
            "2429-2483",
            "a partition leader appends a transaction marker: a control record that takes an offset",
        ),
        "leader_advance_lso": StepKind(
            "broker",
            "UnifiedLog.lastStableOffset",
            _UL,
            "425-430",
            "the marker is below the high watermark: the last stable offset moves past the transaction",
        ),
        "txn_complete": StepKind(
            "coordinator",
            "TransactionMarkerChannelManager.maybeWriteTxnCompletion",
            "core/src/main/scala/kafka/coordinator/transaction/TransactionMarkerChannelManager.scala",
            "313-331",
            "every marker is written: CompleteCommit (or CompleteAbort) in __transaction_state",
        ),
        "txn_producer_fenced": StepKind(
            "coordinator",
            "TransactionCoordinator.endTransaction",
            _TC,
            "539-562",
            "a request carries an epoch older than the coordinator's: PRODUCER_FENCED (fatal; before 2.7 "
            "the same answer was named INVALID_PRODUCER_EPOCH, also fatal)",
        ),
        "txn_timeout_abort": StepKind(
            "coordinator",
            "TransactionCoordinator.abortTimedOutTransactions",
            _TC,
            "759-795",
            "the periodic sweep finds a transaction older than transaction.timeout.ms: it fences the "
            "epoch and aborts it",
        ),
        "txn_client_error": StepKind(
            "producer",
            "TransactionManager.transitionToFatalError / transitionToAbortableError",
            _TM,
            "673-683",
            "a transactional call fails: fatal (close the producer) or abortable (abortTransaction())",
        ),
        "txn_end_local": StepKind(
            "producer",
            "TransactionManager.beginCommit",
            _TM,
            "816-824",
            "no partition was ever added: the transaction ends on the client, no EndTxn is sent",
        ),
        "leader_reject_invalid_epoch": StepKind(
            "broker",
            "ProducerAppendInfo.checkProducerEpoch",
            _PAI,
            "96-110",
            "a produce with an epoch older than the producer state's: INVALID_PRODUCER_EPOCH, "
            "nothing appended",
        ),
        "consumer_held_at_lso": StepKind(
            "consumer",
            "UnifiedLog.read (FetchIsolation.TXN_COMMITTED)",
            _UL,
            "1240-1245",
            "a read_committed fetch stops at the last stable offset while a transaction is open",
        ),
        "consumer_skip_txn_records": StepKind(
            "consumer",
            "CompletedFetch.nextFetchedRecord",
            _CF,
            "207-239",
            "the client drops control records (and, read_committed, aborted ones); the position "
            "moves past them",
        ),
        "consumer_unstable_offsets": StepKind(
            "consumer",
            "OffsetMetadataManager.fetchOffsets (requireStable)",
            _OMM,
            "739-767",
            "KIP-447: a transaction holds pending offsets of the group: UNSTABLE_OFFSET_COMMIT, the "
            "consumer asks again",
        ),
        "txn_send_offsets": StepKind(
            "coordinator",
            "OffsetMetadataManager.commitTransactionalOffset",
            _OMM,
            "1051-1100",
            "KIP-447: TxnOffsetCommit with the consumer's group metadata; a stale generation is fenced",
        ),
    }
)


def step_kind(kind: str, kraft: bool = True) -> StepKind:
    """The step kind as the profile's era names it: KRaft's by default, the ZooKeeper era's
    (ZK_STEP_KINDS) where one differs and the run's profile predates KRaft."""
    if not kraft:
        zk = ZK_STEP_KINDS.get(kind)
        if zk is not None:
            return zk
    return STEP_KINDS[kind]
