"""Scene 08's counters as the page shows them: producer ids, epochs and sequences, read from the
engine's view at the current step (never re-derived: the engine decides them).

    sessions(snaps)          each producer process's id, epoch and next sequence per partition
    remembered(snap)         what a partition's leader remembers per producer id
    duplicates(snaps)        the engine ledger's duplicates at this step, over every partition
    producer_lines(...)      the producer box's counter lines
    state_badges(snap, n, leader)  the broker strip's badges: what a leader remembers per producer id
"""

from __future__ import annotations

from typing import Any


def sessions(snaps: list[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Every idempotent producer session some partition has numbered batches for, in start order:
    {producer, producer_id, epoch, alive, next: {partition: next sequence}}."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for p, snap in enumerate(snaps):
        if snap is None:
            continue
        for s in (snap.get("producer") or {}).get("sequences") or []:
            key = (str(s["producer"]), int(s["producer_id"]))
            row = out.setdefault(key, {"producer": key[0], "producer_id": key[1], "epoch": int(s["epoch"]),
                                       "alive": bool(s["alive"]), "next": {}})
            row["epoch"] = max(row["epoch"], int(s["epoch"]))
            row["next"][p] = int(s["next_sequence"])
    return list(out.values())


def remembered(snap: dict[str, Any] | None) -> list[dict[str, Any]]:
    """What the partition's leader remembers per producer id at this step (the engine's
    `partition.producer_state`): epoch, last sequence and the last batches' ranges."""
    if snap is None:
        return []
    return list((snap.get("partition") or {}).get("producer_state") or [])


def duplicates(snaps: list[dict[str, Any] | None]) -> list[str]:
    """The records some partition's log holds more than once at this step (the engine's ledger)."""
    seen: dict[str, None] = {}
    for snap in snaps:
        if snap is not None:
            seen.update(dict.fromkeys(str(r) for r in (snap.get("ledger") or {}).get("duplicates") or []))
    return list(seen)


def _producers(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    if scenario.get("producers"):
        return list(scenario["producers"])
    return [{"id": "producer", **(scenario.get("producer") or {})}]


def idempotent(config: dict[str, Any]) -> bool:
    """Whether a producer asked for idempotence (explicitly, or by a transactional.id). A producer
    that left it to the default shows its counters once the engine numbers a batch."""
    return config.get("enable.idempotence") is not False


def producer_lines(scenario: dict[str, Any], snaps: list[dict[str, Any] | None]) -> list[str]:
    """One line per producer process: its producer id, epoch and next sequence per partition; a
    process that crashed is marked, and a producer without idempotence says it has no id."""
    several = sum(1 for s in snaps if s is not None) > 1
    rows = sessions(snaps)
    lines = []
    for pc in _producers(scenario):
        pid = str(pc.get("id", "producer"))
        mine = [r for r in rows if r["producer"] == pid]
        if not mine:
            lines.append(f"{pid} · no producer id (idempotence off)" if not idempotent(pc)
                         else f"{pid} · no batch numbered yet")
            continue
        for r in mine:
            nxt = (", ".join(f"P{p} {n}" for p, n in sorted(r["next"].items())) if several
                   else str(next(iter(r["next"].values()))))
            head = f"{pid} · pid {r['producer_id']} · epoch {r['epoch']}"
            lines.append(f"{head} · next seq {nxt}" if r["alive"] else f"✖ {head} (its process died)")
    return lines


def state_badges(snap: dict[str, Any] | None, number: int, leader: int | None,
                 several: bool = False) -> list[dict[str, Any]]:
    """The leader's producer state as badges for the broker strip, one per producer id: its epoch
    and the last sequence the leader holds; the title lists the remembered batches."""
    if leader is None:
        return []
    out = []
    where = f"P{number} " if several else ""
    for r in remembered(snap):
        spans = ", ".join(
            (f"seq {a}-{b}" if b > a else f"seq {a}")
            + (f" at offsets {c}-{d}" if d > c else f" at offset {c}")
            for a, b, c, d in r["batches"]
        )
        out.append({
            "text": (f"B{leader} {where}knows pid {r['producer_id']}: e{r['epoch']}, "
                     f"last seq {r['last_sequence']}"),
            "cls": "broker",
            "title": (f"What B{leader}, P{number}'s leader, remembers about producer id "
                      f"{r['producer_id']}: epoch {r['epoch']}, last sequence {r['last_sequence']}, and its "
                      f"last batches ({spans}), to answer a retry of any of them with the original offsets"),
        })
    return out
