"""Split criteria and the split search over a node's AVC-group (Numba).

The impurity formulas, the proxy used to rank candidate splits, and the scan
order follow scikit-learn's ``BestSplitter`` to the floating-point operation,
so that in exact mode the chosen split is the one scikit-learn chooses
(up to ties between attributes, which scikit-learn breaks at random and this
search breaks by attribute order).

A node's AVC-group is a ``(n_slots_total, n_channels)`` array: for every
attribute, one row per value slot and a trailing missing-value slot; the
channels are the weighted class counts and, when rows are weighted, a last
channel with plain row counts.

The scores themselves live in :mod:`rainforest.split_scores` and the categorical attributes'
searches in :mod:`rainforest.categorical_splits`; this module searches numeric thresholds, a
node's attributes and many nodes at once, and re-exports the scores.
"""
from __future__ import annotations

import numba
import numpy as np

from .categorical_splits import categorical_binary, categorical_multiway
from .split_scores import (CRITERIA, CRITERION_CODES, ENTROPY, GAIN_RATIO, GINI, LN2,  # noqa: F401 (re-exported)
                           REGRESSION_CHANNELS, REGRESSION_CRITERIA, SQUARED_ERROR, impurity, score_binary,
                           slot_rows, two_way, weight_of)
from .threads import run_ranges


@numba.njit(cache=True)
def _numeric(block, lo, m, n_classes, has_count, total, n_total, wn, parent_imp, criterion,
             min_leaf, min_weight, best_score, result):
    """Binary threshold splits of one numeric attribute (slots ``lo .. lo+m-1``, missing at ``lo+m``).

    Updates ``result`` = (score, left_slot, right_slot, missing_left, inf_threshold) when it finds a
    strictly better split; returns the new best score.
    """
    if n_classes == 2 and criterion == GINI and not has_count:
        return _numeric_gini2(block, lo, m, total, n_total, wn, min_leaf, min_weight, best_score, result)
    miss = lo + m
    n_miss = slot_rows(block, miss, n_classes, has_count)
    L = np.zeros(n_classes)
    R = np.zeros(n_classes)
    n_searches = 2 if n_miss > 0 else 1
    for search in range(n_searches):
        missing_left = search == 1
        for c in range(n_classes):
            L[c] = block[miss, c] if missing_left else 0.0
        n_left = n_miss if missing_left else 0.0
        prev = -1
        for s in range(m):
            ns = slot_rows(block, lo + s, n_classes, has_count)
            if ns <= 0:
                continue
            if prev >= 0:
                score = two_way(L, R, total, n_left, n_total, wn, parent_imp, criterion, min_leaf, min_weight)
                if score > best_score:
                    best_score = score
                    result[0] = score
                    result[1] = prev
                    result[2] = s
                    result[3] = (1.0 if missing_left else 0.0) if n_miss > 0 else (
                        1.0 if n_left > n_total - n_left else 0.0)
                    result[4] = 0.0
            for c in range(n_classes):
                L[c] += block[lo + s, c]
            n_left += ns
            prev = s
        if not missing_left and n_miss > 0 and prev >= 0:
            # every present value left, the missing values right (threshold +inf)
            score = two_way(L, R, total, n_left, n_total, wn, parent_imp, criterion, min_leaf, min_weight)
            if score > best_score:
                best_score = score
                result[0] = score
                result[1] = prev
                result[2] = -1
                result[3] = 0.0
                result[4] = 1.0
    return best_score


@numba.njit(cache=True)
def _gini2(c0, c1, w):
    """:func:`impurity` of two class counts under gini, operation for operation."""
    if w <= 0.0:
        return 0.0
    return 1.0 - (c0 * c0 + c1 * c1) / (w * w)


