"""engine.headroom: the table's first row ("writes continue with 0 brokers down") agrees with
the simulator for every profile, RF 1-5, min.insync.replicas 1-5 and acks 0, 1, all."""

from __future__ import annotations

import pytest

import engine
from engine import PROFILES

CASES = [(v, rf, m, acks) for v in sorted(PROFILES) for rf in range(1, 6) for m in range(1, 6)
         for acks in ("0", "1", "all")]


def _scenario(version: str, rf: int, m: int, acks: str) -> dict:
    return {
        "kafka_version": version,
        "brokers": [{"id": b} for b in range(1, 6)],
        "topic": {"replicas": list(range(1, rf + 1)), "min.insync.replicas": m},
        "producer": {"acks": acks if acks == "all" else int(acks), "retries": 0},
        "actions": [{"do": "produce", "records": ["a"]}, {"do": "settle"}],
    }


@pytest.mark.parametrize(("version", "rf", "m", "acks"), CASES,
                         ids=[f"{v}-RF{rf}-M{m}-acks{a}" for v, rf, m, a in CASES])
def test_the_first_row_agrees_with_a_simulated_produce(version, rf, m, acks):
    sc = _scenario(version, rf, m, acks)
    table = engine.headroom(sc)
    assert table["modelled"] and len(table["rows"]) == rf + 1
    row = table["rows"][0]
    assert row["down"] == 0 and row["live"] == rf
    produced = engine.simulate(sc)["produce"][0]
    # acks=0 is never acknowledged: the producer hands it to the network and learns nothing
    written = produced["outcome"] in ("acked", "sent")
    assert (row["status"] == "ok") == written, (table["formula"], row, produced)
    if not written:
        assert produced["error"] == "NOT_ENOUGH_REPLICAS" and row["status"] == "refused"


@pytest.mark.parametrize("version", ["0.8", "0.10", "1.1", "3.6"])
def test_no_cap_before_3_7_so_min_isr_above_rf_refuses_every_acks_all_write(version):
    table = engine.headroom(_scenario(version, 2, 3, "all"))
    assert table["refuses_all"] and not table["capped"] and table["headroom"] is None
    assert [r["status"] for r in table["rows"]] == ["refused", "refused", "offline"]


def test_from_3_7_the_effective_minimum_is_capped_at_rf():
    table = engine.headroom(_scenario("4.1", 2, 3, "all"))
    assert table["capped"] and table["effective"] == 2 and table["headroom"] == 0
    assert [r["status"] for r in table["rows"]] == ["ok", "refused", "offline"]
    assert table["formula"] == "effective min ISR = min(3, 2) = 2; headroom = 2 − 2 = 0"


def test_unclean_election_only_threatens_acked_data_where_the_controller_honours_it():
    def last_row(version: str) -> str:
        sc = _scenario(version, 3, 2, "all")
        sc["topic"]["unclean.leader.election.enable"] = True
        return engine.headroom(sc)["rows"][-1]["safety"]

    assert last_row("4.1").startswith("unclean election")
    assert "ignores unclean.leader.election.enable" in last_row("3.6")  # KRaft before 3.9


def test_acks_the_table_does_not_model_have_no_rows():
    sc = _scenario("4.1", 3, 2, "all")
    sc["producer"]["acks"] = "min.insync.replicas"  # the KIP-926 proposal
    table = engine.headroom(sc)
    assert not table["modelled"] and table["rows"] == []
