"""Presenters read like the page: these tests use a hand-written engine result of the shape in
docs/scenario-format.md, so they pin the presenter logic independently of the engine's behaviour."""

from types import SimpleNamespace

from app import presenters
from app.simulation import Timeline
from app.state import SceneState

SAMPLE_RESULT = {
    "version": 1,
    "step_count": 4,
    "final": {},
    "produce": [
        {
            "records": ["a", "b"],
            "acks": "all",
            "outcome": "acked",
            "error": None,
            "offsets": [0, 1],
            "attempts": 1,
            "sent_ms": 0,
            "done_ms": 4,
        }
    ],
    "acked_records": ["a", "b"],
    "lost_acked_records": [],
    "visible_records": ["a", "b"],
    "steps": [
        {"i": 1, "t_ms": 0, "actor": "producer", "kind": "producer_send", "text": "send a, b", "produce": 0},
        {"i": 2, "t_ms": 1, "actor": "broker-1", "kind": "leader_append", "text": "B1 appended a, b"},
        {
            "i": 3,
            "t_ms": 3,
            "actor": "broker-1",
            "kind": "leader_advance_high_watermark",
            "text": "HW 0 -> 2",
        },
        {"i": 4, "t_ms": 4, "actor": "producer", "kind": "producer_receive", "text": "acked", "produce": 0},
    ],
}


def snapshot(leader=1, leader_log=("a", "b"), follower_log=("a", "b"), hw=2, isr=(1, 2, 3), ledger=None):
    def log(records, epoch=0):
        return [{"offset": i, "epoch": epoch, "record": r} for i, r in enumerate(records)]

    broker = {
        "alive": True,
        "fenced": False,
        "status": "running",
        "rack": None,
        "fetching": True,
        "isolated_from": [],
        "truncated": [],
        "flushed": 0,
    }
    return {
        "t_ms": 4,
        "partition": {
            "leader": leader,
            "leader_epoch": 0,
            "isr": list(isr),
            "elr": [],
            "online": leader != -1,
            "replicas": [1, 2, 3],
            "hw": hw,
            "effective_min_isr": 2,
            "min_insync_replicas": 2,
            "under_min_isr": False,
            "recovery_state": "RECOVERED",
        },
        "brokers": {
            "1": {**broker, "role": "leader", "leo": len(leader_log), "hw": hw, "log": log(leader_log)},
            "2": {**broker, "role": "follower", "leo": len(follower_log), "hw": hw, "log": log(follower_log)},
            "3": {
                **broker,
                "role": "follower",
                "leo": 0,
                "hw": 0,
                "log": [],
                "status": "crashed",
                "alive": False,
                "truncated": [{"offset": 0, "epoch": 0, "record": "z", "why": "power_loss", "t_ms": 3}],
            },
        },
        "producer": {
            "in_flight": [
                {
                    "index": 0,
                    "records": ["c"],
                    "acks": "all",
                    "attempt": 1,
                    "state": "awaiting_response",
                    "target": 1,
                }
            ]
        },
        # the engine's ledger as of this snapshot (docs/scenario-format.md)
        "ledger": ledger or {"acked": [], "failed": [], "sent": ["a", "b"], "lost": []},
    }


def timeline(step, view):
    return Timeline(
        scenario={"producer": {"acks": "all"}, "brokers": [{"id": i} for i in (1, 2, 3)]},
        result=SAMPLE_RESULT,
        view=view,
        step=step,
        step_count=4,
        first_step=0,
        last_step=4,
    )


STATE = SceneState(
    scene_id="05",
    beat="b",
    knobs=(("acks", "all"), ("min.insync.replicas", "2"), ("replication.factor", "3")),
    seed=0,
    step=3,
)


def test_outcomes_follow_the_ledger_of_the_step_not_the_end_of_the_run():
    # SAMPLE_RESULT's batch ends acknowledged; at step 3 the ledger has only sent it
    before = presenters.produce_outcomes(timeline(3, snapshot()))
    assert before["acked"] == [] and before["waiting"] == ["a, b"] and before["lost"] == []
    acked = {"acked": ["a", "b"], "failed": [], "sent": ["a", "b"], "lost": []}
    after = presenters.produce_outcomes(timeline(4, snapshot(ledger=acked)))
    assert after["acked"] == ["a, b"] and after["waiting"] == []
    unsent = {"acked": [], "failed": [], "sent": [], "lost": []}
    at_zero = presenters.produce_outcomes(timeline(0, snapshot(ledger=unsent)))
    assert "1 batch not sent yet" in at_zero["text"] and "a, b" not in at_zero["text"]


def test_an_acked_record_missing_from_the_leader_is_drawn_as_lost():
    view = snapshot(leader=2, leader_log=("a", "b"), follower_log=("a",), hw=1)
    view["brokers"]["2"]["log"] = [{"offset": 0, "epoch": 0, "record": "a"}]
    tl = timeline(3, view)  # the engine's ledger: nothing lost yet
    assert presenters.lost_records_at(tl) == set()
    lost = {"acked": ["a", "b"], "failed": [], "sent": ["a", "b"], "lost": ["b"]}
    tl = Timeline(**{**tl.__dict__, "view": {**view, "ledger": lost}, "step": 4, "step_count": 5})
    assert presenters.lost_records_at(tl) == {"b"}
    cells = {
        c.record: c
        for row in presenters.diagram(tl, tl.scenario)["rows"]
        if not row["spare"]
        for c in row["cells"]
        if row["id"] == 1
    }
    assert cells["b"].state == "lost" and cells["b"].glyph == "!"
    assert cells["a"].state == "committed"


