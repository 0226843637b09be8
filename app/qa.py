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


def search(query: str, limit: int = 5) -> list[Hit]:
    """Best-matching answers across the course, best first; [] for an empty or unusable query."""
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
        scores = idx.retriever.get_scores(known)
        order = sorted(range(len(idx.qas)), key=lambda i: (-float(scores[i]), i))
        return [Hit(idx.qas[i], round(float(scores[i]), 4)) for i in order[:limit] if float(scores[i]) > 0.0]
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


def _effective_min(part: dict[str, Any]) -> int:
    eff = part.get("effective_min_isr")
    return int(eff) if eff is not None else int(part.get("min_insync_replicas", 1))


def _version(result: dict[str, Any]) -> str:
    prof = result.get("profile")
    return str(prof.get("kafka_version", "4.1")) if isinstance(prof, dict) else "4.1"


def live_isr_wait(result: dict[str, Any]) -> str | None:
    part = _state(result)["partition"]
    isr, eff = list(part["isr"]), _effective_min(part)
    if part.get("leader", -1) == -1 or not part.get("online", True):
        elr = list(part.get("elr") or [])
        return (f"Right now the partition has no leader, so no write can be acknowledged at all; the ISR on "
                f"record is {_set(isr)}" + (f" and the ELR is {_set(elr)}." if elr else "."))
    text = (f"Right now the ISR is {_set(isr)}, so an acks=all write is acknowledged only after all "
            f"{len(isr)} of those brokers have it; min.insync.replicas only requires the ISR to have at "
            f"least {eff} {'member' if eff == 1 else 'members'} for the write to be accepted.")
    if len(isr) < eff:
        text += f" With {_members(len(isr))} it is below that, so acks=all writes are refused right now."
    elif len(isr) == 1:
        text += " With a single member, acks=all is effectively acks=1 at the moment."
    return text


def live_last_write(result: dict[str, Any]) -> str | None:
    produces = result.get("produce") or []
    if not produces:
        return "You have not sent any write in this simulation yet."
    last = produces[-1]
    state = _state(result)
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
        isr, eff = list(part["isr"]), _effective_min(part)
        if len(isr) < eff:
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
        lost = set(result.get("lost_acked_records") or []) & set(recs)
        if lost:
            text += f" It has since been lost: {_records(sorted(lost))} is no longer in the leader's log."
        elif recs and not set(recs) <= set(result.get("visible_records") or []):
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
    lost = list(result.get("lost_acked_records") or [])
    part = _state(result)["partition"]
    if lost:
        return (f"In your run {len(lost)} acknowledged record{'s were' if len(lost) != 1 else ' was'} lost "
                f"({_records(lost)}): the current leader, broker {part.get('leader')} in epoch "
                f"{part.get('leader_epoch')}, does not have {'them' if len(lost) != 1 else 'it'}.")
    if not part.get("online", True) or part.get("leader", -1) == -1:
        return ("Nothing acknowledged is lost in your run yet, but the partition has no leader: the data is "
                "unavailable rather than gone.")
    return "No acknowledged record has been lost in your run."


def live_elr(result: dict[str, Any]) -> str | None:
    version = _version(result)
    part = _state(result)["partition"]
    if version != "4.1":
        return f"Your run uses Kafka {version}, which has no eligible leader replicas."
    elr, isr, eff = list(part.get("elr") or []), list(part["isr"]), _effective_min(part)
    if elr:
        text = f"Right now the ELR is {_set(elr)} and the ISR is {_set(isr)}."
        if not isr:
            text += " If one of those ELR members is alive and unfenced, the controller can elect it cleanly."
        return text
    if len(isr) >= eff:
        return (f"Right now the ELR is empty: the ISR {_set(isr)} meets the effective minimum of {eff}, and "
                f"replicas only enter the ELR when they leave an ISR that is below it.")
    return (f"Right now the ELR is empty and the ISR is {_set(isr)}; either the feature is "
            f"off in your run or no replica has left the ISR while it was below the minimum.")


def live_headroom(result: dict[str, Any]) -> str | None:
    part = _state(result)["partition"]
    rf, eff, isr = len(part.get("replicas") or []), _effective_min(part), list(part["isr"])
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
    eff = _effective_min(part)
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
    isr, eff = list(part["isr"]), _effective_min(part)
    if part.get("under_min_isr") or len(isr) < eff:
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
