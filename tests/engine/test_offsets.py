"""Committed offsets (engine/offsets.py) against kafka-clients-logs.md §B and the canonical
scenarios B1-B6 of §F.B."""

import pytest

from engine.offsets import (
    DAY_MS,
    NO_OFFSET,
    Consumer,
    Coordinator,
    Group,
    java_string_hash,
    kafka_abs,
    offsets_partition_for,
)

P0 = ("t", 0)
HOUR = 3600 * 1000


@pytest.mark.parametrize(
    "group, partition",
    [("my-group", 12), ("test-group", 12), ("orders", 31), ("payments", 13), ("group-1", 49), ("group-2", 0),
     ("", 0)],
)  # fmt: skip
def test_B5_where_a_group_lives_is_java_hash_code_not_murmur2(group, partition):
    assert offsets_partition_for(group) == partition


def test_B5_java_hash_codes_and_kafkas_abs():
    assert java_string_hash("orders") == -1008770331
    assert java_string_hash("my-group") == -1906497762 and java_string_hash("test-group") == 627841412
    assert java_string_hash("") == 0
    assert kafka_abs(-(1 << 31)) == 0 and kafka_abs(-5) == 5


def consumer_at(coordinator: Coordinator, group: str = "g", **kwargs) -> Consumer:
    start = coordinator.fetch(group, P0)
    c = Consumer(group, **kwargs)
    c.assigned(0, {P0: 0 if start == NO_OFFSET else start})
    return c


def test_B1_process_then_commit_redelivers_after_a_crash():
    coordinator = Coordinator()
    c = consumer_at(coordinator, auto_commit=False)
    c.poll(coordinator, 0, {P0: 5})  # 0-4 returned and processed; the crash comes before commitSync
    restarted = consumer_at(coordinator, auto_commit=False)
    assert restarted.positions[P0] == 0  # 0-4 are processed again: at-least-once


def test_B2_commit_then_process_skips_after_a_crash():
    coordinator = Coordinator()
    c = consumer_at(coordinator, auto_commit=False)
    c.poll(coordinator, 0, {P0: 5})
    assert c.commit_sync(coordinator, 1) is None
    assert coordinator.fetch("g", P0) == 5  # the next offset to read, not the last one processed
    restarted = consumer_at(coordinator, auto_commit=False)  # the crash came while processing 2
    assert restarted.positions[P0] == 5  # 2-4 are never processed: at-most-once


def test_B3_auto_commit_happens_inside_poll_with_the_previous_polls_positions():
    coordinator = Coordinator()
    c = consumer_at(coordinator)
    assert c.poll(coordinator, 0, {P0: 500}) is None  # t=0: returns 0-499
    assert c.poll(coordinator, 2_000, {P0: 500}) is None  # t=2 s: the timer has not run out
    assert c.poll(coordinator, 5_500, {P0: 500}) == {P0: 1000}  # t=5.5 s: commits, then 1000-1499
    assert coordinator.fetch("g", P0) == 1000
    restarted = consumer_at(coordinator)  # crash at t=6 s while processing 1200
    assert restarted.positions[P0] == 1000  # 1000-1199 again; nothing lost


def test_B4_offsets_expire_a_retention_after_the_group_became_empty():
    monday_9 = 9 * HOUR
    coordinator = Coordinator()
    coordinator.groups["G"] = group = Group("G", state="Stable", members={"m"}, subscribed={"t"})
    coordinator.commit("G", {P0: 42}, monday_9 - 30 * DAY_MS, member="m", generation=0)
    assert coordinator.expire(monday_9) == []  # subscribed and active: an old commit does not expire
    group.members.clear()
    group.subscribed.clear()
    group.set_state("Empty", monday_9)
    check = 10 * 60 * 1000
    assert coordinator.expire(monday_9 + 7 * DAY_MS - check) == []
    assert coordinator.expire(monday_9 + 7 * DAY_MS) == [("G", P0)]
    assert coordinator.fetch("G", P0) == NO_OFFSET  # Tuesday's consumer applies auto.offset.reset


def test_B4_an_active_subscribed_group_on_a_quiet_topic_keeps_its_offsets_for_a_month():
    coordinator = Coordinator()
    coordinator.groups["G"] = Group("G", state="Stable", members={"m"}, subscribed={"t"})
    coordinator.commit("G", {P0: 7}, 0, member="m", generation=0)
    assert coordinator.expire(31 * DAY_MS) == [] and coordinator.fetch("G", P0) == 7


def test_a_simple_groups_offsets_expire_a_retention_after_each_commit():
    coordinator = Coordinator()
    assert coordinator.commit("tools", {P0: 3}, 0) is None  # assign() or an admin tool: a simple group
    assert coordinator.groups["tools"].protocol == "simple"
    assert coordinator.expire(7 * DAY_MS - 1) == [] and coordinator.expire(7 * DAY_MS) == [("tools", P0)]


def test_B6_commits_can_go_backwards():
    coordinator = Coordinator()
    c = consumer_at(coordinator, auto_commit=False)
    assert c.commit_sync(coordinator, 1, {P0: 100}) is None
    assert c.commit_sync(coordinator, 2, {P0: 50}) is None
    assert coordinator.fetch("g", P0) == 50  # a restart reprocesses 50-99


def test_the_coordinator_checks_generation_and_membership_not_the_offset():
    coordinator = Coordinator()
    coordinator.groups["G"] = Group("G", state="Stable", members={"m"}, generation=3)
    assert coordinator.commit("G", {P0: 10**12}, 0, member="m", generation=3) is None  # any value
    assert coordinator.commit("G", {P0: 1}, 0, member="m", generation=2) == "ILLEGAL_GENERATION"
    assert coordinator.commit("G", {P0: 1}, 0, member="x", generation=3) == "UNKNOWN_MEMBER_ID"
    assert coordinator.commit("G", {P0: 1}, 0) == "UNKNOWN_MEMBER_ID"  # not Empty: a member must say who
    coordinator.groups["G"].set_state("CompletingRebalance", 1)
    assert coordinator.commit("G", {P0: 1}, 2, member="m", generation=3) == "REBALANCE_IN_PROGRESS"
    assert coordinator.commit("nobody", {P0: 1}, 0, member="m", generation=0) == "GROUP_ID_NOT_FOUND"
    assert coordinator.fetch("G", P0) == 10**12
