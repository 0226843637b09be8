"""The canonical situations in other shapes: other broker ids, other assignment orders,
replication factors 1-5, other timings, and the RF / min.insync.replicas headroom table of
seeds/004 (lines 80-120), so that nothing passes only because brokers are called 1, 2, 3.
"""

from __future__ import annotations

import pytest
from scenario_builders import (
    CURRENT,
    FENCE_MS,
    REJOIN_MS,
    advance,
    crash,
    elect,
    first_step,
    leader_log_records,
    log_rows,
    mark,
    no_elr,
    outcome,
    part,
    produce,
    records,
    restart,
    run,
    scenario,
    set_config,
    settle,
    shutdown,
    steps_of,
    stop_fetching,
    truncated,
    upto,
)

# ============================================================================ S1, other ids


@pytest.mark.parametrize("version", CURRENT)
@pytest.mark.parametrize(("ids", "assignment"), [((4, 7, 9), [9, 4, 7]), ((1, 5, 8, 9), [8, 1, 9])])
def test_s01_every_isr_member_needed_with_other_ids(version, ids, assignment):
    sc = scenario(produce("a", "b"), settle(), advance(1_000),
                  kafka_version=version, brokers=ids, replicas=assignment, min_isr=2, acks="all")
    r = run(sc)
    assert part(r)["leader"] == assignment[0], "§8: the first replica is the preferred leader"
    assert outcome(r, 0) == ("acked", None)
    for b in assignment:
        assert log_rows(r, b) == [(0, 0, "a"), (1, 0, "b")]
        assert r["final"]["brokers"][str(b)]["hw"] == 2
    others = set(ids) - set(assignment)
    for b in others:
        assert records(r, b) == [], "a broker outside the assignment holds no replica"


@pytest.mark.parametrize("version", CURRENT)
def test_s01_slow_member_holds_the_ack_with_other_ids(version):
    """S1 lesson with ids 4, 7, 9: if one ISR member is slow the HW waits for it (§2.4)."""
    sc = scenario(
        produce("a"), settle(),
        stop_fetching(4), produce("b"), advance(3_000), mark("waiting"),
        kafka_version=version, brokers=(4, 7, 9), replicas=[7, 9, 4], min_isr=2, acks="all",
    )
    r = upto(sc, "waiting")
    assert outcome(r, 1)[0] == "pending", "S1: the ack needs all three ISR members, not 2 of 3"
    assert r["final"]["brokers"]["7"]["hw"] == 1


# ============================================================ elections follow assignment order


@pytest.mark.parametrize("version", CURRENT)
@pytest.mark.parametrize(("ids", "assignment"), [
    ((1, 2, 3), [3, 1, 2]),
    ((1, 2, 3), [3, 2, 1]),
    ((4, 7, 9), [7, 9, 4]),
    ((4, 7, 9), [9, 4, 7]),
    ((1, 2, 3, 4, 5), [5, 3, 1, 4, 2]),
])
def test_clean_election_takes_first_isr_member_in_assignment_order(version, ids, assignment):
    sc = scenario(
        produce("a"), settle(), crash(assignment[0]), advance(FENCE_MS), produce("b"), settle(),
        kafka_version=version, brokers=ids, replicas=assignment, min_isr=2, acks="all",
        elr=no_elr(version),
    )
    r = run(sc)
    p = part(r)
    assert p["leader"] == assignment[1], (
        f"§5.2: first valid replica in assignment order {assignment}, not in id order")
    assert p["leader_epoch"] == 1
    assert sorted(p["isr"]) == sorted(assignment[1:])
    assert outcome(r, 1) == ("acked", None)
    assert r["lost_acked_records"] == []


