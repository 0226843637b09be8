"""Small statistics helpers shared by the kernels' summaries: intervals and weighted quantiles."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _st

Z95 = 1.959963984540054


def clopper_pearson(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval for k successes in n trials (zero events still get an upper bound)."""
    if n == 0:
        return (0.0, 1.0)
    a = 1.0 - conf
    lo = 0.0 if k == 0 else float(_st.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(_st.beta.ppf(1 - a / 2, k + 1, n - k))
    return (lo, hi)


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: list[float]) -> dict[str, object]:
    """Quantiles of a weighted sample with 95 % order-statistic intervals.

    The interval is [Q(q - z s), Q(q + z s)], s = sqrt(q(1-q)/n_eff), where n_eff is Kish's
    effective sample size (sum w)^2 / sum w^2: importance weights shrink it. Requests within one
    lane share its followers, so the interval is, if anything, too narrow; the lanes are many.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    w = np.asarray(weights, dtype=np.float64).ravel()
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    cw = np.cumsum(w)
    total = cw[-1]
    n_eff = float(total**2 / np.sum(w**2))

    def q_at(q: float) -> float:
        q = min(max(q, 0.0), 1.0)
        i = int(np.searchsorted(cw, q * total, side="left"))
        return float(v[min(i, v.size - 1)])

    out = {}
    for q in qs:
        s = math.sqrt(q * (1 - q) / n_eff) if n_eff > 0 else 1.0
        out[q] = (q_at(q), q_at(q - Z95 * s), q_at(q + Z95 * s))
    return {"quantiles": out, "n": int(v.size), "n_eff": n_eff}
