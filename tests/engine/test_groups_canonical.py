"""Consumer groups: the canonical scenarios of kafka-clients-logs.md §F.E (E1-E6) and
kafka-eos-kraft.md §E.C (C1-C5), each reproduced through `engine.simulate` alone with a scenario
in the contract's words (scenario-contract-clients.md) and assertions on the result's fields and
step kinds; then invariants over random membership schedules.

Decisions where the reference or the contract leaves room:

 1. Members c0..c3 are `loop_ms` consumers (their application polls every 100 ms and sits in
    poll() in between, so it answers the coordinator at once), except where a story needs an
    application that is not in poll() (E5), which uses explicit `poll` actions.
 2. "A Stable group at generation G": the story starts the members together and settles; G is
    read from the result (1 when the members start within the initial delay, §E.3), and the
    tests assert the generations that follow relative to it.
 3. A clean leave is `shutdown` (close(): LeaveGroup for a dynamic member).
 4. The cooperative-sticky assignor's pass 1 visits members in sorted order, not Java's HashMap
    order (engine/groups.py): the member visited later gives up a partition, which reproduces
    the reference's E2 (c1 gives up p5).
 5. E5 and C1/C2 read `commits[i].error`: the broker's answer to the (member id, generation) the
    client holds at that moment (§E.8's timeline), except that a client between its JoinGroup
    and SyncGroup's answer does not send a commit (ConsumerCoordinator's generationIfStable) and
    reports REBALANCE_IN_PROGRESS (RebalanceInProgressException). A current-generation commit in
    CompletingRebalance therefore only reaches the broker in a unit test of the coordinator.
    For "generation G after the join completed", E5 keeps a static member out of the join (a
    static member is kept when it does not rejoin in time) and commits before its next heartbeat
    tells it.
 6. `settle` waits for Stable groups (the contract); a crashed member leaves a Stable group only
    when its session times out, so stories with crashes `advance` past that first.
 7. Downtime is `consumers[id].downtime` (an addition to the contract): the intervals in which a
    live member processed nothing, with why ("revoked", "unassigned", "stalled").
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_clients_canonical import (
    SEC,
    advance,
    commit,
    consumer,
    consumer_crash,
    consumer_restart,
    consumer_shutdown,
    poll,
    produce,
    received,
    run,
    settle,
    stall,
    story,
    subscribe,
    upto,
)
from test_clients_canonical import mark as point

from engine import ScenarioError

MIN = 60 * SEC
COOP = ["cooperative-sticky"]
IDS = ("c0", "c1", "c2", "c3")


def members(*ids: str, strategy: list[str] | None = None, loop_ms: int = 100, **kafka) -> tuple[dict, ...]:
    extra = dict(kafka)
    if strategy is not None:
        extra["partition_assignment_strategy"] = strategy
    return tuple(consumer(c, reset="earliest", loop_ms=loop_ms, **extra) for c in ids)


def group(r: dict, g: str = "g") -> dict:
    return r["groups"][g]


def steps_of(r: dict, kind: str, who: str | None = None) -> list[dict]:
    return [s for s in r["steps"] if s["kind"] == kind and (who is None or s.get("consumer") == who)]


def after(r: dict, t: int, kind: str) -> list[dict]:
    return [s for s in r["steps"] if s["kind"] == kind and s["t_ms"] >= t]


def downtime_after(r: dict, cid: str, t: int) -> int:
    """How long member cid processed nothing from t on (its downtime intervals cut at t)."""
    return sum(max(0, d["to_ms"] - max(d["from_ms"], t)) for d in r["consumers"][cid]["downtime"])


def started(*ids: str, strategy: list[str] | None = None, partitions: int = 6, extra: tuple = (), **kw):
    """The members start together and the group settles (generation G), then `extra` actions."""
    return story(
        *[subscribe(c) for c in ids], settle(), point("G"), *extra,
        partitions=partitions, consumers=members(*ids, strategy=strategy, **kw),
    )  # fmt: skip


# ============================================================================ E1 a member leaves


def test_E1_eager_range_one_member_leaves_cleanly():
    """§F.E E1, default [range, cooperative-sticky] -> eager + range: c3 leaves; everyone revokes
    everything, one rebalance, only p5 changes owner but all six partitions paused."""
    sc = started(*IDS, extra=(consumer_shutdown("c3"), settle()))
    before = upto(sc, "G")
    assert group(before)["protocol"] == "eager" and group(before)["assignor"] == "range"
    assert group(before)["members"] == {"c0": [0, 1], "c1": [2, 3], "c2": [4], "c3": [5]}
    r = run(sc, steps=True)
    gen = group(before)["generation"]
    assert group(r)["generation"] == gen + 1, "one rebalance"
    assert group(r)["state"] == "Stable"
    assert group(r)["members"] == {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]}
    left = steps_of(r, "group_member_left")[0]["t_ms"]
    heard = after(r, left, "consumer_heartbeat_rebalance")
    assert sorted(s["consumer"] for s in heard) == ["c0", "c1", "c2"]
    assert all(s["t_ms"] - left <= 3 * SEC + 2 for s in heard), "within heartbeat.interval.ms"
    revoked = {s["consumer"]: s["partitions"] for s in after(r, left, "consumer_revoke")}
    assert revoked == {"c0": [0, 1], "c1": [2, 3], "c2": [4]}, "eager: each revokes everything"
    for c in ("c0", "c1", "c2"):
        assert downtime_after(r, c, left) > 0, f"{c} was paused between revoke and SyncGroup"


def test_E1_eager_range_the_first_member_leaves_and_every_range_shifts():
    """§F.E E1: if c0 leaves instead, all six partitions change owner (range is not sticky)."""
    r = run(started(*IDS, extra=(consumer_shutdown("c0"), settle())))
    assert group(r)["members"] == {"c1": [0, 1], "c2": [2, 3], "c3": [4, 5]}


def test_E1_cooperative_initial_assignment_and_one_rebalance_when_c3_leaves():
    """§F.E E1, cooperative-sticky only: initial c0{0,4} c1{1,5} c2{2} c3{3}; c3 leaves: one
    rebalance, survivors revoke nothing, only p3 moves (to c2), c0 and c1 keep processing."""
    sc = started(*IDS, strategy=COOP, extra=(consumer_shutdown("c3"), settle()))
    before = upto(sc, "G")
    assert group(before)["protocol"] == "cooperative"
    assert group(before)["members"] == {"c0": [0, 4], "c1": [1, 5], "c2": [2], "c3": [3]}
    r = run(sc, steps=True)
    assert group(r)["generation"] == group(before)["generation"] + 1, "one rebalance, not two"
    assert group(r)["members"] == {"c0": [0, 4], "c1": [1, 5], "c2": [2, 3]}
    left = steps_of(r, "group_member_left")[0]["t_ms"]
    assert [s for s in after(r, left, "consumer_revoke") if s["consumer"] != "c3"] == [], "survivors keep all"
    for c in ("c0", "c1", "c2"):
        assert downtime_after(r, c, left) == 0, f"{c} kept processing"


def test_E1_cooperative_c0_leaves():
    """§F.E E1: c0 leaves: one rebalance, c1{1,5} c2{0,2} c3{3,4}, nobody revokes anything."""
    sc = started(*IDS, strategy=COOP, extra=(consumer_shutdown("c0"), settle()))
    before = upto(sc, "G")
    r = run(sc, steps=True)
    assert group(r)["members"] == {"c1": [1, 5], "c2": [0, 2], "c3": [3, 4]}
    assert group(r)["generation"] == group(before)["generation"] + 1
    left = steps_of(r, "group_member_left")[0]["t_ms"]
    assert [s for s in after(r, left, "consumer_revoke") if s["consumer"] != "c0"] == []


# ============================================================================ E2 a member joins


def test_E2_eager_range_a_fifth_consumer_joins():
    """§F.E E2, eager + range: everyone revokes everything; G+1 c0{0,1} c1{2} c2{3} c3{4} c4{5};
    one rebalance."""
    sc = story(
        *[subscribe(c) for c in IDS], settle(), point("G"), subscribe("c4"), settle(),
        partitions=6, consumers=members(*IDS, "c4"),
    )  # fmt: skip
    before = upto(sc, "G")
    r = run(sc, steps=True)
    assert group(r)["generation"] == group(before)["generation"] + 1
    assert group(r)["members"] == {"c0": [0, 1], "c1": [2], "c2": [3], "c3": [4], "c4": [5]}
    joined = steps_of(r, "consumer_subscribe", "c4")[0]["t_ms"]
    revoked = {s["consumer"]: s["partitions"] for s in after(r, joined, "consumer_revoke")}
    assert revoked == {"c0": [0, 1], "c1": [2, 3], "c2": [4], "c3": [5]}


def test_E2_eager_range_a_newcomer_that_sorts_first_shifts_the_ranges():
    """§F.E E2: a newcomer whose id sorts first (a0): a0{0,1} c0{2} c1{3} c2{4} c3{5}."""
    sc = story(
        *[subscribe(c) for c in IDS], settle(), subscribe("a0"), settle(),
        partitions=6, consumers=members("a0", *IDS),
    )  # fmt: skip
    r = run(sc)
    assert group(r)["members"] == {"a0": [0, 1], "c0": [2], "c1": [3], "c2": [4], "c3": [5]}


def test_E2_cooperative_two_rebalances_and_exactly_one_partition_moves():
    """§F.E E2, cooperative sticky: rebalance 1 (G+1) c0{0,4} c1{1} c2{2} c3{3} c4{}, c1 revokes
    p5 and rejoins; rebalance 2 (G+2) gives p5 to c4. c0, c2, c3 never interrupted."""
    sc = story(
        *[subscribe(c) for c in IDS], settle(), point("G"), subscribe("c4"), settle(),
        partitions=6, consumers=members(*IDS, "c4", strategy=COOP),
    )  # fmt: skip
    before = upto(sc, "G")
    gen = group(before)["generation"]
    r = run(sc, steps=True)
    history = {h["generation"]: h["assignment"] for h in group(r)["history"]}
    assert history[gen + 1] == {"c0": [0, 4], "c1": [1], "c2": [2], "c3": [3], "c4": []}
    assert history[gen + 2] == {"c0": [0, 4], "c1": [1], "c2": [2], "c3": [3], "c4": [5]}
    assert group(r)["generation"] == gen + 2, "two rebalances"
    joined = steps_of(r, "consumer_subscribe", "c4")[0]["t_ms"]
    revokes = [(s["consumer"], s["partitions"]) for s in after(r, joined, "consumer_revoke")]
    assert revokes == [("c1", [5])], "exactly one partition moved, revoked by c1 alone"
    for c in ("c0", "c2", "c3"):
        assert downtime_after(r, c, joined) == 0, f"{c} was never interrupted"
    assert downtime_after(r, "c1", joined) == 0, "c1 kept processing p1"


# ============================================================================ E3 a crash


@pytest.mark.parametrize(
    ("strategy", "after_e1"),
    [
        (None, {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]}),
        (COOP, {"c0": [0, 4], "c1": [1, 5], "c2": [2, 3]}),
    ],
)
def test_E3_a_dynamic_member_crashes_and_its_partitions_wait_for_the_session_timeout(strategy, after_e1):
    """§F.E E3: no LeaveGroup; the coordinator removes c3 45 s after its last heartbeat, then
    one rebalance as in E1 (eager or cooperative)."""
    sc = started(*IDS, strategy=strategy, extra=(consumer_crash("c3"), advance(50 * SEC), settle()))
    before = upto(sc, "G")
    r = run(sc, steps=True)
    crash = steps_of(r, "consumer_crash", "c3")[0]["t_ms"]
    expired = steps_of(r, "group_member_expired")[0]["t_ms"]
    assert crash + 42 * SEC <= expired <= crash + 45 * SEC, "45 s after the last heartbeat (every 3 s)"
    assert group(r)["generation"] == group(before)["generation"] + 1
    assert group(r)["members"] == after_e1
    early = [s for s in steps_of(r, "group_prepare_rebalance") if crash <= s["t_ms"] < expired]
    assert not early, "nothing happens until the session timer fires"


@pytest.mark.parametrize("stop", [consumer_crash, consumer_shutdown])
def test_E3_a_static_member_back_within_the_session_timeout_keeps_its_assignment(stop):
    """§F.E E3 (static, group.instance.id=i3): back within 45 s, a new member id and its old
    assignment, no rebalance, no generation change. A clean shutdown of a static member is the
    same, since it never sends LeaveGroup."""
    cs = list(members(*IDS))
    cs[3] = {**cs[3], "group.instance.id": "i3"}
    sc = story(
        *[subscribe(c) for c in IDS], settle(), point("G"),
        stop("c3"), advance(20 * SEC), consumer_restart("c3"), subscribe("c3"), settle(),
        partitions=6, consumers=tuple(cs),
    )  # fmt: skip
    before = upto(sc, "G")
    r = run(sc, steps=True)
    assert group(r)["generation"] == group(before)["generation"], "no rebalance"
    assert group(r)["members"] == group(before)["members"]
    assert r["consumers"]["c3"]["member_id"] != before["consumers"]["c3"]["member_id"]
    # static members sort first in range (by group.instance.id, APA 150-162): c3 leads the order
    assert r["consumers"]["c3"]["assigned"] == group(before)["members"]["c3"] == [0, 1]
    assert steps_of(r, "group_static_rejoin")
    assert not steps_of(r, "group_member_left"), "a static member sends no LeaveGroup"


def test_E3_a_static_member_away_longer_than_the_session_timeout_is_removed():
    cs = list(members(*IDS))
    cs[3] = {**cs[3], "group.instance.id": "i3"}
    sc = story(
        *[subscribe(c) for c in IDS], settle(), point("G"),
        consumer_crash("c3"), advance(60 * SEC),
        partitions=6, consumers=tuple(cs),
    )  # fmt: skip
    before = upto(sc, "G")
    r = run(sc, steps=True)
    assert steps_of(r, "group_member_expired")
    assert group(r)["generation"] == group(before)["generation"] + 1, "one rebalance"
    assert group(r)["members"] == {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]}


# ============================================================================ E4 a slow consumer


def test_E4_a_livelocked_consumer_leaves_at_max_poll_interval_and_its_work_is_redone():
    """§F.E E4: c1 takes 6 min over one batch (max.poll.interval.ms = 5 min). At 5 min its
    heartbeat thread sends LeaveGroup and c0 takes p1 from c1's last commit; c1's commitSync then
    fails; its next poll() rejoins (another rebalance); what c1 processed uncommitted is read again
    by c0."""
    sc = story(
        *[subscribe(c) for c in ("c0", "c1")], settle(),
        produce("x0", partition=1), produce("x1", partition=1), produce("x2", partition=1),
        advance(SEC), point("G"), stall("c1", 6 * MIN), point("stalled"), commit("c1"), settle(),
        partitions=2, consumers=members("c0", "c1", enable_auto_commit=False),
    )  # fmt: skip
    before = upto(sc, "G")
    gen = group(before)["generation"]
    assert [x["record"] for x in received(before, "c1")] == ["x0", "x1", "x2"]
    r = run(sc, steps=True)
    stalled = steps_of(r, "consumer_stall", "c1")[0]["t_ms"]
    timeout = steps_of(r, "consumer_poll_timeout", "c1")[0]
    # the poll timer counts from c1's last poll(), at most one loop period (100 ms) before the stall
    assert 5 * MIN - 100 < timeout["t_ms"] - stalled <= 5 * MIN + 1, "the poll timer, not the session's"
    assert steps_of(r, "group_member_left")[0]["t_ms"] == timeout["t_ms"] + 1
    mid = upto(sc, "stalled")
    assert group(mid)["generation"] == gen + 1 and group(mid)["members"] == {"c0": [0, 1]}
    assert [x["record"] for x in received(mid, "c0", 1)] == ["x0", "x1", "x2"], "redone: duplicates"
    assert r["commits"][-1]["error"] == "UNKNOWN_MEMBER_ID", "CommitFailedException"
    assert group(r)["generation"] == gen + 2, "its next poll rejoins: another rebalance"
    assert group(r)["members"] == {"c0": [0], "c1": [1]}


# ============================================================================ E5 stale generations


def test_E5_what_a_commit_gets_through_a_rebalance():
    """§F.E E5 (§E.8), one member c1 (static, polling only on `poll` actions): generation G in
    PreparingRebalance -> accepted; G after the join completed without it (a static member is
    kept) -> ILLEGAL_GENERATION; while its own rejoin is in flight -> REBALANCE_IN_PROGRESS (the
    Java client does not send it: RebalanceInProgressException, kafka-eos-kraft §E.C C2); G+1
    in Stable -> accepted. Timings: the rebalance timeout is every member's
    max.poll.interval.ms, 20 s; c1 heartbeats every 15 s (at about 21 s and 36 s), so it has not
    heard of the join's end when it commits at 31 s (decision 5)."""
    c1 = consumer("c1", auto_commit=False, group_instance_id="i1", max_poll_interval_ms=20 * SEC,
                  heartbeat_interval_ms=15 * SEC)
    others = tuple(consumer(c, loop_ms=100, max_poll_interval_ms=20 * SEC) for c in ("c0", "c2"))
    sc = story(
        subscribe("c0"), subscribe("c1"), poll("c1", timeout_ms=10 * SEC), point("G"),  # t = 10 s
        subscribe("c2"), advance(5 * SEC), poll("c1", timeout_ms=1), point("preparing"),
        commit("c1", {0: 1}),  # generation G, PreparingRebalance: accepted
        advance(16 * SEC), point("completed"),  # the join timed out at ~30 s, keeping static c1
        commit("c1", {0: 2}),  # still G: ILLEGAL_GENERATION
        poll("c1", timeout_ms=1),  # c1 sends its JoinGroup and returns before the answer
        commit("c1", {0: 3}),  # mid-rebalance: not sent, REBALANCE_IN_PROGRESS
        poll("c1"),  # rejoined, synced: G+1
        commit("c1", {0: 4}),  # accepted
        partitions=2, consumers=(others[0], c1, others[1]),
    )  # fmt: skip
    gen = group(upto(sc, "G"))["generation"]
    assert group(upto(sc, "preparing"))["state"] == "PreparingRebalance"
    done = upto(sc, "completed")
    assert group(done)["generation"] == gen + 1 and "c1" in group(done)["members"]
    assert done["consumers"]["c1"]["generation"] == gen, "c1 has not heard yet"
    r = run(sc)
    assert [c["error"] for c in r["commits"]] == [None, "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", None]
    assert group(r)["state"] == "Stable" and group(r)["committed"]["0"] == 4
    assert r["consumers"]["c1"]["generation"] == gen + 1
    # each refused commit's error step says it is a commit's (the mid-rebalance one too, which the
    # client refuses without sending: its RebalanceInProgressException is commitSync's)
    errors = steps_of(run(sc, steps=True), "consumer_error")
    refused = [s for s in errors if s.get("request") == "OffsetCommit"]
    assert [s["error"] for s in refused] == ["ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"]