@pytest.mark.parametrize("version", ["4.1"])  # 3.6's KRaft controller ignores the topic setting (claim 8)
@pytest.mark.parametrize(("ids", "assignment", "expected"), [
    ((1, 2, 3), [3, 2, 1], 2),       # id order would pick 1
    ((1, 2, 3), [3, 1, 2], 1),
    ((4, 7, 9), [4, 9, 7], 9),       # id order would pick 7
])
def test_unclean_election_takes_first_live_replica_in_assignment_order(version, ids, assignment, expected):
    lead, f1, f2 = assignment
    sc = scenario(
        produce("a"), settle(),
        stop_fetching(f1), stop_fetching(f2), advance(31_000),
        produce("b"), advance(20_000), mark("alone"),   # both followers shrunk out; b acked on one copy
        crash(lead), advance(FENCE_MS),
        kafka_version=version, brokers=ids, replicas=assignment, min_isr=1, unclean=True, acks="all",
        elr=no_elr(version),
    )
    alone = upto(sc, "alone")
    assert part(alone)["isr"] == [lead]
    assert outcome(alone, 1) == ("acked", None)
    r = run(sc)
    p = part(r)
    assert p["leader"] == expected, "§5.2 step 4: the first acceptable replica in assignment order"
    assert p["isr"] == [expected]
    assert p["recovery_state"] == "RECOVERING"
    assert r["lost_acked_records"] == ["b"]


@pytest.mark.parametrize("version", CURRENT)
def test_preferred_election_moves_leadership_back(version):
    sc = scenario(
        produce("a"), settle(),
        crash(2), advance(FENCE_MS), mark("moved"),
        restart(2), advance(REJOIN_MS), settle(), advance(1_000), mark("rejoined"),
        elect("preferred"), advance(1_000), produce("b"), settle(),
        kafka_version=version, replicas=[2, 3, 1], min_isr=2, acks="all", auto_rebalance=False,
    )
    moved = upto(sc, "moved")
    assert part(moved)["leader"] == 3, "§5.2: next in [2,3,1] is 3"
    rejoined = upto(sc, "rejoined")
    assert part(rejoined)["leader"] == 3 and 2 in part(rejoined)["isr"]
    r = run(sc)
    assert part(r)["leader"] == 2, "§5.2: the preferred replica (first in the assignment) leads again"
    assert part(r)["leader_epoch"] == 2, "§5.3: every election bumps the leader epoch"
    assert outcome(r, 1) == ("acked", None)
    for b in (1, 2, 3):
        assert records(r, b) == ["a", "b"]


def _offline_story(version: str, **kw) -> list:
    return [
        produce("a"), settle(),
        stop_fetching(3), advance(31_000),
        produce("b"), advance(20_000),
        produce("c"), settle(),
        crash(1), advance(FENCE_MS),
        crash(2), advance(FENCE_MS), mark("offline"),
    ]


@pytest.mark.parametrize("version", CURRENT)
def test_admin_unclean_election_works_whatever_the_topic_config(version):
    sc = scenario(
        *_offline_story(version), elect("unclean"), advance(1_000),
        kafka_version=version, min_isr=2, unclean=False, acks="all", elr=no_elr(version),
    )
    offline = upto(sc, "offline")
    assert part(offline)["leader"] == -1
    r = run(sc)
    p = part(r)
    assert p["leader"] == 3, "§5.1 / claim 9: admin UNCLEAN does not read the topic config"
    assert p["recovery_state"] == "RECOVERING"
    assert r["lost_acked_records"] == ["b", "c"]


@pytest.mark.parametrize("version", CURRENT)
def test_admin_unclean_election_cannot_displace_a_live_leader(version):
    sc = scenario(
        produce("a"), settle(), elect("unclean"), advance(1_000),
        kafka_version=version, min_isr=2, acks="all",
    )
    r = run(sc)
    assert part(r)["leader"] == 1 and part(r)["leader_epoch"] == 0, "claim 9: ELECTION_NOT_NEEDED"


