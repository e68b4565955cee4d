"""Whether two classifiers differ: Student's paired t-test of their scores over the same folds.

:func:`rainforest.evaluation.compare` cross-validates two classifiers on the same folds and tests
their scores here; :mod:`rainforest.evaluation` re-exports these names.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PairedTTest:
    """A paired t-test of two classifiers' scores over the same folds (Student's, ``k - 1`` degrees of freedom).

    ``statistic`` is positive when the first classifier scores higher; ``pvalue`` is two-sided.
    Identical scores on every fold give ``statistic = 0`` and ``pvalue = 1``.
    """

    statistic: float
    pvalue: float
    df: int
    scores_a: np.ndarray
    scores_b: np.ndarray

    @property
    def mean_difference(self) -> float:
        return float(np.mean(self.scores_a - self.scores_b))


def paired_t_test(scores_a, scores_b) -> PairedTTest:
    """Student's paired t-test of two score arrays over the same folds (``scipy.stats.ttest_rel``)."""
    from scipy import stats

    a, b = np.asarray(scores_a, np.float64), np.asarray(scores_b, np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"a paired t-test needs two score arrays of the same length >= 2, got {a.shape} and {b.shape}")
    d = a - b
    if np.all(d == d[0]):  # no variance: scipy gives nan; equal scores are no evidence of a difference
        t = 0.0 if d[0] == 0 else float(np.sign(d[0]) * np.inf)
        return PairedTTest(t, 1.0 if d[0] == 0 else 0.0, len(a) - 1, a, b)
    res = stats.ttest_rel(a, b)
    return PairedTTest(float(res.statistic), float(res.pvalue), len(a) - 1, a, b)
