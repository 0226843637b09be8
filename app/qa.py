"""The staff-engineer Q&A: free-text search over every answer in the course, and live answers.

    search(query, limit=5) -> list[Hit]      full-text search over every built scene's QA, COURSE_QA
                                             and the glossary (SQLite FTS5 or bm25s, see DEFAULT_BACKEND)
    live_answer(qa, result) -> str | None    one sentence about the learner's simulation

`search` never raises: it caps the query, returns [] for anything it cannot use, and builds the
index once per process. `live_answer` reads an engine result (docs/scenario-format.md; the `view`
snapshot when the result has one, else `final`) and dispatches to the small pure function named
by the QA's `live` field; a malformed result gives None, never an exception.
"""

from __future__ import annotations

import difflib
import functools
import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import bm25s
from bm25s.stopwords import STOPWORDS_EN

from app import eos, ledger
from app.formats import clock, sim_time
from engine.clients_spec import ConsumerConfig
from engine.profiles import DEFAULT_VERSION, PROFILES, Profile
from scenes import QA, all_qa
from scenes.glossary import Term, glossary

MAX_QUERY_CHARS = 200
MAX_LIMIT = 20

# Which index answers `search`. Both were measured on the 96 learner questions of
# tests/scenes/qa_questions.toml with the same answers, glossary, synonym table and spelling
# repair (bench/qa_search.py prints the figures; this machine, November 2026):
#
#   backend   top-1          top-3          median query   p99 query
#   fts5      83/96 86.5 %   95/96 99.0 %   0.24 ms        4.5 ms
#   bm25s     80/96 83.3 %   92/96 95.8 %   0.13 ms        4.3 ms
#   (main before issue 8: bm25s without glossary, synonyms or the new answers: 61/96, 77/96)
#
# FTS5 is kept: it ranks better because it can weight the question, answer and tags columns
# apart and match a learner's neighbouring words as a phrase ("leader epoch"), it needs no
# package, and its Porter stemmer is the real one. Both are far below a millisecond for a typical
# query. The set was also used to tune the synonym table, so on new questions expect less: on 20
# questions written after tuning (not in the file), fts5 got top-1 13/20 and top-3 17/20, bm25s
# top-1 16/20 and top-3 17/20.
BACKENDS = ("fts5", "bm25s")
DEFAULT_BACKEND = "fts5"

# --------------------------------------------------------------------------------------------
# what the search reads: every built scene's QA, COURSE_QA, and one answer per glossary entry


GLOSSARY_PREFIX = "glossary-"


def glossary_qa(entry: Term) -> QA:
    """A glossary entry as a search answer, so a learner who types a term finds its definition."""
    tags = [entry.term, *([entry.name] if entry.name else []), *entry.aliases, *entry.keywords]
    return QA(id=GLOSSARY_PREFIX + entry.id, question=f"Glossary: {entry.title}", answer=entry.definition,
              sources=list(entry.sources), tags=tags, scene=None)


@functools.cache
def _answers() -> tuple[QA, ...]:
    return tuple(all_qa()) + tuple(glossary_qa(t) for t in glossary())


# --------------------------------------------------------------------------------------------
# tokenizing for bm25s: lower case, split on anything that is not a letter or digit (so config
# keys and error names split into words), drop stop words, then a light suffix stemmer. No
# stemmer package is a dependency, so this is a small Porter-style subset, applied the same way to
# answers and queries. (FTS5 brings its own Porter stemmer.)

