"""docs/scenario-format.md against the engine: the generated field tables are current, every
documented scenario field exists in the models and every model field is documented, every
action has an example, and the result tables list exactly the fields results have.

Regenerate the tables with `python -m engine schema --write-docs docs/scenario-format.md`.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

import engine
from engine.scenario import (
    _ACTION_MODELS,
    BrokerSpec,
    ConsumerSpec,
    ControllerSpec,
    ProducerItem,
    ProducerSpec,
    Scenario,
    TimingSpec,
    TopicSpec,
)
from engine.schema import action_names, field_tables, fill_generated, stale_blocks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "scenario-format.md"
REGENERATE = "python -m engine schema --write-docs docs/scenario-format.md"

SECTION_MODELS = {
    "scenario": Scenario,
    "brokers": BrokerSpec,
    "topic": TopicSpec,
    "controller": ControllerSpec,
    "producer": ProducerSpec,
    "producers": ProducerItem,
    "consumers": ConsumerSpec,
    "timing": TimingSpec,
}
_BLOCK = re.compile(r"<!-- generated: ([a-z0-9_-]+) -->\n(.*?)<!-- end generated -->", re.S)
_SCENARIO_BLOCK = re.compile(r"```json scenario\n(.*?)\n```", re.S)


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _first_cells(table: str) -> list[str]:
    """The first column of a Markdown table, backticks stripped, header and rule left out."""
    rows = [line for line in table.splitlines() if line.startswith("|")]
    return [row.split("|")[1].strip().strip("`") for row in rows[2:]]


# ---------------------------------------------------------------------------------------------
# scenario fields


def test_generated_blocks_are_current(page: str) -> None:
    stale = stale_blocks(page)
    assert not stale, f"docs/scenario-format.md is out of date in {', '.join(stale)}; run {REGENERATE}"


def _model_fields(model: Any) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _expected_fields() -> dict[str, list[str]]:
    """Block name -> the contract's field names, straight from the models (not the generator)."""
    out = {block: _model_fields(model) for block, model in SECTION_MODELS.items()}
    for model in _ACTION_MODELS:
        for do in model.model_fields["do"].annotation.__args__:
            out[f"action-{do}"] = _model_fields(model)
    return out


def field_doc_problems(text: str) -> list[str]:
    """Where the page's field tables and the models disagree, in both directions."""
    problems: list[str] = []
    expected = _expected_fields()
    documented = {name: _first_cells(body) for name, body in _BLOCK.findall(text)}
    for block, names in expected.items():
        if block not in documented:
            problems.append(f"no table for {block}")
            continue
        for name in documented[block]:
            if name not in names:
                problems.append(f"{block}: documented field {name!r} does not exist in the models")
        for name in names:
            if name not in documented[block]:
                problems.append(f"{block}: model field {name!r} is not documented")
    return problems


def test_every_documented_field_exists_and_every_field_is_documented(page: str) -> None:
    problems = field_doc_problems(page)
    assert not problems, "\n".join(problems) + f"\n(regenerate with {REGENERATE})"


def test_field_check_catches_a_made_up_field_and_a_missing_one(page: str) -> None:
    made_up = page.replace(
        "| `segment.ms` |", "| `segment.made.up` | integer | `1` | — | Not a field. |\n| `segment.ms` |", 1
    )
    problems = field_doc_problems(made_up)
    assert "topic: documented field 'segment.made.up' does not exist in the models" in problems
    lines = page.splitlines(keepends=True)
    dropped = "".join(line for line in lines if not line.startswith("| `lose_response` |"))
    assert "action-produce: model field 'lose_response' is not documented" in field_doc_problems(dropped)
    assert stale_blocks(made_up) == ["topic"]


def test_generator_writes_every_block_and_refuses_unknown_ones(page: str) -> None:
    assert fill_generated(page) == page
    assert set(field_tables()) == set(_expected_fields()) | {"limits"}
    with pytest.raises(ValueError, match="unknown generated block"):
        fill_generated(page + "\n<!-- generated: nothing -->\n<!-- end generated -->\n")


def test_every_action_has_an_example(page: str) -> None:
    used: set[str] = set()
    for block in _SCENARIO_BLOCK.findall(page):
        used |= {a["do"] for a in json.loads(block).get("actions", [])}
    missing = [do for do in action_names() if do not in used]
    assert not missing, f"no json scenario example uses {', '.join(missing)}"