def test_diagram_marks_leader_isr_hw_leo_truncation_and_in_flight():
    d = presenters.diagram(timeline(3, snapshot(hw=1)), {"producer": {"acks": "all"}})
    rows = {r["id"]: r for r in d["rows"]}
    assert [b["text"] for b in rows[1]["badges"]] == ["♛ leader", "ISR"]
    assert [c.state for c in rows[1]["cells"]] == ["committed", "uncommitted"]
    # the LEO marker is always drawn now, with its value in words ("LEO 2")
    assert rows[1]["markers"]["hw"] == 1 and rows[1]["markers"]["leo"] == 2
    assert rows[1]["markers"]["text"] == "LEO 2"
    assert rows[3]["status"] == "crashed" and rows[3]["ghosts"][0].state == "truncated"
    assert any("#1 [c] → B1 awaiting reply" in line["text"] for line in d["boxes"][0]["lines"])
    text = " ".join(d["description"])
    assert "Broker 3" in text and "crashed" in text and "lost in power loss" in text


def test_headroom_caps_min_isr_at_rf_in_41_and_refuses_in_36():
    def knobs(m, rf, v):
        return STATE.replace(
            knobs=(
                ("acks", "all"),
                ("min.insync.replicas", str(m)),
                ("replication.factor", str(rf)),
                ("kafka_version", v),
            )
        )

    h = presenters.headroom(knobs(2, 3, "4.1"))
    assert h["effective"] == 2 and h["headroom"] == 1
    assert [r["status"] for r in h["rows"]] == ["ok", "ok", "refused", "offline"]
    h = presenters.headroom(knobs(3, 1, "4.1"))
    assert h["effective"] == 1 and h["headroom"] == 0 and h["rows"][0]["status"] == "ok"
    h = presenters.headroom(knobs(3, 1, "3.6"))
    assert h["refuses_all"] and h["rows"][0]["status"] == "refused"


def test_headroom_has_no_effective_min_cap_before_3_7():
    # issue 8: the table said a 1.1 cluster with RF 2 and min.insync.replicas 3 keeps writing,
    # while the engine refuses every acks=all write; the rule now comes from the engine's profile
    for version in ("0.8", "0.10", "1.1", "3.6"):
        h = presenters.headroom(
            STATE.replace(knobs=(("acks", "all"), ("min.insync.replicas", "3"), ("replication.factor", "2"),
                                 ("kafka_version", version)))
        )
        assert h["refuses_all"] and not h["capped"] and h["headroom"] is None, version
        assert [r["status"] for r in h["rows"]] == ["refused", "refused", "offline"], version
        assert "no effective-min cap" in h["formula"]


def test_fault_buttons_offer_restart_only_for_a_stopped_broker():
    rows = presenters.fault_buttons(timeline(3, snapshot()), STATE, embed=False)
    verbs = {r["broker"]: [b["verb"] for b in r["buttons"]] for r in rows}
    assert verbs[3] == ["restart"]
    assert verbs[1] == ["crash", "power", "stop", "shutdown", "isolate"]
    assert rows[0]["buttons"][0]["value"] == "crash:1"  # submitted with the state form as inject=


def test_code_panel_highlights_lines_whose_kinds_include_the_current_step():
    scene = SimpleNamespace(
        pseudocode=[
            SimpleNamespace(
                id="p",
                title="Produce",
                lines=[
                    SimpleNamespace(text="append()", kinds=["leader_append"], source=None),
                    SimpleNamespace(
                        text="other()",
                        kinds=[],
                        source="core/src/main/scala/kafka/cluster/Partition.scala#L1",
                    ),
                ],
            )
        ]
    )
    panel = presenters.code_panel(scene, timeline(2, snapshot()))
    assert panel["kind"] == "leader_append"
    assert [line["active"] for line in panel["blocks"][0]["lines"]] == [True, False]
    assert panel["blocks"][0]["lines"][0]["source"].startswith("https://github.com/apache/kafka/blob/")
    assert panel["blocks"][0]["lines"][1]["source"].endswith("Partition.scala#L1")



def test_code_panel_names_the_zookeeper_era_code_for_a_historic_run():
    """kafka-semantics.md §4.4 (ZooKeeper era): in a 1.1 run the leader's ISR shrink is a conditional
    ZooKeeper write, so the panel names Partition.maybeShrinkIsr at tag 1.1.0 and no AlterPartition."""
    scene = SimpleNamespace(pseudocode=[])
    result = dict(SAMPLE_RESULT, steps=[
        {"i": 1, "t_ms": 0, "actor": "broker-1", "kind": "leader_shrink_isr", "text": "B1 writes ISR {1, 2}"},
    ])
    for kraft, rev, word in ((False, "/blob/1.1.0/", "ZooKeeper"), (True, "/blob/1eb7644", "AlterPartition")):
        view = dict(snapshot(), controller={"kraft": kraft})
        tl = Timeline(scenario={}, result=result, view=view, step=1, step_count=1, first_step=0, last_step=1)
        panel = presenters.code_panel(scene, tl)
        assert panel["code"] == "Partition.maybeShrinkIsr"
        assert rev in panel["url"] and word in panel["summary"]

def test_inline_code_segments():
    assert presenters.inline("use `acks=all` now") == [
        {"code": False, "text": "use "},
        {"code": True, "text": "acks=all"},
        {"code": False, "text": " now"},
    ]
