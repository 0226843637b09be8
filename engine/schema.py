"""The scenario's JSON Schema and the format page's field tables, generated from the pydantic models
in engine/scenario.py.

The models are the one definition of the format: `POST /api/v1/simulate` validates with them, the
app serves this schema (and FastAPI's OpenAPI document refers to it), `python -m engine schema`
prints it, and docs/scenario-format.md's field tables are generated from it:

    python -m engine schema --tables                               print every table
    python -m engine schema --write-docs docs/scenario-format.md   rewrite the generated blocks
    python -m engine schema --check-docs docs/scenario-format.md   exit 1 if a block is stale

A generated block sits between `<!-- generated: NAME -->` and `<!-- end generated -->`; everything
else on the page is written by hand. Defaults that a profile fills in are read from the resolved
configuration of an empty scenario (`resolve()`), so the page never restates them.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from typing import Any, get_args

from .clients_spec import ConsumerConfig
from .profiles import DEFAULT_VERSION, PROFILES
from .scenario import (
    _ACTION_MODELS,
    LIMITS,
    MAX_BROKER_ID,
    MAX_CLIENT_ID_CHARS,
    Config,
    Scenario,
    parse,
    resolve,
)
from .segments import INT_MAX, LONG_MAX

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
FORMAT_PAGE = "docs/scenario-format.md"


def scenario_json_schema() -> dict[str, Any]:
    """A fresh JSON Schema (draft 2020-12) of one scenario document, in the contract's field names
    (the dotted Kafka config keys, not the Python attribute names)."""
    schema = Scenario.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "Build Kafka scenario",
        "description": f"One simulation: the cluster, the clients and the actions to run. See {FORMAT_PAGE}.",
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


# ---------------------------------------------------------------------------------------------
# field tables

# block name -> (the model's name in the schema's $defs, None for the top level; the JSON path shown)
SECTIONS: dict[str, tuple[str | None, str]] = {
    "scenario": (None, "(top level)"),
    "brokers": ("BrokerSpec", "brokers[]"),
    "topic": ("TopicSpec", "topic"),
    "controller": ("ControllerSpec", "controller"),
    "producer": ("ProducerSpec", "producer"),
    "producers": ("ProducerItem", "producers[]"),
    "consumers": ("ConsumerSpec", "consumers[]"),
    "timing": ("TimingSpec", "timing"),
}

# what each cap of engine.LIMITS (and the fixed caps beside it) bounds
LIMIT_TEXT: dict[str, str] = {
    "max_actions": "actions in one scenario",
    "max_sim_ms": "simulated milliseconds one run may reach (advance and settle together)",
    "max_sim_ms_long": "the same for a scenario with producers, consumers, a log setting of the topic or a "
    "part-2 timing (offset expiry and tombstones need days)",
    "max_steps": "steps one run may record",
    "max_events": "events one run may process",
    "max_records_per_produce": "records in one produce action",
    "max_record_copies": "records produced times the replicas of their partition, over the whole run",
    "max_brokers": "brokers in the cluster",
    "max_record_chars": "characters of a record's value or key",
    "max_partitions": "partitions of the topic (at the start and after add_partitions)",
    "max_producers": "entries of producers",
    "max_consumers": "entries of consumers",
}
FIXED_LIMITS: dict[str, tuple[int, str]] = {
    "max_broker_id": (MAX_BROKER_ID, "the largest broker id"),
    "max_client_id_chars": (MAX_CLIENT_ID_CHARS, "characters of a producer's or consumer's id"),
}

_BIG = {INT_MAX: "2^31-1", LONG_MAX: "2^63-1", 2**32 - 1: "2^32-1"}


def action_names() -> list[str]:
    """Every `do` value, in the order of the models in engine/scenario.py."""
    return [tag for model in _ACTION_MODELS for tag in get_args(model.model_fields["do"].annotation)]


def _num(n: Any) -> str:
    return _BIG.get(n, str(n)) if isinstance(n, int) and not isinstance(n, bool) else str(n)


def _code(value: Any) -> str:
    return "`" + json.dumps(value) + "`"


def _describe_type(s: dict[str, Any], defs: dict[str, Any]) -> tuple[str, list[str]]:
    """A property's JSON Schema as (type, limits), both in words."""
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        return "object", [] if name in defs else [name]
    if "anyOf" in s:
        types: list[str] = []
        limits: list[str] = []
        values: list[str] = []
        for branch in s["anyOf"]:
            t, lim = _describe_type(branch, defs)
            if t not in types:
                types.append(t)
            values += [x.removeprefix("one of ") for x in lim if x.startswith("one of ")]
            limits += [x for x in lim if x not in limits and not x.startswith("one of ")]
        if values:
            limits.insert(0, "one of " + ", ".join(values))
        return " or ".join(types), limits
    if "oneOf" in s:
        return "object", []
    limits = []
    if "const" in s:
        limits.append(_code(s["const"]))
    if "enum" in s:
        limits.append("one of " + ", ".join(_code(v) for v in s["enum"]))
    lo, hi = s.get("minimum"), s.get("maximum")
    if lo is not None and hi is not None:
        limits.append(f"{_num(lo)} to {_num(hi)}")
    elif lo is not None:
        limits.append(f"at least {_num(lo)}")
    elif hi is not None:
        limits.append(f"at most {_num(hi)}")
    lo_len, hi_len = s.get("minLength"), s.get("maxLength")
    if lo_len is not None or hi_len is not None:
        if lo_len and hi_len is not None:
            limits.append(f"{lo_len} to {hi_len} characters")
        else:
            text = f"up to {hi_len} characters" if hi_len is not None else f"at least {lo_len} characters"
            limits.append(text)
    if "pattern" in s:
        limits.append(f"pattern `{s['pattern']}`")
    kind = s.get("type", "any")
    if kind == "array":
        item_t, item_lim = _describe_type(s.get("items", {}), defs)
        if "maxItems" in s:
            limits.append(f"at most {s['maxItems']} items")
        limits += [f"each {x}" for x in item_lim]
        return f"array of ({item_t})" if " or " in item_t else f"array of {item_t}", limits
    if kind == "object" and "additionalProperties" in s:
        val_t, val_lim = _describe_type(s["additionalProperties"], defs)
        key_lim = s.get("propertyNames", {}).get("maxLength")
        if key_lim is not None:
            limits.append(f"keys up to {key_lim} characters")
        limits += [f"values {x}" for x in val_lim]
        return f"object of {val_t}", limits
    return kind, limits


