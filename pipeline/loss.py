"""Theory of operation: the durability kernel, a Monte Carlo over partition-years.

One trial is one partition for one year: its RF replicas sit on brokers in racks (rack-aware
striping, or RF distinct brokers drawn at random); each replica's broker fails independently
(a Poisson process at the annual failure rate, AFR) and is down for `repair_h` hours with its
disk lost; on top of that, correlated domain events (a Poisson process over the cluster) cut
power to `blast_racks` racks at once for POWER_RESTORE_H hours: every broker there crashes at
the same instant and loses its unflushed page cache (kafka-semantics.md S13), unless the topic
flushes every message (`flush.messages=1`), in which case the log survives on disk.

`decide(timeline, ...)` replays a failure timeline through the engine's rules, reduced to the
facts that decide durability (kafka-semantics.md §2.2, §4, §5, S6, S13), with producers writing
acks=all all the time:
- a write is acknowledged only while the partition has a leader and its ISR is at least the
  effective min.insync.replicas (min(config, RF)); then every ISR member holds it, and any
  replica outside the ISR (down, or back but not yet caught up) misses it;
- a replica that goes down leaves the ISR, except the last member: KRaft keeps the last ISR
  member, leaderless, until it returns (the partition is offline meanwhile);
- a replica that returns while there is a leader catches up and rejoins;
- while offline, the last ISR member is elected when it returns; with unclean leader election
  on, any returning replica is elected instead (the engine's controller checks every
  unclean.leader.election.interval.ms, 5 minutes, which a year-long timeline cannot see);
- an acknowledged write is lost when a replica that does not hold every acknowledged record
  becomes leader: the others then truncate to it (lost_acked_records in the engine).
ELR (KIP-966) is off in this model; tests compare with the engine with ELR off.

The Monte Carlo draws the timelines vectorised and replays, one by one, only the trials whose
down periods could matter (two overlapping, or any when one failure is already too many); the
rest are decided in bulk: nothing lost, and unavailable only if a single outage already takes
the ISR below min.insync.replicas.

Closed form under independence: p = AFR x repair_h / 8760 is the probability a given replica is
down at a random instant; all RF replicas are down at a random instant with probability p^RF,
and the rate at which that state begins is RF x AFR x p^(RF-1) per year.
"""

from __future__ import annotations

import math

import numpy as np

HOURS_PER_YEAR = 8760.0
POWER_RESTORE_H = 2.0  # how long a power event keeps its racks down


def decide(
    timeline: list[tuple[float, str, tuple[int, ...], bool]],
    *,
    rf: int,
    min_isr: int,
    unclean: bool,
    flush_every: bool,
) -> dict[str, object]:
    """Replay a timeline of (t_h, "down"|"up", replicas (0-based), destroys_disk) in time order.

    A "down" whose destroys_disk is False is a power loss: the log survives only with
    flush_every. Returns lost (an acked write was lost at some point), online (a leader at the
    end), unavailable_h (hours with no leader or an ISR below min), first_loss_h.
    """
    eff_min = min(min_isr, rf)
    up = [True] * rf
    intact = [True] * rf  # holds every acknowledged record
    isr = set(range(rf))
    leader = True
    lost = False
    first_loss = None
    unavailable_h = 0.0
    last_t = 0.0

    def writable() -> bool:
        return leader and len(isr) >= eff_min

    def writes_flow() -> None:
        # while writes are acknowledged, everyone outside the ISR falls behind
        if writable():
            for r in range(rf):
                if r not in isr:
                    intact[r] = False

    for t, kind, reps, destroys in sorted(timeline, key=_event_order):
        if not writable():
            unavailable_h += t - last_t
        last_t = t
        if kind == "down":
            for r in reps:
                up[r] = False
                if destroys or not flush_every:
                    intact[r] = False
            live = {r for r in isr if up[r]}
            if live:
                isr = live
            else:
                # KRaft fences them one by one and keeps the last as the sole, leaderless member
                isr = {max(isr, key=lambda r: (r in reps, r))} if leader else isr
                leader = False
            if not leader and unclean:
                for r in range(rf):
                    if up[r]:
                        if not intact[r] and not lost:
                            lost, first_loss = True, t
                        leader, isr = True, {r}
                        for x in range(rf):
                            intact[x] = x == r
                        break
        else:
            for r in reps:
                up[r] = True
            for r in reps:
                if leader:
                    isr.add(r)
                    intact[r] = True
                elif r in isr or unclean:
                    if not intact[r] and not lost:
                        lost, first_loss = True, t
                    leader, isr = True, {r}
                    for x in range(rf):
                        intact[x] = x == r
                    for x in range(rf):
                        if up[x] and x != r:
                            isr.add(x)
                            intact[x] = True
        writes_flow()
    if not writable():
        unavailable_h += HOURS_PER_YEAR - last_t if last_t < HOURS_PER_YEAR else 0.0
    return {"lost": lost, "online": leader, "unavailable_h": unavailable_h, "first_loss_h": first_loss}


