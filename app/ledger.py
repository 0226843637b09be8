"""What the producer has heard by a given step, read from the engine's ledger.

Every engine snapshot carries `ledger` = {acked, sent, failed, lost}: the records acknowledged,
handed to the network, failed, and acknowledged but missing from the current leader, as of that
snapshot (docs/scenario-format.md). This module only reads it; whether a record counts as lost, or
when a batch is acknowledged, is the engine's rule, never re-derived here.

    snapshots(view, partitions)   every partition's snapshot at one step
    union(snapshots)              the ledger over those partitions
    batches(produce, snapshots)   the scenario's batches, each with its outcome as of that step
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

KEYS = ("acked", "failed", "sent", "lost")

# A batch's fields in the run's `produce` list that describe its end; they are true at a step only
# once the ledger has the batch's outcome (an outcome never changes after that).
FINAL_ONLY = ("error", "offsets", "done_ms", "attempts")


def snapshots(
    view: dict[str, Any], partitions: Iterable[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Every partition's snapshot at one step: a merged view's `partitions`, else the `view` of each
    entry of an `at_step` result's `partitions`, else the view itself (one partition). A
    partition add_partitions has not created yet at that step (None there) holds nothing and is
    left out, so the list is not indexed by partition number."""
    merged = view.get("partitions")
    if isinstance(merged, list) and merged and any(isinstance(p, dict) for p in merged):
        return [p for p in merged if isinstance(p, dict)]
    views = [p.get("view") for p in partitions or []]
    if views and any(isinstance(v, dict) for v in views):
        return [v for v in views if isinstance(v, dict)]
    return [view]


def union(snaps: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """The engine's ledger over several partition snapshots, each list in first-seen order."""
    out: dict[str, dict[str, None]] = {key: {} for key in KEYS}
    for snap in snaps:
        ledger = snap["ledger"]
        for key, seen in out.items():
            seen.update(dict.fromkeys(str(r) for r in ledger[key]))
    return {key: list(seen) for key, seen in out.items()}


def batches(produce: Iterable[dict[str, Any]], snaps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's batches the ledger knows of at this step (sent, acknowledged or failed by then), in
    produce order, each with `outcome` as of then: "acked", "failed", "sent" (acks=0: never
    answered) or "pending" (sent, no answer yet). A batch not handed to the network yet (not
    produced, or waiting for a leader) is left out. A pending batch has no error, offsets or done
    time, and `attempts` is its attempt in flight (None when unknown)."""
    ledger = union(snaps)
    acked, failed, sent = set(ledger["acked"]), set(ledger["failed"]), set(ledger["sent"])
    in_flight: dict[tuple[str, ...], dict[str, Any]] = {}
    for snap in snaps:
        for req in (snap.get("producer") or {}).get("in_flight") or []:
            in_flight[tuple(str(r) for r in req.get("records") or [])] = req
    out = []
    for batch in produce:
        recs = [str(r) for r in batch.get("records") or []]
        if not recs:
            continue
        if recs[0] in acked:
            out.append({**batch, "outcome": "acked"})
        elif recs[0] in failed:
            out.append({**batch, "outcome": "failed"})
        else:
            if recs[0] not in sent:
                continue  # not handed to the network yet at this step
            req = in_flight.get(tuple(recs))
            open_batch = {k: v for k, v in batch.items() if k not in FINAL_ONLY}
            if req is None and str(batch.get("acks")) == "0":
                out.append({**open_batch, "outcome": "sent"})
            else:
                attempt = req.get("attempt") if req is not None else None
                out.append({**open_batch, "outcome": "pending", "attempts": attempt})
    return out

