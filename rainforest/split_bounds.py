"""Upper bounds on the score of the threshold splits inside a bucket of values (Numba).

A bucket (a bin of a numeric attribute at a node) holds class counts ``C``; the rows before it
hold ``L``.  A split between two values inside the bucket leaves on the left some part of the
bucket's rows, so its left class counts lie in the box ``[L, L + C]``.  The weighted impurity of
a two-way split, ``wl * i(L) + wr * i(R)``, is concave in ``L`` for gini and entropy (the
perspective of a concave function), so the ranking score (its negation, scikit-learn's proxy) is
convex and the best score over the box is at one of its corners: the best corner bounds every
split inside the bucket.  For the gain ratio, the gain is convex in the same way and the split
information, concave in the left weight, is smallest at an end of the bucket, so the best
corner's gain over the smaller end's split information bounds it.

BOAT verifies its coarse splits with these bounds (:mod:`rainforest.boat.verify`), and exact mode
uses them to gather the rows of only the buckets that may hold a better split
(:mod:`rainforest.exact_bins`).  The bounds are computed in floating point like the scores they
bound, so comparisons take :func:`tolerance` of slack.
"""
from __future__ import annotations

import numba
import numpy as np

from .split_scores import ENTROPY, GAIN_RATIO, score_binary, slot_rows, split_info

MAX_CORNER_CLASSES = 16  # a bucket mixing more classes has 2**17+ corners: it is not bounded (inf)


@numba.njit(cache=True)
def box_bound(L, C, total, wn, parent_imp, criterion):
    """The best score a split with left class counts in the box ``[L, L + C]`` can reach (``inf``
    when the bucket mixes more than :data:`MAX_CORNER_CLASSES` classes)."""
    n_classes = L.shape[0]
    cls = np.empty(n_classes, np.int64)
    m = 0
    for c in range(n_classes):
        if C[c] > 0:
            cls[m] = c
            m += 1
    if m > MAX_CORNER_CLASSES:
        return np.inf
    gain_ratio = criterion == GAIN_RATIO
    best = -np.inf
    Lc = np.empty(n_classes)
    R = np.empty(n_classes)
    w_lo = 0.0
    w_box = 0.0
    for c in range(n_classes):
        w_lo += L[c]
        w_box += C[c]
    for mask in range(1 << m):
        for c in range(n_classes):
            Lc[c] = L[c]
        for j in range(m):
            if (mask >> j) & 1:
                Lc[cls[j]] += C[cls[j]]
        wl = 0.0
        for c in range(n_classes):
            R[c] = total[c] - Lc[c]
            wl += Lc[c]
        if gain_ratio:  # the gain alone: the parent's impurity less the entropy proxy's share
            score = parent_imp + score_binary(Lc, R, wl, wn - wl, wn, parent_imp, ENTROPY) / wn
        else:
            score = score_binary(Lc, R, wl, wn - wl, wn, parent_imp, criterion)
        if score > best:
            best = score
    if gain_ratio:
        if best <= 0.0:  # a two-way split's information is at most 1 bit: the ratio is at most the gain
            return best
        least = min(split_info(w_lo, wn - w_lo, wn), split_info(w_lo + w_box, wn - w_lo - w_box, wn))
        return best / least if least > 0.0 else np.inf
    return best


@numba.njit(cache=True)
def candidate_bins(block, vmin, vmax, lo, m, n_classes, has_count, total, wn, parent_imp, criterion, target, tol,
                   adjacent, out):
    """Mark in ``out`` (``m`` flags, or-ed in) the bins ``lo .. lo+m-1`` of a numeric attribute's
    AVC-set (missing at ``lo+m``) that hold two or more distinct values (``vmin < vmax``) and whose
    :func:`box_bound` reaches ``target - tol``, with the missing rows on either side as the search
    places them.  Returns the number marked.  ``target = -inf`` marks every bin of two or more values.

    With ``adjacent`` (the bins' value ranges are not known: pass ``vmin = -inf``, ``vmax = inf``),
    the two non-empty bins either side of every bin boundary whose split scores ``target - tol`` or
    more are marked too, so that the exact threshold of any boundary that may win is found among the
    values of marked bins."""
    miss = lo + m
    n_miss = slot_rows(block, miss, n_classes, has_count)
    L = np.zeros(n_classes)
    C = np.zeros(n_classes)
    R = np.zeros(n_classes)
    marked = 0
    for search in range(2 if n_miss > 0 else 1):
        for c in range(n_classes):
            L[c] = block[miss, c] if search == 1 else 0.0
        before = -1  # the last non-empty bin
        for s in range(m):
            if slot_rows(block, lo + s, n_classes, has_count) <= 0:
                continue
            if adjacent and before >= 0:  # the boundary between bins ``before`` and ``s``
                wl = 0.0
                for c in range(n_classes):
                    R[c] = total[c] - L[c]
                    wl += L[c]
                if target == -np.inf or score_binary(L, R, wl, wn - wl, wn, parent_imp, criterion) >= target - tol:
                    for b in (before, s):
                        if not out[b]:
                            out[b] = True
                            marked += 1
            for c in range(n_classes):
                C[c] = block[lo + s, c]
            if not out[s] and vmin[s] < vmax[s] and (
                    target == -np.inf or box_bound(L, C, total, wn, parent_imp, criterion) >= target - tol):
                out[s] = True
                marked += 1
            for c in range(n_classes):
                L[c] += C[c]
            before = s
    return marked


@numba.njit(cache=True)
def tolerance(score):
    """Slack for the corner bounds, which are computed in floating point like the scores they bound."""
    return 1e-9 * abs(score) + 1e-12
