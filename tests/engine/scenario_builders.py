"""Build contract scenarios (../shared/design/scenario-contract.md) so tests read like the
reference's tables, and read results back as (offset, epoch, record) rows.

Only fields a test names are written into the scenario; everything else is left to the
profile's defaults, because those defaults are themselves part of what the tests check
(e.g. unclean election on by default in 0.10, acks=all by default from 3.0).
"""

from __future__ import annotations

import json
from typing import Any

PROFILES = ("0.8", "0.10", "3.6", "4.1")
CURRENT = ("3.6", "4.1")  # leader epochs, diverging-epoch truncation (kafka-semantics.md §6)
HISTORIC = ("0.8", "0.10")  # truncate to own HW (§6.5, claim 3)

# The timing model of docs/simulator.md: a crashed broker is fenced 7-9 s after the crash.
FENCE_MS = 10_000
# A restarted broker registers after the old session expired (claim 5: refused within 9 s).
REJOIN_MS = 15_000


# ----------------------------------------------------------------------------- the scenario


class Scenario(dict):
    """A contract scenario (a plain JSON dict) that remembers named points in its action list,
    so a test can run the story "up to here" (see `upto`)."""

    marks: dict[str, int]


def mark(name: str) -> dict:
    """A named point between actions; not sent to the engine."""
    return {"__mark__": name}