@numba.njit(cache=True)
def _numeric_gini2(block, lo, m, total, n_total, wn, min_leaf, min_weight, best_score, result):
    """:func:`_numeric` for two classes, gini and unit weights (the common case), with the counts in
    registers: the same floating-point operations in the same order (so the same scores, bit for
    bit: ``0.0 + x`` is ``x``), about ten times faster than the general loop."""
    miss = lo + m
    n_miss = block[miss, 0] + block[miss, 1]
    t0, t1 = total[0], total[1]
    n_searches = 2 if n_miss > 0 else 1
    for search in range(n_searches):
        missing_left = search == 1
        l0 = block[miss, 0] if missing_left else 0.0
        l1 = block[miss, 1] if missing_left else 0.0
        n_left = n_miss if missing_left else 0.0
        prev = -1
        last = False  # after the slots: every present value left, the missing values right
        for s in range(m + 1):
            if s < m:
                b0, b1 = block[lo + s, 0], block[lo + s, 1]
                ns = b0 + b1
                if ns <= 0:
                    continue
                scored = prev >= 0
            else:
                b0 = b1 = ns = 0.0
                last = not missing_left and n_miss > 0 and prev >= 0
                scored = last
            if scored:
                score = -np.inf
                if not (n_left < min_leaf or n_total - n_left < min_leaf):
                    wl = l0 + l1
                    wr = wn - wl
                    if not (wl < min_weight or wr < min_weight):
                        score = -wr * _gini2(t0 - l0, t1 - l1, wr) - wl * _gini2(l0, l1, wl)
                if score > best_score:
                    best_score = score
                    result[0] = score
                    result[1] = prev
                    if last:
                        result[2] = -1
                        result[3] = 0.0
                        result[4] = 1.0
                    else:
                        result[2] = s
                        result[3] = (1.0 if missing_left else 0.0) if n_miss > 0 else (
                            1.0 if n_left > n_total - n_left else 0.0)
                        result[4] = 0.0
            if s < m:
                l0 += b0
                l1 += b1
                n_left += ns
                prev = s
    return best_score


@numba.njit(cache=True)
def node_totals(block, offsets, lead, n_classes, has_count, criterion):
    """A node's class totals, rows, weight and impurity, summed over the slots of attribute ``lead``
    (any attribute's slots hold every row; RF-Vertical searches groups of attributes that all
    contain the same lead, so the totals, and so the scores, are the same floats in every group)."""
    total = np.zeros(n_classes)
    n_total = 0.0
    for s in range(offsets[lead], offsets[lead + 1]):
        for c in range(n_classes):
            total[c] += block[s, c]
        n_total += slot_rows(block, s, n_classes, has_count)
    wn = weight_of(total, criterion)
    return total, n_total, wn, impurity(total, wn, ENTROPY if criterion == GAIN_RATIO else criterion)


@numba.njit(cache=True)
def attribute_search(block, offsets, a, kind, n_classes, has_count, total, n_total, wn, parent_imp, criterion,
                     multiway, min_leaf, min_weight, max_exhaustive, best_score, num, left):
    """The best split of attribute ``a`` scoring strictly above ``best_score``: ``(score, how)`` with
    ``how`` 0 (numeric threshold, details in ``num``), 1 (binary subset, in ``left``), 2 (multiway),
    or -1 when none beats ``best_score`` (``score`` is then ``best_score``).

    ``max_exhaustive`` None says that no attribute of the search is categorical: that
    specialization leaves the categorical searches out, a few seconds less to compile on the first
    fit over numeric data."""
    lo = offsets[a]
    m = offsets[a + 1] - lo - 1
    if kind == 0:
        new = _numeric(block, lo, m, n_classes, has_count, total, n_total, wn, parent_imp, criterion,
                       min_leaf, min_weight, best_score, num)
        return (new, 0) if new > best_score else (best_score, -1)
    if max_exhaustive is None:  # no categorical attribute in this search: Numba drops (and never compiles) the rest
        return best_score, -1
    if multiway:
        new = categorical_multiway(block, lo, m, n_classes, has_count, total, n_total, wn, parent_imp,
                                    criterion, min_leaf, min_weight)
        return (new, 2) if new > best_score else (best_score, -1)
    new, found = categorical_binary(block, lo, m, n_classes, has_count, total, n_total, wn, parent_imp,
                                     criterion, min_leaf, min_weight, max_exhaustive, best_score, left)
    return (new, 1) if found else (best_score, -1)


