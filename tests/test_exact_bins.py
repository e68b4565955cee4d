"""Exact splits from bins plus candidate bins (rainforest.exact_bins) against the search over one
slot per distinct value (today's exact mode): the same attribute, score, threshold and branches."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pytest

from rainforest.criteria import CRITERIA, best_splits, impurity, score_binary
from rainforest.exact_bins import NO_SLOT, ValueCounts, boundary_targets, candidate_mask, refine, refined_splits
from rainforest.rules import branch_totals
from rainforest.schema import CATEGORICAL, NUMERIC
from rainforest.split_bounds import box_bound


@dataclass
class Gathered:
    """The rows of candidate bins (a reference for rainforest.exact_gather.ValuePass), in row order:
    the node (its index among the refined nodes), the attribute and bin (AVC-group slot) they were
    counted in, their value, class and weight (empty: unit weights)."""

    node: np.ndarray
    slot: np.ndarray
    value: np.ndarray
    y: np.ndarray
    w: np.ndarray

    def __len__(self) -> int:
        return len(self.node)


def _sum_rows(rows: Gathered, n_channels: int, weighted: bool) -> ValueCounts:
    """The :class:`ValueCounts` of gathered rows: each row's weight added to its value's cell in row
    order (a row of weight 0 adds no row count, as rainforest.counting.add_row)."""
    order = np.lexsort((rows.value, rows.slot, rows.node))  # stable: row order within a value
    node, slot, value = rows.node[order], rows.slot[order], rows.value[order]
    new = np.ones(len(order), np.bool_)
    new[1:] = (node[1:] != node[:-1]) | (slot[1:] != slot[:-1]) | (value[1:] != value[:-1])
    run = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    counts = np.zeros((len(first), n_channels))
    y = rows.y[order].astype(np.int64)
    w = rows.w[order] if weighted else np.ones(len(order))
    np.add.at(counts, (run, y), w)
    if weighted:
        np.add.at(counts, (run, np.full(len(run), n_channels - 1)), (w != 0).astype(np.float64))
    return ValueCounts(node[first], slot[first], value[first], counts)


def _data(rng, n, n_classes, missing, categorical=True):
    cols = [rng.integers(0, 40, n).astype(float),               # few distinct values
            np.round(rng.normal(0, 1, n), 3),                   # many, with ties
            rng.random(n),                                      # continuous
            np.floor(rng.exponential(5, n))]                    # skewed integers
    y = (cols[0] > 20).astype(int) ^ (cols[2] > 0.7).astype(int)
    y = np.where(rng.random(n) < 0.15, rng.integers(0, n_classes, n), y % n_classes)
    if n_classes > 2:
        y = np.where(cols[1] > 0.8, n_classes - 1, y)
    kinds = [NUMERIC] * len(cols)
    if categorical:
        cols.append(rng.integers(0, 5, n).astype(float))
        kinds.append(CATEGORICAL)
    if missing:
        for c in (1, 3):
            cols[c][rng.random(n) < 0.1] = np.nan
    return cols, np.asarray(kinds, np.int8), y.astype(np.int64)


def _slots(x, kind, cuts, exact):
    """Slot of each value: a category's code, or searchsorted(cuts) (a rank of an exact value, or a
    bin); missing last."""
    miss = np.isnan(x)
    s = np.where(miss, 0, x).astype(np.int64) if kind == CATEGORICAL else np.searchsorted(cuts, np.where(miss, 0, x))
    return np.where(miss, (len(cuts) if exact else len(cuts) + 1) if kind == NUMERIC else 5, s)


def _avc(cols, kinds, y, w, node, k, n_classes, cuts, exact):
    """Dense AVC-groups (k, slots, channels) counted in row order, with bin value ranges."""
    sizes = [(len(c) if exact else len(c) + 1) + 1 if kd == NUMERIC else 6 for c, kd in zip(cuts, kinds)]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ch = n_classes + (1 if w is not None else 0)
    avc = np.zeros((k, offsets[-1], ch))
    vmin = np.full((k, offsets[-1]), np.inf)
    vmax = np.full((k, offsets[-1]), -np.inf)
    slots = []
    for a, (x, kd) in enumerate(zip(cols, kinds)):
        s = offsets[a] + _slots(x, kd, cuts[a], exact)
        slots.append(s)
        np.add.at(avc, (node, s, y), 1.0 if w is None else w)
        if w is not None:
            np.add.at(avc, (node, s, n_classes), 1.0)
        if kd == NUMERIC:
            ok = ~np.isnan(x)
            np.minimum.at(vmin, (node[ok], s[ok]), x[ok])
            np.maximum.at(vmax, (node[ok], s[ok]), x[ok])
    return avc, offsets, slots, vmin, vmax


def _reference(cols, kinds, y, w, node, k, n_classes, crit, min_leaf):
    """Today's exact search: one slot per distinct value of the column."""
    cuts = [np.unique(c[~np.isnan(c)]) if kd == NUMERIC else None for c, kd in zip(cols, kinds)]
    avc, offsets, _, _, _ = _avc(cols, kinds, y, w, node, k, n_classes, cuts, exact=True)
    n_slots = offsets[-1]
    attr, score, left, right, inf, nb, branches, bstart = best_splits(
        avc.reshape(k * n_slots, -1), np.arange(k + 1) * n_slots, np.tile(offsets, (k, 1)), kinds, n_classes,
        w is not None, crit, False, float(min_leaf), 0.0, 12, int(np.diff(offsets).max()))
    out = []
    for j in range(k):
        a = int(attr[j])
        thr, totals = np.nan, None
        if a >= 0:
            block = avc[j, offsets[a]:offsets[a + 1]]
            br = branches[bstart[j]:bstart[j] + len(block)]
            totals = branch_totals(np.ascontiguousarray(block), br, int(nb[j]))
            if kinds[a] == NUMERIC:
                if inf[j]:
                    thr = np.inf
                else:
                    lo, hi = cuts[a][left[j]], cuts[a][right[j]]
                    t = lo / 2.0 + hi / 2.0
                    thr = lo if t == hi else t
            out.append((a, float(score[j]), thr, int(br[len(block) - 1]), totals))
        else:
            out.append((a, float(score[j]), thr, None, None))
    return out