def test_enabling_unclean_dynamically_waits_for_the_periodic_check():
    sc = scenario(
        *_offline_story("4.1"),
        set_config("unclean.leader.election.enable", True), advance(10_000), mark("soon after"),
        advance(300_000),
        kafka_version="4.1", min_isr=2, unclean=False, acks="all", elr=0,
    )
    soon = upto(sc, "soon after")
    assert part(soon)["leader"] == -1, (
        "§5.1 / claim 8: enabling the config does not trigger an election at once")
    r = run(sc)
    assert part(r)["leader"] == 3, "claim 8: the 5-minute periodic unclean check elects 3"
    assert r["lost_acked_records"] == ["b", "c"]


# ============================================================================ other RFs


@pytest.mark.parametrize("version", CURRENT)
@pytest.mark.parametrize("rf", [1, 2, 3, 4, 5])
def test_s11_acks1_loss_on_leader_crash_for_every_rf_above_one(version, rf):
    ids = (2, 4, 6, 8, 9)
    assignment = list(ids[:rf])
    sc = scenario(
        produce("a"), settle(),
        {"do": "isolate", "broker": assignment[0], "from": [b for b in ids if b != assignment[0]]},
        produce("x"), advance(10),
        crash(assignment[0]), advance(FENCE_MS),
        kafka_version=version, brokers=ids, replicas=assignment, min_isr=1, acks=1,
    )
    r = run(sc)
    assert outcome(r, 1) == ("acked", None)
    if rf == 1:
        assert part(r)["leader"] == -1, "RF=1: nobody else can lead"
        assert r["lost_acked_records"] == [], "contract: unavailable, not yet lost"
    else:
        assert part(r)["leader"] == assignment[1]
        assert r["lost_acked_records"] == ["x"], "S11: acks=1 is lost when the leader dies unreplicated"


@pytest.mark.parametrize("version", CURRENT)
@pytest.mark.parametrize("rf", [2, 3, 4, 5])
def test_s03_leader_crash_loses_nothing_for_every_rf(version, rf):
    ids = (3, 5, 7, 8, 9)
    assignment = list(reversed(ids[:rf]))
    sc = scenario(
        produce("a", "b"), settle(), crash(assignment[0]), advance(FENCE_MS),
        produce("c"), settle(), restart(assignment[0]), advance(REJOIN_MS), settle(), advance(1_000),
        kafka_version=version, brokers=ids, replicas=assignment, min_isr=min(2, rf), acks="all",
        elr=no_elr(version),
    )
    r = run(sc)
    assert part(r)["leader"] == assignment[1]
    assert r["lost_acked_records"] == []
    for b in assignment:
        assert records(r, b) == ["a", "b", "c"]
        assert truncated(r, b) == []


# ============================================================================ other timings


@pytest.mark.parametrize("version", CURRENT)
def test_s15_with_replica_lag_time_max_10s(version):
    sc = scenario(
        stop_fetching(3), advance(20_000), produce("w"), advance(8_000), mark("acked"),
        kafka_version=version, min_isr=2, acks="all", lag_ms=10_000,
    )
    r = upto(sc, "acked")
    assert outcome(r, 0) == ("acked", None)
    assert sorted(part(r)["isr"]) == [1, 2]
    w = r["produce"][0]
    # ISR check every lag/2 = 5 s from t=0; out of sync after 10 s without catching up (§4.1-4.2)
    assert w["done_ms"] - w["sent_ms"] <= 5_000 + 100, "§4.2: shrunk at the next 5 s tick"


@pytest.mark.parametrize("version", CURRENT)
def test_s15_default_lag_does_not_shrink_before_thirty_seconds(version):
    sc = scenario(
        stop_fetching(3), produce("w"), advance(25_000), mark("early"),
        kafka_version=version, min_isr=2, acks="all",
    )
    r = upto(sc, "early")
    assert outcome(r, 0)[0] == "pending", "§4.1: 30 s have not passed since 3 was caught up"
    assert 3 in part(r)["isr"]


