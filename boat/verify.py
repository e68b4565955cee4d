"""From coarse to exact: a node's exact split, and the check that no other split can beat it.

The exact split is found by rainforest's own search (:func:`rainforest.criteria.search_node`)
over an AVC-set that is exact where it matters: for a numeric coarse criterion, one slot for the
rows left of the interval, one per distinct value inside it, one for the rows right of it and the
missing slot; for a categorical one, the node's exact AVC-set.  With unit weights all counts are
integers, so every candidate scores the same float as in a search over the node's whole
AVC-group, and ties between candidates break the same way.

Verification bounds every other candidate (splits of the other attributes, and of the split
attribute outside its interval).  A split at a bucket boundary is a real candidate whose score
is exact; the splits inside a bucket have left class counts in the box between the bucket's
corner vectors, and since gini and entropy are concave, the weighted impurity over the box is
smallest at a corner: the best corner bounds them all.  The exact split stands only if every
bound is below its score (exact candidates may tie where the search would still pick ours).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from rainforest.criteria import impurity, search_node, two_way
from rainforest.rules import branch_totals
from rainforest.schema import CATEGORICAL, NUMERIC, Attribute
from rainforest.split_bounds import box_bound, tolerance


@dataclass
class ExactSplit:
    """A verified split: ``branch`` maps each slot of the split attribute's exact AVC-set (a numeric
    one: below, the interval's values, above, missing) to a child."""

    feature: int
    score: float
    threshold: float  # numeric; NaN for categorical
    missing_branch: int
    cat_branch: list | None  # categorical: the Tree's table (categories, then unseen -> majority)
    slot_branch: np.ndarray | None  # categorical: branch per code, missing last
    child_value: np.ndarray  # (2, classes)


@numba.njit(cache=True)
def numeric_threat(block, vmin, vmax, lo, m, n_classes, total, n_total, wn, parent_imp, criterion, min_leaf,
                   target, tol, tie_fails, skip_slot, skip_n1, skip_n2, skip_inf, marks):
    """Whether some threshold split of the numeric attribute in slots ``lo .. lo+m`` (buckets, then
    missing) may score at least ``target`` (exactly ``target`` only when ``tie_fails``), walking the
    candidates in the search's order: missing right, then missing left, then missing alone.
    ``skip_*`` leave out the candidates the exact search already scored (the interval bucket, the
    splits leaving ``skip_n1`` or ``skip_n2`` present rows on the left, the missing-alone split).
    With ``marks`` (``m`` flags, else empty) a bucket whose bound reaches ``target`` is marked
    instead, and only an exact candidate (a split at a bucket boundary) answers True: the marked
    buckets' rows can settle the rest."""
    miss = lo + m
    n_miss = 0.0
    for c in range(n_classes):
        n_miss += block[miss, c]
    last = -1
    for s in range(m):
        for c in range(n_classes):
            if block[lo + s, c] > 0:
                last = s
    L = np.zeros(n_classes)
    R = np.zeros(n_classes)
    C = np.zeros(n_classes)
    for search in range(2 if n_miss > 0 else 1):
        for c in range(n_classes):
            L[c] = block[miss, c] if search == 1 else 0.0
        n_present = 0.0
        for s in range(m):
            ns = 0.0
            for c in range(n_classes):
                C[c] = block[lo + s, c]
                ns += C[c]
            if ns <= 0:
                continue
            if s != skip_slot and vmin[lo + s] < vmax[lo + s]:
                if box_bound(L, C, total, wn, parent_imp, criterion) >= target - tol:
                    if marks.shape[0] == 0:
                        return True
                    marks[s] = True
            for c in range(n_classes):
                L[c] += C[c]
            n_present += ns
            if s < last and n_present != skip_n1 and n_present != skip_n2:
                n_left = n_present + (n_miss if search == 1 else 0.0)
                score = two_way(L, R, total, n_left, n_total, wn, parent_imp, criterion, min_leaf, 0.0)
                if score > target or (score == target and tie_fails):
                    return True
        if search == 0 and n_miss > 0 and last >= 0 and not skip_inf:
            score = two_way(L, R, total, n_present, n_total, wn, parent_imp, criterion, min_leaf, 0.0)
            if score > target or (score == target and tie_fails):
                return True
    return False


