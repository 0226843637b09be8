"""Presenters: engine state and scene data in, template context out.

Templates only loop and print. Everything that needs a decision (what colour a cell is, where a
marker goes, whether a fault button makes sense for a broker, which pseudocode line ran, what
the headroom table says) is decided here, in plain Python that unit tests can read.

The diagram is laid out in app/diagram.py: `diagram()` here picks the snapshot to draw and the
lost records, and returns SVG coordinates for every shape in two geometries (wide and phone).
`visible_signature()` tells whether two steps draw the same picture.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any

import engine
import scenes
from app import challenges, formats, frames, groupview, ledger, logdiagram, urls
from app import diagram as dg
from app.glossary import link_segments
from app.prose import inline
from app.simulation import Timeline
from app.sources import link_citations
from app.state import INJECT_VERBS, QUIET, InjectedAction, SceneState, format_value, knob_choices
from engine.offsets import OFFSETS_TOPIC_PARTITIONS, coordinator_of
from engine.steps import STEP_KINDS
from engine.steps import step_kind as engine_step_kind

TOP_MAX_INFLIGHT_LINES = 3


def _ids(values: Any) -> list[int]:
    return [int(v) for v in (values or [])]


def _join(values: list[Any], empty: str = "none") -> str:
    return ", ".join(str(v) for v in values) if values else empty


# ----------------------------------------------------------------------------------------------
# acknowledged and lost records at a step: read from the engine's ledger (app/ledger.py)


def timeline_snapshots(timeline: Timeline) -> list[dict[str, Any]]:
    """Every partition's state at the timeline's step."""
    return ledger.snapshots(timeline.view, timeline.partitions)


def ledger_at(timeline: Timeline) -> dict[str, list[str]]:
    """The engine's ledger at the timeline's step, over every partition."""
    return ledger.union(timeline_snapshots(timeline))


def lost_in_snapshot(view: dict[str, Any]) -> set[str]:
    """The engine's lost records of one partition's snapshot (its ledger as of that step; the
    engine counts nothing as lost while the leader is down and not yet replaced)."""
    return {str(r) for r in (view.get("ledger") or {}).get("lost", [])}


def lost_records_at(timeline: Timeline) -> set[str]:
    """Acknowledged records missing from their partition's leader at this step, each partition
    checked against its own leader (see `lost_in_snapshot`)."""
    lost: set[str] = set()
    for snap in timeline_snapshots(timeline):
        lost |= lost_in_snapshot(snap)
    return lost


def produce_outcomes(timeline: Timeline) -> dict[str, Any]:
    """What the producer has heard so far at this step: acknowledged, failed, waiting, lost."""
    snaps = timeline_snapshots(timeline)
    produce = timeline.result.get("produce", [])
    acked: list[str] = []
    failed: list[str] = []
    waiting: list[str] = []
    unanswered: list[str] = []  # acks=0: sent, and no answer ever comes
    known = ledger.batches(produce, snaps)
    for batch in known:
        records = ", ".join(str(r) for r in batch.get("records", []))
        if batch["outcome"] == "acked":
            acked.append(records)
        elif batch["outcome"] == "failed":
            failed.append(f"{records} ({batch.get('error') or 'error'})")
        elif batch["outcome"] == "sent":
            unanswered.append(records)
        else:
            waiting.append(records)
    unsent = len(produce) - len(known)
    lost = sorted(ledger.union(snaps)["lost"])
    parts = [f"Acknowledged: {_join(acked)}."]
    if failed:
        parts.append(f"Failed: {'; '.join(failed)}.")
    if unanswered:
        parts.append(f"Sent with acks=0, never answered: {_join(unanswered)}.")
    if waiting:
        parts.append(f"Waiting for an answer: {_join(waiting)}.")
    if unsent:
        parts.append(f"{unsent} batch{'es' if unsent != 1 else ''} not sent yet.")
    parts.append(f"Acknowledged but lost: {_join(lost)}." if lost else "No acknowledged record lost so far.")
    return {
        "acked": acked,
        "failed": failed,
        "waiting": waiting,
        "unanswered": unanswered,
        "lost": lost,
        "text": " ".join(parts),
    }


# ----------------------------------------------------------------------------------------------
# labels: history and proposals are never shown as today's Kafka

LABEL_KINDS = (  # (the label's first words, kind, glyph); the words themselves carry the meaning
    ("history", "history", "⟲"),
    ("proposal", "proposal", "⚠"),
    ("not kafka", "proposal", "⚠"),
    ("today", "today", "✓"),
)


def run_label(text: str | None) -> dict[str, Any] | None:
    """A label split into its tag ("History", "Not Kafka", "Today's Kafka (4.1)") and its text."""
    if not text:
        return None
    tag, sep, rest = str(text).partition(": ")
    if not sep:
        tag, rest = "", str(text)
    low = str(text).lower()
    kind, glyph = "variant", "◆"
    for start, k, g in LABEL_KINDS:
        if low.startswith(start):
            kind, glyph = k, g
            break
    return {"kind": kind, "glyph": glyph, "tag": tag, "text": rest, "full": str(text)}


def derived_label(result: dict[str, Any]) -> dict[str, Any] | None:
    """A label from the rules a run actually uses (when the learner's knobs changed a preset's)."""
    proposals = list(result.get("proposals", []))
    profile = result.get("profile", {}) or {}
    if proposals:
        return run_label(
            f"Not Kafka: this run uses the {' and '.join(proposals)} proposal, never part of Kafka"
        )
    if str(profile.get("description", "")).startswith("History"):
        return run_label(
            f"History: this run replays {profile.get('label', 'old Kafka')}'s rules, not today's Kafka"
        )
    return None


def _label_for(label_text: str | None, timeline: Timeline) -> dict[str, Any] | None:
    if label_text and timeline.rules_as_preset:
        return run_label(label_text)
    return derived_label(timeline.result)


def beat_label(scene: Any, state: SceneState, timeline: Timeline) -> dict[str, Any] | None:
    """The banner over the main diagram: the beat's label while its rules still hold."""
    return _label_for(scene.beat(state.beat).label, timeline)


def run_title(result: dict[str, Any]) -> str:
    """ "This run: Kafka 4.1", naming any proposal it uses, so the title never says plain Kafka."""
    title = f"This run: {(result.get('profile') or {}).get('label', 'Kafka')}"
    proposals = list(result.get("proposals", []))
    if proposals:
        title += f" with the {' and '.join(proposals)} proposal (not Kafka)"
    return title


# ----------------------------------------------------------------------------------------------
# narration that follows the knobs: `{knob.key}` placeholders, and a note when the knobs differ

# A placeholder names a knob: `{replica.lag.time.max.ms}`. ISR sets such as {1, 2} start with a
# digit, so they never match.
KNOB_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_.]*)\}")


def knob_placeholders(text: str) -> list[str]:
    """The knob keys a narration text names as placeholders."""
    return KNOB_PLACEHOLDER.findall(text or "")


def knob_text(key: str, value: str) -> str:
    """A knob value as a sentence reads it: a time in ms as simulated time reads ("30 s", "300 ms"),
    the rest as set."""
    if key.endswith(".ms") and value.isdigit():
        return formats.sim_time(int(value))
    return value


def fill_knobs(text: str, values: dict[str, str]) -> str:
    """The text with each `{knob}` placeholder replaced by the learner's current value."""
    return KNOB_PLACEHOLDER.sub(
        lambda m: knob_text(m[1], values[m[1]]) if m[1] in values else m[0], text or ""
    )


def _knob_setting(key: str, value: str) -> str:
    return f"Kafka {value}" if key == "kafka_version" else f"{key}={value}"


