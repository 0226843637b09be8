"""A broker process's lifecycle with the controller (heartbeats, registration, the controlled
shutdown's end) and how it applies the metadata it is sent (becoming leader or follower).

A mixin of engine.sim.Sim: its methods read and change the partition simulation's state
(`self.brokers`, `self.ctl`, `self.batches`, ...), which Sim.__init__ sets up.
"""

from __future__ import annotations

from typing import Any

from ..state import (
    NETWORK_DELAY_MS,
    NO_LEADER,
    Broker,
    FollowerState,
    _fmt_cache,
    _fmt_records,
    _fmt_set,
)


class BrokerRole:

    def _broker_heartbeat(self, bid: int, inc: int) -> None:
        br = self.brokers[bid]
        if br.inc != inc or not br.alive:
            return
        if br.registered:
            self.send(bid, "controller", self._ctl_heartbeat, (bid, inc))
        else:
            self.send(bid, "controller", self._ctl_register, (bid, inc, br.clean_shutdown))
        self.at(self.now + self.cfg.heartbeat_ms, self._broker_heartbeat, bid, inc)

    def _broker_registered(self, bid: int, inc: int) -> None:
        br = self.brokers[bid]
        if br.inc == inc:
            br.registered = True
            br.clean_shutdown = False

    # ---------------------------------------------------------------------------------------
    # brokers applying metadata (makeLeader / makeFollower)

    def _apply_metadata(self, bid: int, meta: dict[str, Any], quiet: bool = False) -> None:
        br = self.brokers[bid]
        if meta["partition_epoch"] < br.partition_epoch or (
            meta["partition_epoch"] == br.partition_epoch and not quiet
        ):
            return
        leader = meta["leader"]
        was_leader = br.role == "leader"
        old_leader = br.leader_id
        new_epoch = meta["leader_epoch"] != br.leader_epoch
        br.partition_epoch = meta["partition_epoch"]
        br.leader_epoch = meta["leader_epoch"]
        br.leader_id = leader
        if leader == bid:
            had_pending = br.pending
            br.isr = list(meta["isr"])
            br.maximal = list(br.isr)
            br.pending = None
            br.pending_isr = []
            if not was_leader or new_epoch:
                self._become_leader(br, meta, was_leader, quiet)
            elif had_pending is not None:
                self.step(
                    "leader_commit_isr",
                    f"broker-{bid}",
                    f"B{bid} learns its ISR change is committed: ISR {_fmt_set(br.isr)}",
                    broker=bid,
                )
            self._maybe_increment_hw(br)
            self._check_purgatory(br)
            return
        if was_leader:
            br.role = "none"
            self._check_purgatory(br)  # P: completeDelayedOperationsWhenNotPartitionLeader
            self._fail_parked_fetches(br)
            br.fstate = {}
        br.isr = list(meta["isr"])
        br.maximal = list(br.isr)
        br.pending = None
        if leader == NO_LEADER:
            br.role = "none"
            br.fetch_gen += 1
            br.fetch_inflight = False
            return
        br.role = "follower"
        become = leader != old_leader or was_leader
        if become:
            if not self.prof.leader_epochs:
                if br.hw < br.leo:
                    self._truncate(
                        br,
                        br.hw,
                        "high_watermark",
                        kind="follower_truncate_to_hw",
                        text=f"Historic rule (before KIP-101): B{bid} cuts its log back to its own "
                        f"HW {br.hw}, deleting {_fmt_records([x[1] for x in br.log[br.hw :]])}",
                    )
            br.fetch_gen += 1
            br.fetch_inflight = False
        self._follower_fetch(bid)  # before the step, so its snapshot shows the first fetch in flight
        if become and not quiet:
            self.step(
                "follower_become",
                f"broker-{bid}",
                f"B{bid} now follows B{leader} (leader epoch {br.leader_epoch})",
                broker=bid,
            )

    def _become_leader(self, br: Broker, meta: dict[str, Any], was_leader: bool, quiet: bool) -> None:
        """Partition.makeLeader (P 733-822)."""
        epoch = meta["leader_epoch"]
        br.role = "leader"
        br.epoch_start = br.leo
        br.answered = set()
        if self.prof.leader_epochs:
            # LEFC.assign: a new leader records (epoch, LEO) even before it writes in the epoch
            br.cache = [c for c in br.cache if c[0] < epoch and c[1] < br.leo] + [[epoch, br.leo]]
        if not was_leader:
            br.fstate = {f: FollowerState(self.now, f in br.isr) for f in self.replicas if f != br.id}
            br.fetch_gen += 1
            br.fetch_inflight = False
        br.last_hold = -1
        if not quiet:
            self.step(
                "leader_become",
                f"broker-{br.id}",
                f"B{br.id} becomes leader at epoch {epoch}; the epoch starts at offset {br.leo}; its HW is "
                f"{br.hw}; it waits for every ISR follower to fetch before the HW can move",
                broker=br.id,
            )
            if self.prof.leader_epochs:
                self.step(
                    "leader_epoch_cache",
                    f"broker-{br.id}",
                    f"B{br.id}'s leader-epoch cache gains epoch {epoch} -> start offset {br.leo}: "
                    f"{_fmt_cache(br.cache)}",
                    broker=br.id,
                )

    def _finish_shutdown(self, bid: int, inc: int) -> None:
        br = self.brokers[bid]
        if br.inc != inc or not br.alive:
            return
        br.flushed = br.leo
        br.status = "shutdown"
        br.inc += 1
        br.clean_shutdown = True
        for entry in br.parked:
            self.at(
                self.now + NETWORK_DELAY_MS, self._producer_error, entry[0], entry[1], "NETWORK_EXCEPTION"
            )
        br.parked = []
        br.parked_fetch = {}
        c = self.ctl
        r = c.reg[bid]
        r.fenced = True
        self.step(
            "broker_shutdown",
            "operator",
            f"B{bid} has flushed its log to offset {br.leo} and stopped (clean shutdown)",
            broker=bid,
        )
        # on SHUTDOWN_NOW the controller writes the fencing records: ISR changes first (RCM 1546-1548)
        if bid in c.isr and bid in self.replicas:
            self._ctl_change([x for x in c.isr if x != bid], why="shutdown", exclude={bid})
        self.mrec("BrokerRegistrationChangeRecord", brokerId=bid, brokerEpoch=r.epoch, fenced=1)
