"""Bootstrap multiplicities that are never materialized: a row's count is a function of the row.

A row ``r`` (its stable identity, the global row index every pass hands to
:meth:`rainforest.storage.base.PassTask.update`) counts ``m`` times in the bootstrap keyed by
``seed``, where ``m`` is a Poisson draw by inverse CDF from the uniform
``u = row_hash(r, seed) / 2**63`` (:mod:`rainforest.storage.rowhash`).  The draw is written as
integer comparisons only: the CDF of Poisson(rate) is turned once into thresholds
``T_k = floor(F(k) * 2**63)`` (exact decimal arithmetic, so the same integers on every machine),
and ``m`` is the number of thresholds at or below the row's hash.  So every pass, batch size,
backend and machine sees the same bootstrap, and a SQL engine can draw it too
(:func:`multiplicity_sql`).

* :func:`bootstrap_counts` is the reference, in numpy, for any row identities;
* :func:`rainforest.storage.rowhash.hash_row` (the compiled loop of ``row_hash`` itself) and
  :func:`multiplicity` are the same computation for Numba kernels (the forest's counting and
  out-of-bag kernels), so the two cannot drift apart.

It lives in the storage layer because row selections (:mod:`rainforest.storage.selection`)
weight rows by it; the forest's per-tree seeds and feature draws are in
:mod:`rainforest.bootstrap`.
"""
from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal, localcontext

import numba
import numpy as np

from .rowhash import HASH_SPAN, row_hash

MAX_MULTIPLICITY = 255  # a row's multiplicity fits one byte (rates are at most 1)


@numba.njit(cache=True, nogil=True, inline="always")
def multiplicity(h, thresholds):
    """The number of ``thresholds`` (sorted int64) at or below the hash ``h``: the Poisson draw.
    No thresholds means no bootstrap: every row counts once."""
    n = thresholds.shape[0]
    if n == 0:
        return 1
    k = 0
    if n >= 4:  # without branches for the first four (a row has multiplicity 4 or more once in 50)
        k = (np.int64(h >= thresholds[0]) + np.int64(h >= thresholds[1]) + np.int64(h >= thresholds[2])
             + np.int64(h >= thresholds[3]))
        if k < 4:
            return k
    while k < n and h >= thresholds[k]:
        k += 1
    return k


def poisson_thresholds(rate: float) -> np.ndarray:
    """Integer thresholds ``T_k = floor(F(k) * 2**63)`` of the Poisson(``rate``) CDF ``F``, as int64.

    A row whose hash ``h`` satisfies ``T_{k-1} <= h < T_k`` has multiplicity ``k``.  Computed with
    60-digit decimals (``Decimal.exp`` is correctly rounded), so every machine gets the same
    integers; the list ends where ``F(k) * 2**63`` reaches ``2**63 - 1`` (20 thresholds for rate 1).
    """
    if not (isinstance(rate, (int, float, np.floating)) and 0.0 < float(rate) <= 1.0):
        raise ValueError(f"the bootstrap rate must be in (0, 1], got {rate!r}")
    out = []
    with localcontext() as ctx:
        ctx.prec = 60
        lam = Decimal(float(rate))  # the binary value, exactly
        p = (-lam).exp()
        cdf = p
        span = Decimal(HASH_SPAN)
        for k in range(1, MAX_MULTIPLICITY + 1):
            t = int((cdf * span).to_integral_value(rounding=ROUND_FLOOR))
            if t >= HASH_SPAN - 1:  # the CDF is 1 to 63 bits: no hash lies beyond (the top one counts as k)
                break
            out.append(t)
            p = p * lam / k
            cdf += p
    return np.array(out, np.int64)


def bootstrap_counts(row_ids, seed: int, rate: float | None = 1.0) -> np.ndarray:
    """Multiplicity of each row identity in ``row_ids`` in the bootstrap keyed by ``seed``.

    Parameters
    ----------
    row_ids : array-like of int
        Stable row identities (non-negative, below 2**62): the global row index of every source.
    seed : int
        The seed (a forest tree's comes from :func:`rainforest.bootstrap.tree_seeds`).
    rate : float or None, default=1.0
        The Poisson rate: 1 for the classic bootstrap (on average ``n`` draws of ``n`` rows), the
        ``max_samples`` fraction otherwise; ``None`` is no bootstrap (every row once).

    Returns
    -------
    ndarray of uint8
        ``Poisson(rate)`` draws by inverse CDF of ``row_hash(row_ids, seed) / 2**63``.
    """
    rows = np.asarray(row_ids)
    if rate is None:
        return np.ones(rows.shape, np.uint8)
    h = row_hash(rows, seed).astype(np.int64)
    return np.searchsorted(poisson_thresholds(rate), h, side="right").astype(np.uint8)


def multiplicity_sql(hash_expr: str, rate: float) -> str:
    """:func:`bootstrap_counts` as SQL over a column or expression ``hash_expr`` holding the row's
    hash (see :func:`rainforest.storage.rowhash.row_hash_sql`): a ``CASE`` of integer comparisons."""
    thresholds = poisson_thresholds(rate)
    cases = " ".join(f"WHEN {hash_expr} < {int(t)} THEN {k}" for k, t in enumerate(thresholds))
    return f"(CASE {cases} ELSE {len(thresholds)} END)"
