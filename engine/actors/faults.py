"""Faults and operator actions: crashes, power loss, shutdown and restart, stopped fetchers,
network cuts, slow brokers, config changes, admin elections.

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


class FaultsRole:

    # ---------------------------------------------------------------------------------------
    # faults and admin actions

    def slow(self, bid: int, ms: int | None) -> None:
        """A straggler episode starts or ends: each fetch of this follower takes `ms` longer
        (None: back to the broker's configured fetch_delay_ms)."""
        br = self.brokers[bid]
        ms = self.cfg.fetch_delays.get(bid, 0) if ms is None else ms
        br.fetch_delay_ms = ms
        self.step(
            "broker_slow",
            "operator",
            f"B{bid}'s fetches now take {ms} ms longer (a slow disk or network)"
            if ms
            else f"B{bid}'s fetches are back to normal speed",
            broker=bid,
        )

    def writeback(self, bid: int) -> None:
        """The operating system writes a broker's dirty pages to disk on its own (outside Kafka)."""
        br = self.brokers[bid]
        if br.alive and br.flushed < br.leo:
            br.flushed = br.leo
            self.step(
                "broker_flush",
                "operator",
                f"The OS writes B{bid}'s page cache back to disk: flushed up to offset {br.leo}",
                broker=bid,
            )

    def crash(self, bid: int, lose_unflushed: bool, power: bool = False, lose_disk: bool = False) -> None:
        br = self.brokers[bid]
        if not br.alive:
            if power and lose_unflushed and br.leo > br.flushed:
                # The process is gone but the machine was up: its unflushed records were still in
                # the OS page cache, and a power cut takes them (a clean shutdown flushed first).
                lost = br.leo - br.flushed
                self.unsafe_history = True
                self.step(
                    "broker_power_loss",
                    "operator",
                    f"B{bid} is already down, and now its machine loses power; {lost} unflushed "
                    "record(s) in its page cache are gone",
                    broker=bid,
                )
                self._truncate(
                    br,
                    br.flushed,
                    "power_loss",
                    kind="broker_power_loss",
                    text=f"B{bid}'s log now ends at its flushed offset {br.flushed}",
                )
                return
            self._ignored(bid, f"B{bid} is not running, so there is nothing to crash")
            return
        br.status = "crashed"
        br.inc += 1
        br.clean_shutdown = False
        for entry in br.parked:
            if self.linked(bid, "producer"):
                self.at(
                    self.now + NETWORK_DELAY_MS, self._producer_error, entry[0], entry[1], "NETWORK_EXCEPTION"
                )
        br.parked = []
        for fid, (gen, _o, _at, _until) in br.parked_fetch.items():
            if self.linked(bid, fid):
                self.at(self.now + NETWORK_DELAY_MS, self._fetch_failed, fid, self.brokers[fid].inc, gen)
        br.parked_fetch = {}
        kind = "broker_power_loss" if power else "broker_crash"
        lost = br.leo - br.flushed if lose_unflushed else 0
        self.step(
            kind,
            "operator",
            (f"B{bid} loses power" if power else f"B{bid}'s process crashes")
            + (
                f"; {lost} unflushed record(s) in its page cache are gone"
                if lost
                else ("; its page cache survives" if not lose_unflushed else "")
            ),
            broker=bid,
        )
        if lose_disk:
            self.unsafe_history = True
            if br.log:
                self._truncate(
                    br,
                    0,
                    "disk_lost",
                    kind="broker_crash",
                    text=f"B{bid}'s disk is destroyed: its whole log is gone",
                )
            br.cache = []
        elif lose_unflushed:
            self.unsafe_history = True
            if lost:
                self._truncate(
                    br,
                    br.flushed,
                    "power_loss",
                    kind="broker_power_loss",
                    text=f"B{bid}'s log now ends at its flushed offset {br.flushed}",
                )

    def power_loss(self, ids: list[int]) -> None:
        for bid in ids:
            self.crash(bid, True, power=True)

    def _ignored(self, bid: int, why: str) -> None:
        self.step("operator_ignored", "operator", why + "; the action changes nothing", broker=bid)

    def shutdown(self, bid: int) -> None:
        br = self.brokers[bid]
        if not br.alive:
            self._ignored(bid, f"B{bid} is not running, so it cannot shut down")
            return
        self.send(
            bid,
            "controller",
            self._ctl_controlled_shutdown,
            (bid,),
            on_lost=(self._finish_shutdown, bid, br.inc),
        )
        self.step("broker_shutdown", "operator", f"B{bid} begins a controlled shutdown", broker=bid)
        # if the controller cannot be reached, the broker gives up waiting and stops anyway
        self.at(self.now + self.cfg.session_timeout_ms, self._finish_shutdown, bid, br.inc)

    def restart(self, bid: int) -> None:
        br = self.brokers[bid]
        if br.alive:
            self._ignored(
                bid,
                f"B{bid} is still running (a controlled shutdown takes a round trip to the "
                "controller), so it cannot restart yet",
            )
            return
        br.status = "running"
        br.inc += 1
        br.hw = min(br.hw, br.leo)  # UL 288-300: the checkpointed HW is clamped to the recovered LEO
        br.cache = [c for c in br.cache if c[1] <= br.leo]
        br.role = "none"
        br.leader_id = NO_LEADER
        br.partition_epoch = -1
        br.leader_epoch = -1
        br.isr, br.maximal, br.pending, br.fstate = [], [], None, {}
        br.parked, br.parked_fetch = [], {}
        br.fetch_inflight = False
        br.fetching = True
        br.registered = False
        self.step(
            "broker_restart",
            "operator",
            f"B{bid} starts and recovers its log: LEO {br.leo}, HW {br.hw}, flushed {br.flushed}",
            broker=bid,
        )
        self.at(self.now, self._broker_heartbeat, bid, br.inc)

    def stop_fetching(self, bid: int, on: bool) -> None:
        br = self.brokers[bid]
        br.fetching = on
        if on:
            self.step("broker_resume_fetching", "operator", f"B{bid} fetches again", broker=bid)
            self._follower_fetch(bid)
        else:
            # a stuck fetcher processes nothing more: the fetch in flight is abandoned too
            br.fetch_gen += 1
            br.fetch_inflight = False
            self.step(
                "broker_stop_fetching",
                "operator",
                f"B{bid} stops fetching (still alive and "
                + ("heartbeating)" if self.kraft else "its ZooKeeper session lives)"),
                broker=bid,
            )

    def isolate(self, bid: int, parties: list[Any] | None, heal: bool) -> None:
        if parties is None:
            parties = ["controller", "producer"] + [b for b in self.brokers if b != bid]
        pairs = {frozenset((bid, p)) for p in parties}
        names = ", ".join(("B" + str(p)) if isinstance(p, int) else p for p in parties)
        if heal:
            self.cut -= pairs
            self.step(
                "network_heal", "operator", f"The network between B{bid} and {names} is restored", broker=bid
            )
            br = self.brokers[bid]
            if br.alive and "controller" in parties and br.pending is not None and br.role == "leader":
                self.send(
                    bid,
                    "controller",
                    self._ctl_alter_partition,
                    (bid, br.leader_epoch, br.partition_epoch, list(br.pending_isr)),
                )
            if br.alive and br.role == "follower" and not br.fetch_inflight:
                self._follower_fetch(bid)
        else:
            self.cut |= pairs
            self.step(
                "network_isolate", "operator", f"The network between B{bid} and {names} is cut", broker=bid
            )

    def set_config(self, key: str, value: Any) -> None:
        c = self.ctl
        self.step("config_set", "operator", f"An operator sets {key}={str(value).lower()}")
        self.mrec("ConfigRecord", resourceType="TOPIC", resourceName="topic", name=key, value=value)
        if key == "unclean.leader.election.enable":
            c.unclean = bool(value)
            # KRaft does not elect at once on this change (TC 166-170); the periodic check or an
            # admin election does. Brokers fenced or unfenced later elect uncleanly at once.
        elif key == "min.insync.replicas":
            c.min_isr = int(value)
            # ref: kafka-semantics.md §3.1. A config change is not a high-watermark trigger: in
            # Partition.scala (commit 1eb7644, 2024) maybeIncrementLeaderHW is called from makeLeader,
            # updateFollowerFetchState, appendRecordsToLeader and the ISR-commit path only, and the
            # broker's TopicConfigHandler.updateLogConfig (ConfigHandler.scala) only swaps the log
            # config. The new value is read at the next of those (and by parked produces when next
            # checked).
            if self.cfg.elr:
                # ref: KAFKA-16540 (PR #18148, 4.0): with ELR on, the controller answers every
                # min.insync.replicas update with a ClearElrRecord for the topic, even one that sets
                # the same value (noted in PR #20237's review; the 4.1 operations docs say so for the
                # cluster default). Replaying it empties eligibleLeaderReplicas and lastKnownElr and
                # changes (bumps the epoch of) only partitions where either was non-empty (KAFKA-18649,
                # PR #18708). A leader applies such a change through makeLeader, which does run
                # maybeIncrementLeaderHW (Partition.scala 822, commit 1eb7644): one hop later.
                self.mrec("ClearElrRecord", topicName="topic")
                if c.elr or c.lke:
                    old_elr, old_lke = list(c.elr), list(c.lke)
                    c.elr, c.lke = [], []
                    c.partition_epoch += 1
                    self._publish()
                    self.step(
                        "controller_update_elr",
                        "controller",
                        f"min.insync.replicas was set, so the controller clears the topic's ELR "
                        f"{_fmt_set(old_elr)} and last known ELR {_fmt_set(old_lke)} (ClearElrRecord; "
                        f"it does so even when the value is unchanged); partition epoch {c.partition_epoch}",
                    )
        elif key == "flush.messages":
            self.flush_messages = value

    def elect(self, kind: str) -> None:
        c = self.ctl
        if kind == "unclean":
            if c.leader != NO_LEADER:
                self.step(
                    "controller_admin_election",
                    "controller",
                    f"Admin unclean election: ELECTION_NOT_NEEDED, B{c.leader} already leads",
                )
                return
            self.step(
                "controller_admin_election",
                "controller",
                "Admin unclean election (kafka-leader-election.sh --election-type unclean)",
            )
            self._ctl_change(list(c.isr), why="admin", election="unclean")
            if c.leader == NO_LEADER:
                self.step(
                    "controller_admin_election",
                    "controller",
                    "ELIGIBLE_LEADERS_NOT_AVAILABLE: no live replica can lead",
                )
        else:
            pref = self.replicas[0]
            if c.leader == pref:
                self.step(
                    "controller_admin_election",
                    "controller",
                    f"Admin preferred election: ELECTION_NOT_NEEDED, B{pref} already leads",
                )
            elif pref in c.isr and self._ctl_acceptable(pref, set()):
                self._ctl_change(list(c.isr), why="preferred", preferred=pref)
            else:
                self.step(
                    "controller_admin_election",
                    "controller",
                    f"Admin preferred election: PREFERRED_LEADER_NOT_AVAILABLE (B{pref} is not a live "
                    "ISR member)",
                )