def test_E5_the_broker_refuses_a_current_generation_commit_while_completing_the_rebalance():
    """§E.8's third line at the coordinator itself (engine/offsets.py): generation G+1 while
    CompletingRebalance -> REBALANCE_IN_PROGRESS (a Java client never sends it, see above)."""
    from engine.offsets import Coordinator, Group

    coordinator = Coordinator()
    coordinator.groups["g"] = Group("g", state="CompletingRebalance", members={"m": None}, generation=8)
    assert coordinator.commit("g", {("t", 0): 1}, 0, member="m", generation=8) == "REBALANCE_IN_PROGRESS"
    assert coordinator.commit("g", {("t", 0): 1}, 0, member="m", generation=7) == "ILLEGAL_GENERATION"


# ============================================================================ E6 formation


def test_E6_four_consumers_within_the_initial_delay_form_one_generation():
    """§F.E E6: start at 0, 1, 2 and 2.5 s: the 3 s delay restarts once, at t = 6 s one rebalance,
    generation 1, four members."""
    sc = story(
        subscribe("c0"), advance(SEC), subscribe("c1"), advance(SEC), subscribe("c2"),
        advance(500), subscribe("c3"), advance(10 * SEC),
        partitions=6, consumers=members(*IDS),
    )  # fmt: skip
    r = run(sc, steps=True)
    assert [h["generation"] for h in group(r)["history"]] == [1]
    done = steps_of(r, "group_join_complete")
    assert len(done) == 1 and 6 * SEC <= done[0]["t_ms"] < 6 * SEC + 10
    assert len(steps_of(r, "group_initial_delay")) == 1
    assert sorted(group(r)["members"]) == list(IDS)