def preset_values(scene: Any, beat: Any) -> dict[str, str]:
    """Every knob's value as the beat presets it (its own settings over the scene's defaults)."""
    presets = {k: format_value(v) for k, v in (beat.knobs or {}).items()}
    return {k.key: presets.get(k.key, format_value(k.default)) for k in scene.knobs}


def knob_note(scene: Any, beat: Any, values: dict[str, str]) -> str | None:
    """"The narration and the prediction describe the preset (…); your knobs: …" when the learner's
    knobs differ from the beat's preset, naming only the knobs that differ; None when they match."""
    preset = preset_values(scene, beat)
    differ = [k for k in preset if k in values and values[k] != preset[k]]
    if not differ:
        return None
    was = ", ".join(_knob_setting(k, preset[k]) for k in differ)
    now = ", ".join(_knob_setting(k, values[k]) for k in differ)
    return (f"The narration and the prediction describe the preset ({was}); your knobs: {now}."
            + _idle_knobs_note(scene, beat, values, differ))


def _idle_knobs_note(scene: Any, beat: Any, values: dict[str, str], differ: list[str]) -> str:
    """" X has no effect here: it applies only with Y." for each knob the learner changed that
    another knob switches off (its `only_if`), so a setting never changes nothing silently."""
    try:
        parsed = scene.knob_values(beat, {k: values[k] for k in differ})
    except (KeyError, ValueError):
        return ""
    out = []
    for k in differ:
        cond = {o: allowed for o, allowed in (scene.knob(k).only_if or {}).items() if o != k}
        if cond and not scene.knob_applies(k, parsed):
            need = " and ".join(f"{o}={'/'.join(allowed)}" for o, allowed in cond.items())
            out.append(f" {_knob_setting(k, values[k])} has no effect here: it applies only with {need}.")
    return "".join(out)


def _outcomes(timeline: Timeline) -> dict[str, Any]:
    """Under each run of a comparison: what the producer heard, or for a group of several members
    (scene 07) its rebalances and each member's downtime so far."""
    if groupview.group_mode(timeline.scenario):
        return groupview.outcomes(timeline)
    return produce_outcomes(timeline)


def compare_panel(
    scene: Any,
    state: SceneState,
    timeline: Timeline,
    run: Any,
    *,
    embed: bool = False,
    box: dict[str, int] | None = None,
    stops: list[frames.Stop] | None = None,
) -> dict[str, Any] | None:
    """The comparison column: its diagram, title, label and what its producer heard, or why not.
    `box` is the comparison run's diagram box (see `diagram`) and `stops` its stops, which count
    its position the way the Step bar counts the main run's."""
    if run is None:
        return None
    beat = scene.beat(state.beat)
    compare = beat.compare
    values = dict(state.knobs)
    narration = fill_knobs(compare.narration, values)
    note = knob_note(scene, beat, values)
    if narration and note:  # the comparison's story is written for the preset too
        narration = note + " " + narration
    out: dict[str, Any] = {
        "title": compare.title,
        "label": run_label(compare.label),
        "narration": inline(narration) if narration else None,
        "knob_note": note,
        "main_title": (groupview.run_title(timeline.scenario) if groupview.group_mode(timeline.scenario)
                       else run_title(timeline.result)),
        "main_outcomes": _outcomes(timeline),
        "unavailable": run.unavailable,
        "reset_url": urls.beat_url(state.scene_id, state.beat, embed=embed),
        "diagram": None,
    }
    if run.timeline is None:
        return out
    other = run.timeline
    out["label"] = _label_for(compare.label, other)
    # with several partitions the comparison draws the partition the main diagram draws
    main_partition = _current_partition(timeline) if several_partitions(timeline) else None
    out["diagram"] = diagram(
        other, other.scenario, id_prefix="cmp", defs=False, partition=main_partition, box=box
    )
    out["outcomes"] = _outcomes(other)
    out["same_as_main"] = run.same_as_main
    main_t, other_t = int(timeline.view.get("t_ms", 0)), int(other.view.get("t_ms", 0))
    if other.step >= other.step_count:
        when = " (its end)"
    elif not timeline.step:
        when = ""
    elif other_t < main_t:
        # its last step before the main run's moment: say so, or the older clock looks stuck
        when = (f" (nothing has happened in this run since then; the run on the left is at "
                f"{formats.clock(main_t)})")
    else:
        when = " (the same moment as the run on the left)"
    # Each run counts its own steps (their paths differ); the two are lined up by simulated time.
    # Between two of its stops the comparison is counted at the last one it has reached.
    shown = _reached_stop(stops, other.step)
    counter = formats.step_counter(_stop_steps(stops), shown.step if shown else other.step, other.step_count)
    out["position"] = f"{counter.capitalize()} (this run's own steps) · {formats.clock(other_t)}" + when
    # what this run did last, as the caption under the left run says it: never its end
    out["now"] = (f"Last in this run: {shown.title}" if shown is not None and shown.step > 0
                  else "Before its first step.")
    return out


def _reached_stop(stops: list[frames.Stop] | None, step: int) -> frames.Stop | None:
    """The last stop of a path at or before engine step `step` (None without stops)."""
    reached = None
    for stop in stops or []:
        if stop.step > step:
            break
        reached = stop
    return reached


# ----------------------------------------------------------------------------------------------
# the diagram (content and geometry in app/diagram.py)


def several_partitions(timeline: Timeline) -> bool:
    """Whether the run has several partitions. The result's `partitions` alone does not say: a
    one-partition run with consumers has the contract's `partitions` list too."""
    parts = timeline.result.get("partitions")
    return isinstance(parts, list) and len(parts) > 1


def _current_partition(timeline: Timeline) -> int:
    """With several partitions the diagram follows the partition the current step is about (the
    last step that named one), so a step in partition 3 is drawn in partition 3."""
    for entry in reversed(timeline.steps[: timeline.step]):
        if entry.get("partition") is not None:
            return int(entry["partition"])
    return 0


def _partition_view(
    timeline: Timeline, partition: int | None = None
) -> tuple[dict[str, Any], int | None, int]:
    """(the snapshot to draw, its partition number or None with one partition, partition count)."""
    if not several_partitions(timeline):
        return timeline.view, None, 1
    count = len(timeline.result["partitions"])
    number = min(_current_partition(timeline) if partition is None else partition, count - 1)
    views = timeline.view.get("partitions") if isinstance(timeline.view.get("partitions"), list) else None
    if views:
        return views[number], number, count
    if timeline.partitions:
        return timeline.partitions[number]["view"], number, count
    return timeline.view, 0, count