def _search_one(block: np.ndarray, kind: int, n_classes: int, criterion: int, min_leaf: int, max_exhaustive: int):
    """:func:`search_node` over one attribute's slots."""
    branch = np.zeros(block.shape[0], np.int64)
    res = search_node(np.ascontiguousarray(block), np.array([0, block.shape[0]], np.int64), np.array([kind], np.int8),
                      n_classes, False, criterion, False, float(min_leaf), 0.0, max_exhaustive, branch, 0)
    return res, branch


def node_split(block, vmin, vmax, offsets, schema, f, interval_slot, stats, held_x, held_y, criterion,
               min_leaf, max_exhaustive, gather=None) -> ExactSplit | str:
    """The verified exact split of a coarse node splitting on attribute ``f``, or a string saying why
    it cannot be verified (then the node's subtree is rebuilt from its family).

    ``block`` (slots x classes) holds the node's bucket / category counts and ``vmin`` / ``vmax``
    each bucket's value range (:class:`rainforest.boat.cleanup.NodeStats`); ``interval_slot`` is the bucket of
    ``f`` that the interval fills; ``stats`` = (total, below, above, below_max, above_min);
    ``held_x`` / ``held_y``: the value of ``f`` and the class of each row held at the node.

    ``gather``, when given, reads the rows of the buckets no bound rules out: called with
    ``{attribute: marked buckets}``, it answers ``{attribute: (bucket, value, class) of each row of
    the node's family in them}``, or a string saying why it cannot; those buckets are then scored
    split by split, so a bound too loose no longer fails the node."""
    n_classes = block.shape[1]
    total, below, above, below_max, above_min = stats
    attr = schema.attributes[f]
    lo, hi = offsets[f], offsets[f + 1]
    if attr.kind == NUMERIC:
        present = ~np.isnan(held_x)
        values, inverse = np.unique(held_x[present], return_inverse=True)
        mini = np.zeros((len(values) + 3, n_classes))
        mini[0] = below
        np.add.at(mini, (1 + inverse, held_y[present]), 1.0)
        mini[len(values) + 1] = above
        np.add.at(mini, (len(values) + 2, held_y[~present]), 1.0)
        (a, score, ls, rs, inf, nb), branch = _search_one(mini, NUMERIC, n_classes, criterion, min_leaf,
                                                           max_exhaustive)
        if a < 0:
            return "no valid split inside the interval"
        if inf:
            return "the best split of the interval sends only the missing values right"
        ends = np.concatenate([[below_max], values, [above_min]])
        if np.isnan(ends[ls]) or np.isnan(ends[rs]):
            return "the value next to the interval is unknown after deletions"
        split = ExactSplit(f, float(score), Attribute(attr.name, NUMERIC, exact=True, cuts=ends).threshold(ls, rs),
                           int(branch[-1]), None, None, branch_totals(mini, branch, 2))
        # the split attribute's own buckets, the held rows put back (interval bucket, missing slot)
        own = block[lo:hi].copy()
        held_present = mini[1:len(values) + 1].sum(axis=0)
        own[interval_slot] = held_present
        own[-1] = mini[-1]
        n_below = float(below.sum())
        own_walk = (True, int(interval_slot), n_below, n_below + held_present.sum(), True)
    else:
        (a, score, ls, rs, inf, nb), branch = _search_one(block[lo:hi], CATEGORICAL, n_classes, criterion,
                                                           min_leaf, max_exhaustive)
        if a < 0:
            return "no valid split of the categorical attribute"
        child_value = branch_totals(np.ascontiguousarray(block[lo:hi]), branch, nb)
        m = hi - lo - 1
        majority = int(np.argmax(child_value.sum(axis=1)))
        split = ExactSplit(f, float(score), np.nan, int(branch[m]), [int(b) for b in branch[:m]] + [majority],
                           branch.copy(), child_value)
        own, own_walk = None, None
    threats = Threats(vmin, vmax, offsets, total, split.score, criterion, float(min_leaf), gather is not None)
    marks = {}
    for a, attr in enumerate(schema.attributes):
        if attr.kind == NUMERIC:
            slots = own if a == f else block[offsets[a]:offsets[a + 1]]
            walk = own_walk if a == f else (a < f, -1, -1.0, -1.0, False)
            found = threats.numeric(a, slots, walk)
            if found is True:
                return f"attribute {attr.name!r} may split better" + (" outside its interval" if a == f else "")
            if found is not None:
                marks[a] = found
        elif a != f:
            (b, score, *_), _ = _search_one(block[offsets[a]:offsets[a + 1]], CATEGORICAL, n_classes, criterion,
                                            min_leaf, max_exhaustive)
            if b >= 0 and (score > split.score or (score == split.score and a < f)):
                return f"attribute {attr.name!r} splits better"
    if not marks:
        return split
    rows = gather(marks)  # the rows of the marked buckets settle what their bounds could not
    if isinstance(rows, str):
        return rows
    for a, m in marks.items():
        slots = own if a == f else block[offsets[a]:offsets[a + 1]]
        refined = refine_buckets(slots, vmin[offsets[a]:offsets[a + 1]], vmax[offsets[a]:offsets[a + 1]], m, *rows[a])
        if refined is None:
            return f"the rows of attribute {schema.attributes[a].name!r} read back differ from the node's counts"
        r_slots, r_vmin, r_vmax, slot_at = refined
        walk = own_walk if a == f else (a < f, -1, -1.0, -1.0, False)
        if a == f:
            walk = (walk[0], int(slot_at[walk[1]])) + walk[2:]
        if threats.numeric(a, r_slots, walk, r_vmin, r_vmax) is not None:  # its buckets are single values now
            return f"attribute {schema.attributes[a].name!r} splits better " + \
                ("outside its interval" if a == f else "inside a bucket") + " (read from its rows)"
    return split