def test_E6_four_consumers_five_seconds_apart_make_four_generations():
    sc = story(
        subscribe("c0"), advance(5 * SEC), subscribe("c1"), advance(5 * SEC), subscribe("c2"),
        advance(5 * SEC), subscribe("c3"), settle(),
        partitions=6, consumers=members(*IDS),
    )  # fmt: skip
    r = run(sc, steps=True)
    history = group(r)["history"]
    assert [h["generation"] for h in history] == [1, 2, 3, 4]
    assert history[0]["assignment"] == {"c0": [0, 1, 2, 3, 4, 5]}
    assert 3 * SEC <= history[0]["t_ms"] < 3 * SEC + 10
    assert not steps_of(r, "group_initial_delay"), "later rebalances have no delay"


# ============================================================================ eos §E.C


def test_eos_C1_a_member_dropped_for_not_polling_gets_unknown_member_id():
    """kafka-eos-kraft §E.C C1: c1 stops polling for more than 300 s, leaves, the group moves on
    one generation; c1's commitSync with its old member id and generation -> UNKNOWN_MEMBER_ID."""
    sc = story(
        *[subscribe(c) for c in ("c0", "c1")], settle(), point("G"),
        stall("c1", 310 * SEC), commit("c1", {1: 0}),
        partitions=2, consumers=members("c0", "c1", enable_auto_commit=False),
    )  # fmt: skip
    gen = group(upto(sc, "G"))["generation"]
    r = run(sc)
    assert group(r)["generation"] == gen + 1
    assert r["commits"][0]["error"] == "UNKNOWN_MEMBER_ID"