def test_0_10_defaults_to_ten_second_lag():
    """§12: replica.lag.time.max.ms was 10 s before 2.5; claim 2: 0.10 checks every lag/2."""
    sc = scenario(
        produce("a"), settle(), stop_fetching(3), produce("w"), advance(25_000),
        kafka_version="0.10", min_isr=2, acks="all",
    )
    r = run(sc)
    assert outcome(r, 1) == ("acked", None)
    assert sorted(part(r)["isr"]) == [1, 2]


# ============================================================================ racks and correlated loss


@pytest.mark.parametrize("version", CURRENT)
def test_rack_power_loss_survives_when_one_replica_is_elsewhere(version):
    sc = scenario(
        produce("a", "b"), settle(),
        {"do": "power_loss", "rack": "east"}, advance(FENCE_MS),
        produce("c"), advance(2_000),
        kafka_version=version, racks={1: "east", 2: "east", 3: "west"}, min_isr=1, acks="all",
        unclean=False, elr=no_elr(version),
    )
    r = run(sc)
    assert part(r)["leader"] == 3, "S13 lesson: the replica in another rack keeps the data"
    assert r["lost_acked_records"] == []
    assert leader_log_records(r) == ["a", "b", "c"]
    for b in (1, 2):
        assert records(r, b) == [] and sorted(truncated(r, b, "power_loss")) == ["a", "b"]


# ============================================================================ the seed-004 headroom table


def _headroom(version: str, rf: int, m: int, order: str) -> tuple[dict, list[int]]:
    assignment = list(range(1, rf + 1))
    victims = (list(reversed(assignment[1:])) + [assignment[0]] if order == "followers_first"
               else list(assignment))
    acts: list = [produce("w0"), settle(), mark("k0")]
    for k, victim in enumerate(victims, start=1):
        acts += [crash(victim), advance(FENCE_MS), produce(f"w{k}"), settle(), mark(f"k{k}")]
    sc = scenario(
        *acts, kafka_version=version, brokers=(1, 2, 3, 4, 5), replicas=assignment, min_isr=m,
        unclean=False, acks="all", request_timeout_ms=5_000, delivery_timeout_ms=10_000,
    )
    return sc, victims


HEADROOM = [(rf, m) for rf in range(1, 6) for m in range(1, rf + 2)]


@pytest.mark.parametrize("version", CURRENT)
@pytest.mark.parametrize("order", ["followers_first", "leader_first"])
@pytest.mark.parametrize(("rf", "m"), HEADROOM, ids=[f"RF{rf}-M{m}" for rf, m in HEADROOM])
def test_headroom_writes_continue_exactly_while_rf_minus_k_meets_min_isr(version, order, rf, m):
    sc, _ = _headroom(version, rf, m, order)
    r = run(sc)
    # seed-004 table: writes survive while RF - k >= M, with M first clamped to min(M, RF) (3.7+);
    # 3.6 has no cap, so M > RF refuses every acks=all write (§2.2, S5).
    floor = min(m, rf) if version == "4.1" else m
    for k in range(rf + 1):
        expected = rf - k >= floor
        got = outcome(r, k)
        assert (got[0] == "acked") == expected, (
            f"RF={rf} M={m} {version} {order}: after losing k={k} brokers the write "
            f"{'should' if expected else 'should not'} succeed; got {got}")
        if got[0] == "failed" and k < rf:
            assert got[1] in ("NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT"), got
    # zero acked loss through RF - 1 losses (unclean off)
    last_up = upto(sc, f"k{rf - 1}")
    assert last_up["lost_acked_records"] == [], f"RF={rf} M={m}: acked data lost with one replica left"
    assert set(last_up["acked_records"]) <= set(leader_log_records(last_up))


# ============================================================ the rules behind the scenarios