@dataclass
class Threats:
    """The check of a node's other candidate splits against its exact split's ``target`` score."""

    vmin: np.ndarray
    vmax: np.ndarray
    offsets: np.ndarray
    total: np.ndarray
    target: float
    criterion: int
    min_leaf: float
    marking: bool  # mark the buckets a bound cannot rule out (their rows can be read), else fail on them

    def numeric(self, a: int, slots: np.ndarray, walk: tuple, vmin=None, vmax=None):
        """True when an exact candidate of numeric attribute ``a`` (``slots``: its buckets, then missing)
        may beat the target (or a bucket may, when not marking); else the marked buckets, or None.
        ``walk`` = (tie_fails, skip_slot, skip_n1, skip_n2, skip_inf) of :func:`numeric_threat`."""
        lo, hi = self.offsets[a], self.offsets[a + 1]
        vmin = self.vmin[lo:hi] if vmin is None else vmin
        vmax = self.vmax[lo:hi] if vmax is None else vmax
        m = len(slots) - 1
        marks = np.zeros(m if self.marking else 0, np.bool_)
        wn = self.total.sum()
        if numeric_threat(np.ascontiguousarray(slots), vmin, vmax, 0, m, slots.shape[1], self.total, wn, wn,
                          _parent_impurity(self.total, self.criterion), self.criterion, self.min_leaf, self.target,
                          tolerance(self.target), *walk, marks):
            return True
        return marks if marks.any() else None


def refine_buckets(slots, vmin, vmax, marks, bucket, x, y):
    """An attribute's slots with each marked bucket replaced by one slot per distinct value of its rows
    (``bucket``, ``x``, ``y``: each gathered row's bucket, value and class), in value order, as exact
    mode refines its candidate bins.  Also the refined slots' value ranges and each old slot's first
    new slot.  None when the rows of a marked bucket do not add up to its counts."""
    n_classes = slots.shape[1]
    order = np.lexsort((x, bucket))
    bucket, x, y = bucket[order], x[order], y[order]
    bounds = np.searchsorted(bucket, np.arange(len(slots)), "left")
    out, lows, highs, slot_at = [], [], [], np.zeros(len(slots), np.int64)
    n = 0
    for s in range(len(slots)):
        slot_at[s] = n
        if s < len(marks) and marks[s]:
            xs, ys = x[bounds[s]:bounds[s + 1]], y[bounds[s]:bounds[s + 1]]
            values, inverse = np.unique(xs, return_inverse=True)
            counts = np.zeros((len(values), n_classes))
            np.add.at(counts, (inverse, ys), 1.0)
            if not np.array_equal(counts.sum(axis=0), slots[s]):
                return None
            out.append(counts)
            lows.append(values)
            highs.append(values)
            n += len(values)
        else:
            out.append(slots[s:s + 1])
            lows.append(vmin[s:s + 1])
            highs.append(vmax[s:s + 1])
            n += 1
    return np.concatenate(out), np.concatenate(lows), np.concatenate(highs), slot_at


def _parent_impurity(total: np.ndarray, criterion: int) -> float:
    return float(impurity(total, total.sum(), criterion))
