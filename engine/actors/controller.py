"""The KRaft controller (or the ZooKeeper-era controller in old profiles): the metadata log,
registrations and fencing, AlterPartition, leader election (QuorumController,
ReplicationControlManager, PartitionChangeBuilder; kafka-semantics.md §5).

A mixin of engine.sim.Sim: its methods read and change the partition simulation's state
(`self.brokers`, `self.ctl`, `self.batches`, ...), which Sim.__init__ sets up.
"""

from __future__ import annotations

from typing import Any

from ..state import (
    NETWORK_DELAY_MS,
    NO_LEADER,
    _fmt_set,
)


class ControllerRole:

    # ---------------------------------------------------------------------------------------
    # the metadata log (kafka-eos-kraft.md §D.3)

    def mrec(self, rtype: str, **fields: Any) -> int:
        """Append a metadata record; returns its offset. Field names follow Kafka's record schemas."""
        if not self.kraft:
            return -1
        offset = len(self.mlog)
        self.mlog.append({"offset": offset, "t_ms": self.now, "type": rtype, **fields})
        return offset

    def _bootstrap_metadata(self) -> None:
        # the record stores a numeric level; we show the release it corresponds to instead
        self.mrec("FeatureLevelRecord", name="metadata.version", release=self.prof.version)
        for bid, b in self.brokers.items():
            off = self.mrec(
                "RegisterBrokerRecord", brokerId=bid, brokerEpoch=len(self.mlog), rack=b.rack, fenced=True
            )
            self.ctl.reg[bid].epoch = off
        for bid in self.brokers:
            self.mrec(
                "BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=self.ctl.reg[bid].epoch, fenced=-1
            )
        c = self.ctl
        self.mrec("TopicRecord", name="topic")
        self.mrec(
            "PartitionRecord",
            partitionId=0,
            replicas=list(self.replicas),
            isr=list(c.isr),
            leader=c.leader,
            leaderEpoch=0,
            partitionEpoch=0,
            leaderRecoveryState="RECOVERED",
        )

    def _order(self, bid: int) -> int:
        return self.replicas.index(bid) if bid in self.replicas else 99

    # ---------------------------------------------------------------------------------------
    # controller (§4.5, §5)

    def _metadata(self) -> dict[str, Any]:
        c = self.ctl
        return {
            "leader": c.leader,
            "leader_epoch": c.leader_epoch,
            "partition_epoch": c.partition_epoch,
            "isr": list(c.isr),
            "recovery": c.recovery,
        }

    def _publish(self, only: int | None = None) -> None:
        meta = self._metadata()
        for bid in self.replicas if only is None else [only]:
            if self.ctl.reg[bid].registered:
                self.send("controller", bid, self._apply_metadata, (bid, meta))

    def _ctl_acceptable(self, bid: int, exclude: set[int]) -> bool:
        r = self.ctl.reg[bid]
        return bid not in exclude and r.registered and not r.fenced and not r.shutting

    def _ctl_alter_partition(
        self, lid: int, leader_epoch: int, partition_epoch: int, new_isr: list[int], direct: bool = False
    ) -> None:
        c = self.ctl
        if not direct:
            reason = None
            if lid != c.leader or leader_epoch != c.leader_epoch:
                reason = "FENCED_LEADER_EPOCH"
            elif partition_epoch != c.partition_epoch:
                reason = "INVALID_UPDATE_VERSION"
            else:
                for r in new_isr:
                    if r not in c.isr and not self._ctl_acceptable(r, set()):
                        reason = "INELIGIBLE_REPLICA"
            if reason is not None:
                self.send("controller", lid, self._leader_alter_rejected, (lid, reason, partition_epoch))
                self.step(
                    "controller_reject_alter_partition",
                    "controller",
                    f"The controller rejects B{lid}'s ISR change to {_fmt_set(new_isr)}: {reason}",
                )
                return
        recovered = c.recovery == "RECOVERING"
        if recovered:
            c.recovery = "RECOVERED"
        old = list(c.isr)
        self._ctl_change(sorted(new_isr, key=self._order), why="alter_partition", force_publish=recovered)
        if direct:
            # ZooKeeper era: the leader's conditional write succeeded; the partition epoch stands for
            # the zkVersion of /brokers/topics/topic/partitions/0/state, and the broker records an
            # isr_change_notification that the controller reads to tell the other brokers
            text = (
                f"ZooKeeper now holds ISR {_fmt_set(old)} -> {_fmt_set(c.isr)} (zkVersion "
                f"{c.partition_epoch}, leader epoch {c.leader_epoch} unchanged); B{lid} records an "
                f"isr_change_notification for the controller"
            )
        else:
            text = (
                f"The controller commits ISR {_fmt_set(old)} -> {_fmt_set(c.isr)} "
                f"(partition epoch {c.partition_epoch}, leader epoch {c.leader_epoch} unchanged)"
            )
        self.step("controller_alter_partition", "controller", text)
        if recovered:
            self.step(
                "controller_recovered",
                f"broker-{lid}",
                f"B{lid}'s first ISR change carries RECOVERED: the partition leaves the RECOVERING state",
            )

    def _ctl_change(
        self,
        target_isr: list[int],
        *,
        why: str,
        exclude: set[int] | None = None,
        election: str = "online",
        drop_from_elr: int | None = None,
        force_publish: bool = False,
        preferred: int | None = None,
    ) -> None:
        """PartitionChangeBuilder: ELR populate (PCB 539-570), election (PCB 261-289),
        epochs (PReg 255-277)."""
        c = self.ctl
        prof = self.prof
        exclude = exclude or set()
        old_leader, old_isr, old_elr, old_lke = c.leader, list(c.isr), list(c.elr), list(c.lke)
        eff = self.eff_min()
        new_elr = list(c.elr)
        new_lke = list(c.lke)
        if self.cfg.elr:
            if len(target_isr) >= eff:
                new_elr, new_lke = [], []
            else:
                pool = (set(c.elr) | set(c.isr)) - set(target_isr)
                if drop_from_elr is not None:
                    pool.discard(drop_from_elr)
                new_elr = [r for r in self.replicas if r in pool]
        elif drop_from_elr is not None and drop_from_elr in new_elr:
            new_elr.remove(drop_from_elr)

        def acceptable(r: int) -> bool:
            return self._ctl_acceptable(r, exclude)

        leader = NO_LEADER
        how = ""
        if preferred is not None:
            leader, how = preferred, "preferred"
        elif old_leader != NO_LEADER and old_leader in target_isr and acceptable(old_leader):
            leader, how = old_leader, "kept"
        else:
            if self.cfg.largest_leo_election:
                pool_ids = [
                    r
                    for r in self.replicas
                    if acceptable(r) and (r in target_isr or (not target_isr and r in new_elr))
                ]
                if pool_ids:
                    leader = max(pool_ids, key=lambda r: (self.brokers[r].leo, -self._order(r)))
                    how = "largest_leo"
            else:
                for r in self.replicas:
                    if acceptable(r) and (r in target_isr or (not target_isr and r in new_elr)):
                        leader = r
                        how = "elr" if r not in target_isr else "clean"
                        break
            if (
                leader == NO_LEADER
                and self.cfg.elr
                and not target_isr
                and not new_elr
                and len(new_lke) == 1
                and acceptable(new_lke[0])  # unfenced: KAFKA-19522 (the 2024 snapshot skipped this check)
            ):
                leader, how = new_lke[0], "last_known"
            if leader == NO_LEADER and (election == "unclean" or (c.unclean and prof.topic_unclean_config)):
                for r in self.replicas:
                    if acceptable(r):
                        leader, how = r, "unclean"
                        break
        new_isr = list(target_isr)
        new_recovery = c.recovery
        if how == "elr":
            new_isr = [leader]
            new_elr = [r for r in new_elr if r != leader]
        elif how in ("unclean", "last_known"):
            new_isr = [leader]
            new_elr, new_lke = [], []
            if prof.recovering_state:
                new_recovery = "RECOVERING"
            self.unsafe_history = True
        if self.cfg.elr and len(new_isr) >= eff:
            new_elr, new_lke = [], []  # §5.5: back at min ISR, the ELR is cleared
        if not new_isr and not self.cfg.elr:
            new_isr = old_isr  # PCB 446-454: without ELR the last ISR member is never removed
        if self.cfg.elr and leader == NO_LEADER and not new_isr and not new_lke and old_leader != NO_LEADER:
            new_lke = [old_leader]  # PCB 496-507: remember the last leader
        leader_changed = leader != old_leader
        changed = (
            leader_changed
            or new_isr != old_isr
            or new_elr != old_elr
            or new_lke != old_lke
            or new_recovery != c.recovery
            or force_publish
        )
        if not changed:
            return
        if leader_changed:
            c.leader_epoch += 1
        elif (
            prof.epoch_bump_on_controller_shrink
            and why in ("fence", "shutdown", "unclean_restart")
            and len(new_isr) < len(old_isr)
        ):
            c.leader_epoch += 1  # before 3.6 a controller-driven shrink bumped the leader epoch
        c.partition_epoch += 1
        rec: dict[str, Any] = {"partitionId": 0}
        if new_isr != old_isr:
            rec["isr"] = list(new_isr)
        if leader_changed or c.leader_epoch != self._mlog_leader_epoch:
            rec["leader"] = leader  # setting the leader field is what bumps the leader epoch on replay
        if new_elr != old_elr:
            rec["eligibleLeaderReplicas"] = list(new_elr)
        if new_lke != old_lke:
            rec["lastKnownElr"] = list(new_lke)
        if new_recovery != c.recovery:
            rec["leaderRecoveryState"] = new_recovery
        rec["replayed"] = {"leaderEpoch": c.leader_epoch, "partitionEpoch": c.partition_epoch}
        self.mrec("PartitionChangeRecord", **rec)
        self._mlog_leader_epoch = c.leader_epoch
        c.leader, c.isr, c.elr, c.lke, c.recovery = leader, new_isr, new_elr, new_lke, new_recovery
        self._publish()
        if new_elr != old_elr:
            self.step(
                "controller_update_elr",
                "controller",
                f"ELR {_fmt_set(old_elr)} -> {_fmt_set(new_elr)} (ISR {_fmt_set(new_isr)} is "
                f"{'below' if len(new_isr) < eff else 'at or above'} min.insync.replicas {eff})",
            )
        if leader_changed:
            if leader == NO_LEADER:
                self.step(
                    "controller_partition_offline",
                    "controller",
                    f"No replica can lead: the partition is OFFLINE (leader -1, epoch {c.leader_epoch}, "
                    f"ISR {_fmt_set(new_isr)}" + (f", ELR {_fmt_set(new_elr)}" if self.cfg.elr else "") + ")"
                    + (
                        "; unclean.leader.election.enable is set, but KRaft controllers before 3.9 ignore it "
                        "(an admin unclean election still works)"
                        if c.unclean and not prof.topic_unclean_config
                        else ""
                    ),
                )
            else:
                kind, detail = {
                    "clean": ("controller_elect_leader", "the first ISR member in assignment order"),
                    "elr": ("controller_elect_leader", "an eligible leader replica (the ISR was empty)"),
                    "last_known": (
                        "controller_elect_last_known_leader",
                        "the last known leader (ISR and ELR empty), marked unclean",
                    ),
                    "unclean": (
                        "controller_elect_unclean",
                        "UNCLEAN: the first live replica in assignment order, not in the ISR",
                    ),
                    "preferred": ("controller_elect_preferred", "the preferred replica"),
                    "largest_leo": (
                        "controller_elect_largest_leo",
                        "PROPOSAL (KIP-250, not Kafka): the ISR member with the largest LEO",
                    ),
                }[how]
                self.step(
                    kind,
                    "controller",
                    f"The controller elects B{leader} leader at epoch {c.leader_epoch}: {detail}; "
                    f"ISR {_fmt_set(new_isr)}" + (", RECOVERING" if new_recovery == "RECOVERING" else "")
                    + ("" if self.kraft else "; it writes both to ZooKeeper and sends LeaderAndIsr"),
                )

    def _ctl_heartbeat(self, bid: int, inc: int) -> None:
        r = self.ctl.reg[bid]
        if inc != r.inc:
            return
        r.last_hb = self.now
        r.hb_count += 1
        self.at(self.now + self.cfg.session_timeout_ms + 1, self._ctl_session_check, bid, r.hb_count)
        if r.fenced and r.registered and not r.shutting:
            r.fenced = False
            self.mrec("BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=r.epoch, fenced=-1)
            self.step(
                "controller_unfence_broker",
                "controller",
                f"The controller unfences B{bid}"
                if self.kraft
                else f"The controller sees B{bid} registered in ZooKeeper again: it is live",
            )
            self._ctl_broker_available(bid)
        if self.brokers[bid].partition_epoch < self.ctl.partition_epoch and bid in self.replicas:
            self._publish(only=bid)

    def _ctl_broker_available(self, bid: int) -> None:
        """handleBrokerUnfenced (RCM 1338-1350): leaderless partitions retry their election."""
        c = self.ctl
        if c.leader == NO_LEADER and bid in self.replicas:
            self._ctl_change(list(c.isr), why="unfence")

    def _ctl_session_check(self, bid: int, hb_count: int) -> None:
        r = self.ctl.reg[bid]
        if r.fenced or r.hb_count != hb_count:
            return
        r.fenced = True
        self.step(
            "controller_fence_broker",
            "controller",
            (
                f"No heartbeat from B{bid} for broker.session.timeout.ms={self.cfg.session_timeout_ms}: "
                f"the controller fences it"
                if self.prof.alter_partition
                else f"B{bid}'s ZooKeeper session expires (after {self.cfg.session_timeout_ms} ms; the "
                f"engine keeps KRaft's timing, zookeeper.session.timeout.ms was 6000 by default): "
                f"the controller sees it gone"
            ),
            broker=bid,
        )
        c = self.ctl
        if bid in c.isr and bid in self.replicas:
            self._ctl_change([x for x in c.isr if x != bid], why="fence", exclude={bid})
        self.mrec("BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=r.epoch, fenced=1)

    def _ctl_register(self, bid: int, inc: int, clean: bool) -> None:
        c = self.ctl
        r = c.reg[bid]
        if inc <= r.inc and r.registered:
            return
        guarded = self.prof.session_guards_reregistration
        live_session = not r.fenced or self.prof.fenced_keeps_session
        if guarded and live_session and self.now - r.last_hb <= self.cfg.session_timeout_ms:
            return  # CCM 363-372: DUPLICATE_BROKER_REGISTRATION while the old session lives; it retries
        r.registered = True
        r.inc = inc
        r.epoch = max(r.epoch + 1, len(self.mlog))
        self.mrec(
            "RegisterBrokerRecord",
            brokerId=bid,
            brokerEpoch=r.epoch,
            rack=self.brokers[bid].rack,
            fenced=True,
        )
        was_fenced = r.fenced
        r.fenced = guarded or was_fenced  # KRaft: a new registration starts fenced until it heartbeats
        r.shutting = False
        r.last_hb = self.now
        r.hb_count += 1
        self.at(self.now + self.cfg.session_timeout_ms + 1, self._ctl_session_check, bid, r.hb_count)
        unclean_restart = self.cfg.elr and not clean
        self.send("controller", bid, self._broker_registered, (bid, inc))
        self.step(
            "controller_register_broker",
            "controller",
            (
                f"B{bid} registers a new incarnation after {'a clean' if clean else 'an unclean'} shutdown"
                if self.kraft
                else f"B{bid} starts a new ZooKeeper session and registers under /brokers/ids/{bid} after "
                f"{'a clean' if clean else 'an unclean'} shutdown"
            )
            + (
                "; it is removed from the ISR and the ELR" if unclean_restart and bid in c.isr + c.elr else ""
            ),
            broker=bid,
        )
        if bid in self.replicas:
            if unclean_restart and (bid in c.isr or bid in c.elr):
                self._ctl_change(
                    [x for x in c.isr if x != bid], why="unclean_restart", exclude={bid}, drop_from_elr=bid
                )
            elif guarded and bid in c.isr and len(c.isr) > 1:
                self._ctl_change([x for x in c.isr if x != bid], why="fence", exclude={bid})
            self._publish(only=bid)

    def _ctl_rebalance_tick(self) -> None:
        c = self.ctl
        pref = self.replicas[0]
        if c.leader != pref and c.leader != NO_LEADER and pref in c.isr and self._ctl_acceptable(pref, set()):
            self._ctl_change(list(c.isr), why="preferred", preferred=pref)
        self.at(self.now + self.cfg.rebalance_interval_ms, self._ctl_rebalance_tick)

    def _ctl_unclean_tick(self) -> None:
        c = self.ctl
        if c.leader == NO_LEADER and c.unclean:
            self._ctl_change(list(c.isr), why="periodic_unclean", election="unclean")
        self.at(self.now + self.cfg.unclean_interval_ms, self._ctl_unclean_tick)

    def _ctl_controlled_shutdown(self, bid: int) -> None:
        c = self.ctl
        r = c.reg[bid]
        r.shutting = True
        delay = 0
        if c.leader == bid and bid in self.replicas:
            # §D.6: record the shutdown, move leadership away, and answer SHUTDOWN_NOW only once
            # every active broker has replayed that change (one more hop for them to fetch it)
            self.mrec(
                "BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=r.epoch, inControlledShutdown=1
            )
            self.step(
                "controller_controlled_shutdown",
                "controller",
                f"B{bid} asks to shut down while it leads: the controller marks it in controlled shutdown "
                "and moves leadership away first",
                broker=bid,
            )
            self._ctl_change([x for x in c.isr if x != bid], why="shutdown", exclude={bid})
            delay = NETWORK_DELAY_MS
        # a broker that leads nothing gets SHUTDOWN_NOW at once (BHM 405-432)
        self.at(self.now + delay, self._ctl_shutdown_now, bid, self.brokers[bid].inc)

    def _ctl_shutdown_now(self, bid: int, inc: int) -> None:
        self.send("controller", bid, self._finish_shutdown, (bid, inc))
