"""Rate limits for workshop endpoints: one token bucket per (action, key), in this process.

A bucket holds `per_min` tokens and refills at `per_min` a minute; each request takes one. The
table of buckets is bounded (least recently used keys go first), so a flood of distinct keys
costs a fixed amount of memory. Counts are per server process: with N workers a client may get up
to N times the limit, which still bounds it.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict

MAX_KEYS = 20_000


class RateLimiter:
    def __init__(self, max_keys: int = MAX_KEYS):
        self.max_keys = max_keys
        self.buckets: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()

    def take(self, action: str, key: str, per_min: int, now: float | None = None) -> float:
        """Take one token; 0.0 when allowed, else the seconds until one is free."""
        now = time.monotonic() if now is None else now
        rate = per_min / 60.0
        tokens, at = self.buckets.pop((action, key), (float(per_min), now))
        tokens = min(float(per_min), tokens + (now - at) * rate)
        if tokens >= 1.0:
            self.buckets[(action, key)] = (tokens - 1.0, now)
            wait = 0.0
        else:
            self.buckets[(action, key)] = (tokens, now)
            wait = (1.0 - tokens) / rate if rate > 0 else math.inf
        while len(self.buckets) > self.max_keys:
            self.buckets.popitem(last=False)
        return wait
