"""What a split scores (Numba): impurity, the rows of an AVC-group slot, and the score of a two-way split.

The formulas and their order of operations are scikit-learn's ``BestSplitter``'s, so that the
searches built on them (:mod:`rainforest.criteria`, :mod:`rainforest.categorical_splits`) choose
scikit-learn's split; :mod:`rainforest.criteria` re-exports these names.
"""
from __future__ import annotations

import math

import numba
import numpy as np

GINI, ENTROPY, GAIN_RATIO, SQUARED_ERROR = 0, 1, 2, 3
#: the classifiers' criteria
CRITERIA = {"gini": GINI, "entropy": ENTROPY, "gain_ratio": GAIN_RATIO}
#: the regressors': their AVC cells hold ``(sum w, sum w y, sum w y**2)``, not class counts
REGRESSION_CRITERIA = {"squared_error": SQUARED_ERROR}
#: every criterion's code, by name
CRITERION_CODES = {**CRITERIA, **REGRESSION_CRITERIA}
#: the channels of a regressor's cells before the row-count channel (which regressors always have)
REGRESSION_CHANNELS = 3
LN2 = math.log(2.0)


@numba.njit(cache=True)
def weight_of(counts, criterion):
    """The weight of a cell's channels: the sum of the class counts, or a regressor's first channel."""
    if criterion == SQUARED_ERROR:
        return counts[0]
    w = 0.0
    for c in range(counts.shape[0]):
        w += counts[c]
    return w


@numba.njit(cache=True)
def impurity(counts, weight, criterion):
    """Gini index or entropy (bits) of weighted class counts whose sum is ``weight``; under squared
    error, the variance of cells ``(weight, sum w y, sum w y**2)``, as scikit-learn's ``MSE``."""
    if weight <= 0.0:
        return 0.0
    if criterion == SQUARED_ERROR:
        mean = counts[1] / weight
        return counts[2] / weight - mean * mean
    if criterion == GINI:
        sq = 0.0
        for c in range(counts.shape[0]):
            sq += counts[c] * counts[c]
        return 1.0 - sq / (weight * weight)
    ent = 0.0
    for c in range(counts.shape[0]):
        p = counts[c]
        if p > 0.0:
            p /= weight
            ent -= p * (math.log(p) / LN2)
    return ent


@numba.njit(cache=True)
def slot_rows(block, s, n_classes, has_count):
    """Rows at slot ``s``: its row-count channel when rows are weighted, else its class counts' sum."""
    if has_count:
        return block[s, n_classes]
    t = 0.0
    for c in range(n_classes):
        t += block[s, c]
    return t


@numba.njit(cache=True)
def score_binary(L, R, wl, wr, wn, parent_imp, criterion):
    """Ranking score of a two-way split: scikit-learn's proxy, or the gain ratio."""
    if criterion == SQUARED_ERROR:  # scikit-learn's MSE.proxy_impurity_improvement
        return L[1] * L[1] / wl + R[1] * R[1] / wr
    crit = ENTROPY if criterion == GAIN_RATIO else criterion
    il = impurity(L, wl, crit)
    ir = impurity(R, wr, crit)
    if criterion != GAIN_RATIO:
        return -wr * ir - wl * il
    gain = parent_imp - (wr / wn * ir) - (wl / wn * il)
    info = split_info(wl, wr, wn)
    return gain / info if info > 0.0 else -np.inf


@numba.njit(cache=True)
def split_info(wl, wr, wn):
    """The split information (bits) of a two-way split leaving weights ``wl`` and ``wr`` of ``wn``."""
    out = 0.0
    for wj in (wl, wr):
        if wj > 0.0:
            q = wj / wn
            out -= q * (math.log(q) / LN2)
    return out


@numba.njit(cache=True)
def two_way(L, R, total, n_left, n_total, wn, parent_imp, criterion, min_leaf, min_weight):
    """Score of the split with class counts ``L`` on the left (``R`` receives the right's),
    or -inf where ``min_samples_leaf`` / ``min_weight_leaf`` forbid it."""
    if n_left < min_leaf or n_total - n_left < min_leaf:
        return -np.inf
    for c in range(L.shape[0]):
        R[c] = total[c] - L[c]
    wl = weight_of(L, criterion)
    wr = wn - wl
    if wl < min_weight or wr < min_weight:
        return -np.inf
    return score_binary(L, R, wl, wr, wn, parent_imp, criterion)
