"""The staff-engineer Q&A: free-text search over every answer in the course, and live answers.

    search(query, limit=5) -> list[Hit]      BM25 (bm25s) over every built scene's QA + COURSE_QA
    live_answer(qa, result) -> str | None    one sentence about the learner's simulation

`search` never raises: it caps the query, returns [] for anything it cannot use, and builds the
index once per process. `live_answer` reads an engine result (docs/engine-api.md; the `view`
snapshot when the result has one, else `final`) and dispatches to the small pure function named
by the QA's `live` field; a malformed result gives None, never an exception.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import bm25s
from bm25s.stopwords import STOPWORDS_EN

from app import ledger
from engine.profiles import DEFAULT_VERSION, PROFILES, Profile
from scenes import QA, all_qa

MAX_QUERY_CHARS = 200
MAX_LIMIT = 20

# --------------------------------------------------------------------------------------------
# tokenizing: lower case, split on anything that is not a letter or digit (so config keys and
# error names split into words), drop stop words, then a light suffix stemmer. No stemmer package
# is a dependency, so this is a small Porter-style subset, applied the same way to answers and
# queries.

_TOKEN = re.compile(r"[a-z0-9]+")
# words that carry meaning here although general stop lists drop them ("acks=all", "not enough")
_KEEP = {"all", "not", "no", "on", "off"}
_STOP = (set(STOPWORDS_EN) - _KEEP) | {
    "do", "does", "did", "i", "my", "me", "we", "our", "you", "your", "what", "why", "how", "when",
    "which", "who", "can", "should", "would", "could", "has", "have", "had", "happens", "happen",
    "any", "so", "just", "its", "from", "than", "get", "got",
}
_SUFFIXES = ("ational", "ization", "ements", "ement", "ments", "ment", "ations", "ation", "ings", "ing",
             "edly", "ed", "ies", "ied", "es", "s", "ly")


def _stem(word: str) -> str:
    if len(word) <= 3 or word.isdigit():
        return word
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            if suf == "s" and word[-2] in "su":  # "loss", "status"
                break
            if suf in ("ies", "ied"):
                word = word[: -len(suf)] + "y"
            else:
                word = word[: -len(suf)]
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


# irregular forms the suffix rules miss
_IRREGULAR = {"lost": "lose", "wrote": "write", "written": "write", "sent": "send", "kept": "keep",
              "seen": "see", "fewer": "few", "smaller": "small",
              # comparatives that learners use for "larger than"
              "bigger": "larger", "higher": "larger", "greater": "larger", "exceeds": "larger",
              "exceeding": "larger"}
# abbreviations learners type, expanded to the words the answers use (both sides get the same)
_EXPAND = {"isr": ("insync", "replica"), "sync": ("insync",), "elr": ("eligible", "leader", "replica"),
           "rf": ("replication", "factor"), "hw": ("high", "watermark"), "hwm": ("high", "watermark"),
           "leo": ("log", "end", "offset"), "ack": ("acknowledg",), "acknowledg": ("ack",),
           "durable": ("durability",), "fsync": ("disk", "flush")}


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    for raw in _TOKEN.findall(text.lower()):
        if raw in _STOP or (len(raw) < 2 and not raw.isdigit()):
            continue
        tok = _stem(_IRREGULAR.get(raw, raw))
        out.append(tok)
        out.extend(_stem(t) for t in _EXPAND.get(tok, ()))
    return out


def _document(qa: QA) -> str:
    # the question counts twice: it is what a learner's query most often paraphrases
    parts = [qa.question, qa.question, qa.answer, " ".join(qa.tags), " ".join(qa.sources),
             qa.id.replace("-", " ")]
    return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Hit:
    qa: QA
    score: float

    @property
    def scene(self) -> str | None:
        return self.qa.scene


@dataclass(frozen=True, slots=True)
class _Index:
    retriever: Any
    qas: tuple[QA, ...]


@functools.cache
def _index() -> _Index:
    qas = tuple(all_qa())
    retriever = bm25s.BM25()
    retriever.index([tokenize(_document(qa)) or [""] for qa in qas], show_progress=False)
    return _Index(retriever, qas)


SCENE_BOOST = 1.25  # asked on a scene, that scene's answers win a close call


def search(query: str, limit: int = 5, scene: str | None = None) -> list[Hit]:
    """Best-matching answers across the course, best first; [] for an empty or unusable query.

    `scene`: the scene the question is asked on; its answers' BM25 scores are multiplied by
    SCENE_BOOST, so a learner on scene 05 sees scene 05's answer first when the match is close,
    while a clearly better answer elsewhere in the course still wins."""
    try:
        if not isinstance(query, str):
            return []
        try:
            limit = max(1, min(int(limit), MAX_LIMIT))
        except (TypeError, ValueError):
            limit = 5
        tokens = tokenize(query[:MAX_QUERY_CHARS])
        idx = _index()
        known = [t for t in dict.fromkeys(tokens) if t in idx.retriever.vocab_dict and t != ""]
        if not known:
            return []
        raw = idx.retriever.get_scores(known)
        scores = [
            float(raw[i]) * (SCENE_BOOST if scene is not None and idx.qas[i].scene == scene else 1.0)
            for i in range(len(idx.qas))
        ]
        order = sorted(range(len(idx.qas)), key=lambda i: (-scores[i], i))
        return [Hit(idx.qas[i], round(scores[i], 4)) for i in order[:limit] if scores[i] > 0.0]
    except Exception:  # noqa: BLE001 - a search box must never break the page
        return []


def find(qa_id: str) -> QA | None:
    """The QA with this id anywhere in the course, or None."""
    for qa in _index().qas:
        if qa.id == qa_id:
            return qa
    return None


# --------------------------------------------------------------------------------------------
# live answers: each reads an engine result and returns one or two concrete sentences (or None)


def _state(result: dict[str, Any]) -> dict[str, Any]:
    view = result.get("view")
    return view if isinstance(view, dict) else result["final"]


def _set(ids: list[int]) -> str:
    return "{" + ", ".join(str(i) for i in ids) + "}" if ids else "empty"


def _members(n: int) -> str:
    return f"{n} member" if n == 1 else f"{n} members"


def _records(recs: list[str], limit: int = 6) -> str:
    shown = ", ".join(recs[:limit])
    return shown + (f" and {len(recs) - limit} more" if len(recs) > limit else "")


def _brokers_holding(state: dict[str, Any], records: list[str]) -> list[int]:
    want = set(records)
    out = []
    for bid, b in sorted(state.get("brokers", {}).items(), key=lambda kv: int(kv[0])):
        if any(e.get("record") in want for e in b.get("log", [])):
            out.append(int(bid))
    return out


def _eff(part: dict[str, Any]) -> int:
    """The engine's effective min.insync.replicas for this snapshot (the cap by version is its rule)."""
    return int(part["effective_min_isr"])