def test_eos_C2_a_live_member_with_the_old_generation_gets_illegal_generation():
    """§E.C C2 is E5's second and third commits: a member still in the group sends the generation
    the group has left behind (ILLEGAL_GENERATION); mid-rebalance on the client it gets
    RebalanceInProgressException instead."""
    test_E5_what_a_commit_gets_through_a_rebalance()


def test_eos_C3_a_second_process_with_the_same_instance_id_fences_the_first():
    """§E.C C3: two processes with group.instance.id=i1; the second joins and gets a new member
    id for i1; the first commits with its old member id -> FENCED_INSTANCE_ID."""
    sc = story(
        subscribe("c1"), settle(), subscribe("c1b"), settle(), commit("c1", {0: 1}),
        partitions=2,
        consumers=(
            consumer("c1", reset="earliest", loop_ms=100, auto_commit=False, **{"group_instance_id": "i1"}),
            consumer("c1b", reset="earliest", loop_ms=100, auto_commit=False, **{"group_instance_id": "i1"}),
        ),
    )  # fmt: skip
    r = run(sc, steps=True)
    assert r["commits"][0]["error"] == "FENCED_INSTANCE_ID"
    assert steps_of(r, "group_static_rejoin")
    assert list(group(r)["members"]) == ["c1b"]


