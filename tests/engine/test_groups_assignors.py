"""engine/groups.py on its own: the assignors (kafka-clients-logs.md §E.6) and the coordinator's
protocol vote (§E.2 step 4), on the worked cases of §F.E and a few edge cases. The engine runs
them in test_groups_canonical.py; these pin the rules themselves."""

from __future__ import annotations

from engine.groups import Member, Subscription, assign, select_protocol


def subs(*ids: str, owned: dict[str, tuple[int, ...]] | None = None, static: dict[str, str] | None = None):
    owned = owned or {}
    static = static or {}
    return [Subscription(m, static.get(m), owned.get(m, ()), owned.get(m, ()), 1) for m in ids]


def test_range_gives_contiguous_ranges_and_the_first_members_one_extra():
    """§E.6 RangeAssignor: 6 partitions, 4 members: 2, 2, 1, 1."""
    got = assign("range", subs("c0", "c1", "c2", "c3"), 6)
    assert got == {"c0": [0, 1], "c1": [2, 3], "c2": [4], "c3": [5]}


def test_range_sorts_static_members_first_by_instance_id():
    """APA 150-162: members with a group.instance.id sort before the others, by that id."""
    got = assign("range", subs("a0", "c1", static={"c1": "i1"}), 3)
    assert got == {"c1": [0, 1], "a0": [2]}


def test_range_with_more_members_than_partitions_leaves_the_last_ones_empty():
    assert assign("range", subs("c0", "c1", "c2"), 2) == {"c0": [0], "c1": [1], "c2": []}


def test_roundrobin_deals_partitions_in_turn():
    assert assign("roundrobin", subs("c0", "c1"), 5) == {"c0": [0, 2, 4], "c1": [1, 3]}


def test_cooperative_sticky_initial_assignment_of_an_empty_group():
    """§F.E E1 [CALC]: pass 2 deals p0..p3 to the four empty members, then p4, p5 to the first two."""
    got = assign("cooperative-sticky", subs("c0", "c1", "c2", "c3"), 6)
    assert got == {"c0": [0, 4], "c1": [1, 5], "c2": [2], "c3": [3]}


def test_cooperative_sticky_holds_back_a_partition_that_moves_between_live_members():
    """§F.E E2: c1 gives up its highest (p5); p5 would go to c4, so this round leaves it out."""
    owned = {"c0": (0, 4), "c1": (1, 5), "c2": (2,), "c3": (3,)}
    got = assign("cooperative-sticky", subs("c0", "c1", "c2", "c3", "c4", owned=owned), 6)
    assert got == {"c0": [0, 4], "c1": [1], "c2": [2], "c3": [3], "c4": []}
    again = {"c0": (0, 4), "c1": (1,), "c2": (2,), "c3": (3,)}
    got = assign("cooperative-sticky", subs("c0", "c1", "c2", "c3", "c4", owned=again), 6)
    assert got["c4"] == [5], "the next rebalance gives it to the new owner"


def test_eager_sticky_moves_the_partition_at_once():
    """The eager StickyAssignor uses the previous assignment but has no cooperative hold-back."""
    owned = {"c0": (0, 4), "c1": (1, 5), "c2": (2,), "c3": (3,)}
    got = assign("sticky", subs("c0", "c1", "c2", "c3", "c4", owned=owned), 6)
    assert got == {"c0": [0, 4], "c1": [1], "c2": [2], "c3": [3], "c4": [5]}


def member(mid: str, *protocols: str) -> Member:
    return Member(mid, mid, 1, None, protocols, 300_000, 45_000, 0)


def test_the_vote_picks_the_common_assignor_most_members_prefer():
    """CG 1017-1037: candidates are the assignors every member supports; each votes for its first."""
    ms = [member("a", "range", "cooperative-sticky"), member("b", "cooperative-sticky")]
    assert select_protocol(ms) == "cooperative-sticky", "range is not common"
    ms = [member("a", "range", "cooperative-sticky"), member("b", "range", "cooperative-sticky")]
    assert select_protocol(ms) == "range", "the default list: eager range"
    assert select_protocol([member("a", "range"), member("b", "roundrobin")]) is None


def test_cooperative_sticky_deals_round_robin_past_members_that_fill_up():
    """Pass 2 cycles over the members below minQuota, dropping each as it reaches it: 6
    partitions over 3 empty members deal p0..p5 as c0, c1, c2, c0, c1, c2."""
    got = assign("cooperative-sticky", subs("c0", "c1", "c2"), 6)
    assert got == {"c0": [0, 3], "c1": [1, 4], "c2": [2, 5]}