_TOKEN = re.compile(r"[a-z0-9]+")
# words that carry meaning here although general stop lists drop them ("acks=all", "not enough")
_KEEP = {"all", "not", "no", "on", "off"}
_STOP = (set(STOPWORDS_EN) - _KEEP) | {
    "do", "does", "did", "i", "my", "me", "we", "our", "you", "your", "what", "why", "how", "when",
    "which", "who", "can", "should", "would", "could", "has", "have", "had", "happens", "happen",
    "any", "so", "just", "its", "from", "than", "get", "got", "s", "t", "isn", "doesn", "don", "didn",
    "wont", "cant", "dont", "doesnt", "isnt", "didnt", "whats", "mean", "means", "really", "exactly",
    "actually", "anyway", "need", "needs", "needed", "want", "wants", "explain", "explained",
    "understand", "please", "help", "anything", "thing", "things", "like", "re", "ve", "ll",
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


def tokenize(text: str, bigrams: bool = True) -> list[str]:
    """Stemmed words, their abbreviation expansions, and (`bigrams`) each pair of neighbouring
    words as one more token, so "leader epoch" outranks a text that has "leader" and "epoch"
    apart."""
    out: list[str] = []
    words: list[str] = []
    for raw in _TOKEN.findall(text.lower()):
        if raw in _STOP or (len(raw) < 2 and not raw.isdigit()):
            continue
        tok = _stem(_IRREGULAR.get(raw, raw))
        words.append(tok)
        out.append(tok)
        out.extend(_stem(t) for t in _EXPAND.get(tok, ()))
    if bigrams:
        out.extend(f"{a}_{b}" for a, b in zip(words, words[1:], strict=False))
    return out


# --------------------------------------------------------------------------------------------
# the query side, shared by both indexes: spelling repair against the answers' own words, then a
# synonym table from how learners say things to how the answers say them. The expansions are
# added to the query (OR), never substituted, so a learner's exact word still counts.

SYNONYMS: dict[str, str] = {
    "hw": "high watermark", "hwm": "high watermark", "watermark": "high watermark",
    "leo": "log end offset", "end offset": "log end offset",
    "isr": "in-sync replicas ISR", "in sync": "in-sync ISR", "insync": "in-sync ISR",
    "elr": "eligible leader replicas ELR", "rf": "replication factor", "rf3": "replication factor 3",
    "rf=3": "replication factor 3", "rf 3": "replication factor 3", "rf5": "replication factor 5",
    "min isr": "min.insync.replicas", "min.isr": "min.insync.replicas", "minisr": "min.insync.replicas",
    "min insync": "min.insync.replicas", "min.insync": "min.insync.replicas",
    "lose data": "lost loss", "lost data": "lost loss", "losing data": "lost loss", "data loss": "lost",
    "lose messages": "lost loss", "lost messages": "lost loss", "losing messages": "lost loss",
    "lose": "lost", "losing": "lost",
    "acks all": "acks=all", "acks -1": "acks=all", "acks=-1": "acks=all",
    "dies": "crash crashes fenced", "died": "crash crashes fenced", "dead": "crash fenced stopped",
    "down": "crash fenced", "goes down": "crash fenced", "crashed": "crash crashes",
    "kicked out": "drop out leave removed", "kicked": "drop out removed", "removed": "drop out",
    "stuck": "waiting wait", "hang": "waiting", "hangs": "waiting", "hanging": "waiting",
    "slow": "slow straggler latency",
    "fsync": "flush disk fsync", "fsynced": "flush disk fsync", "disk": "disk fsync",
    "power outage": "power loss", "power cut": "power loss", "outage": "power loss",
    "message": "record", "messages": "records", "msg": "record", "msgs": "records",
    "duplicate": "duplicates idempotence", "duplicates": "idempotence",
    "visible": "see consumers", "see": "visible consumers", "read": "visible consumers",
    "difference": "versus vs", "vs": "difference versus", "versus": "difference vs",
    "error 19": "NOT_ENOUGH_REPLICAS", "error 20": "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "error 21": "INVALID_REQUIRED_ACKS", "code 21": "INVALID_REQUIRED_ACKS error 21",
    "p99": "latency tail", "p999": "latency tail P999", "latency": "P999",
    "safe": "safety lost loss", "unsafe": "lost loss",
    "restart": "restarting restarted", "restarted": "restart", "restarting": "restart",
    "kafka": "", "broker died": "broker dead crash fenced",
    "failover": "leader crash election dies", "fail over": "leader crash election dies",
    "re-elected": "leader moves election", "reelected": "leader moves election",
    "leader change": "leader moves election", "leader moved": "leader moves election",
    "only the leader": "leader alone single", "just the leader": "leader alone single",
    "copy": "fetch copies", "copies": "fetch replicas", "get the data": "fetch copy",
    "data": "records", "ack": "acks acknowledged wait", "sent after": "wait",
    "back in sync": "back into the ISR rejoin", "rejoin": "back into the ISR",
    "majority": "quorum majority", "raft": "quorum majority raft",
    "cp": "CAP consistency", "ap": "CAP availability", "cap": "CAP consistency availability",
    # the client side (scenes 01-03): how learners say it
    "database": "database rebuild state table", "db": "database", "postgres": "database",
    "how long": "retention kept", "keep data": "retention kept", "keeps data": "retention kept",
    "old data": "retention deleted segment", "still there": "deleted segment retention",
    "replay": "replay reprocess seek beginning", "re-read": "replay seek", "reread": "replay seek",
    "bookmark": "committed offset stored position", "where is my place": "committed offset position",
    "primary key": "unique id offset", "unique": "unique id", "id": "unique id",
    "pushed": "push pull fetch", "push": "pull fetch",
    "out of range": "OFFSET_OUT_OF_RANGE log start retention", "fell off": "log start retention",
    "behind": "lag", "far behind": "consumer lag", "lagging": "lag",
    "block": "asynchronous returns future", "blocks": "asynchronous returns future",
    "blocking": "asynchronous returns future", "async": "asynchronous",
    "skip": "skipped", "skipped": "skip", "missed": "skipped",
    "consumer was down": "consumer away stopped retention",
    "consumer down": "consumer away stopped retention",
    "consumer was offline": "consumer away stopped retention",
    "existing data": "existing records stay move", "rebalance existing": "existing records stay move",
    "consumed": "reading remove read", "after reading": "reading remove", "once read": "reading remove",
    "hot": "hot partition skew", "skewed": "skew hot partition", "traffic": "load hot partition",
}
_SYN_RE = re.compile(r"(?<![\w.=-])("
                     + "|".join(re.escape(k) for k in sorted(SYNONYMS, key=len, reverse=True))
                     + r")(?![\w.=-])")


@functools.cache
def _vocabulary() -> frozenset[str]:
    words: set[str] = set()
    for qa in _answers():
        words.update(re.findall(r"[a-z][a-z0-9]+", _document(qa).lower()))
    return frozenset(words)


@functools.cache
def _vocabulary_stems() -> frozenset[str]:
    return frozenset(_stem(w) for w in _vocabulary())


@functools.lru_cache(maxsize=4096)
def _spell(word: str) -> str:
    """The answers' own word closest to an unknown word ("hight" -> "high"), or the word itself.
    A word the answers have in another form ("pushed" for "push") or that the synonym table knows
    ("block") is left alone: a near spelling of it is usually another word ("used", "clock")."""
    if len(word) < 4 or not word.isalpha() or word in _vocabulary() or word in _STOP or word in SYNONYMS:
        return word
    if _stem(_IRREGULAR.get(word, word)) in _vocabulary_stems():
        return word
    close = difflib.get_close_matches(word, _vocabulary(), n=1, cutoff=0.8)
    return close[0] if close else word


def _spelt(query: str) -> str:
    # whole words with their digits ("murmur2"), so a word's letters are never respelt on their own
    return re.sub(r"[a-z][a-z0-9]*", lambda m: _spell(m.group(0)), query.lower())


def _term_key(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("_", " "))
    return " ".join(w for w in words if w not in _STOP and w not in ("define", "definition", "term"))


@functools.cache
def _term_names() -> dict[str, str]:
    """Every glossary spelling (as `_term_key` reduces it) -> the glossary answer's id."""
    out: dict[str, str] = {}
    for entry in glossary():
        for spelling in entry.spellings:
            out.setdefault(_term_key(spelling), GLOSSARY_PREFIX + entry.id)
    out.pop("", None)
    return out


def term_asked(query: str) -> str | None:
    """The glossary answer's id when the query is nothing but a term ("hw", "what is kraft?",
    "purgatory??"): a learner who types a bare term wants its definition first."""
    return _term_names().get(_term_key(_spelt(query)))


def expand_query(query: str) -> str:
    """The query with misspelt words repaired and the synonyms of what it says appended."""
    text = _spelt(query)
    extra = [SYNONYMS[m.group(1)] for m in _SYN_RE.finditer(text)]
    return " ".join([text, *[e for e in extra if e]])


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


# --------------------------------------------------------------------------------------------
# the two indexes; each scores every answer for a query (0.0: no match), higher is better


class _Bm25:
    """bm25s over the suffix-stemmed tokens above; the query's synonyms go through the same tokens."""

    def __init__(self, qas: tuple[QA, ...]):
        self.retriever = bm25s.BM25()
        self.retriever.index([tokenize(_document(qa)) or [""] for qa in qas], show_progress=False)
        self.size = len(qas)

    def scores(self, query: str) -> list[float]:
        vocab = self.retriever.vocab_dict
        known = [t for t in dict.fromkeys(tokenize(expand_query(query))) if t in vocab and t != ""]
        if not known:
            return [0.0] * self.size
        return [float(s) for s in self.retriever.get_scores(known)]


# FTS5 column weights: the question (what a query paraphrases), the answer, and the tags (the
# glossary's aliases and keywords, the QA's topic words, its id)
_FTS_WEIGHTS = (3.0, 1.0, 2.0)
_FTS_WORD = re.compile(r"[a-z0-9]+(?:[._=-][a-z0-9]+)*")


class _Fts5:
    """SQLite FTS5 (standard library) with the Porter tokenizer, ranked by its built-in bm25()."""

    def __init__(self, qas: tuple[QA, ...]):
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.lock = threading.Lock()
        self.db.execute("CREATE VIRTUAL TABLE answers USING fts5(question, answer, tags, "
                        "tokenize = 'porter unicode61')")
        self.db.executemany(
            "INSERT INTO answers (rowid, question, answer, tags) VALUES (?, ?, ?, ?)",
            [(i, qa.question, qa.answer, " ".join([*qa.tags, qa.id.replace("-", " ")]))
             for i, qa in enumerate(qas)])
        self.size = len(qas)

    @staticmethod
    def match_expression(query: str) -> str | None:
        """Every word and synonym phrase of the query as an OR of quoted FTS5 strings (so no
        learner input is ever read as FTS5 syntax), or None when nothing is left to match."""
        text = expand_query(query)
        terms: list[str] = []
        for word in _FTS_WORD.findall(text):
            parts = [p for p in re.split(r"[._=-]", word) if p]
            if len(parts) == 1 and (word in _STOP or (len(word) < 2 and not word.isdigit())):
                continue
            terms.append(" ".join(parts))
        if not terms:
            return None
        # neighbouring words of what the learner typed also count as a phrase
        typed = [t for t in _FTS_WORD.findall(_spelt(query)) if t not in _STOP and len(t) > 1]
        terms.extend(f"{a} {b}" for a, b in zip(typed, typed[1:], strict=False))
        return " OR ".join('"' + t + '"' for t in dict.fromkeys(terms))

    def scores(self, query: str) -> list[float]:
        out = [0.0] * self.size
        expr = self.match_expression(query)
        if expr is None:
            return out
        with self.lock:
            rows = self.db.execute("SELECT rowid, bm25(answers, ?, ?, ?) FROM answers WHERE answers MATCH ?",
                                   (*_FTS_WEIGHTS, expr)).fetchall()
        for rowid, rank in rows:
            out[int(rowid)] = -float(rank)  # FTS5's bm25() is lower-is-better
        return out


@dataclass(frozen=True, slots=True)
class _Index:
    backend: Any
    qas: tuple[QA, ...]

    @property
    def retriever(self) -> Any:  # the bm25s index, for callers that inspect it
        return getattr(self.backend, "retriever", None)


@functools.cache
def _index(backend: str | None = None) -> _Index:
    qas = _answers()
    name = backend or DEFAULT_BACKEND
    return _Index(_Fts5(qas) if name == "fts5" else _Bm25(qas), qas)


SCENE_BOOST = 1.25  # asked on a scene, that scene's answers win a close call
# A glossary answer defines a word; a course answer explains a situation. Scaled down a little, a
# definition still wins a query that is little more than the term ("hw", "purgatory?") and gives
# way when a course answer matches the question as well.
GLOSSARY_WEIGHT = 0.8


def search(query: str, limit: int = 5, scene: str | None = None, backend: str | None = None) -> list[Hit]:
    """Best-matching answers across the course and the glossary, best first; [] for an empty or
    unusable query.

    `scene`: the scene the question is asked on; its answers' scores are multiplied by
    SCENE_BOOST, so a learner on scene 05 sees scene 05's answer first when the match is close,
    while a clearly better answer elsewhere in the course still wins. `backend`: "fts5" or
    "bm25s" (default DEFAULT_BACKEND); the benchmark compares them."""
    try:
        if not isinstance(query, str):
            return []
        try:
            limit = max(1, min(int(limit), MAX_LIMIT))
        except (TypeError, ValueError):
            limit = 5
        idx = _index(backend if backend in BACKENDS else None)
        raw = idx.backend.scores(query[:MAX_QUERY_CHARS])
        scores = [
            raw[i]
            * (SCENE_BOOST if scene is not None and idx.qas[i].scene == scene else 1.0)
            * (GLOSSARY_WEIGHT if idx.qas[i].id.startswith(GLOSSARY_PREFIX) else 1.0)
            for i in range(len(idx.qas))
        ]
        asked = term_asked(query[:MAX_QUERY_CHARS])
        if asked is not None:
            i = next(i for i, qa in enumerate(idx.qas) if qa.id == asked)
            scores[i] = max(scores) + 1.0
        order = sorted(range(len(idx.qas)), key=lambda i: (-scores[i], i))
        return [Hit(idx.qas[i], round(scores[i], 4)) for i in order[:limit] if scores[i] > 0.0]
    except Exception:  # noqa: BLE001 - a search box must never break the page
        return []


def find(qa_id: str) -> QA | None:
    """The QA (or glossary answer) with this id anywhere in the course, or None."""
    for qa in _answers():
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
    text = f"In your run the controller last fenced broker {bid}, at {clock(at)}"
    before = [s for s in _steps_so_far(result) if s.get("broker") == bid and int(s.get("t_ms", 0)) <= at
              and s.get("kind") in ("broker_crash", "broker_power_loss", "broker_shutdown")]
    if before and before[-1].get("kind") == "broker_shutdown":
        text += ", as its controlled shutdown finished"
    elif before:
        gap = at - int(before[-1]["t_ms"])
        text += f", {sim_time(gap)} after it crashed and its heartbeats stopped"
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
        parts.append(f"In your run broker {b}'s fetches take {sim_time(int(ms))} longer, and it is {where}")
    else:
        parts.append("In your run no follower is slowed down right now")
    if waited:
        longest = max(waited, key=lambda p: int(p["done_ms"]) - int(p["sent_ms"]))
        took = int(longest["done_ms"]) - int(longest["sent_ms"])
        recs = _records(list(longest.get("records") or []))
        parts.append(f"your slowest acknowledged acks=all write ({recs}) "
                     f"took {sim_time(took)} from send to acknowledgement" if took >= 1000 else
                     f"your slowest acknowledged acks=all write took {sim_time(took)}")
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


# --------------------------------------------------------------------------------------------
# live answers for scenes 01, 01a and 02 (logs, keys, consumers, groups): each reads the state at
# the moment described (the step's view, else the end of the run) and the steps so far; what
# poll() returned comes from the steps, or from the run's `consumers` when there are no steps


def _partition_states(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every partition at the moment described, by partition number; one that add_partitions has
    not created yet is there too, marked `absent`."""
    from app.logdiagram import partition_state, partition_views

    view = result.get("view")
    if isinstance(view, dict):
        snaps = partition_views(view)
        parts = result.get("partitions") or []
        if len(snaps) == 1 and len(parts) > 1:  # an at_step result: each partition's own view
            snaps = [p.get("view") if isinstance(p.get("view"), dict) else None for p in parts]
    else:
        snaps = list(_snapshots(result))
    return [partition_state(snap, i) for i, snap in enumerate(snaps)]


def _existing_states(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [st for st in _partition_states(result) if not st.get("absent")]


def _clients(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    state = _state(result)
    return state.get("consumers") or {}, state.get("groups") or {}


def _received(result: dict[str, Any]) -> dict[str, list[str]]:
    from app.logdiagram import received_so_far

    if result.get("steps") is not None or isinstance(result.get("view"), dict):
        so_far = received_so_far(_steps_so_far(result))
        return {cid: [r["record"] for r in rows] for cid, rows in so_far.items()}
    return {cid: [str(r["record"]) for r in c.get("received") or []]
            for cid, c in (result.get("consumers") or {}).items()}


def _offsets_text(offsets: dict[str, Any]) -> str:
    return ", ".join(f"P{p} {o}" for p, o in sorted(offsets.items(), key=lambda kv: int(kv[0])))


def _started(consumers: dict[str, Any]) -> list[str]:
    return [cid for cid in sorted(consumers) if (consumers[cid].get("status") or "idle") != "idle"
            or consumers[cid].get("alive")]


def _reset_policy(result: dict[str, Any], cid: str) -> str | None:
    for c in (result.get("scenario") or {}).get("consumers") or []:
        if c.get("id") == cid:
            return str(c.get("auto.offset.reset", "latest"))
    return None


def live_partition_load(result: dict[str, Any]) -> str | None:
    from app.logdiagram import kept, load

    states = _partition_states(result)
    there = [st for st in states if not st.get("absent")]
    if len(there) == 1 and len(states) == 1:
        st = there[0]
        n = kept(st)
        lead = f"led by B{st['leader']}" if st["leader"] is not None else "with no leader right now"
        return (f"Your topic has one partition, {lead}, holding {n} record{'s' if n != 1 else ''}; with more "
                "partitions each would be a log of its own on a broker of its own.")
    loads = load(states)
    parts = []
    for st in there:
        kept_now = [str(e.get("record")) for e in st["log"] if int(e["offset"]) >= st["log_start"]]
        lead = f"B{st['leader']}" if st["leader"] is not None else "no leader"
        held = f"{len(kept_now)} ({_records(kept_now, 4)})" if kept_now else "nothing"
        hot = ", a hot partition" if loads.get(st["number"], {}).get("hot") else ""
        parts.append(f"P{st['number']} on {lead} holds {held}{hot}")
    missing = [f"P{st['number']}" for st in states if st.get("absent")]
    later = f" ({', '.join(missing)} not created yet)" if missing else ""
    return f"Your topic has {len(there)} partitions right now{later}: " + "; ".join(parts[:6]) + "."


def live_log_bounds(result: dict[str, Any]) -> str | None:
    states = _existing_states(result)
    parts = []
    for st in states:
        name = f"P{st['number']}"
        readable = st["hw"] - st["log_start"]
        parts.append(f"{name} has log start offset {st['log_start']}, high watermark {st['hw']} and log end "
                     f"offset {st['leo']} ({readable} record{'s' if readable != 1 else ''} to read)")
    text = "; ".join(parts[:4]) + ("; and more" if len(parts) > 4 else "") + "."
    text = text[0].upper() + text[1:]
    if all(st["log_start"] == 0 for st in states) and any(st["leo"] for st in states):
        text += (" No record has been removed: the log start offset is still 0." if len(states) == 1
                 else " No record has been removed: the log start offsets are all still 0.")
    return text


def live_committed_offsets(result: dict[str, Any]) -> str | None:
    consumers, groups = _clients(result)
    started = _started(consumers)
    if not started:
        return "No consumer has started in your run yet, so there is no position and no committed offset."
    parts = []
    for cid in started[:3]:
        c = consumers[cid]
        group = c.get("group")
        where = _offsets_text(c.get("position") or {})
        if c.get("alive"):
            text = f"{cid}'s position is {where}" if where else f"{cid} has no position yet"
        else:
            text = f"{cid} is not running, so it has no position"
        if group:
            committed = (groups.get(group) or {}).get("committed") or {}
            if committed:
                text += f"; group {group} has committed {_offsets_text(committed)}"
            else:
                policy = _reset_policy(result, cid)
                knob = f"auto.offset.reset={policy}" if policy else "auto.offset.reset"
                then = f" {knob} would decide"
                text += f"; group {group} has committed nothing, so after a restart{then} where it starts"
        parts.append(text)
    return "In your run: " + ". ".join(parts) + "."


def live_group_state(result: dict[str, Any]) -> str | None:
    consumers, groups = _clients(result)
    if not groups:
        return ("No group has formed in your run yet: a group forms in its first member's poll(), after the "
                "3 s group.initial.rebalance.delay.ms.")
    parts = []
    for gid in sorted(groups)[:3]:
        g = groups[gid]
        members = g.get("members") or {}
        who = ", ".join(f"{m} owning {', '.join(f'P{p}' for p in ps) or 'nothing'}"
                        for m, ps in sorted(members.items()))
        text = f"group {gid} is {g.get('state')} at generation {g.get('generation')}"
        text += f" with {who}" if who else " with no member"
        history = g.get("history") or []
        if history:
            text += f"; its first rebalance finished at {clock(history[0]['t_ms'])}"
        parts.append(text)
    return "In your run, " + "; ".join(parts) + "."


def live_key_partitions(result: dict[str, Any]) -> str | None:
    states = _existing_states(result)
    where: dict[str, list[int]] = {}
    for st in states:
        for e in st["log"]:
            if e.get("key") is not None and int(e["offset"]) >= st["log_start"]:
                where.setdefault(str(e["key"]), [])
                if st["number"] not in where[str(e["key"])]:
                    where[str(e["key"])].append(st["number"])
    if not where:
        return "Your run has no record with a key in the topic yet."
    keys = sorted(where)
    said = "; ".join(f"{k} in {', '.join(f'P{p}' for p in sorted(where[k]))}" for k in keys[:6])
    used = sorted({p for ps in where.values() for p in ps})
    n = len(states)
    return (f"With {n} partition{'s' if n != 1 else ''}, your keys sit like this: {said}. "
            f"{len(keys)} key{'s' if len(keys) != 1 else ''} use {len(used)} of the {n} partitions.")


def live_reset_outcome(result: dict[str, Any]) -> str | None:
    steps = _steps_so_far(result)
    # (consumer, why, policy) -> the partitions and positions it set, in the order they happened
    resets: dict[tuple[str, str, str], list[str]] = {}
    errors: list[str] = []
    out_of_range: dict[str, str] = {}
    for s in steps:
        cid = str(s.get("consumer"))
        if s.get("kind") == "consumer_out_of_range":
            out_of_range[cid] = s["text"].split(" gets ")[0].replace(f"{cid}'s fetch of ", "")
        elif s.get("kind") == "consumer_reset_offset" and s.get("offset") is not None:
            why = (f"found {out_of_range.pop(cid)} out of range" if cid in out_of_range
                   else "had no committed offset")
            resets.setdefault((cid, why, str(s.get("policy"))), []).append(
                f"P{s.get('partition_id', 0)} {s['offset']}")
        elif s.get("kind") == "consumer_error" and s.get("error"):
            errors.append(f"{cid}'s poll() threw {s['error']}")
    if not steps and result.get("consumers"):
        errors = [f"{cid}'s poll() threw {e['error']}" for cid, c in result["consumers"].items()
                  for e in c.get("errors") or []]
    parts = [f"{cid} {why}, so auto.offset.reset={policy} set its position to {', '.join(at)}"
             for (cid, why, policy), at in resets.items()]
    parts += list(dict.fromkeys(errors))[:2]
    if not parts:
        return ("No consumer in your run has needed auto.offset.reset so far: it applies only when a group "
                "with no committed offset gets a partition, or its offset is out of range.")
    return "In your run, " + "; ".join(parts[-3:]) + "."


def live_groups(result: dict[str, Any]) -> str | None:
    consumers, groups = _clients(result)
    started = _started(consumers)
    if not started:
        return "No consumer has started reading in your run yet."
    by_group: dict[str, list[str]] = {}
    for cid in started:
        c = consumers[cid]
        where = _offsets_text(c.get("position") or {}) if c.get("alive") else ""
        by_group.setdefault(str(c.get("group") or cid), []).append(
            f"{cid} at {where}" if where else f"{cid} ({'no position yet' if c.get('alive') else 'stopped'})")
    parts = []
    for gid in sorted(by_group):
        committed = (groups.get(gid) or {}).get("committed") or {}
        said = f"committed {_offsets_text(committed)}" if committed else "nothing committed"
        parts.append(f"{gid}: {', '.join(by_group[gid])}, {said}")
    n = len(by_group)
    return (f"Your run has {n} group{'s' if n != 1 else ''} reading the topic, each on its own: "
            + "; ".join(parts) + ".")


def live_received(result: dict[str, Any]) -> str | None:
    got = _received(result)
    got = {cid: recs for cid, recs in got.items() if recs}
    if not got:
        return "poll() has returned no record to any consumer in your run yet."
    parts = []
    for cid in sorted(got)[:3]:
        recs = got[cid]
        twice = sorted({r for r in recs if recs.count(r) > 1})
        text = f"{cid} has received {_records(recs, 8)}"
        if twice:
            text += f", so {_records(twice, 4)} went through its processing more than once"
        parts.append(text)
    return "In your run, " + "; ".join(parts) + "."


def live_lag(result: dict[str, Any]) -> str | None:
    consumers, groups = _clients(result)
    states = {st["number"]: st for st in _partition_states(result)}
    parts = []
    for cid in _started(consumers)[:3]:
        c = consumers[cid]
        group = c.get("group") or cid
        for p, pos in sorted((c.get("position") or {}).items(), key=lambda kv: int(kv[0])):
            st = states.get(int(p))
            if st is None or not c.get("alive"):
                continue
            behind = max(0, st["hw"] - int(pos))
            committed = ((groups.get(group) or {}).get("committed") or {}).get(p)
            text = (f"group {group} in P{p}: HW {st['hw']}, {cid}'s position {pos}, so {behind} record"
                    f"{'s' if behind != 1 else ''} behind")
            if committed is not None:
                lag = max(0, st["hw"] - int(committed))
                text += f"; measured from its committed offset {committed}, {lag}"
            else:
                text += "; with nothing committed, a tool that reads committed offsets cannot measure it"
            parts.append(text)
    if not parts:
        return "No running consumer has a position in your run yet, so there is no lag to measure."
    return ". ".join(p[0].upper() + p[1:] for p in parts[:4]) + "."


# live answers for scenes 02a and 03 (segments and retention, skipped records, the partitioner)


def live_offsets_partition(result: dict[str, Any]) -> str | None:
    from engine.offsets import offsets_partition_for

    consumers, groups = _clients(result)
    parts = []
    for gid in sorted(groups)[:3]:
        g = groups[gid]
        committed = g.get("committed") or {}
        holds = f"it holds {_offsets_text(committed)}" if committed else "it holds no committed offset yet"
        parts.append(f"group {gid} maps to __consumer_offsets partition {g.get('offsets_partition')}, whose "
                     f"leader B{g.get('coordinator')} is its coordinator; {holds}")
    if parts:
        return "In your run, " + "; ".join(parts) + "."
    ids = sorted({str(c.get("group.id")) for c in (result.get("scenario") or {}).get("consumers") or []
                  if c.get("group.id")})
    if not ids:
        return "No consumer group has formed in your run yet."
    maps = ", ".join(f"{gid} to partition {offsets_partition_for(gid)}" for gid in ids[:3])
    return (f"No group has formed in your run yet; when one does, its commits go to __consumer_offsets: "
            f"{maps}.")


def _segment_span(seg: dict[str, Any]) -> str:
    base, nxt = int(seg["base_offset"]), int(seg["next_offset"])
    if nxt - base > 1:
        return f"{base}-{nxt - 1}"
    return str(base) if nxt > base else f"{base} (empty)"


def live_segments(result: dict[str, Any]) -> str | None:
    from app.logdiagram import bytes_text

    states = _existing_states(result)
    topic = (result.get("scenario") or {}).get("topic") or {}
    parts = []
    for st in states[:3]:
        segs = st["segments"]
        if not segs:
            continue
        total = sum(int(x["bytes"]) for x in segs)
        listed = ", ".join(_segment_span(x) + f" {bytes_text(int(x['bytes']))}" for x in segs)
        many = "s" if len(segs) != 1 else ""
        text = (f"P{st['number']} has {len(segs)} segment{many} ({listed}; the last is active), "
                f"{bytes_text(total)} in all, from log start offset {st['log_start']}")
        limit = topic.get("retention.bytes")
        if isinstance(limit, int) and limit >= 0:
            text += (f"; retention.bytes={limit} keeps at least that much, so "
                     + ("nothing more can go" if total - int(segs[0]["bytes"]) < limit or len(segs) == 1
                        else "the oldest segment can go at the next check"))
        parts.append(text)
    if not parts:
        return "Your run reports no segments at this step."
    deletions = [x for x in _steps_so_far(result) if x.get("kind") == "broker_delete_segments"]
    text = "In your run, " + "; ".join(parts) + "."
    if deletions:
        last = deletions[-1]
        text += f" Last deletion, at {clock(last['t_ms'])}: {last['text']}."
    return text


def _scenario_topic(result: dict[str, Any]) -> dict[str, Any]:
    return (result.get("scenario") or {}).get("topic") or {}


def _sent_at(steps: list[dict[str, Any]]) -> dict[str, int]:
    """When the producer sent each record (its CreateTime, the timestamp retention reads)."""
    out: dict[str, int] = {}
    for x in steps:
        if x.get("kind") == "producer_send":
            for r in x.get("records") or []:
                out.setdefault(str(r), int(x["t_ms"]))
    return out


def live_retention_time(result: dict[str, Any]) -> str | None:
    """When the oldest segment of each partition passes retention.ms, from its newest record."""
    states = _existing_states(result)
    steps = _steps_so_far(result)
    topic = _scenario_topic(result)
    keep_ms = int(topic.get("retention.ms", 604_800_000))
    timing = (result.get("scenario") or {}).get("timing") or {}
    every = int(timing.get("log.retention.check.interval.ms", 300_000))
    sent = _sent_at(steps)
    now = int(_state(result).get("t_ms", 0))
    for st in states:
        segs = [x for x in st["segments"] if int(x["next_offset"]) > int(x["base_offset"])]
        if not segs:
            continue
        oldest = segs[0]
        newest = [str(e.get("record")) for e in st["log"]
                  if int(oldest["base_offset"]) <= int(e["offset"]) < int(oldest["next_offset"])]
        born = max((sent[r] for r in newest if r in sent), default=None)
        if born is None:
            continue
        due = born + keep_ms
        check = 30_000 if due < 30_000 else 30_000 + -(-(due - 30_000) // every) * every
        if check == due:
            check += every  # the rule is strict: older than retention.ms
        span = _segment_span(oldest)
        text = (f"In your run P{st['number']}'s oldest segment ({span}) has its newest record from "
                f"{clock(born)}; with retention.ms={keep_ms} it may go after {clock(due)}, so at "
                f"the check at {clock(check)}")
        text += f", {sim_time(check - now)} from now." if check > now else ", which has passed."
        return text
    return "In your run no partition holds a record yet, so no segment can age out."


def live_retention_size(result: dict[str, Any]) -> str | None:
    states = _existing_states(result)
    limit = _scenario_topic(result).get("retention.bytes", -1)
    if not isinstance(limit, int) or limit < 0:
        return ("In your run retention.bytes is -1, so size never deletes anything; set it to see the floor "
                "at work.")
    parts = []
    for st in states[:3]:
        sizes = [int(x["bytes"]) for x in st["segments"]]
        total = sum(sizes)
        keep = total
        gone = 0
        for size in sizes[:-1]:  # never the active segment (unless retention.bytes is 0)
            if keep - size < limit:
                break
            keep -= size
            gone += 1
        verdict = (f"the next check would delete {gone} segment{'s' if gone != 1 else ''} and keep {keep} "
                   "bytes" if gone else "the next check would delete nothing")
        many = "s" if len(sizes) != 1 else ""
        parts.append(f"P{st['number']} holds {total} bytes in {len(sizes)} segment{many} against "
                     f"retention.bytes={limit}: {verdict}")
    return "In your run, " + "; ".join(parts) + "."


def live_fell_behind(result: dict[str, Any]) -> str | None:
    if any(x.get("kind") == "consumer_out_of_range" for x in _steps_so_far(result)):
        return live_reset_outcome(result)  # it has happened: say what the consumer did
    consumers, groups = _clients(result)
    states = {st["number"]: st for st in _existing_states(result)}
    for gid in sorted(groups):
        for p, off in sorted((groups[gid].get("committed") or {}).items()):
            st = states.get(int(p))
            if st is not None and int(off) < st["log_start"]:
                policy = next((str(c.get("auto.offset.reset", "latest"))
                               for c in (result.get("scenario") or {}).get("consumers") or []
                               if c.get("group.id") == gid), "latest")
                return (f"In your run the committed offset of group {gid}, {off}, is below P{p}'s log start "
                        f"offset {st['log_start']}: the next member's fetch there gets OFFSET_OUT_OF_RANGE, "
                        f"and auto.offset.reset={policy} decides where it goes.")
    return live_reset_outcome(result)


def live_producer_metadata(result: dict[str, Any]) -> str | None:
    from app.logdiagram import producer_metadata

    steps = _steps_so_far(result)
    states = _partition_states(result)
    there = sum(1 for st in states if not st.get("absent"))
    known = producer_metadata(result.get("scenario") or {}, steps)
    refreshes = [x for x in steps if x.get("kind") == "producer_metadata_refresh"]
    if known == there:
        many = "s" if there != 1 else ""
        text = f"In your run the producer's metadata shows all {there} partition{many} of the topic"
        if refreshes:
            text += f"; it learned the last count in its refresh at {clock(refreshes[-1]['t_ms'])}"
        return text + ", so keys hash over that count."
    return (f"In your run the topic has {there} partitions but the producer's metadata still shows {known}, "
            f"so it keeps hashing keys over {known} until its next refresh (metadata.max.age.ms).")


def live_sticky(result: dict[str, Any]) -> str | None:
    steps = _steps_so_far(result)
    draws = [x for x in steps if x.get("kind") == "producer_sticky_partition"]
    if not draws:
        return ("The producer in your run has not sent a record without a key yet (nor a keyed one with "
                "partitioner.ignore.keys=true), so the sticky partitioner has not drawn a partition.")
    picked = [f"P{x.get('partition')}" for x in draws]
    repeats = sum(1 for a, b in zip(picked, picked[1:], strict=False) if a == b)
    times = f"{len(draws)} time{'s' if len(draws) != 1 else ''}"
    text = f"In your run the sticky partitioner has drawn {times}: {', '.join(picked[:8])}"
    if repeats:
        text += f"; {repeats} of those draws picked the partition it was already on"
    return text + "."


LIVE["live_partition_load"] = live_partition_load
LIVE["live_log_bounds"] = live_log_bounds
LIVE["live_committed_offsets"] = live_committed_offsets
LIVE["live_group_state"] = live_group_state
LIVE["live_key_partitions"] = live_key_partitions
LIVE["live_reset_outcome"] = live_reset_outcome
LIVE["live_groups"] = live_groups
LIVE["live_received"] = live_received
LIVE["live_lag"] = live_lag
LIVE["live_offsets_partition"] = live_offsets_partition
LIVE["live_segments"] = live_segments
LIVE["live_retention_time"] = live_retention_time
LIVE["live_retention_size"] = live_retention_size
LIVE["live_fell_behind"] = live_fell_behind
LIVE["live_producer_metadata"] = live_producer_metadata
LIVE["live_sticky"] = live_sticky


# --------------------------------------------------------------------------------------------
# live answers for scene 05a (log compaction): each reads the partition at the current step (its
# log with the cleaner's gaps and tombstones, its segments and cleaner point) and the cleaner's
# steps so far; the numbers the cleaner decides on (the dirty ratio) are the engine's, quoted
# from its steps, never worked out here


def _compacted_partition(result: dict[str, Any]) -> dict[str, Any] | None:
    states = _existing_states(result)
    return states[0] if len(states) == 1 else None


Answer = Callable[[dict[str, Any]], str | None]


def _on_compacted_partition(answer: Callable[[dict[str, Any], dict[str, Any]], str | None]) -> Answer:
    """A live answer about the compacted partition at this step: None when the run has not exactly one."""

    @functools.wraps(answer)
    def live(result: dict[str, Any]) -> str | None:
        st = _compacted_partition(result)
        return None if st is None else answer(result, st)

    return live


def _kept_entries(st: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in st["log"] if st["log_start"] <= int(e["offset"]) < st["leo"]]


def _cleaner_steps(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in _steps_so_far(result) if str(s.get("kind", "")).startswith("cleaner_")]


@_on_compacted_partition
def live_keys_in_log(result: dict[str, Any], st: dict[str, Any]) -> str | None:
    entries = [e for e in _kept_entries(st) if e.get("key") is not None]
    if not entries:
        return "At this step the partition holds no keyed record yet."
    offsets: dict[str, list[int]] = {}
    for e in entries:
        offsets.setdefault(str(e["key"]), []).append(int(e["offset"]))
    twice = [f"{k} {len(o)} times (offsets {', '.join(map(str, o))})"
             for k, o in offsets.items() if len(o) > 1]
    n, keys = len(entries), len(offsets)
    text = f"At this step P{st['number']} holds {n} record{'s' * (n != 1)} for {keys} key{'s' * (keys != 1)}"
    if twice:
        return text + f": {'; '.join(twice[:3])}. A reader applies them in order and the later one wins."
    return text + ": exactly one per key right now, which will last only until a key is written again."


@_on_compacted_partition
def live_dirty_ratio(result: dict[str, Any], st: dict[str, Any]) -> str | None:
    if not st["segments"]:
        return None
    active = int(st["segments"][-1]["base_offset"])
    point = st.get("cleaner_point")
    where = (f"the cleaner point is {point} and the active segment, which is never cleaned, starts at "
             f"{active}" if point is not None else f"the active segment, never cleaned, starts at {active}")
    told = [s for s in _cleaner_steps(result) if s.get("kind") in ("cleaner_check", "cleaner_offset_map")]
    if not told:
        return (f"In your run no check has looked at a rolled segment yet (the cleaner checks every "
                f"log.cleaner.backoff.ms); {where}.")
    last = told[-1]
    ratio = float(last.get("ratio") or 0.0)
    verdict = ("so it cleaned" if last.get("kind") == "cleaner_offset_map"
               else "not above the minimum, so it did not clean")
    return (f"The cleaner's last check in your run, at {clock(int(last['t_ms']))}, found a dirty ratio of "
            f"{ratio:.2f}, {verdict}; now {where}.")


@_on_compacted_partition
def live_tombstones(result: dict[str, Any], st: dict[str, Any]) -> str | None:
    from app.logdiagram import horizons_so_far, is_tombstone

    horizons = horizons_so_far(_steps_so_far(result))
    here = [e for e in _kept_entries(st) if is_tombstone(e)]
    gone = [int(o) for s in _cleaner_steps(result) if s.get("kind") == "cleaner_tombstone_expired"
            for o in s.get("removed") or []]
    parts = []
    for e in here[:3]:
        horizon = horizons.get((st["number"], int(e["offset"])))
        when = (f", kept by every pass until {clock(int(horizon))}, its delete horizon" if horizon is not None
                else ", not yet stamped with a delete horizon (no pass has kept it yet)")
        parts.append(f"the tombstone for {e.get('key')} at offset {e['offset']} is in the log{when}")
    if gone:
        parts.append(f"a pass after the horizon removed the tombstone{'s' * (len(gone) > 1)} at "
                     f"{', '.join(map(str, gone))}")
    if not parts:
        return "In your run no key has been deleted yet: there is no tombstone in the log."
    text = "; ".join(parts)
    return f"In your run {text}."


def _as_timeline(result: dict[str, Any]) -> Any:
    """The few fields app.challenges reads from a timeline, from a live answer's context."""
    from types import SimpleNamespace

    steps = _steps_so_far(result)
    return SimpleNamespace(scenario=result.get("scenario") or {}, result=result, steps=steps,
                           step=len(steps), view=_state(result))


def live_readers_vs_tombstones(result: dict[str, Any]) -> str | None:
    from app.challenges import miss_delete

    _met, said = miss_delete(_as_timeline(result))
    return "In your run " + said.rstrip(".") + "."


@_on_compacted_partition
def live_log_gaps(result: dict[str, Any], st: dict[str, Any]) -> str | None:
    from app.logdiagram import cleaned_runs

    runs = cleaned_runs(st)
    point = st.get("cleaner_point")
    where = (f"; the clean section ends at the cleaner point, {point}, and the dirty section runs from there "
             f"to the log end offset {st['leo']}" if point is not None and point > st["log_start"] else
             "; no pass has cleaned anything yet, so all of it is the dirty section")
    if not runs:
        return (f"At this step P{st['number']} has no gap: offsets {st['log_start']} to {st['leo'] - 1} are "
                f"all there{where}.")
    spans = [f"{r['first']}-{r['last']}" if r["last"] > r["first"] else str(r["first"]) for r in runs]
    gaps = "a gap" if len(spans) == 1 else "gaps"
    return (f"At this step P{st['number']} still starts at offset {st['log_start']}, with {gaps} at "
            f"{', '.join(spans[:5])}: a fetch there returns the next record left{where}.")


@_on_compacted_partition
def live_table(result: dict[str, Any], st: dict[str, Any]) -> str | None:
    from app.logdiagram import is_tombstone

    table: dict[str, str] = {}
    entries = [e for e in _kept_entries(st) if e.get("key") is not None and int(e["offset"]) < st["hw"]]
    for e in entries:
        if is_tombstone(e):
            table.pop(str(e["key"]), None)
        else:
            table[str(e["key"])] = str(e.get("record"))
    if not entries:
        return "At this step there is nothing to read yet, so a rebuilt table would be empty."
    rows = ", ".join(f"{k}={v}" for k, v in sorted(table.items())) or "nothing"
    n = len(entries)
    return (f"A reader starting at offset 0 now reads {n} record{'s' * (n != 1)} and ends with {rows}: "
            "the same table the full history gives.")


LIVE["live_keys_in_log"] = live_keys_in_log
LIVE["live_dirty_ratio"] = live_dirty_ratio
LIVE["live_tombstones"] = live_tombstones
LIVE["live_readers_vs_tombstones"] = live_readers_vs_tombstones
LIVE["live_log_gaps"] = live_log_gaps
LIVE["live_table"] = live_table
# live answers for scene 08 (exactly-once): producer ids, epochs and sequences, what each leader
# remembers, and the duplicates ledger, all at the moment described (app/eos.py reads them)


def _partition_snaps(result: dict[str, Any]) -> list[dict[str, Any] | None]:
    from app.logdiagram import partition_views

    view = result.get("view")
    return partition_views(view) if isinstance(view, dict) else list(_snapshots(result))


def live_producer_ids(result: dict[str, Any]) -> str | None:
    rows = eos.sessions(_partition_snaps(result))
    if not rows:
        return ("No producer in your run has numbered a batch so far: without idempotence a producer has no "
                "producer id and sends no sequence numbers.")
    parts = []
    for r in rows[:3]:
        nxt = ", ".join(f"{n} for P{p}" for p, n in sorted(r["next"].items()))
        life = "" if r["alive"] else " (that process has died)"
        parts.append(f"{r['producer']} has producer id {r['producer_id']}, epoch {r['epoch']}, and will "
                     f"give its next batch sequence {nxt}{life}")
    text = "In your run " + "; ".join(parts) + "."
    if len({r["producer_id"] for r in rows}) > 1 and len({r["producer"] for r in rows}) < len(rows):
        text += " A restart gave the same producer a new id, so the leader cannot match the two processes."
    return text


def live_leader_sequences(result: dict[str, Any]) -> str | None:
    parts = []
    for p, snap in enumerate(_partition_snaps(result)):
        for r in eos.remembered(snap)[:3]:
            ranges = ", ".join(f"{a}-{b}" if b > a else str(a) for a, b, _c, _d in r["batches"])
            parts.append(f"P{p}'s leader remembers producer id {r['producer_id']} at epoch {r['epoch']}, "
                         f"last sequence {r['last_sequence']} (batches {ranges})")
    if not parts:
        return ("No leader in your run holds a batch with a producer id yet, so none has anything to "
                "compare a retry with.")
    return "In your run " + "; ".join(parts[:4]) + "."


def live_duplicates(result: dict[str, Any]) -> str | None:
    dups = eos.duplicates(_partition_snaps(result))
    steps = _steps_so_far(result)
    deduped = sum(1 for s in steps if s.get("kind") == "leader_dedupe_idempotent")
    retries = sum(1 for s in steps if s.get("kind") == "producer_retry")
    if dups:
        return f"In your run the log now holds {_records(dups)} twice, a duplicate from a retry."
    if deduped:
        return (f"In your run a leader recognised {deduped} retried batch{'es' if deduped != 1 else ''} and "
                "answered with the original offsets: no record is in the log twice.")
    if retries:
        return "In your run a batch was retried, and no record is in the log twice."
    return "In your run nothing has been retried so far, and no record is in the log twice."


def live_transactions(result: dict[str, Any]) -> str | None:
    state = _state(result)
    txns = state.get("transactions") or {}
    parts = [f"the coordinator B{m['coordinator']} has {tid} at producer id {m['producer_id']}, epoch "
             f"{m['epoch']}, state {m['state']}" for tid, m in sorted(txns.items())]
    for p, snap in enumerate(_partition_snaps(result)):
        part = (snap or {}).get("partition") or {}
        if part.get("lso") is not None:
            lso, hw = int(part["lso"]), int(part.get("hw") or 0)
            held = " (read_committed readers wait there)" if lso < hw else ""
            parts.append(f"P{p}'s last stable offset is {lso} and its high watermark {hw}{held}")
    if not txns:
        parts.insert(0, "no producer has a transactional.id, so nothing is transactional")
    return "In your run " + "; ".join(parts[:4]) + "."


LIVE["live_transactions"] = live_transactions
LIVE["live_producer_ids"] = live_producer_ids
LIVE["live_leader_sequences"] = live_leader_sequences
LIVE["live_duplicates"] = live_duplicates
# live answers for scene 07 (rebalancing): a group that several consumers share, read from the
# view at the current step (its state, generation, history, members) and the steps so far

def _shared_group(result: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The first group several consumers of the scenario share, and its state at this step
    ({} when it has not formed yet); None when no group is shared."""
    from app.groupview import shared_groups

    consumers, groups = _clients(result)
    scenario = result.get("scenario")
    if not isinstance(scenario, dict):  # a bare engine result: the consumers at that moment tell
        scenario = {"consumers": [{"id": cid, "group.id": c.get("group")} for cid, c in consumers.items()]}
    shared = shared_groups(scenario)
    if not shared:
        return None
    return shared[0], groups.get(shared[0]) or {}


def _on_shared_group(answer: Callable[[dict[str, Any], str, dict[str, Any]], str | None]) -> Answer:
    """A live answer about the group several consumers share, at this step: None when none is shared."""

    @functools.wraps(answer)
    def live(result: dict[str, Any]) -> str | None:
        found = _shared_group(result)
        return None if found is None else answer(result, *found)

    return live


def _strategy(result: dict[str, Any]) -> str | None:
    for c in (result.get("scenario") or {}).get("consumers") or []:
        if c.get("group.id"):
            listed = c.get("partition.assignment.strategy") or ConsumerConfig.partition_assignment_strategy
            return ", ".join(listed)
    return None


def _assignment_text(assignment: dict[str, Any]) -> str:
    return "; ".join(f"{m} {', '.join(f'P{p}' for p in ps) or 'nothing'}"
                     for m, ps in sorted(assignment.items()))


@_on_shared_group
def live_group_protocol(result: dict[str, Any], gid: str, g: dict[str, Any]) -> str | None:
    strategy = _strategy(result)
    listed = f"Your consumers list [{strategy}]; " if strategy else ""
    if not g.get("protocol") or not g.get("history"):
        text = f"{listed}group {gid} has not completed its first rebalance at this step."
        return text[0].upper() + text[1:]
    assignor = g.get("assignor") or "first common"
    if strategy:
        return (f"Your consumers list [{strategy}], so group {gid} rebalances {g['protocol']}, and the vote "
                f"picked the {assignor} assignor.")
    return (f"In your run group {gid} rebalances {g['protocol']}, with the {assignor} assignor its members "
            "voted for.")


@_on_shared_group
def live_generations(result: dict[str, Any], gid: str, g: dict[str, Any]) -> str | None:
    history = g.get("history") or []
    if not history:
        state = g.get("state") or "not formed"
        return f"Group {gid} has not completed a rebalance yet at this step ({state})."
    said = "; ".join(f"generation {h['generation']} at {clock(int(h['t_ms']))}"
                     + (f" ({h['reason']})" if h.get("reason") else "") for h in history[-3:])
    n = len(history)
    return (f"Group {gid} is {g.get('state')} at generation {g.get('generation')}, after {n} completed "
            f"rebalance{'s' if n != 1 else ''}: {said}.")


@_on_shared_group
def live_group_leader(result: dict[str, Any], gid: str, g: dict[str, Any]) -> str | None:
    history = g.get("history") or []
    if not history or not g.get("leader"):
        return f"Group {gid} has no leader yet at this step: no join phase has completed."
    last = history[-1]
    coordinator = f"B{g['coordinator']}" if g.get("coordinator") is not None else "the coordinator"
    assignor = last.get("protocol") or g.get("assignor") or "group"
    result_text = _assignment_text(last.get("assignment") or {})
    return (f"In your run {g['leader']} leads group {gid}: for generation {last['generation']} it ran the "
            f"{assignor} assignor ({result_text}), and {coordinator} only stored and handed out the result.")


@_on_shared_group
def live_member_timers(result: dict[str, Any], gid: str, _g: dict[str, Any]) -> str | None:
    consumers, _groups = _clients(result)
    specs = (result.get("scenario") or {}).get("consumers") or []
    spec = next((c for c in specs if c.get("group.id") == gid), {})
    session = int(spec.get("session.timeout.ms", ConsumerConfig.session_timeout_ms))  # the engine's defaults
    poll = int(spec.get("max.poll.interval.ms", ConsumerConfig.max_poll_interval_ms))
    now = int((result.get("view") or {}).get("t_ms", 0))
    notes = []
    for s in _steps_so_far(result):
        cid = str(s.get("consumer"))
        if s.get("kind") == "consumer_crash" and not (consumers.get(cid) or {}).get("alive"):
            notes.append(f"{cid} crashed at {clock(int(s['t_ms']))} and has sent no heartbeat since")
        elif s.get("kind") == "consumer_stall":
            if int(s["t_ms"]) + int(s["ms"]) > now:  # the engine's consumer_stall step carries its ms
                notes.append(f"{cid}'s application has been busy since {clock(int(s['t_ms']))}, so it has "
                             "not called poll(), while its heartbeat thread keeps heartbeating")
        elif s.get("kind") == "consumer_poll_timeout":
            notes.append(f"{cid}'s heartbeat thread gave up at {clock(int(s['t_ms']))}: no poll() for "
                         f"{sim_time(poll)}")
    head = (f"In your run session.timeout.ms is {session} ({sim_time(session)}) and max.poll.interval.ms "
            f"is {poll} ({sim_time(poll)})")
    if not notes:
        return head + "; every member of the group is heartbeating and polling at this step."
    return f"{head}; " + "; ".join(notes[-3:]) + "."


@_on_shared_group
def live_commits(result: dict[str, Any], _gid: str, _g: dict[str, Any]) -> str | None:
    done = []
    for s in _steps_so_far(result):
        if s.get("kind") == "consumer_commit":
            done.append(f"{s.get('consumer')}'s commit at {clock(int(s['t_ms']))} was accepted")
        elif s.get("kind") == "consumer_error" and s.get("request") == "OffsetCommit":
            when = clock(int(s["t_ms"]))
            done.append(f"{s.get('consumer')}'s commit at {when} was refused with {s['error']}")
    if not done:
        return "No member has committed in your run yet at this step; here every member commits by hand."
    return "In your run " + "; ".join(done[-3:]) + "."


@_on_shared_group
def live_downtime(result: dict[str, Any], gid: str, g: dict[str, Any]) -> str | None:
    consumers, _groups = _clients(result)
    revoked: dict[str, dict[str, Any]] = {}
    for s in _steps_so_far(result):
        if s.get("kind") in ("consumer_revoke", "consumer_partitions_lost"):
            revoked[str(s.get("consumer"))] = s
    waiting, working = [], []
    for cid, c in sorted(consumers.items()):
        if c.get("group") != gid or not c.get("alive"):
            continue
        if c.get("assigned"):
            working.append(f"{cid} ({', '.join(f'P{p}' for p in sorted(c['assigned']))})")
        elif cid in revoked:
            s = revoked[cid]
            parts = ", ".join(f"P{p}" for p in s.get("partitions") or [])
            when = clock(int(s["t_ms"]))
            waiting.append(f"{cid} gave up {parts or 'its partitions'} at {when} and processes nothing")
        else:
            waiting.append(f"{cid} has no partition yet")
    if not waiting:
        return (f"At this step every running member of {gid} is processing: " + "; ".join(working)
                + ". The line under each run adds up each partition's idle time so far.")
    text = "At this step " + "; ".join(waiting)
    if working:
        text += "; still processing: " + ", ".join(working)
    return text + f". Group {gid} is {g.get('state') or 'not formed'}."


@_on_shared_group
def live_assignment_changes(result: dict[str, Any], gid: str, g: dict[str, Any]) -> str | None:
    history = g.get("history") or []
    if len(history) < 2:
        first = history[0] if history else None
        if first is None:
            return f"Group {gid} has not handed out partitions yet at this step."
        return (f"Group {gid} has had one assignment so far, generation {first['generation']}: "
                f"{_assignment_text(first.get('assignment') or {})}.")
    before, after = history[-2], history[-1]

    def owner_map(h: dict[str, Any]) -> dict[int, str]:
        return {int(p): m for m, ps in (h.get("assignment") or {}).items() for p in ps}

    old, new = owner_map(before), owner_map(after)
    moved = [f"P{p} {old.get(p, 'nobody')} to {new.get(p, 'nobody')}" for p in sorted(set(old) | set(new))
             if old.get(p) != new.get(p)]
    kept = [f"P{p}" for p in sorted(new) if old.get(p) == new[p]]
    return (f"From generation {before['generation']} to {after['generation']} of {gid}: "
            + (("moved " + ", ".join(moved)) if moved else "nothing moved")
            + (f"; kept their owner: {', '.join(kept)}" if kept else "") + ".")


LIVE["live_group_protocol"] = live_group_protocol
LIVE["live_generations"] = live_generations
LIVE["live_group_leader"] = live_group_leader
LIVE["live_member_timers"] = live_member_timers
LIVE["live_commits"] = live_commits
LIVE["live_downtime"] = live_downtime
LIVE["live_assignment_changes"] = live_assignment_changes