def test_first_example_file_is_the_first_scenario_on_the_page(page: str) -> None:
    first = json.loads(_SCENARIO_BLOCK.findall(page)[0])
    assert first == json.loads((PAGE.parent / "examples" / "first.json").read_text(encoding="utf-8"))
    with pytest.raises(engine.ScenarioError) as caught:
        engine.validate(json.loads((PAGE.parent / "examples" / "invalid.json").read_text(encoding="utf-8")))
    shown = [json.loads(b) for b in re.findall(r"```json\n(.*?)\n```", page, re.S) if "invalid_scenario" in b]
    assert shown == [caught.value.to_json()], "the page's error example is not what invalid.json gives"


# ---------------------------------------------------------------------------------------------
# result fields

# snapshots have one shape wherever they appear: their fields are documented once, under `final`
SNAPSHOT_ALIASES = ("final.partitions[]", "views[]", "view", "partitions[].final", "partitions[].view")
# dict levels whose keys are ids, written as a placeholder
DYNAMIC = {
    "final.brokers": "{broker}",
    "final.controller.brokers": "{broker}",
    "final.consumers": "{consumer}",
    "final.consumers.{consumer}.position": "{partition}",
    "final.consumers.{consumer}.committed": "{partition}",
    "final.transactions": "{transactional_id}",
    "final.txn_producers": "{producer}",
    "groups": "{group}",
    "groups.{group}.members": "{consumer}",
    "groups.{group}.committed": "{partition}",
    "groups.{group}.history[].assignment": "{consumer}",
    "consumers": "{consumer}",
    "consumers.{consumer}.position": "{partition}",
    "producers": "{producer}",
    "commits[].offsets": "{partition}",
    "steps[].offset_map": "{key}",
}

# scenarios that reach what the page's examples do not: a diverging fetch and a controlled
# shutdown, a poll error, a fenced static member's group errors, the coordinator's markers after
# a fence
EXTRA_SCENARIOS: dict[str, dict[str, Any]] = {
    "failover": {
        "topic": {"min.insync.replicas": 2},
        "actions": [
            {"do": "produce", "records": ["a", "b"]}, {"do": "settle"},
            {"do": "isolate", "broker": 1, "from": [2, 3]},
            {"do": "produce", "records": ["x"], "acks": 1}, {"do": "advance", "ms": 10},
            {"do": "crash", "broker": 1}, {"do": "heal", "broker": 1, "from": [2, 3]},
            {"do": "advance", "ms": 10000}, {"do": "produce", "records": ["p"]}, {"do": "settle"},
            {"do": "restart", "broker": 1}, {"do": "advance", "ms": 15000}, {"do": "settle"},
            {"do": "shutdown", "broker": 2}, {"do": "produce", "records": ["q"]}, {"do": "settle"},
        ],
    },
    "poll_error": {
        "consumers": [{"id": "c0", "group.id": "g", "auto.offset.reset": "none"}],
        "actions": [
            {"do": "produce", "records": ["a"]}, {"do": "subscribe", "consumer": "c0"},
            {"do": "poll", "consumer": "c0", "timeout_ms": 5000},
        ],
    },
    "fenced_static_member": {
        "consumers": [{"id": "a", "group.id": "g", "group.instance.id": "i1"},
                      {"id": "b", "group.id": "g", "group.instance.id": "i1"}],
        "actions": [
            {"do": "produce", "records": ["x"]}, {"do": "subscribe", "consumer": "a"},
            {"do": "poll", "consumer": "a", "timeout_ms": 5000}, {"do": "subscribe", "consumer": "b"},
            {"do": "poll", "consumer": "b", "timeout_ms": 5000}, {"do": "commit", "consumer": "a"},
        ],
    },
    "fenced_transaction": {
        "producers": [{"id": "app", "transactional.id": "pay-tx"},
                      {"id": "app-2", "transactional.id": "pay-tx"}],
        "consumers": [{"id": "r", "auto.offset.reset": "earliest", "isolation.level": "read_committed"}],
        "actions": [
            {"do": "init_transactions", "producer": "app"}, {"do": "begin_transaction", "producer": "app"},
            {"do": "produce", "producer": "app", "records": ["a"]}, {"do": "settle"},
            {"do": "init_transactions", "producer": "app-2"}, {"do": "settle"},
            {"do": "assign", "consumer": "r", "partitions": [0]}, {"do": "poll", "consumer": "r"},
        ],
    },
}