def _binned(cols, kinds, y, w, node, k, n_classes, crit, min_leaf, n_bins, bound=True, ranges=True):
    """The search over bins, candidate bins gathered and refined; returns the splits and the
    fraction of (row, numeric attribute) values gathered.  ``ranges``: the bins' value ranges are
    known (else the bins beside near-winning boundaries are gathered too)."""
    cuts = [np.unique(np.quantile(c[~np.isnan(c)], np.linspace(0, 1, n_bins + 1)[1:-1])) if kd == NUMERIC else None
            for c, kd in zip(cols, kinds)]
    avc, offsets, slots, vmin, vmax = _avc(cols, kinds, y, w, node, k, n_classes, cuts, exact=False)
    targets = boundary_targets(avc, offsets, kinds, n_classes, w is not None, crit, False, float(min_leaf), 0.0, 12)
    if not bound:
        targets = np.full(k, -np.inf)
    if not ranges:
        vmin = vmax = None
    cand = candidate_mask(avc, vmin, vmax, offsets, kinds, n_classes, w is not None, crit, targets)
    parts = []
    n_values = 0
    for a, (x, kd) in enumerate(zip(cols, kinds)):
        if kd != NUMERIC:
            continue
        n_values += int((~np.isnan(x)).sum())
        take = np.flatnonzero(cand[node, slots[a]])
        parts.append((node[take], slots[a][take], x[take], y[take], (w[take] if w is not None else np.empty(0))))
    rows = Gathered(*(np.concatenate([p[i] for p in parts]) for i in range(5)))
    refined = refine(avc, vmin, vmax, offsets, kinds, cand, _sum_rows(rows, avc.shape[2], w is not None))
    splits = refined_splits(refined, kinds, n_classes, w is not None, crit, False, float(min_leaf), 0.0, 12)
    out = []
    for j, sp in enumerate(splits):
        if sp.attribute < 0:
            out.append((sp.attribute, sp.score, sp.threshold, None, None))
            continue
        lo = refined.node_start[j] + refined.node_offsets[j, sp.attribute]
        hi = refined.node_start[j] + refined.node_offsets[j, sp.attribute + 1]
        br = sp.branches[:hi - lo]
        totals = branch_totals(refined.block[lo:hi], br, sp.n_branches)
        out.append((sp.attribute, sp.score, sp.threshold, int(br[hi - lo - 1]), totals))
    return out, len(rows) / max(n_values, 1)