def _resolved(version: str) -> dict[str, dict[str, Any]]:
    """What an empty scenario resolves to under one profile, per section and field name: the
    defaults the page shows for fields whose model default is null."""
    cfg: Config = resolve(parse({"kafka_version": version}))
    prod = cfg.producers[0]
    producer = {
        f.name.replace("_", "."): getattr(prod, f.name) for f in fields(prod) if f.name not in ("id",)
    }
    if producer["acks"] == -1:
        producer["acks"] = "all"  # the scenario's spelling of -1
    topic = {f.name.replace("_", "."): getattr(cfg.log, f.name) for f in fields(cfg.log)}
    topic.update({
        "replicas": list(cfg.replicas),
        "replication.factor": len(cfg.replicas),
        "min.insync.replicas": cfg.min_isr,
        "unclean.leader.election.enable": cfg.unclean,
        "flush.messages": cfg.flush_messages,
        "quorum.required.acks": cfg.quorum_acks,
        "name": cfg.topic_name,
    })
    timing = {f.name.replace("_", "."): getattr(cfg.timing, f.name) for f in fields(cfg.timing)}
    timing.update({
        "replica.lag.time.max.ms": cfg.lag_time_ms,
        "replica.lag.max.messages": cfg.lag_max_messages,
        "replica.fetch.wait.max.ms": cfg.fetch_wait_ms,
        "replica.fetch.backoff.ms": cfg.fetch_backoff_ms,
        "broker.session.timeout.ms": cfg.session_timeout_ms,
        "broker.heartbeat.interval.ms": cfg.heartbeat_ms,
        "unclean.leader.election.interval.ms": cfg.unclean_interval_ms,
        "leader.imbalance.check.interval.seconds": cfg.rebalance_interval_ms // 1000,
    })
    consumer = {
        f.name.replace("_", "."): (list(f.default) if isinstance(f.default, tuple) else f.default)
        for f in fields(ConsumerConfig)
        if f.name not in ("id", "reset_duration_ns")
    }
    consumer["loop_ms"] = consumer.pop("loop.ms")
    return {
        "topic": topic,
        "controller": {"eligible.leader.replicas.version": 1 if cfg.elr else 0},
        "producer": producer,
        "producers": producer,
        "consumers": consumer,
        "timing": timing,
    }