def _canon(path: str) -> str:
    changed = True
    while changed:
        changed = False
        for alias in SNAPSHOT_ALIASES:
            if path.startswith(alias + "."):
                path = "final" + path[len(alias):]
                changed = True
    if path.startswith("final.groups"):
        path = path[len("final."):]  # a snapshot's groups are the result's groups as of then
    return path


def result_paths(result: dict[str, Any]) -> set[str]:
    """Every dict key of a result as a dotted path: list items merged as `[]`, ids as placeholders,
    snapshot fields under `final`."""
    out: set[str] = set()

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            base = _canon(path)
            for key, item in value.items():
                name = DYNAMIC.get(base, key)
                child = _canon(f"{base}.{name}" if base else name)
                out.add(child)
                walk(item, child)
        elif isinstance(value, list):
            for item in value:
                walk(item, path + "[]")

    walk(result, "")
    return out


def documented_result_paths(text: str) -> set[str]:
    """The paths of the page's result tables (each follows a `<!-- result: BASE -->` comment)."""
    out: set[str] = set()
    for base, table in re.findall(r"<!-- result: (.*?) -->\n((?:\|.*\n)+)", text):
        prefix = "" if base == "(top level)" else base + "."
        out |= {prefix + cell for cell in _first_cells(table)}
    return out


def result_doc_problems(documented: set[str], actual: set[str]) -> list[str]:
    undocumented = [f"result field {p} is not documented" for p in sorted(actual - documented)]
    unseen = [f"documented result field {p} occurs in none of the test scenarios"
              for p in sorted(documented - actual)]
    return undocumented + unseen


@pytest.fixture(scope="module")
def actual_paths(page: str) -> set[str]:
    scenarios = [json.loads(block) for block in _SCENARIO_BLOCK.findall(page)]
    scenarios += EXTRA_SCENARIOS.values()
    paths: set[str] = set()
    for sc in scenarios:
        # steps, a view, every view and the invariant check: every optional part of a result
        result = engine.simulate(sc, steps=True, at_step=3, all_views=True, check_invariants=True)
        paths |= result_paths(result)
    return paths


def test_result_fields_are_documented_both_ways(page: str, actual_paths: set[str]) -> None:
    problems = result_doc_problems(documented_result_paths(page), actual_paths)
    assert not problems, "docs/scenario-format.md, section 'The result':\n" + "\n".join(problems)


def test_result_check_catches_a_made_up_field(page: str, actual_paths: set[str]) -> None:
    result = engine.simulate(json.loads(_SCENARIO_BLOCK.findall(page)[0]))
    tampered = copy.deepcopy(result)
    tampered["final"]["partition"]["made_up"] = 1
    tampered["produce"][0]["made_up_too"] = 2
    documented = documented_result_paths(page)
    problems = result_doc_problems(documented, actual_paths | result_paths(tampered))
    assert "result field final.partition.made_up is not documented" in problems
    assert "result field produce[].made_up_too is not documented" in problems
    gone = result_doc_problems(documented | {"final.partition.never_written"}, actual_paths)
    assert gone == [
        "documented result field final.partition.never_written occurs in none of the test scenarios"
    ]


def test_result_paths_use_placeholders_and_one_snapshot_shape() -> None:
    result = engine.simulate({"topic": {"partitions": 2, "replication.factor": 1},
                              "actions": [{"do": "produce", "records": ["a"], "partition": 1}]}, at_step=1)
    paths = result_paths(result)
    assert "final.brokers.{broker}.leo" in paths
    assert "partitions[].final" in paths and "view" in paths
    assert not any(p.startswith(("view.", "partitions[].final.")) for p in paths)


def test_command_line_prints_checks_and_writes_the_tables(page: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from engine.__main__ import main

    assert main(["schema", "--tables"]) == 0
    assert "<!-- generated: action-produce -->" in capsys.readouterr().out
    assert main(["schema", "--check-docs", str(PAGE)]) == 0
    stale = tmp_path / "page.md"
    stale.write_text(page.replace("| `segment.ms` |", "| `segment.ms.old` |", 1), encoding="utf-8")
    assert main(["schema", "--check-docs", str(stale)]) == 1
    assert "--write-docs" in capsys.readouterr().err
    assert main(["schema", "--write-docs", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == page