def place(rng: np.random.Generator, trials: int, rf: int, racks: int, per_rack: int, rack_aware: bool):
    """Rack of each replica [trials, rf]. Rack-aware: StripedReplicaPlacer's round robin over
    racks from a random start (one replica per rack while rf <= racks). Random: rf distinct
    brokers drawn uniformly."""
    if rack_aware:
        start = rng.integers(0, racks, size=(trials, 1))
        return (start + np.arange(rf)[None, :]) % racks
    brokers = np.argsort(rng.random((trials, racks * per_rack)), axis=1)[:, :rf]
    return brokers // per_rack


def simulate(
    rng: np.random.Generator,
    trials: int,
    *,
    rf: int,
    min_isr: int,
    afr: float,
    repair_h: float,
    power_per_year: float,
    blast_racks: int,
    rack_aware: bool,
    unclean: bool,
    flush_every: bool,
    racks: int = 3,
    per_rack: int = 4,
) -> dict[str, float]:
    """Count partition-years that lost an acknowledged write / were ever unavailable."""
    rack_of = place(rng, trials, rf, racks, per_rack, rack_aware)
    n_fail = rng.poisson(afr, size=(trials, rf))
    n_power = rng.poisson(power_per_year, size=trials)
    # a replica's outages (disk or power) overlapping another's is the only way to lose data or,
    # with min.insync.replicas < RF, availability; draw times only where anything happens
    any_event = (n_fail.sum(axis=1) > 0) | (n_power > 0)
    one_is_enough = min(min_isr, rf) >= rf  # a single outage already refuses writes
    lost = 0
    unavailable = 0
    unavailable_h = 0.0
    replayed = 0
    all_down_instant = 0  # replicas all down at a random instant of the year
    # plain Python values for the per-trial loop (the draws are the same, in the same order)
    rack_rows = rack_of.tolist()
    fail_rows = n_fail.tolist()
    power_counts = n_power.tolist()
    n_hit = min(blast_racks, racks)
    for i in np.nonzero(any_event)[0].tolist():
        timeline = []
        for r, k in enumerate(fail_rows[i]):
            if k:
                for t in (rng.random(k) * HOURS_PER_YEAR).tolist():
                    timeline.append((t, "down", (r,), True))
                    timeline.append((t + repair_h, "up", (r,), True))
        if power_counts[i]:
            row = rack_rows[i]
            for t in (rng.random(power_counts[i]) * HOURS_PER_YEAR).tolist():
                hit = set(rng.choice(racks, size=n_hit, replace=False).tolist())
                reps = tuple(r for r in range(rf) if row[r] in hit)
                if reps:
                    timeline.append((t, "down", reps, False))
                    timeline.append((t + POWER_RESTORE_H, "up", reps, False))
        if not timeline:
            continue
        timeline.sort(key=_event_order)
        probe = float(rng.random() * HOURS_PER_YEAR)
        if _all_down_at(timeline, rf, probe):
            all_down_instant += 1
        if not one_is_enough and not _overlaps(timeline, rf):
            continue
        replayed += 1
        res = decide(timeline, rf=rf, min_isr=min_isr, unclean=unclean, flush_every=flush_every)
        lost += bool(res["lost"])
        if res["unavailable_h"] > 0:
            unavailable += 1
            unavailable_h += float(res["unavailable_h"])
    return {
        "trials": trials,
        "lost": lost,
        "unavailable": unavailable,
        "unavailable_h_total": unavailable_h,
        "replayed": replayed,
        "all_down_instant": all_down_instant,
    }


def _event_order(e) -> tuple[float, bool]:
    """Time order; at the same instant a "down" comes before an "up"."""
    return (e[0], e[1] != "down")


def _down_at(timeline, rf: int, t: float) -> list[bool]:
    depth = [0] * rf
    for when, kind, reps, _d in sorted(timeline, key=_event_order):
        if when > t:
            break
        for r in reps:
            depth[r] += 1 if kind == "down" else -1
    return [d > 0 for d in depth]


def _all_down_at(timeline, rf: int, t: float) -> bool:
    """all(_down_at(...)) for a timeline already in _event_order."""
    depth = [0] * rf
    for when, kind, reps, _d in timeline:
        if when > t:
            break
        step = 1 if kind == "down" else -1
        for r in reps:
            depth[r] += step
    return min(depth) > 0


def _overlaps(timeline, rf: int) -> bool:
    """True if at some instant two or more replicas are down (or rf == 1 and one is).
    The timeline must be in _event_order."""
    need = min(2, rf)
    depth = [0] * rf
    down = 0
    for _when, kind, reps, _d in timeline:
        if kind == "down":
            for r in reps:
                depth[r] += 1
                if depth[r] == 1:
                    down += 1
            if down >= need:
                return True
        else:
            for r in reps:
                depth[r] -= 1
                if depth[r] == 0:
                    down -= 1
    return False


def closed_form(*, rf: int, afr: float, repair_h: float) -> dict[str, float]:
    """Independent failures only. p: probability a given replica is down at a random instant."""
    p = afr * repair_h / HOURS_PER_YEAR
    rate = rf * afr * p ** (rf - 1)  # all-down states begun per year
    return {"p": p, "p_all_down_instant": p**rf, "p_loss_year": 1.0 - math.exp(-rate)}