def _same(ref, got):
    for (a, s, t, miss, tot), (a2, s2, t2, miss2, tot2) in zip(ref, got):
        assert a2 == a
        assert s2 == s  # unit or integer weights: the same floats
        assert (np.isnan(t) and np.isnan(t2)) or t2 == t
        assert miss2 == miss
        if tot is not None:
            np.testing.assert_array_equal(tot2, tot)


@pytest.mark.parametrize("ranges", [True, False], ids=["ranges", "adjacent"])
@pytest.mark.parametrize("criterion", ["gini", "entropy", "gain_ratio"])
@pytest.mark.parametrize("n_classes,missing,weighted,min_leaf,k", [
    (2, False, False, 1, 1), (2, True, False, 5, 4), (3, True, False, 1, 3), (2, True, True, 1, 2),
    (4, False, True, 3, 5)])
def test_equal_to_one_slot_per_value(criterion, n_classes, missing, weighted, min_leaf, k, ranges):
    # a seed of the parameters' text: str hashes change with PYTHONHASHSEED, the data must not
    rng = np.random.default_rng(zlib.crc32(repr((criterion, n_classes, missing, weighted, min_leaf, k)).encode()))
    for trial in range(3):
        n = int(rng.integers(200, 3000))
        cols, kinds, y = _data(rng, n, n_classes, missing)
        w = rng.integers(1, 4, n).astype(float) if weighted else None  # integers: sums are exact in any order
        node = rng.integers(0, k, n)
        crit = CRITERIA[criterion]
        ref = _reference(cols, kinds, y, w, node, k, n_classes, crit, min_leaf)
        for n_bins in (4, 16):
            got, _ = _binned(cols, kinds, y, w, node, k, n_classes, crit, min_leaf, n_bins, ranges=ranges)
            _same(ref, got)


def test_candidate_bins_are_few_on_a_continuous_column():
    """The bound does its work: on continuous columns a small part of the values is gathered; with
    the bound disabled (every bin a candidate) the split is the same and nearly every value is."""
    rng = np.random.default_rng(7)
    n = 40_000
    cols, kinds, y = _data(rng, n, 2, missing=False, categorical=False)
    cols = [cols[1] + rng.normal(0, 1e-6, n), cols[2]]  # unique floats
    kinds = kinds[:2]
    y = ((cols[1] > 0.37) ^ (rng.random(n) < 0.1)).astype(np.int64)
    node = np.zeros(n, np.int64)
    ref = _reference(cols, kinds, y, None, node, 1, 2, CRITERIA["gini"], 1)
    got, fraction = _binned(cols, kinds, y, None, node, 1, 2, CRITERIA["gini"], 1, n_bins=128)
    _same(ref, got)
    assert fraction < 0.05
    unbounded, everything = _binned(cols, kinds, y, None, node, 1, 2, CRITERIA["gini"], 1, n_bins=128, bound=False)
    _same(ref, unbounded)
    assert everything > 0.95
    # without the bins' value ranges, the bins beside the winning boundary are gathered too: still few
    adjacent, some = _binned(cols, kinds, y, None, node, 1, 2, CRITERIA["gini"], 1, n_bins=128, ranges=False)
    _same(ref, adjacent)
    assert some < 0.05


