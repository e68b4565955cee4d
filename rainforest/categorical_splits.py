"""The split search over one categorical attribute of a node's AVC-group (Numba).

Two-way subset splits (:func:`categorical_binary`: every subset when few categories, else the
best prefix of the categories ordered by a class's proportion, optimal for two classes), and the
multiway split with one branch per present category (:func:`categorical_multiway`).  The missing
slot counts as one more category.  :func:`rainforest.criteria.attribute_search` calls them.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from .split_scores import ENTROPY, GAIN_RATIO, LN2, SQUARED_ERROR, impurity, slot_rows, two_way, weight_of


@numba.njit(cache=True)
def _subset_score(block, lo, cats, left_mask, n_classes, has_count, total, n_total, wn, parent_imp,
                  criterion, min_leaf, min_weight):
    L = np.zeros(n_classes)
    R = np.zeros(n_classes)
    n_left = 0.0
    for i in range(len(cats)):
        if left_mask[i]:
            s = lo + cats[i]
            for c in range(n_classes):
                L[c] += block[s, c]
            n_left += slot_rows(block, s, n_classes, has_count)
    if n_left <= 0 or n_left >= n_total:
        return -np.inf
    return two_way(L, R, total, n_left, n_total, wn, parent_imp, criterion, min_leaf, min_weight)


@numba.njit(cache=True)
def _record_subset(best_left, cats, mask):
    """Remember the left set: slot ``cats[i]`` goes left when ``mask[i]``."""
    best_left[:] = False
    for i in range(len(cats)):
        best_left[cats[i]] = mask[i]


@numba.njit(cache=True)
def _proportion_order(block, lo, cats, n_classes, cls, criterion):
    """The present categories ``cats`` (indices into it) by ascending share of class ``cls`` (under
    squared error: by mean target), ties in slot order (a stable sort)."""
    k = len(cats)
    ratio = np.empty(k)
    for i in range(k):
        w = weight_of(block[lo + cats[i], :n_classes], criterion)
        ratio[i] = block[lo + cats[i], 1 if criterion == SQUARED_ERROR else cls] / w if w > 0 else 0.0
    return stable_argsort(ratio)


@numba.njit(cache=True)
def stable_argsort(keys):
    """``np.argsort(keys, kind="mergesort")`` for keys without NaN: a bottom-up merge sort of the
    indices, equal keys in index order.  Written out because Numba's own mergesort took 2.5 s to
    compile, a tenth of a first fit's compile time, for what this does in a few lines."""
    n = len(keys)
    order = np.arange(n)
    spare = np.empty(n, np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, out = lo, mid, lo
            while i < mid and j < hi:
                if keys[order[j]] < keys[order[i]]:  # strictly less: the left one first on ties
                    spare[out] = order[j]
                    j += 1
                else:
                    spare[out] = order[i]
                    i += 1
                out += 1
            while i < mid:
                spare[out] = order[i]
                i += 1
                out += 1
            while j < hi:
                spare[out] = order[j]
                j += 1
                out += 1
        order, spare = spare, order
        width *= 2
    return order


@numba.njit(cache=True)
def categorical_binary(block, lo, m, n_classes, has_count, total, n_total, wn, parent_imp, criterion,
                        min_leaf, min_weight, max_exhaustive, best_score, best_left):
    """Best two-way subset split of one categorical attribute (the missing slot is a category too).

    Two classes: the best prefix of the categories sorted by class-1 proportion, which is the
    optimal subset for gini and entropy (Breiman et al., 1984), in O(k log k); squared error: the best
    prefix of the categories sorted by mean target, optimal too (Breiman et al.).  More classes, up to
    ``max_exhaustive`` present categories: every subset.  Beyond: the best prefix of the ordering by
    each class's proportion, O(n_classes k log k) (a heuristic).  Writes the winning left-set over
    slots into ``best_left``.
    """
    present = np.zeros(m + 1, np.int64)
    k = 0
    for s in range(m + 1):
        if slot_rows(block, lo + s, n_classes, has_count) > 0:
            present[k] = s
            k += 1
    cats = present[:k]
    found = False
    if k < 2:
        return best_score, found
    mask = np.zeros(k, np.bool_)
    ordered = n_classes == 2 or criterion == SQUARED_ERROR  # one ordering holds the optimal subset
    if not ordered and k <= max_exhaustive:
        for bits in range(1, 1 << (k - 1)):
            for i in range(k):
                mask[i] = (bits >> i) & 1 == 1
            score = _subset_score(block, lo, cats, mask, n_classes, has_count, total, n_total, wn,
                                  parent_imp, criterion, min_leaf, min_weight)
            if score > best_score:
                best_score = score
                found = True
                _record_subset(best_left, cats, mask)
        return best_score, found
    # the orderings: O(k log k) each, the left set's class counts grown one category at a time
    order_classes = 1 if ordered else n_classes
    L = np.zeros(n_classes)
    R = np.zeros(n_classes)
    best_class, best_j = -1, -1
    for oc in range(order_classes):
        order = _proportion_order(block, lo, cats, n_classes, 1 if n_classes == 2 else oc, criterion)
        L[:] = 0.0
        n_left = 0.0
        for j in range(k - 1):
            s = lo + cats[order[j]]
            for c in range(n_classes):
                L[c] += block[s, c]
            n_left += slot_rows(block, s, n_classes, has_count)
            if n_left <= 0 or n_left >= n_total:
                continue
            score = two_way(L, R, total, n_left, n_total, wn, parent_imp, criterion, min_leaf, min_weight)
            if score > best_score:
                best_score = score
                best_class, best_j = oc, j
    if best_class >= 0:  # the winning prefix, written once (not at every improvement: O(k) each)
        found = True
        order = _proportion_order(block, lo, cats, n_classes, 1 if n_classes == 2 else best_class, criterion)
        mask[:] = False
        for j in range(best_j + 1):
            mask[order[j]] = True
        _record_subset(best_left, cats, mask)
    return best_score, found


@numba.njit(cache=True)
def categorical_multiway(block, lo, m, n_classes, has_count, total, n_total, wn, parent_imp,
                          criterion, min_leaf, min_weight):
    """Score of the split with one branch per present category (ID3/C4.5)."""
    crit = ENTROPY if criterion == GAIN_RATIO else criterion
    k = 0
    score = 0.0
    split_info = 0.0
    weighted_child = 0.0
    for s in range(m + 1):
        ns = slot_rows(block, lo + s, n_classes, has_count)
        if ns <= 0:
            continue
        if ns < min_leaf:
            return -np.inf
        k += 1
        row = block[lo + s, :n_classes]
        wj = weight_of(row, criterion)
        if wj < min_weight:
            return -np.inf
        ij = impurity(row, wj, crit)
        score -= wj * ij
        weighted_child += wj / wn * ij
        if wj > 0.0:
            q = wj / wn
            split_info -= q * (math.log(q) / LN2)
    if k < 2:
        return -np.inf
    if criterion == GAIN_RATIO:
        return (parent_imp - weighted_child) / split_info if split_info > 0.0 else -np.inf
    return score