def scenario(
    *actions: dict,
    kafka_version: str = "4.1",
    brokers: tuple[int, ...] | list[int] = (1, 2, 3),
    racks: dict[int, str] | None = None,
    replicas: list[int] | None = None,
    replication_factor: int | None = None,
    min_isr: int | None = None,
    unclean: bool | None = None,
    flush_messages: int | None = None,
    elr: int | None = None,
    acks: str | int | None = None,
    idempotence: bool | None = None,
    retries: int | None = None,
    request_timeout_ms: int | None = None,
    delivery_timeout_ms: int | None = None,
    lag_ms: int | None = None,
    auto_rebalance: bool | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    sc = Scenario(version=1, seed=seed, kafka_version=kafka_version)
    sc.marks = {}
    sc["brokers"] = [
        {"id": b, **({"rack": racks[b]} if racks and b in racks else {})} for b in brokers
    ]
    topic: dict[str, Any] = {}
    if replicas is not None:
        topic["replicas"] = list(replicas)
    elif replication_factor is None:
        topic["replicas"] = list(brokers)[:3]
    if replication_factor is not None:
        topic["replication.factor"] = replication_factor
    if min_isr is not None:
        topic["min.insync.replicas"] = min_isr
    if unclean is not None:
        topic["unclean.leader.election.enable"] = unclean
    if flush_messages is not None:
        topic["flush.messages"] = flush_messages
    sc["topic"] = topic
    controller: dict[str, Any] = {}
    if elr is not None:
        controller["eligible.leader.replicas.version"] = elr
    if auto_rebalance is not None:
        controller["auto.leader.rebalance.enable"] = auto_rebalance
    if controller:
        sc["controller"] = controller
    producer: dict[str, Any] = {}
    if acks is not None:
        producer["acks"] = acks
    if idempotence is not None:
        producer["enable.idempotence"] = idempotence
    if retries is not None:
        producer["retries"] = retries
    if request_timeout_ms is not None:
        producer["request.timeout.ms"] = request_timeout_ms
    if delivery_timeout_ms is not None:
        producer["delivery.timeout.ms"] = delivery_timeout_ms
    if producer:
        sc["producer"] = producer
    if lag_ms is not None:
        sc["timing"] = {"replica.lag.time.max.ms": lag_ms}
    real = []
    for a in actions:
        if "__mark__" in a:
            sc.marks[a["__mark__"]] = len(real)
        else:
            real.append(dict(a))
    sc["actions"] = real
    return sc


def no_elr(version: str) -> int | None:
    """ELR switched off where the profile has the feature (4.1); absent elsewhere."""
    return 0 if version == "4.1" else None


# ----------------------------------------------------------------------------- actions


def produce(*records: str, acks: str | int | None = None) -> dict:
    a: dict[str, Any] = {"do": "produce", "records": list(records)}
    if acks is not None:
        a["acks"] = acks
    return a


def advance(ms: int) -> dict:
    return {"do": "advance", "ms": ms}


def settle(max_ms: int | None = None) -> dict:
    return {"do": "settle"} if max_ms is None else {"do": "settle", "max_ms": max_ms}


def crash(broker: int, lose_unflushed: bool = False) -> dict:
    a: dict[str, Any] = {"do": "crash", "broker": broker}
    if lose_unflushed:
        a["lose_unflushed"] = True
    return a


def power_loss(*brokers: int) -> dict:
    return {"do": "power_loss", "brokers": list(brokers)}


def shutdown(broker: int) -> dict:
    return {"do": "shutdown", "broker": broker}


def restart(broker: int) -> dict:
    return {"do": "restart", "broker": broker}


def stop_fetching(broker: int) -> dict:
    return {"do": "stop_fetching", "broker": broker}


def resume_fetching(broker: int) -> dict:
    return {"do": "resume_fetching", "broker": broker}


def isolate(broker: int, from_: list | None = None) -> dict:
    a: dict[str, Any] = {"do": "isolate", "broker": broker}
    if from_ is not None:
        a["from"] = list(from_)
    return a


def heal(broker: int, from_: list | None = None) -> dict:
    a: dict[str, Any] = {"do": "heal", "broker": broker}
    if from_ is not None:
        a["from"] = list(from_)
    return a


def set_config(key: str, value: Any) -> dict:
    return {"do": "set", "key": key, "value": value}


def elect(kind: str) -> dict:
    return {"do": "elect", "type": kind}


# ----------------------------------------------------------------------------- running


def run(sc: dict, **kwargs: Any) -> dict:
    """simulate() on a deep copy, so a test can reuse its scenario dict afterwards."""
    from engine import simulate

    return simulate(json.loads(json.dumps(sc)), **kwargs)


def with_actions(sc: dict, actions: list[dict]) -> dict:
    out = json.loads(json.dumps(sc))
    out["actions"] = [dict(a) for a in actions]
    return out


def upto(sc: Scenario, name: str, **kwargs: Any) -> dict:
    """Run the story up to the named mark (the engine is a pure function of the scenario, so
    this is the state the full run passes through at that point)."""
    return run(with_actions(sc, sc["actions"][: sc.marks[name]]), **kwargs)


# ----------------------------------------------------------------------------- reading results


def part(result: dict, snapshot: str = "final") -> dict:
    return result[snapshot]["partition"]


def broker(result: dict, b: int, snapshot: str = "final") -> dict:
    return result[snapshot]["brokers"][str(b)]


def log_rows(result: dict, b: int, snapshot: str = "final") -> list[tuple[int, int, str]]:
    return [(e["offset"], e["epoch"], e["record"]) for e in broker(result, b, snapshot)["log"]]


def records(result: dict, b: int, snapshot: str = "final") -> list[str]:
    return [e["record"] for e in broker(result, b, snapshot)["log"]]


def truncated(result: dict, b: int, why: str | None = None, snapshot: str = "final") -> list[str]:
    """Records replica b deleted by truncation or lost on power loss (optionally of one `why`)."""
    out = []
    for t in broker(result, b, snapshot).get("truncated", []):
        if why is None or t.get("why") == why:
            recs = t.get("records")
            if recs is None and "record" in t:
                recs = [t["record"]]
            out.extend(recs or [])
    return out


def outcome(result: dict, i: int) -> tuple[str, str | None]:
    p = result["produce"][i]
    return p["outcome"], p["error"]


def steps_of(result: dict, kind: str, **match: Any) -> list[dict]:
    return [s for s in result["steps"] if s["kind"] == kind
            and all(s.get(k) == v for k, v in match.items())]


def first_step(result: dict, kind: str, after: int = 0, **match: Any) -> dict | None:
    for s in steps_of(result, kind, **match):
        if s["i"] > after:
            return s
    return None


def leader_log_records(result: dict, snapshot: str = "final") -> list[str]:
    leader = part(result, snapshot)["leader"]
    assert leader != -1, "the partition has no leader"
    return records(result, leader, snapshot)
