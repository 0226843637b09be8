"""Consumer groups, the classic protocol's rules that do not need a clock: the assignors the group
leader runs on the client, the coordinator's protocol vote, and the member record it keeps.

Pure functions over plain data (engine/consumers.py drives them on the clock). Sources are Kafka
4.x's `RangeAssignor`, `RoundRobinAssignor`, `AbstractStickyAssignor` (its "constrained" builder,
when every member subscribes to the same topics, which is the only case here: one topic) and
`CooperativeStickyAssignor`, and the group coordinator's `ClassicGroup.selectProtocol`.

Where Kafka's answer depends on Java hashing, this module fixes a rule and says so:

- The sticky assignors visit members in `HashMap` iteration order of their member ids (pass 1 of
  the constrained builder). Here they visit them in sorted order, so when several members may keep
  `maxQuota` partitions, the ones that sort first keep them and the member visited later gives up
  its highest-numbered extras.
- `selectProtocol` takes the most-voted candidate; a tie is broken by `HashMap` order in Kafka,
  here by the candidate's name.
- When the group leader leaves, Kafka picks "an arbitrary" remaining member; here the member that
  joined earliest (engine/consumers.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

EAGER = "eager"
COOPERATIVE = "cooperative"


@dataclass
class Member:
    """What the coordinator keeps about one member of a classic group (`ClassicGroupMember`)."""

    member_id: str
    consumer: str  # the scenario's consumer id (the client.id)
    incarnation: int  # which process of that consumer sent the JoinGroup
    instance_id: str | None  # group.instance.id: a static member
    protocols: tuple[str, ...]  # the assignors of partition.assignment.strategy, preferred first
    rebalance_timeout_ms: int  # the member's max.poll.interval.ms
    session_timeout_ms: int
    order: int  # when it was added (the first member added leads)
    owned: tuple[int, ...] = ()  # what its subscription metadata says it owns (cooperative)
    previous: tuple[int, ...] = ()  # its last assignment (the sticky assignors' user data)
    owned_generation: int = -1
    awaiting_join: bool = False  # a JoinGroup of the current rebalance is parked
    awaiting_sync: bool = False  # a SyncGroup is parked until the leader's arrives
    assignment: tuple[int, ...] = ()  # what the last SyncGroup gave it
    deadline_ms: int = 0  # the session timer: removed when it passes without a heartbeat

    def metadata(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """What a JoinGroup compares to decide whether a member 'changed its metadata'."""
        return self.protocols, self.owned


@dataclass(frozen=True)
class Subscription:
    """One member as the leader sees it in its JoinGroup response."""

    member_id: str
    instance_id: str | None
    owned: tuple[int, ...]
    previous: tuple[int, ...]
    generation: int


def select_protocol(members: Iterable[Member]) -> str | None:
    """`ClassicGroup.selectProtocol` (CG 1017-1037): the candidates are the assignors every member
    supports; each member votes for the first candidate in its own list; the most votes win (a tie
    goes to the name that sorts first, see the module's note). None when nothing is common."""
    members = list(members)
    if not members:
        return None
    common = set(members[0].protocols).intersection(*(m.protocols for m in members[1:]))
    if not common:
        return None
    votes: dict[str, int] = {}
    for m in members:
        vote = next(p for p in m.protocols if p in common)
        votes[vote] = votes.get(vote, 0) + 1
    return min(votes, key=lambda p: (-votes[p], p))


def sort_key(s: Subscription) -> tuple[int, str]:
    """`AbstractPartitionAssignor.MemberInfo.compareTo` (APA 150-162): static members first, by
    group.instance.id, then the others by member id."""
    return (0, s.instance_id) if s.instance_id is not None else (1, s.member_id)


def range_assign(members: list[Subscription], partitions: int) -> dict[str, list[int]]:
    """`RangeAssignor` (RA 42-80): members in sorted order get contiguous ranges of P // C
    partitions, the first P % C one more each. Not sticky: it depends on the sort order only."""
    ordered = sorted(members, key=sort_key)
    out: dict[str, list[int]] = {}
    n = len(ordered)
    start = 0
    for i, s in enumerate(ordered):
        size = partitions // n + (1 if i < partitions % n else 0)
        out[s.member_id] = list(range(start, start + size))
        start += size
    return out


def roundrobin_assign(members: list[Subscription], partitions: int) -> dict[str, list[int]]:
    """`RoundRobinAssignor`: partitions in order, dealt to the sorted members in turn."""
    ordered = sorted(members, key=sort_key)
    out: dict[str, list[int]] = {s.member_id: [] for s in ordered}
    for p in range(partitions):
        out[ordered[p % len(ordered)].member_id].append(p)
    return out


def sticky_assign(members: list[Subscription], partitions: int, *, cooperative: bool) -> dict[str, list[int]]:
    """The constrained sticky builder (ASA 585-835), then, for `cooperative-sticky`, the
    cooperative adjustment (CSA 109-128).

    Quotas: minQuota = P // C, maxQuota = ceil(P / C), and P % C members may hold maxQuota.
    Pass 1, members in sorted order (Kafka: HashMap order, see the module's note): each keeps its
    owned partitions, lowest first, up to maxQuota while members allowed maxQuota remain, else up
    to minQuota; it gives up its highest-numbered extras. Pass 2 deals the unassigned partitions
    in ascending order, round-robin, to members below minQuota (sorted), then one each to members
    at minQuota while maxQuota slots remain. A partition two members claim goes to the claim of
    the later generation (then the member that sorts first).

    Owned partitions are the member's reported `owned` (cooperative) or its `previous` assignment
    (the eager StickyAssignor's user data). With `cooperative`, a partition that would move from
    one live owner to another is left out of this round: its owner revokes it, rejoins, and the
    next rebalance gives it to the new owner."""
    ordered = sorted(members, key=sort_key)
    n = len(ordered)
    lo, hi = partitions // n, -(-partitions // n)
    max_slots = partitions % n if hi != lo else 0
    claims: dict[int, Subscription] = {}
    for s in ordered:
        for p in s.owned if cooperative else s.previous:
            if p >= partitions:
                continue
            prev = claims.get(p)
            if prev is None or s.generation > prev.generation:
                claims[p] = s
    owned_by: dict[str, list[int]] = {s.member_id: [] for s in ordered}
    for p, s in sorted(claims.items()):
        owned_by[s.member_id].append(p)
    out: dict[str, list[int]] = {s.member_id: [] for s in ordered}
    for s in ordered:
        mine = owned_by[s.member_id]
        if len(mine) >= hi and max_slots > 0:
            keep = hi
            max_slots -= 1
        else:
            keep = min(lo, len(mine))
        out[s.member_id] = mine[:keep]
    taken = {p for ps in out.values() for p in ps}
    unassigned = [p for p in range(partitions) if p not in taken]
    under = [s.member_id for s in ordered if len(out[s.member_id]) < lo]
    i = 0  # the round-robin position in `under` (Kafka cycles an iterator and removes as it goes)
    rest: list[int] = []
    for p in unassigned:
        if under:
            i %= len(under)
            m = under[i]
            out[m].append(p)
            if len(out[m]) >= lo:
                under.pop(i)  # the next member moves into position i
            else:
                i += 1
        else:
            rest.append(p)
    exact = [s.member_id for s in ordered if len(out[s.member_id]) == lo]
    for p in rest:
        if max_slots <= 0 or not exact:
            # cannot happen with one topic and every member subscribed; keep the partition placed
            exact = exact or [s.member_id for s in ordered]
        m = exact.pop(0)
        out[m].append(p)
        max_slots -= 1
    for ps in out.values():
        ps.sort()
    if cooperative:
        owner = {p: s.member_id for s in ordered for p in s.owned}
        for m, ps in out.items():
            out[m] = [p for p in ps if owner.get(p, m) == m]
    return out


ASSIGNORS = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "sticky": lambda members, partitions: sticky_assign(members, partitions, cooperative=False),
    "cooperative-sticky": lambda members, partitions: sticky_assign(members, partitions, cooperative=True),
}


def assign(assignor: str, members: list[Subscription], partitions: int) -> dict[str, list[int]]:
    """What the group leader's `ConsumerCoordinator.onLeaderElected` computes with the assignor the
    coordinator selected: every member's partitions, by member id."""
    return ASSIGNORS[assignor](members, partitions)
