"""The engine is a pure function of the scenario (contract: "the same scenario gives a
byte-identical result, on any machine"): two runs in one process and a run in a fresh
interpreter through the command line agree byte for byte, and the seed may move timings
but never the safety outcome of S3 (§10 S3: losing one broker loses nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scenario_builders import (
    FENCE_MS,
    REJOIN_MS,
    advance,
    crash,
    outcome,
    part,
    produce,
    restart,
    run,
    scenario,
    settle,
    stop_fetching,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 120


def _s3(seed: int = 0, version: str = "4.1") -> dict:
    return scenario(
        produce("a"), settle(),
        stop_fetching(3), produce("b"), advance(100),
        crash(1), advance(FENCE_MS), {"do": "resume_fetching", "broker": 3}, settle(),
        produce("c"), settle(), restart(1), advance(REJOIN_MS), settle(),
        kafka_version=version, min_isr=2, unclean=False, acks="all", seed=seed,
    )


def _canon(result: dict) -> str:
    return json.dumps(result, sort_keys=True)


@pytest.mark.parametrize("steps", [False, True])
def test_two_runs_are_byte_identical(steps):
    sc = _s3(seed=7)
    assert _canon(run(sc, steps=steps)) == _canon(run(sc, steps=steps))


def test_fresh_interpreter_gives_the_same_bytes():
    sc = _s3(seed=3)
    here = run(sc, steps=True)
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", "-", "--steps"],
        input=json.dumps(sc), capture_output=True, text=True, cwd=REPO_ROOT, timeout=CLI_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    there = json.loads(proc.stdout)
    assert _canon(there) == _canon(here)


def test_cli_reads_a_file_too(tmp_path):
    sc = _s3(seed=1)
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(sc))
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(path)],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=CLI_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    assert _canon(json.loads(proc.stdout)) == _canon(run(sc))
    assert "steps" not in json.loads(proc.stdout) or json.loads(proc.stdout)["steps"] in (None, [])


def _without_clock(snapshot: dict) -> dict:
    ticking = {"last_heartbeat_ms", "last_fetch_ms", "caught_up_ms"}
    out = {k: v for k, v in snapshot.items() if k not in ("t_ms", "messages")}
    out["brokers"] = {
        b: {k: v for k, v in row.items() if k not in ticking} for b, row in snapshot["brokers"].items()
    }
    return out


def test_at_step_view_does_not_change_the_rest_of_the_result():
    sc = _s3(seed=2)
    full = run(sc, steps=True)
    k = full["step_count"] // 2
    viewed = run(sc, steps=True, at_step=k)
    viewed.pop("view")
    assert _canon(viewed) == _canon(full), "at_step only adds the view"
    last = run(sc, steps=True, at_step=full["step_count"])["view"]
    # The view after the last step is the final state; only the clock, and what merely runs with
    # it (messages, heartbeat and fetch times), may have moved on since.
    assert _without_clock(last) == _without_clock(full["final"])
    assert last["t_ms"] == full["steps"][-1]["t_ms"] <= full["final"]["t_ms"]


@pytest.mark.parametrize("version", ["3.6", "4.1"])
def test_seeds_change_timing_never_the_s3_safety_outcome(version):
    results = [run(_s3(seed=s, version=version), steps=True) for s in range(12)]
    for s, r in enumerate(results):
        assert r["lost_acked_records"] == [], f"seed {s}: S3 loses nothing"
        assert r["acked_records"] == ["a", "b", "c"], f"seed {s}"
        assert outcome(r, 1) == ("acked", None), f"seed {s}"
        assert part(r)["leader"] == 2, f"seed {s}: §5.2 first ISR member in [1,2,3] after 1"
        assert r["duplicate_records"] == [], f"seed {s}: idempotent retry, one copy"
        for b in (1, 2, 3):
            assert [e["record"] for e in r["final"]["brokers"][str(b)]["log"]] == ["a", "b", "c"]
    # the timing model of docs/simulator.md: the heartbeat phase is drawn from the seed, so the fencing of the
    # crashed leader (7-9 s after the crash) moves with the seed.
    fence_times = set()
    for r in results:
        crashed = [s for s in r["steps"] if s["kind"] == "broker_crash"][0]["t_ms"]
        fenced = [s for s in r["steps"] if s["kind"] == "controller_fence_broker"][0]["t_ms"]
        assert 7_000 <= fenced - crashed <= 9_000 + 2, "docs/simulator.md: fenced 7-9 s after the crash"
        fence_times.add(fenced)
    assert len(fence_times) > 1, "different seeds should give different heartbeat phases"
