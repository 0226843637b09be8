"""The durability headroom table: how many brokers a topic can lose before acks=all writes stop,
and what happens to acknowledged data, read from the same profile rules the simulator runs.

The rules (../shared/reference/kafka-semantics.md §2.2, §10 S5):
- the leader refuses an acks=all write when the committed ISR is smaller than the effective
  minimum (Partition.scala, NOT_ENOUGH_REPLICAS before any append);
- the effective minimum is min(min.insync.replicas, RF) from 3.7 (KAFKA-15583, the profile's
  `effective_min_isr_cap`); before that it is the raw setting, so min.insync.replicas > RF
  refuses every acks=all write even with every broker up;
- acks=0 and acks=1 ignore min.insync.replicas;
- an automatic unclean election needs unclean.leader.election.enable and a controller that
  honours it (KRaft before 3.9 did not: the profile's `topic_unclean_config`).
tests/engine/test_headroom.py checks the "0 brokers down" row against simulated produces for
every profile, RF 1-5, min.insync.replicas 1-5 and acks 0, 1, all.
"""

from __future__ import annotations

from typing import Any

from .scenario import DEFAULT_LIMITS, Limits, Scenario, parse, resolve

MODELLED_ACKS = {-1: "all", 0: "0", 1: "1"}  # acks=2 of 0.8 and KIP-926's acks are not tabled


def headroom(scenario: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The headroom table for a scenario's topic (partition 0's replicas), producer acks and version.

    Returns rf, m (min.insync.replicas), acks ("0", "1", "all" or the raw value), effective (the
    effective minimum), headroom (brokers that can be lost with acks=all writes continuing; None
    when every acks=all write is refused), refuses_all, capped, unclean, elr, version, formula
    (one sentence), modelled (False for an acks value the table does not model, with no rows) and
    rows: one per number of replicas down, 0..RF, each {down, live, writes, safety, status} with
    status "ok", "refused" or "offline".
    """
    cfg = resolve(scenario if isinstance(scenario, Scenario) else parse(scenario, limits), limits)
    prof = cfg.profile
    rf = len(cfg.replicas)
    m = cfg.min_isr
    capped = prof.effective_min_isr_cap
    effective = min(m, rf) if capped else m
    acks = MODELLED_ACKS.get(cfg.acks) if isinstance(cfg.acks, int) else None
    elr = cfg.elr
    unclean = cfg.unclean
    auto_unclean = unclean and prof.topic_unclean_config
    refuses_all = acks == "all" and effective > rf
    write_headroom = None if effective > rf else rf - effective  # acks=all writes with every broker up?
    version = prof.version
    if capped:
        formula = (
            f"effective min ISR = min({m}, {rf}) = {effective}; headroom = {rf} − {effective} = "
            f"{write_headroom}"
        )
    elif m > rf:
        formula = (
            f"Kafka {version} has no effective-min cap: min.insync.replicas {m} > RF {rf}, so "
            f"every acks=all write is refused with NOT_ENOUGH_REPLICAS."
        )
    else:
        formula = f"min ISR {m} (no cap in {version}); headroom = {rf} − {m} = {write_headroom}"
    out: dict[str, Any] = {
        "rf": rf,
        "m": m,
        "acks": acks if acks is not None else str(cfg.acks),
        "effective": effective,
        "headroom": write_headroom,
        "formula": formula,
        "rows": [],
        "version": version,
        "capped": capped,
        "refuses_all": refuses_all,
        "unclean": unclean,
        "elr": elr,
        "modelled": acks is not None,
    }
    if acks is None:
        return out
    for down in range(rf + 1):
        live = rf - down
        if live == 0:
            writes, status = "offline: no replica left to lead", "offline"
            if auto_unclean:
                safety = "unclean election of the first returning replica can lose acknowledged writes"
            elif unclean:
                safety = (
                    f"acknowledged writes wait on the dead brokers' disks (Kafka {version}'s KRaft "
                    "controller ignores unclean.leader.election.enable; only an admin unclean "
                    "election could lose them)"
                )
            else:
                safety = "acknowledged writes wait on the dead brokers' disks: unavailable, not lost"
        elif acks == "all":
            if refuses_all:
                writes, status = "refused: NOT_ENOUGH_REPLICAS (min ISR > RF)", "refused"
            elif live >= effective:
                writes, status = "keeps writing", "ok"
            else:
                writes, status = "refused: NOT_ENOUGH_REPLICAS (ISR below min)", "refused"
            if refuses_all:
                safety = "nothing is acknowledged, so nothing acknowledged can be lost"
            elif down == 0:
                safety = "no loss: every acknowledged write is on every ISR member"
            elif write_headroom is not None and down <= write_headroom and effective >= 2:
                safety = "no acknowledged loss: each acked write was on ≥ 2 replicas of the ISR"
            elif auto_unclean:
                safety = "at risk: an unclean election can pick a replica that lacks acked writes"
            elif effective == 1:
                safety = "at risk if the last ISR member dies: acks=all meant one copy" + (
                    "; ELR keeps clean candidates" if elr else ""
                )
            else:
                safety = "no acknowledged loss while elections stay clean" + (" (ELR helps)" if elr else "")
        else:
            writes, status = f"keeps writing (acks={acks} ignores min ISR)", "ok"
            if down == 0:
                safety = "no broker lost yet, but a leader crash can drop acked records"
            elif acks == "0":
                safety = "at risk: acks=0 gets no answer at all"
            else:
                safety = "at risk: acks=1 is acknowledged before any follower has the record"
        out["rows"].append({"down": down, "live": live, "writes": writes, "safety": safety, "status": status})
    return out