@pytest.mark.parametrize(("version", "bumps"), [("0.10", True), ("3.6", False), ("4.1", False)])
def test_controller_shrink_bumps_the_leader_epoch_only_before_3_6(version, bumps):
    sc = scenario(produce("a"), settle(), crash(3), advance(FENCE_MS), produce("b"), settle(),
                  kafka_version=version, min_isr=2, acks="all")
    r = run(sc)
    assert part(r)["leader"] == 1 and sorted(part(r)["isr"]) == [1, 2]
    assert part(r)["leader_epoch"] == (1 if bumps else 0), (
        "§4.5 / §12 (3.6.0, KAFKA-15021): a shrink bumps the leader epoch only before 3.6")


@pytest.mark.parametrize("version", CURRENT)
def test_acks0_is_appended_without_a_response_and_frozen_under_min_isr(version):
    sc = scenario(
        produce("a"), settle(), crash(2), crash(3), advance(FENCE_MS),
        produce("z", acks=0), advance(1_000),
        kafka_version=version, min_isr=2, acks="all", idempotence=False, elr=no_elr(version),
    )
    r = run(sc)
    assert outcome(r, 1) == ("sent", None), "contract / §2.1: acks=0 gets no response by design"
    assert records(r, 1) == ["a", "z"], "§2.2: acks=0 skips the min-ISR check and is appended"
    if version == "4.1":
        assert r["visible_records"] == ["a"], "§3.2 (KIP-966 note): acks=0/1 are not visible under min ISR"
    else:
        assert r["visible_records"] == ["a", "z"], "before 3.7 the HW follows the one-member ISR"


@pytest.mark.parametrize("version", CURRENT)
def test_new_leader_starts_from_its_follower_hw_with_follower_leos_unknown(version):
    sc = scenario(
        produce("a", "b"), settle(), advance(1_000), crash(1), advance(FENCE_MS), settle(),
        kafka_version=version, min_isr=2, acks="all", elr=no_elr(version),
    )
    r = run(sc, steps=True)
    become = first_step(r, "leader_become")
    assert become is not None
    view = run(sc, steps=True, at_step=become["i"])["view"]
    assert view["brokers"]["2"]["hw"] == 2, "§5.3: the new leader keeps the HW it had as a follower"
    assert view["brokers"]["3"]["reported_leo"] == -1, "claim 10: follower LEOs reset to unknown"
    assert view["brokers"]["2"]["epoch_cache"][-1] == [1, 2], "§5.3: the new epoch starts at its LEO"


def test_changing_min_insync_replicas_clears_the_elr():
    sc = scenario(
        *_offline_story("4.1")[:-2], shutdown(2), advance(10_000), mark("elr"),
        set_config("min.insync.replicas", 3), advance(1_000),
        kafka_version="4.1", min_isr=2, unclean=False, acks="all", elr=1,
    )
    before = upto(sc, "elr")
    assert sorted(part(before)["elr"]) == [1, 2]
    r = run(sc)
    assert part(r)["elr"] == [], "N7 / §5.5: a change to the topic's min.insync.replicas clears its ELR"


def test_last_known_leader_is_elected_after_unclean_restarts_empty_the_elr():
    sc = scenario(
        produce("a"), settle(), stop_fetching(3), advance(31_000),
        produce("b"), advance(20_000), produce("c"), settle(),
        crash(1), advance(FENCE_MS), crash(2), advance(FENCE_MS),   # ISR [], ELR {1,2}, lastKnown [2]
        restart(1), advance(REJOIN_MS), mark("1 back"),            # 1 dropped from the ELR
        restart(2), advance(REJOIN_MS), mark("2 back"),            # ELR empty: last known leader 2
        kafka_version="4.1", min_isr=2, unclean=False, acks="all", elr=1,
    )
    one = upto(sc, "1 back")
    assert part(one)["leader"] == -1 and part(one)["elr"] == [2]
    assert part(one)["last_known_elr"] == [2]
    r = upto(sc, "2 back")
    p = part(r)
    assert p["leader"] == 2, "N6: ISR and ELR empty, the live last known leader is elected"
    assert p["leader_epoch"] == 3
    assert r["lost_acked_records"] == []
    assert p["unclean_leader_election_enable"] is False, "N6: even though unclean election is off"
    steps = run(sc, steps=True)
    assert [s for s in steps["steps"] if s["kind"] == "controller_elect_last_known_leader"], (
        "N6: the election is the last-known-leader path, flagged unclean")


