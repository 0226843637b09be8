"""The staff-engineer Q&A panel: scene questions, the open answer, live answers and search.

`app/qa.py` (owned by the Q&A module) does the searching and writes the live sentences; this
presenter only arranges them for the template. It tolerates the small shape differences a
search backend may have (a list of QA objects, of (QA, score) pairs, or of dicts).
"""

from __future__ import annotations

from typing import Any

from app.prose import inline
from app.simulation import Timeline
from app.sources import citation_url
from app.state import SceneState

SEARCH_RESULTS = 5


def _qa_module():
    try:
        from app import qa as qa_module  # owned by the Q&A teammate; absent in early checkouts
    except ImportError:
        return None
    return qa_module


def _field(item: Any, name: str, default: Any = None) -> Any:
    if isinstance(item, dict):
        return item.get(name, default)
    return getattr(item, name, default)


def _paragraphs(text: str) -> list[str]:
    return [inline(p.strip()) for p in (text or "").split("\n\n") if p.strip()]


def _sources(item: Any) -> list[dict[str, Any]]:
    out = []
    for source in _field(item, "sources", []) or []:
        text = str(source)
        out.append({"text": text, "url": citation_url(text)})
    return out


# The run's end-of-timeline fields: a live answer describes the current step, so it never sees them
# (the step's view carries the engine's ledger as of that step instead).
END_OF_RUN_KEYS = ("final", "acked_records", "lost_acked_records", "visible_records", "duplicate_records",
                   # the clients' end of run (contract part 2): the step's view has its own consumers
                   # and groups, and the steps so far hold the polls and commits made by then
                   "polls", "commits", "consumers", "groups",
                   # a partition's contract fields describe the end of the run too
                   "leader", "hw", "leo", "lso", "log_start_offset", "log")


def live_context(timeline: Timeline) -> dict[str, Any]:
    """What a live answer may read: the state at the current step (its `view`, with the ledger as
    of that step), the steps so far, the batches the scenario produces (app/qa.py keeps only those
    the ledger knows of by then), and each partition's state at this step."""
    context = {k: v for k, v in timeline.result.items() if k not in END_OF_RUN_KEYS}
    context.update(
        view=timeline.view,
        at_step=timeline.step,
        steps=timeline.steps[: timeline.step],
        scenario=timeline.scenario,
    )
    if "partitions" in context:
        context["partitions"] = [
            {k: v for k, v in p.items() if k not in END_OF_RUN_KEYS} for p in timeline.partitions
        ]
    return context


def _live_answer(qa_module: Any, item: Any, timeline: Timeline) -> str | None:
    if qa_module is None or not _field(item, "live"):
        return None
    try:
        answer = qa_module.live_answer(item, live_context(timeline))
    except Exception:  # a live sentence is a bonus; the static answer still stands
        return None
    return str(answer) if answer else None


def qa_panel(scene: Any, state: SceneState, timeline: Timeline, *, embed: bool) -> dict[str, Any]:
    qa_module = _qa_module()
    questions = []
    opened = None
    for item in scene.qa:
        is_open = item.id == state.q
        questions.append(
            {
                "id": item.id,
                "question": item.question,
                "open": is_open,
                "live": bool(item.live),
            }
        )
        if is_open:
            opened = {
                "id": item.id,
                "question": item.question,
                "answer": _paragraphs(item.answer),
                "sources": _sources(item),
                "live": _live_answer(qa_module, item, timeline),
            }
    unknown_q = state.q is not None and opened is None
    results = []
    searched = False
    if state.ask:
        searched = True
        if qa_module is not None:
            found = qa_module.search(state.ask, SEARCH_RESULTS, scene=scene.id)
        else:
            words = {w for w in state.ask.lower().split() if len(w) > 2}
            found = [q for q in scene.qa if words & set((q.question + " " + q.answer).lower().split())]
        for hit in list(found)[:SEARCH_RESULTS]:
            item = hit[0] if isinstance(hit, tuple) else hit
            item = _field(item, "qa", None) or item  # a search hit wraps its QA
            results.append(
                {
                    "id": _field(item, "id"),
                    "question": _field(item, "question"),
                    "answer": _paragraphs(_field(item, "answer", "")),
                    "sources": _sources(item),
                    "scene": _field(item, "scene"),
                    "live": _live_answer(qa_module, item, timeline)
                    if _field(item, "scene") == scene.id
                    else None,
                }
            )
    return {
        "questions": questions,
        "opened": opened,
        "unknown_q": unknown_q,
        "ask": state.ask or "",
        "results": results,
        "searched": searched,
    }