@numba.njit(cache=True)
def search_node(block, offsets, kinds, n_classes, has_count, criterion, multiway, min_leaf, min_weight,
                max_exhaustive, branch_out, lead=0):
    """Best split of one node: the highest score, the first attribute on a tie.

    The node's class totals come from attribute ``lead`` (:func:`node_totals`).

    Returns ``(attribute, score, left_slot, right_slot, inf_threshold, n_branches)``; attribute -1
    when no split is valid.  ``branch_out[s]`` receives the branch of each slot of the winning
    attribute (its missing slot last).
    """
    total, n_total, wn, parent_imp = node_totals(block, offsets, lead, n_classes, has_count, criterion)
    best_score = -np.inf
    best_attr = -1
    best_kind = -1
    num = np.zeros(5)
    best_num = np.zeros(5)
    left = np.zeros(branch_out.shape[0], np.bool_)
    best_left = np.zeros(branch_out.shape[0], np.bool_)
    for a in range(len(kinds)):
        best_score, how = attribute_search(block, offsets, a, kinds[a], n_classes, has_count, total, n_total, wn,
                                           parent_imp, criterion, multiway, min_leaf, min_weight, max_exhaustive,
                                           best_score, num, left)
        if how >= 0:
            best_attr, best_kind = a, how
            if how == 0:
                best_num[:] = num
            elif how == 1:
                best_left[:] = left
    return _winner(block, offsets, n_classes, has_count, best_attr, best_kind, best_score, best_num, best_left,
                   branch_out)


@numba.njit(cache=True)
def _winner(block, offsets, n_classes, has_count, best_attr, best_kind, best_score, best_num, best_left,
            branch_out):
    """:func:`search_node`'s result for the winning attribute, its slots' branches in ``branch_out``."""
    if best_attr < 0:
        return -1, best_score, -1, -1, False, 0
    lo = offsets[best_attr]
    m = offsets[best_attr + 1] - lo - 1
    if best_kind == 0:
        left_slot = int(best_num[1])
        for s in range(m):
            branch_out[s] = 0 if s <= left_slot else 1
        branch_out[m] = 0 if best_num[3] > 0.5 else 1
        return best_attr, best_score, left_slot, int(best_num[2]), best_num[4] > 0.5, 2
    n_b = 0
    if best_kind == 1:
        n_b = 2
        for s in range(m + 1):
            branch_out[s] = 0 if best_left[s] else 1
    else:
        for s in range(m + 1):
            if slot_rows(block, lo + s, n_classes, has_count) > 0:
                branch_out[s] = n_b
                n_b += 1
            else:
                branch_out[s] = -1
    # slots absent from the node (and so unknown categories) go to the branch with most rows
    counts = np.zeros(n_b)
    for s in range(m + 1):
        if branch_out[s] >= 0 and slot_rows(block, lo + s, n_classes, has_count) > 0:
            counts[branch_out[s]] += slot_rows(block, lo + s, n_classes, has_count)
    major = 0
    for b in range(n_b):
        if counts[b] > counts[major]:
            major = b
    for s in range(m + 1):
        if slot_rows(block, lo + s, n_classes, has_count) <= 0:
            branch_out[s] = major
    return best_attr, best_score, -1, -1, False, n_b


