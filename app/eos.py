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

import engine


def sessions(snaps: list[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Every idempotent producer session some partition has numbered batches for, in start order:
    {producer, producer_id, epoch, alive, next: {partition: next sequence}}."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for p, snap in enumerate(snaps):
        if snap is None:
            continue
        for s in (snap.get("producer") or {}).get("sequences") or []:
            key = (str(s["producer"]), int(s.get("started_ms", 0)))  # one process (a restart is another)
            row = out.setdefault(key, {"producer": key[0], "producer_id": int(s["producer_id"]),
                                       "epoch": int(s["epoch"]), "alive": bool(s["alive"]),
                                       "started_ms": key[1], "next": {}})
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


def idempotent(scenario: dict[str, Any]) -> dict[str, bool]:
    """Each producer process's idempotence, as the engine resolves its client's settings (the
    version's default, switched off by acks other than all when it was left unset)."""
    return {pid: p["idempotent"] for pid, p in engine.describe(scenario)["producers"].items()}


CLIENT_STATE = {"UNINITIALIZED": "not initialised", "READY": "ready", "IN_TRANSACTION": "in txn",
                "COMMITTING_TRANSACTION": "committing", "ABORTING_TRANSACTION": "aborting",
                "ABORTABLE_ERROR": "must abort", "FATAL_ERROR": "fatal error"}


def instances(snaps: list[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Each transactional producer instance at this step (the engine's `producer.instances`)."""
    for snap in snaps:
        if snap is not None and (snap.get("producer") or {}).get("instances") is not None:
            return list(snap["producer"]["instances"])
    return []


def producer_lines(scenario: dict[str, Any], snaps: list[dict[str, Any] | None]) -> list[str]:
    """One line per producer process: its producer id, epoch and next sequence per partition, and
    for a transactional one its transaction manager's state (fenced when the coordinator has given
    its transactional.id a higher epoch); a process that died is marked, a producer without
    idempotence says it has no id. A second producer that has done nothing yet is left out."""
    several = sum(1 for s in snaps if s is not None) > 1
    rows = sessions(snaps)
    txn = {(i["producer"], int(i.get("started_ms", 0))): i for i in instances(snaps)}
    resolved = idempotent(scenario)
    lines = []
    for k, pc in enumerate(_producers(scenario)):
        pid = str(pc.get("id", "producer"))
        mine = [r for r in rows if r["producer"] == pid]
        inst = [i for i in txn.values() if i["producer"] == pid]
        if not mine and not any(i["producer_id"] >= 0 for i in inst):
            if k == 0 or inst:
                lines.append(f"{pid} · no producer id (idempotence off)" if not resolved.get(pid)
                             else f"{pid} · no producer id yet")
            continue
        for i in inst:  # a transactional instance that has its id but has numbered nothing here
            started = int(i.get("started_ms", 0))
            if i["producer_id"] >= 0 and not any(r["started_ms"] == started for r in mine):
                mine.append({"producer": pid, "producer_id": i["producer_id"], "epoch": i["epoch"],
                             "alive": i["alive"], "started_ms": started, "next": {}})
        for r in sorted(mine, key=lambda r: r["started_ms"]):
            i = txn.get((pid, r["started_ms"]))
            epoch = i["epoch"] if i is not None else r["epoch"]  # what the instance holds now
            head = f"{pid} · pid {r['producer_id']} · epoch {epoch}"
            if not r["alive"]:
                lines.append(f"✖ {head} (its process died)")
                continue
            if r["next"]:
                nxt = (", ".join(f"P{p} {n}" for p, n in sorted(r["next"].items())) if several
                       else str(next(iter(r["next"].values()))))
                head += f" · next seq {nxt}"
            if i is not None:
                head += " · FENCED" if i["fenced"] else f" · {CLIENT_STATE.get(i['state'], i['state'])}"
            lines.append(head)
    return lines


def coordinator_badges(view: dict[str, Any]) -> list[dict[str, Any]]:
    """The transaction coordinator's record of each transactional.id at this step, one badge each:
    the broker, the epoch it last handed out and the transaction's state (the producer id, which a
    transactional.id keeps, is in the title)."""
    out = []
    for tid, m in sorted((view.get("transactions") or {}).items()):
        out.append({
            "text": f"B{m['coordinator']}: {tid} e{m['epoch']} · {m['state']}",
            "cls": "broker",
            "title": (f"B{m['coordinator']} leads __transaction_state partition {m['txn_partition']}, so it "
                      f"is the transaction coordinator of {tid!r}: producer id {m['producer_id']}, epoch "
                      f"{m['epoch']} (only an instance holding it may act), transaction {m['state']}"),
        })
    return out


def cell_class(snap: dict[str, Any] | None, entry: dict[str, Any]) -> tuple[str, str] | None:
    """How a transaction colours one log cell, with a phrase for its title: a COMMIT or ABORT
    marker, a record of an aborted transaction, or one whose transaction has no marker yet."""
    if snap is None:
        return None
    part = snap.get("partition") or {}
    offset = int(entry["offset"])
    control = entry.get("control")
    if control == "COMMIT":
        return "ctl-commit", "a COMMIT marker (a control record: it takes an offset, no consumer receives it)"
    if control == "ABORT":
        return "ctl-abort", "an ABORT marker (a control record: it takes an offset, no consumer receives it)"
    if offset in (part.get("aborted") or []):
        return "txn-aborted", "in an aborted transaction: read_committed consumers drop it"
    if offset in (part.get("undecided") or []):
        return "txn-open", "in a transaction with no marker yet: read_committed consumers wait at the LSO"
    return None


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
        known = r["last_sequence"] >= 0
        seq = f"last seq {r['last_sequence']}" if known else "no seq yet"
        said = (f"last sequence {r['last_sequence']}, and its last batches ({spans})" if known else
                "no sequence yet at this epoch (a marker raised it; the next batch starts at 0)")
        out.append({
            "text": f"B{leader} {where}knows pid {r['producer_id']}: e{r['epoch']}, {seq}",
            "cls": "broker",
            "title": (f"What B{leader}, P{number}'s leader, remembers about producer id {r['producer_id']}: "
                      f"epoch {r['epoch']}, {said}; it answers a retry of a remembered batch with the "
                      "original offsets"),
        })
    return out
