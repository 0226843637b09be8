"""Malformed scenarios get the contract's error object, never a traceback: engine.ScenarioError
(with `problems`, each a `path` and a `message`) from `simulate`, and exit code 2 with the
same JSON on stdout from `python -m engine run -`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scenario_builders import advance, produce, scenario

import engine

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 60


def _base() -> dict:
    return scenario(produce("a"), advance(100))


def _with(**patch) -> dict:
    sc = json.loads(json.dumps(_base()))
    for dotted, value in patch.items():
        keys = dotted.split("__")
        node = sc
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return sc


def _limits() -> dict:
    import engine

    return engine.LIMITS


def _bad_cases() -> list[tuple[str, object, str]]:
    """(id, scenario or a thunk giving one, a substring the problem path must contain)"""
    unknown_top = _base() | {"colour": "blue"}
    unknown_topic = _with(topic__retention=5)
    wrong_type_seed = _with(seed="zero")
    wrong_type_records = _base() | {"actions": [{"do": "produce", "records": "a"}]}
    cases = [
        ("unknown-top-level-field", unknown_top, "colour"),
        ("unknown-topic-field", unknown_topic, "topic"),
        ("unknown-action", _base() | {"actions": [{"do": "explode", "broker": 1}]}, "actions[0]"),
        ("unknown-action-field", _base() | {"actions": [{"do": "crash", "broker": 1, "hard": True}]},
         "actions[0]"),
        ("wrong-type-seed", wrong_type_seed, "seed"),
        ("wrong-type-records", wrong_type_records, "actions[0]"),
        ("wrong-type-advance-ms", _base() | {"actions": [{"do": "advance", "ms": "10s"}]}, "actions[0]"),
        ("min-isr-zero", _topic({"min.insync.replicas": 0}), "min.insync.replicas"),
        ("negative-advance", _base() | {"actions": [{"do": "advance", "ms": -5}]}, "actions[0]"),
        ("rf-6-on-5-brokers", scenario(brokers=(1, 2, 3, 4, 5), replication_factor=6), "replication"),
        ("replica-not-in-cluster", scenario(replicas=[1, 2, 7]), "replicas"),
        ("action-broker-not-in-cluster",
         _base() | {"actions": [{"do": "produce", "records": ["a"]}, {"do": "advance", "ms": 1},
                                {"do": "crash", "broker": 7}]}, "actions[2].broker"),
        ("slow-broker-not-in-cluster", _base() | {"actions": [{"do": "slow", "broker": 9, "ms": 5}]},
         "actions[0].broker"),
        ("duplicate-records", _base() | {"actions": [produce("a", "b"), produce("b")]}, "actions[1]"),
        ("duplicate-records-in-one-batch", _base() | {"actions": [produce("a", "a")]}, "actions[0]"),
        ("idempotence-with-acks-1", scenario(acks=1, idempotence=True), "producer"),
        ("version-2", _base() | {"version": 2}, "version"),
        ("unknown-kafka-version", _base() | {"kafka_version": "9.9"}, "kafka_version"),
        ("elr-on-3.6", scenario(kafka_version="3.6", elr=1), "eligible"),
        ("duplicate-broker-ids", _base() | {"brokers": [{"id": 1}, {"id": 1}, {"id": 2}]}, "brokers"),
        ("not-an-object", ["produce"], "$"),
    ]
    return cases


def _topic(extra: dict) -> dict:
    sc = json.loads(json.dumps(_base()))
    sc["topic"].update(extra)
    return sc


def _cap_cases() -> list[tuple[str, object, str, str]]:
    """Cases built from engine.LIMITS: (id, scenario, path substring, cap key)."""
    limits = _limits()
    n = limits["max_actions"] + 1
    too_many = _base() | {"actions": [{"do": "advance", "ms": 1} for _ in range(n)]}
    per = limits["max_sim_ms"] // 4 + 1
    beyond = _base() | {"actions": [{"do": "advance", "ms": per} for _ in range(5)]}
    huge = _base() | {"actions": [{"do": "advance", "ms": 10**12}]}
    return [
        ("too-many-actions", too_many, "actions", "max_actions"),
        ("sim-time-beyond-cap", beyond, "actions", "max_sim_ms"),
        ("huge-advance", huge, "actions[0]", "max_sim_ms"),
    ]


BAD = _bad_cases()


def _problems_of(sc) -> list[dict]:
    import engine

    with pytest.raises(engine.ScenarioError) as info:
        engine.simulate(sc)
    problems = info.value.problems
    assert problems, "an invalid scenario must say what is wrong"
    for p in problems:
        assert set(p) >= {"path", "message"}
        assert isinstance(p["path"], str) and isinstance(p["message"], str) and p["message"]
    assert info.value.to_json()["error"] == "invalid_scenario"
    assert info.value.to_json()["problems"] == problems
    return problems


@pytest.mark.parametrize(("sc", "path"), [(c[1], c[2]) for c in BAD], ids=[c[0] for c in BAD])
def test_simulate_rejects_with_path_and_message(sc, path):
    problems = _problems_of(sc)
    assert any(path in p["path"] for p in problems), problems


@pytest.mark.parametrize("case", ["too-many-actions", "sim-time-beyond-cap", "huge-advance"])
def test_caps_are_enforced_and_stated(case):
    (_, sc, path, cap_key), = [c for c in _cap_cases() if c[0] == case]
    problems = _problems_of(sc)
    assert any(path in p["path"] for p in problems), problems
    cap = _limits()[cap_key]
    text = " ".join(p["message"] for p in problems)
    assert str(cap) in text or f"{cap:,}" in text, f"contract: state the cap ({cap}) in the error: {text}"


def _cli(stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "run", "-"], input=stdin, capture_output=True,
                          text=True, cwd=REPO_ROOT, timeout=CLI_TIMEOUT_S)


@pytest.mark.parametrize(("sc", "path"), [(c[1], c[2]) for c in BAD[:6] + BAD[-6:]],
                         ids=[c[0] for c in BAD[:6] + BAD[-6:]])
def test_cli_exit_2_with_error_json(sc, path):
    proc = _cli(json.dumps(sc))
    assert proc.returncode == 2, (proc.returncode, proc.stdout[:500], proc.stderr[:500])
    assert "Traceback" not in proc.stderr
    body = json.loads(proc.stdout)
    assert body["error"] == "invalid_scenario"
    assert any(path in p["path"] for p in body["problems"]), body


@pytest.mark.parametrize("text", ["not json{", "", "{\"version\": 1,", "[[[[", "\x00\x01"])
def test_cli_non_json_input(text):
    proc = _cli(text)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[:500], proc.stderr[:500])
    assert "Traceback" not in proc.stderr
    body = json.loads(proc.stdout)
    assert body["error"] == "invalid_scenario" and body["problems"]
    assert all("path" in p and "message" in p for p in body["problems"])


def test_cli_deeply_nested_json_is_an_error_not_a_crash():
    proc = _cli("[" * 100_000 + "]" * 100_000)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["error"] == "invalid_scenario"


def test_valid_scenario_still_runs():
    """Guard against a validator that rejects everything: the base of every bad case is valid."""
    import engine

    r = engine.simulate(_base())
    assert r["produce"][0]["outcome"] == "acked"


def test_an_idempotent_1_1_client_with_acks_and_retries_unset_picks_all_and_max_retries():
    """KafkaProducer.configureAcks / configureRetries (0.11-2.x): enable.idempotence=true with acks
    and retries unset is accepted, with acks=all and retries=Integer.MAX_VALUE, not rejected."""
    sc = _base() | {
        "kafka_version": "1.1",
        "producer": {"enable.idempotence": True},
        "actions": [produce("a"), {"do": "settle"}],
    }
    result = engine.simulate(sc)
    assert result["produce"][0]["acks"] == "all" and result["acked_records"] == ["a"]
    # acks set explicitly to something else: still Kafka's ConfigException
    with pytest.raises(engine.ScenarioError):
        engine.simulate(sc | {"producer": {"enable.idempotence": True, "acks": "1"}})


@pytest.mark.parametrize("settings,version,expected", [
    ({}, "4.1", True),  # 3.0+: idempotence on by default
    ({"acks": 1}, "4.1", False),  # a default switched off by acks other than all (ProducerConfig)
    ({"enable.idempotence": False}, "4.1", False),
    ({}, "1.1", False),  # before 3.0 it was off by default
    ({"transactional.id": "t"}, "1.1", True),  # a transactional.id implies it
])
def test_describe_says_how_each_producer_process_resolves_idempotence(settings, version, expected):
    described = engine.describe({"kafka_version": version, "producers": [{"id": "p", **settings}]})
    assert described["producers"]["p"] == {"idempotent": expected,
                                           "transactional": "transactional.id" in settings}