def search_nodes(block, node_start, node_offsets, kinds, n_classes, has_count, criterion, multiway, min_leaf,
                 min_weight, max_exhaustive, attr, score, left_slot, right_slot, inf_thr, n_branches, branches,
                 branch_start, lead=0):
    """:func:`search_node` for every node, in parallel over every (node, attribute) pair, so that a
    few nodes with wide attributes keep every thread busy: node ``k``'s AVC-group is
    ``block[node_start[k]:node_start[k + 1]]``, its attributes at ``node_offsets[k]`` (the same for
    all nodes of a pass; each node's own in a compact AVC-group), and the branches of its winning
    attribute's slots go to ``branches[branch_start[k]:branch_start[k + 1]]``.

    Each pair's best split is found on its own (from -inf); a node takes the first attribute with
    the highest score, as the sequential search does: a strictly better split wins in both, so the
    same split is chosen to the bit.  A winning subset split is searched again for its subset.

    The three steps (node totals, pairs, winners) are serial ``nogil`` kernels run on ranges by
    :func:`rainforest.threads.run_ranges`, not one ``parallel=True`` kernel: Numba's parallel
    lowering of this search cost about 8 s of compilation on a fit's first use, for no speed."""
    n_nodes = node_start.shape[0] - 1
    n_attr = len(kinds)
    if not np.any(np.asarray(kinds) != 0):
        max_exhaustive = None  # numeric attributes only: the search's specialization without categorical code
    totals = np.empty((n_nodes, n_classes))
    sums = np.empty((n_nodes, 3))  # rows, weight, impurity
    scores = np.empty((n_nodes, n_attr))
    hows = np.empty((n_nodes, n_attr), np.int64)
    nums = np.empty((n_nodes, n_attr, 5))
    run_ranges(n_nodes, lambda lo, hi: _node_sums(block, node_start, node_offsets, n_classes, has_count, criterion,
                                                   lead, lo, hi, totals, sums))
    run_ranges(n_nodes * n_attr, lambda lo, hi: _pair_searches(
        block, node_start, node_offsets, kinds, n_classes, has_count, criterion, multiway, min_leaf, min_weight,
        max_exhaustive, totals, sums, lo, hi, scores, hows, nums))
    run_ranges(n_nodes, lambda lo, hi: _node_winners(
        block, node_start, node_offsets, kinds, n_classes, has_count, criterion, multiway, min_leaf, min_weight,
        max_exhaustive, totals, sums, scores, hows, nums, lo, hi, attr, score, left_slot, right_slot, inf_thr,
        n_branches, branches, branch_start))


@numba.njit(cache=True, nogil=True)
def _node_sums(block, node_start, node_offsets, n_classes, has_count, criterion, lead, lo, hi, totals, sums):
    """Class totals, rows, weight and impurity of nodes ``lo .. hi - 1`` (:func:`node_totals`)."""
    for k in range(lo, hi):
        t, n_total, wn, parent_imp = node_totals(block[node_start[k]:node_start[k + 1]], node_offsets[k], lead,
                                                 n_classes, has_count, criterion)
        for c in range(n_classes):  # element by element: a whole-row copy compiles numba's shape-error
            totals[k, c] = t[c]     # messages (string formatting, seconds of compile time on first use)
        sums[k, 0], sums[k, 1], sums[k, 2] = n_total, wn, parent_imp


@numba.njit(cache=True, nogil=True)
def _pair_searches(block, node_start, node_offsets, kinds, n_classes, has_count, criterion, multiway, min_leaf,
                   min_weight, max_exhaustive, totals, sums, lo, hi, scores, hows, nums):
    """The best split of each (node, attribute) pair ``lo .. hi - 1`` (pair ``k * n_attr + a``), from -inf."""
    n_attr = len(kinds)
    num = np.zeros(5)
    for task in range(lo, hi):
        k, a = task // n_attr, task % n_attr
        offsets = node_offsets[k]
        for q in range(5):
            num[q] = 0.0
        left = np.zeros(offsets[a + 1] - offsets[a] if kinds[a] != 0 else 1, np.bool_)
        scores[k, a], hows[k, a] = attribute_search(
            block[node_start[k]:node_start[k + 1]], offsets, a, kinds[a], n_classes, has_count, totals[k],
            sums[k, 0], sums[k, 1], sums[k, 2], criterion, multiway, min_leaf, min_weight, max_exhaustive, -np.inf,
            num, left)
        for q in range(5):
            nums[k, a, q] = num[q]


