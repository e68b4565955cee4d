"""The state of naive Bayes's one pass and the rules for its moments.

:class:`BayesCounts` merges across batches, workers and SQL results: numeric attributes keep, per
class, the weighted count, mean and sum of squared deviations (:class:`Moments`), merged with the
parallel (Chan et al.) formula.  The pass over batches is :mod:`rainforest.bayes_counts`, the pass
as a SQL query :mod:`rainforest.bayes_sql`; both get moments from sums by :func:`moments_from_sums`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from .errors import DataError
from .schema import CATEGORICAL


@dataclass
class Moments:
    """Weighted count, mean and sum of squared deviations of one attribute in one class."""

    w: float = 0.0
    mean: float = 0.0
    m2: float = 0.0

    def merge(self, w: float, mean: float, m2: float) -> None:
        into = np.array([self.w, self.mean, self.m2])
        merge_moments(into, w, mean, m2)  # the formula the kernels merge classes with
        self.w, self.mean, self.m2 = (float(v) for v in into)

    @property
    def var(self) -> float:
        return self.m2 / self.w if self.w > 0 else 0.0


@dataclass
class BayesCounts:
    """The mergeable state of the pass: class weights, category counts, numeric moments."""

    class_weight: dict = field(default_factory=dict)  # class -> weight
    categories: dict = field(default_factory=dict)  # attribute -> {(class, value): weight}
    moments: dict = field(default_factory=dict)  # attribute -> {class: Moments}
    spread: dict = field(default_factory=dict)  # attribute -> Moments over all rows, unweighted
    n_rows: int = 0

    def check_columns(self, kinds: dict, where: str) -> None:
        """Refuse an attribute without a single value (entirely null), as the tree's profiling pass
        does: its numeric moments or category counts are then empty."""
        for name, kind in kinds.items():
            if not (self.categories.get(name) if kind == CATEGORICAL else name in self.spread):
                raise DataError(f"column {name!r} of {where} is entirely null; drop it from the features")

    def merge(self, other: BayesCounts) -> BayesCounts:
        self.n_rows += other.n_rows
        for c, w in other.class_weight.items():
            self.class_weight[c] = self.class_weight.get(c, 0.0) + w
        for a, cnt in other.categories.items():
            mine = self.categories.setdefault(a, {})
            for k, w in cnt.items():
                mine[k] = mine.get(k, 0.0) + w
        for a, per_class in other.moments.items():
            mine = self.moments.setdefault(a, {})
            for c, m in per_class.items():
                mine.setdefault(c, Moments()).merge(m.w, m.mean, m.m2)
        for a, m in other.spread.items():
            self.spread.setdefault(a, Moments()).merge(m.w, m.mean, m.m2)
        return self


#: the one-pass moments are kept while sum((x - shift)^2) is at most this many times the sum of squared
#: deviations: the rounding error of their difference is then within about 2e-13 of it
SHIFTED_CANCELLATION = 1024.0


@numba.njit(cache=True, nogil=True)
def moments_from_sums(n, s, q, shift):
    """The mean and sum of squared deviations of ``n > 0`` values from the sums of their differences
    from ``shift`` (``s``) and of those differences' squares (``q``), and whether those sums give them
    to about 2e-13: not where a sum is not finite (a NaN, an infinity, an overflow) and not where the
    difference cancels more than :data:`SHIFTED_CANCELLATION` allows (a shift far from the values, or
    ``M2 ~ 0`` from rounding: two passes give it exactly).  The batches' kernel and the SQL pass
    (:mod:`rainforest.bayes_sql`) both go by this rule."""
    mean = shift + s / n
    m2 = q - s * s / n
    return mean, m2, np.isfinite(s) and np.isfinite(q) and q <= SHIFTED_CANCELLATION * m2


@numba.njit(cache=True, nogil=True)
def merge_moments(into, w, mean, m2):
    """Merge (w, mean, m2) into ``into`` = [w, mean, m2] by the parallel (Chan et al.) formula: for
    :meth:`Moments.merge` and for a column's spread from its classes."""
    if w <= 0:
        return
    if into[0] <= 0:
        into[0], into[1], into[2] = w, mean, m2
        return
    total = into[0] + w
    delta = mean - into[1]
    into[1] += delta * w / total
    into[2] += m2 + delta * delta * into[0] * w / total
    into[0] = total


@numba.njit(cache=True, parallel=True, nogil=True)
def add_gaussian_terms(x, theta, var, log_norms, jll):
    """Add one numeric attribute's Gaussian log-likelihood to each row's joint log-likelihood ``jll``
    (rows x classes), rows whose value is NaN left out: ``log_norms[c] - 0.5 * (x - theta[c]) ** 2 /
    var[c]`` with ``log_norms = -0.5 * log(2 pi var)``, in the floating-point steps of that numpy
    expression (a square, a product by 0.5, a division, a difference, then the sum), so the sums are
    numpy's to the bit.  One pass over the rows where numpy's took six temporaries and two masked
    copies (boosting's rounds score every row: 0.5 s a million rows)."""
    for i in numba.prange(x.shape[0]):
        v = x[i]
        if v != v:
            continue
        for c in range(jll.shape[1]):
            d = v - theta[c]
            jll[i, c] += log_norms[c] - 0.5 * (d * d) / var[c]


@numba.njit(cache=True, parallel=True, nogil=True)
def add_table_terms(codes, log_probs, jll):
    """Add one counted attribute's log-probabilities to each row's joint log-likelihood ``jll``:
    ``log_probs[c, codes[i]]`` for every class ``c``, rows whose code is negative (missing, unseen)
    left out; one add per cell, as numpy's masked, gathered add (four temporaries) made it."""
    for i in numba.prange(codes.shape[0]):
        k = codes[i]
        if k < 0:
            continue
        for c in range(jll.shape[1]):
            jll[i, c] += log_probs[c, k]