def _row_content(
    bid: int,
    b: dict[str, Any],
    *,
    replicas: list[int],
    leader: Any,
    isr: set[int],
    elr: set[int],
    leader_hw: int | None,
    leader_log: dict[int, Any],
    lost: set[str],
) -> dict[str, Any]:
    status_first, status_more, status = dg.broker_status_parts(b)
    is_leader = bid == leader
    conditions = dg.condition_badges(b, replica=bid in replicas)
    row: dict[str, Any] = {
        "id": bid,
        "label": f"B{bid}",
        "rack": f"rack {b['rack']}" if b.get("rack") else "",
        "status": status,
        "status_text": status_first,
        "status_more": status_more,
        "leader": is_leader,
        "fenced": bool(b.get("fenced")),
        "conditions": conditions,
    }
    if bid not in replicas and not b.get("log"):
        row.update(
            spare=True,
            line=" · ".join([c["text"] for c in conditions] or ["● running"])
            + " · holds no replica of this partition",
        )
        return row
    badges = []
    if is_leader:
        badges.append({"text": "♛ leader", "cls": "leader"})
    if bid in isr:
        badges.append({"text": "ISR", "cls": "isr"})
    elif bid in replicas:
        badges.append({"text": "out of ISR", "cls": "out"})
    if bid in elr:
        badges.append({"text": "ELR", "cls": "elr"})
    cells = []
    log = b.get("log", [])
    for entry in log:
        offset = int(entry["offset"])
        record = str(entry.get("record"))
        epoch = entry.get("epoch")
        committed = (
            leader_hw is not None
            and offset < leader_hw
            and (is_leader or leader_log.get(offset) == entry.get("record"))
        )
        if record in lost:
            state, glyph, what = "lost", "!", "LOST: acknowledged, but not on the leader"
        elif committed:
            state, glyph, what = "committed", "", "committed (below the leader's HW)"
        else:
            state, glyph, what = "uncommitted", "", "not committed yet"
        cells.append(
            {
                "offset": offset,
                "record": record,
                "epoch": epoch,
                "epoch_class": f"ep{(epoch or 0) % dg.EPOCH_PALETTE_SIZE}",
                "state": state,
                "glyph": glyph,
                "title": f"B{bid} offset {offset}: {record} (epoch {epoch}) — {what}",
            }
        )
    # truncated records, each under its own offset (the latest one when an offset was cut twice)
    ghosts_at: dict[int, dict[str, Any]] = {}
    titles: dict[int, list[str]] = {}
    for entry in b.get("truncated", []) or []:
        record = str(entry.get("record", "?"))
        offset = int(entry.get("offset") or 0)
        why = dg.TRUNCATE_WHY_TEXT.get(entry.get("why"), str(entry.get("why", "")))
        state = "lost" if record in lost else "truncated"
        titles.setdefault(offset, []).append(f"{record} (epoch {entry.get('epoch')}, {why})")
        ghosts_at[offset] = {
            "offset": offset,
            "record": record,
            "epoch": entry.get("epoch"),
            "state": state,
            "glyph": "!" if state == "lost" else "",
        }
    ghosts = []
    for offset in sorted(ghosts_at):
        g = ghosts_at[offset]
        g["title"] = f"B{bid} deleted at offset {offset}: " + "; ".join(titles[offset])
        ghosts.append(g)
    leo = int(b.get("leo", len(log)))
    hw = b.get("hw")
    seen = b.get("reported_leo")
    if is_leader or leader in (None, -1) or seen is None:
        seen_at, text = None, f"LEO {leo}"
    elif int(seen) < 0:
        seen_at, text = None, f"LEO {leo} · B{leader} has not heard from it yet"
    elif int(seen) == leo:
        seen_at, text = int(seen), f"LEO {leo} · B{leader} knows"
    else:
        seen_at, text = int(seen), f"LEO {leo} · B{leader} thinks {seen}"
    span = max([leo, len(log)] + [g["offset"] + 1 for g in ghosts]) + 1
    cache = b.get("epoch_cache") or []
    # the leader-epoch cache once it holds more than the first epoch: "epochs e0@0 e1@1"
    epochs = "epochs " + " ".join(f"e{e}@{o}" for e, o in cache) if len(cache) > 1 else ""
    row.update(
        epochs=epochs,
        spare=False,
        badges=badges,
        cells_model=cells,
        ghosts_model=ghosts,
        markers={"hw": hw, "leo": leo, "seen": seen_at, "text": text, "hw_label": "HW"},
        span=span,
    )
    return row


def _producer_acks(scenario: dict[str, Any]) -> str:
    """The acks the producer box names: the producer's setting, or the one every write names
    for itself (D2's hand-built acks=2 client); "per write" when the writes differ."""
    default = format_value(scenario.get("producer", {}).get("acks", "all"))
    produces = [a for a in scenario.get("actions", []) if a.get("do") == "produce"]
    used = {format_value(a["acks"]) if "acks" in a else default for a in produces} or {default}
    return used.pop() if len(used) == 1 else "per write"