def test_eos_C4_kip_848_groups_are_refused_with_a_clear_problem():
    """§E.C C4 needs group.protocol=consumer (KIP-848), which is not built: refused, not run."""
    sc = story(subscribe("c0"), consumers=(consumer("c0", group_protocol="consumer"),))
    with pytest.raises(ScenarioError, match="KIP-848"):
        run(sc)


def test_eos_C5_an_admin_commit_is_accepted_only_while_the_group_is_empty():
    """§E.C C5: a commit with generation -1 (an assign() consumer in the same group) is refused
    with UNKNOWN_MEMBER_ID while the group has members, accepted once it is Empty."""
    sc = story(
        subscribe("c0"), settle(), {"do": "assign", "consumer": "admin", "partitions": [0]},
        commit("admin", {0: 7}), consumer_shutdown("c0"), advance(SEC), commit("admin", {0: 7}),
        partitions=1,
        consumers=(consumer("c0", loop_ms=100), consumer("admin", auto_commit=False)),
    )  # fmt: skip
    r = run(sc)
    assert [c["error"] for c in r["commits"]] == ["UNKNOWN_MEMBER_ID", None]
    assert group(r)["state"] == "Empty" and group(r)["committed"] == {"0": 7}


# ============================================================================ invariants

ACTIONS = st.sampled_from(["shutdown", "crash", "restart", "stall", "advance"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    schedule=st.lists(st.tuples(ACTIONS, st.sampled_from(IDS), st.integers(1, 20)), max_size=8),
    strategy=st.sampled_from([None, COOP, ["roundrobin"], ["sticky"]]),
    static=st.booleans(),
    partitions=st.integers(1, 7),
)
def test_invariants_over_random_membership_schedules(schedule, strategy, static, partitions):
    """Over random schedules of leaves, crashes, restarts and stalls, any assignor, with or without
    a static member: in every generation's
    assignment no partition has two owners; once the group settles, the live members own every
    partition between them, each exactly once, and each live member's own view agrees."""
    actions: list[dict] = [subscribe(c) for c in IDS] + [settle()]
    for what, cid, n in schedule:
        if what == "shutdown":
            actions.append(consumer_shutdown(cid))
        elif what == "crash":
            actions.append(consumer_crash(cid))
        elif what == "restart":
            actions += [consumer_restart(cid), subscribe(cid)]
        elif what == "stall":
            actions.append(stall(cid, n * SEC))
        else:
            actions.append(advance(n * 500))
    # a crashed member stays in the Stable group until its session times out (45 s): settle
    # waits for Stable groups only, so the story first outwaits the session timers
    actions += [advance(50 * SEC), settle(max_ms=10 * MIN)]
    cs = list(members(*IDS, strategy=strategy))
    if static:  # one static member (group.instance.id), with Kafka's default session timeout
        cs[2] = {**cs[2], "group.instance.id": "i2"}
    sc = story(*actions, partitions=partitions, consumers=tuple(cs))
    r = run(sc)
    g = group(r)
    for h in g["history"]:
        owned = [p for ps in h["assignment"].values() for p in ps]
        assert len(owned) == len(set(owned)), f"generation {h['generation']}: a partition with two owners"
    alive = sorted(c for c, v in r["consumers"].items() if v["alive"])
    if not alive:
        return
    assert g["state"] == "Stable"
    # a member that crashed stays until its session times out (a restarted one that crashed while
    # parked in a join gets its 45 s only once that join completes): members may outnumber the living
    assert set(alive) <= set(g["members"])
    owned = sorted(p for ps in g["members"].values() for p in ps)
    assert owned == list(range(partitions)), "every partition assigned, once"
    for c in alive:
        assert r["consumers"][c]["assigned"] == g["members"][c]
        assert r["consumers"][c]["generation"] == g["generation"]


def test_a_member_with_no_assignor_in_common_is_refused_by_the_group():
    """ClassicGroup.supportsProtocols: a JoinGroup whose assignors share none with the group's
    members gets INCONSISTENT_GROUP_PROTOCOL, which poll() throws; the group is unchanged."""
    sc = story(
        subscribe("c0"), settle(), subscribe("c1"), advance(5 * SEC),
        partitions=2,
        consumers=(
            consumer("c0", loop_ms=100, partition_assignment_strategy=["range"]),
            consumer("c1", loop_ms=100, partition_assignment_strategy=["roundrobin"]),
        ),
    )  # fmt: skip
    r = run(sc)
    assert r["consumers"]["c1"]["errors"][0]["error"] == "INCONSISTENT_GROUP_PROTOCOL"
    assert group(r)["members"] == {"c0": [0, 1]} and group(r)["generation"] == 1


def test_the_coordinator_moves_with_the_offsets_partition_and_the_group_carries_on():
    """§E.1: the coordinator is the leader of __consumer_offsets partition
    abs(hashCode("orders")) % 50 = 31 (§B.1's worked value); when that broker fails the next
    replica leads and coordinates, with the group's state (rebuilt from the log in Kafka): the
    group stays Stable and a later leave rebalances under the new coordinator."""
    sc = story(
        *[subscribe(c) for c in ("c0", "c1")], settle(), point("G"),
        {"do": "crash", "broker": 2}, advance(20 * SEC), point("moved"),
        consumer_shutdown("c1"), settle(),
        brokers=(1, 2, 3), partitions=2, rf=3,
        consumers=tuple(consumer(c, group="orders", loop_ms=100) for c in ("c0", "c1")),
    )  # fmt: skip
    before = upto(sc, "G")
    assert group(before, "orders")["offsets_partition"] == 31
    first = group(before, "orders")["coordinator"]
    moved = upto(sc, "moved")
    assert first == 2 and group(moved, "orders")["coordinator"] not in (None, first)
    assert group(moved, "orders")["state"] == "Stable"
    assert group(moved, "orders")["generation"] == group(before, "orders")["generation"]
    r = run(sc)
    assert group(r, "orders")["members"] == {"c0": [0, 1]}
    assert group(r, "orders")["generation"] == group(before, "orders")["generation"] + 1


def test_a_commit_right_after_a_stall_comes_before_the_next_poll():
    """§E.8 / E4's application: it processes a batch (the stall), commits, then polls. A stall
    shorter than max.poll.interval.ms keeps the membership, and the commit right after it carries
    the positions the application reached, before its loop polls again."""
    sc = story(
        *[subscribe(c) for c in ("c0", "c1")], settle(),
        produce("x0", partition=1), produce("x1", partition=1), advance(SEC),
        stall("c1", 40 * SEC), commit("c1"),
        partitions=2, consumers=members("c0", "c1", enable_auto_commit=False),
    )  # fmt: skip
    r = run(sc, steps=True)
    assert r["commits"] == [{"consumer": "c1", "offsets": {"1": 2}, "outcome": "ok", "error": None}]
    stalled = [d for d in r["consumers"]["c1"]["downtime"] if d["why"] == "stalled"]
    assert [d["to_ms"] - d["from_ms"] for d in stalled] == [40 * SEC]


def test_a_restarted_process_waits_for_its_partitions_as_downtime_and_views_show_the_timers():
    """A dynamic member's new process owns nothing from its restart until the group assigns it
    partitions ("unassigned"); each view carries the member's downtime so far and its timers."""
    sc = story(
        *[subscribe(c) for c in ("c0", "c1")], settle(),
        consumer_shutdown("c0"), settle(), consumer_restart("c0"), settle(),
        partitions=2, consumers=members("c0", "c1"),
    )  # fmt: skip
    r = run(sc, steps=True, all_views=True)
    restart = next(i for i, s in enumerate(r["steps"]) if s["kind"] == "consumer_restart")
    back = r["steps"][restart]["t_ms"]
    waits = [d for d in r["consumers"]["c0"]["downtime"] if d["from_ms"] >= back]
    assert waits and waits[0]["why"] == "unassigned" and waits[0]["to_ms"] > back
    view = r["views"][restart + 1]["consumers"]["c0"]
    assert view["downtime"][-1]["from_ms"] == back and view["static"] is False
    member = r["views"][restart]["consumers"]["c1"]
    assert member["session_deadline_ms"] is not None and member["poll_deadline_ms"] is None