@numba.njit(cache=True, nogil=True)
def _node_winners(block, node_start, node_offsets, kinds, n_classes, has_count, criterion, multiway, min_leaf,
                  min_weight, max_exhaustive, totals, sums, scores, hows, nums, lo, hi, attr, score, left_slot,
                  right_slot, inf_thr, n_branches, branches, branch_start):
    """Each node's split (``lo .. hi - 1``): its first attribute of the highest score, its subset again."""
    n_attr = len(kinds)
    for k in range(lo, hi):
        # typed int64, not literal -1: a literal argument compiles a second specialization of the callees
        best_attr, best_score = np.int64(-1), -np.inf
        for a in range(n_attr):
            if hows[k, a] >= 0 and scores[k, a] > best_score:
                best_attr, best_score = a, scores[k, a]
        offsets = node_offsets[k]
        sub = block[node_start[k]:node_start[k + 1]]
        best_kind = hows[k, best_attr] if best_attr >= 0 else np.int64(-1)
        left = np.zeros(offsets[best_attr + 1] - offsets[best_attr] if best_kind == 1 else 1, np.bool_)
        if best_kind == 1:
            attribute_search(sub, offsets, best_attr, kinds[best_attr], n_classes, has_count, totals[k], sums[k, 0],
                             sums[k, 1], sums[k, 2], criterion, multiway, min_leaf, min_weight, max_exhaustive,
                             -np.inf, np.zeros(5), left)
        num = nums[k, best_attr] if best_attr >= 0 else np.zeros(5)
        a, sc, ls, rs, inf, nb = _winner(sub, offsets, n_classes, has_count, best_attr, best_kind, best_score, num,
                                         left, branches[branch_start[k]:branch_start[k + 1]])
        attr[k] = a
        score[k] = sc
        left_slot[k] = ls
        right_slot[k] = rs
        inf_thr[k] = inf
        n_branches[k] = nb


def best_splits(block, node_start, node_offsets, kinds, n_classes, has_count, criterion, multiway, min_leaf,
                min_weight, max_exhaustive, widths, lead=0) -> tuple:
    """:func:`search_nodes` with its outputs made here: per node ``(attribute, score, left_slot,
    right_slot, inf_threshold, n_branches)``, then ``branches`` and ``branch_start``: node ``k``'s
    winning attribute's slot branches are ``branches[branch_start[k]:]``, room for ``widths[k]``
    slots (its widest attribute's).  Room per node, not the widest node's for all: in a compact
    AVC-group one node may hold a million slots where hundreds hold a few."""
    n = node_start.shape[0] - 1
    attr, left, right, n_branches = (np.empty(n, np.int64) for _ in range(4))
    score = np.empty(n)
    inf_thr = np.empty(n, np.bool_)
    branch_start = np.zeros(n + 1, np.int64)
    np.cumsum(np.maximum(np.broadcast_to(np.asarray(widths, np.int64), (n,)), 1), out=branch_start[1:])
    branches = np.empty(int(branch_start[-1]), np.int64)
    search_nodes(block, node_start, node_offsets, kinds, n_classes, has_count, criterion, multiway, min_leaf,
                 min_weight, max_exhaustive, attr, score, left, right, inf_thr, n_branches, branches, branch_start,
                 lead)
    return attr, score, left, right, inf_thr, n_branches, branches, branch_start


# -- the textbook quantities, for people and tests (same formulas as the kernels) ----------------
def _as_counts(counts) -> np.ndarray:
    return np.asarray(counts, dtype=np.float64)


def gini_index(counts) -> float:
    """Gini(D) = 1 - sum_i p_i^2 of a vector of class counts."""
    c = _as_counts(counts)
    return float(impurity(c, c.sum(), GINI))


def entropy(counts) -> float:
    """Info(D) = -sum_i p_i log2 p_i (bits) of a vector of class counts."""
    c = _as_counts(counts)
    return float(impurity(c, c.sum(), ENTROPY))


def partition_impurity(partition, criterion: str = "gini") -> float:
    """Weighted impurity sum_j |D_j|/|D| * Imp(D_j) of a partition given as rows of class counts."""
    p = _as_counts(partition)
    w = p.sum(axis=1)
    crit = CRITERIA[criterion] if criterion != "gain_ratio" else ENTROPY
    return float(sum(w[j] / w.sum() * impurity(p[j], w[j], crit) for j in range(len(p))))


def information_gain(avc_set) -> float:
    """Gain(A) = Info(D) - Info_A(D) of a multiway split, from an AVC-set (values x classes)."""
    p = _as_counts(avc_set)
    return entropy(p.sum(axis=0)) - partition_impurity(p, "entropy")


def split_info(avc_set) -> float:
    """SplitInfo_A(D) = -sum_j |D_j|/|D| log2(|D_j|/|D|)."""
    w = _as_counts(avc_set).sum(axis=1)
    return entropy(w)


def gain_ratio(avc_set) -> float:
    """GainRatio(A) = Gain(A) / SplitInfo_A(D) (C4.5)."""
    s = split_info(avc_set)
    return information_gain(avc_set) / s if s > 0 else 0.0