def diagram(
    timeline: Timeline,
    scenario: dict[str, Any],
    *,
    id_prefix: str = "dg",
    defs: bool = True,
    partition: int | None = None,
    box: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The cluster at the timeline's step, laid out for a wide screen (the top-level keys) and for
    a phone (`narrow`). `id_prefix` keeps element ids unique when a page shows two diagrams; only
    the first one (`defs`) defines the shared patterns. With several partitions it draws
    `partition`, by default the one the current step is about. A scene with consumers draws every
    partition's log and its readers instead (app/logdiagram.py).

    `box` (app.frames.timeline_path) is the height of each geometry at the timeline's tallest
    stop: a shorter drawing is padded to it at the bottom, so the drawing, and the Step bar under
    it, keep their place from step to step."""
    drawn = _diagram(timeline, scenario, id_prefix=id_prefix, defs=defs, partition=partition)
    for geometry, layout in (("wide", drawn), ("narrow", drawn["narrow"])):
        if box and box.get(geometry, 0) > layout["height"]:
            layout["height"] = box[geometry]
    return drawn


def _diagram(
    timeline: Timeline, scenario: dict[str, Any], *, id_prefix: str, defs: bool, partition: int | None
) -> dict[str, Any]:
    if groupview.group_mode(scenario):  # a group of several members (scene 07)
        return groupview.diagram(timeline, scenario, id_prefix=id_prefix, defs=defs)
    if logdiagram.log_mode(scenario):
        return logdiagram.diagram(timeline, scenario, id_prefix=id_prefix, defs=defs)
    view, number, count = _partition_view(timeline, partition)
    partition = view.get("partition", {})
    brokers_state = view.get("brokers", {})
    leader = partition.get("leader", -1)
    leader_hw = partition.get("hw")
    if leader_hw is None and leader not in (None, -1):
        leader_hw = brokers_state.get(str(leader), {}).get("hw")
    if leader_hw is None:  # offline: what was committed is what some replica knew was committed
        leader_hw = max((b.get("hw") or 0 for b in brokers_state.values()), default=0)
    isr, elr = set(_ids(partition.get("isr"))), set(_ids(partition.get("elr")))
    replicas = _ids(partition.get("replicas")) or [b["id"] for b in scenario.get("brokers", [])]
    lost = lost_in_snapshot(view)
    leader_log = {e["offset"]: e.get("record") for e in brokers_state.get(str(leader), {}).get("log", [])}

    broker_ids = sorted(int(b) for b in brokers_state)
    # the assigned replicas first, in preferred-leader order, then any other broker
    order = [b for b in replicas if b in broker_ids] + [b for b in broker_ids if b not in replicas]

    producer = view.get("producer", {}) or {}
    in_flight = producer.get("in_flight", []) or []
    acks = _producer_acks(scenario)
    producer_lines = []
    for req in in_flight[:TOP_MAX_INFLIGHT_LINES]:
        records = dg.short(" ".join(str(r) for r in req.get("records", [])), 8)
        target = req.get("target")
        where = f"→ B{target}" if target not in (None, -1) else "→ ?"
        state = dg.INFLIGHT_STATE_SHORT.get(req.get("state"), str(req.get("state", "")))
        own = "" if format_value(req.get("acks")) == acks else f" acks={format_value(req.get('acks'))}"
        producer_lines.append(f"#{req.get('index', 0) + 1} [{records}]{own} {where} {state}")
    if len(in_flight) > TOP_MAX_INFLIGHT_LINES:
        producer_lines.append(f"… and {len(in_flight) - TOP_MAX_INFLIGHT_LINES} more in flight")
    if not in_flight:
        producer_lines.append("no request in flight")

    kraft = (view.get("controller") or {}).get("kraft", True)
    controller_lines = [
        f"leader: {'B' + str(leader) if leader not in (None, -1) else 'none (offline)'}"
        f" · epoch {partition.get('leader_epoch', 0)}",
        # the ELR exists only with KRaft (KIP-966); a ZooKeeper-era controller has none to show
        f"ISR {{{_join(sorted(isr), '')}}}" + (f" · ELR {{{_join(sorted(elr), '')}}}" if kraft else ""),
        f"min ISR {partition.get('min_insync_replicas', '?')}, effective "
        f"{partition.get('effective_min_isr', '?')}"
        + (" · below min" if partition.get("under_min_isr") else ""),
    ]
    if partition.get("recovery_state") not in (None, "RECOVERED"):
        controller_lines.append(f"recovery: {partition.get('recovery_state')}")

    pills, waits = dg.messages_content(view)
    timers, timer_clock = dg.timers_content(view, leader, isr)
    model = {
        "producer": {
            "title": "Producer · acks set per write" if acks == "per write" else f"Producer · acks={acks}",
            "lines": producer_lines,
        },
        "controller": {
            "title": "Controller (KRaft)" if kraft else "Controller (ZooKeeper era)",
            "lines": controller_lines,
        },
        "rows": [
            _row_content(
                bid,
                brokers_state[str(bid)],
                replicas=replicas,
                leader=leader,
                isr=isr,
                elr=elr,
                leader_hw=leader_hw,
                leader_log=leader_log,
                lost=lost,
            )
            for bid in order
        ],
        "pills": pills,
        "timers": timers,
    }
    wide = dg.layout(model, dg.WIDE)
    narrow = dg.layout(model, dg.NARROW)
    t_ms = int(view.get("t_ms", 0))
    out = {
        **wide,
        "narrow": narrow,
        "id_prefix": id_prefix,
        "defs": defs,
        "partition": number,
        "partition_label": f"partition {number} (of {count})" if number is not None else "",
        "svg_title": "Cluster diagram" if defs else "Comparison run: cluster diagram",
        "region_label": "Cluster diagram" if defs else "Comparison run's diagram",
        "pills": pills,
        "timers": timers,
        "clock": {
            "t_ms": t_ms,
            "text": formats.clock(t_ms),
            "timers": timer_clock,
            "waits": waits,
        },
    }
    out["description"] = describe(timeline, scenario, lost, diagram_dict=out, view=view)
    out["summary"] = summary_sentence(timeline, lost, view=view, partition_label=out["partition_label"])
    return out


NODE_WORDS = {"producer": "the producer", "controller": "the controller"}
SIGNATURE_SKIP = ("clock", "description", "summary", "id_prefix", "defs")


def visible_signature(diagram_dict: dict[str, Any]) -> str:
    """A hash of everything a learner sees in a diagram, leaving out what merely ticks with the
    clock (`clock`), the text alternative and the ids: two steps with the same signature draw
    the same picture (apart from the clock and timer values)."""
    visible = {k: v for k, v in diagram_dict.items() if k not in SIGNATURE_SKIP}
    text = json.dumps(visible, sort_keys=True, default=_plain, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def summary_sentence(
    timeline: Timeline, lost: set[str], *, view: dict[str, Any] | None = None, partition_label: str = ""
) -> str:
    view = view if view is not None else timeline.view
    partition = view.get("partition", {})
    leader = partition.get("leader", -1)
    lead = (
        f"B{leader} leads (epoch {partition.get('leader_epoch', 0)})"
        if leader not in (None, -1)
        else "no broker leads: the partition is offline"
    )
    where = f" in {partition_label}" if partition_label else ""
    text = (
        f"At {formats.clock(view.get('t_ms', 0))}{where}: "
        f"{lead}; ISR {{{_join(_ids(partition.get('isr')), '')}}}"
        + (f"; leader HW {partition['hw']}." if partition.get("hw") is not None else ".")
    )
    if lost:
        text += f" Acknowledged but lost: {', '.join(sorted(lost))}."
    return text


def describe(
    timeline: Timeline,
    scenario: dict[str, Any],
    lost: set[str],
    *,
    diagram_dict: dict[str, Any] | None = None,
    view: dict[str, Any] | None = None,
) -> list[str]:
    """The text alternative: the same facts as the SVG, one sentence per thing drawn."""
    view = view if view is not None else timeline.view
    partition = view.get("partition", {})
    label = (diagram_dict or {}).get("partition_label", "")
    lines = [summary_sentence(timeline, lost, view=view, partition_label=label)]
    lines.append(
        f"Controller: leader epoch {partition.get('leader_epoch', 0)}, ISR "
        f"{{{_join(_ids(partition.get('isr')), '')}}}, ELR {{{_join(_ids(partition.get('elr')), '')}}}, "
        f"min.insync.replicas {partition.get('min_insync_replicas', '?')} (effective "
        f"{partition.get('effective_min_isr', '?')})"
        + (
            "; the ISR is below the minimum, so acks=all writes are refused."
            if partition.get("under_min_isr")
            else "."
        )
    )
    in_flight = (view.get("producer", {}) or {}).get("in_flight", []) or []
    if in_flight:
        parts = []
        for req in in_flight:
            state = dg.INFLIGHT_STATE_TEXT.get(req.get("state"), str(req.get("state", "")))
            parts.append(
                f"batch {req.get('index', 0) + 1} ({', '.join(map(str, req.get('records', [])))}) "
                f"to B{req.get('target')}, attempt {req.get('attempt', 1)}, {state}"
            )
        lines.append("Producer in flight: " + "; ".join(parts) + ".")
    else:
        lines.append("Producer: nothing in flight.")
    if diagram_dict is not None:
        clock = diagram_dict.get("clock", {})
        pills = diagram_dict.get("pills", [])
        if pills:
            said = []
            for p in pills:
                frm = NODE_WORDS.get(p["at"], f"B{p['at'][1:]}")
                if p["held"]:
                    wait = clock.get("waits", {}).get(p["key"])
                    said.append(f"{frm} {p['text']} (long poll{', ' + wait if wait else ''})")
                else:
                    said.append(f"{frm} sends {p['full']}")
            lines.append("On the network: " + "; ".join(said) + ".")
        else:
            lines.append("On the network: no request or response in flight.")
        for t in diagram_dict.get("timers", []):
            c = clock.get("timers", {}).get(t["key"])
            if c:
                lines.append("Timer: " + c["sentence"][0].upper() + c["sentence"][1:] + ".")
    leader = partition.get("leader", -1)
    isr, elr = set(_ids(partition.get("isr"))), set(_ids(partition.get("elr")))
    for key in sorted(view.get("brokers", {}), key=int):
        b = view["brokers"][key]
        bid = int(key)
        status_text, _ = dg.broker_status(b)
        roles = []
        if bid == leader:
            roles.append("leader")
        roles.append("in the ISR" if bid in isr else "not in the ISR")
        if bid in elr:
            roles.append("in the ELR")
        delay = int(b.get("fetch_delay_ms") or 0)
        if delay:
            roles.append(f"slow (fetches take {formats.sim_time(delay)} longer)")
        log = b.get("log", [])
        records = (
            ", ".join(f"{e.get('record')}@{e['offset']} (epoch {e.get('epoch')})" for e in log) or "empty"
        )
        sentence = (
            f"Broker {bid}{' (rack ' + str(b['rack']) + ')' if b.get('rack') else ''}: "
            f"{status_text[2:]}, {', '.join(roles)}. Log: {records}. "
            f"LEO {b.get('leo')}, HW {b.get('hw')}."
        )
        seen = b.get("reported_leo")
        if bid != leader and leader not in (None, -1) and seen is not None and int(seen) >= 0:
            sentence += f" Leader B{leader} thinks its LEO is {seen}."
        lost_here = [str(e.get("record")) for e in log if str(e.get("record")) in lost]
        if lost_here:
            sentence += f" Holds lost acknowledged records {', '.join(lost_here)}."
        truncated = b.get("truncated", []) or []
        if truncated:
            sentence += (
                " Deleted: "
                + ", ".join(
                    f"{t.get('record')} at offset {t.get('offset')} "
                    f"({dg.TRUNCATE_WHY_TEXT.get(t.get('why'), t.get('why'))})"
                    for t in truncated
                )
                + "."
            )
        lines.append(sentence)
    return lines


# ----------------------------------------------------------------------------------------------
# timeline, faults, event log, pseudocode


CAPTION_LOG_LINES = 3


def _path(timeline: Timeline, all_stops: list[frames.Stop] | None) -> list[frames.Stop] | None:
    """The stops inside the timeline's window (an embed may keep it inside [from, to])."""
    if not all_stops:
        return None
    return frames.within(all_stops, timeline.first_step, timeline.last_step)


def _stop_steps(path: list[frames.Stop] | None) -> list[int] | None:
    """The engine steps of a path's stops, which app/formats.py counts positions by."""
    return [s.step for s in path] if path else None


def _quiet_url(timeline: Timeline, state: SceneState, *, embed: bool) -> str | None:
    """ "Run until quiet", offered at the end of the timeline and once a fault was injected, unless
    the run is already told to go quiet at this step."""
    step = timeline.step
    faulted = any(a.verb != QUIET and landed <= step
                  for a, landed in zip(state.actions, timeline.injected_steps, strict=False))
    if not (step >= timeline.last_step or faulted):
        return None
    if any(a.verb == QUIET and landed == step
           for a, landed in zip(state.actions, timeline.injected_steps, strict=False)):
        return None
    quiet = InjectedAction(QUIET, None, step)
    return urls.page_url(state, embed=embed, actions=state.actions + (quiet,), step=step)


def timeline_panel(
    timeline: Timeline, state: SceneState, *, embed: bool, stops: list[frames.Stop] | None = None
) -> dict[str, Any]:
    """The timeline bar. Step and Back go to the next and previous stop (one engine step each
    with fine=1); the scrubber still reaches every engine step."""
    step, first, last = timeline.step, timeline.first_step, timeline.last_step
    current = timeline.current
    path = _path(timeline, stops)
    if state.fine or path is None:
        forward = min(last, step + 1) if step < last else None
        back = max(first, step - 1) if step > first else None
    else:
        after, before = frames.next_stop(path, step), frames.previous_stop(path, step)
        forward = after.step if after is not None and step < last else None
        back = before.step if before is not None and step > first else None
    position = None
    stop_steps = _stop_steps(path)
    if path:
        k = frames.stop_index(path, step)
        # counted in presses of Step from the start (app/formats.py): the start is step 0
        position = {"n": k, "count": len(path) - 1, "at_stop": path[k].step == step}
    t_ms = timeline.view.get("t_ms", 0)
    return {
        "step": step,
        "first": first,
        "last": last,
        "count": timeline.step_count,
        "t_ms": t_ms,
        "stop": position,
        "position": formats.step_counter(stop_steps, step, timeline.step_count),
        "clock": formats.clock(t_ms),
        "fine": state.fine,
        "fine_url": urls.page_url(state, embed=embed, fine=True) if not state.fine and path else None,
        "fold_url": urls.page_url(state, embed=embed, fine=False) if state.fine else None,
        "quiet_url": _quiet_url(timeline, state, embed=embed),
        "restart_url": urls.page_url(state, embed=embed, step=first),
        "back_url": urls.page_url(state, embed=embed, step=back) if back is not None else None,
        "forward_url": urls.page_url(state, embed=embed, step=forward) if forward is not None else None,
        "end_url": urls.page_url(state, embed=embed, step=last) if step < last else None,
        "at_end": step >= last,
        "current_text": current["text"] if current else "Before the first step: press Step to begin.",
        "injected": [
            {"code": a.encode(), "landed": s, "quiet": a.verb == QUIET, "at": formats.step_ref(stop_steps, s)}
            for a, s in zip(state.actions, timeline.injected_steps, strict=False)
        ],
        "speeds": [
            {"value": "1600", "label": "0.5×"},
            {"value": "800", "label": "1×", "selected": True},
            {"value": "400", "label": "2×"},
            {"value": "200", "label": "4×"},
        ],
    }


def caption_panel(
    timeline: Timeline,
    state: SceneState,
    *,
    embed: bool,
    stops: list[frames.Stop] | None = None,
    sandbox: bool = False,
) -> dict[str, Any]:
    """What the learner reads under the diagram: what just happened (the current stop's steps),
    how much simulated time passed since the previous stop, and the newest event-log lines.

    `sandbox` (the learner changed the beat's knobs or injected a fault): a key moment's title is
    written for the beat's own run ("bob's hash lands in partition 0"), so it is not shown; the
    caption, computed from this run, says what happened (the learner check saw a key moment
    contradict the caption under it after a knob change)."""
    step = timeline.step
    steps = timeline.steps
    path = _path(timeline, stops)
    stop = None
    if path:
        k = frames.stop_index(path, step)
        stop = path[k] if path[k].step == step and step > timeline.first_step else None
    if step == 0 or (stop is None and timeline.current is None):
        title = "Before the first step: press Step to begin."
        jump = None
    elif stop is not None and not state.fine:
        title, jump = stop.title, stop.time_jump
    else:
        title = str(timeline.current.get("text", "")) if timeline.current else ""
        jump = _gap_jump(steps, step)
    expand_url = None
    if stop is not None and stop.repeat and not state.fine:
        start = (stop.repeat_first_step or stop.first_step) - 1
        expand_url = urls.page_url(state, embed=embed, step=max(timeline.first_step, start), fine=True)
    lines = [
        {"i": s.get("i"), "t_ms": s.get("t_ms"), "text": s.get("text", ""), "kind": s.get("kind", "")}
        for s in steps[max(0, step - CAPTION_LOG_LINES) : step]
    ]
    return {
        "room": caption_room(timeline, state, path, sandbox=sandbox),
        "title": title,
        "jump": jump,
        "key_moment": stop.key_moment if stop is not None and not sandbox else None,
        "repeat": bool(stop is not None and stop.repeat),
        "folded": stop.folded_count if stop is not None else 1,
        "expand_url": expand_url,
        "fold_url": urls.page_url(state, embed=embed, fine=False) if state.fine else None,
        "log": lines,
        "t_ms": timeline.view.get("t_ms", 0),
    }


# The caption reserves room for the beat's longest caption, so its height does not change from
# step to step: hidden copies of the captions likely to be the tallest sit in the same grid cell as
# the current one (templates/_caption.html), and the cell is as tall as the tallest of them, at
# whatever width the page has. Which ones: the longest by estimated lines at a phone's and at a
# desktop's measure.
ROOM_LINE_CHARS = (38, 90)
ROOM_PER_MEASURE = 2


def _gap_jump(steps: list[dict[str, Any]], k: int) -> str | None:
    """ "9 s later" when more than a second of simulated time passed before step k (1-based)."""
    gap = int(steps[k - 1].get("t_ms", 0)) - (int(steps[k - 2].get("t_ms", 0)) if k > 1 else 0)
    return f"{formats.sim_time(gap)} later" if gap > frames.TIME_JUMP_MS else None


def caption_room(
    timeline: Timeline, state: SceneState, path: list[frames.Stop] | None, *, sandbox: bool = False
) -> list[dict[str, Any]]:
    """The captions of this timeline that the caption box keeps room for: each a dict of the parts
    that stack in it (key moment, jump, title, whether it has the expand link, and whether it is
    the last stop, which offers the next beat)."""
    steps = timeline.steps
    candidates: list[dict[str, Any]] = []
    if path and not state.fine:
        for stop in path:
            if stop.step <= timeline.first_step:
                continue
            candidates.append({
                "key_moment": None if sandbox else stop.key_moment,
                "jump": stop.time_jump,
                "title": stop.title,
                "expand": stop.repeat,
                "last": stop.step >= timeline.last_step,
            })
    else:  # one engine step at a time: each step's own text, under its stop's key moment if any
        moments = {stop.step: stop.key_moment for stop in path or [] if stop.key_moment and not sandbox}
        for k in range(max(1, timeline.first_step + 1), timeline.last_step + 1):
            candidates.append({
                "key_moment": moments.get(k),
                "jump": _gap_jump(steps, k),
                "title": str(steps[k - 1].get("text", "")),
                "expand": False,
                "last": k >= timeline.last_step,
            })

    def lines(c: dict[str, Any], chars: int) -> int:
        parts = [c["key_moment"] and "Key moment: " + c["key_moment"], (c["jump"] or "") + " " + c["title"],
                 c["expand"] and "Show these steps one by one", c["last"] and "Next beat: " + "x" * 40]
        return sum(-(-len(p) // chars) for p in parts if p)

    chosen: list[dict[str, Any]] = []
    for chars in ROOM_LINE_CHARS:
        ranked = sorted(candidates, key=lambda c: lines(c, chars), reverse=True)
        chosen += [c for c in ranked[:ROOM_PER_MEASURE] if c not in chosen]
    return chosen


def key_moments_panel(
    beat: Any, state: SceneState, timeline: Timeline, stops: list[frames.Stop] | None, *, embed: bool
) -> list[dict[str, Any]]:
    """The beat's key moments, one link per stop they land on (moments that share a stop share its
    link), or a note that these knobs and faults make a moment not happen."""
    out: list[dict[str, Any]] = []
    by_step: dict[int, dict[str, Any]] = {}
    for moment in frames.beat_key_moments(beat):
        step = frames.find_key_moment(timeline.steps, moment)
        if step is None:
            out.append({"title": moment.title, "url": None, "step": None,
                        "note": "does not happen with these knobs"})
            continue
        landing = stops[frames.stop_index(stops, step)].step if stops else step
        if landing in by_step:
            by_step[landing]["title"] += " · " + moment.title
            continue
        by_step[landing] = {"title": moment.title, "step": landing, "note": None,
                            "ref": formats.step_ref(_stop_steps(_path(timeline, stops)), landing),
                            "url": urls.page_url(state, embed=embed, step=landing)}
        out.append(by_step[landing])
    return out


def _brokers_with_replicas(timeline: Timeline) -> set[int]:
    """Brokers that hold a replica of any partition of the topic."""
    partitions = timeline.result.get("partitions")
    if partitions and all("replicas" in p for p in partitions):
        return {b for p in partitions for b in p.get("replicas", [])}
    return set(timeline.view.get("partition", {}).get("replicas", []))


def fault_buttons(timeline: Timeline, state: SceneState, *, embed: bool) -> list[dict[str, Any]]:
    """Per broker, only the faults that make sense in its current state. Brokers that hold no
    replica of the topic get no buttons (a fault there changes nothing the learner can see);
    `idle_brokers_note` names them once instead."""
    rows = []
    idle = _idle_brokers(timeline)
    # at the end of the timeline a fault comes with "run until quiet" (see build_timeline)
    then = ", then run until quiet" if timeline.step >= timeline.step_count else ""
    for key in sorted(timeline.view.get("brokers", {}), key=int):
        b = timeline.view["brokers"][key]
        bid = int(key)
        if bid in idle:
            continue
        status = b.get("status", "running" if b.get("alive", True) else "crashed")
        network = "heal" if dg.is_isolated(b) else "isolate"
        if status == "running":
            verbs = [
                "crash",
                "power",
                "resume" if not b.get("fetching", True) else "stop",
                "shutdown",
                network,
            ]
        else:
            verbs = ["restart"] + (["heal"] if network == "heal" else [])
        rows.append(
            {
                "broker": bid,
                "label": f"B{bid}",
                "buttons": [
                    {
                        "verb": v,
                        "label": INJECT_VERBS[v],
                        "value": f"{v}:{bid}",
                        "aria": f"{INJECT_VERBS[v]} broker {bid} now{then}",
                    }
                    for v in verbs
                ],
            }
        )
    return rows


def _idle_brokers(timeline: Timeline) -> list[int]:
    """Running brokers that hold no replica of the topic (a fault there changes nothing here)."""
    holders = _brokers_with_replicas(timeline)
    if not holders:
        return []
    # a consumer group's coordinator matters too, replica or not (scenes with consumers), also
    # before the group's first member has joined it
    brokers = timeline.view.get("brokers", {})
    holders |= {int(g["coordinator"]) for g in (timeline.view.get("groups") or {}).values()
                if g.get("coordinator") is not None}
    scenario = timeline.scenario or {}
    partitions = (scenario.get("timing") or {}).get("offsets.topic.num.partitions", OFFSETS_TOPIC_PARTITIONS)
    ids = sorted(int(k) for k in brokers)

    def running(b: int) -> bool:
        return brokers[str(b)].get("status", "running") == "running"

    for c in scenario.get("consumers") or []:
        if c.get("group.id"):
            coordinator = coordinator_of(str(c["group.id"]), ids, running, int(partitions))
            if coordinator is not None:
                holders.add(coordinator)
    return [int(k) for k in sorted(brokers, key=int)
            if int(k) not in holders and brokers[k].get("status", "running") == "running"]


def idle_brokers_note(timeline: Timeline) -> str:
    """Which brokers a fault changes nothing at, which ones only coordinate a group, and, with one
    replica per partition, what a crash of that replica means (no other broker can take over)."""
    idle_ids = _idle_brokers(timeline)
    idle = [f"B{b}" for b in idle_ids]
    holders = _brokers_with_replicas(timeline)
    running = [int(k) for k, b in (timeline.view.get("brokers") or {}).items()
               if b.get("status", "running") == "running"]
    coordinators = sorted(b for b in running if b not in holders and b not in idle_ids)
    out = []
    if idle:
        out.append(f"{', '.join(idle)} hold{'s' if len(idle) == 1 else ''} no replica of this topic and "
                   "coordinate{} no group, so a fault there changes nothing here.".format(
                       "s" if len(idle) == 1 else ""))
    if coordinators and holders:
        names = ", ".join(f"B{b}" for b in coordinators)
        out.append(f"{names} hold{'s' if len(coordinators) == 1 else ''} no replica either, but "
                   f"coordinate{'s' if len(coordinators) == 1 else ''} a consumer group: a fault there "
                   "holds up its commits and joins while it is down.")
    single = [p for p in (timeline.result.get("partitions") or []) if len(p.get("replicas") or []) == 1]
    if not single and len(timeline.view.get("partition", {}).get("replicas") or []) == 1:
        single = [{"partition": 0, "replicas": timeline.view["partition"]["replicas"]}]
    if single:
        where = ", ".join(f"P{p.get('partition', i)} on B{p['replicas'][0]}" for i, p in enumerate(single))
        out.append(f"One replica per partition here ({where}): crashing it leaves the partition with no "
                   "leader and nothing to read or write until that broker restarts, since no other broker "
                   "has its data to take over.")
    return " ".join(out)


def event_log(timeline: Timeline, max_lines: int) -> dict[str, Any]:
    shown = timeline.steps[max(0, timeline.step - max_lines) : timeline.step]
    lines = [
        {
            "i": s.get("i"),
            "t_ms": s.get("t_ms"),
            "actor": s.get("actor", ""),
            "text": s.get("text", ""),
            "kind": s.get("kind", ""),
            "current": s.get("i") == timeline.step,
        }
        for s in shown
    ]
    return {
        "lines": lines,
        "hidden": max(0, timeline.step - max_lines),
        "newest": lines[-1]["text"] if lines else "No step has run yet.",
        "newest_i": timeline.step,
    }


def code_panel(scene: Any, timeline: Timeline) -> dict[str, Any]:
    current = timeline.current
    kind = current.get("kind") if current else None
    # a ZooKeeper-era run names and links the steps as that era's code did (engine.steps)
    kraft = (timeline.view.get("controller") or {}).get("kraft", True)
    step_kind = engine_step_kind(kind, kraft) if kind in STEP_KINDS else None
    blocks = []
    for block in scene.pseudocode:
        lines = []
        for number, line in enumerate(block.lines, start=1):
            source = None
            if line.source:
                source = urls.kafka_source_url(line.source)
            elif line.kinds and line.kinds[0] in STEP_KINDS:
                source = STEP_KINDS[line.kinds[0]].url
            lines.append(
                {
                    "n": number,
                    "text": line.text,
                    "active": bool(kind and kind in line.kinds),
                    "source": source,
                }
            )
        blocks.append(
            {
                "id": block.id,
                "title": block.title,
                "lines": lines,
                "active": any(line["active"] for line in lines),
            }
        )
    any_active = any(b["active"] for b in blocks)
    for index, block in enumerate(blocks):
        block["open"] = block["active"] or (not any_active and index == 0)
    return {
        "kind": kind,
        "blocks": blocks,
        "code": step_kind.code if step_kind else None,
        "summary": step_kind.summary if step_kind else None,
        "url": step_kind.url if step_kind else None,
        "matched": any(b["active"] for b in blocks),
        # element ids of the lit lines and the open blocks (templates/_code.html), which a step
        # update sends alone so the page moves the highlight without the whole panel
        "active_ids": [f"cl-{b['id']}-{line['n']}" for b in blocks for line in b["lines"] if line["active"]],
        "open_ids": [f"cb-{b['id']}" for b in blocks if b["open"]],
    }


# ----------------------------------------------------------------------------------------------
# knobs, headroom, beats, check yourself


def _ms_words(key: str, value: str) -> str | None:
    """A duration knob's value in words ("1 day"; "" under a second, where the number says it);
    None for a knob that is not a duration."""
    if not key.endswith(".ms"):
        return None
    ms = _int(value, 0)
    return formats.sim_time(ms) if ms >= 1000 else ""


def knobs_panel(scene: Any, state: SceneState) -> list[dict[str, Any]]:
    values = dict(state.knobs)
    out = []
    for knob in scene.knobs:
        choices = knob_choices(knob)
        slug = knob.key.replace(".", "-").replace("_", "-")
        item = {
            "key": knob.key,
            "label": knob.label,
            "help": knob.help,
            "id": f"knob-{slug}",
            "help_id": f"knob-{slug}-help",
            "value": values[knob.key],
            # when the label is the key itself ("acks"), show it once, as code; a label that starts
            # with the key ("segment.bytes (scaled down)") shows the key once, then the rest
            "key_is_label": knob.label == knob.key or knob.label.startswith(knob.key + " "),
            "label_rest": knob.label[len(knob.key):].strip() if knob.label.startswith(knob.key + " ") else "",
            # a duration in ms is also said in words beside the number ("86400000 = 1 day")
            "human": _ms_words(knob.key, values[knob.key]),
        }
        if choices is not None:
            item["widget"] = "select"
            item["options"] = [
                {
                    "value": format_value(c),
                    "label": format_value(c),
                    "selected": format_value(c) == values[knob.key],
                }
                for c in choices
            ]
        else:
            item["widget"] = "range"
            item["min"], item["max"] = knob.min, knob.max
            item["step"] = getattr(knob, "step", None) or 1
        out.append(item)
    return out


def _int(value: str, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


HEADROOM_ACKS = (
    "0",
    "1",
    "all",
)  # other values (acks=2, KIP-926's acks=min.insync.replicas) are not modelled here


def headroom(state: SceneState) -> dict[str, Any] | None:
    """The durability headroom table for the knobs, from engine.headroom (the engine's profile
    rules decide the effective minimum; nothing is re-derived here).

    None for a scene without a min.insync.replicas knob, or with an acks value the table does
    not model (acks=2 of old Kafka, the KIP-926 proposal), rather than a table that misleads.
    """
    knobs = dict(state.knobs)
    if "min.insync.replicas" not in knobs or knobs.get("acks", "all") not in HEADROOM_ACKS:
        return None
    rf = max(_int(knobs.get("replication.factor", "3"), 3), 1)
    m = _int(knobs.get("min.insync.replicas", "1"), 1)
    acks = knobs.get("acks", "all")
    topic: dict[str, Any] = {"replicas": list(range(1, rf + 1)), "min.insync.replicas": m}
    if "unclean.leader.election.enable" in knobs:
        topic["unclean.leader.election.enable"] = knobs["unclean.leader.election.enable"] == "true"
    scenario: dict[str, Any] = {
        "kafka_version": knobs.get("kafka_version", "4.1"),
        "brokers": [{"id": b} for b in range(1, max(rf, 3) + 1)],
        "topic": topic,
        "producer": {"acks": acks if acks == "all" else int(acks)},
        "actions": [],
    }
    if "eligible.leader.replicas.version" in knobs:
        scenario["controller"] = {
            "eligible.leader.replicas.version": _int(knobs["eligible.leader.replicas.version"], 0)
        }
    try:
        return engine.headroom(scenario)
    except engine.ScenarioError:
        # the scene applies its ELR knob only where the version has ELR; the engine says which
        scenario.pop("controller", None)
        try:
            return engine.headroom(scenario)
        except engine.ScenarioError:
            return None


def beats_panel(
    scene: Any, state: SceneState, timeline: Timeline, *, embed: bool, stops: list[frames.Stop] | None = None
) -> dict[str, Any]:
    beats = list(scene.beats)
    index = next(i for i, b in enumerate(beats) if str(b.id) == state.beat)
    beat = beats[index]
    presets = {k: format_value(v) for k, v in (beat.knobs or {}).items()}
    defaults = {k.key: format_value(k.default) for k in scene.knobs}
    expected = {key: presets.get(key, defaults[key]) for key, _ in state.knobs}
    sandbox = dict(state.knobs) != expected or bool(state.actions)
    moments = key_moments_panel(beat, state, timeline, stops, embed=embed)
    reachable = [m for m in moments if m["url"]]
    focus = (
        {"i": reachable[0]["step"], "ref": reachable[0]["ref"], "text": reachable[0]["title"],
         "url": reachable[0]["url"]}
        if reachable
        else None
    )
    values = dict(state.knobs)
    paragraphs = [fill_knobs(p, values) for p in (getattr(beat, "paragraphs", None) or [beat.narration])]
    source = paragraphs[-1] if paragraphs and paragraphs[-1].startswith("Source") else None
    body = paragraphs[:-1] if source else paragraphs
    terms_seen: set[str] = set()
    predict = beat.predict
    return {
        "items": [
            {
                "id": str(b.id),
                "n": i + 1,
                "title": b.title,
                "current": i == index,
                "url": urls.beat_url(state.scene_id, str(b.id), embed=embed),
            }
            for i, b in enumerate(beats)
        ],
        "n": index + 1,
        "count": len(beats),
        "title": beat.title,
        # glossary terms are marked at their first mention in the beat (app/glossary.py)
        "lead": [link_segments(inline(p), terms_seen, "beat") for p in body[:1]],
        "more": [link_segments(inline(p), terms_seen, "beat") for p in body[1:]],
        "source": link_citations(source) if source else None,
        "prev_url": urls.beat_url(state.scene_id, str(beats[index - 1].id), embed=embed)
        if index > 0
        else None,
        "next_url": (
            urls.beat_url(state.scene_id, str(beats[index + 1].id), embed=embed)
            if index + 1 < len(beats)
            else None
        ),
        "next_scene": course_links(state.scene_id, embed=embed)["next"]
        if index + 1 == len(beats) and not embed
        else None,
        # the last beat of a scene whose next one is not built yet: a summary and the way back
        "scene_end": {"summary": getattr(scene, "ending", None), "url": urls.home_url()}
        if index + 1 == len(beats) and not embed and course_links(state.scene_id)["next"] is None
        else None,
        "sandbox": sandbox,
        "knob_note": knob_note(scene, beat, values),
        "focus": focus,
        "key_moments": moments,
        "reset_url": urls.beat_url(state.scene_id, state.beat, embed=embed),
        "predict": predict_panel(beat, state, embed=embed) if predict else None,
    }


def predict_panel(beat: Any, state: SceneState, *, embed: bool) -> dict[str, Any]:
    """The beat's question with one link per option (`guess=<letter>`), and, once the URL holds a
    guess, the verdict: which option was chosen, right or wrong, why that option is wrong, and the
    explanation. Choosing keeps the step and every other part of the state."""
    predict = beat.predict
    right = chr(ord("A") + predict.answer)
    why_not = list(getattr(predict, "why_not", None) or [])
    options = []
    for i, text in enumerate(predict.options):
        letter = chr(ord("A") + i)
        options.append(
            {
                "n": letter,
                "text": inline(text),
                "answer": i == predict.answer,
                "chosen": letter == state.guess,
                "why_not": inline(why_not[i]) if i < len(why_not) and why_not[i] else None,
            }
        )
    chosen = next((o for o in options if o["chosen"]), None)
    return {
        "question": inline(predict.question),
        "options": options,
        "right": right,
        "answer": inline(f"{right}. {predict.options[predict.answer]}"),
        "explanation": inline(predict.explanation),
        "guess": state.guess if chosen else None,
        "correct": chosen is not None and chosen["answer"],
        "chosen": chosen,
    }


def first_loss(views: Any, upto: int) -> tuple[int, list[str]] | None:
    """(step, records) of the first step at or before `upto` whose ledger lists an acknowledged
    record as lost, from the run's per-step states (`views[k]` after k steps); None if none."""
    for k in range(min(upto, len(views) - 1) + 1):
        lost = ledger.union(ledger.snapshots(views[k]))["lost"]
        if lost:
            return k, lost
    return None


def _named(records: list[str]) -> str:
    return ("record " if len(records) == 1 else "records ") + ", ".join(records)


def challenge_panel(
    scene: Any, timeline: Timeline, *, sandbox: bool = True, views: Any = None
) -> dict[str, Any] | None:
    """The challenge's verdict at the timeline's step, from the engine's ledger as of that step:
    "not yet" until a step where an acknowledged record is lost, then which record and when.

    `views`: the run's state after every step (`views[k]` after k steps), to name the step where the
    first loss happened; without it a loss is placed at this step. `sandbox` is False while
    the beat runs as written: a loss the beat itself stages is then the course's demonstration,
    not the reader's solution, and says so."""
    challenge = getattr(scene, "challenge", None)
    if challenge is None:
        return None
    if challenge.goal != "lose_acked_write":
        return _reader_challenge(challenge, timeline, sandbox=sandbox)
    step = timeline.step
    now = ledger_at(timeline)
    lost, acked = now["lost"], now["acked"]
    first = first_loss(views, step) if views is not None else ((step, lost) if lost else None)
    if first is not None:
        at, records = first
        # when, by the simulated clock (the step counter counts the Step button's stops)
        at_t = int(timeline.steps[at - 1].get("t_ms", 0)) if 0 < at <= len(timeline.steps) else 0
        when = f"at {formats.clock(at_t)}" if at != step else "at this step"
        if not sandbox:
            verdict = (
                f"This beat, as written, lost acknowledged {_named(records)} {when}: that is the course's "
                f"demonstration. Your turn: change a knob or inject a fault and lose one yourself, or find "
                f"the knob that makes this beat's faults harmless."
            )
        else:
            was = "was" if len(records) == 1 else "were"
            verdict = f"Done: acknowledged {_named(records)} {was} lost {when} (the engine's loss ledger)."
        if at != step and set(lost) != set(records):
            verdict += (
                f" At this step the ledger lists {_named(lost)} as lost." if lost
                else " At this step the ledger lists none as lost."
            )
    elif acked:
        verdict = (
            f"Not yet: {len(acked)} acknowledged record(s) so far, none of them lost. "
            f"Try the knobs and the fault buttons."
        )
    else:
        verdict = "Not yet: nothing has been acknowledged so far."
    return {
        "title": challenge.title,
        "text": inline(challenge.text),
        "solved": first is not None and sandbox,
        "verdict": verdict,
        "lost": lost,
        "lost_step": first[0] if first is not None else None,
    }


def _reader_challenge(challenge: Any, timeline: Timeline, *, sandbox: bool) -> dict[str, Any]:
    """A challenge about logs and their readers (app/challenges.py), judged at this step."""
    met, said = challenges.judge(challenge.goal, timeline)
    if met and sandbox:
        verdict = "Done: " + said
    elif met:
        verdict = ("This beat, as written, already does it: " + said + " That is the course's "
                   "demonstration; your turn is in another beat.")
    else:
        verdict = "Not yet: " + said
    return {
        "title": challenge.title,
        "text": inline(challenge.text),
        "solved": met and sandbox,
        "verdict": verdict,
        "lost": [],
        "lost_step": None,
    }


def notes_panel(notes: list[str]) -> list[str]:
    return list(dict.fromkeys(notes))  # once each, in order


# ----------------------------------------------------------------------------------------------
# the course around a scene

# Deep dives that continue a core scene (curriculum.md: the durability deep dive is "reachable
# from scene 05 and the course map"). Unbuilt ones are listed as coming.
RELATED_DEEP_DIVES: dict[str, tuple[str, ...]] = {"05": ("d1", "d2", "d3", "d4")}


def _scene_link(summary: Any, *, embed: bool) -> dict[str, Any]:
    return {
        "id": summary.id,
        "title": summary.title,
        "label": f"{summary.id.upper() if summary.track == 'deep-dive' else summary.id} · {summary.title}",
        "url": (urls.embed_path(summary.id) if embed else urls.scene_path(summary.id))
        if summary.built
        else None,
    }


def course_links(scene_id: str, *, embed: bool = False) -> dict[str, Any]:
    """Previous and next built scene in the scene's track, related deep dives, and the way back."""
    summaries = scenes.list_scenes()
    here = scenes.SCENE_IDS[scene_id]
    track = [s for s in summaries if s.track == here.track and s.built]
    index = next(i for i, s in enumerate(track) if s.id == scene_id)
    deeper = [
        _scene_link(scenes.SCENE_IDS[d], embed=embed)
        for d in RELATED_DEEP_DIVES.get(scene_id, ())
        if d in scenes.SCENE_IDS
    ]
    parents = [
        p for p, dives in RELATED_DEEP_DIVES.items() if scene_id in dives and scenes.SCENE_IDS[p].built
    ]
    return {
        "prev": _scene_link(track[index - 1], embed=embed) if index > 0 else None,
        "next": _scene_link(track[index + 1], embed=embed) if index + 1 < len(track) else None,
        "deeper": deeper,
        "up": [_scene_link(scenes.SCENE_IDS[p], embed=embed) for p in parents],
        "track": "Durability deep dive" if here.track == "deep-dive" else "Core course",
    }