def _default_cell(section: str, name: str, prop: dict[str, Any], required: bool,
                  by_version: dict[str, dict[str, dict[str, Any]]]) -> str:
    if required:
        return "required"
    if "default" not in prop:
        return "`{}`" if "$ref" in prop else "`[]`"
    if prop["default"] is not None:
        return _code(prop["default"])
    here = by_version[DEFAULT_VERSION].get(section, {})
    if name not in here:
        return "`null`"
    value = here[name]
    others = {json.dumps(v.get(section, {}).get(name)) for v in by_version.values()}
    note = f" ({DEFAULT_VERSION}; differs by kafka_version)" if len(others) > 1 else ""
    return f"{_code(value)}{note}"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(section: str, model: dict[str, Any], defs: dict[str, Any],
           by_version: dict[str, dict[str, dict[str, Any]]], only_do: str | None = None) -> str:
    rows = ["| field | type | default | limits | description |", "|---|---|---|---|---|"]
    required = set(model.get("required", []))
    for name, prop in model["properties"].items():
        kind, limits = _describe_type(prop, defs)
        if name == "do" and only_do is not None:
            limits = [_code(only_do)]
        default = _default_cell(section, name, prop, name in required, by_version)
        cells = [f"`{name}`", kind, default, "; ".join(limits) or "—", prop.get("description", "")]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(rows)


def limits_table() -> str:
    rows = ["| limit | value | what it bounds |", "|---|---|---|"]
    for key, value in LIMITS.items():
        rows.append(f"| `{key}` | {value} | {LIMIT_TEXT[key]} |")
    for key, (value, text) in FIXED_LIMITS.items():
        rows.append(f"| `{key}` | {value} | {text} |")
    return "\n".join(rows)


def field_tables() -> dict[str, str]:
    """Every generated block of the format page, by name: one table per section (`scenario` for the
    top level), one per action (`action-<do>`) and `limits`."""
    schema = scenario_json_schema()
    defs = schema["$defs"]
    by_version = {v: _resolved(v) for v in PROFILES}
    out: dict[str, str] = {}
    for block, (ref, _) in SECTIONS.items():
        model = schema if ref is None else defs[ref]
        out[block] = _table(block, model, defs, by_version)
    mapping = schema["properties"]["actions"]["items"]["discriminator"]["mapping"]
    for do in action_names():
        model = defs[mapping[do].rsplit("/", 1)[-1]]
        out[f"action-{do}"] = _table(f"action-{do}", model, defs, by_version, do)
    out["limits"] = limits_table()
    return out


_BLOCK = re.compile(r"(<!-- generated: ([a-z0-9_-]+) -->\n)(.*?)(<!-- end generated -->)", re.S)


def fill_generated(text: str, blocks: dict[str, str] | None = None) -> str:
    """`text` (the format page) with every generated block replaced by what the models give now.
    ValueError for a block name the generator does not know, or a block the page lacks."""
    blocks = field_tables() if blocks is None else blocks
    seen: list[str] = []

    def swap(m: re.Match[str]) -> str:
        name = m.group(2)
        if name not in blocks:
            raise ValueError(f"unknown generated block {name!r}; known: {', '.join(blocks)}")
        seen.append(name)
        return f"{m.group(1)}{blocks[name]}\n{m.group(4)}"

    new = _BLOCK.sub(swap, text)
    missing = [name for name in blocks if name not in seen]
    if missing:
        raise ValueError(f"the page has no generated block for {', '.join(missing)}")
    return new


def stale_blocks(text: str, blocks: dict[str, str] | None = None) -> list[str]:
    """The names of the generated blocks whose text differs from what the models give now
    (`blocks`, when the caller already has `field_tables()`)."""
    now = {m.group(2): m.group(3) for m in _BLOCK.finditer(fill_generated(text, blocks))}
    return [m.group(2) for m in _BLOCK.finditer(text) if m.group(3) != now.get(m.group(2))]


def tables_text() -> str:
    """Every generated block with its markers, as `--tables` prints them."""
    return "\n\n".join(
        f"<!-- generated: {name} -->\n{table}\n<!-- end generated -->"
        for name, table in field_tables().items()
    ) + "\n"