def test_box_bound_bounds_every_split_inside():
    """No split of a bucket's rows scores above the bound (gini, entropy and gain ratio, three classes)."""
    rng = np.random.default_rng(3)
    for crit in CRITERIA.values():
        for _ in range(200):
            total = rng.integers(1, 30, 3).astype(float)
            L = np.floor(total * rng.random(3) * 0.5)
            C = np.floor((total - L) * rng.random(3))
            wn = total.sum()
            parent = impurity(total, wn, 1 if crit == 2 else crit)
            bound = box_bound(L, C, total, wn, parent, crit)
            for _ in range(20):
                x = np.floor(C * rng.random(3))
                Lx = L + x
                s = score_binary(Lx, total - Lx, Lx.sum(), wn - Lx.sum(), wn, parent, crit)
                assert s <= bound + 1e-9 * abs(bound) + 1e-12


def test_candidate_marks_are_the_same_on_one_thread_and_on_all():
    """The marking runs nodes on threads (exact_bins._mark): each writes only its own row of flags, so
    many nodes' candidate bins are a serial run's."""
    import numba
    rng = np.random.default_rng(11)
    k, m = 64, 40
    offsets = np.array([0, m + 1, 2 * (m + 1)])
    kinds = np.array([NUMERIC, NUMERIC])
    avc = rng.integers(0, 6, size=(k, offsets[-1], 2)).astype(float)
    targets = boundary_targets(avc, offsets, kinds, 2, False, CRITERIA["gini"], False, 1.0, 0.0, 12)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        serial = candidate_mask(avc, None, None, offsets, kinds, 2, False, CRITERIA["gini"], targets)
    finally:
        numba.set_num_threads(before)
    threaded = candidate_mask(avc, None, None, offsets, kinds, 2, False, CRITERIA["gini"], targets)
    assert 0 < serial.sum() < serial.size
    np.testing.assert_array_equal(threaded, serial)


def test_a_bin_of_known_value_is_the_slot_its_value_would_be():
    """refine's ``known``: a bin left whole whose one value is known gives the refined group its
    gathered cell would give (the bin's counts are its one value's), and a known bin that is also
    a candidate is refused."""
    avc = np.array([[[3.0, 1.0], [0.0, 2.0], [4.0, 0.0], [0.0, 0.0]]])  # one attribute: 3 bins, missing
    offsets, kinds = np.array([0, 4]), np.array([NUMERIC])
    cand = np.array([[True, True, False, False]])
    gathered = ValueCounts(np.array([0, 0, 0]), np.array([0, 0, 1]), np.array([10, 12, 20]),
                           np.array([[2.0, 1.0], [1.0, 0.0], [0.0, 2.0]]))
    known = ValueCounts(np.array([0]), np.array([2]), np.array([31]), np.zeros((1, 0)))
    as_known = refine(avc, None, None, offsets, kinds, cand, gathered, known)
    all_cand = cand.copy()
    all_cand[0, 2] = True
    every_value = ValueCounts(np.array([0, 0, 0, 0]), np.array([0, 0, 1, 2]), np.array([10, 12, 20, 31]),
                              np.array([[2.0, 1.0], [1.0, 0.0], [0.0, 2.0], [4.0, 0.0]]))
    as_gathered = refine(avc, None, None, offsets, kinds, all_cand, every_value)
    for field in ("block", "node_start", "node_offsets", "low", "high", "origin"):
        np.testing.assert_array_equal(getattr(as_known, field), getattr(as_gathered, field))
    assert list(as_known.low) == [10, 12, 20, 31, NO_SLOT]
    with pytest.raises(ValueError, match="known value"):
        refine(avc, None, None, offsets, kinds, all_cand, every_value, known)