@pytest.mark.parametrize(("version", "isr_at_10s"), [("0.8", [1, 2]), ("0.10", [1, 2, 3])])
def test_0_8_drops_a_follower_that_is_too_many_messages_behind(version, isr_at_10s):
    """claim 2 / N2: 0.8 also drops a follower more than replica.lag.max.messages behind; from
    0.9 only time since last caught up counts."""
    timing_extra = {"replica.lag.max.messages": 3} if version == "0.8" else {}
    sc = scenario(
        advance(4_000), stop_fetching(3), produce("a", "b", "c", "d", "e", acks=1), advance(6_500),
        kafka_version=version, acks=1,
    )
    if timing_extra:
        sc["timing"] = timing_extra
    r = run(sc)
    assert sorted(part(r)["isr"]) == isr_at_10s


def test_0_8_drops_a_stuck_follower_after_ten_seconds_without_a_fetch():
    sc = scenario(produce("a", acks=-1), settle(), stop_fetching(3), produce("w", acks=-1),
                  advance(25_000), kafka_version="0.8")
    r = run(sc)
    assert outcome(r, 1) == ("acked", None), "claim 2: 0.8 shrinks a follower stuck for 10 s"
    assert sorted(part(r)["isr"]) == [1, 2]


@pytest.mark.parametrize("version", CURRENT)
def test_restart_inside_the_session_is_refused_then_rejoins(version):
    sc = scenario(
        produce("a"), settle(), crash(3), restart(3), advance(20_000), produce("b"), settle(),
        advance(1_000),
        kafka_version=version, min_isr=2, acks="all", elr=no_elr(version),
    )
    r = run(sc, steps=True)
    crashed = first_step(r, "broker_crash")
    registered = [s for s in steps_of(r, "controller_register_broker") if s["i"] > crashed["i"]]
    assert registered, "the restarted broker registers a new incarnation"
    assert registered[0]["t_ms"] - crashed["t_ms"] >= 7_000 - 2, (
        "claim 5: re-registration is refused until the old session (9 s) has expired")
    assert sorted(part(r)["isr"]) == [1, 2, 3], "it catches up and rejoins"
    assert outcome(r, 1) == ("acked", None)


@pytest.mark.parametrize("version", CURRENT)
def test_auto_preferred_election_moves_leadership_back_within_300s(version):
    sc = scenario(
        produce("a"), settle(), crash(1), advance(FENCE_MS), restart(1), advance(REJOIN_MS), settle(),
        mark("back"), advance(310_000), mark("rebalanced"), produce("b"), settle(), advance(1_000),
        kafka_version=version, min_isr=2, acks="all", elr=no_elr(version),
    )
    back = upto(sc, "back")
    assert part(back)["leader"] == 2 and 1 in part(back)["isr"]
    rebalanced = upto(sc, "rebalanced", steps=True)
    assert part(rebalanced)["leader"] == 1, (
        "S3 / §5.1: auto.leader.rebalance (300 s) restores the preferred leader")
    assert part(rebalanced)["leader_epoch"] == 2
    # Epoch 1 (leader 2) wrote no record. §6.4: a follower answered DivergingEpoch truncates
    # (here: nothing), drops the epoch-1 cache entry with the truncation, and fetches on; it does
    # not ask again and again.
    diverging = steps_of(rebalanced, "leader_diverging_epoch")
    assert len(diverging) <= 4, (
        f"§6.4: {len(diverging)} DivergingEpoch answers after the rebalance, e.g. {diverging[-1]['text']}")
    r = run(sc)
    assert outcome(r, 1) == ("acked", None), "writes go on after the rebalance"
    for b in (1, 2, 3):
        assert records(r, b) == ["a", "b"]