def _version(result: dict[str, Any]) -> str:
    prof = result.get("profile")
    return str(prof.get("kafka_version", DEFAULT_VERSION)) if isinstance(prof, dict) else DEFAULT_VERSION


def _profile(result: dict[str, Any]) -> Profile:
    """The engine's rules for the run's Kafka version: which behaviour exists is read from here."""
    return PROFILES[_version(result)]


def _snapshots(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every partition's state at the moment described (the step's view, else the end of the run)."""
    if isinstance(result.get("view"), dict):
        return ledger.snapshots(result["view"], result.get("partitions"))
    finals = [p.get("final") for p in result.get("partitions") or []]
    if finals and all(isinstance(f, dict) for f in finals):
        return finals
    return [result["final"]]


def _ledger(result: dict[str, Any]) -> dict[str, list[str]]:
    """The engine's ledger as of the moment described, over every partition (app/ledger.py)."""
    return ledger.union(_snapshots(result))


def _batches(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The batches produced by the moment described, each with its outcome then (app/ledger.py)."""
    return ledger.batches(result.get("produce") or [], _snapshots(result))


def _leader_log_below_hw(snap: dict[str, Any]) -> set[str] | None:
    """Records a consumer can read in this partition snapshot (below the leader's HW), or None
    without a leader."""
    part = snap.get("partition") or {}
    leader = part.get("leader", -1)
    if leader in (None, -1):
        return None
    b = (snap.get("brokers") or {}).get(str(leader)) or {}
    hw = int(part.get("hw", b.get("hw", 0)) or 0)
    return {str(e["record"]) for e in b.get("log") or [] if int(e["offset"]) < hw}


def live_isr_wait(result: dict[str, Any]) -> str | None:
    part = _state(result)["partition"]
    isr, eff = list(part["isr"]), _eff(part)
    if part.get("leader", -1) == -1 or not part.get("online", True):
        elr = list(part.get("elr") or [])
        return (f"Right now the partition has no leader, so no write can be acknowledged at all; the ISR on "
                f"record is {_set(isr)}" + (f" and the ELR is {_set(elr)}." if elr else "."))
    text = (f"Right now the ISR is {_set(isr)}, so an acks=all write is acknowledged only after all "
            f"{len(isr)} of those brokers have it; min.insync.replicas only requires the ISR to have at "
            f"least {eff} {'member' if eff == 1 else 'members'} for the write to be accepted.")
    if part["under_min_isr"]:
        text += f" With {_members(len(isr))} it is below that, so acks=all writes are refused right now."
    elif len(isr) == 1:
        text += " With a single member, acks=all is effectively acks=1 at the moment."
    return text


def live_last_write(result: dict[str, Any]) -> str | None:
    produces = _batches(result)
    if not produces:
        return "You have not sent any write in this simulation yet."
    last = produces[-1]
    snaps = _snapshots(result)
    state = snaps[int(last.get("partition") or 0)] if len(snaps) > 1 else _state(result)
    part = state["partition"]
    recs = list(last.get("records") or [])
    what = f"Your last write ({_records(recs)})" if recs else "Your last write"
    outcome, error = last.get("outcome"), last.get("error")
    holders = _brokers_holding(state, recs)
    where = ("none of its records is in any replica's log" if not holders
             else f"its records are in the log of broker{'s' if len(holders) > 1 else ''} "
                  f"{', '.join(str(h) for h in holders)}")
    attempts = last.get("attempts")
    tries = f" after {attempts} attempts" if isinstance(attempts, int) and attempts > 1 else ""
    if outcome == "failed" and error == "NOT_ENOUGH_REPLICAS":
        isr, eff = list(part["isr"]), _eff(part)
        if part["under_min_isr"]:
            why = (f"the committed ISR is {_set(isr)} ({_members(len(isr))}) and the effective "
                   f"min.insync.replicas is {eff}")
        else:
            why = (f"the committed ISR was smaller than the effective min.insync.replicas ({eff}) when it "
                   f"was sent; it is {_set(isr)} now")
        return (f"{what} failed with NOT_ENOUGH_REPLICAS{tries} because {why}, so the leader refused it "
                f"before appending; {where}.")
    if outcome == "failed":
        explain = {
            "REQUEST_TIMED_OUT": "the leader appended it, but its high watermark did not reach it before the "
                                 "request timed out",
            "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "it was appended, and then the ISR shrank below the minimum "
                                                "before the request completed",
            "NOT_LEADER_OR_FOLLOWER": "the broker it was sent to stopped leading the partition",
            "INVALID_REQUIRED_ACKS": "the broker accepts only acks -1, 0 and 1",
        }.get(str(error), "the producer gave up")
        return f"{what} failed with {error}{tries}: {explain}; {where}."
    if outcome == "acked":
        offsets = last.get("offsets") or []
        at = ""
        if offsets:
            at = (f" at offset {offsets[0]}" if len(offsets) == 1
                  else f" at offsets {offsets[0]}-{offsets[-1]}")
        acks = str(last.get("acks"))
        text = f"{what} was acknowledged{at} with acks={acks}"
        if acks in ("all", "-1"):
            text += ", after every ISR member of the time had it"
        text += "."
        lost = set(_ledger(result)["lost"]) & set(recs)
        readable = _leader_log_below_hw(state)
        if lost:
            text += f" It has since been lost: {_records(sorted(lost))} is no longer in the leader's log."
        elif readable is None:
            text += " Consumers cannot read it right now: the partition has no leader."
        elif recs and not set(recs) <= readable:
            text += " Consumers cannot read it yet: it is above the leader's high watermark."
        return text
    if outcome == "pending":
        return f"{what} is still waiting for an answer; {where}."
    if outcome == "sent":
        return f"{what} was sent with acks=0, so no answer will ever come; {where}."
    return None


def live_flushed(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    parts = []
    for bid in part.get("replicas", []):
        b = state["brokers"].get(str(bid))
        if not b or not b.get("log"):
            continue
        n, flushed = int(b.get("leo", len(b["log"]))), int(b.get("flushed", 0))
        parts.append(f"broker {bid} holds {n} record{'s' if n != 1 else ''} with {min(flushed, n)} on disk")
    if not parts:
        return "No replica holds any record yet in your run."
    return ("In your run " + "; ".join(parts) + ". Everything else is only in the page cache: it survives a "
            "process crash but not a power loss.")


def live_lost_records(result: dict[str, Any]) -> str | None:
    lost = _ledger(result)["lost"]
    part = _state(result)["partition"]
    if lost:
        return (f"In your run {len(lost)} acknowledged record{'s were' if len(lost) != 1 else ' was'} lost "
                f"({_records(lost)}): the current leader, broker {part.get('leader')} in epoch "
                f"{part.get('leader_epoch')}, does not have {'them' if len(lost) != 1 else 'it'}.")
    if not part.get("online", True) or part.get("leader", -1) == -1:
        return ("Nothing acknowledged is lost in your run yet, but the partition has no leader: the data is "
                "unavailable rather than gone.")
    return "No acknowledged record has been lost in your run so far."


def live_elr(result: dict[str, Any]) -> str | None:
    part = _state(result)["partition"]
    if not _profile(result).elr_available:
        return f"Your run uses Kafka {_version(result)}, which has no eligible leader replicas."
    elr, isr, eff = list(part.get("elr") or []), list(part["isr"]), _eff(part)
    if elr:
        text = f"Right now the ELR is {_set(elr)} and the ISR is {_set(isr)}."
        if not isr:
            text += " If one of those ELR members is alive and unfenced, the controller can elect it cleanly."
        return text
    if not part["under_min_isr"]:
        return (f"Right now the ELR is empty: the ISR {_set(isr)} meets the effective minimum of {eff}, and "
                f"replicas only enter the ELR when they leave an ISR that is below it.")
    return (f"Right now the ELR is empty and the ISR is {_set(isr)}; either the feature is "
            f"off in your run or no replica has left the ISR while it was below the minimum.")


def live_headroom(result: dict[str, Any]) -> str | None:
    part = _state(result)["partition"]
    rf, eff, isr = len(part.get("replicas") or []), _eff(part), list(part["isr"])
    if rf == 0:
        return None
    spare = max(rf - eff, 0)
    text = (f"With RF {rf} and an effective min.insync.replicas of {eff}, this topic keeps accepting "
            f"acks=all writes through {spare} broker loss{'es' if spare != 1 else ''}, and every "
            f"acknowledged record is on at least {eff} broker{'s' if eff != 1 else ''}.")
    if eff == 1:
        text += " A single failure at the wrong moment can therefore lose acknowledged data."
    text += f" Right now {len(isr)} of the {rf} replicas are in the ISR."
    return text


def live_effective_min(result: dict[str, Any]) -> str | None:
    part = _state(result)["partition"]
    rf = len(part.get("replicas") or [])
    configured = part.get("min_insync_replicas")
    eff = _eff(part)
    version = _version(result)
    if configured is None or rf == 0:
        return None
    configured = int(configured)
    if configured <= rf:
        return (f"In your run min.insync.replicas is {configured} and the replication factor is {rf}, so the "
                f"setting applies as it is.")
    if eff < configured:
        return (f"In your run min.insync.replicas is {configured} but the replication factor is only {rf}, "
                f"so Kafka {version} uses an effective minimum of {eff}.")
    return (f"In your run min.insync.replicas is {configured} but the replication factor is only {rf}; "
            f"Kafka {version} applies the raw value, which {rf} replica{'s' if rf != 1 else ''} can never "
            f"meet, so every acks=all write is refused.")


def live_visibility(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    leader = part.get("leader", -1)
    if leader == -1:
        return "Right now the partition has no leader, so consumers cannot read anything."
    b = state["brokers"].get(str(leader)) or {}
    log = b.get("log") or []
    hw = int(part.get("hw", b.get("hw", 0)))
    hidden = [e["record"] for e in log if int(e["offset"]) >= hw]
    if not hidden:
        return (f"Right now every record in the leader's log is below the high watermark ({hw}), so "
                f"consumers can read all of them.")
    end = int(log[-1]["offset"]) + 1
    text = (f"Right now the leader's log ends at offset {end} but the high watermark is {hw}, so consumers "
            f"cannot read {_records(hidden)}.")
    isr, eff = list(part["isr"]), _eff(part)
    if part["under_min_isr"] and _profile(result).hw_freeze_under_min_isr:
        text += (f" The high watermark is frozen because the ISR {_set(isr)} is below the effective minimum "
                 f"of {eff}.")
    return text


LIVE: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "live_isr_wait": live_isr_wait,
    "live_last_write": live_last_write,
    "live_flushed": live_flushed,
    "live_lost_records": live_lost_records,
    "live_elr": live_elr,
    "live_headroom": live_headroom,
    "live_effective_min": live_effective_min,
    "live_visibility": live_visibility,
}


def live_answer(qa: QA, result: dict[str, Any]) -> str | None:
    """The live sentence for this QA and this engine result, or None if it has none or cannot say."""
    fn = LIVE.get(getattr(qa, "live", None) or "")
    if fn is None or not isinstance(result, dict):
        return None
    try:
        state = _state(result)
        if not isinstance(state, dict) or not isinstance(state.get("partition"), dict):
            return None
    except (KeyError, TypeError):
        return None
    try:
        return fn(result)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None


# --------------------------------------------------------------------------------------------
# live answers for scenes 04 (replication) and 04a (controller and metadata log)


def _leader_broker(state: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    leader = int(state["partition"].get("leader", -1))
    if leader == -1:
        return None
    return leader, state["brokers"].get(str(leader)) or {}


def _steps_so_far(result: dict[str, Any]) -> list[dict[str, Any]]:
    steps = result.get("steps") or []
    upto = result.get("at_step")
    if isinstance(upto, int) and not isinstance(upto, bool):
        steps = [s for s in steps if int(s.get("i", 0)) <= upto]
    return steps


def _secs(ms: int) -> str:
    return f"{ms / 1000:.1f} s"


def live_hw_waiting_for(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    lb = _leader_broker(state)
    if lb is None:
        return "Right now the partition has no leader, so no write can be acknowledged at all."
    leader, b = lb
    leo, hw = int(b.get("leo", 0)), int(part.get("hw", b.get("hw", 0)))
    if hw >= leo:
        return (f"Right now the leader, broker {leader}, has its high watermark at its log end ({leo}), "
                f"so no acks=all write is waiting for a follower.")
    waiting = []
    for f in part.get("maximal_isr") or part.get("isr") or []:
        if int(f) == leader:
            continue
        rep = (state["brokers"].get(str(f)) or {}).get("reported_leo")
        if rep is None or int(rep) < leo:
            heard = ("has not fetched from it since it became leader" if rep is None or int(rep) < 0
                     else f"last asked for offset {int(rep)}")
            waiting.append(f"broker {f}, which {heard}")
    text = f"Right now broker {leader}'s log ends at offset {leo} but its high watermark is {hw}"
    if part["under_min_isr"] and _profile(result).hw_freeze_under_min_isr:
        return (text + f": the high watermark is frozen because the ISR {_set(list(part['isr']))} is below "
                f"the effective min.insync.replicas of {_eff(part)}.")
    if waiting:
        return text + ": it is waiting for " + " and ".join(waiting) + "."
    return text + ": it is waiting for a caught-up follower outside the ISR that is about to rejoin."


def live_replica_positions(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    lb = _leader_broker(state)
    if lb is None:
        return "Right now the partition has no leader, so no follower is fetching."
    leader, b = lb
    hw = int(part.get("hw", b.get("hw", 0)))
    parts = [f"leader broker {leader} has LEO {int(b.get('leo', 0))} and HW {hw}"]
    for r in part.get("replicas") or []:
        if int(r) == leader:
            continue
        f = state["brokers"].get(str(r)) or {}
        if not f.get("alive", True):
            parts.append(f"broker {r} is down")
            continue
        rep = f.get("reported_leo")
        told = ("the leader has not heard from it yet" if rep is None or int(rep) < 0
                else f"its last fetch told the leader {int(rep)}")
        parts.append(f"broker {r} has LEO {int(f.get('leo', 0))} and HW {int(f.get('hw', 0))} ({told})")
    return "In your run " + "; ".join(parts) + "."


def live_isr_members(result: dict[str, Any]) -> str | None:
    part = _state(result)["partition"]
    isr = list(part.get("isr") or [])
    replicas = list(part.get("replicas") or [])
    outside = [r for r in replicas if r not in isr]
    text = f"Right now the ISR is {_set(isr)}"
    text += (f"; broker{'s' if len(outside) > 1 else ''} {', '.join(str(r) for r in outside)} "
             f"{'are' if len(outside) > 1 else 'is'} a replica but out of sync." if outside
             else ", every replica of the partition.")
    maximal = list(part.get("maximal_isr") or [])
    pending = part.get("pending_isr_change")
    if pending == "shrink":
        text += (f" The leader has asked the controller to shrink it, and until that commits it still counts "
                 f"{_set(maximal or isr)} for the high watermark.")
    elif pending == "expand":
        joining = [r for r in maximal if r not in isr]
        text += (f" The leader has asked the controller to add {', '.join(f'broker {r}' for r in joining)}, "
                 f"and already counts {_set(maximal)} for the high watermark.")
    return text


def live_fencing(result: dict[str, Any]) -> str | None:
    state = _state(result)
    log = list((state.get("controller") or {}).get("metadata_log") or [])
    fences = [r for r in log if r.get("type") == "BrokerRegistrationChangeRecord" and r.get("fenced") == 1]
    if not fences:
        return "No broker has been fenced in your run so far: every broker's heartbeats are arriving."
    last = fences[-1]
    bid, at = last.get("brokerId"), int(last.get("t_ms", 0))
    text = f"In your run the controller last fenced broker {bid}, at {_secs(at)}"
    before = [s for s in _steps_so_far(result) if s.get("broker") == bid and int(s.get("t_ms", 0)) <= at
              and s.get("kind") in ("broker_crash", "broker_power_loss", "broker_shutdown")]
    if before and before[-1].get("kind") == "broker_shutdown":
        text += ", as its controlled shutdown finished"
    elif before:
        gap = at - int(before[-1]["t_ms"])
        text += f", {_secs(gap)} after it crashed and its heartbeats stopped"
    text += "."
    brokers = sorted(state["brokers"].items(), key=lambda kv: int(kv[0]))
    fenced = [int(b) for b, br in brokers if br.get("fenced")]
    if fenced:
        names = ", ".join(str(f) for f in fenced)
        many = len(fenced) > 1
        text += f" Right now broker{'s' if many else ''} {names} {'are' if many else 'is'} fenced."
    else:
        text += " Right now no broker is fenced."
    return text


def _describe_mrec(rec: dict[str, Any]) -> str:
    kind = str(rec.get("type"))
    if kind == "PartitionChangeRecord":
        fields = []
        if "leader" in rec:
            fields.append(f"leader {rec['leader']}")
        if "isr" in rec:
            fields.append("isr [" + ", ".join(str(x) for x in rec["isr"]) + "]")
        if "eligibleLeaderReplicas" in rec:
            fields.append("ELR [" + ", ".join(str(x) for x in rec["eligibleLeaderReplicas"]) + "]")
        return f"{kind} ({', '.join(fields) or 'no change'})"
    if kind == "BrokerRegistrationChangeRecord":
        what = []
        if "fenced" in rec:
            what.append(f"fenced={rec['fenced']}")
        if "inControlledShutdown" in rec:
            what.append(f"inControlledShutdown={rec['inControlledShutdown']}")
        return f"{kind} (broker {rec.get('brokerId')}, {', '.join(what)})"
    if kind == "RegisterBrokerRecord":
        return f"{kind} (broker {rec.get('brokerId')}, brokerEpoch {rec.get('brokerEpoch')})"
    return kind


def live_metadata_tail(result: dict[str, Any]) -> str | None:
    ctl = _state(result).get("controller") or {}
    if not ctl.get("kraft", True):
        return "Your run uses a Kafka version from the ZooKeeper era, which has no metadata log."
    log = list(ctl.get("metadata_log") or [])
    if not log:
        return None
    tail = log[-3:]
    items = "; ".join(f"offset {r.get('offset')}: {_describe_mrec(r)}" for r in tail)
    return f"The newest records in your metadata log are {items}."


def live_epoch_counts(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    le, pe = int(part.get("leader_epoch", 0)), int(part.get("partition_epoch", 0))
    text = f"Right now the leader epoch is {le} and the partition epoch is {pe}"
    log = list((state.get("controller") or {}).get("metadata_log") or [])
    if log and int(log[0].get("offset", 1)) == 0:
        changes = [r for r in log if r.get("type") == "PartitionChangeRecord"]
        with_leader = [r for r in changes if "leader" in r]
        text += (f": your metadata log holds {len(changes)} PartitionChangeRecord"
                 f"{'s' if len(changes) != 1 else ''}, and {len(with_leader)} of them set the leader")
    return text + "."


def live_current_leader(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    replicas = [int(r) for r in part.get("replicas") or []]
    isr = [int(r) for r in part.get("isr") or []]
    leader = int(part.get("leader", -1))
    if leader == -1:
        elr = [int(r) for r in part.get("elr") or []]
        return (f"Right now the partition has no leader (assignment {replicas}); the ISR on record is "
                f"{_set(isr)}" + (f" and the ELR is {_set(elr)}." if elr else "."))
    text = f"Right now broker {leader} leads in leader epoch {part.get('leader_epoch')}; "
    others = [r for r in replicas if r != leader and r in isr]
    if others:
        def status(r: int) -> str:
            b = state["brokers"].get(str(r)) or {}
            return ("down" if not b.get("alive", True) else "fenced" if b.get("fenced", False)
                    else "running")
        listed = ", ".join(f"broker {r} ({status(r)})" for r in others)
        text += (f"the other ISR members, in assignment order {replicas}, are {listed}: the candidates the "
                 f"controller chooses from if it is fenced.")
    else:
        text += "no other replica is in the ISR right now."
    if replicas and leader != replicas[0]:
        text += f" Broker {replicas[0]} is the preferred leader and gets leadership back once it is in sync."
    return text


LIVE["live_hw_waiting_for"] = live_hw_waiting_for
LIVE["live_replica_positions"] = live_replica_positions
LIVE["live_isr_members"] = live_isr_members
LIVE["live_fencing"] = live_fencing
LIVE["live_metadata_tail"] = live_metadata_tail
LIVE["live_epoch_counts"] = live_epoch_counts
LIVE["live_current_leader"] = live_current_leader


# --------------------------------------------------------------------------------------------
# live answers for scene 06 (leader epochs) and deep dives d2 (acks=2) and d3 (fsync, racks)


def _epoch_cache_text(cache: list[Any]) -> str:
    return ", ".join(f"epoch {int(e)} from offset {int(s)}" for e, s in cache) or "empty"


def live_epoch_caches(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    brokers = state["brokers"]
    rows, logs = [], {}
    for bid in part.get("replicas") or []:
        b = brokers.get(str(bid))
        if not b:
            continue
        rows.append(f"broker {bid}: {_epoch_cache_text(b.get('epoch_cache') or [])}")
        logs[int(bid)] = [(int(e["offset"]), int(e["epoch"]), e["record"]) for e in b.get("log") or []]
    if not rows:
        return None
    text = "Right now the epoch caches read: " + "; ".join(rows) + "."
    first = None
    for off in range(max((len(v) for v in logs.values()), default=0)):
        entries = {v[off][1:] for v in logs.values() if len(v) > off}
        if len(entries) > 1:
            first = off
            break
    if first is not None:
        text += f" The replicas' logs first disagree at offset {first}."
    elif logs:
        text += " Where their logs overlap, every replica holds the same records with the same epochs."
    if not _profile(result).leader_epochs:
        text += f" Kafka {_version(result)} stored no epochs in the log; they are shown only for comparison."
    return text


_TRUNCATION_TEXT = {
    "diverging_epoch": "broker {b} deleted {r} to match the leader's epochs",
    "high_watermark": "broker {b} deleted {r}, cutting its log back to its high watermark",
    "power_loss": "a power cut erased {r} from broker {b}",
    "disk_lost": "broker {b}'s destroyed disk took {r} with it",
}


def live_truncated(result: dict[str, Any]) -> str | None:
    parts, gone = [], set()
    for bid, b in sorted(_state(result)["brokers"].items(), key=lambda kv: int(kv[0])):
        by_why: dict[str, list[str]] = {}
        for t in b.get("truncated") or []:
            by_why.setdefault(str(t.get("why")), []).append(str(t.get("record")))
        for why, recs in by_why.items():
            text = _TRUNCATION_TEXT.get(why, "broker {b} deleted {r} (" + why + ")")
            parts.append(text.format(b=bid, r=_records(recs)))
            gone.update(recs)
    if not parts:
        return "No replica has deleted or lost a record in your run so far."
    text = "In your run " + "; ".join(parts) + "."
    lost = [r for r in _ledger(result)["lost"] if r in gone]
    if lost:
        text += (f" Of those, {_records(lost)} had been acknowledged and "
                 f"{'are' if len(lost) != 1 else 'is'} gone from the leader too.")
    return text


def live_acked_copies(result: dict[str, Any]) -> str | None:
    seen = _ledger(result)
    acked = seen["acked"]
    if not acked:
        return "Nothing has been acknowledged in your run yet."
    states = _snapshots(result)
    lost = set(seen["lost"])
    parts = []
    for rec in acked[:6]:
        holders = sorted({h for st in states if st.get("brokers") for h in _brokers_holding(st, [rec])})
        where = (f"on broker{'s' if len(holders) != 1 else ''} {', '.join(map(str, holders))}"
                 if holders else "nowhere")
        parts.append(f"{rec} is {where}" + (" (lost)" if rec in lost else ""))
    more = f" and {len(acked) - 6} more" if len(acked) > 6 else ""
    return "Your acknowledged records right now: " + "; ".join(parts) + more + "."


def live_partitions(result: dict[str, Any]) -> str | None:
    parts = result.get("partitions") or []
    if not parts:
        return ("Your run has a single partition; set partitions above 1 to see how the placer spreads "
                "replicas over racks.")
    refused, lost, rows = 0, 0, []
    for i, (replicas, snap) in enumerate(_partition_rows(result)):
        part = snap.get("partition") or {}
        brokers = snap.get("brokers") or {}
        racks = [str((brokers.get(str(r)) or {}).get("rack") or "-") for r in replicas]
        isr = list(part.get("isr") or [])
        if part["under_min_isr"] or part.get("leader", -1) == -1:
            refused += 1
        lost += len(snap["ledger"]["lost"])
        rows.append(f"{i}: {replicas} in racks {'/'.join(racks)}, ISR {_set(isr)}")
    text = "Partitions right now: " + "; ".join(rows) + "."
    text += (f" {refused} of {len(parts)} cannot take acks=all writes"
             f" and {lost} acknowledged record{'s are' if lost != 1 else ' is'} lost.")
    return text


LIVE["live_epoch_caches"] = live_epoch_caches
LIVE["live_truncated"] = live_truncated
LIVE["live_acked_copies"] = live_acked_copies
LIVE["live_partitions"] = live_partitions


# --------------------------------------------------------------------------------------------
# live answers for deep dives d1 (the slowest follower) and d4 (the arithmetic of losing data)


def live_slowest_follower(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    isr = [int(r) for r in part.get("isr") or []]
    slow = sorted(((int(b), int(br.get("fetch_delay_ms") or 0)) for b, br in state["brokers"].items()
                   if int(br.get("fetch_delay_ms") or 0) > 0 and int(b) in (part.get("replicas") or [])),
                  key=lambda t: -t[1])
    waited = [p for p in _batches(result)
              if p["outcome"] == "acked" and p.get("done_ms") is not None and p.get("sent_ms") is not None
              and str(p.get("acks")) in ("all", "-1")]
    parts = []
    if slow:
        b, ms = slow[0]
        where = "inside the ISR, so every acks=all write waits for it" if b in isr else \
            "outside the ISR, so acks=all writes no longer wait for it"
        parts.append(f"In your run broker {b}'s fetches take {ms} ms longer, and it is {where}")
    else:
        parts.append("In your run no follower is slowed down right now")
    if waited:
        longest = max(waited, key=lambda p: int(p["done_ms"]) - int(p["sent_ms"]))
        took = int(longest["done_ms"]) - int(longest["sent_ms"])
        recs = _records(list(longest.get("records") or []))
        parts.append(f"your slowest acknowledged acks=all write ({recs}) "
                     f"took {took / 1000:.1f} s from send to acknowledgement" if took >= 1000 else
                     f"your slowest acknowledged acks=all write took {took} ms")
    return "; ".join(parts) + "."


def live_replication_rule(result: dict[str, Any]) -> str | None:
    proposals = [str(p) for p in result.get("proposals") or []]
    lost = _ledger(result)["lost"]
    if "KIP-250" in proposals:
        text = ("Your run uses the KIP-250 proposal, which is not Kafka: a quorum of replicas is enough to "
                "acknowledge, and the controller elects the live in-sync replica with the longest log.")
        if lost:
            text += f" It has lost acknowledged {_records(lost)} so far."
        return text
    text = "Your run uses Kafka's own rule: the leader waits for every in-sync replica before acknowledging."
    if "KIP-926" in proposals:
        text = "Your run uses the KIP-926 proposal (acks=min.insync.replicas), which is not Kafka."
    return text


def _partition_rows(result: dict[str, Any]) -> list[tuple[list[int], dict[str, Any]]]:
    """(replicas, snapshot at the moment described) for every partition."""
    return [([int(r) for r in snap["partition"].get("replicas") or []], snap) for snap in _snapshots(result)]


def live_copies_by_rack(result: dict[str, Any]) -> str | None:
    rows = _partition_rows(result)
    described, shared = [], 0
    for i, (replicas, snap) in enumerate(rows):
        brokers = snap.get("brokers") or {}
        racks = [(brokers.get(str(r)) or {}).get("rack") for r in replicas]
        if all(r is None for r in racks):
            described.append(f"partition {i} on brokers {', '.join(map(str, replicas))} (no broker.rack set)")
            continue
        if len(set(racks)) < len(racks):
            shared += 1
        described.append(f"partition {i} in racks {'/'.join(str(r) for r in racks)}")
    text = "In your run: " + "; ".join(described[:6]) + "."
    if shared:
        text += (f" {shared} partition{'s have' if shared != 1 else ' has'} two copies in one rack, so one "
                 "rack failure takes more than one copy.")
    elif any("racks" in d for d in described):
        text += (" Every partition has its copies in different racks, so one rack failure takes at most "
                 "one copy.")
    else:
        text += " Kafka cannot spread copies across failure domains it has not been told about."
    return text


def live_cap_position(result: dict[str, Any]) -> str | None:
    state = _state(result)
    part = state["partition"]
    isr, eff = list(part.get("isr") or []), _eff(part)
    lost = _ledger(result)["lost"]
    steps = _steps_so_far(result)
    unclean = any(s.get("kind") == "controller_elect_unclean" for s in steps)
    if unclean:
        gone = f", and {_records(lost)} acknowledged before is gone." if lost else "."
        return ("Right now your topic has chosen availability: an unclean election brought it back online "
                "with a replica that was out of sync" + gone)
    if part.get("leader", -1) == -1 or not part.get("online", True):
        return ("Right now your topic has chosen consistency: no in-sync replica is available, so the "
                "partition is offline rather than lead with a replica that may be missing acknowledged "
                "writes.")
    if part["under_min_isr"]:
        return (f"Right now your topic has chosen consistency: the ISR {_set(isr)} is below the effective "
                f"min.insync.replicas of {eff}, so acks=all writes are refused.")
    text = (f"Right now your topic is both available and consistent: the ISR {_set(isr)} meets the effective "
            f"minimum of {eff}.")
    if eff == 1:
        text += " With a minimum of 1 it will keep accepting writes on a single copy if the others drop out."
    return text


LIVE["live_slowest_follower"] = live_slowest_follower
LIVE["live_replication_rule"] = live_replication_rule
LIVE["live_copies_by_rack"] = live_copies_by_rack
LIVE["live_cap_position"] = live_cap_position
